"""Several nodes on one database (spec §26): presence, and what a node knows of the others."""
