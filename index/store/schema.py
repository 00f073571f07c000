"""The store's file format: table layout, the versions that say what rows
were derived with, and the migrations between layouts (``Migrations``, a part
of ``Store``)."""

from __future__ import annotations

import logging
from typing import TYPE_CHECKING

from ctxls.index.store.failures import StoreVersionError

if TYPE_CHECKING:
    from ctxls.index.store.database import Connection

log = logging.getLogger(__name__)

# Bump when the table layout changes; say what changed.
# 1: files, chunks, fts_code, fts_doc, imports, edits.
# 2: chunks.embed_hash; vectors (kept across rebuilds, keyed by embedding-text hash).
# 3: written memory: memory, memory_files, fts_memory_{fact,episode,doc}, demand,
#    stash. Upgrading a 2 store only adds these tables; its file rows stay valid.
# 4: symbols (the definition table, apart from chunks, which packing joins);
#    fts_config (configuration files are a recall kind of their own).
# 5: file_terms (per file and chunk kind: how many chunks, and how many of
#    them hold each body term: ranking.file_bm25). File rows are rebuilt.
# 6: fast_vectors (the fast tier's vectors, semantic.FAST_TIER). Upgrading a 5
#    store only adds the table; its file rows stay valid.
SCHEMA_VERSION = 6
# Versions whose layout change invalidated file-derived rows: upgrading across
# one rebuilds them from the repository. Non-derived tables are never dropped;
# a version that changes one must convert it in _migrate().
_REBUILDS_FILE_ROWS = frozenset({2, 4, 5})

