"""Impact of changing a symbol: its definitions, callers, callees, a risk
bucket and the hedges on that answer. The library entry points; plain
Python types, nothing about LSP (``ctxls.daemon`` converts).

Several definitions (a symbol query naming a function and a class method,
a class and its compatibility copy): one sweep for all of them, each caller
tied to the definitions it leads to, then one answer per definition ranked
by how well it matches the query (exact qualified name, then import
proximity to the file the request comes from); the best one is the answer's
own fields, every one is in ``per_definition``.

Callers come confirmed first, then the unconfirmed ones most likely first
(``resolved.UNCONFIRMED_REASONS``), at most ``MAX_UNCONFIRMED_LISTED``: the
rest are counted by reason, never silently dropped.

Work, not time: the confirmation parses at most ``callers.Limits`` files
(most likely first), so one index gives one answer whatever the machine's
load; what is left unchecked is counted, hedged and makes the answer
``partial`` (``unchecked_files``, ``mentions["unchecked"]``). Callees and
complexity are the answered (best) definition's.
"""

from __future__ import annotations

import posixpath
import time
from collections import Counter
from dataclasses import dataclass, field, replace

from ctxls.index.engine import Engine
from ctxls.index.errors import EngineError, InvalidParams
from ctxls.index.model import split_symbol
from ctxls.index.paths import is_test_path, superseded_paths
from ctxls.index.query import dotted_name
from ctxls.index.recall_features import path_index
from ctxls.index.symbols import name_as_written
from ctxls.index.vocabulary import MAX_NAME_CHARS
from ctxls.index.store import generated_paths

from . import index_view, syntax
from .callees import Callee, callees_and_complexity, merge
from .callers import Caller, Limits, References, find_references
from .index_view import CLASS_KINDS, Definition
from .resolve import Resolver
from .resolved import UNCONFIRMED_REASONS, ClassId, Match, Targets, Verdict, class_home, container_id
from .risk import Evidence, assess, is_peripheral_path
from .syntax import SourceCache, Span

# Unconfirmed callers listed per answer (the rest are counted by reason).
MAX_UNCONFIRMED_LISTED = 100
# Definitions answered one by one when a query matches more (`__init__`).
MAX_PER_DEFINITION = 20
# Definitions a code lens is shown on.
LENS_KINDS = frozenset({"function", "method", "class", "struct", "interface", "trait", "enum"})

# Parsed files, shared by every request of the process (validated by text).
_sources = SourceCache()


@dataclass
class DefinitionImpact:
    """The callers, risk and hedges of one definition."""

    definition: Definition
    callers: list[Caller]  # confirmed first, then unconfirmed most likely first, capped
    confirmed: int
    unconfirmed: int  # listed or not
    unconfirmed_reasons: dict[str, int]  # reason -> unconfirmed call sites, listed or not
    risk: str
    hedges: list[str]

    @property
    def unconfirmed_omitted(self) -> int:
        return self.unconfirmed - sum(not c.confirmed for c in self.callers)


@dataclass
class Impact:
    symbol: str
    definitions: list[Definition]  # the definition answered (the best match)
    callers: list[Caller]
    callees: list[Callee]
    ref_count: int  # callers + mentions
    confirmed: int
    mentions: int
    mention_kinds: dict[str, int]
    risk: str
    hedges: list[str]
    complexity: int
    unconfirmed: int = 0
    unconfirmed_reasons: dict[str, int] = field(default_factory=dict)
    unconfirmed_omitted: int = 0
    # Several definitions matched: one answer each, best first (the first is
    # this answer's own fields); at most MAX_PER_DEFINITION of definitions_matched.
    per_definition: list[DefinitionImpact] = field(default_factory=list)
    definitions_matched: int = 1
    # Occurrences past the Limits, left unparsed: the counts are then lower bounds.
    unchecked_files: int = 0
    unchecked_lines: int = 0
    # The index could not be written (a refused pass or edit): recall's
    # partialReason for it; definitions in the files it lacks are missing.
    partial_reason: str | None = None
    elapsed_ms: float = field(default=0.0, compare=False)

    @property
    def partial(self) -> bool:
        return bool(self.unchecked_lines) or self.partial_reason is not None


class DefinitionsUnknown(EngineError):
    """No definition of a symbol in what the index holds while the index
    could not be written (a refused pass or edit): "not defined" could be
    wrong, so it is answered with the refusal's code and data (-32006 or
    -32007, ``reason`` "full", …) and recall's partialReason, never null."""

    def __init__(self, symbol: str, refusal: EngineError, reason: str):
        super().__init__(f"{symbol} is not defined in what the index holds, which may lack it: "
                         f"{reason}", refusal.data)
        self.code = refusal.code


