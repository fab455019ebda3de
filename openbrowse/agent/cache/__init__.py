"""Cached scripts (spec §27.3): what worked in an agent run, saved, and replayed in the slot's script host."""
