"""What a Go syntax node defines: functions, methods by receiver type, types,
and the methods an interface declares."""

from __future__ import annotations

from tree_sitter import Node

from .spans import Decl, named_decl, node_text

_GO_TYPE_KINDS = {"struct_type": "struct", "interface_type": "interface"}


def go_decl(node: Node) -> Decl | None:
    node_type = node.type
    if node_type == "function_declaration":
        return named_decl(node, "function")
    if node_type == "method_declaration":
        name = node_text(node.child_by_field_name("name"))
        receiver = _go_receiver_type(node.child_by_field_name("receiver"))
        return Decl("method", (receiver, name) if receiver else (name,)) if name else None
    if node_type == "type_declaration":
        # A single `type X …` is one chunk with its keyword; the specs of a
        # grouped `type ( … )` are chunked one by one (see transparent).
        specs = [child for child in node.named_children if child.type in ("type_spec", "type_alias")]
        return go_decl(specs[0]) if len(specs) == 1 else None
    if node_type in ("type_spec", "type_alias"):
        type_node = node.child_by_field_name("type")
        kind = _GO_TYPE_KINDS.get(type_node.type if type_node is not None else "", "type")
        # An interface's methods are its members (`Getter.Get`), as Java's and Rust's traits' are.
        return named_decl(node, kind, type_node if kind == "interface" else None)
    if node_type == "method_elem":
        return named_decl(node, "function")
    return None


def _go_receiver_type(receiver: Node | None) -> str:
    """`(s *Server)` and `(g Gen[T])` -> Server, Gen."""
    parameter = receiver.named_child(0) if receiver is not None else None
    type_node = parameter.child_by_field_name("type") if parameter is not None else None
    while type_node is not None and type_node.type in ("pointer_type", "generic_type", "parenthesized_type"):
        type_node = type_node.child_by_field_name("type") or type_node.named_child(0)
    return node_text(type_node)
