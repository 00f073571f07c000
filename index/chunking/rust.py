"""What a Rust syntax node defines: items, impls by type, and the items
inside macro invocations' token trees (parsed again)."""

from __future__ import annotations

from tree_sitter import Node

from ..languages import parse_source, parser_for
from ..linear_re import LinearPattern
from .spans import Decl, container_decl, named_decl, node_text, reparse_budget

_RUST_LEAF_KINDS = {
    "function_item": "function",
    "function_signature_item": "function",
    "struct_item": "struct",
    "union_item": "union",
    "enum_item": "enum",
    "type_item": "type",
    "macro_definition": "macro",
    "const_item": "constant",
    "static_item": "constant",
}


def rust_decl(node: Node) -> Decl | None:
    node_type = node.type
    if node_type in _RUST_LEAF_KINDS:
        return named_decl(node, _RUST_LEAF_KINDS[node_type])
    if node_type == "trait_item":
        return container_decl(node, "trait")
    if node_type == "impl_item":
        type_name = _rust_type_name(node.child_by_field_name("type"))
        return Decl("impl", (type_name,), node.child_by_field_name("body")) if type_name else None
    if node_type == "mod_item":
        return container_decl(node, "namespace", is_type=False)
    if node_type == "macro_invocation":
        return _rust_macro_items(node)
    return None


# An item keyword at the start of a line: the token tree may hold items. The
# line's indent is `[ \t]*`: `\s*` under MULTILINE runs across every blank line
# after each line start (quadratic in a body of blank lines).
# RE2 (linear): `pub(` with no `)` scanned to the end from every line start.
_RUST_ITEM_LINE = LinearPattern(rb"(?m)^[ \t]*(?:pub(?:\([^)]*\))?\s+)?(?:async\s+|unsafe\s+|const\s+)*"
                              rb"(?:fn|struct|enum|trait|impl|mod|type|union)\b")


def _rust_macro_items(node: Node) -> Decl | None:
    """`cfg_rt! { pub fn spawn_blocking(…) {…} }`: crates gate whole groups of
    items behind such macros (tokio does it in most files), and tree-sitter
    leaves a macro's body an unparsed token tree, so those items were one
    anonymous residue chunk. The body is parsed again as items, padded so its
    rows are the file's, and its items are collected like a module's; a body
    that is not valid items (`bitflags!`, `thread_local!`) stays residue."""
    body = node.named_children[-1] if node.named_children else None
    if body is None or body.type != "token_tree" or body.end_point.row - body.start_point.row < 2:
        return None
    inner = (body.text or b"")[1:-1]
    if not _RUST_ITEM_LINE.search(inner):
        return None
    padded = b"\n" * body.start_point.row + b" " * (body.start_point.column + 1) + inner
    # Nested macros parse their bodies again and again: a file's re-parses
    # are capped at REPARSE_BUDGET times its size (800 nested levels took 1 s).
    budget = getattr(reparse_budget, "left", 0)
    if len(padded) > budget:
        return None
    reparse_budget.left = budget - len(padded)
    root = parse_source(parser_for("rust"), padded).root_node
    if root.has_error:
        return None
    return Decl("macro", (), root, is_type=False)


# Type nodes an impl's type is read through, to the field that names it.
_RUST_TYPE_WRAPPERS = {"generic_type": "type", "scoped_type_identifier": "name", "reference_type": "type",
                       "pointer_type": "type", "dynamic_type": "trait", "bounded_type": "left"}


def _rust_type_name(type_node: Node | None) -> str:
    """`Point<T>`, `fmt::Point`, `&Point`, `*const Point` -> Point;
    `dyn Shape`, `dyn fmt::Debug + Send` -> Shape, Debug."""
    while type_node is not None and type_node.type in _RUST_TYPE_WRAPPERS:
        field = _RUST_TYPE_WRAPPERS[type_node.type]
        inner = type_node.child_by_field_name(field)
        if inner is None and type_node.named_child_count:  # a bounded type's parts have no fields
            inner = type_node.named_children[0]
        type_node = inner
    return node_text(type_node)
