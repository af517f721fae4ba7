"""agent (being written)."""
