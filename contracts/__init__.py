"""Built-in contract files (data), installed as pytest_mlip.builtin_contracts."""