@dataclass(frozen=True)
class DefinitionSite:
    """A definition with the span of its name (for lenses and call hierarchy items)."""

    definition: Definition
    name_span: Span


def analyze(engine: Engine, symbol: str | None = None, path: str | None = None,
            line: int | None = None, character: int | None = None, *,
            with_callers: bool = True, limits: Limits = Limits(),
            context: str | None = None) -> Impact | None:
    """Impact of ``symbol`` (optionally only its definitions in ``path``), or
    of the symbol at ``path``:``line``:``character`` (UTF-16 column). None
    when the index defines no such symbol (``DefinitionsUnknown`` says when
    that may be wrong: ``unknown_definitions``). ``context``: the file a symbol
    query comes from; among several definitions, the ones it imports or sits
    near rank first."""
    started = time.monotonic()
    query = None
    if symbol is not None:
        if not isinstance(symbol, str) or not symbol.strip():
            raise InvalidParams("symbol", "must be a non-empty string")
        query = dotted_name(name_as_written(symbol))  # `Polygon::area` as the index writes it
        # A name no definition can have; bounded like a symbol query so that
        # nothing keyed by it (the lens titles) holds megabytes per entry.
        if len(query) > MAX_NAME_CHARS:
            raise InvalidParams("symbol", f"must be a name of at most {MAX_NAME_CHARS} characters")
    engine.await_index()
    # Never old line ranges over new text: the files the answer points into
    # are re-indexed first when they changed on disk.
    inherited = False
    if query is not None:
        definitions, inherited = engine.fresh_answer(
            lambda: _find_definitions(engine, query, path),
            lambda found: [d.path for d in found[0]],
            lambda found, changed: ([d for d in found[0] if d.path not in changed], found[1]),
            found_nothing=lambda found: not found[0])
    elif path is not None:
        engine.refresh_stale([path])
    resolver = Resolver(engine, _sources)
    if query is None:
        definitions = _definitions_at(resolver, path, line, character)
        context = path
    if not definitions:
        return None
    refs = find_references(resolver, Targets(definitions), limits) if with_callers else References()
    ranked = _rank(resolver, definitions, refs.callers, query, context)
    several = len(ranked) > 1
    refused = index_view.index_refusal(engine)  # after fresh_answer's retry of refused edits
    partial_reason = refused[1] if refused is not None else None
    answers = [_answer(engine, resolver, _named(resolver, d), refs, several, partial_reason)
               for d in ranked[:MAX_PER_DEFINITION]]
    best = answers[0]
    callees: dict[str, Callee] = {}
    found, complexity = callees_and_complexity(resolver, best.definition)
    for callee in found:
        callee.definitions = [_named(resolver, d) for d in callee.definitions]
        merge(callees, callee)
    hedges = list(best.hedges)
    if several:
        hedges.insert(0, f"{len(ranked)} definitions match {query or best.definition.name!r}: this answer "
                         f"is for {best.definition.symbol} in {best.definition.path} (the best match); "
                         "per definition answers list each one"
                         + (f" (the first {MAX_PER_DEFINITION})" if len(ranked) > MAX_PER_DEFINITION else ""))
    if inherited:
        hedges.insert(0, f"{query} is inherited (its class does not define it): this answer is for "
                         f"{best.definition.symbol} in {best.definition.path}, which every class "
                         "deriving from it shares")
    mentions = sum(refs.mentions.values())
    return Impact(
        symbol=query if query is not None else best.definition.symbol,
        definitions=[best.definition], callers=best.callers, callees=list(callees.values()),
        ref_count=best.confirmed + best.unconfirmed + mentions, confirmed=best.confirmed,
        mentions=mentions, mention_kinds={k: n for k, n in sorted(refs.mentions.items()) if n},
        risk=best.risk, hedges=hedges, complexity=complexity, unconfirmed=best.unconfirmed,
        unconfirmed_reasons=best.unconfirmed_reasons, unconfirmed_omitted=best.unconfirmed_omitted,
        per_definition=answers if several else [], definitions_matched=len(ranked),
        unchecked_files=refs.unchecked_files, unchecked_lines=refs.mentions["unchecked"],
        # A pass still running (a checkout's) may hold definitions and callers not read yet.
        partial_reason=partial_reason or engine.partial_reason(),
        elapsed_ms=round((time.monotonic() - started) * 1000, 1))


