"""The names and bounds requests take, for every shell that lists or
checks them (the CLI's choices, the MCP tools' enums and schema bounds, the
wire's checks) without importing the engine: the MCP bridge reads them
before any engine loads. The engine enforces the bounds."""

# What recall ranks: chunks of files (code, doc, config) and written memory
# (fact, episode; direct docs rank with file docs).
RECALL_KINDS = ("code", "doc", "config", "fact", "episode")
# How recall ranks: BM25 and cosine fused, BM25 only, cosine only.
RECALL_MODES = ("hybrid", "lexical", "semantic")
# Who wrote a memory row.
AUTHORS = ("human", "agent")

# -- bounds -------------------------------------------------------------------
MAX_RECALL_N = 200
# A recall (or assemble) query's length: FTS5's cost grows with the square of
# the terms OR-ed together (20,000 distinct terms: 4 s; 200,000: minutes of a
# worker thread). An issue or a log pasted whole is for locate.
MAX_QUERY_CHARS = 10_000
MAX_LOCATE_N = 100
# Longer texts are cut here (an issue with a whole log pasted in): the head
# holds the title and the report, a traceback's innermost frames are at its end.
MAX_LOCATE_CHARS = 40_000
# recentActivity looks back at most this many days (a bound keeps the cutoff an integer).
MAX_DAYS = 1_000_000
# Rows recentActivity lists at most.
MAX_RECENT_ITEMS = 1000
MAX_SYMBOLS_N = 1000
MAX_NAME_CHARS = 1000
MAX_RELATED_N = 100
# A memory id (and id prefix); rows a memory list or recall returns at most.
MAX_ID_CHARS = 1024
MAX_MEMORY_N = 200
MAX_BUDGET_CHARS = 200_000
MAX_BUDGET_TOKENS = 200_000
# A memory scope's name (a tenant), in characters.
MAX_SCOPE_CHARS = 256
# remember and ingest: bytes of the text or upload (UTF-8).
MAX_WRITE_BYTES = 10 * 1024 * 1024
