"""Per-question outputs produced by other harnesses, imported and re-scored on the kit's footing."""
