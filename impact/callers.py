"""Callers and mentions of a set of definitions.

1. Sweep: every line holding the name as a word (``ripgrep.sweep``: files
   on disk plus open buffers, a buffer replacing its file; only the files
   the index says may hold it, ``index_view.sweep_scope``, when it can say).
2. Classify each occurrence on those lines with the file's syntax tree:
   comment, string, a declaration, a (re)binding, an import — these are
   *mentions*, counted by kind — or a use: a call, a decorator, or a value
   (a callback, ``map(f, xs)``, a type). A use is then tied to the targets by
   :class:`~ctxls.impact.resolve.Resolver`: confirmed, unconfirmed, or
   ``elsewhere`` (another definition: a mention too).
3. Aliases: ``from m import f as g`` / ``import { f as g }`` (and a default
   import of a default export, found through the files importing it or a
   barrel re-exporting it as its own default) make
   the uses of ``g`` in that file callers; a re-export under a new name (a barrel's
   ``export { f as g } from``, a package ``__init__`` alias) sends a second
   sweep for ``g``, where only confirmed uses count (the word is not ours).

Files are confirmed most-likely-first (the defining files, files importing
them, non-test files, then by path), at most ``Limits.near_files`` of the
files near the definitions and ``Limits.distant_files`` of the others: a
count of files, never a clock, so one index gives one answer whatever the
machine's load. The lines of files left are counted as ``unchecked``
mentions (and their files in ``References.unchecked_files``), never dropped.
"""

from __future__ import annotations

import posixpath
from collections import Counter
from dataclasses import dataclass, field, replace

from tree_sitter import Node

from ctxls.index.cancel import check_cancelled
from ctxls.index.languages import language_for_path
from ctxls.index.model import split_symbol
from ctxls.index.paths import is_test_path

from . import class_names, index_view, ripgrep, syntax
from .index_view import Definition
from .resolve import Resolver
from .resolved import MAX_REEXPORT_DEPTH, Match, Targets, Verdict, interoperate
from .syntax import GENERIC, JS, PYTHON, Family, SourceFile, Span

# Names a re-export introduces that get a sweep of their own (per request).
MAX_ALIAS_SWEEPS = 4
# Class names swept for a constructor's callers: its class, then subclasses
# without a constructor of their own (their `new` runs it).
MAX_CONSTRUCTOR_SWEEPS = 16
# Modules whose importers count as importing what they re-export.
_BARREL_STEMS = ("__init__.", "index.")


@dataclass(frozen=True)
class Caller:
    path: str
    span: Span  # the name at the call site (``f`` of ``f(x)``, ``m`` of ``obj.m()``)
    symbol: str | None  # the enclosing symbol; None at module level
    symbol_kind: str | None
    symbol_lines: tuple[int, int] | None  # the enclosing symbol's lines
    confirmed: bool
    kind: str  # call | decorator | value
    # The definitions it leads to (confirmed) or may lead to, by ``Definition.key``.
    targets: frozenset[tuple] = frozenset()
    reason: str | None = None  # why unconfirmed (resolved.UNCONFIRMED_REASONS)
    # Test code: a test file's (``paths.is_test_path``), or a test its file
    # holds inline (``syntax.in_inline_test``: Rust's `#[cfg(test)] mod tests`).
    test: bool = False


@dataclass(frozen=True)
class Limits:
    """How many files one analysis parses to confirm occurrences. Near files
    (defining or importing the definitions) hold the callers that matter;
    the others' can only be untyped receivers or name clashes, and a common
    name has thousands. docs/decisions.md, "Impact: deterministic file limits", has what these cost."""

    near_files: int = 1000
    distant_files: int = 150


@dataclass
class References:
    callers: list[Caller] = field(default_factory=list)
    mentions: Counter[str] = field(default_factory=Counter)  # kind -> count
    unchecked_files: int = 0  # files holding the name left unparsed by the Limits
    named_in_strings: int = 0  # string literals that are exactly the name (reflection, registries)
    name_only_languages: set[str] = field(default_factory=set)  # callers never confirmable there


# The kind of a target's own declared name: recorded as neither caller nor mention.
OWN_DECLARATION = "own declaration"


@dataclass(frozen=True)
class _Use:
    """A classified occurrence: a mention kind, or a use with its match."""

    kind: str
    match: Match | None = None
    node: Node | None = None
    alias: str | None = None  # the local name an aliasing import gives the target
    reexported: bool = False  # ... and whether importers of this file see that name


