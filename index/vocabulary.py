"""The names recall offers, for every shell that lists or checks them (the
CLI's choices, the MCP tools' enums, the wire's checks) without importing
the engine's data types."""

# What recall ranks: chunks of files (code, doc, config) and written memory
# (fact, episode; direct docs rank with file docs).
RECALL_KINDS = ("code", "doc", "config", "fact", "episode")
# How recall ranks: BM25 and cosine fused, BM25 only, cosine only.
RECALL_MODES = ("hybrid", "lexical", "semantic")
