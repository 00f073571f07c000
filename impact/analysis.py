"""Impact of changing a symbol: its definitions, callers, callees, a risk
bucket and the hedges on that answer. The library entry points; plain
Python types, nothing about LSP (``ctxls.daemon`` converts).

Time: the sweep and the confirmation of callers share one budget
(``CONFIRM_BUDGET_S``; ``DISTANT_BUDGET_S`` for files that do not import
the definitions); what is left unchecked when it runs out is counted and
hedged. Callees come after: all definitions' while ``CALLEE_BUDGET_S``
more lasts (hedged when some are left out), so a request stays under 2 s.
"""

from __future__ import annotations

import time
from collections import Counter
from dataclasses import dataclass, field

from ctxls.index.engine import Engine
from ctxls.index.errors import InvalidParams

from . import index_view, syntax
from .callees import Callee, callees_and_complexity, merge
from .callers import Caller, References, find_references
from .index_view import Definition
from .resolve import Resolver, Targets, Verdict
from .risk import Evidence, assess, is_test_path
from .syntax import SourceCache, Span

CONFIRM_BUDGET_S = 1.2
# Files that do not import the definitions get less: their callers can only
# be untyped receivers or name clashes, and a common name has thousands.
DISTANT_BUDGET_S = 0.4
# Callees of many definitions (`__init__` has hundreds) get this much more.
CALLEE_BUDGET_S = 0.3
# Definitions a code lens is shown on.
LENS_KINDS = frozenset({"function", "method", "class", "struct", "interface", "trait", "enum"})

# Parsed files, shared by every request of the process (validated by text).
_sources = SourceCache()


@dataclass
class Impact:
    symbol: str
    definitions: list[Definition]
    callers: list[Caller]
    callees: list[Callee]
    ref_count: int  # callers + mentions
    confirmed: int
    mentions: int
    mention_kinds: dict[str, int]
    risk: str
    hedges: list[str]
    complexity: int
    elapsed_ms: float = field(default=0.0, compare=False)


@dataclass(frozen=True)
class DefinitionSite:
    """A definition with the span of its name (for lenses and call hierarchy items)."""

    definition: Definition
    name_span: Span


def analyze(engine: Engine, symbol: str | None = None, path: str | None = None,
            line: int | None = None, character: int | None = None, *,
            with_callers: bool = True, budget_s: float = CONFIRM_BUDGET_S) -> Impact | None:
    """Impact of ``symbol`` (optionally only its definitions in ``path``), or
    of the symbol at ``path``:``line``:``character`` (UTF-16 column). None
    when the index defines no such symbol."""
    started = time.monotonic()
    resolver = Resolver(engine, _sources)
    if symbol is not None:
        if not isinstance(symbol, str) or not symbol.strip():
            raise InvalidParams("symbol", "must be a non-empty string")
        definitions = index_view.find_definitions(resolver.conn, symbol.strip(), path)
    else:
        definitions = _definitions_at(resolver, path, line, character)
    if not definitions:
        return None
    deadline = started + budget_s
    refs = (find_references(resolver, Targets(definitions), deadline,
                            started + min(budget_s, DISTANT_BUDGET_S))
            if with_callers else References())
    callees: dict[str, Callee] = {}
    complexity = 1
    analysed = 0
    for definition in definitions:
        if analysed and time.monotonic() > deadline + CALLEE_BUDGET_S:
            break
        analysed += 1
        found, figure = callees_and_complexity(resolver, definition)
        complexity = max(complexity, figure)
        for callee in found:
            merge(callees, callee)
    risk, hedges = assess(_evidence(engine, resolver, definitions, refs))
    if analysed < len(definitions):
        hedges.append(f"callees and complexity cover {analysed} of the {len(definitions)} "
                      "definitions (time budget)")
    names = {d.symbol for d in definitions}
    mentions = sum(refs.mentions.values())
    return Impact(
        symbol=symbol.strip() if symbol is not None else (names.pop() if len(names) == 1 else definitions[0].name),
        definitions=definitions, callers=refs.callers, callees=list(callees.values()),
        ref_count=len(refs.callers) + mentions, confirmed=sum(c.confirmed for c in refs.callers),
        mentions=mentions, mention_kinds={k: n for k, n in sorted(refs.mentions.items()) if n}, risk=risk,
        hedges=hedges, complexity=complexity, elapsed_ms=round((time.monotonic() - started) * 1000, 1))


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
    _, receiver = syntax.member_parts(sf.family, node)
    if receiver is None:  # follows aliases: `discount` of `import apply_discount as discount`
        ref = resolver.lookup_bare(sf, name)
        if ref.kind == "definition" and ref.symbol is not None:
            return [d for d in resolver.definitions_named(ref.symbol.rsplit(".", 1)[-1])
                    if d.key == (ref.path, ref.symbol)]
    verdicts = [(d, resolver.verdict(sf, node, name, Targets([d]))) for d in candidates]
    return ([d for d, v in verdicts if v is Verdict.CONFIRMED]
            or [d for d, v in verdicts if v is Verdict.UNKNOWN])


def _evidence(engine: Engine, resolver: Resolver, definitions: list[Definition],
              refs: References) -> Evidence:
    production = [c for c in refs.callers if not is_test_path(c.path)]
    tests = [c for c in refs.callers if is_test_path(c.path)]
    names = {d.name for d in definitions}
    return Evidence(
        confirmed_sites=sum(c.confirmed for c in production),
        unconfirmed_sites=sum(not c.confirmed for c in production),
        caller_files=len({c.path for c in production}),
        test_confirmed_sites=sum(c.confirmed for c in tests),
        test_unconfirmed_sites=sum(not c.confirmed for c in tests),
        public=any(resolver.is_public(d) for d in definitions),
        definitions=len(definitions),
        definition_files=len({d.path for d in definitions}),
        special_method=any(n.startswith("__") and n.endswith("__") for n in names),
        mentions=Counter(refs.mentions),
        named_in_strings=refs.named_in_strings,
        name_only_languages=tuple(sorted(refs.name_only_languages)),
        partial_index=not engine.cold_index_done or engine.indexing,
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