def find_references(resolver: Resolver, targets: Targets, limits: Limits = Limits()) -> References:
    """Callers and mentions of ``targets``. Files near them (defining or
    importing them, directly or through a package/barrel) are confirmed up
    to ``limits.near_files``; the rest, whose callers can only be untyped
    receivers or name clashes, up to ``limits.distant_files``."""
    engine = resolver.engine
    options = engine.options.discovery
    buffers = engine.open_buffers()
    refs = References()
    seen: set[tuple[str, int, int]] = set()

    sweeps: dict[str, ripgrep.Sweep] = {}  # word -> its sweep

    def sweep(word: str) -> dict[str, list[int]]:
        found = ripgrep.sweep(engine.root, word, options.include, engine.indexer.wanted, buffers,
                              options.max_file_bytes, index_view.sweep_scope(engine, word))
        refs.mentions["unchecked"] += found.lines_dropped
        resolver.remember(found.texts)
        sweeps[word] = found
        return found.lines

    def php_sweep(word: str) -> dict[str, list[int]]:
        """The PHP files' lines holding ``word`` in another case only (the
        lines of the sweep for ``word`` itself are that sweep's)."""
        include = [e for e in options.include if language_for_path(f"x.{e}") == "php"]
        found = ripgrep.sweep(engine.root, word, include, engine.indexer.wanted, buffers,
                              options.max_file_bytes, index_view.sweep_scope(engine, word), ignore_case=True)
        exact = sweeps.get(word, ripgrep.Sweep())
        refs.mentions["unchecked"] += max(0, found.lines_dropped - exact.lines_dropped)
        resolver.remember(found.texts)
        lines = {}
        for path, rows in found.lines.items():
            if language_for_path(path) != "php":
                continue
            if path not in admitted:  # else its rows are parsed, and its exact occurrences skipped
                counted = set(exact.lines.get(path, ()))  # as unchecked, if it stays unparsed
                rows = [row for row in rows if row not in counted]
            if rows:
                lines[path] = rows
        return lines

    target_paths = {t.path for t in targets.definitions}
    importers = index_view.importers_of(resolver.conn, target_paths)
    near = target_paths | importers | index_view.importers_of(
        resolver.conn, {p for p in importers if posixpath.basename(p).startswith(_BARREL_STEMS)})

    def priority(path: str) -> tuple:
        return path not in target_paths, path not in near, is_test_path(path), path

    admitted: set[str] = set()
    left = {True: limits.near_files, False: limits.distant_files}

    def admit(path: str, rows: int) -> bool:
        """Whether ``path`` is parsed (within the limits, counting each file
        once); its ``rows`` count as unchecked when not."""
        if path not in admitted:
            if left[path in near] <= 0:
                refs.mentions["unchecked"] += rows
                refs.unchecked_files += 1
                return False
            left[path in near] -= 1
            admitted.add(path)
        return True

    def swept_occurrences(name: str, other_case: bool = False):
        """(source, row, start, end) of ``name`` in the files the sweep finds,
        nearest first; a file past the limits counts as unchecked. With
        ``other_case``: of ``name`` written in another case, in PHP files."""
        lines = php_sweep(name) if other_case else sweep(name)
        for path in sorted(lines, key=priority):
            check_cancelled()  # a file parsed and resolved is the sweep's step
            sf = resolver.source(path) if admit(path, len(lines[path])) else None
            if sf is None:
                continue
            for row, start, end in sf.occurrences(name, lines[path], ignore_case=other_case):
                # and each occurrence resolved: one planted file can hold thousands.
                check_cancelled()
                if not other_case or sf.lines[row][start:end] != name:
                    yield sf, row, start, end
            if path not in target_paths:  # read through: its tree need not live on
                resolver.release(path)

    # A constructor's name (JS/TS `constructor`, Python `__init__`, Ruby
    # `initialize`, PHP `__construct`, Swift `init`) is not written where it
    # is called: its class's name is swept for `new C()`, `C()`, `C.new`;
    # `super()` in a subclass's constructor, and the construction of a
    # subclass without a constructor of its own (its name is swept in turn).
    # A Java or C# constructor is its class's name: that sweep is the one below.
    pending = _constructors(targets)
    class_aliases: dict[tuple[str, str], Runs] = {}  # (file, local name) -> what it runs

    def constructor_calls(sf: SourceFile, row: int, start: int, end: int, class_name: str, runs: Runs) -> None:
        found = _constructor_calls(resolver, sf, row, start, end, class_name, runs)
        for site in found.sites:
            _record(resolver, refs, seen, sf, *site, "constructor")
        if found.subclass is not None:
            pending.setdefault(found.subclass[0], {}).setdefault(found.subclass[1], found.subclass[2])
        if found.alias is not None and found.reexported:  # `from .m import C as D` in an __init__: its importers
            for cls, ran in found.runs.items():
                pending.setdefault(found.alias, {}).setdefault(cls, ran)
        elif found.alias is not None:  # `from m import C as D`, PHP `use Shop\Item as Thing`: `D()` in that file
            class_aliases.setdefault((sf.path, found.alias), {}).update(found.runs)

    # A default-exported class is constructed under the name each importer
    # gives it (`import Q from './queue'; new Q()`).
    for class_name, runs in list(pending.items()):
        for cls, ran in runs.items():
            made = Targets([Definition(cls[0], cls[1], "class", language_for_path(cls[0]) or "", 0, 0)])
            for path, alias, reexported in _default_imports(resolver, made):
                if alias == class_name:  # the class's own sweep reads it
                    continue
                if reexported:  # a barrel's `export { default as Q } from`: its importers anywhere
                    pending.setdefault(alias, {}).setdefault(cls, ran)
                else:
                    class_aliases.setdefault((path, alias), {}).setdefault(cls, ran)

    local_aliases: dict[str, set[str]] = {}
    reexported_aliases: set[str] = set()
    # A Java or C# constructor is written as its class's name, but only a
    # construction of its class (`new Item()`, `this(…)`, `super(…)`) calls
    # it: another use of the name (a type, `extends Item`) is the class's.
    class_named = frozenset(t.key for t in targets.members
                            if t.language in _CLASS_NAMED_CONSTRUCTORS and t.name == t.container)
    for name in sorted({t.name for t in targets.definitions}):
        class_runs = pending.pop(name, None)
        for sf, row, start, end in swept_occurrences(name):
            use = _classify(resolver, sf, row, start, end, name, targets)
            if use.match is not None and use.match.keys & class_named:
                rest = use.match.keys - class_named
                use = _Use(use.kind, replace(use.match, keys=rest), use.node) if rest else _Use("elsewhere")
                if not rest and class_runs is not None:  # a construction: a caller, not a mention
                    constructor_calls(sf, row, start, end, name, class_runs)
            _record(resolver, refs, seen, sf, row, start, end, use, name)
            if use.alias:
                local_aliases.setdefault(sf.path, set()).add(use.alias)
                if use.reexported:
                    reexported_aliases.add(use.alias)
            if class_runs is not None:
                constructor_calls(sf, row, start, end, name, class_runs)
    # PHP's functions, methods and classes answer to their name in any case
    # (`Format_Price()` calls `format_price`).
    for name in sorted({t.name for t in targets.definitions if t.language == "php"}):
        for sf, row, start, end in swept_occurrences(name, other_case=True):
            written = sf.lines[row][start:end]
            _record(resolver, refs, seen, sf, row, start, end,
                    _classify(resolver, sf, row, start, end, written, targets), written)

    swept = 0
    aliases_read: set[tuple[str, str]] = set()
    while True:
        # A class imported under another name is constructed under that
        # name in its file, and subclassed there too (whose name is swept).
        for path, alias in sorted(class_aliases.keys() - aliases_read):
            aliases_read.add((path, alias))
            sf = resolver.source(path)
            for row, start, end in sf.occurrences(alias, range(len(sf.lines))) if sf is not None else ():
                constructor_calls(sf, row, start, end, alias, class_aliases[path, alias])
        if not pending or swept >= MAX_CONSTRUCTOR_SWEEPS:
            break
        class_name = min(pending)
        runs = pending.pop(class_name)
        swept += 1
        for sf, row, start, end in swept_occurrences(class_name):
            constructor_calls(sf, row, start, end, class_name, runs)
    for sf, row, start, end, use in _self_constructions(resolver, targets):
        _record(resolver, refs, seen, sf, row, start, end, use, "constructor")

    for path, alias, reexported in _default_imports(resolver, targets):
        if reexported:  # `export { default as name } from './m'`: its importers anywhere
            reexported_aliases.add(alias)
        else:
            local_aliases.setdefault(path, set()).add(alias)

    # Uses of a local alias are callers when they lead to a target through
    # it; a name re-exported under an alias, its importers' anywhere. An
    # alias of an alias (`import { create as make }` then `export { make as
    # string }`, `from pkg import make as m`) is followed in turn.
    local_todo = sorted((path, alias) for path, aliases in local_aliases.items() for alias in aliases)
    reexported_todo = sorted(reexported_aliases)
    followed = set(local_todo) | set(reexported_todo)
    alias_sweeps = 0
    target_names = {(t.path, t.symbol) for t in targets.definitions}

    def follow(sf: SourceFile, use: _Use) -> None:
        if not use.alias:
            return
        # Only an alias naming a target: a barrel renames many modules' `create`.
        named = resolver.lookup_name(sf.path, use.alias)
        alias = use.alias if use.reexported else (sf.path, use.alias)
        if (named.path, named.symbol) in target_names and alias not in followed:
            followed.add(alias)
            if use.reexported:
                reexported_todo.append(use.alias)
            else:
                local_todo.append((sf.path, use.alias))

    while local_todo or (reexported_todo and alias_sweeps < MAX_ALIAS_SWEEPS):
        if local_todo:
            path, alias = local_todo.pop(0)
            sf = resolver.source(path)
            for row, start, end in sf.occurrences(alias, range(len(sf.lines))) if sf is not None else ():
                use = _classify(resolver, sf, row, start, end, alias, targets)
                if use.match is not None:
                    _record(resolver, refs, seen, sf, row, start, end, use, alias)
                follow(sf, use)
            continue
        alias = reexported_todo.pop(0)
        alias_sweeps += 1
        lines = sweep(alias)
        for path in sorted(lines, key=priority):
            sf = resolver.source(path) if admit(path, len(lines[path])) else None
            for row, start, end in sf.occurrences(alias, lines[path]) if sf is not None else ():
                use = _classify(resolver, sf, row, start, end, alias, targets)
                if use.match is not None and use.match.verdict is Verdict.CONFIRMED:
                    _record(resolver, refs, seen, sf, row, start, end, use, alias)
                follow(sf, use)
    refs.callers.sort(key=lambda c: (c.path, c.span.start_line, c.span.start_character))
    return refs


