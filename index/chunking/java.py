"""What a Java syntax node defines: methods, constructors, type containers
and enum constants with a body."""

from __future__ import annotations

from tree_sitter import Node

from .spans import Decl, container_decl, named_decl

_JAVA_CONTAINER_KINDS = {
    "class_declaration": "class",
    "record_declaration": "class",
    "interface_declaration": "interface",
    "annotation_type_declaration": "interface",
    "enum_declaration": "enum",
}
_JAVA_FUNCTIONS = frozenset({"method_declaration", "constructor_declaration", "compact_constructor_declaration"})


def java_decl(node: Node) -> Decl | None:
    node_type = node.type
    if node_type in _JAVA_FUNCTIONS:
        return named_decl(node, "function")
    if node_type in _JAVA_CONTAINER_KINDS:
        return container_decl(node, _JAVA_CONTAINER_KINDS[node_type])
    if node_type == "enum_constant" and node.child_by_field_name("body") is not None:
        # `VISA { int feeBasisPoints() {…} }`: a constant with a body holds code
        # (`CardBrand.VISA.feeBasisPoints`); a plain constant is no definition.
        return container_decl(node, "constant")
    return None
