"""What a Ruby syntax node defines: methods, classes and modules."""

from __future__ import annotations

from tree_sitter import Node

from .spans import Decl, named_decl, node_text


def ruby_decl(node: Node) -> Decl | None:
    node_type = node.type
    if node_type in ("method", "singleton_method"):
        return named_decl(node, "function")
    if node_type in ("class", "module"):
        name = node_text(node.child_by_field_name("name"))
        if not name:
            return None
        kind = "class" if node_type == "class" else "namespace"
        # Members are walked from the class node itself: a comment above the
        # first member is the class's child, not a sibling inside its body.
        return Decl(kind, tuple(name.split("::")), node)
    return None
