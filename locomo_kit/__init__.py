"""locomo-kit: evaluate long-term memory systems on the LoCoMo benchmark."""

__version__ = "0.1.0"
