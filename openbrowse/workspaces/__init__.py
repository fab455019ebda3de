"""Workspaces (spec §27): named file trees that outlive sessions, and the cached scripts kept in them."""
