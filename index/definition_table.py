"""What defines a name, per language, as table rows: for the languages read
by rules rather than by code of their own (Kotlin, Swift, C#, Scala, Elixir,
Lua, shell, Dart, Haskell, OCaml, Zig, Julia, R, Objective-C, Erlang,
Clojure, …), a row says which syntax nodes are definitions, of what kind,
where the name is and where the members are. Adding a language is adding a
row (and a fixture in tests/fixtures/languages).

A *path* leads from a node to another, steps separated by "/":

* ``field``: the child under that field name;
* ``:a|b``: the first named child of type ``a`` or ``b``;
* ``0``: the first named child; ``0=a|b``: the same, only if of type ``a`` or ``b``
  (``1``, ``2``, …: the second, third named child);
  ``field=a|b``: the child under that field, only if of type ``a`` or ``b``;
* ``^``: the parent; ``<`` (``<=a|b``): the named sibling before; ``>``: the one after.

A name is read as the code writes it and cut at the first space or
bracket (``Cache<V>`` -> ``Cache``, ``Circle <: Shape`` -> ``Circle``); its
``.``/``:`` separated parts qualify it (Lua's ``M.setup``, ``Segment:width``,
C#'s ``namespace Shop.Orders``); a name made of symbols only is an operator,
read whole (``==``, ``::``, Haskell's ``(<+>)`` as ``<+>``).

The shapes no rule can say (a definition that is a call, as Elixir's ``def``
and Clojure's ``(defn …)``; a function assigned, as R's ``f <- function``)
have a small function of their own in ``custom``.
"""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass, field
from typing import NamedTuple

from tree_sitter import Node


class Definition(NamedTuple):
    """What a node defines (the chunker's reading of it)."""

    kind: str  # "function" becomes "method" directly inside a type
    name: tuple[str, ...]
    members: Node | None = None  # the node whose named children are its members
    is_type: bool = True  # functions among the members are methods
    # How many parameters a clause takes, where a function is its name and
    # arity (Erlang's `take/1` and `take/2`): clauses join only at one arity.
    arity: int | None = None
    # A namespace a statement declares (Perl's `package Name;`): without
    # members of its own, the siblings after it, up to the next such
    # statement, are its members; with them (`package Name { … }`), only
    # those. Either way it is named from its siblings' scope, not the
    # namespace before it.
    scopes_rest: bool = False


# The C preprocessor's conditionals: walked through, their branches read as
# the file's own lines (C, C++, Objective-C and the shader languages).
C_PREPROCESSOR = frozenset({"preproc_if", "preproc_ifdef", "preproc_else", "preproc_elif", "preproc_elifdef"})

KINDS_BY_TEXT = {"struct": "struct", "enum": "enum", "union": "union", "opaque": "type"}


@dataclass(frozen=True)
class Rule:
    kind: str
    name: str = "name"  # path to the name
    members: str | None = None  # path to the members' parent; "." the node itself
    # An unnamed child token that changes the kind: Swift's `struct`, Kotlin's `interface`.
    keywords: Mapping[str, str] = field(default_factory=dict)
    # Path to the type an extension function is declared on (Kotlin's `fun String.toSku()`).
    receiver: str | None = None
    # A path that must lead somewhere for the rule to apply (R: the value is a function).
    requires: str | None = None
    # A path to a node whose text is the kind when it is one of KINDS_BY_TEXT (Zig's `enum {…}`).
    kind_from: str | None = None
    is_type: bool = True  # False for namespaces: their functions stay functions
    # A path to the node whose named children are a clause's parameters (Definition.arity).
    parameters: str | None = None
    scopes_rest: bool = False  # Definition.scopes_rest


@dataclass(frozen=True)
class LanguageTable:
    rules: Mapping[str, Rule | tuple[Rule, ...]]
    # Nodes attached to the definition right below them: comments, attributes, docstrings.
    leading: frozenset[str]
    # Non-definitions whose children are walked as if they were siblings.
    transparent: frozenset[str] = frozenset()
    # Nodes that finish the definition before them (Dart's body follows its signature).
    continued_by: frozenset[str] = frozenset()
    # Consecutive clauses of one function are one definition (Haskell, Erlang, Elixir).
    joins_clauses: bool = False
    # node type -> a function reading the shapes a rule cannot say
    custom: Mapping[str, Callable[[Node], Definition | None]] = field(default_factory=dict)
    # The block of a non-definition that holds definitions, for a shape no
    # node type says (spans.Grammar.wrapped_block).
    wrapped_block: Callable[[Node], Node | None] | None = None
    # Doc comments that document the definition above them (spans.Grammar.trailing_docs).
    trailing_docs: tuple[bytes, ...] = ()


def follow(node: Node | None, path: str) -> Node | None:
    """The node ``path`` leads to from ``node``, or None."""
    if path == ".":
        return node
    for step in path.split("/"):
        if node is None:
            return None
        where, _, types = step.partition("=")
        if step.startswith(":"):
            wanted = step[1:].split("|")
            node = next((child for child in node.named_children if child.type in wanted), None)
            continue
        if where == "^":
            node = node.parent
        elif where == "<":
            node = node.prev_named_sibling
        elif where == ">":
            node = node.next_named_sibling
        elif where.isdigit():
            index = int(where)
            node = node.named_child(index) if index < node.named_child_count else None
        else:
            node = node.child_by_field_name(where)
        if node is not None and types and node.type not in types.split("|"):
            return None
    return node


_NAME = re.compile(r"[^\s<(\[{,;=]+")
# A name made of symbols only: an operator (Swift's `==`, Scala's `::`, C#'s
# `!=`, Kotlin's `<=>`), whole, since every character _NAME cuts at may be in it.
_OPERATOR = re.compile(r"[^\w\s'\"`()\[\]{},;]+")


def name_parts(text: str) -> tuple[str, ...]:
    """``Bank.Account`` -> (Bank, Account); ``Cache<V>`` -> (Cache,); a name
    in backticks whole; quotes around it dropped, a prime kept (Haskell's ``foldl'``); an operator whole
    (``<=``, ``::``; Haskell's ``(<+>)`` -> (<+>,))."""
    stripped = text.strip()
    if len(stripped) > 2 and stripped[0] == stripped[-1] == "`" and "`" not in stripped.strip("`"):
        # Kotlin's, Scala's and Swift's `name with spaces`, F#'s ``name``: one
        # name whole (a JUnit-style test's sentence), not its first word.
        return (stripped.strip("`").strip(),)
    written = _unquoted(stripped)
    if not written.strip("()_ \t"):
        # OCaml's `let () = …` and `let _ = …`: a pattern that binds no name
        # (it was named `)` and `_`).
        return ()
    operator = written[1:-1].strip() if written.startswith("(") and written.endswith(")") else written
    if _OPERATOR.fullmatch(operator):
        return (operator,)
    match = _NAME.search(written)
    if match is None:
        return ()
    return tuple(part for part in re.split(r"[.:]+", _unquoted(match.group(0))) if part)


_QUOTES = "'\"`"


def _unquoted(written: str) -> str:
    """``written`` without the quotes around it. A quote closing nothing
    opened is part of the name: the prime of Haskell's and OCaml's ``foldl'``
    (stripped, ``foldl'`` was ``foldl`` and joined its clauses)."""
    inner = written.lstrip(_QUOTES)
    return inner.rstrip(_QUOTES) if len(inner) < len(written) else inner


