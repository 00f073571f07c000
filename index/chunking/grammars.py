"""The ``Grammar`` of every language whose definitions are read: the
hand-written readers, then one per row of ``definition_table``."""

from __future__ import annotations

from collections.abc import Callable

from tree_sitter import Node

from ..definition_table import C_PREPROCESSOR, TABLES, LanguageTable, classify as classify_by_table
from .c_family import c_decl, cpp_decl
from .go import go_decl
from .java import java_decl
from .javascript import js_decl
from .php import php_decl
from .python import python_decl
from .ruby import ruby_call_block, ruby_decl
from .rust import rust_decl
from .spans import Decl, Grammar

_C_TRANSPARENT = C_PREPROCESSOR | {"linkage_specification", "declaration_list"}
_JS_GRAMMAR = Grammar(js_decl, leading=frozenset({"comment", "decorator"}))

GRAMMARS: dict[str, Grammar] = {
    "python": Grammar(
        python_decl,
        leading=frozenset({"comment"}),
        transparent=frozenset(
            {"if_statement", "elif_clause", "else_clause", "try_statement", "except_clause", "finally_clause", "block"}
        ),
    ),
    "javascript": _JS_GRAMMAR,
    "typescript": _JS_GRAMMAR,
    "tsx": _JS_GRAMMAR,
    "go": Grammar(go_decl, leading=frozenset({"comment"}), transparent=frozenset({"type_declaration"})),
    "rust": Grammar(rust_decl, leading=frozenset({"line_comment", "block_comment", "attribute_item"})),
    "java": Grammar(
        java_decl, leading=frozenset({"line_comment", "block_comment"}), transparent=frozenset({"enum_body_declarations"})
    ),
    "c": Grammar(c_decl, leading=frozenset({"comment"}), transparent=_C_TRANSPARENT),
    "cpp": Grammar(cpp_decl, leading=frozenset({"comment"}), transparent=_C_TRANSPARENT | {"namespace_definition"}),
    # `if defined?(X) … def clock_time … else … end`: methods defined under a condition.
    "ruby": Grammar(ruby_decl, leading=frozenset({"comment"}),
                    transparent=frozenset({"singleton_class", "body_statement", "if", "unless", "elsif", "else",
                                           "then"}),
                    wrapped_block=ruby_call_block),
    # `if (! function_exists('app')) { function app() … }`: helpers and polyfills defined under a condition.
    "php": Grammar(
        php_decl, leading=frozenset({"comment"}),
        transparent=frozenset({"namespace_definition", "compound_statement", "if_statement", "else_if_clause",
                               "else_clause"}),
    ),
}


def _table_grammar(table: LanguageTable, fallback: Callable[[Node], Decl | None] | None = None,
                   quoted_by: frozenset[str] = frozenset()) -> Grammar:
    """A grammar read by its row of ``definition_table`` (``fallback`` for
    what the row leaves: Objective-C's C functions and structs; ``quoted_by``:
    ``Grammar.quoted_by``)."""
    def classify(node: Node) -> Decl | None:
        found = classify_by_table(table, node)
        if found is not None:
            return Decl(found.kind, found.name, found.members, found.is_type, arity=found.arity,
                        scopes_rest=found.scopes_rest)
        return fallback(node) if fallback is not None else None
    return Grammar(classify, table.leading, table.transparent, table.continued_by, table.joins_clauses,
                   table.wrapped_block, quoted_by, table.trailing_docs)


# Languages of the C family whose tables add to the C or C++ reading.
_FALLBACKS = {"objc": c_decl, "glsl": c_decl, "hlsl": cpp_decl}
# Languages whose function bodies sit between a pair of equal quote tokens.
_QUOTED_BODIES = {"sql": frozenset({"dollar_quote"})}

for _language, _table in TABLES.items():
    GRAMMARS[_language] = _table_grammar(_table, _FALLBACKS.get(_language), _QUOTED_BODIES.get(_language, frozenset()))
