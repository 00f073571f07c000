"""What a PHP syntax node defines: functions, methods and type containers."""

from __future__ import annotations

from tree_sitter import Node

from .spans import Decl, container_decl, named_decl

_PHP_CONTAINER_KINDS = {
    "class_declaration": "class",
    "interface_declaration": "interface",
    "trait_declaration": "trait",
    "enum_declaration": "enum",
}


def php_decl(node: Node) -> Decl | None:
    node_type = node.type
    if node_type in ("function_definition", "method_declaration"):
        return named_decl(node, "function")
    if node_type in _PHP_CONTAINER_KINDS:
        return container_decl(node, _PHP_CONTAINER_KINDS[node_type])
    return None
