"""The engine's storage and retrieval layer: discovery, chunking, the SQLite
store and ranking. Knows nothing about LSP (see docs/architecture.md)."""