# What `new` of a class runs: class (path, symbol) -> (the target
# constructors' keys, why it stays unconfirmed or None).
Runs = dict[tuple[str, str], tuple[frozenset[tuple], str | None]]


# The name a class's constructor is declared under, where it is not the
# class's own name (JS/TS: `constructor`): constructing the class runs it.
_CONSTRUCTOR_NAMES = {"python": "__init__", "ruby": "initialize", "php": "__construct", "swift": "init"}
# Where constructing a class is listed but never confirmed as a call of its
# constructor. Python's `C()` reaches `__init__` only through
# `type.__call__` (a metaclass or a `__new__` may not), and type checkers
# count it a reference to the class, not to `__init__` (pyright's and
# jedi's references; bench/impact.py measured precision against them
# falling from 0.97 to 0.40 on urllib3 with these confirmed).
_CONSTRUCTION_REASONS = {"python": "construction"}
# Languages whose constructors are named as their class, with their
# `this(…)` calling another of the class's constructors.
_CLASS_NAMED_CONSTRUCTORS = frozenset({"java", "csharp"})
# Where a class names its bases: Ruby's `< C`, PHP's `extends C`, Swift's
# `: C` (Python's are the class's `superclasses` argument list).
_HERITAGE = frozenset({"superclass", "base_clause", "inheritance_specifier", "base_list"})
# Nodes around the last segment of a qualified class name (`Mod::C`, `\Shop\C`, `Mod.C`).
_QUALIFIED = frozenset({"qualified_name", "scope_resolution", "user_type", "scoped_type_identifier"})
# The members a constructor is among (not entered when looking for it);
# Swift's `init` is an `init_declaration`.
_MEMBER_DEFINITIONS = frozenset({"function_definition", "method", "method_declaration", "init_declaration",
                                 "method_definition", "constructor_declaration", "class_definition", "class",
                                 "class_declaration"})


