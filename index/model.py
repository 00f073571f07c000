"""Plain data types shared by the chunker, the store and the ranker."""

from __future__ import annotations

import hashlib
from dataclasses import dataclass, field

from ctxls.index.paths import CONTROL_CHARACTER, escaped_controls

# The body text one answer may carry in all (UTF-8 bytes), and what one request
# may read of written rows' texts: over one written row's bound (10 MiB), so
# the first body always fits; without it 200 rows at that bound recalled or
# listed at once made a 2 GB answer.
MAX_ANSWER_BODY_BYTES = 16 * 1024 * 1024


def line_end_character(line: str) -> int:
    """Where an LSP range ending with ``line`` ends: its length in UTF-16
    code units (the unit LSP positions count, and the only encoding the
    server announces), its CRLF's ``\r`` not counted (it ends the line)."""
    if line.endswith("\r"):
        line = line[:-1]
    if line.isascii():
        return len(line)
    return len(line.encode("utf-16-le", "surrogatepass")) // 2


def content_hash(text: str) -> str:
    """Stable short hash of a text (chunk bodies and whole files)."""
    return hashlib.blake2b(text.encode("utf-8", "surrogatepass"), digest_size=12).hexdigest()


@dataclass(frozen=True)
class Chunk:
    """One retrievable unit of a file.

    Lines are 0-based and inclusive. ``symbol`` is the qualified name
    (``Session.request``; Markdown sections use their heading path joined with
    `` > ``), or None for module-level residue and line windows; a control
    character in it is written ``\\uXXXX`` (a line break in a Racket `|a⏎b|`
    symbol would forge lines in every answer printing it).
    """

    symbol: str | None
    symbol_kind: str  # function | method | class | module | section | window | ...
    kind: str  # "code" | "doc"
    language: str
    start_line: int
    end_line: int
    text: str
    hash: str = ""
    # Every definition whose first line lies in this chunk (packing puts a
    # class header and its short members, or runs of one-liners, together);
    # the chunk's full-text symbol column holds them all.
    names: tuple[str, ...] = ()

    def __post_init__(self) -> None:
        if not self.hash:
            object.__setattr__(self, "hash", content_hash(self.text))
        # Every route a name takes from a file to an answer passes here.
        if self.symbol is not None and CONTROL_CHARACTER.search(self.symbol):
            object.__setattr__(self, "symbol", escaped_controls(self.symbol))
        if any(CONTROL_CHARACTER.search(name) for name in self.names):
            object.__setattr__(self, "names", tuple(map(escaped_controls, self.names)))


@dataclass(frozen=True)
class ImportRef:
    """An import statement's target as written (``os.path``, ``./util``)."""

    spec: str
    line: int


@dataclass(frozen=True)
class SymbolDef:
    """One definition, as the symbol table keeps it (whatever chunk it was
    packed into): lines 0-based inclusive; a container's lines are its header
    (its members are definitions of their own); ``hash`` is of those lines.
    ``line`` is the row of its name (`def`, `class`, `fn` …: past leading
    comments, decorators and attributes, which ``start_line`` includes);
    ``body_end`` the last row of the whole definition (a container's members
    included)."""

    symbol: str
    symbol_kind: str
    start_line: int
    end_line: int
    hash: str
    line: int = -1
    body_end: int = -1

    def __post_init__(self) -> None:
        if CONTROL_CHARACTER.search(self.symbol):  # as Chunk's
            object.__setattr__(self, "symbol", escaped_controls(self.symbol))
        if self.line < 0:
            object.__setattr__(self, "line", self.start_line)
        if self.body_end < self.end_line:
            object.__setattr__(self, "body_end", self.end_line)


@dataclass
class ParsedFile:
    """What the chunker extracts from one file's text."""

    language: str
    chunks: list[Chunk] = field(default_factory=list)
    imports: list[ImportRef] = field(default_factory=list)
    symbols: list[SymbolDef] = field(default_factory=list)
    # Why a file its grammar reads was read as line windows instead (status's
    # `unparsed`): UNPARSED_DEADLINE or UNPARSED_HAZARD; None when it was not.
    unparsed: str | None = None


UNPARSED_DEADLINE = "parse deadline"
UNPARSED_HAZARD = "parser hung or crashed"
# Stored as line windows by an earlier process (one of the two above; which
# is not kept) and unchanged since.
UNPARSED_EARLIER = "not parsed by an earlier run"
# Its grammar gave up on many other files in this process (languages.suspended).
UNPARSED_SUSPENDED = "language suspended after many give-ups"


def split_symbol(symbol: str) -> tuple[str | None, str]:
    """A qualified symbol's (container, name): split at the last "." outside
    brackets that follows a name (`Bag.[Symbol.iterator]` is `Bag` and
    `[Symbol.iterator]`, `Money.==` is `Money` and `==`, Haskell's operator
    `.:` is one name)."""
    depth = 0
    for index in range(len(symbol) - 1, 0, -1):
        char = symbol[index]
        if char in ")]}":
            depth += 1
        elif char in "([{":
            depth -= 1
        elif char == "." and depth == 0 and index + 1 < len(symbol) \
                and (symbol[index - 1].isalnum() or symbol[index - 1] in "_$)]>`'"):
            return symbol[:index], symbol[index + 1:]
    return None, symbol
