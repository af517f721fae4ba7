"""provenance (being written)."""