def constructor_name(language: str | None) -> str | None:
    """The name a constructor of ``language`` is declared under when it is
    not its class's name (Java's, C#'s, C++'s are: their sweep finds them)."""
    return "constructor" if syntax.family_for(language) is JS else _CONSTRUCTOR_NAMES.get(language or "")


def _constructors(targets: Targets) -> dict[str, Runs]:
    """Class name -> what constructing the classes so named runs: their
    constructor targets (overloads: each, the call may run any of them)."""
    found: dict[str, Runs] = {}
    for target in targets.members:
        if target.name == constructor_name(target.language) \
                or (target.language in _CLASS_NAMED_CONSTRUCTORS and target.name == target.container):
            runs = found.setdefault(target.container or "", {})
            cls = (target.path, split_symbol(target.symbol)[0] or "")
            keys, reason = runs.get(cls, (frozenset(), _CONSTRUCTION_REASONS.get(target.language)))
            runs[cls] = (keys | {target.key}, reason)
    return found


@dataclass(frozen=True)
class _ClassUse:
    """What an occurrence of a class's name does with its constructor:
    ``sites`` that call it, each (row, start, end, use); a ``subclass``
    without a constructor of its own, (its name, its key, what it runs);
    an ``alias`` an import gives the class in that file, with the ``runs``
    it stands for, and whether that file ``reexported`` it (a package's
    ``__init__``, a barrel's ``export { C as D } from``)."""

    sites: list[tuple[int, int, int, _Use]] = field(default_factory=list)
    subclass: tuple | None = None
    alias: str | None = None
    runs: Runs = field(default_factory=dict)
    reexported: bool = False


