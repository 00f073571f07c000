"""What a Python syntax node defines: functions, classes, `type` aliases and
types made by assignment (``namedtuple``, ``Enum``, ``NewType`` …)."""

from __future__ import annotations

from tree_sitter import Node

from .spans import Decl, container_decl, named_decl, node_text


def python_decl(node: Node) -> Decl | None:
    node_type = node.type
    if node_type == "function_definition":
        return named_decl(node, "function")
    if node_type == "class_definition":
        return container_decl(node, "class")
    if node_type == "decorated_definition":
        definition = node.child_by_field_name("definition")
        return python_decl(definition) if definition is not None else None
    if node_type == "type_alias_statement":  # `type JsonValue = …` (3.12)
        name = node.child_by_field_name("left")
        return Decl("type", (node_text(name),)) if name is not None and node_text(name).isidentifier() else None
    if node_type == "assignment":
        return _python_type_assignment(node)
    if node_type == "expression_statement" and node.named_child_count == 1:  # older grammars wrap it
        return _python_type_assignment(node.named_child(0))
    return None


# Calls that make a type out of an assignment: `Point = namedtuple(…)`,
# `UserId = NewType(…)`, `Color = Enum("Color", …)`. Not `T = TypeVar("T")`:
# a type parameter is not what anyone searches for, and one at the top of a
# module only cut its residue in two.
_PYTHON_TYPE_FACTORIES = {"namedtuple": "class", "NamedTuple": "class", "TypedDict": "class",
                          "Enum": "enum", "IntEnum": "enum", "StrEnum": "enum", "Flag": "enum",
                          "IntFlag": "enum", "NewType": "type", "TypeAliasType": "type"}


def _python_type_assignment(node: Node) -> Decl | None:
    """A module's type made by an assignment: annotated `TypeAlias`, or
    built by one of ``_PYTHON_TYPE_FACTORIES`` (pydantic's `JsonValue:
    TypeAlias = …`, a `namedtuple`): code that names the type asks for it."""
    if node.type != "assignment":
        return None
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or left.type != "identifier":
        return None
    annotation = node.child_by_field_name("type")
    if annotation is not None and node_text(annotation).rsplit(".", 1)[-1] == "TypeAlias":
        return Decl("type", (node_text(left),))
    if right is not None and right.type == "call":
        factory = node_text(right.child_by_field_name("function")).rsplit(".", 1)[-1]
        if factory in _PYTHON_TYPE_FACTORIES:
            return Decl(_PYTHON_TYPE_FACTORIES[factory], (node_text(left),))
    return None
