"""OpenBrowse: a self-hosted browser-agent service."""

__version__ = "0.1.0"