def _constructor_calls(resolver: Resolver, sf: SourceFile, row: int, start: int, end: int, class_name: str,
                       runs: Runs) -> _ClassUse:
    """The constructor calls an occurrence of a class's name makes, each
    tied to the constructors constructing that class runs: ``new C()``
    (JS/TS, PHP), ``C()`` (Python, Swift), ``C.new`` (Ruby) at the name;
    ``class D extends C`` at the ``super(...)`` of D's constructor (JS/TS,
    Java, Ruby; C#'s ``: base(...)``; elsewhere ``super().__init__`` names
    the constructor and its own sweep finds it). A D without a constructor runs C's: then also D, for
    its own constructions."""
    node = sf.node_at(row, start, end) if sf.family is not None else None
    if node is None or not syntax.is_identifier(node):
        return _ClassUse()
    family = sf.family
    assert family is not None
    expression, _ = syntax.member_parts(family, node)
    outer = _qualified_end(expression)
    parent = outer.parent
    # The sweep finds a class by its last name: a qualifier, an import or a
    # module nesting that names another class of that name leaves it out.
    runs = {cls: ran for cls, ran in runs.items() if interoperate(sf.language, language_for_path(cls[0]))
            and not class_names.names_another_class(resolver, sf, outer, cls)}
    if not runs or parent is None:
        return _ClassUse()
    subclass = None
    if _constructs(sf, expression, outer):
        sites = [(row, start, end)]
    elif family is JS and parent.type in ("extends_clause", "class_heritage") \
            and syntax.field_of(outer) in ("value", ""):
        heritage = parent if parent.type == "class_heritage" else parent.parent
        subclass = heritage.parent if heritage is not None else None
    elif parent.type in _HERITAGE or (family is PYTHON and parent.type == "argument_list"
                                      and syntax.field_of(parent) == "superclasses"):
        subclass = parent.parent
    elif sf.language == "php" and parent.type == "namespace_use_clause":
        alias = syntax.text_of(parent.child_by_field_name("alias"))
        return _ClassUse(alias=alias, runs=runs) if alias and alias != class_name else _ClassUse()
    elif (imported := _import_alias(family, sf, node, class_name)) is not None:
        return _ClassUse(alias=imported.alias, runs=runs, reexported=imported.reexported)
    else:
        return _ClassUse()
    if subclass is not None:
        own_name = constructor_name(sf.language) or syntax.text_of(subclass.child_by_field_name("name"))
        constructors = _own_constructors(subclass, own_name)
        sites = [(call.start_point.row, sf.character_from_byte(call.start_point.row, call.start_point.column),
                  sf.character_from_byte(call.end_point.row, call.end_point.column))
                 for constructor in constructors for call in _super_calls(sf, constructor)]
        if constructors:
            subclass = None
    classes = Targets(Definition(path, symbol, "class", sf.language or "", 0, 0) for path, symbol in runs)
    match = resolver.match(sf, node, class_name, classes)
    if match.verdict is Verdict.OTHER:
        return _ClassUse()
    keys = frozenset(key for cls in match.keys for key in runs[cls][0])
    reason = match.reason or next((runs[cls][1] for cls in match.keys if runs[cls][1]), None)
    verdict = Verdict.CONFIRMED if match.verdict is Verdict.CONFIRMED and reason is None else Verdict.UNKNOWN
    use = _Use("call", Match(verdict, keys, reason), node)
    found = None
    name = subclass.child_by_field_name("name") if subclass is not None else None
    if name is not None:
        cls = resolver.class_at(sf, subclass)  # type: ignore[arg-type]
        found = (syntax.text_of(name), (cls.home, cls.symbol), (keys, reason))
    return _ClassUse([(*site, use) for site in sites], found)


# Where a class constructs itself without writing its name: PHP's `new
# self(…)`, `new static(…)`; Java's `this(…)`, C#'s `: this(…)` (another of
# its constructors). Language -> (words, the node type they sit in).
_SELF_CONSTRUCTIONS = {"php": (("self", "static"), "object_creation_expression"),
                       "java": (("this",), "explicit_constructor_invocation"),
                       "csharp": (("this",), "constructor_initializer")}