# Bump when the chunker or the tokenizer changes what rows they produce.
# 2: packing (no 1-2-line chunks), config kind.
# 3: C typedef names (`typedef long long mstime_t;`, a struct by its typedef name).
# 4: JavaScript assignments (`A.prototype.m = function`, `exports.f = …`) and objects of functions.
# 5: runs of short sibling definitions packed together (chunking/packing.py's SHORT_CHARS).
# 6: Rust items inside item macros, C files read again with each #if's first
#    branch, JavaScript functions behind guards or calls, `module.exports =
#    class X`, chained aliases (`res.header = res.set = function …`).
# 7: Markdown headings titled by the words a reader sees (alt text, link text; no tags, no URLs);
#    JavaScript/TypeScript `export const X = <call, alias or new>` defines X;
#    Rust `const` and `static` items are definitions.
# 8: Python types made by an assignment (`X: TypeAlias = …`, `type X = …`,
#    namedtuple, NewType, Enum(…), TypedDict(…)) are definitions.
# 9: an anonymous JavaScript class or function exported through a chain of
#    assignments is named by the chain's first named target
#    (`exports = module.exports = internals.Server = class {…}`); the
#    functions of an `export default {…}` object (also `<T>{…}`,
#    `{…} satisfies T`) are definitions.
# 11: symbols.line (a definition's name row, past its decorators and comments)
#     and symbols.body_end (its whole extent): new columns of a file table,
#     which the stamp's change rebuilds.
# 12: Scala package objects (and their members) are definitions.
# 13: Swift computed properties and Kotlin properties with a getter or setter are
#     definitions; so is a Ruby class made by a call (`Money = Struct.new(…) do … end`).
# 14: C# files are read with each `#if`'s first branch when that finds more
#     definitions (as C and C++ were; the rule now counts names, not lines), and a
#     conversion operator is a definition (`op_Explicit`, `op_Implicit`);
#     Elixir modules and functions inside `if`/`unless … do` are definitions;
#     a Kotlin class whose constructor sits below its name (ktfmt) keeps its body.
# 15: Objective-C files get the first-branch reading too; Bash functions inside a
#     script's `{ … }` or an `if` are definitions; F# types have their members.
# 16: Lua functions inside `do … end` or under `if`, Ruby methods under `if`/`unless`
#     and PHP functions and classes under `if` are definitions; a Zig function that
#     returns a struct is that type, its functions the type's methods.
# 17: Solidity, Protocol Buffers and GraphQL files are read by definitions tables
#     (they were line windows).
# 18: a C, C++ or Objective-C file whose parse failed is also read with its lines that
#     only use a macro (`FMT_BEGIN_NAMESPACE`) blanked.
# 19: 19 more languages (Elm … Tcl, docs/decisions.md) are read by definitions tables, not windows.
# 20: files.generated (the file's top comment says a program wrote it: paths.says_generated),
#     a new column of a file table, which the stamp's change rebuilds.
# 21: definitions read anew (C++ reference returns, operators whole, a layout grammar's
#     end, Ruby `private def`, Scala 3 extensions, doc comments in imports or before a
#     class block, subscripts and indexers, Rust impl types) and the name column split
#     only at the qualifier's dot (model.split_symbol).
# 22: a container's header never joins the pieces before it (packing.pack, rule 1).
# 23: the symbols' name column folded as names are compared (tokenize.fold: NFKC, any case).
# 24: a lone CR ends a line (discovery.editor_line_breaks: the text, its hash and every row
#     of a file holding one change), and a NUL no longer ends tree-sitter's input.
# 25: symbols.name_key, the name in any case style (query.name_key).
# 26: trailing comments lead the next definition (spans._closing_comments); a stray `}` ends
#     a container the parser could not close; Julia functor, Scala by-name extension, Elixir
#     module name line and TypeScript file-augmentation names.
# 27: a container's closing line (`}`, `end`) ends its last chunk (pieces._with_closing_lines).
# 28: TypeScript and Go interfaces' methods are definitions (`Getter.Get`); an error in a
#     `$$`-quoted SQL function body no longer re-parses from its column-0 `BEGIN`/`END`.
# 29: a control character in a definition's name is written `\uXXXX` (model.Chunk).
# 30: C/C++ function prototypes at file or namespace scope, Dart named and factory constructors,
#     Java/Kotlin enum constants with a body and Scala 3 `given … with` members are definitions.
# 31: Haskell names keep their prime, Erlang/Elixir clauses join only at one arity, an Erlang
#     `-spec` leads its function, OCaml `.mli` files, `let … and …` bindings and classes, SQL
#     procedures and triggers, Julia definitions behind a macro and the subs of a Perl block
#     package, Ruby methods in a block given to a call (`included do`) and R6/S4 classes are
#     definitions.
# 32: the subs after a Perl `package Name;` statement are its members; a name in backticks
#     (Kotlin's `rejects unterminated array`, F#'s ``…``) is one name whole; a doc comment
#     (`/**`, `///`) leads its definition across one blank line.
# 33: Zig's `test "…"` blocks and D's `unittest` blocks are definitions (test code inline);
#     OCaml `let () =` is none, its doc comment under a value is that value's, a `.mli` module
#     signature's values are members; Swift sugared extensions named Array/Dictionary/Optional;
#     a column-0 `end` closes a definition (Ruby, Lua, Julia); R6/setClass with `pkg::`, Dart
#     operators, Terraform `locals`, Scala 3 anonymous givens are definitions; Markdown heading
#     attributes left out of titles; `.bats` files are shell.
CHUNKER_VERSION = 33
# 2: English stems of words (tokenize.stem).
# 3: words of every script (NFKC, case-folded), bigrams of scripts without spaces.
TOKENIZER_VERSION = 3
INDEX_STAMP = f"chunker-{CHUNKER_VERSION}/tokenizer-{TOKENIZER_VERSION}"
# Bump when what memory's full-text rows read of a row changes (they are
# re-derived from the memory rows, which stay): 2: long words' stand-ins
# (tokenize.memory_index_text); rows written before them had none.
MEMORY_TEXT_VERSION = 2

# Chunk kinds with a full-text table of their own: code never competes with prose.
FTS_TABLE_BY_KIND = {"code": "fts_code", "doc": "fts_doc", "config": "fts_config"}
# Written memory, one full-text table per kind (stemmed: memory is prose).
MEMORY_FTS_TABLE_BY_KIND = {"fact": "fts_memory_fact", "episode": "fts_memory_episode",
                            "doc": "fts_memory_doc"}

_FILE_TABLES = ("files", "chunks", "symbols", "imports", "fts_code", "fts_doc", "fts_config",
                "file_terms")

# The files' full-text tables' tokenizer (reads.held_term reads a term with it).
FTS_TOKENIZER = "unicode61 tokenchars '_'"