def text(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


def classify(table: LanguageTable, node: Node) -> Definition | None:
    """What ``node`` defines by ``table``, or None."""
    custom = table.custom.get(node.type)
    if custom is not None:
        found = custom(node)
        if found is not None:
            return found
    rules = table.rules.get(node.type)
    if rules is None:
        return None
    for rule in rules if isinstance(rules, tuple) else (rules,):
        if rule.requires is not None and follow(node, rule.requires) is None:
            continue
        name = name_parts(text(follow(node, rule.name)))
        if not name:
            continue
        if rule.receiver is not None and (receiver := follow(node, rule.receiver)) is not None:
            name = (*name_parts(text(receiver))[-1:], *name)
        kind = rule.kind
        if rule.kind_from is not None:
            kind = KINDS_BY_TEXT.get(text(follow(node, rule.kind_from)).split("(")[0].strip(), kind)
        for child in node.children:
            if not child.is_named and child.type in rule.keywords:
                kind = rule.keywords[child.type]
                break
        members = follow(node, rule.members) if rule.members is not None else None
        arity = _arity(follow(node, rule.parameters)) if rule.parameters is not None else None
        return Definition(kind, name, members, rule.is_type, arity, rule.scopes_rest)
    return None


def _arity(parameters: Node | None) -> int:
    """How many parameters ``parameters`` (a clause's list of them) holds."""
    if parameters is None:
        return 0
    return sum(1 for child in parameters.named_children if "comment" not in child.type)


# --- shapes of their own ------------------------------------------------------------

_ELIXIR_FUNCTIONS = frozenset({"def", "defp", "defmacro", "defmacrop", "defguard", "defguardp",
                               "defdelegate", "defn", "defnp"})
# "namespace", not "module": that kind is the residue's (lines outside every definition).
_ELIXIR_MODULES = {"defmodule": "namespace", "defprotocol": "protocol", "defimpl": "impl"}


def _elixir_call(node: Node) -> Definition | None:
    """`defmodule A.B do … end`, `def f(x) when … do … end`, `defp g, do: …`."""
    target = text(node.child_by_field_name("target"))
    arguments = next((child for child in node.named_children if child.type == "arguments"), None)
    first = arguments.named_child(0) if arguments is not None and arguments.named_child_count else None
    if first is None:
        return None
    if target in _ELIXIR_MODULES:
        body = next((child for child in node.named_children if child.type == "do_block"), None)
        name = name_parts(text(first))
        return Definition(_ELIXIR_MODULES[target], name, body, False) if name else None
    if target in _ELIXIR_FUNCTIONS:
        head = first
        if head.type == "binary_operator":  # `f(x) when is_integer(x)`
            head = head.child_by_field_name("left") or head
        parameters = None
        if head.type == "call":
            parameters = next((child for child in head.named_children if child.type == "arguments"), None)
            head = head.child_by_field_name("target") or head
        name = name_parts(text(head))
        return Definition("function", name[-1:], arity=_arity(parameters)) \
            if name and head.type == "identifier" else None
    return None


def _elixir_conditional_block(node: Node) -> Node | None:
    """The `do` block of `if Code.ensure_loaded?(Jason) do … end` (`unless`
    too): modules and functions compiled only when a dependency is there are
    definitions as any others (the `else` branch, a fallback, is not read)."""
    if node.type == "call" and text(node.child_by_field_name("target")) in ("if", "unless"):
        return next((child for child in node.named_children if child.type == "do_block"), None)
    return None


_CLOJURE_DEFINITIONS = {"defn": "function", "defn-": "function", "defmacro": "macro",
                        "defmulti": "function", "defmethod": "method", "def": "constant",
                        "defonce": "constant", "defprotocol": "protocol", "defrecord": "record",
                        "deftype": "class", "definterface": "interface", "defstruct": "struct"}


def _clojure_list(node: Node) -> Definition | None:
    """`(defn name …)`, `(defprotocol Name …)`: the head symbol says the kind."""
    symbols = [child for child in node.named_children if child.type not in ("comment", "meta_lit")][:2]
    if len(symbols) < 2 or symbols[0].type != "sym_lit" or symbols[1].type != "sym_lit":
        return None
    kind = _CLOJURE_DEFINITIONS.get(text(symbols[0]).rpartition("/")[2])
    name_node = next((child for child in symbols[1].named_children if child.type == "sym_name"), symbols[1])
    name = text(name_node)
    return Definition(kind, (name,)) if kind and name else None


# Calls that make a class whose methods are `name = function(…)` arguments,
# in `list(…)`s (R6's `public = list(…)`, a Reference class's `methods = list(…)`).
_R_CLASS_FACTORIES = frozenset({"R6Class", "setRefClass"})
# S4: `setClass("Person", …)`, `setGeneric("greet", …)`, `setMethod("greet", "Person", …)`:
# what the call defines (kind -> the calls), named by its first argument.
_R_S4_DEFINITIONS = {"class": frozenset({"setClass"}), "function": frozenset({"setGeneric"}),
                     "method": frozenset({"setMethod", "setValidity"})}


def _r_called(call: Node) -> str:
    """The name of the function ``call`` calls, without the package it is
    named from: `R6::R6Class(…)` (processx's `process`, the way a package
    that does not import R6 writes it) is an R6Class call."""
    function = call.child_by_field_name("function")
    if function is not None and function.type == "namespace_operator":
        function = function.child_by_field_name("rhs")
    return text(function)


def _r_assignment(node: Node) -> Definition | None:
    """`f <- function(x) …`, `f = function(x) …`, `function(x) … -> f`,
    `obj$f <- function(x) …`; `Account <- R6Class("Account", …)`, a class."""
    lhs, rhs = node.child_by_field_name("lhs"), node.child_by_field_name("rhs")
    operator = text(node.child_by_field_name("operator"))
    if operator in ("->", "->>"):
        lhs, rhs = rhs, lhs
    if lhs is None or rhs is None \
            or lhs.type not in ("identifier", "string", "dollar", "extract_operator", "namespace_operator"):
        return None
    name = name_parts(text(lhs).replace("$", "."))
    if not name:
        return None
    if rhs.type == "function_definition":
        return Definition("function", name)
    if rhs.type == "call" and _r_called(rhs) in _R_CLASS_FACTORIES:
        return Definition("class", name, rhs.child_by_field_name("arguments"))
    return None


def _r_call(node: Node) -> Definition | None:
    """S4's `setClass("Person", …)`, `setGeneric("greet", …)`, `setMethod("greet", …)`."""
    called = _r_called(node)
    kind = next((kind for kind, calls in _R_S4_DEFINITIONS.items() if called in calls), None)
    first = follow(node, "arguments/:argument/value=string")
    name = name_parts(text(first)) if kind is not None and first is not None else ()
    return Definition(kind, name) if name else None


def _r_method_argument(node: Node) -> Definition | None:
    """`deposit = function(amount) …` among a class's arguments (R6Class's
    `public = list(…)`); elsewhere (`lapply(xs, FUN = function…)`) no definition."""
    value = node.child_by_field_name("value")
    if value is None or value.type != "function_definition":
        return None
    call = follow(node, "^/^")
    if call is not None and _r_called(call) == "list":
        call = follow(call, "^/^/^")  # the list's argument, its arguments, their call
    if call is None or call.type != "call" or _r_called(call) not in _R_CLASS_FACTORIES:
        return None
    name = name_parts(text(node.child_by_field_name("name")))
    return Definition("function", name) if name else None


def _r_list_argument(node: Node) -> Node | None:
    """The arguments of `public = list(…)` (R6's) or `methods = list(…)`
    (a Reference class's): walked for the methods among them."""
    value = node.child_by_field_name("value") if node.type == "argument" else None
    if value is None or value.type != "call" or _r_called(value) != "list":
        return None
    return value.child_by_field_name("arguments")


def _julia_call(node: Node | None) -> Node | None:
    """The call a method's head is (`f(x)`), under its return type and
    `where` clauses (`f(x::T)::T where {T}`), or None."""
    while node is not None and node.type in ("where_expression", "typed_expression"):
        node = node.named_child(0) if node.named_child_count else None
    return node if node is not None and node.type == "call_expression" else None


def _julia_method_name(call: Node | None) -> tuple[str, ...]:
    """`f`, `Base.show`; for a callable object's method (`(a::Dense)(x)`,
    `(::Chain{T})(x)`: every Flux layer's forward pass) its type's name."""
    callee = follow(call, "0")
    if callee is not None and callee.type == "parenthesized_expression":
        callee = follow(callee, "0=typed_expression/1") or follow(callee, "0=unary_typed_expression/0")
    return name_parts(text(callee)) if callee is not None else ()


def _julia_function(node: Node) -> Definition | None:
    """`function f(x) … end`, with a return type or `where` clauses; `function f end`."""
    signature = follow(node, ":signature/0")
    name = name_parts(text(signature)) if signature is not None and signature.type == "identifier" \
        else _julia_method_name(_julia_call(signature))
    return Definition("function", name) if name else None


def _julia_assignment(node: Node) -> Definition | None:
    """`f(x) = x + 1`, `f(x::T)::T where {T} = x`: a function in one line."""
    name = _julia_method_name(_julia_call(follow(node, "0")))
    return Definition("function", name) if name else None


def _julia_macrocall(node: Node) -> Definition | None:
    """`@inline function f … end`, `@kwdef struct S … end`, `@noinline f(x) = …`:
    a macro applied to a definition (its last argument) defines what it wraps."""
    arguments = follow(node, ":macro_argument_list")
    wrapped = arguments.named_children[-1] if arguments is not None and arguments.named_child_count else None
    return classify(JULIA, wrapped) if wrapped is not None else None


_OBJC_CONTAINERS = {"class_interface": "interface", "class_implementation": "class",
                    "protocol_declaration": "protocol", "category_interface": "interface",
                    "category_implementation": "class"}


def _objc_container(node: Node) -> Definition | None:
    """`@implementation Name … @end`: the members are the node's own children."""
    name = text(follow(node, ":identifier"))
    return Definition(_OBJC_CONTAINERS[node.type], (name,), node) if name else None


# Terraform's addresses: `resource "aws_s3_bucket" "logs"` is `aws_s3_bucket.logs`.
_HCL_BLOCKS = {"resource": ((), "object"), "data": (("data",), "object"), "module": (("module",), "object"),
               "variable": (("var",), "constant"), "output": (("output",), "constant"),
               "provider": (("provider",), "object")}


def _hcl_block(node: Node) -> Definition | None:
    """`resource "type" "name" {…}` and the other named blocks of Terraform;
    a `locals {…}` block holds its values (_hcl_local), its own lines residue."""
    head = follow(node, "0=identifier")
    if text(head) == "locals":
        return Definition("namespace", (), follow(node, ":body"), is_type=False)
    labels = [text(child).strip('"') for child in node.named_children if child.type == "string_lit"]
    known = _HCL_BLOCKS.get(text(head))
    if known is None or not labels or not all(labels):
        return None
    prefix, kind = known
    return Definition(kind, (*prefix, *labels))


def _hcl_local(node: Node) -> Definition | None:
    """`create_vpc = var.create_vpc && …` in a `locals` block: `local.create_vpc`,
    as every expression names it (terraform-aws-vpc's main.tf names its locals
    54 times; they were no definitions)."""
    if text(follow(node, "^/^/0=identifier")) != "locals":
        return None
    name = name_parts(text(follow(node, "0=identifier")))
    return Definition("constant", ("local", *name)) if name else None


# --- the rows ----------------------------------------------------------------------

_C_COMMENTS = frozenset({"comment", "line_comment", "block_comment", "multiline_comment"})

_KOTLIN_ACCESSORS = frozenset({"getter", "setter"})
# A property with a getter or setter is code, as a method is (this grammar
# reads a multi-line accessor as the declaration's next sibling); a stored
# property is not a definition. `val Module.isLoaded` is Module's.
_KOTLIN_PROPERTY = ":variable_declaration/:simple_identifier"


KOTLIN = LanguageTable(
    rules={
        "class_declaration": Rule("class", ":type_identifier", ":class_body|enum_class_body",
                                  keywords={"interface": "interface", "enum": "enum"}),
        "object_declaration": Rule("object", ":type_identifier", ":class_body"),
        # `EARTH(5.97) { override fun describe() = … }`: an entry with a body
        # holds code (`Planet.EARTH.describe`); a plain entry is no definition.
        "enum_entry": Rule("constant", ":simple_identifier", ":class_body", requires=":class_body"),
        "function_declaration": Rule("function", ":simple_identifier", receiver="receiver"),
        "type_alias": Rule("type", ":type_identifier"),
        "property_declaration": (
            Rule("property", _KOTLIN_PROPERTY, receiver=":receiver_type", requires=":getter|setter"),
            Rule("property", _KOTLIN_PROPERTY, receiver=":receiver_type", requires=">=getter|setter")),
    },
    leading=_C_COMMENTS,
    # A companion object's members are its class's (`Inventory.empty()`).
    transparent=frozenset({"companion_object", "class_body"}),
    continued_by=_KOTLIN_ACCESSORS,
)

# Swift's sugar for the types an extension may extend (`extension [String]`,
# Swift 5.7): named as the type it stands for, not by its first word inside
# (`[String: Int]` was an extension of `String`).
_SWIFT_SUGARED_TYPES = {"array_type": "Array", "dictionary_type": "Dictionary", "optional_type": "Optional"}


def _swift_sugared_extension(node: Node) -> Definition | None:
    sugared = _SWIFT_SUGARED_TYPES.get(getattr(node.child_by_field_name("name"), "type", ""))
    if sugared is None or not any(child.type == "extension" for child in node.children):
        return None
    return Definition("extension", (sugared,), node.child_by_field_name("body"))


SWIFT = LanguageTable(
    rules={
        "class_declaration": Rule("class", "name", "body", keywords={
            "struct": "struct", "enum": "enum", "extension": "extension", "actor": "class"}),
        "protocol_declaration": Rule("protocol", "name", "body"),
        "function_declaration": Rule("function"),
        "protocol_function_declaration": Rule("function"),
        "deinit_declaration": Rule("function", "."),
        "typealias_declaration": Rule("type"),
        # A computed property (`var isEmpty: Bool { … }`) is code, as a method is;
        # a stored one (`let x = 3`) is not a definition.
        "property_declaration": Rule("property", "name/bound_identifier", requires="computed_value"),
    },
    leading=_C_COMMENTS,
    # `public convenience init(…)`, `subscript(i: Int) -> T { get … set … }`:
    # the keyword is its name; a subscript is read as a computed property.
    custom={"init_declaration": lambda node: Definition("function", ("init",)),
            "subscript_declaration": lambda node: Definition("property", ("subscript",)),
            "class_declaration": _swift_sugared_extension},
)


def _csharp_conversion(node: Node) -> Definition | None:
    """`public static explicit operator bool(JToken value)`: named as the
    compiler names it (`op_Explicit`, `op_Implicit`), as stack traces and
    reflection show it."""
    keyword = next((child.type for child in node.children if child.type in ("implicit", "explicit")), None)
    return Definition("function", (f"op_{keyword.capitalize()}",)) if keyword else None


_CSHARP_TYPE = {"class_declaration": "class", "struct_declaration": "struct",
                "interface_declaration": "interface", "record_declaration": "record",
                "record_struct_declaration": "record", "enum_declaration": "enum"}
CSHARP = LanguageTable(
    rules={
        **{node_type: Rule(kind, "name", "body") for node_type, kind in _CSHARP_TYPE.items()},
        "namespace_declaration": Rule("namespace", "name", "body", is_type=False),
        "method_declaration": Rule("function"),
        "constructor_declaration": Rule("function"),
        "destructor_declaration": Rule("function"),
        "local_function_statement": Rule("function"),
        "operator_declaration": Rule("function", "operator"),
        "delegate_declaration": Rule("type"),
        "property_declaration": Rule("property", requires=":accessor_list|arrow_expression_clause"),
    },
    leading=frozenset({"comment", "attribute_list"}),
    transparent=frozenset({"file_scoped_namespace_declaration", "preproc_if", "preproc_region"}),
    # `public T this[int i] { get … }`: an indexer, named by its keyword as the code calls it.
    custom={"conversion_operator_declaration": _csharp_conversion,
            "indexer_declaration": lambda node: Definition("property", ("this",))},
)


def _scala_anonymous_given(node: Node) -> Definition | None:
    """`given Ordering[Color] with def compare …`: named as the compiler names
    it, `given_Ordering_Color` (the type's simple name, then its top-level
    arguments'), so its methods are definitions (they were lost)."""
    if node.child_by_field_name("name") is not None:
        return None
    given = node.child_by_field_name("return_type")
    arguments = given.child_by_field_name("type_arguments") if given is not None else None
    types = [given.child_by_field_name("type") if given is not None and given.type == "generic_type" else given,
             *(argument.child_by_field_name("type") if argument.type == "generic_type" else argument
               for argument in (arguments.named_children if arguments is not None else ()))]
    names = [name_parts(text(type_))[-1:] for type_ in types]
    if not all(names):
        return None
    return Definition("object", ("_".join(["given", *(name[0] for name in names)]),),
                      follow(node, "body=with_template_body"))


SCALA = LanguageTable(
    rules={
        "class_definition": Rule("class", "name", "body"),
        "trait_definition": Rule("trait", "name", "body"),
        "object_definition": Rule("object", "name", "body"),
        # `package object squants { implicit val moneyReader … ; def parse … }`
        "package_object": Rule("object", "name", "body"),
        "enum_definition": Rule("enum", "name", "body"),
        "function_definition": Rule("function"),
        "function_declaration": Rule("function"),
        "type_definition": Rule("type"),
        # `given intMonoid: Monoid[Int] with def combine …`: its methods are
        # `intMonoid.combine`; an alias given (`= Ordering.Int`) has none.
        "given_definition": Rule("object", "name", "body=with_template_body"),
        # An extension's methods are its own children (each under a field
        # `body`, with braces or without): no node holds them. One on a
        # by-name parameter (`(p: => P[T])`, fastparse's) is named by its type.
        "extension_definition": (Rule("extension", "parameters/0/type=lazy_parameter_type/type", "."),
                                 Rule("extension", "parameters/0/type", ".")),
    },
    leading=frozenset({"comment", "block_comment", "annotation"}),
    transparent=frozenset({"package_clause", "template_body"}),
    custom={"given_definition": _scala_anonymous_given},
)

ELIXIR = LanguageTable(
    rules={}, leading=frozenset({"comment", "unary_operator"}), joins_clauses=True,
    custom={"call": _elixir_call}, wrapped_block=_elixir_conditional_block,
)

LUA = LanguageTable(
    rules={
        "function_declaration": Rule("function"),
        # `M.refresh = function() … end`, `local f = function() … end`
        "assignment_statement": Rule("function", "0=variable_list/0",
                                     requires=":expression_list/0=function_definition"),
    },
    leading=frozenset({"comment"}),
    # `do … end` scopes a module's locals (gitsigns' async.lua); `if jit then
    # function M.fast() … end else … end` defines under a condition.
    transparent=frozenset({"variable_declaration", "do_statement", "if_statement", "elseif_statement",
                           "else_statement", "block"}),
)

BASH = LanguageTable(
    rules={"function_definition": Rule("function")},
    leading=frozenset({"comment"}),
    # A script wrapped in `{ … }` so that a piped download runs only whole
    # (nvm's, rustup's installers), functions defined under a condition.
    transparent=frozenset({"compound_statement", "if_statement", "elif_clause", "else_clause"}),
)

_DART_CONSTRUCTORS = ":constructor_signature|constant_constructor_signature|factory_constructor_signature|" \
                     "redirecting_factory_constructor_signature"


def _dart_constructor(node: Node) -> Definition | None:
    """`User(…)`, `User.guest() : …`, `const User.empty()`, `factory
    User.fromJson(…) {…}`: a named constructor is named by what follows its
    class's name (`User.guest`, as it is called), the unnamed one by the
    class's. The grammar puts both names under one field (`name`) or none."""
    signature = follow(node, _DART_CONSTRUCTORS)
    names: list[str] = []
    for child in signature.children if signature is not None else ():
        if child.type == "formal_parameter_list":
            break
        if child.type == "identifier":
            names.append(text(child))
    return Definition("function", (names[-1],)) if names else None


def _dart_operator(node: Node) -> Definition | None:
    """`Vector operator +(Vector o)`, `bool operator ==(Object o)`, `T
    operator [](int i)`: named by the operator, as Swift's and Scala's are
    (the signature has no name field: they were no definitions)."""
    signature = follow(node, ":operator_signature")
    if signature is None:
        return None
    operator: list[str] = []
    for child in signature.children:
        if child.type == "formal_parameter_list":
            break
        if operator or child.type == "operator":
            operator.append(text(child))
    written = "".join(operator[1:]).strip()
    return Definition("function", (written,)) if written else None


def _dart_method(node: Node) -> Definition | None:
    """A constructor or an operator: the signatures the row's name path cannot read."""
    return _dart_constructor(node) or _dart_operator(node)


# Constructors are _dart_constructor's.
_DART_SIGNATURES = ":function_signature|getter_signature|setter_signature|operator_signature"
DART = LanguageTable(
    rules={
        "class_definition": Rule("class", "name", "body"),
        "mixin_declaration": Rule("class", ":identifier", ":class_body"),
        "extension_declaration": Rule("extension", "name", "body"),
        "enum_declaration": Rule("enum", "name", "body"),
        "function_signature": Rule("function"),
        "getter_signature": Rule("function"),
        "method_signature": Rule("function", f"{_DART_SIGNATURES}/name"),
        "declaration": Rule("function", f"{_DART_SIGNATURES}/name"),
        "type_alias": Rule("type", ":type_identifier"),
    },
    leading=frozenset({"comment", "documentation_comment", "annotation", "marker_annotation"}),
    continued_by=frozenset({"function_body"}),
    custom={"method_signature": _dart_method, "declaration": _dart_method},
)

HASKELL = LanguageTable(
    rules={
        # `a <+> b = …`, ``x `elem` xs = …``: an equation written infix is named by its operator.
        "function": (Rule("function"), Rule("function", ":infix/operator")),
        "bind": Rule("function"),
        "signature": Rule("function"),
        "data_type": Rule("type"),
        "newtype": Rule("type"),
        "type_synomym": Rule("type"),
        "type_family": Rule("type"),
        "class": Rule("class", "name", "declarations"),
        "instance": Rule("impl", "name", "declarations"),
    },
    leading=frozenset({"comment", "haddock", "pragma"}),
    transparent=frozenset({"declarations", "class_declarations", "instance_declarations"}),
    joins_clauses=True,
)

OCAML = LanguageTable(
    rules={
        # One definition per binding: `let rec f … and g …` defines both
        # (value_definition is transparent, its bindings siblings).
        "let_binding": Rule("function", "pattern"),
        "type_definition": Rule("type", ":type_binding/name"),
        "exception_definition": Rule("type", ":constructor_declaration/:constructor_name"),
        # A module's members: its structure (`= struct … end`), else in an
        # interface its signature (`.mli`'s `module Buffered : sig … end`).
        "module_definition": (Rule("namespace", ":module_binding/:module_name", ":module_binding/body",
                                   requires=":module_binding/body", is_type=False),
                              Rule("namespace", ":module_binding/:module_name",
                                   ":module_binding/module_type=signature", is_type=False)),
        "module_type_definition": Rule("interface", ":module_type_name", "body"),
        "class_definition": Rule("class", ":class_binding/:class_name", ":class_binding/body"),
        "method_definition": Rule("function", ":method_name"),
        "external": Rule("function", ":value_name"),
        "value_specification": Rule("function", ":value_name"),
    },
    leading=frozenset({"comment"}),
    transparent=frozenset({"value_definition"}),
    # odoc: `(** … *)` right under a definition, a blank line after it, is its
    # doc (the layout of most `.mli` files: angstrom's, the stdlib's).
    trailing_docs=(b"(**",),
)


def _zig_type_function(node: Node) -> Definition | None:
    """`pub fn ArrayList(comptime T: type) type { … return struct { … }; }`:
    Zig's generic type, a function that returns a container; its
    container's functions are its methods."""
    proto = follow(node, ":FnProto")
    if proto is None or text(follow(proto, ":ErrorUnionExpr")) != "type":
        return None
    name = name_parts(text(follow(proto, "function")))
    body = follow(node, ":Block")
    for statement in body.named_children if body is not None and name else ():
        returned = follow(statement, ":AssignExpr")
        if returned is not None and returned.child(0) is not None and returned.child(0).type == "return":
            container = follow(returned, ":ErrorUnionExpr/:SuffixExpr/:ContainerDecl")
            if container is not None:
                kind = KINDS_BY_TEXT.get(text(follow(container, ":ContainerDeclType")).split("(")[0].strip(),
                                         "struct")
                return Definition(kind, name, container)
    return None


def _zig_test(node: Node) -> Definition:
    """`test "adds two numbers" { … }`: a test named by its string, whole
    (a sentence, as a Kotlin test's backticked name); `test add { … }` (a
    doctest) "test add", never a second definition of `add`; `test { … }`
    just "test"."""
    described = follow(node, ":STRINGLITERALSINGLE")
    if described is not None:
        return Definition("function", (_unquoted(text(described)).strip() or "test",), is_type=False)
    tested = text(follow(node, ":IDENTIFIER"))
    return Definition("function", (f"test {tested}" if tested else "test",), is_type=False)


ZIG = LanguageTable(
    rules={
        "Decl": (
            Rule("function", ":FnProto/function"),
            Rule("struct", ":VarDecl/variable_type_function",
                 ":VarDecl/:ErrorUnionExpr/:SuffixExpr/:ContainerDecl",
                 requires=":VarDecl/:ErrorUnionExpr/:SuffixExpr/:ContainerDecl",
                 kind_from=":VarDecl/:ErrorUnionExpr/:SuffixExpr/:ContainerDecl/:ContainerDeclType"),
        ),
    },
    leading=frozenset({"line_comment", "doc_comment", "container_doc_comment"}),
    custom={"Decl": _zig_type_function, "TestDecl": _zig_test},
)

JULIA = LanguageTable(
    rules={
        "macro_definition": Rule("macro", ":signature/0=call_expression/0"),
        "struct_definition": Rule("struct", ":type_head/0"),
        "abstract_definition": Rule("type", ":type_head/0"),
        "primitive_definition": Rule("type", ":type_head/0"),
        "module_definition": Rule("namespace", "name", ":block", is_type=False),
        "const_statement": Rule("constant", ":assignment/0"),
    },
    leading=frozenset({"line_comment", "block_comment", "string_literal"}),
    custom={"function_definition": _julia_function, "assignment": _julia_assignment,
            "macrocall_expression": _julia_macrocall},
)

R = LanguageTable(rules={}, leading=frozenset({"comment"}),
                  custom={"binary_operator": _r_assignment, "call": _r_call, "argument": _r_method_argument},
                  wrapped_block=_r_list_argument)

OBJC = LanguageTable(
    rules={
        "method_definition": Rule("function", ":identifier"),
        "method_declaration": Rule("function", ":identifier"),
    },
    leading=frozenset({"comment"}),
    transparent=C_PREPROCESSOR | {"implementation_definition", "linkage_specification"},
    custom={node_type: _objc_container for node_type in _OBJC_CONTAINERS},
)

ERLANG = LanguageTable(
    rules={
        "fun_decl": Rule("function", ":function_clause/name", parameters=":function_clause/args"),
        "record_decl": Rule("record"),
        "type_alias": Rule("type", "name/0"),
        "pp_define": Rule("macro", "lhs/name"),
    },
    # `%% @doc` then `-spec` above the function: both are its head (OTP's layout).
    leading=frozenset({"comment", "spec"}),
    joins_clauses=True,
)

CLOJURE = LanguageTable(rules={}, leading=frozenset({"comment"}), custom={"list_lit": _clojure_list})

_SQL_PROCEDURE = re.compile(r"CREATE\s+(?:OR\s+REPLACE\s+)?PROCEDURE\s+((?:\"[^\"]+\"|[\w$]+)(?:\.(?:\"[^\"]+\"|[\w$]+))*)",
                            re.IGNORECASE)


def _sql_procedure(node: Node) -> Definition | None:
    """`CREATE [OR REPLACE] PROCEDURE name(…)`: the grammar has no
    procedures, and reads one's head as an error node (its `BEGIN … END`
    body follows as a block)."""
    found = _SQL_PROCEDURE.match(text(node))
    return Definition("procedure", name_parts(found.group(1))) if found else None


SQL = LanguageTable(
    rules={
        "create_table": Rule("table", ":object_reference"),
        "create_view": Rule("view", ":object_reference"),
        "create_materialized_view": Rule("view", ":object_reference"),
        "create_function": Rule("function", ":object_reference"),
        "create_type": Rule("type", ":object_reference"),
        "create_trigger": Rule("trigger", ":object_reference"),
    },
    leading=frozenset({"comment", "marginalia"}),
    transparent=frozenset({"statement", "block", "transaction"}),
    # A procedure's `BEGIN … END` body, after its head (_sql_procedure).
    continued_by=frozenset({"block"}),
    custom={"ERROR": _sql_procedure},
)

HCL = LanguageTable(rules={}, leading=frozenset({"comment"}), transparent=frozenset({"body"}),
                    custom={"block": _hcl_block, "attribute": _hcl_local})

NIX = LanguageTable(
    rules={"binding": Rule("function", "attrpath", requires="expression=function_expression")},
    leading=frozenset({"comment"}),
    # A file's definitions sit in its top-level function's `let … in { … }`.
    transparent=frozenset({"function_expression", "let_expression", "binding_set", "attrset_expression",
                           "rec_attrset_expression"}),
)

POWERSHELL = LanguageTable(
    rules={
        "function_statement": Rule("function", ":function_name"),
        "class_statement": Rule("class", ":simple_name", "."),
        "class_method_definition": Rule("function", ":simple_name"),
        "enum_statement": Rule("enum", ":simple_name"),
    },
    leading=frozenset({"comment"}),
    transparent=frozenset({"statement_list"}),
)

PERL = LanguageTable(
    rules={"subroutine_declaration_statement": Rule("function"),
           # `package Name { … }` holds its subs; `package Name;` the subs
           # after it, up to the next package statement.
           "package_statement": Rule("namespace", members=":block", is_type=False, scopes_rest=True)},
    leading=frozenset({"comment", "pod"}),
)

FSHARP = LanguageTable(
    rules={
        "named_module": Rule("namespace", "name", ".", is_type=False),
        "module_defn": Rule("namespace", ":identifier", ".", is_type=False),
        "function_or_value_defn": Rule("function", ":function_declaration_left/:identifier",
                                       requires=":function_declaration_left"),
        # Members sit in one or more `type_extension_elements` under the
        # type's own node (a union's, a record's, a class's).
        "type_definition": Rule("type", "0/:type_name/type_name", "0"),
        # `member this.Match (x) = …` names its method after the instance;
        # `static member ofName name = …` names it alone.
        "member_defn": (Rule("function", ":method_or_prop_defn/name/method"),
                        Rule("function", ":method_or_prop_defn/name")),
    },
    leading=frozenset({"line_comment", "block_comment", "attributes"}),
    transparent=frozenset({"declaration_expression", "namespace", "type_extension_elements"}),
)

# Schemas and contracts: what a search for a message, a service or a type
# names is its definition.
PROTO = LanguageTable(
    rules={
        "message": Rule("struct", ":message_name", ":message_body"),
        "enum": Rule("enum", ":enum_name"),
        "service": Rule("interface", ":service_name", "."),
        "rpc": Rule("function", ":rpc_name"),
    },
    leading=frozenset({"comment"}),
)

SOLIDITY = LanguageTable(
    rules={
        "contract_declaration": Rule("class", "name", "body"),
        "interface_declaration": Rule("interface", "name", "body"),
        "library_declaration": Rule("namespace", "name", "body", is_type=False),
        "struct_declaration": Rule("struct"),
        "enum_declaration": Rule("enum"),
        "event_definition": Rule("type"),
        "error_declaration": Rule("type"),
        "modifier_definition": Rule("function"),
        "function_definition": Rule("function"),
    },
    leading=frozenset({"comment"}),
    custom={"constructor_definition": lambda node: Definition("function", ("constructor",))},
)

GRAPHQL = LanguageTable(
    rules={
        "object_type_definition": Rule("type", ":name", ":fields_definition"),
        "interface_type_definition": Rule("interface", ":name", ":fields_definition"),
        "object_type_extension": Rule("extension", ":name", ":fields_definition"),
        "input_object_type_definition": Rule("type", ":name"),
        "enum_type_definition": Rule("enum", ":name"),
        "union_type_definition": Rule("type", ":name"),
        "scalar_type_definition": Rule("type", ":name"),
        # A field that takes arguments is an operation (`order(id: ID!): Order`);
        # plain fields stay the type's lines.
        "field_definition": Rule("function", ":name", requires=":arguments_definition"),
        "operation_definition": Rule("function", ":name"),
        "fragment_definition": Rule("type", ":fragment_name"),
    },
    leading=frozenset({"comment"}),
    transparent=frozenset({"document", "definition", "type_system_definition", "type_definition",
                           "type_system_extension", "type_extension", "executable_definition"}),
)

ELM = LanguageTable(
    rules={
        # A signature and its equation are one definition, as in Haskell.
        "type_annotation": Rule("function"),
        "value_declaration": Rule("function", "functionDeclarationLeft/0"),
        "port_annotation": Rule("function"),
        "type_declaration": Rule("type"),
        "type_alias_declaration": Rule("type"),
    },
    leading=frozenset({"line_comment", "block_comment"}),
    joins_clauses=True,
)

GLEAM = LanguageTable(
    rules={
        "function": Rule("function"),
        "external_function": Rule("function"),
        "type_definition": Rule("type", ":type_name/name"),
        "type_alias": Rule("type", ":type_name/name"),
        "external_type": Rule("type", ":type_name/name"),
        "constant": Rule("constant"),
    },
    leading=frozenset({"comment", "statement_comment", "attribute"}),
)

THRIFT = LanguageTable(
    rules={
        "struct_definition": Rule("struct", "type"),
        "union_definition": Rule("union", "type"),
        "exception_definition": Rule("type", ":identifier"),
        "enum_definition": Rule("enum", "type"),
        "service_definition": Rule("interface", "type", "."),
        "function_definition": Rule("function", ":identifier"),
        "typedef_definition": Rule("type", ":typedef_identifier"),
        "const_definition": Rule("constant", ":identifier"),
    },
    leading=frozenset({"comment"}),
)

FORTRAN = LanguageTable(
    rules={
        "module": Rule("namespace", ":module_statement/:name", ".", is_type=False),
        "submodule": Rule("namespace", ":submodule_statement/:name", ".", is_type=False),
        "program": Rule("namespace", ":program_statement/:name", ".", is_type=False),
        "function": Rule("function", ":function_statement/name"),
        "subroutine": Rule("function", ":subroutine_statement/name"),
        "module_procedure": Rule("function", ":module_procedure_statement/:name"),
        "derived_type_definition": Rule("type", ":derived_type_statement/:type_name"),
        # A generic interface is one definition; an unnamed block's
        # procedures (C bindings, abstract interfaces) are read one by one.
        "interface": Rule("interface", ":interface_statement/:name"),
    },
    leading=frozenset({"comment"}),
    transparent=frozenset({"internal_procedures", "interface"}),
)

D = LanguageTable(
    rules={
        "class_declaration": Rule("class", ":identifier", ":aggregate_body"),
        "struct_declaration": Rule("struct", ":identifier", ":aggregate_body"),
        "union_declaration": Rule("union", ":identifier", ":aggregate_body"),
        "interface_declaration": Rule("interface", ":identifier", ":aggregate_body"),
        "enum_declaration": Rule("enum", ":identifier"),
        "template_declaration": Rule("namespace", ":identifier", ".", is_type=False),
        "mixin_template_declaration": Rule("namespace", ":template_declaration/:identifier",
                                           ":template_declaration", is_type=False),
        "function_declaration": Rule("function", ":identifier"),
        "alias_declaration": Rule("type", ":alias_initializer/:identifier"),
    },
    leading=frozenset({"comment", "attribute_declaration"}),
    # `module x;` names the file, not a scope; `version (Windows) { … } else { … }`
    # and `static if` blocks define as the file does (both branches read).
    transparent=frozenset({"module_def", "conditional_declaration"}),
    custom={"constructor": lambda node: Definition("function", ("this",)),
            "destructor": lambda node: Definition("function", ("~this",)),
            "unittest_declaration": lambda node: Definition("function", ("unittest",))},
)

def _nim(kind: str, name: str = "name") -> tuple[Rule, ...]:
    # `proc push*(…)`: the `*` exports the name and is not part of it.
    return Rule(kind, f"{name}/:identifier|accent_quoted"), Rule(kind, name)


NIM = LanguageTable(
    rules={
        "proc_declaration": _nim("function"),
        "func_declaration": _nim("function"),
        "method_declaration": _nim("function"),
        "iterator_declaration": _nim("function"),
        "converter_declaration": _nim("function"),
        "template_declaration": _nim("macro"),
        "macro_declaration": _nim("macro"),
        "type_declaration": _nim("type", ":type_symbol_declaration/name"),
    },
    leading=frozenset({"comment", "block_comment", "documentation_comment", "block_documentation_comment"}),
    # `type` sections hold several types; `when defined(windows):` defines per platform.
    transparent=frozenset({"type_section", "when", "elif_branch", "else_branch", "statement_list"}),
)

def _vim_function(node: Node) -> Definition | None:
    """`function! s:restore(name)`, `function! session#Save()`: the scope and
    autoload parts are the name as it is called; `s:obj.method()` is obj's."""
    name = text(follow(node, ":function_declaration/name"))
    parts = tuple(part for part in name.split(".") if part)
    return Definition("function", parts) if parts else None


VIM = LanguageTable(
    rules={"command_statement": Rule("macro", "name")},  # `command! Save call …`: a user command
    leading=frozenset({"comment"}),
    custom={"function_definition": _vim_function},
)


# Shaders: the C reading (functions, structs, macros) is the fallback
# (chunking/grammars.py); the rows add what C does not have.
GLSL = LanguageTable(
    rules={
        # `layout(std140) uniform Lights { … };`: a block of uniforms, as a struct.
        "declaration": Rule("struct", ":identifier", requires=":field_declaration_list"),
    },
    leading=frozenset({"comment"}),
    transparent=C_PREPROCESSOR,
)

def _hlsl_buffer(node: Node) -> Definition | None:
    """`cbuffer PerFrame { … };`, which this grammar reads as a function (or,
    with `: register(b0)`, as a declaration before a block): a struct."""
    if text(follow(node, "type")) not in ("cbuffer", "tbuffer"):
        return None
    name = name_parts(text(follow(node, "declarator=identifier")))
    return Definition("struct", name) if name else None


HLSL = LanguageTable(
    rules={},
    leading=frozenset({"comment", "hlsl_attribute"}),
    transparent=C_PREPROCESSOR | {"namespace_definition", "declaration_list"},
    custom={"function_definition": _hlsl_buffer, "declaration": _hlsl_buffer},
)

WGSL = LanguageTable(
    rules={
        "function_declaration": Rule("function"),
        "struct_declaration": Rule("struct"),
        "type_alias_declaration": Rule("type", ":identifier"),
    },
    leading=frozenset({"line_comment", "block_comment"}),
)

# Lisps: a form whose head is one of these defines its second element.
_LISP_DEFINITIONS = {
    **dict.fromkeys(("defun", "defsubst", "defgeneric", "cl-defun", "cl-defsubst", "cl-defgeneric",
                     "define-inline", "define-minor-mode", "define-derived-mode",
                     "define-globalized-minor-mode", "define/contract", "define/public", "define/private",
                     "define/override", "defsetf", "defalias"), "function"),
    **dict.fromkeys(("defmethod", "cl-defmethod"), "method"),
    **dict.fromkeys(("defmacro", "cl-defmacro", "define-compiler-macro", "define-modify-macro", "define-syntax",
                     "define-syntax-rule", "define-macro"), "macro"),
    **dict.fromkeys(("defclass", "define-condition", "eieio-defclass"), "class"),
    **dict.fromkeys(("defstruct", "cl-defstruct", "struct", "define-struct"), "struct"),
    **dict.fromkeys(("define-record-type",), "record"),
    **dict.fromkeys(("deftype", "cl-deftype"), "type"),
    **dict.fromkeys(("defpackage", "define-package"), "namespace"),
    **dict.fromkeys(("defvar", "defparameter", "defconstant", "defcustom", "defconst", "defvar-local",
                     "defface", "defgroup", "defvar-keymap"), "constant"),
}
# Racket's submodules hold definitions of their own.
_LISP_MODULES = frozenset({"module", "module+", "module*"})


def _lisp_form(node: Node, symbol: str) -> Definition | None:
    """`(defun name …)`, `(define (name args) …)`, `(define name (lambda …))`,
    `(defstruct (point (:constructor …)) …)`, `(module+ test …)`."""
    elements = [child for child in node.named_children if "comment" not in child.type][:3]
    if len(elements) < 2 or elements[0].type != symbol:
        return None
    head = text(elements[0]).rpartition(":")[2].lower()
    target, called = elements[1], False
    names = (symbol, "kwd_lit")  # `(defpackage :hunchentoot …)`
    while target.type not in names and target.named_child_count:  # `(define ((curried a) b) …)`
        target, called = target.named_child(0), True
    name = text(target).lstrip("#:") if target.type in names else ""
    if not name:
        return None
    if head in _LISP_MODULES:
        return Definition("namespace", (name,), node, False)
    if head == "define":
        value = elements[2] if len(elements) > 2 else None
        is_lambda = value is not None and value.named_child_count > 0 \
            and text(value.named_child(0)) in ("lambda", "λ", "case-lambda")
        return Definition("function" if called or is_lambda else "constant", (name,))
    kind = _LISP_DEFINITIONS.get(head)
    return Definition(kind, (name,)) if kind else None


def _commonlisp_list(node: Node) -> Definition | None:
    """This grammar reads `defun`, `defmacro`, `defgeneric` and `defmethod` into
    a `defun` node of their own; the other forms are plain lists."""
    header = follow(node, ":defun/:defun_header")
    if header is None:
        return _lisp_form(node, "sym_lit")
    keyword = text(follow(header, "keyword")).lower()
    name = text(follow(header, "function_name")).strip("()").split()  # `(setf name)`
    kind = _LISP_DEFINITIONS.get(keyword, "function") if keyword != "lambda" else None
    return Definition(kind, (name[-1],)) if kind and name else None


COMMONLISP = LanguageTable(rules={}, leading=frozenset({"comment", "block_comment"}),
                           # `#-lispworks (defun …)`: defined for some implementations
                           transparent=frozenset({"include_reader_macro"}),
                           custom={"list_lit": _commonlisp_list})

def _elisp_special_form(node: Node) -> Definition | None:
    """`(defvar name …)`, `(defconst name …)`: the keyword is an unnamed token here."""
    keyword = node.child(1)
    name = text(follow(node, ":symbol"))
    if keyword is None or keyword.type not in ("defvar", "defconst") or not name:
        return None
    return Definition("constant", (name,))


ELISP = LanguageTable(
    rules={"function_definition": Rule("function"), "macro_definition": Rule("macro")},
    leading=frozenset({"comment"}),
    custom={"list": lambda node: _lisp_form(node, "symbol"), "special_form": _elisp_special_form},
)

SCHEME = LanguageTable(rules={}, leading=frozenset({"comment", "block_comment"}),
                       custom={"list": lambda node: _lisp_form(node, "symbol")})

_ADA_SUBPROGRAM = ":procedure_specification|function_specification/name"
ADA = LanguageTable(
    rules={
        "package_declaration": Rule("namespace", "name", ".", is_type=False),
        "package_body": Rule("namespace", "name", ".", is_type=False),
        "generic_package_declaration": Rule("namespace", ":package_declaration/name", ":package_declaration",
                                            is_type=False),
        "subprogram_declaration": Rule("function", _ADA_SUBPROGRAM),
        "subprogram_body": Rule("function", _ADA_SUBPROGRAM),
        "expression_function_declaration": Rule("function", _ADA_SUBPROGRAM),
        "null_procedure_declaration": Rule("function", _ADA_SUBPROGRAM),
        "generic_subprogram_declaration": Rule("function", _ADA_SUBPROGRAM),
        "subprogram_renaming_declaration": Rule("function", _ADA_SUBPROGRAM),
        # `package Maps is new …`, `function Enumerate is new …`
        "generic_instantiation": (Rule("namespace", requires="name", keywords={"function": "function",
                                                                               "procedure": "function"}),),
        "full_type_declaration": (Rule("type", ":identifier"),
                                  Rule("type", ":task_type_declaration|protected_type_declaration/:identifier")),
        "private_type_declaration": Rule("type", ":identifier"),
        "private_extension_declaration": Rule("type", ":identifier"),
        "subtype_declaration": Rule("type", ":identifier"),
        "task_type_declaration": Rule("type", ":identifier"),
        "protected_type_declaration": Rule("type", ":identifier"),
        "task_body": Rule("type", ":identifier"),
        "protected_body": Rule("type", ":identifier"),
    },
    leading=frozenset({"comment", "pragma_g"}),
    # A package body's comment before its first declaration sits outside
    # the declarative part: walked through, it still leads.
    transparent=frozenset({"compilation_unit", "non_empty_declarative_part"}),
)

PURESCRIPT = LanguageTable(
    rules={
        # A signature and its equations are one definition, as in Haskell.
        "function": Rule("function"),
        "signature": Rule("function"),
        "foreign_import": Rule("function"),
        "data": Rule("type"),
        "newtype": Rule("type"),
        "type_alias": Rule("type"),
        "class_declaration": Rule("class", ":class_head/:class_name", ":class_body"),
        # Named by its class, as Haskell's: `instance showInt :: Show Int` is Show's.
        "class_instance": Rule("impl", ":instance_head/:class_name", "."),
    },
    leading=frozenset({"comment"}),
    joins_clauses=True,
)

ODIN = LanguageTable(
    rules={
        "procedure_declaration": Rule("function", ":identifier"),
        "overloaded_procedure_declaration": Rule("function", ":identifier"),
        "struct_declaration": Rule("struct", ":identifier"),
        "enum_declaration": Rule("enum", ":identifier"),
        "union_declaration": Rule("union", ":identifier"),
        "bit_field_declaration": Rule("struct", ":identifier"),
        "const_declaration": (Rule("type", ":identifier", requires=":distinct_type"),
                              Rule("constant", ":identifier")),
        "const_type_declaration": Rule("type", ":identifier"),
    },
    leading=frozenset({"comment", "block_comment", "attributes"}),
    # `when ODIN_OS == .Windows { … }` defines per platform; `foreign lib { … }` declares.
    transparent=frozenset({"when_statement", "else_when_clause", "else_clause", "foreign_block", "block"}),
)

# This grammar's node types are camelCase: its rows are made from pairs, so
# that no dict display reads as protocol JSON (tests/test_layers.py).
_PASCAL_TYPES = dict((("kClass", "class"), ("kObject", "class"), ("kRecord", "struct"),
                      ("kInterface", "interface"), ("kDispInterface", "interface")))


def _pascal_type(node: Node) -> Definition | None:
    """`TShape = class(TObject) … end`, `TPoint = record … end`: the type's
    keyword says its kind; its methods are declared inside it."""
    name = name_parts(text(follow(node, "name")))
    declared = follow(node, "type")
    if not name or declared is None:
        return None
    if declared.type in ("declClass", "declIntf", "declHelper"):
        keyword = next((child.type for child in declared.children if child.type in _PASCAL_TYPES), None)
        kind = _PASCAL_TYPES.get(keyword, "interface" if declared.type == "declIntf" else "class")
        return Definition(kind, name, declared)
    return Definition("enum" if follow(declared, ":declEnum") is not None else "type", name)


def _pascal_routine(node: Node) -> Definition | None:
    """`constructor TShape.Create(…) begin … end;`: a method defined outside its class."""
    name = name_parts(text(follow(node, "header/name")))
    return Definition("method" if len(name) > 1 else "function", name) if name else None


PASCAL = LanguageTable(
    rules=dict((("declProc", Rule("function")),)),
    leading=frozenset({"comment"}),
    # A unit's names are used unqualified; its sections, type blocks and a
    # class's visibility sections only group declarations.
    transparent=frozenset({"unit", "program", "library", "interface", "implementation", "declTypes",
                           "declSection"}),
    custom=dict((("declType", _pascal_type), ("defProc", _pascal_routine))),
)

def _tcl_namespace(node: Node) -> Definition | None:
    """`namespace eval ::cache { … }`: its procs are `cache.put`."""
    words = follow(node, ":word_list")
    parts = words.named_children if words is not None else []
    if len(parts) < 3 or text(parts[0]) != "eval" or parts[2].type != "braced_word":
        return None
    name = name_parts(text(parts[1]))
    return Definition("namespace", name, parts[2], False) if name else None


def _tcl_command(node: Node) -> Definition | None:
    """TclOO: `oo::class create Counter { method incr {} {…} }`."""
    command = text(follow(node, "name"))
    words = follow(node, "arguments")
    parts = words.named_children if words is not None else []
    if command in ("oo::class", "::oo::class") and len(parts) >= 2 and text(parts[0]) == "create":
        body = parts[2] if len(parts) > 2 and parts[2].type == "braced_word" else None
        name = name_parts(text(parts[1]))
        return Definition("class", name, body) if name else None
    if command == "method" and parts:
        return Definition("function", name_parts(text(parts[0])) or ("method",))
    if command in ("constructor", "destructor"):
        return Definition("function", (command,))
    return None


TCL = LanguageTable(
    rules={"procedure": Rule("function")},
    leading=frozenset({"comment"}),
    custom={"namespace": _tcl_namespace, "command": _tcl_command},
)

TABLES: dict[str, LanguageTable] = {
    "kotlin": KOTLIN, "swift": SWIFT, "csharp": CSHARP, "scala": SCALA, "elixir": ELIXIR,
    "lua": LUA, "bash": BASH, "dart": DART, "haskell": HASKELL, "ocaml": OCAML, "ocaml_interface": OCAML, "zig": ZIG,
    "julia": JULIA, "r": R, "objc": OBJC, "erlang": ERLANG, "clojure": CLOJURE,
    "sql": SQL, "terraform": HCL, "hcl": HCL, "nix": NIX, "powershell": POWERSHELL, "perl": PERL,
    "fsharp": FSHARP, "proto": PROTO, "solidity": SOLIDITY, "graphql": GRAPHQL,
    "elm": ELM, "gleam": GLEAM, "thrift": THRIFT, "fortran": FORTRAN, "d": D, "nim": NIM, "vim": VIM, "glsl": GLSL, "hlsl": HLSL, "wgsl": WGSL,
    "commonlisp": COMMONLISP, "elisp": ELISP, "scheme": SCHEME, "racket": SCHEME,
    "ada": ADA, "purescript": PURESCRIPT, "odin": ODIN, "pascal": PASCAL, "tcl": TCL,
}