def _self_constructions(resolver: Resolver, targets: Targets) -> list[tuple]:
    """The constructions of a constructor target's class inside it that do
    not write its name (``_SELF_CONSTRUCTIONS``), (file, row, start, end,
    use) each. Java's ``this(…)`` runs another of the class's constructors
    than the one it is in: confirmed when one other is left, else
    unconfirmed for each (overloads it cannot tell apart)."""
    found = []
    classes = dict.fromkeys((t.language, t.path, t.container, split_symbol(t.symbol)[0]) for t in targets.members
                            if t.name in (constructor_name(t.language), t.container))
    for language, path, container, class_symbol in classes:
        words, construction = _SELF_CONSTRUCTIONS.get(language, ((), ""))
        if not words:
            continue
        sf = resolver.source(path)
        declared = [d for d in resolver.definitions_named(container or "")
                    if d.path == path and d.symbol == class_symbol]
        declaration = resolver.declaration(sf, declared[0]) if declared else None
        if sf is None or declaration is None:
            continue
        constructors = [d for d in resolver.definitions_named(constructor_name(language) or container or "")
                        if d.path == path and split_symbol(d.symbol)[0] == class_symbol]
        for word in words:
            for row, start, end in sf.occurrences(word, range(declaration.start_point.row,
                                                               declaration.end_point.row + 1)):
                node = sf.node_at(row, start, end)
                # C#'s `this` is a token: the smallest named node holding it is the initializer.
                holder = node if node is not None and node.type == construction else \
                    node.parent if node is not None else None
                if holder is None or holder.type != construction:
                    continue
                runs = [d.key for d in constructors if not d.start_line <= row <= d.end_line] \
                    if word == "this" else [d.key for d in constructors]
                keys = frozenset(runs) & targets.keys
                if keys:
                    match = Match(Verdict.CONFIRMED, keys) if len(runs) == 1 \
                        else Match(Verdict.UNKNOWN, keys, "several-definitions")
                    found.append((sf, row, start, end, _Use("call", match)))
    return found


def _qualified_end(node: Node) -> Node:
    """The qualified name ``node`` is the last segment of (``Mod::C``), else ``node``."""
    while node.parent is not None and node.parent.type in _QUALIFIED and node.parent.end_byte == node.end_byte:
        node = node.parent
    return node


def _constructs(sf: SourceFile, expression: Node, outer: Node) -> bool:
    """Whether the class named at ``expression`` (``outer``: with its
    qualifiers) is constructed there: ``new C()``, ``C()`` (Python, Swift,
    Kotlin, which constructs a Java class so), ``C.new``."""
    parent = outer.parent
    assert parent is not None and sf.family is not None
    if sf.family is JS:
        return parent.type == "new_expression" and syntax.use_kind(JS, expression) == "call"
    if sf.family is PYTHON or sf.language in ("swift", "kotlin"):
        return syntax.use_kind(sf.family, expression) == "call"
    if sf.language == "ruby":
        return parent.type == "call" and _is_field(parent, "receiver", outer) \
            and syntax.text_of(parent.child_by_field_name("method")) == "new"
    if sf.language in _CLASS_NAMED_CONSTRUCTORS:  # `new Item(…)`, `new Box<T>(…)`: the created type
        if parent.type in ("generic_type", "generic_name") and parent.named_children[0].id == outer.id:
            outer, parent = parent, parent.parent
        return parent is not None and parent.type == "object_creation_expression" and _is_field(parent, "type", outer)
    return sf.language == "php" and parent.type == "object_creation_expression"


def _own_constructors(class_node: Node, constructor: str) -> list[Node]:
    """The constructors a class declares itself (its members named
    ``constructor``; Java and C# overload theirs)."""
    body = class_node.child_by_field_name("body")
    found = []
    for member in syntax.walk(body, _MEMBER_DEFINITIONS) if body is not None else ():
        if member.type not in _MEMBER_DEFINITIONS or member.id == body.id:
            continue
        if (member.type == "init_declaration" and constructor == "init") or (
                member.type not in ("class_definition", "class", "class_declaration")
                and syntax.text_of(member.child_by_field_name("name")) == constructor):
            found.append(member)
    return found


def _super_calls(sf: SourceFile, constructor: Node | None) -> list[Node]:
    """The ``super`` of each ``super(...)`` in a class's constructor (JS/TS,
    Java; Ruby's ``super`` and ``super(...)``; C#'s ``: base(...)``)."""
    if constructor is None:
        return []
    if sf.family is JS:
        return [node for node in syntax.walk(constructor, (JS.functions - {"arrow_function"}) | JS.classes)
                if node.type == "super" and node.parent is not None and node.parent.type == "call_expression"]
    found = []
    for node in syntax.walk(constructor, _MEMBER_DEFINITIONS):
        if node.type == "super" and sf.language == "ruby":  # `super.m` is no Ruby
            found.append(node)
        elif node.type == "explicit_constructor_invocation":
            called = node.child_by_field_name("constructor")
            found += [called] if called is not None and called.type == "super" else []
        elif node.type == "constructor_initializer":
            found += [child for child in node.children if child.type == "base"]
    return found