_SCHEMA = """
CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL);
CREATE TABLE IF NOT EXISTS files (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL UNIQUE,          -- repo-relative POSIX path
    language TEXT NOT NULL,
    size INTEGER NOT NULL,              -- bytes on disk (a buffer's row: as mtime_ns)
    mtime_ns INTEGER NOT NULL,          -- a buffer's row: the disk file's it stands in for (-1: none); never fast-pathed
    hash TEXT NOT NULL,                 -- content_hash of the indexed text
    source TEXT NOT NULL,               -- 'disk' | 'buffer'
    indexed_at INTEGER NOT NULL,        -- ms
    unparsed TEXT,                      -- ParsedFile.unparsed
    generated INTEGER NOT NULL DEFAULT 0 -- 1: its text says a program wrote it (paths.says_generated)
);
CREATE TABLE IF NOT EXISTS chunks (
    id INTEGER PRIMARY KEY,             -- also the rowid of its fts_* row
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    symbol TEXT,
    name TEXT,                          -- last segment of symbol, lower-cased
    symbol_kind TEXT NOT NULL,
    kind TEXT NOT NULL,                 -- 'code' | 'doc'
    language TEXT NOT NULL,
    start_line INTEGER NOT NULL,
    end_line INTEGER NOT NULL,
    hash TEXT NOT NULL,
    embed_hash TEXT NOT NULL,           -- hash of embed_text.embedding_text()
    text TEXT NOT NULL
);
CREATE INDEX IF NOT EXISTS chunks_file ON chunks(file_id);
CREATE INDEX IF NOT EXISTS chunks_embed ON chunks(embed_hash);
CREATE INDEX IF NOT EXISTS chunks_name ON chunks(name);
CREATE TABLE IF NOT EXISTS symbols (
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    symbol TEXT NOT NULL,               -- qualified: Session.request
    name TEXT NOT NULL,                 -- last segment of symbol, lower-cased
    name_key TEXT NOT NULL,             -- that name in any case style (query.name_key)
    symbol_kind TEXT NOT NULL,
    start_line INTEGER NOT NULL,        -- a container's header only (members are rows of their own)
    end_line INTEGER NOT NULL,
    hash TEXT NOT NULL,                 -- of those lines: the edit log compares it
    line INTEGER NOT NULL,              -- its name's row (past leading comments and decorators)
    body_end INTEGER NOT NULL           -- last row of the whole definition, members included
);
CREATE INDEX IF NOT EXISTS symbols_file ON symbols(file_id);
CREATE INDEX IF NOT EXISTS symbols_name ON symbols(name);
CREATE INDEX IF NOT EXISTS symbols_name_key ON symbols(name_key);
CREATE TABLE IF NOT EXISTS imports (
    file_id INTEGER NOT NULL REFERENCES files(id) ON DELETE CASCADE,
    spec TEXT NOT NULL,
    line INTEGER NOT NULL,
    target TEXT                         -- resolved repo path, or NULL
);
CREATE INDEX IF NOT EXISTS imports_file ON imports(file_id);
CREATE INDEX IF NOT EXISTS imports_target ON imports(target);
CREATE TABLE IF NOT EXISTS file_terms (
    file_id INTEGER NOT NULL,
    kind TEXT NOT NULL,                 -- the chunks' kind
    chunks INTEGER NOT NULL,            -- how many of the file's chunks are of that kind
    terms TEXT NOT NULL,                -- a line "<token> <how many chunks hold it>" per body token
    PRIMARY KEY (file_id, kind)
) WITHOUT ROWID;
CREATE VIRTUAL TABLE IF NOT EXISTS fts_code USING fts5(
    symbol, path, body, tokenize = "unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE IF NOT EXISTS fts_doc USING fts5(
    symbol, path, body, tokenize = "unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE IF NOT EXISTS fts_config USING fts5(
    symbol, path, body, tokenize = "unicode61 tokenchars '_'");
CREATE TABLE IF NOT EXISTS edits (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,
    symbol TEXT,
    kind TEXT NOT NULL,
    ts INTEGER NOT NULL,                -- ms
    origin TEXT,                        -- "editor" | "disk"; NULL: logged before it was kept
    times INTEGER                       -- the edits a merged row stands for (index/edit_log.py); NULL: 1
);
CREATE INDEX IF NOT EXISTS edits_ts ON edits(ts);
CREATE TABLE IF NOT EXISTS vectors (
    -- AUTOINCREMENT: an id is never reused, so a queued ANN removal of a
    -- deleted vector can never hit a newer one.
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- the key in vectors.usearch
    text_hash TEXT NOT NULL UNIQUE,     -- chunks.embed_hash it embeds
    vec BLOB NOT NULL                   -- float16, L2-normalised
);
CREATE TABLE IF NOT EXISTS fast_vectors (
    -- The fast tier (semantic.FAST_TIER): another model's vectors of the
    -- chunks, the same shape; never ranked together with vectors.
    id INTEGER PRIMARY KEY AUTOINCREMENT,  -- the key in fast_vectors.usearch
    text_hash TEXT NOT NULL UNIQUE,
    vec BLOB NOT NULL
);
CREATE TABLE IF NOT EXISTS memory (
    -- Written memory (index/memory/sqlite.py). AUTOINCREMENT: an id is never reused;
    -- it is the rowid of the row's fts_memory_* row, and enumerate pages in id
    -- order (an upsert keeps its row's id).
    id INTEGER PRIMARY KEY AUTOINCREMENT,
    scope TEXT NOT NULL,                -- a tenant, or '@global' (the shared tier)
    key TEXT NOT NULL,                  -- the caller's id
    part INTEGER NOT NULL,              -- segment of an ingested document (else 0)
    kind TEXT NOT NULL,                 -- 'fact' | 'episode' | 'doc'
    author TEXT NOT NULL,               -- 'human' | 'agent' (the protocol's "by")
    format TEXT NOT NULL,
    symbol TEXT,                        -- heading path of an ingested segment
    start_line INTEGER NOT NULL,        -- the segment's lines in the whole text
    end_line INTEGER NOT NULL,
    text TEXT NOT NULL,
    meta TEXT,                          -- the caller's JSON object, verbatim
    session TEXT,                       -- the writing daemon's session option
    created_at INTEGER NOT NULL,        -- ms: when this version was written
    occurred_at INTEGER NOT NULL,       -- ms
    expires_at INTEGER,                 -- ms: hidden from every read once passed
    embed_hash TEXT NOT NULL,           -- its vector's vectors.text_hash
    UNIQUE (scope, key, part)
);
CREATE INDEX IF NOT EXISTS memory_kind ON memory(kind, scope);
CREATE INDEX IF NOT EXISTS memory_recent ON memory(kind, occurred_at);
CREATE INDEX IF NOT EXISTS memory_key ON memory(key);
CREATE INDEX IF NOT EXISTS memory_embed ON memory(embed_hash);
CREATE INDEX IF NOT EXISTS memory_expires ON memory(expires_at) WHERE expires_at IS NOT NULL;
CREATE TABLE IF NOT EXISTS memory_files (
    scope TEXT NOT NULL,                -- an ingested upload, whole (its rows are in memory)
    key TEXT NOT NULL,
    filename TEXT NOT NULL,
    mode TEXT NOT NULL,                 -- 'chunked' | 'blob'
    data BLOB NOT NULL,                 -- byte-exact
    PRIMARY KEY (scope, key)
);
CREATE VIRTUAL TABLE IF NOT EXISTS fts_memory_fact USING fts5(
    symbol, path, body, tokenize = "porter unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE IF NOT EXISTS fts_memory_episode USING fts5(
    symbol, path, body, tokenize = "porter unicode61 tokenchars '_'");
CREATE VIRTUAL TABLE IF NOT EXISTS fts_memory_doc USING fts5(
    symbol, path, body, tokenize = "porter unicode61 tokenchars '_'");
CREATE TABLE IF NOT EXISTS demand (
    id INTEGER PRIMARY KEY,
    path TEXT NOT NULL,                 -- a file path or a memory id
    kind TEXT NOT NULL,
    symbol TEXT,
    action TEXT NOT NULL,               -- 'recall' | 'fetch'
    scope TEXT,                         -- a memory row's scope; NULL for a file
    ts INTEGER NOT NULL                 -- ms
);
CREATE INDEX IF NOT EXISTS demand_path ON demand(path, kind, action);
CREATE TABLE IF NOT EXISTS stash (
    id TEXT PRIMARY KEY,
    text TEXT NOT NULL,
    bytes INTEGER NOT NULL,             -- UTF-8 size
    created_at INTEGER NOT NULL         -- ms
);
"""


