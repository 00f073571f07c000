"""What a Ruby syntax node defines: methods, classes and modules, and a
class made by a call (`Price = Struct.new(:amount) do … end`); and the
block of a call whose methods are defined as its neighbours'
(`included do … end`)."""

from __future__ import annotations

from tree_sitter import Node

from .spans import Decl, named_decl, node_text

# Calls that make a class or module, assigned to a constant: `Struct.new(…)`,
# `Data.define(…)`, `Class.new(Base) { … }`, `Module.new do … end`. The
# block's methods are its members.
_CLASS_FACTORIES = {("Struct", "new"): "class", ("Data", "define"): "class",
                    ("Class", "new"): "class", ("Module", "new"): "namespace"}


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
    if node_type == "assignment":
        return _made_class(node)
    if node_type == "call":
        return _method_argument(node)
    return None


def ruby_call_block(node: Node) -> Node | None:
    """The body of the block a call is given (`included do … end`,
    `class_methods do … end` of an ActiveSupport::Concern, `concerning :X do`,
    a spec's `describe … do`): the methods `def`ined in it are definitions of
    the scope the call is in (spans.Grammar.wrapped_block)."""
    # The block itself, not its body: a comment above the first method is
    # the block's child (its body, a body_statement, is walked through).
    return node.child_by_field_name("block") if node.type == "call" else None


def _method_argument(node: Node) -> Decl | None:
    """`private def x … end`, `private_class_method def self.build`,
    `memoize def x`: a call whose one argument is a method defines it (`def`
    returns the method's name, which the call takes)."""
    arguments = node.child_by_field_name("arguments")
    if node.child_by_field_name("receiver") is not None or arguments is None or arguments.named_child_count != 1:
        return None
    argument = arguments.named_children[0]
    return ruby_decl(argument) if argument.type in ("method", "singleton_method", "call") else None


def _made_class(node: Node) -> Decl | None:
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    if left is None or left.type != "constant" or right is None or right.type != "call":
        return None
    kind = _CLASS_FACTORIES.get((node_text(right.child_by_field_name("receiver")),
                                 node_text(right.child_by_field_name("method"))))
    if kind is None:
        return None
    block = right.child_by_field_name("block")
    return Decl(kind, (node_text(left),), block.child_by_field_name("body") if block is not None else None)