def _default_imports(resolver: Resolver, targets: Targets) -> list[tuple[str, str, bool]]:
    """(file, local name, re-exported) of the default imports of targets that
    are their module's default export, or a barrel's that re-exports one as
    its own (``export { default } from './m'``): ``import anything from
    './m'`` (or a barrel's ``export { default as anything } from './m'``)
    names no target."""
    exported = set()
    for target in targets.module_level:
        sf = resolver.source(target.path)
        if sf is not None and sf.family is JS and sf.tree is not None \
                and syntax.js_default_export(sf.tree) == target.name:
            exported.add(target.path)
    importing: set[str] = set()
    reached = set(exported)
    for _ in range(MAX_REEXPORT_DEPTH):  # barrels of barrels
        if not reached:
            break
        readers = index_view.importers_of(resolver.conn, reached)
        importing |= readers
        reached = {path for path in readers - exported if _exports_target_as_default(resolver, path, targets)}
        exported |= reached
    found = []
    for path in sorted(importing):
        sf = resolver.source(path)
        for binding in sf.bindings if sf is not None and sf.family is JS else ():
            if binding.imported == "default" and not (binding.reexport and binding.local == "default") \
                    and resolver.module_path(sf, binding.spec)[0] in exported:
                found.append((path, binding.local, binding.reexport))
    return found


def _exports_target_as_default(resolver: Resolver, path: str, targets: Targets) -> bool:
    """Whether the JS/TS module ``path``'s default export is a target (a
    barrel's ``export { default } from './m'`` of m's)."""
    sf = resolver.source(path)
    if sf is None or sf.family is not JS:
        return False
    ref = resolver.lookup_name(path, "default")
    return ref.kind == "definition" and (ref.path or "", ref.symbol or "") in targets.keys


def _record(resolver: Resolver, refs: References, seen: set, sf: SourceFile, row: int, start: int,
            end: int, use: _Use, name: str) -> None:
    if (sf.path, row, start) in seen:
        return
    seen.add((sf.path, row, start))
    if use.kind == OWN_DECLARATION:
        return
    if use.match is None:
        refs.mentions[use.kind] += 1
        if use.kind == "string" and use.node is not None and syntax.text_of(use.node).strip("'\"`") == name:
            refs.named_in_strings += 1
        return
    enclosing = resolver.enclosing(sf, row)
    if sf.family is not None and sf.family.name == GENERIC.name and use.match.verdict is not Verdict.CONFIRMED:
        refs.name_only_languages.add(sf.language or "")
    refs.callers.append(Caller(
        path=sf.path, span=sf.span(row, start, end),
        symbol=enclosing.symbol if enclosing else None,
        symbol_kind=enclosing.symbol_kind if enclosing else None,
        symbol_lines=(enclosing.start_line, enclosing.end_line) if enclosing else None,
        confirmed=use.match.verdict is Verdict.CONFIRMED, kind=use.kind, targets=use.match.keys,
        reason=use.match.reason, test=is_test_path(sf.path) or syntax.in_inline_test(sf, row, start, end)))


def _classify(resolver: Resolver, sf: SourceFile, row: int, start: int, end: int, name: str,
              targets: Targets) -> _Use:
    family = sf.family
    node = sf.node_at(row, start, end) if family is not None else None
    if family is None or node is None:
        return _Use("text")
    if syntax.is_comment(node):
        return _Use("comment")
    if syntax.is_string(node):
        return _Use("string", node=node)
    if node.type == "preproc_arg":  # a C/C++ macro's body: its text is no syntax tree
        kind = syntax.macro_body_use(sf.lines[row], start, end)
        if kind in ("comment", "string"):
            return _Use(kind, node=node)
        return _Use(kind, resolver.match(sf, node, name, targets), node)
    if node.type == "simple_symbol" and sf.language == "ruby":  # `&:name`, `method(:name)`, `send(:name)`
        kind = syntax.ruby_symbol_use(node, name)
        if kind is not None:
            return _Use(kind, resolver.match(sf, node, name, targets), node)
    # A word inside a longer name (Clojure's `add` in `add-item`, a JS/TS
    # private member `#add`, `$add`: one token) is not that name.
    if not syntax.is_identifier(node) or (
            (family.definitions is not None or node.named_child_count == 0) and syntax.text_of(node) != name):
        return _Use("other")
    alias = _import_alias(family, sf, node, name)
    if alias is not None:
        return alias
    if syntax.in_import(family, node, sf.parents) is not None:
        return _Use("import")
    if syntax.declares(family, node, sf.parents):
        # A target's own name (`f` of `def f`) is neither a use of it nor
        # another definition's name: every answer counted it as the latter.
        return _Use(OWN_DECLARATION if _declares_target(resolver, sf, node, targets)
                    else "definition")
    ruby = syntax.ruby_name_use(sf, node) if sf.language == "ruby" else None
    if ruby == "local":
        return _Use("elsewhere")  # a local variable of that name
    expression, _ = syntax.member_parts(family, node, sf.parents)
    if ruby == "binding" or syntax.is_bound(family, expression, sf.parents) or syntax.is_table_binding(family, node):
        written = _setter_call(resolver, sf, node, name, targets)
        return _Use("call", written, node) if written is not None else _Use("binding")
    match = resolver.match(sf, node, name, targets)
    if match.verdict is Verdict.OTHER:
        return _Use("elsewhere")
    # `log_change` alone: Ruby calls it without parentheses.
    return _Use("call" if ruby == "call" else syntax.use_kind(family, expression, sf.parents), match, node)