# The tables of vectors, one per tier (semantic.py): each maps an embedding-text
# hash to one model's vector.
VECTOR_TABLES = ("vectors", "fast_vectors")


def _unreferenced(table: str) -> str:
    """A row of ``table`` nothing embeds: a vector is shared by chunks and memory."""
    return (f"NOT EXISTS (SELECT 1 FROM chunks c WHERE c.embed_hash = {table}.text_hash) "
            f"AND NOT EXISTS (SELECT 1 FROM memory m WHERE m.embed_hash = {table}.text_hash)")


# Written in every store's header (PRAGMA application_id, "ctls"): the marker
# that makes a damaged file provably ours.
APPLICATION_ID = 0x63746C73
_SQLITE_MAGIC = b"SQLite format 3\x00"


# In meta: the INDEX_STAMP of the rows a whole pass last left complete (every
# listed file read), so a process starting on the store can answer from them
# at once, marked partial, while its own first pass checks the disk. Dropped
# with the file rows (a stamp change, a repair): those rows are gone.
INDEX_COMPLETE_KEY = "index_complete"


def index_incomplete(conn: Connection) -> None:
    """The file rows are no longer a whole pass's (dropped, or damaged ones deleted)."""
    conn.execute("DELETE FROM meta WHERE key = ?", (INDEX_COMPLETE_KEY,))