def _find_definitions(engine: Engine, query: str, path: str | None) -> tuple[list[Definition], bool]:
    """The definitions a symbol query names (``index_view.find_definitions``),
    else, for a query qualified by a module that re-exports the definition,
    the one that module's name leads to (``_reexported``), else, for a
    member a class inherits, its base's (``_inherited``: then True)."""
    found = index_view.find_definitions(engine.store.reader(), query, path)
    if found or "." not in query:
        return found, False
    resolver = Resolver(engine, _sources)
    found = _reexported(resolver, query)
    inherited = not found
    if inherited:
        found = _inherited(resolver, query)
    return [d for d in found if path is None or d.path == path], inherited


def _inherited(resolver: Resolver, query: str) -> list[Definition]:
    """`Engine.run` (or `pkg.Engine.run`) where Engine defines no `run`:
    the `run` of the first class up Engine's lineage that defines it, the
    method a call on an Engine runs."""
    container, member = split_symbol(query)
    if container is None:
        return []
    classes = index_view.find_definitions(resolver.conn, container) or _reexported(resolver, container)
    found: list[Definition] = []
    for definition in classes:
        if definition.symbol_kind not in CLASS_KINDS:
            continue
        lineage, _ = resolver.lineage(ClassId(class_home(definition.path), definition.symbol), include_self=False)
        owner = next((cls for cls in lineage if resolver.defines(cls, member)), None)
        if owner is not None and owner.home is not None:
            found += [d for d in resolver.definitions_named(member) if container_id(d) == owner]
    return list(dict.fromkeys(found))


def _reexported(resolver: Resolver, query: str) -> list[Definition]:
    """What a query qualified by the module its callers import it from
    means where that module re-exports it (`pkg.compute` for `from .core
    import compute` in pkg/__init__.py, `web.compute` for `export { compute }
    from './core'` in web/index.ts): the definition `from pkg import compute`
    gets, re-exports and aliases followed as for a caller's import."""
    imports = index_view.import_resolver(resolver.engine)
    parts = query.split(".")
    for split in range(len(parts) - 1, 0, -1):  # the longest module name first
        module = ".".join(parts[:split])
        # A Python module by its dotted name; a JS/TS one by its path (`web` for web/index.ts).
        for spec, language in ((module, "python"), ("./" + module.replace(".", "/"), "typescript")):
            module_path = imports.resolve("", spec, language)
            found = _member_of_module(resolver, module_path, parts[split:]) if module_path is not None else []
            if found:
                return found
    return []


def _member_of_module(resolver: Resolver, module_path: str, names: list[str]) -> list[Definition]:
    """The definition ``names`` (`Engine.step`) leads to from module ``module_path``'s top level."""
    ref = resolver.lookup_name(module_path, names[0])
    if ref.kind == "module" and ref.path is not None and len(names) > 1:  # `from . import core`
        return _member_of_module(resolver, ref.path, names[1:])
    if ref.kind != "definition" or ref.symbol is None:
        return []
    return _defined_as(resolver, ref.path, ".".join([ref.symbol, *names[1:]]))


def unknown_definitions(engines: list[Engine], symbol: str) -> DefinitionsUnknown | None:
    """Why no definition of ``symbol`` in these indexes may not mean that it
    is not defined: one of them could not be written. None: it is not."""
    for engine in engines:
        refused = index_view.index_refusal(engine)
        if refused is not None:
            return DefinitionsUnknown(symbol, *refused)
    return None


def _callers_of(resolver: Resolver, definition: Definition, callers: list[Caller]) -> list[Caller]:
    """The callers leading (or maybe leading) to ``definition``; a
    confirmed one that leads to several definitions at once is unconfirmed
    for each. One that may run an override of the method it resolves to
    (``self.m()`` in a base with the base's and a subclass's ``m`` asked
    about) gets, for each, the verdict asked of that definition alone."""
    found = []
    for caller in callers:
        if caller.targets and definition.key not in caller.targets:
            continue
        if caller.reason == "override" and len(caller.targets) > 1:
            alone = _verdict_alone(resolver, caller, definition)
            if alone is not None:
                if alone.verdict is Verdict.OTHER:
                    continue
                caller = replace(caller, confirmed=alone.verdict is Verdict.CONFIRMED, targets=alone.keys,
                                 reason=alone.reason)
        elif caller.confirmed and len(caller.targets) != 1:
            caller = replace(caller, confirmed=False, reason="several-definitions")
        found.append(caller)
    return found