def _declares_target(resolver: Resolver, sf: SourceFile, node: Node, targets: Targets) -> bool:
    """Whether ``node`` is the name one of ``targets`` declares."""
    row = node.start_point[0]
    return any(t.path == sf.path and t.start_line <= row <= t.end_line
               and (declared := resolver.declaration_name(sf, t)) is not None
               and declared.start_byte == node.start_byte
               for t in targets.definitions)


def _setter_call(resolver: Resolver, sf: SourceFile, node: Node, name: str, targets: Targets) -> Match | None:
    """An assignment to a member (``t.celsius = 5``, ``t.celsius += 1``)
    that may reach a target property with a setter calls that setter: the
    match on those targets; None for any other binding."""
    assert sf.family is not None
    if syntax.member_parts(sf.family, node, sf.parents)[1] is None:
        return None  # a bare name: a variable
    setters = frozenset(t.key for t in targets.members if t.name == name and resolver.has_setter(t))
    if not setters:
        return None
    match = resolver.match(sf, node, name, targets)
    keys = match.keys & setters
    if match.verdict is Verdict.OTHER or not keys:
        return None
    return Match(match.verdict, keys, match.reason)


def _import_alias(family: Family, sf: SourceFile, node: Node, name: str) -> _Use | None:
    """``from m import name as alias``, ``import { name as alias }``,
    ``export { name as alias } from``, ``const { name: alias } = require()``,
    Rust's ``use m::name as alias``."""
    parent = syntax.parent_of(node, sf.parents)
    if parent is None:
        return None
    alias = ""
    reexported = False
    if family is PYTHON and parent.type == "dotted_name" and syntax.text_of(parent) == name:
        aliased = parent.parent
        if aliased is not None and aliased.type == "aliased_import" \
                and aliased.parent is not None and aliased.parent.type == "import_from_statement":
            alias = syntax.text_of(aliased.child_by_field_name("alias"))
            # A package's __init__ is what `from package import alias` reads.
            reexported = sf.path.endswith(("__init__.py", "__init__.pyi"))
    elif family is JS and parent.type in ("import_specifier", "export_specifier") \
            and _is_field(parent, "name", node):
        alias = syntax.text_of(parent.child_by_field_name("alias")).strip("'\"")
        reexported = parent.type == "export_specifier"
    elif family is JS and parent.type == "pair_pattern" and _is_field(parent, "key", node):
        value = parent.child_by_field_name("value")
        declarator = parent.parent.parent if parent.parent is not None else None
        # `const { name: alias } = require(…)` (a computed module too), or `= ns` of `import * as ns`
        if value is not None and value.type == "identifier" and declarator is not None and (
                "require" in syntax.text_of(declarator.child_by_field_name("value")) or sf.declares_import(value)):
            alias = syntax.text_of(value)
    else:
        # Rust: `use m::name as alias` (the name is the path, or its last segment).
        clause = parent if parent.type == "use_as_clause" and _is_field(parent, "path", node) else None
        if parent.type == "scoped_identifier" and _is_field(parent, "name", node) and parent.parent is not None \
                and parent.parent.type == "use_as_clause" and _is_field(parent.parent, "path", parent):
            clause = parent.parent
        if clause is not None:
            alias = syntax.text_of(clause.child_by_field_name("alias"))
    if not alias or alias == name:
        return None
    return _Use("import", alias=alias, reexported=reexported)


def _is_field(parent: Node, field_name: str, node: Node) -> bool:
    child = parent.child_by_field_name(field_name)
    return child is not None and child.id == node.id
