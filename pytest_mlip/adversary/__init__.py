"""adversary (being written)."""