def _verdict_alone(resolver: Resolver, caller: Caller, definition: Definition) -> Match | None:
    """The match of ``caller``'s name against ``definition`` alone; None
    when its name is not the definition's (a construction, an alias)."""
    sf = resolver.source(caller.path)
    span = caller.span
    if sf is None or span.start_line >= len(sf.lines):
        return None
    row = span.start_line
    node = sf.node_at(row, sf.character_from_utf16(row, span.start_character),
                      sf.character_from_utf16(row, span.end_character))
    if node is None or syntax.text_of(node) != definition.name:
        return None
    return resolver.match(sf, node, definition.name, Targets([definition]))


def _rank(resolver: Resolver, definitions: list[Definition], callers: list[Caller],
          query: str | None, context: str | None) -> list[Definition]:
    """Best match first: the exact (qualified) name, then nearest to the
    ``context`` file (its own, the one its name leads to, one it imports,
    then by folder distance), production before tests, the maintained code
    before examples, docs, compatibility copies, vendored and generated code
    (a copy's own internal calls must not make it the answer; a file whose
    top comment says a program wrote it is generated), more confirmed callers."""
    if len(definitions) == 1:
        return definitions
    confirmed = Counter(key for c in callers if c.confirmed and len(c.targets) == 1 for key in c.targets)
    sf = resolver.source(context) if context is not None else None
    imported = index_view.imports_of(resolver.conn, context) if context is not None else set()

    def exactness(d: Definition) -> int:
        return 0 if query is None or query == d.symbol or query in index_view.qualified_names(d) else 1

    def proximity(d: Definition) -> tuple[int, int]:
        if context is None or d.path == context:
            return 0, 0
        top = d.symbol.split(".")[0]
        if sf is not None:
            ref = resolver.lookup_bare(sf, top)
            if (ref.path, ref.symbol) == (d.path, top):
                return 1, 0
        if d.path in imported:
            return 2, 0
        here, there = posixpath.dirname(context).split("/"), posixpath.dirname(d.path).split("/")
        common = next((i for i, (a, b) in enumerate(zip(here, there)) if a != b), min(len(here), len(there)))
        return 3, len(here) + len(there) - 2 * common

    superseded = superseded_paths({d.path for d in definitions}, lambda: path_index(resolver.conn).ids)
    peripheral = superseded | generated_paths(resolver.conn, (d.path for d in definitions))
    return sorted(definitions, key=lambda d: (exactness(d), proximity(d), is_test_path(d.path),
                                              is_peripheral_path(d.path) or d.path in peripheral,
                                              -confirmed[d.key],
                                              d.path.count("/"), d.path, d.start_line))


def _answer(engine: Engine, resolver: Resolver, definition: Definition, refs: References,
            several: bool, index_refusal: str | None) -> DefinitionImpact:
    callers = _callers_of(resolver, definition, refs.callers) if several else refs.callers
    risk, hedges = assess(_evidence(engine, resolver, definition, callers, refs, index_refusal))
    confirmed = [c for c in callers if c.confirmed]
    unconfirmed = _most_likely_first([c for c in callers if not c.confirmed])
    return DefinitionImpact(
        definition=definition, callers=confirmed + unconfirmed[:MAX_UNCONFIRMED_LISTED],
        confirmed=len(confirmed), unconfirmed=len(unconfirmed),
        unconfirmed_reasons=dict(Counter(c.reason or "unknown" for c in unconfirmed).most_common()),
        risk=risk, hedges=hedges)


def _most_likely_first(unconfirmed: list[Caller]) -> list[Caller]:
    """By reason (a likely true call first, a name the standard library or
    many classes share last); within a reason, every file's first site
    before any file's second, so a cap keeps as many files as it can."""
    rank = {reason: n for n, reason in enumerate(UNCONFIRMED_REASONS)}
    seen: Counter[tuple[str | None, str]] = Counter()
    keyed = []
    for caller in unconfirmed:  # in path and line order
        nth = seen[(caller.reason, caller.path)]
        seen[(caller.reason, caller.path)] += 1
        keyed.append(((rank.get(caller.reason or "", len(rank)), nth, caller.test,
                       caller.path, caller.span.start_line, caller.span.start_character), caller))
    return [caller for _, caller in sorted(keyed, key=lambda pair: pair[0])]


def definitions_at(engine: Engine, path: str, line: int, character: int) -> list[DefinitionSite]:
    """The definitions the name at a position declares or refers to
    (call hierarchy's prepare step), with their name spans."""
    resolver = Resolver(engine, _sources)
    return [_site(resolver, d) for d in _definitions_at(resolver, path, line, character)]


