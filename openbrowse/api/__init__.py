"""HTTP only: parse, call the session manager, serialise."""
