"""What a definition calls, and how branchy it is.

One walk over the definition's syntax tree (a class: its own statements, not
its methods' bodies) collects the calls and the decision points. Each callee
name is resolved against the index's definitions with the same
:class:`~ctxls.impact.resolve.Resolver` verdicts as callers, so outgoing and
incoming calls agree: the confirmed definitions when there are some, else
the unconfirmed ones. Names the index does not define are omitted, and so
are builtin functions, and builtin-type method names unless confirmed.

Complexity is McCabe's: 1 + the decision points (branches, loops, handlers,
case arms, conditional expressions, boolean operators).
"""

from __future__ import annotations

from dataclasses import dataclass, field

from tree_sitter import Node

from ctxls.index.model import split_symbol

from . import syntax
from .index_view import CLASS_KINDS, Definition
from .builtin_names import BUILTIN_FUNCTIONS, BUILTIN_METHODS
from .resolve import Resolver
from .resolved import Targets, Verdict
from .syntax import Family, SourceFile, Span


@dataclass
class Callee:
    symbol: str
    definitions: list[Definition] = field(default_factory=list)
    call_sites: list[Span] = field(default_factory=list)  # in the caller's file


def callees_and_complexity(resolver: Resolver, definition: Definition) -> tuple[list[Callee], int]:
    sf = resolver.source(definition.path)
    node = _definition_node(resolver, sf, definition)
    if sf is None or sf.family is None or node is None:
        return [], 1
    family = sf.family
    # A class's methods are definitions of their own: their bodies are not the class's.
    skip = family.declarations if definition.symbol_kind in CLASS_KINDS else frozenset()
    decisions = 0
    found: dict[str, Callee] = {}  # by symbol: one entry for all its definitions
    for current in syntax.walk(node, skip):
        if current.type in family.decisions or _is_boolean_operator(family, current):
            decisions += 1
        name_node = syntax.called_name(family, current)
        if name_node is None and sf.language == "ruby" and syntax.ruby_name_use(sf, current) == "call":
            name_node = current  # `log_change` alone: Ruby calls it without parentheses
        # Elixir's `def f(x)` and Julia's `function f(x)` write their head as a call.
        if name_node is None or (family.definitions is not None and syntax.declares(family, name_node)):
            continue
        site = sf.node_span(name_node)
        for target in _not_itself(definition, _resolve_callee(resolver, sf, name_node)):
            merge(found, Callee(target.symbol, [target], [site]))
    callees = sorted(found.values(), key=lambda c: (c.call_sites[0].start_line, c.call_sites[0].start_character))
    return callees, 1 + decisions


def _not_itself(definition: Definition, targets: list[Definition]) -> list[Definition]:
    """A call an overload makes that may reach it or another overload (a
    name the verdicts cannot tell apart): the other, the usual delegation
    (C#'s `Fill(n, 1.0)` in `Fill(int n)`), not itself."""
    if definition in targets and any(t != definition and t.key[:2] == definition.key[:2] for t in targets):
        return [t for t in targets if t != definition]
    return targets


def merge(found: dict[str, Callee], callee: Callee) -> None:
    """Add ``callee`` to ``found`` (by symbol), without repeating a definition or a call site."""
    entry = found.setdefault(callee.symbol, Callee(callee.symbol))
    entry.definitions += [d for d in callee.definitions if d not in entry.definitions]
    entry.call_sites += [s for s in callee.call_sites if s not in entry.call_sites]


def _definition_node(resolver: Resolver, sf: SourceFile | None, definition: Definition) -> Node | None:
    """The declaration; failing that (a name the syntax does not say it
    declares), the smallest node spanning the definition's lines, or the
    one node within them besides the comments they start with (a comment
    above a function is its sibling: what spans both is the file)."""
    if sf is None or sf.tree is None:
        return None
    declaration = resolver.declaration(sf, definition)
    if declaration is not None:
        return declaration
    last = min(definition.end_line, len(sf.lines) - 1)
    node = sf.tree.root_node.named_descendant_for_point_range(
        (definition.start_line, 0), (last, len(sf.lines[last].encode("utf-8", "replace"))))
    if node is not None and (node.start_point.row < definition.start_line or node.end_point.row > last):
        inside = [child for child in node.named_children if not syntax.is_comment(child)
                  and definition.start_line <= child.start_point.row and child.end_point.row <= last]
        return inside[0] if len(inside) == 1 else None
    return node


def _is_boolean_operator(family: Family, node: Node) -> bool:
    if not family.boolean_operators or node.type != "binary_expression":
        return False
    operator = node.child_by_field_name("operator")
    return operator is not None and syntax.text_of(operator) in family.boolean_operators


def _resolve_callee(resolver: Resolver, sf: SourceFile, name_node: Node) -> list[Definition]:
    family = sf.family
    assert family is not None
    name = syntax.text_of(name_node)
    _, receiver = syntax.member_parts(family, name_node)
    candidates = resolver.definitions_named(name) + _aliased(resolver, sf, name_node, name, receiver)
    if not candidates:
        return []
    if receiver is None and name in BUILTIN_FUNCTIONS[family.name] \
            and resolver.lookup_bare(sf, name).kind != "definition":
        return []
    verdicts = [(c, resolver.verdict(sf, name_node, name, Targets([c]))) for c in candidates]
    confirmed = [c for c, v in verdicts if v is Verdict.CONFIRMED]
    if confirmed:
        return confirmed
    if receiver is not None and name in BUILTIN_METHODS[family.name]:
        return []
    return [c for c, v in verdicts if v is Verdict.UNKNOWN]


def _aliased(resolver: Resolver, sf: SourceFile, name_node: Node, name: str, receiver: Node | None) -> list[Definition]:
    """The definition a name written under an alias leads to (`h()` of
    `from m import helper as h`, `new S()` of `import { Store as S }`,
    `pkg.public_helper()` of a package's `helper as public_helper`), as the
    callers' sweep follows it; [] for a name written as its definition's."""
    if receiver is None:
        ref = resolver.lookup_bare(sf, name)
    else:
        held = resolver.receiver(sf, receiver, name_node)
        if held.kind != "module" or held.module is None:
            return []
        ref = resolver.lookup_name(held.module, name)
    if ref.kind != "definition" or ref.symbol is None or split_symbol(ref.symbol)[1] == name:
        return []
    return [d for d in resolver.definitions_named(split_symbol(ref.symbol)[1])
            if (d.path, d.symbol) == (ref.path, ref.symbol)]
