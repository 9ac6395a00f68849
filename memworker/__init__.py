"""memworker: a reference memory Worker that speaks the claude-mem Worker HTTP API.

Short-term memory is the raw transcript as received; long-term memory is atomic memories
extracted from it, de-duplicated, searchable by BM25 (SQLite FTS5) and dense embeddings. The kit
talks to it over HTTP only and never imports it.
"""

__version__ = "0.2.0"
