"""What resolution answers with: verdicts, references, class identities,
receivers, matches and the targets of one analysis (``resolve.Resolver``
produces them)."""

from __future__ import annotations

import enum
import posixpath
from collections.abc import Iterable
from dataclasses import dataclass

from ctxls.index.model import split_symbol

from . import syntax
from .index_view import Definition
from .syntax import JS, PYTHON


class Verdict(enum.IntEnum):
    OTHER = 0
    UNKNOWN = 1
    CONFIRMED = 2


@dataclass(frozen=True)
class Ref:
    """What a name refers to: a ``definition`` (path, top-level symbol), a
    ``module`` (its file; Go: its import path), something ``external`` to
    the index, or ``unknown``."""

    kind: str
    path: str | None = None
    symbol: str | None = None


UNKNOWN_REF = Ref("unknown")
EXTERNAL_REF = Ref("external")


@dataclass(frozen=True)
class ClassId:
    """A class by where it is defined, never by its bare name alone: two
    classes named alike in two modules (a ``v1/`` compatibility copy) are two
    classes. ``home`` is the defining file (Go: the package directory, where
    methods live in any file); None when only the name is known (a base that
    cannot be resolved), which is then matched by name and never confirms."""

    home: str | None
    symbol: str  # as the index qualifies it in its file: `Outer.Inner`

    @property
    def name(self) -> str:
        return split_symbol(self.symbol)[1]


def class_home(path: str) -> str:
    """Where a class's members live: its file; Go: its package directory."""
    return posixpath.dirname(path) if path.endswith(".go") else path


def container_id(definition: Definition) -> ClassId | None:
    """The class a member definition belongs to."""
    head = split_symbol(definition.symbol)[0]
    return ClassId(class_home(definition.path), head) if head is not None else None


@dataclass(frozen=True)
class Base:
    cls: ClassId
    known: bool  # an indexed class, or surely outside the index (a builtin, an external import)


@dataclass(frozen=True)
class Receiver:
    """What the object of a member access (``recv.name``) is."""

    kind: str  # self | super | class | instance | module | external | unknown
    cls: ClassId | None = None
    module: str | None = None
    # The class's direct bases read from its own node (self, super), when at
    # hand: a class nested in a function is not in the index.
    bases: tuple[Base, ...] | None = None


UNKNOWN_RECEIVER = Receiver("unknown")


@dataclass(frozen=True)
class Match:
    """A verdict with the targets it leads to (confirmed) or may lead to
    (unknown), and, when unknown, why (:data:`UNCONFIRMED_REASONS`)."""

    verdict: Verdict
    keys: frozenset[tuple] = frozenset()
    reason: str | None = None


OTHER_MATCH = Match(Verdict.OTHER)
# Why a use stays unconfirmed, most likely a true call first: the order
# unconfirmed callers are listed in.
UNCONFIRMED_REASONS = (
    "override",  # self.m() in a base: a subclass's override at run time
    "untyped-receiver",  # obj.m() where nothing tells obj's type, and few classes define m
    "unknown-base",  # the class derives from a base outside what is known
    "unresolved-class",  # the receiver's class is known by name only
    "unresolved-import",  # a bare name whose import cannot be followed
    "parameter",  # a parameter named like the target (a test fixture's value)
    "several-definitions",  # the only definitions of the name are several of the targets
    "name-only-language",  # a language without binding analysis
    "shared-name",  # obj.m() where many unrelated classes of the project define m
    "builtin-name",  # obj.m() where the standard library or builtins have m (get, close)
    "construction",  # Python's C(): runs C.__init__ through type.__call__ (a metaclass or __new__ may not)
)
# Classes other than the targets' defining a method name that make an
# untyped `obj.name()` a "shared-name" use.
SHARED_NAME_CLASSES = 3


# Languages whose code calls each other's definitions by name: one
# runtime or one linker (a JVM's, .NET's, a JavaScript engine's, BEAM's,
# C's). A call in any other pair of languages reaches none of the other's
# definitions: Ruby's `checksum(x)` is not a caller of Rust's `fn checksum`.
INTEROPERATING_LANGUAGES = (
    frozenset({"javascript", "typescript", "tsx", "vue", "svelte"}),
    frozenset({"java", "kotlin", "scala", "groovy", "clojure"}),
    frozenset({"csharp", "fsharp", "vbnet"}),
    frozenset({"c", "cpp", "objc", "cuda"}),
    frozenset({"c", "objc", "swift"}),
    frozenset({"erlang", "elixir", "gleam"}),
)


def interoperate(language: str | None, other: str | None) -> bool:
    """Whether code in ``language`` may call a definition in ``other`` by name."""
    return language == other or any(language in group and other in group for group in INTEROPERATING_LANGUAGES)


class Targets:
    """The definitions a question is about, with what verdicts ask of them
    precomputed (a name like `__init__` has hundreds)."""

    def __init__(self, definitions: Iterable[Definition]):
        self.definitions = list(definitions)
        self._reachable: dict[str | None, Targets] = {}
        self.keys = frozenset(d.key for d in self.definitions)
        self.members = [d for d in self.definitions if d.container is not None]
        self.containers = frozenset(d.container for d in self.members)  # names
        self.container_ids = frozenset(container_id(d) for d in self.members)
        self.only_methods = all(d.symbol_kind == "method" for d in self.definitions)
        self.module_level = [d for d in self.definitions if d.container is None]
        self.module_keys = frozenset(d.key for d in self.module_level)
        self.js_members = [d for d in self.members if syntax.family_for(d.language) is JS]
        # Members a typed receiver may reach in a subclass (Python's and JavaScript's classes).
        self.dispatch_members = [d for d in self.members if syntax.family_for(d.language) in (JS, PYTHON)]

    def reachable_from(self, language: str | None) -> Targets:
        """The targets code in ``language`` may call (``interoperate``)."""
        if language not in self._reachable:
            reachable = [d for d in self.definitions if interoperate(language, d.language)]
            self._reachable[language] = self if len(reachable) == len(self.definitions) else Targets(reachable)
        return self._reachable[language]


# Bounds on following chains: re-exports and base classes.
MAX_REEXPORT_DEPTH = 8
MAX_BASES = 64