def definitions_in(engine: Engine, path: str) -> list[DefinitionSite]:
    """The file's definitions a code lens goes on (functions, methods, classes)."""
    resolver = Resolver(engine, _sources)
    sf = resolver.source(path)
    if sf is None:
        return []
    language = sf.language or "text"
    return [_site(resolver, Definition(path, span.symbol, span.symbol_kind, language,
                                       span.start_line, span.end_line))
            for span in resolver.spans(sf) if span.symbol_kind in LENS_KINDS]


def _named(resolver: Resolver, definition: Definition) -> Definition:
    """The definition with the span of its declared name: where an answer
    points (its lines may start with a decorator or a comment)."""
    return replace(definition, name_span=_site(resolver, definition).name_span)


def _site(resolver: Resolver, definition: Definition) -> DefinitionSite:
    sf = resolver.source(definition.path)
    name = resolver.declaration_name(sf, definition)
    if sf is None or name is None:
        return DefinitionSite(definition, Span(definition.start_line, 0, definition.start_line, 0))
    return DefinitionSite(definition, sf.node_span(name))


def _definitions_at(resolver: Resolver, path: str | None, line: int | None,
                    character: int | None) -> list[Definition]:
    if path is None or line is None or character is None:
        raise InvalidParams("symbol", "give a symbol, or a textDocument and a position")
    sf = resolver.source(path)
    if sf is None or sf.family is None or line >= len(sf.lines):
        return []
    column = sf.character_from_utf16(line, character)
    node = sf.node_at(line, column, column)
    if (node is None or not syntax.is_identifier(node)) and column > 0:
        node = sf.node_at(line, column - 1, column - 1)  # the cursor just after the name
    if node is None or not syntax.is_identifier(node):
        return []
    name = syntax.text_of(node)
    candidates = resolver.definitions_named(name)
    if syntax.declares(sf.family, node):
        here = [d for d in candidates if d.path == path and d.start_line <= line <= d.end_line]
        return [max(here, key=lambda d: d.start_line)] if here else []
    _, receiver_node = syntax.member_parts(sf.family, node)
    # Follows aliases: `discount` of `import apply_discount as discount`, and
    # `pkg.calc` where pkg re-exports `compute as calc`.
    if receiver_node is None:
        ref = resolver.lookup_bare(sf, name)
    else:
        receiver = resolver.receiver(sf, receiver_node, node)
        ref = resolver.lookup_name(receiver.module, name) \
            if receiver.kind == "module" and receiver.module is not None and sf.family is not syntax.GO else None
    if ref is not None and ref.kind == "definition" and ref.symbol is not None:
        found = _defined_as(resolver, ref.path, ref.symbol)
        if found or receiver_node is None:
            return found
    verdicts = [(d, resolver.verdict(sf, node, name, Targets([d]))) for d in candidates]
    return ([d for d, v in verdicts if v is Verdict.CONFIRMED]
            or [d for d, v in verdicts if v is Verdict.UNKNOWN])


def _defined_as(resolver: Resolver, path: str | None, symbol: str) -> list[Definition]:
    """The indexed definitions of ``symbol`` in ``path`` (overloads: each)."""
    return [d for d in resolver.definitions_named(split_symbol(symbol)[1]) if (d.path, d.symbol) == (path, symbol)]


def _evidence(engine: Engine, resolver: Resolver, definition: Definition, callers: list[Caller],
              refs: References, index_refusal: str | None) -> Evidence:
    production = [c for c in callers if not c.test]
    tests = [c for c in callers if c.test]
    name = definition.name
    return Evidence(
        confirmed_sites=sum(c.confirmed for c in production),
        unconfirmed_sites=sum(not c.confirmed for c in production),
        caller_files=len({c.path for c in production}),
        test_confirmed_sites=sum(c.confirmed for c in tests),
        test_unconfirmed_sites=sum(not c.confirmed for c in tests),
        public=resolver.is_public(definition),
        special_method=name.startswith("__") and name.endswith("__"),
        mentions=Counter(refs.mentions),
        unchecked_files=refs.unchecked_files,
        named_in_strings=refs.named_in_strings,
        name_only_languages=tuple(sorted(refs.name_only_languages)),
        partial_index=not engine.cold_index_done or engine.indexing,
        index_refusal=index_refusal,
    )


def outgoing_calls(engine: Engine, symbol: str, path: str) -> list[tuple[DefinitionSite, list[Span]]]:
    """What ``symbol`` (defined in ``path``) calls: each callee definition
    with its name span, and the call sites in the caller."""
    impact = analyze(engine, symbol, path, with_callers=False)
    if impact is None:
        return []
    resolver = Resolver(engine, _sources)
    return [(_site(resolver, definition), callee.call_sites)
            for callee in impact.callees for definition in callee.definitions]