def new_paths_generation(conn: Connection) -> None:
    conn.execute("INSERT INTO meta(key, value) VALUES ('paths_generation', '1') "
                 "ON CONFLICT(key) DO UPDATE SET value = CAST(value AS INTEGER) + 1")


class Migrations:
    """``Store``'s versioning: brings an opened file's layout up to date."""

    def _migrate(self) -> None:
        """Bring the schema up to date (raw SQLite errors: _open() classifies them)."""
        with self._transaction() as conn:
            conn.execute("CREATE TABLE IF NOT EXISTS meta (key TEXT PRIMARY KEY, value TEXT NOT NULL)")
            meta = dict(conn.execute("SELECT key, value FROM meta").fetchall())
            seal = self._seal() if self._sealed and "store_id" not in meta else None
            if seal:
                # A store made now is sealed in its first commit: no process
                # ever sees it without (and quarantines it as not this user's).
                conn.executemany("INSERT INTO meta(key, value) VALUES (?, ?)", seal.items())
            schema = int(meta.get("schema_version", SCHEMA_VERSION))
            if schema > SCHEMA_VERSION:
                raise StoreVersionError(
                    self.db_path, f"it has schema {schema}; this ctxls reads up to {SCHEMA_VERSION} "
                    "(left untouched: use a newer ctxls or another dbPath)")
            outdated = any(v in _REBUILDS_FILE_ROWS for v in range(schema + 1, SCHEMA_VERSION + 1))
            # Memory's FTS rows are expand() output too, but memory is not in the
            # repository: they are re-derived from the memory rows, never dropped.
            retokenize_memory = (meta.get("index_stamp", INDEX_STAMP) != INDEX_STAMP
                                 or meta.get("memory_text_version", "1") != str(MEMORY_TEXT_VERSION))
            if "index_stamp" in meta and (meta["index_stamp"] != INDEX_STAMP or outdated):
                log.info("index stamp %s -> %s: rebuilding file rows", meta["index_stamp"], INDEX_STAMP)
                for table in _FILE_TABLES:
                    conn.execute(f"DROP TABLE IF EXISTS {table}")
                new_paths_generation(conn)
                index_incomplete(conn)
                self.rebuilt = True
        # After the version check: a newer store is never modified.
        with self._write_lock:
            if self._writer.execute("PRAGMA application_id").fetchone()[0] != APPLICATION_ID:
                self._writer.execute(f"PRAGMA application_id = {APPLICATION_ID}")
                # Into the file's own header now: a store damaged before the next
                # checkpoint is still provably ours.
                self._writer.execute("PRAGMA wal_checkpoint(TRUNCATE)")
        # executescript() commits implicitly, so the DDL runs outside write().
        with self._write_lock:
            self._writer.executescript(_SCHEMA)
            # Added to the edit log after schema 5 (origin) and 29 (times): nullable
            # columns older code ignores, so no version (nor any rebuild) is needed.
            if "origin" not in {r[1] for r in self._writer.execute("PRAGMA table_info(edits)")}:
                self._writer.execute("ALTER TABLE edits ADD COLUMN origin TEXT")
            if "times" not in {r[1] for r in self._writer.execute("PRAGMA table_info(edits)")}:
                self._writer.execute("ALTER TABLE edits ADD COLUMN times INTEGER")
            # The same for why a file was read as line windows: older code
            # neither writes nor reads it; a store from before it says NULL.
            if "unparsed" not in {r[1] for r in self._writer.execute("PRAGMA table_info(files)")}:
                self._writer.execute("ALTER TABLE files ADD COLUMN unparsed TEXT")
        with self._transaction() as conn:
            if retokenize_memory:  # in the stamp's transaction: a crash redoes it
                for table in MEMORY_FTS_TABLE_BY_KIND.values():
                    conn.execute(f"DELETE FROM {table}")
                for row in conn.execute("SELECT id, kind, key, symbol, text FROM memory").fetchall():
                    self.put_memory_text(conn, *row)
            conn.executemany(
                "INSERT INTO meta(key, value) VALUES (?, ?) "
                "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                [("schema_version", str(SCHEMA_VERSION)), ("index_stamp", INDEX_STAMP),
                 ("memory_text_version", str(MEMORY_TEXT_VERSION))],
            )
