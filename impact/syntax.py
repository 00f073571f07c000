"""What the impact analysis knows about syntax, per language family: which
nodes are calls, member accesses, decorators, declarations and (re)binding
positions; a parsed file with its import bindings; and column conversions.

Families: ``python``; ``js`` (JavaScript, TypeScript, TSX); ``go``; and
``generic`` for the other tree-sitter languages of the index, where an
occurrence is still told apart from comments, strings and declarations but
is never tied to a definition (its callers stay unconfirmed).

Positions: tree-sitter works in (row, byte column); the protocol in (line,
UTF-16 column), the LSP default. :class:`SourceFile` converts between them.
"""

from __future__ import annotations

import ast
import itertools
import re
import threading
from collections import OrderedDict
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass, field, replace
from functools import cached_property

from tree_sitter import Node, Query, QueryCursor, Tree
from tree_sitter_language_pack import get_language

from ctxls.index.definition_table import TABLES, LanguageTable, follow
from ctxls.index.definition_table import classify as classify_definition
from ctxls.index.languages import (COMPONENT_LANGUAGES, NOTEBOOK_LANGUAGE, hazard, language_for_path,
                                   notebook_view, parse_source, parse_view, parser_for, script_view)
from ctxls.index.test_scopes import has_inline_tests, is_test_item_head

from .ripgrep import word_pattern


@dataclass(frozen=True)
class Family:
    name: str
    calls: Mapping[str, str]  # call node type -> field holding the callee
    members: Mapping[str, tuple[str, str]]  # member access -> (receiver field, name field)
    decorators: frozenset[str]
    declarations: frozenset[str]  # node types whose `name` field declares that name
    # (parent type, field) whose identifiers are bound or rebound, not used;
    # "" is a child without a field name.
    bindings: frozenset[tuple[str, str]]
    patterns: frozenset[str]  # destructuring nodes between a binding position and its names
    classes: frozenset[str]  # class-like nodes with a `name` field
    imports: frozenset[str]  # statements inside which a name is imported or re-exported
    decisions: frozenset[str]  # each one adds 1 to the complexity figure
    boolean_operators: frozenset[str]  # binary operators that are decision points too
    self_names: frozenset[str]  # identifiers meaning "this object" (Python convention)
    functions: frozenset[str] = frozenset()  # scopes of local variables
    # Scopes of their own `for` clauses' variables (Python 3 comprehensions).
    comprehensions: frozenset[str] = frozenset()
    # Binding positions that make no variable of the scope: a keyword
    # argument's or an object literal's key, a label, a member's name.
    non_variables: frozenset[tuple[str, str]] = frozenset()
    # Binding positions that assign a variable declared elsewhere, never
    # declaring one (JS and Go assignments; a Python assignment declares).
    rebindings: frozenset[tuple[str, str]] = frozenset()
    literals: frozenset[str] = frozenset()  # expressions making builtin values (dict, list, str...)
    # The languages of index/definition_table.py: call node type -> paths
    # (definition_table.follow) to the name it calls, tried in order
    # (`restock` of Kotlin's `inventory.restock(…)`); and the table that says
    # which nodes are definitions (so a definition's own name is no use of it).
    called_names: Mapping[str, tuple[str, ...]] = field(default_factory=dict)
    definitions: LanguageTable | None = None


PYTHON = Family(
    name="python",
    calls={"call": "function"},
    members={"attribute": ("object", "attribute")},
    decorators=frozenset({"decorator"}),
    declarations=frozenset({"function_definition", "class_definition"}),
    bindings=frozenset({
        ("assignment", "left"), ("augmented_assignment", "left"), ("for_statement", "left"),
        ("for_in_clause", "left"), ("named_expression", "name"), ("keyword_argument", "name"),
        ("default_parameter", "name"), ("typed_default_parameter", "name"),
        ("typed_parameter", ""), ("parameters", ""), ("lambda_parameters", ""),
        ("as_pattern", "alias"), ("global_statement", ""), ("nonlocal_statement", ""),
    }),
    patterns=frozenset({"pattern_list", "tuple_pattern", "list_pattern", "as_pattern_target",
                        "list_splat_pattern", "dictionary_splat_pattern"}),
    classes=frozenset({"class_definition"}),
    imports=frozenset({"import_statement", "import_from_statement", "future_import_statement"}),
    decisions=frozenset({"if_statement", "elif_clause", "for_statement", "while_statement",
                         "except_clause", "conditional_expression", "for_in_clause", "if_clause",
                         "case_clause", "boolean_operator"}),
    boolean_operators=frozenset(),
    self_names=frozenset({"self", "cls"}),
    functions=frozenset({"function_definition", "lambda"}),
    comprehensions=frozenset({"list_comprehension", "set_comprehension", "dictionary_comprehension",
                              "generator_expression"}),
    non_variables=frozenset({("keyword_argument", "name")}),
    literals=frozenset({"dictionary", "dictionary_comprehension", "list", "list_comprehension", "set",
                        "set_comprehension", "tuple", "string", "concatenated_string", "integer",
                        "float", "true", "false", "binary_operator"}),
)

JS = Family(
    name="js",
    calls={"call_expression": "function", "new_expression": "constructor"},
    members={"member_expression": ("object", "property")},
    decorators=frozenset({"decorator"}),
    declarations=frozenset({
        "function_declaration", "generator_function_declaration", "function_expression",
        "function", "class_declaration", "abstract_class_declaration", "class",
        "method_definition", "method_signature", "abstract_method_signature",
        "function_signature", "interface_declaration", "type_alias_declaration",
        "enum_declaration", "variable_declarator", "public_field_definition",
        "property_signature", "internal_module", "module",
    }),
    bindings=frozenset({
        ("variable_declarator", "name"), ("assignment_expression", "left"),
        ("augmented_assignment_expression", "left"), ("for_in_statement", "left"),
        ("required_parameter", "pattern"), ("optional_parameter", "pattern"),
        ("formal_parameters", ""), ("arrow_function", "parameter"), ("pair", "key"),
        ("pair_pattern", "key"), ("catch_clause", "parameter"), ("field_definition", "property"),
        ("labeled_statement", "label"),
    }),
    patterns=frozenset({"object_pattern", "array_pattern", "pair_pattern", "assignment_pattern",
                        "rest_pattern"}),
    classes=frozenset({"class_declaration", "abstract_class_declaration", "class"}),
    imports=frozenset({"import_statement", "import_require_clause", "export_clause"}),
    decisions=frozenset({"if_statement", "for_statement", "for_in_statement", "while_statement",
                         "do_statement", "catch_clause", "ternary_expression", "switch_case"}),
    boolean_operators=frozenset({"&&", "||", "??"}),
    self_names=frozenset(),
    functions=frozenset({"function_declaration", "generator_function_declaration",
                         "function_expression", "function", "arrow_function", "method_definition"}),
    non_variables=frozenset({("pair", "key"), ("pair_pattern", "key"), ("field_definition", "property"),
                             ("labeled_statement", "label"), ("method_definition", "name"),
                             ("public_field_definition", "name"), ("method_signature", "name"),
                             ("abstract_method_signature", "name"), ("property_signature", "name")}),
    rebindings=frozenset({("assignment_expression", "left"), ("augmented_assignment_expression", "left")}),
    literals=frozenset({"object", "array", "string", "template_string", "number", "true", "false",
                        "regex"}),
)

GO = Family(
    name="go",
    # `F[T](x)` of a generic function reads as a conversion to a generic type.
    calls={"call_expression": "function", "type_conversion_expression": "type"},
    members={"selector_expression": ("operand", "field"), "qualified_type": ("package", "name")},
    decorators=frozenset(),
    declarations=frozenset({
        "function_declaration", "method_declaration", "type_spec", "type_alias", "const_spec",
        "var_spec", "field_declaration", "method_elem", "method_spec", "parameter_declaration",
        "variadic_parameter_declaration",
    }),
    bindings=frozenset({("short_var_declaration", "left"), ("assignment_statement", "left"),
                        ("range_clause", "left"), ("keyed_element", "key"),
                        ("labeled_statement", "label")}),
    patterns=frozenset({"expression_list", "literal_element"}),
    classes=frozenset(),
    imports=frozenset({"import_declaration"}),
    decisions=frozenset({"if_statement", "for_statement", "expression_case", "type_case",
                         "communication_case"}),
    boolean_operators=frozenset({"&&", "||"}),
    self_names=frozenset(),
    functions=frozenset({"function_declaration", "method_declaration", "func_literal"}),
    non_variables=frozenset({("keyed_element", "key"), ("labeled_statement", "label"),
                             ("field_declaration", "name"), ("method_elem", "name"), ("method_spec", "name")}),
    rebindings=frozenset({("assignment_statement", "left")}),
    literals=frozenset({"interpreted_string_literal", "raw_string_literal", "int_literal",
                        "float_literal", "true", "false"}),
)

GENERIC = Family(
    name="generic",
    calls={"call_expression": "function", "method_invocation": "name",
           "function_call_expression": "function", "member_call_expression": "name",
           "scoped_call_expression": "name", "invocation_expression": "function",
           "macro_invocation": "macro", "object_creation_expression": "type", "call": "method"},
    # Java's method_invocation, PHP's member_call_expression and Ruby's call
    # hold the receiver and the name themselves: they are calls above.
    members={"field_expression": ("value", "field"), "field_access": ("object", "field"),
             "scoped_identifier": ("path", "name"), "qualified_identifier": ("scope", "name")},
    decorators=frozenset({"decorator", "annotation", "marker_annotation", "attribute_item"}),
    declarations=frozenset({
        "function_item", "struct_item", "enum_item", "trait_item", "mod_item", "type_item",
        "union_item", "macro_definition", "function_signature_item", "method_declaration",
        "constructor_declaration", "class_declaration", "interface_declaration",
        "enum_declaration", "record_declaration", "function_definition", "class", "module",
        "method", "singleton_method", "class_specifier", "struct_specifier", "union_specifier",
        "enum_specifier", "namespace_definition", "preproc_function_def", "trait_declaration",
    }),
    bindings=frozenset({("function_declarator", "declarator"), ("let_declaration", "pattern"),
                        ("variable_declarator", "name"), ("init_declarator", "declarator"),
                        ("parameter", "pattern"), ("formal_parameter", "name"),
                        ("assignment", "left"), ("assignment_expression", "left")}),
    patterns=frozenset({"tuple_pattern", "pointer_declarator", "reference_declarator"}),
    classes=frozenset({"class_declaration", "class_specifier", "struct_item", "impl_item",
                       "class", "struct_specifier", "trait_item", "interface_declaration"}),
    # Kotlin's `import_header`, C#'s `using_directive` too.
    imports=frozenset({"use_declaration", "import_declaration", "preproc_include",
                       "namespace_use_declaration", "import_header", "using_directive"}),
    decisions=frozenset({
        "if_statement", "if_expression", "for_statement", "for_expression", "while_statement",
        "while_expression", "do_statement", "catch_clause", "match_arm", "conditional_expression",
        "ternary_expression", "enhanced_for_statement", "switch_label", "case_statement",
        "if", "elsif", "unless", "while", "until", "for", "when", "rescue", "if_let_expression",
        "else_if_clause", "loop_expression",
    }),
    boolean_operators=frozenset({"&&", "||"}),
    self_names=frozenset(),
)


def _table_family(language: str, calls: Mapping[str, tuple[str, ...]],
                  decisions: frozenset[str] = frozenset()) -> Family:
    """A generic family whose calls are read by paths: its call sites are
    told apart from other uses; a bare call of a function its own file
    defines is confirmed (see Resolver.match), others stay unconfirmed."""
    return replace(GENERIC, called_names=calls, definitions=TABLES[language],
                   decisions=GENERIC.decisions | decisions)


_TABLE_FAMILIES = {
    "kotlin": _table_family("kotlin", {"call_expression": (
        "0=simple_identifier", "0=navigation_expression/:navigation_suffix/0=simple_identifier")},
        frozenset({"when_entry", "if_expression", "elvis_expression", "catch_block"})),
    "swift": _table_family("swift", {"call_expression": (
        "0=simple_identifier", "0=navigation_expression/suffix/suffix=simple_identifier")},
        frozenset({"guard_statement", "switch_entry", "catch_block", "ternary_expression"})),
    "csharp": _table_family("csharp", {"invocation_expression": (
        "function=identifier", "function=member_access_expression/name=identifier",
        "function=generic_name/0"), "object_creation_expression": ("type=identifier",)},
        frozenset({"switch_section", "catch_clause", "conditional_expression", "foreach_statement"})),
    "scala": _table_family("scala", {"call_expression": (
        "function=identifier", "function=field_expression/field=identifier")},
        frozenset({"case_clause", "if_expression", "catch_clause"})),
    "elixir": _table_family("elixir", {"call": ("target=identifier", "target=dot/right=identifier")},
                            frozenset({"stab_clause"})),
    "lua": _table_family("lua", {"function_call": (
        "name=identifier", "name=dot_index_expression/field=identifier",
        "name=method_index_expression/method=identifier")},
        frozenset({"elseif_statement", "repeat_statement", "for_statement"})),
    "bash": _table_family("bash", {"command": ("name/0=word",)},
                          frozenset({"elif_clause", "case_item", "c_style_for_statement"})),
    # An operator is called infix (`a <+> b`, ``a `near` b``) or by its name in parentheses (`(<+>) a b`).
    "haskell": _table_family("haskell", {"apply": ("function=variable", "function=qualified/id=variable",
                                                   "function=prefix_id/0=operator"),
                                         "infix": ("operator=operator", "operator=infix_id/0=variable")},
                             frozenset({"alternative", "guards"})),
    "ocaml": _table_family("ocaml", {"application_expression": ("function=value_path/:value_name",)},
                           frozenset({"match_case", "if_expression"})),
    "julia": _table_family("julia", {"call_expression": ("0=identifier",)},
                           frozenset({"elseif_clause", "ternary_expression"})),
    "r": _table_family("r", {"call": ("function=identifier", "function=namespace_operator/rhs=identifier")},
                       frozenset({"if_statement", "for_statement", "while_statement"})),
    "objc": _table_family("objc", {"call_expression": ("function=identifier",),
                                   "message_expression": ("method=identifier",)}),
    "erlang": _table_family("erlang", {"call": ("expr=atom", "expr=remote/fun=atom")},
                            frozenset({"cr_clause", "if_clause", "catch_clause"})),
    "clojure": _table_family("clojure", {"list_lit": ("0=sym_lit/:sym_name",),
                                         "anon_fn_lit": ("0=sym_lit/:sym_name",)}),
    # A call is the arguments after a name: Dart's `selector` holding an
    # `argument_part` (beside the name, not above it), Zig's `FnCallArguments`.
    "dart": _table_family("dart", {"selector": (
        "0=argument_part/^/<=identifier",
        "0=argument_part/^/<=selector/0=unconditional_assignable_selector/0=identifier")},
        frozenset({"if_element", "conditional_expression", "switch_statement_case"})),
    "zig": _table_family("zig", {"SuffixExpr": ("1=FnCallArguments/<=IDENTIFIER",),
                                 "FieldOrFnCall": ("1=FnCallArguments/<=IDENTIFIER",)}),
}

_FAMILY_BY_LANGUAGE = {"python": PYTHON, "javascript": JS, "typescript": JS, "tsx": JS, "go": GO,
                       "vue": JS, "svelte": JS, **_TABLE_FAMILIES}
# Languages the index parses with tree-sitter (Markdown is chunked by lines).
_PARSED_LANGUAGES = frozenset({"python", "javascript", "typescript", "tsx", "go", "rust", "java",
                               "c", "cpp", "ruby", "php", *_FAMILY_BY_LANGUAGE})


def family_for(language: str | None) -> Family | None:
    if language not in _PARSED_LANGUAGES:
        return None
    return _FAMILY_BY_LANGUAGE.get(language, GENERIC)


# -- node helpers ---------------------------------------------------------------


def text_of(node: Node | None) -> str:
    return (node.text or b"").decode("utf-8", "replace") if node is not None else ""


# What names a thing in the table languages' grammars, besides *identifier:
# shell's `word`, Haskell's `variable` and `operator` (`<+>` of `a <+> b`),
# OCaml's `value_name`, Erlang's `atom`, Clojure's `sym_name`, Zig's `IDENTIFIER`.
_NAME_NODES = frozenset({"constant", "name", "word", "variable", "operator", "value_name", "atom", "sym_name",
                         "IDENTIFIER"})


def is_identifier(node: Node) -> bool:
    return "identifier" in node.type or node.type in _NAME_NODES


def is_comment(node: Node) -> bool:
    return "comment" in node.type


def is_string(node: Node) -> bool:
    # Swift's text is a `line_str_text` / `multi_line_str_text`.
    return ("string" in node.type.lower() or node.type.endswith("str_text")
            or node.type in ("char_literal", "rune_literal", "heredoc_body", "regex_pattern", "escape_sequence"))


def field_of(node: Node, parents: Parents | None = None) -> str:
    """The field name under which ``node`` hangs from its parent ("" if
    none). ``parents``: as in :func:`ancestors`."""
    parent = parent_of(node, parents)
    if parent is None:
        return ""
    for index, child in enumerate(parent.children):
        if child.id == node.id:
            return parent.field_name_for_child(index) or ""
    return ""


# Ancestors looked at, at most. tree-sitter keeps no parent links: each
# ``parent`` walks down from the root, so walking up a nest costs the square
# of its depth (a method call inside 20,000 unary minuses: 3.4 s to find its
# class). Real code's deepest definitions sit far within this many levels.
MAX_ANCESTORS = 512

# A walk up this long finds a nest: its file's Parents are filled at once.
DEEP_WALK = 64
_UNSEEN = object()


class Parents(dict):
    """A file's nodes' parents (``SourceFile.parents``), as its walks up found
    them: tree-sitter finds a parent by walking down from the root, so in a
    nest N deep each lookup costs N, and each of its N call sites looking
    up its own node's and its call's parents cost N² (5,000 nested calls:
    79 s). The first walk up :data:`DEEP_WALK` long, or lookups of an
    eighth of the tree's nodes (a nest whose sites, outermost first, each
    walk a step or two), fill them for the whole tree in one pass down
    (:meth:`fill`); after it, every lookup is the dict's. ``enclosing``
    keeps :func:`enclosing`'s answers by node; ``named_at``, once filled,
    the innermost named node at each (start, end) point range (finding a
    site's node walks down from the root too: ``SourceFile.node_at``)."""

    def __init__(self, root: Node | None = None):
        super().__init__()
        self.root = root
        self.filled = False
        self.missed = 0  # parents looked up from the root
        self.enclosing: dict[frozenset[str], dict[Node, Node | None]] = {}
        self.named_at: dict[tuple[tuple[int, int], tuple[int, int]], Node] = {}

    def fill(self) -> None:
        """Every node's parent, from one walk of the tree with a cursor (which
        keeps its path: no lookup from the root)."""
        if self.filled or self.root is None:
            return
        self.filled = True
        cursor, path = self.root.walk(), []
        while True:
            node = cursor.node
            self[node] = path[-1] if path else None
            if node.is_named:  # in document order: a node after the one around it of its range
                self.named_at[(node.start_point, node.end_point)] = node
            if cursor.goto_first_child():
                path.append(node)
                continue
            while not cursor.goto_next_sibling():
                if not cursor.goto_parent():
                    return
                path.pop()


def parent_of(node: Node, parents: Parents | None = None) -> Node | None:
    """``node.parent``, through ``parents`` (its file's :attr:`SourceFile.parents`)
    when given: looked up from the root once per node and file."""
    if parents is None:
        return node.parent
    parent = parents.get(node, _UNSEEN)
    if parent is _UNSEEN and isinstance(parents, Parents) and not parents.filled and parents.root is not None:
        parents.missed += 1
        if parents.missed >= max(DEEP_WALK, parents.root.descendant_count // 8):
            parents.fill()
            parent = parents.get(node, _UNSEEN)
    if parent is _UNSEEN:
        parent = parents[node] = node.parent
    return parent


def ancestors(node: Node, parents: Parents | None = None) -> Iterator[Node]:
    """``node``'s ancestors, innermost first, at most MAX_ANCESTORS of them.
    With ``parents`` (its file's :attr:`SourceFile.parents`), each parent is
    looked up from the root once per file: a file's call sites share their
    outer ancestors, and a walk up from each of a hostile nest's sites cost
    the cube of its depth (1,500 nested calls: minutes); a walk this deep
    fills them (:class:`Parents`)."""
    current = node
    for depth in range(MAX_ANCESTORS):
        if depth == DEEP_WALK and isinstance(parents, Parents):
            parents.fill()
        parent = parent_of(current, parents)
        if parent is None:
            return
        yield parent
        current = parent


# Type arguments around a name: Rust's `f::<T>`, C++'s `f<T>`, Go's `F[T]`
# (the function an instantiation calls: node type -> the field holding it).
_INSTANTIATIONS = {"generic_function": "function", "template_function": "name", "generic_type": "type",
                   "index_expression": "operand"}


def _instantiated(node: Node) -> Node | None:
    """What an instantiation node (``_INSTANTIATIONS``) instantiates, else None."""
    field_name = _INSTANTIATIONS.get(node.type)
    return node.child_by_field_name(field_name) if field_name is not None else None


def _wraps(parent: Node, node: Node, family: Family) -> bool:
    """``parent`` is ``node`` with type arguments, or a path (``a::`` of
    C++'s ``a::B::f``) ending in ``node``: the same name, written longer."""
    inner = _instantiated(parent)
    if inner is None and parent.type in family.members:
        inner = parent.child_by_field_name(family.members[parent.type][1])
    return inner is not None and inner.id == node.id


def enclosing(node: Node, types: frozenset[str], parents: Parents | None = None) -> Node | None:
    """The innermost ancestor of ``node`` of one of ``types`` (None: none).
    With a file's :class:`Parents`, each node walked past keeps the answer,
    so a file's sites share their walks (a walk up from each of a nest's N
    sites cost N², capped at MAX_ANCESTORS each); shared, a walk costs the
    file's nesting once, so it needs no cap. Else as :func:`ancestors`."""
    if not isinstance(parents, Parents):
        return next((a for a in ancestors(node, parents) if a.type in types), None)
    known = parents.enclosing.setdefault(types, {})
    walked, current, found = [], node, None
    while True:
        if current in known:
            found = known[current]
            break
        walked.append(current)
        if len(walked) == DEEP_WALK:
            parents.fill()
        parent = parent_of(current, parents)
        if parent is None or parent.type in types:
            found = parent
            break
        current = parent
    for passed in walked:
        known[passed] = found
    return found


def member_parts(family: Family, node: Node, parents: Parents | None = None) -> tuple[Node, Node | None]:
    """(the expression ``node`` names, its receiver): for the name of a member
    access (``obj.name``, ``m::name``, C++'s ``m::name<T>``) the whole
    access and ``obj``; else ``node`` and None. ``parents``: as in :func:`ancestors`."""
    parent = parent_of(node, parents)
    if parent is not None and parent.type == "template_function" and _wraps(parent, node, family):
        grand = parent_of(parent, parents)
        if grand is not None and grand.type in family.members:
            node, parent = parent, grand  # C++'s `m::name<T>`: the path's name is `name<T>`
    if parent is not None and parent.type in family.members:
        receiver_field, name_field = family.members[parent.type]
        name = parent.child_by_field_name(name_field)
        if name is not None and name.id == node.id:
            return parent, parent.child_by_field_name(receiver_field)
    return node, None


def declares(family: Family, node: Node, parents: Parents | None = None) -> bool:
    """``node`` is the name a declaration introduces (``def f``, ``class C``);
    in Go, also the type in a method's receiver (part of the type's definition).
    ``parents``: as in :func:`ancestors`."""
    if family.definitions is not None:
        return _table_definition(family.definitions, node) is not None
    parent = parent_of(node, parents)
    if family is GO and parent is not None and node.type == "type_identifier":
        receiver = next((a for a in ancestors(node, parents) if a.type == "parameter_list"), None)
        if receiver is not None and field_of(receiver) == "receiver":
            return True
    if family is GENERIC and c_function_of(node) is not None:
        return True
    if parent is None or parent.type not in family.declarations:
        return False
    # Go's `a, b int` and `var a, b = ...` declare several names.
    return any(name.id == node.id for name in parent.children_by_field_name("name"))


def declaration_of(family: Family, name: Node) -> Node:
    """The declaration whose name ``name`` is (``declares`` said so): its
    parent, or in the table languages the definition node around it."""
    if family.definitions is not None:
        return _table_definition(family.definitions, name) or name
    return (c_function_of(name) if family is GENERIC else None) or name.parent or name


def in_inline_test(sf: SourceFile, row: int, start: int, end: int) -> bool:
    """Whether the occurrence is in test code its file holds inline (Rust's
    `#[cfg(test)] mod tests { … }` or `#[test]` function, compiled only into
    the test binary; Zig's `test` and D's `unittest` blocks): an item around
    it whose head says so, by the rule recall reads rows with
    (``test_scopes.is_test_item_head``)."""
    if not has_inline_tests(sf.language) or sf.tree is None:
        return False
    node = sf.node_at(row, start, end)
    for ancestor in ancestors(node, sf.parents) if node is not None else ():
        first_row, column = ancestor.start_point
        line = sf.lines[first_row]
        start_character = column if line.isascii() else sf.character_from_byte(first_row, column)
        # The item's name row from where the item starts; a slice, as a
        # nest's hundreds of ancestors may share one long row.
        if is_test_item_head(sf.language, line[start_character:start_character + 80]):
            return True
        attribute = ancestor.prev_named_sibling
        while attribute is not None and attribute.type == "attribute_item":
            if is_test_item_head(sf.language, text_of(attribute)):
                return True
            attribute = attribute.prev_named_sibling
    return False


# -- visibility ------------------------------------------------------------------

# The children of a declaration that say who sees it (`private`, `pub`, `static`).
_MODIFIER_NODES = frozenset({"modifiers", "modifier", "visibility_modifier", "access_modifier",
                             "storage_class_specifier"})
# Declarations of the types whose visibility their members share.
_TYPE_DECLARATIONS = frozenset({"class_declaration", "interface_declaration", "struct_declaration",
                                "record_declaration", "enum_declaration", "object_declaration",
                                "class_definition", "object_definition", "trait_definition",
                                "class_specifier", "struct_specifier", "union_specifier"})
# Rust items that take a visibility (`impl` blocks take none).
_RUST_ITEMS = frozenset({"function_item", "struct_item", "enum_item", "trait_item", "type_item",
                         "const_item", "static_item", "mod_item", "union_item", "macro_definition"})
_RUBY_VISIBILITY = frozenset({"private", "public", "protected", "module_function"})


def _modifier_words(declaration: Node) -> set[str]:
    return {word for child in declaration.children if child.type in _MODIFIER_NODES
            for word in re.findall(r"\w+", text_of(child))}


def hidden(language: str | None, declaration: Node) -> bool:
    """Whether ``declaration``'s own syntax, or that of a type around it,
    keeps it from code outside its module, file or class: Java's, Kotlin's,
    Scala's, Swift's and PHP's `private` (Kotlin's `internal`, Swift's
    `fileprivate` too), C#'s `private`/`internal` or no access modifier
    (a class's member, a top-level type; an interface's members are public),
    a Rust item without a plain `pub` (a trait's or a trait impl's method
    is the trait's), a C/C++ `static` function or one in an anonymous
    namespace, a C++ class's `private:` member, a Ruby method after
    `private` or named by `private :m`."""
    if language == "rust":
        return _rust_hidden(declaration)
    if language == "ruby":
        return _ruby_private(declaration)
    if language in ("c", "cpp", "objc", "cuda"):
        return _c_hidden(declaration)
    private = {"java": {"private"}, "kotlin": {"private", "internal"}, "scala": {"private"},
               "swift": {"private", "fileprivate"}, "php": {"private"}}.get(language or "")
    if private is None and language != "csharp":
        return False
    for node in (declaration, *(a for a in ancestors(declaration) if a.type in _TYPE_DECLARATIONS)):
        words = _modifier_words(node)
        if language != "csharp":
            if words & private:  # type: ignore[operator]
                return True
        elif "private" in words or not words & {"public", "protected"}:
            holder = node.parent.parent if node.parent is not None else None
            if holder is None or holder.type != "interface_declaration":
                return True
    return False


def _rust_hidden(declaration: Node) -> bool:
    if declaration.type not in _RUST_ITEMS:
        return False
    holder = declaration.parent.parent if declaration.parent is not None else None
    if holder is not None and (holder.type == "trait_item" or (
            holder.type == "impl_item" and holder.child_by_field_name("trait") is not None)):
        return _rust_hidden(holder) if holder.type == "trait_item" else False
    return not any(child.type == "visibility_modifier" and text_of(child) == "pub" for child in declaration.children)


def _c_hidden(declaration: Node) -> bool:
    parent = declaration.parent
    if parent is not None and parent.type == "field_declaration_list":  # a member: its access section
        access = "public" if parent.parent is not None and parent.parent.type != "class_specifier" else "private"
        for sibling in parent.children:
            if sibling.id == declaration.id:
                break
            if sibling.type == "access_specifier":
                access = text_of(sibling)
        return access == "private"
    return c_file_local(declaration)


def c_file_local(declaration: Node) -> bool:
    """A C/C++ declaration its file keeps to itself: `static` outside a
    class, or in an anonymous namespace."""
    parent = declaration.parent
    if parent is not None and parent.type == "field_declaration_list":
        return False  # a class's `static` member
    return "static" in _modifier_words(declaration) or any(
        a.type == "namespace_definition" and a.child_by_field_name("name") is None for a in ancestors(declaration))


def _ruby_private(method: Node) -> bool:
    parent = method.parent
    if parent is not None and parent.type == "argument_list" and parent.parent is not None:
        return text_of(parent.parent.child_by_field_name("method")) == "private"  # `private def m`
    if parent is None or method.type != "method":
        return False
    name = text_of(method.child_by_field_name("name"))
    private = False
    for sibling in parent.named_children:
        if sibling.type == "identifier" and text_of(sibling) in _RUBY_VISIBILITY and sibling.start_byte < method.start_byte:
            private = text_of(sibling) == "private"  # a section: the methods after it
        elif sibling.type == "call" and text_of(sibling.child_by_field_name("method")) == "private" \
                and any(text_of(argument).lstrip(":") == name for argument in
                        (sibling.child_by_field_name("arguments") or sibling).named_children):
            return True  # `private :m`
    return private


# What stands between a C/C++ function's name and its definition: `f(…)`,
# `*f(…)`, `&f(…)`, `Cls::f(…)`, `(f)(…)`.
_C_DECLARATORS = frozenset({"function_declarator", "pointer_declarator", "reference_declarator",
                            "qualified_identifier", "parenthesized_declarator"})


def c_function_of(name: Node) -> Node | None:
    """The C/C++ ``function_definition`` whose declared name ``name`` is
    (its name sits in declarators, not in a ``name`` field), or None (a
    prototype, a variable, any other use)."""
    current, through_function = name, False
    while current.parent is not None and current.parent.type in _C_DECLARATORS \
            and field_of(current) in ("declarator", "name"):
        through_function = through_function or current.parent.type == "function_declarator"
        current = current.parent
    parent = current.parent
    if through_function and parent is not None and parent.type == "function_definition" \
            and field_of(current) == "declarator":
        return parent
    return None


def _table_definition(table: LanguageTable, node: Node) -> Node | None:
    """By the definitions table: the definition around ``node`` (within a
    few levels) that it names, ``node`` being the first such word in it."""
    name = text_of(node)
    for depth, ancestor in enumerate(ancestors(node)):
        if depth > 4:
            return None
        found = classify_definition(table, ancestor)
        if found is not None:
            if not found.name or found.name[-1] != name:
                return None
            first = next((n for n in walk(ancestor) if n.type == node.type and text_of(n) == name), None)
            return ancestor if first is not None and first.id == node.id else None
    return None


def called_name(family: Family, call: Node) -> Node | None:
    """The name node a call calls: ``f`` of ``f()``, ``m`` of ``a.b.m()``."""
    if family.called_names:
        for path in family.called_names.get(call.type, ()):
            found = follow(call, path)
            if found is not None and is_identifier(found):
                return found
        return None
    callee = callee_of(family, call)
    # A path's last segment (`new` of Rust's `Square::new`, `origin` of C++'s
    # `geo::Point::origin`), without type arguments (`clamp_to` of `clamp_to<int>`).
    while callee is not None and (callee.type in family.members or callee.type in _INSTANTIATIONS):
        inner = _instantiated(callee)
        callee = inner if inner is not None else callee.child_by_field_name(family.members[callee.type][1]) \
            if callee.type in family.members else None
    return callee if callee is not None and is_identifier(callee) else None


def _calls_around(family: Family, node: Node, parents: Parents | None = None) -> Iterator[Node]:
    """The call nodes that may call ``node``: it and its first ancestors,
    and the sibling after each (Dart's arguments follow the name)."""
    # Lazily: each ancestor costs a walk down from the root (MAX_ANCESTORS).
    kinds = family.called_names or family.calls
    for depth, current in enumerate(itertools.chain((node,), ancestors(node, parents))):
        if depth > 5:
            return
        for candidate in (current, current.next_named_sibling):
            if candidate is not None and candidate.type in kinds:
                yield candidate


def is_bare_call(family: Family, name: Node) -> bool:
    """``name`` is what a call calls, written without a receiver or module
    before it: `f(x)`, `(f x)`, `f x`; not `o.f(x)`, `M.f x`, `[o f]`."""
    for call in _calls_around(family, name):
        called = called_name(family, call)
        if called is None or called.id != name.id:
            continue
        if call.start_byte > name.start_byte:  # arguments after the name: bare if right after it
            return name.next_named_sibling is not None and name.next_named_sibling.id == call.id
        before = (call.text or b"")[:name.start_byte - call.start_byte]
        return before.strip() in (b"", b"(", b"#(")
    return False


# Kotlin's scope functions whose lambda has their receiver as `this`
# (`with(ledger) { save() }`, `ledger.apply { save() }`, `ledger.run { … }`;
# not `let` and `also`, whose lambda takes it as `it`).
_KOTLIN_RECEIVER_SCOPES = frozenset({"with", "apply", "run"})


def in_kotlin_receiver_lambda(family: Family, site: Node) -> bool:
    """Whether ``site`` is in the lambda of a Kotlin scope function that
    gives it an implicit receiver: a bare call there may be that receiver's
    method, whose type is not read here."""
    for lambda_node in (a for a in ancestors(site) if a.type == "lambda_literal"):
        call = next((a for a in itertools.islice(ancestors(lambda_node), 4) if a.type == "call_expression"), None)
        called = called_name(family, call) if call is not None else None
        if called is not None and (text_of(called) == "with" or (
                text_of(called) in _KOTLIN_RECEIVER_SCOPES and call_qualifier(family, called))):
            return True  # `with(x) {…}`, `x.apply {…}`, `x.run {…}`: not a bare `run {…}`
    return False


# What a receiver is written as when it is the object or class the code is
# in (Rust's `Self::`, PHP's `$this->`, `self::`, `static::`).
SELF_RECEIVERS = frozenset({"self", "this", "Self", "$this", "static"})
# Between a receiver or path and the name after it: `.`, `::`, `->`, `?.`, `&.`, Lua's `:`.
_SEPARATOR_BEFORE_NAME = re.compile(r"\s*(?:::|\?\.|&\.|->|\.|:)\s*$")
_CALL_OPENERS = re.compile(r"^(?:new\b|#?\()\s*")  # `new C(…)`, Lisp's `(f …)`, `#(f %)`


def call_qualifier(family: Family, name: Node) -> str | None:
    """What a call of ``name`` writes before it, without the separator: its
    receiver or path (``self.items`` of ``self.items.push(v)``,
    ``System.Math`` of ``System.Math.Round(x)``, ``geo::Point`` of
    ``geo::Point::origin()``); "" for a bare call; None where ``name`` is
    not what a call calls."""
    for call in _calls_around(family, name):
        called = called_name(family, call)
        if called is None or called.id != name.id:
            continue
        if call.start_byte > name.start_byte:  # arguments before the name (Dart): nothing before it
            return ""
        before = (call.text or b"")[:name.start_byte - call.start_byte].decode("utf-8", "replace").strip()
        return _SEPARATOR_BEFORE_NAME.sub("", _CALL_OPENERS.sub("", before))
    return None


# The table languages' nodes that bind a local name: parameters (Kotlin,
# Swift, Scala, C#), lambda parameters, `val`/`var`/`let` (Kotlin's
# variable_declaration, Scala's val_definition, Swift's pattern, C#'s
# variable_declarator).
_LOCAL_BINDERS = frozenset({"parameter", "lambda_parameter", "variable_declaration", "val_definition",
                            "var_definition", "binding", "variable_declarator", "pattern"})
# Words of the node types that make a scope for the names bound in them
# (a block, a function, a lambda), unless also naming a parameter list or
# a type (`lambda_parameters`, `function_type`).
_SCOPE_WORDS = ("block", "statements", "body", "function", "lambda", "closure", "method", "constructor")
_NOT_SCOPE_WORDS = ("parameter", "type", "call", "invocation")


def table_local_binding(family: Family, site: Node, name: str) -> str | None:
    """In a table language, ``parameter`` or ``local`` when a function or
    lambda around ``site`` takes ``name`` as a parameter, or a block around
    it declares it before ``site`` (`fun f(normalize: (String) -> String) =
    normalize(s)`, `val normalize = {…}; normalize(s)`) or declares a local
    function of that name (`fun round2(x: Double) = …` in a body); None otherwise."""
    table = family.definitions
    if table is None:
        return None
    outermost = None
    for ancestor in ancestors(site):
        found = classify_definition(table, ancestor)
        if found is not None:
            if found.kind not in ("function", "method"):
                break  # a class's members are no locals
            outermost = ancestor
    for node in walk(outermost) if outermost is not None else ():
        # A local function (Kotlin's `fun` in a body, C#'s local function) is
        # its block's all through it: C# calls one declared further down.
        function = node.id != outermost.id and _declares_function(table, node, name)
        if not function:
            if node.start_byte >= site.start_byte:
                continue  # document order: bound after the site
            bound = _bound_name(node)
            if bound is None or text_of(bound) != name:
                continue
        scope = node if node.type == "lambda_expression" else next(
            (a for a in ancestors(node) if any(w in a.type for w in _SCOPE_WORDS)
             and not any(w in a.type for w in _NOT_SCOPE_WORDS)), None)
        if scope is None or not scope.start_byte <= site.start_byte < scope.end_byte:
            continue
        if function:
            return "local"  # its own body too: a recursive call is the local function's
        parameter = node.type == "lambda_expression" or "parameter" in node.type \
            or (node.parent is not None and "parameter" in node.parent.type)
        if not parameter and _declaration_holds(node, site):
            continue  # `val name = name(args)`: a local is not in scope in its own initializer
        return "parameter" if parameter else "local"
    return None


def _declares_function(table: LanguageTable, node: Node, name: str) -> bool:
    """By the definitions table, ``node`` is a function's or method's definition named ``name``."""
    found = classify_definition(table, node)
    return found is not None and found.kind in ("function", "method") and bool(found.name) \
        and found.name[-1] == name


def _declaration_holds(binder: Node, site: Node) -> bool:
    """Whether the local declaration ``binder`` belongs to (itself: Scala's
    val_definition, C#'s variable_declarator; else its parent declaration:
    Kotlin's and Swift's property_declaration) holds ``site``. A loop's
    variable is no declaration's: its body sees it."""
    declaration = binder
    if binder.parent is not None and any(w in binder.parent.type for w in ("declaration", "definition")):
        declaration = binder.parent
    return declaration.start_byte <= site.start_byte < declaration.end_byte


def is_table_binding(family: Family, node: Node) -> bool:
    """In a table language, ``node`` is the name a parameter or a local
    declaration binds (``table_local_binding``'s binders)."""
    if family.definitions is None or node.parent is None:
        return False
    bound = _bound_name(node.parent)
    return bound is not None and bound.id == node.id


def _bound_name(node: Node) -> Node | None:
    """The name a binder of ``_LOCAL_BINDERS`` binds (Scala's ``x => …``
    too), when a plain name."""
    if node.type == "lambda_expression":
        parameters = node.child_by_field_name("parameters")
        return parameters if parameters is not None and is_identifier(parameters) else None
    if node.type not in _LOCAL_BINDERS:
        return None
    for field_name in ("name", "pattern", "bound_identifier"):
        child = node.child_by_field_name(field_name)
        if child is not None:
            return child if is_identifier(child) else None
    first = node.named_child(0)
    return first if first is not None and is_identifier(first) else None


def is_bound(family: Family, expression: Node, parents: Parents | None = None) -> bool:
    """``expression`` is (re)bound here (an assignment target, a parameter, a
    keyword argument's name), not a use of what the name refers to."""
    return binding_position(family, expression, parents) is not None


def binding_position(family: Family, expression: Node, parents: Parents | None = None) -> tuple[str, str] | None:
    """The (parent type, field) of ``family.bindings`` that binds
    ``expression`` (through destructuring patterns), or None; a Python
    ``case`` pattern's capture: ``MATCH_CAPTURE``. ``parents``: as in
    :func:`ancestors`."""
    if family is PYTHON and _is_match_capture(expression, parents):
        return MATCH_CAPTURE
    node = expression
    while parent_of(node, parents) is not None:
        parent, field_name = parent_of(node, parents), field_of(node, parents)
        if (parent.type, field_name) in family.bindings:
            return parent.type, field_name
        if parent.type not in family.patterns:
            return None
        node = parent
    return None


# The binding position of a name a Python `case` pattern captures.
MATCH_CAPTURE = ("case_pattern", "")
# What holds a capture's one-name dotted_name: a pattern, a keyword
# pattern's value (`Point(x=px)`), an alternative. A class pattern's class
# and a mapping pattern's key are read, as is a dotted name (`Color.RED`).
_CAPTURE_HOLDERS = frozenset({"case_pattern", "keyword_pattern", "union_pattern"})


def _is_match_capture(name: Node, parents: Parents | None = None) -> bool:
    """``name`` is a name a Python ``case`` pattern binds: ``case x:``,
    ``{"k": x}``, ``[x, *rest]``, ``{**rest}``, ``Point(x=px)``, ``… as x``."""
    parent = parent_of(name, parents)
    if name.type != "identifier" or parent is None:
        return False
    if parent.type == "dotted_name":
        holder = parent_of(parent, parents)
        return parent.named_child_count == 1 and holder is not None and holder.type in _CAPTURE_HOLDERS
    if parent.type == "splat_pattern":
        return True
    # `case P as x`: not `with open(p) as f`, whose alias is an as_pattern_target.
    first = parent.named_child(0)
    return parent.type == "as_pattern" and first is not None and first.type == "case_pattern" \
        and first.id != name.id


def variable_position(family: Family, name: Node, parents: Parents | None = None) -> tuple[str, str] | None:
    """Where the name ``name`` binds a variable of its scope (a parameter, an
    assignment or loop target, a nested definition): that binding position;
    None for a use, or a binding that makes no variable (a keyword
    argument, an object key, a label, a member). ``parents``: as in
    :func:`ancestors`."""
    position = binding_position(family, name, parents)
    if position is None:
        parent = parent_of(name, parents)
        if parent is None or not declares(family, name, parents):
            return None
        position = (parent.type, field_of(name, parents))
    return None if position in family.non_variables else position


def class_body_binds(family: Family, site: Node, name: str, parents: Parents | None = None) -> bool:
    """Python: ``site`` is in a class body, not in a method, lambda or
    comprehension of it, and a statement of that body before the one
    holding ``site`` binds ``name`` (an assignment, a loop, a ``def``): the
    class's own name, looked up before the module's (`double =
    staticmethod(…)`, then `x = double(3)`). A class's names are no scope of
    its methods. ``parents``: as in :func:`ancestors`."""
    if family is not PYTHON:
        return False
    scopes = family.functions | family.classes | family.comprehensions
    holder = enclosing(site, scopes, parents)
    body = holder.child_by_field_name("body") if holder is not None and holder.type in family.classes else None
    if body is None:
        return False
    for statement in body.named_children:
        if statement.end_byte > site.start_byte:
            return False  # the statement holding the site, and those after it
        # A method's or a comprehension's own names are not the class's.
        for node in [statement] if statement.type in scopes else walk(statement, scopes):
            if node.type in family.declarations:
                if text_of(node.child_by_field_name("name")) == name:
                    return True
            elif node.type == "identifier" and text_of(node) == name \
                    and not _annotation_only(node) \
                    and variable_position(family, node) not in (None, ("global_statement", ""),
                                                                ("nonlocal_statement", "")):
                return True
    return False


def _annotation_only(name: Node) -> bool:
    """``name: T`` without a value: in a class body it binds nothing (a
    dataclass's or a pydantic model's field), so a later use reaches the module's."""
    parent = name.parent
    return parent is not None and parent.type == "assignment" and parent.child_by_field_name("right") is None


# Where a Python comprehension binds its own variables.
_COMPREHENSION_TARGET = ("for_in_clause", "left")


def comprehension_variable(family: Family, name: Node) -> bool:
    """``name`` is a target of a comprehension's ``for`` clause: a variable of
    the comprehension, not of the function (or module) around it."""
    return bool(family.comprehensions) and binding_position(family, name) == _COMPREHENSION_TARGET


def comprehension_binds(comprehension: Node, name: str, site: Node) -> bool:
    """Does the comprehension bind ``name`` for ``site`` inside it? Its ``for``
    clauses' targets do, except in the first iterable, which is evaluated
    in the scope around it (``[x for x in x]``)."""
    clauses = [c for c in comprehension.named_children if c.type == _COMPREHENSION_TARGET[0]]
    if not clauses:
        return False
    iterables = clauses[0].children_by_field_name("right")
    if iterables and iterables[0].start_byte <= site.start_byte < iterables[-1].end_byte:
        return False
    read_only = frozenset({"attribute", "subscript"})  # `for o.x in ...` binds no name: o is read
    for clause in clauses:
        target = clause.child_by_field_name(_COMPREHENSION_TARGET[1])
        for node in walk(target, read_only) if target is not None and target.type not in read_only else ():
            if node.type == "identifier" and text_of(node) == name:
                return True
    return False


def callee_of(family: Family, call: Node) -> Node | None:
    """The expression a call node calls (``f`` in ``f(x)``, ``o.m`` in ``o.m()``)."""
    field_name = family.calls.get(call.type)
    return call.child_by_field_name(field_name) if field_name else None


def use_kind(family: Family, expression: Node, parents: Parents | None = None) -> str:
    """How an expression that names something is used: ``call``, ``decorator``
    or ``value``. ``parents``: as in :func:`ancestors`."""
    parent = parent_of(expression, parents)
    if parent is None:
        return "value"
    if family.called_names:
        # The call's name ends the expression (`dispatch` of `router.dispatch`).
        for call in _calls_around(family, expression, parents):
            called = called_name(family, call)
            if called is not None and expression.start_byte <= called.start_byte \
                    and called.end_byte == expression.end_byte:
                return "call"
        return "value"
    if parent.type in family.decorators:
        return "decorator"
    while (outer := parent_of(parent, parents)) is not None and _wraps(parent, expression, family):
        expression, parent = parent, outer  # `m::f::<T>(…)`, `F[T](…)`
    callee = callee_of(family, parent)
    if callee is not None and callee.id == expression.id:
        grand = parent_of(parent, parents)
        if grand is not None and grand.type in family.decorators:
            return "decorator"
        return "call"
    if parent.type in ("jsx_opening_element", "jsx_self_closing_element"):
        return "call"  # rendering a component calls it
    # In a Rust macro's arguments (`println!("{}", parse(x))`) the tokens are
    # no expression: a name right before a parenthesised token tree is called.
    after = expression.next_sibling
    if parent.type == "token_tree" and after is not None and after.type == "token_tree" \
            and (after.text or b"").startswith(b"("):
        return "call"
    return "value"


def macro_body_use(line: str, start: int, end: int) -> str:
    """How a word at ``start``..``end`` of a C/C++ ``#define`` line is used
    by the macro's body (tree-sitter leaves that body as text): ``comment``
    or ``string`` when a comment or a string literal before it on the line
    is still open; ``call`` when an argument list follows it; else ``value``
    (``#define PARSER parse_num``)."""
    before = line[:start]
    body = re.sub(r'"(?:[^"\\]|\\.)*"', '""', before)  # closed string literals
    if "//" in body or body.count("/*") > body.count("*/"):
        return "comment"
    if body.count('"') % 2:
        return "string"
    return "call" if line[end:].lstrip().startswith("(") else "value"


# Ruby methods that take a method's name as a symbol and call it
# (`send(:name)`), or make a callable of it (`method(:name)`).
_RUBY_SENDS = frozenset({"send", "public_send", "__send__", "try"})
_RUBY_METHOD_OBJECTS = frozenset({"method", "public_method", "instance_method", "public_instance_method"})


def ruby_symbol_use(symbol: Node, name: str) -> str | None:
    """How a Ruby symbol ``:name`` uses the method ``name``: ``value`` as a
    block (``map(&:name)``) or a method object (``method(:name)``), ``call``
    as the name ``send(:name)`` calls; None for other symbols (hash keys,
    options, enum values)."""
    if text_of(symbol) != ":" + name or symbol.parent is None:
        return None
    parent = symbol.parent
    if parent.type == "block_argument":
        return "value"
    call = parent.parent if parent.type == "argument_list" else None
    if call is None or call.type != "call" or parent.named_children[0].id != symbol.id:
        return None
    method = text_of(call.child_by_field_name("method"))
    if method in _RUBY_SENDS:
        return "call"
    return "value" if method in _RUBY_METHOD_OBJECTS else None


# Ruby: where an identifier binds a local variable (a parameter of any
# kind, an assignment's or a loop's target, a rescued exception), and what
# starts a new scope of locals (a `def`, a class or module body).
_RUBY_BINDERS = frozenset({"method_parameters", "block_parameters", "lambda_parameters", "optional_parameter",
                           "keyword_parameter", "splat_parameter", "hash_splat_parameter", "block_parameter",
                           "destructured_parameter", "left_assignment_list", "destructured_left_assignment",
                           "rest_assignment", "exception_variable"})
_RUBY_BINDING_FIELDS = frozenset({("assignment", "left"), ("operator_assignment", "left"), ("for", "pattern")})
_RUBY_SCOPES = frozenset({"method", "singleton_method", "class", "module", "singleton_class", "program"})
# Words that name a method, not use one: `alias new old`, `undef m`, `def m`.
_RUBY_METHOD_NAMES = frozenset({"alias", "undef"})
_RUBY_DEFINITIONS = frozenset({"method", "singleton_method"})


def _ruby_binds(name: Node) -> bool:
    parent = name.parent
    return parent is not None and (parent.type in _RUBY_BINDERS
                                   or (parent.type, field_of(name)) in _RUBY_BINDING_FIELDS)


def ruby_name_use(sf: SourceFile, name: Node) -> str | None:
    """Ruby: what the bare ``identifier`` ``name`` is. ``binding``: it binds
    a local (a parameter, an assignment's or a loop's target); ``local``: a
    use of a local its scope (the ``def`` or class body around it) bound
    before it; ``call``: otherwise, a method called without parentheses
    (``log_change`` alone). None for other nodes, a call's own name (a call
    node already) and a method's name (``def m``, ``alias new old``)."""
    parent = name.parent
    if name.type != "identifier" or parent is None or parent.type in _RUBY_METHOD_NAMES \
            or (parent.type in _RUBY_DEFINITIONS and field_of(name) == "name") \
            or (parent.type == "call" and field_of(name) == "method"):
        return None
    if _ruby_binds(name):
        return "binding"
    scope = next((a for a in ancestors(name, sf.parents) if a.type in _RUBY_SCOPES), None)
    if scope is None:
        return None
    if scope.id not in sf.ruby_locals:
        first: dict[str, int] = {}  # each local's first binding, by start byte
        for node in walk(scope, _RUBY_SCOPES):
            if node.type == "identifier" and _ruby_binds(node):
                first.setdefault(text_of(node), node.start_byte)
        sf.ruby_locals[scope.id] = first
    bound = sf.ruby_locals[scope.id].get(text_of(name))
    return "local" if bound is not None and bound < name.start_byte else "call"


# A name in an import is within this many levels of its statement (Rust's
# nested `use a::{b::{c, d}}` the deepest); looking further up cost a call
# deep in a nest of parentheses thousands of walks down from the root.
IMPORT_NESTING = 32


def in_import(family: Family, node: Node, parents: Parents | None = None) -> Node | None:
    """The import (or re-export) statement around ``node``, if any.
    ``parents``: as in :func:`ancestors`."""
    for ancestor in itertools.islice(ancestors(node, parents), IMPORT_NESTING):
        if ancestor.type in family.imports:
            return ancestor
        if ancestor.type == "export_statement" and ancestor.child_by_field_name("source") is not None:
            return ancestor
        if ancestor.type in ("block", "statement_block", "function_definition", "class_body"):
            return None
    return None


def enclosing_class(family: Family, node: Node) -> tuple[str | None, Node | None]:
    """The class (Go: the method's receiver type) the code at ``node``
    belongs to: its name, and its node when it is a class node."""
    for ancestor in ancestors(node):
        if ancestor.type in family.classes:
            return text_of(ancestor.child_by_field_name("name")) or None, ancestor
        if family is GO and ancestor.type == "method_declaration":
            return go_receiver(ancestor)[1] or None, None
    return None, None


# JavaScript/TypeScript functions that bind `this` (and `super`) of their
# own: every function but an arrow function.
_JS_THIS_BINDERS = (JS.functions - {"arrow_function"}) | {"generator_function"}


def this_class(family: Family, node: Node) -> tuple[str | None, Node | None]:
    """The class whose instance ``this``/``self`` at ``node`` is: the
    enclosing class's (:func:`enclosing_class`), except in JavaScript and
    TypeScript inside a function that binds its own `this` and is no method
    of that class (a `function` expression, an object literal's method:
    `{ test() { return this.resolve(x); } }`), where it is not known."""
    if family is JS:
        for ancestor in ancestors(node):
            if ancestor.type in family.classes:
                break
            if ancestor.type in _JS_THIS_BINDERS:
                if ancestor.type != "method_definition" or ancestor.parent is None \
                        or ancestor.parent.type != "class_body":
                    return None, None
                break
    return enclosing_class(family, node)


def go_receiver(method: Node) -> tuple[str, str]:
    """(variable, type name) of a Go method's receiver: ``(s *Server)`` -> (s, Server)."""
    receivers = method.child_by_field_name("receiver")
    parameter = receivers.named_child(0) if receivers is not None else None
    if parameter is None:
        return "", ""
    named = go_named_type(parameter.child_by_field_name("type"))
    return text_of(parameter.child_by_field_name("name")), named[1] if named is not None else ""


def go_named_type(type_node: Node | None) -> tuple[str | None, str] | None:
    """(package or None, type name) of the Go named type a type node
    writes, its pointer, parentheses and type arguments aside: ``T``,
    ``*T``, ``pkg.T``, ``*pkg.T[int]`` (generic types are written with
    their arguments everywhere they are used); None for any other type
    (a slice, a map, a function, an inline struct)."""
    while type_node is not None and type_node.type in ("pointer_type", "generic_type", "parenthesized_type"):
        type_node = type_node.child_by_field_name("type") or type_node.named_child(0)
    if type_node is None:
        return None
    if type_node.type == "qualified_type":
        package, name = type_node.child_by_field_name("package"), type_node.child_by_field_name("name")
        return (text_of(package), text_of(name)) if package is not None and name is not None else None
    return (None, text_of(type_node)) if type_node.type == "type_identifier" else None


def class_bases(family: Family, class_node: Node) -> list[str]:
    """The (dotted) names a class derives from (Go: embedded types), as written."""
    bases: list[Node] = []
    if family is PYTHON:
        superclasses = class_node.child_by_field_name("superclasses")
        bases = [c for c in superclasses.named_children if c.type != "keyword_argument"] \
            if superclasses is not None else []
    elif family is JS:
        for child in class_node.named_children:
            if child.type == "extends_type_clause":  # `interface C extends Mixin`, merged into `class C`
                bases += child.named_children
            if child.type == "class_heritage":
                bases = [c.child_by_field_name("value") or c.named_child(0)
                         for c in child.named_children if c.type == "extends_clause"]
                bases += [c for c in child.named_children if c.type not in ("extends_clause",
                                                                             "implements_clause")]
    elif family is GO:  # class_node is a type_spec
        declared = class_node.child_by_field_name("type")
        fields = declared.named_child(0) if declared is not None and declared.type == "struct_type" else None
        for declaration in fields.named_children if fields is not None else []:
            if declaration.type == "field_declaration" and declaration.child_by_field_name("name") is None:
                bases.append(declaration.child_by_field_name("type"))
        if declared is not None and declared.type == "interface_type":  # `interface { Repo; Close() }`
            bases += [element.named_child(0) for element in declared.named_children
                      if element.type == "type_elem" and element.named_child_count == 1
                      and go_named_type(element.named_child(0)) is not None]  # not a constraint `~int | string`
    return _type_names(bases)


def go_interface_methods(type_spec: Node) -> set[str]:
    """The methods a Go ``type T interface { … }`` declares itself (its
    embedded interfaces are its bases: :func:`class_bases`)."""
    declared = type_spec.child_by_field_name("type")
    if declared is None or declared.type != "interface_type":
        return set()
    return {text_of(element.child_by_field_name("name")) for element in declared.named_children
            if element.type == "method_elem"}


def class_member_names(class_node: Node) -> set[str]:
    """The names a class's own body declares: its methods (decorated too),
    fields and class attributes (Python's ``x = …``, ``x: int``)."""
    body = class_node.child_by_field_name("body")
    names = set()
    for member in body.named_children if body is not None else ():
        if member.type == "decorated_definition":
            member = member.child_by_field_name("definition") or member
        elif member.type == "expression_statement" and member.named_child_count:
            member = member.named_child(0) or member
        name = member.child_by_field_name("name") or member.child_by_field_name("left") \
            or member.child_by_field_name("property")
        if name is not None and is_identifier(name):
            names.add(text_of(name))
    return names


def class_setter_names(class_node: Node) -> set[str]:
    """The properties a class's own body gives a setter, which an assignment
    to the member runs: Python's ``@name.setter def name``, JavaScript's and
    TypeScript's ``set name(v)``."""
    body = class_node.child_by_field_name("body")
    names = set()
    for member in body.named_children if body is not None else ():
        if member.type == "decorated_definition":
            definition = member.child_by_field_name("definition")
            name = text_of(definition.child_by_field_name("name")) if definition is not None else ""
            decorators = [text_of(d.named_child(0)) for d in member.named_children if d.type == "decorator"]
            if name and f"{name}.setter" in decorators:
                names.add(name)
        elif member.type == "method_definition" and any(child.type == "set" for child in member.children):
            names.add(text_of(member.child_by_field_name("name")))
    return names


def implemented_types(family: Family, declaration: Node) -> list[str]:
    """TypeScript: the interfaces a class ``implements`` or an interface
    ``extends``, as written (a call through one of them may reach the class's
    method); none in other families."""
    if family is not JS:
        return []
    clauses = [c for c in declaration.named_children if c.type == "extends_type_clause"]
    for heritage in (c for c in declaration.named_children if c.type == "class_heritage"):
        clauses += [c for c in heritage.named_children if c.type == "implements_clause"]
    return _type_names([t for clause in clauses for t in clause.named_children])


def _type_names(types: list[Node | None]) -> list[str]:
    names = []
    for node in types:
        # `pkg.Base` -> pkg.Base; `*Base`, `Base[T]`, `Base<T>` -> Base; `mixin(Base)` -> mixin
        head = re.split(r"[\[<(]", text_of(node), maxsplit=1)[0] if node is not None else ""
        parts = [part for part in re.split(r"[.*&\s]", head) if part]
        if parts:
            names.append(".".join(parts))
    return names


# What wraps a function's declaration as a statement of its block.
_DECLARATION_WRAPPERS = frozenset({"decorated_definition", "export_statement", "ambient_declaration"})
_OVERLOAD_DECORATOR = re.compile(r"@\s*(?:\w+\s*\.\s*)*overload")


def typed_signatures(family: Family, function: Node) -> list[Node]:
    """The declarations a type checker types a call of ``function`` (its first
    declaration) by: its overloads when it has some (Python's ``@overload``
    defs, TypeScript's signatures without a body), declared one after the
    other from it; else ``[function]``. The implementation under overloads
    is not one: callers see the overloads only."""
    name = text_of(function.child_by_field_name("name"))
    overloads = []
    statement = function.parent if function.parent is not None \
        and function.parent.type in _DECLARATION_WRAPPERS else function
    while statement is not None:
        if statement.type != "comment":
            declared = statement
            if statement.type in _DECLARATION_WRAPPERS:  # `@overload def`, `export function`, `declare function`
                declared = statement.child_by_field_name("definition") \
                    or statement.child_by_field_name("declaration") \
                    or next((c for c in statement.named_children if c.type == "function_signature"), None)
            if declared is None or text_of(declared.child_by_field_name("name")) != name:
                break
            if family is JS:
                overload = declared.type == "function_signature"
            else:
                overload = family is PYTHON and statement.type == "decorated_definition" and any(
                    _OVERLOAD_DECORATOR.fullmatch(text_of(d)) for d in statement.children if d.type == "decorator")
            if not overload:
                break
            overloads.append(declared)
        statement = statement.next_named_sibling
    return overloads or [function]


# The type names (besides "any" ones) whose parameter takes a literal
# argument, as a type checker reads it: Python's int also takes a bool,
# float an int (numeric promotion). None: a literal these do not read.
_LITERAL_TYPES = {
    "python": {"integer": frozenset({"int", "float", "complex"}), "float": frozenset({"float", "complex"}),
               "true": frozenset({"bool", "int", "float", "complex"}),
               "false": frozenset({"bool", "int", "float", "complex"}), "none": frozenset({"None"})},
    "js": {"string": frozenset({"string"}), "template_string": frozenset({"string"}),
           "number": frozenset({"number"}), "true": frozenset({"boolean"}), "false": frozenset({"boolean"}),
           "null": frozenset({"null"}), "undefined": frozenset({"undefined"})},
}
# Parameter types taking any value, and the builtin types a literal is or is not.
ANY_TYPES = {"python": frozenset({"Any", "typing.Any", "object"}), "js": frozenset({"any", "unknown"})}
BUILTIN_TYPES = {"python": frozenset({"int", "float", "complex", "bool", "str", "bytes", "None"}),
                 "js": frozenset({"string", "number", "boolean", "null", "undefined", "bigint", "symbol"})}


def literal_types(family: Family, node: Node) -> frozenset[str] | None:
    """The builtin types whose parameter takes the literal ``node`` (``"x"``:
    str; ``1``: int, float, complex); None for anything else."""
    if family is PYTHON and node.type == "string":
        prefix = re.match(r"[A-Za-z]*", text_of(node))
        return frozenset({"bytes"} if prefix is not None and "b" in prefix.group().lower() else {"str"})
    return _LITERAL_TYPES.get(family.name, {}).get(node.type)


_PYTHON_POSITIONAL = frozenset({"identifier", "typed_parameter", "default_parameter", "typed_default_parameter"})


def positional_parameters(family: Family, function: Node) -> list[tuple[str | None, bool]] | None:
    """(annotation text or None, required) of each parameter of ``function``
    a positional argument may bind, in order; None when one is not read so
    (``*args``, a keyword-only marker, ``**kwargs``, a rest or destructured
    parameter): how many arguments it takes is not told then."""
    parameters = function.child_by_field_name("parameters")
    if parameters is None:
        return None
    found: list[tuple[str | None, bool]] = []
    for parameter in parameters.named_children:
        if parameter.type in ("comment", "positional_separator"):
            continue
        annotation = parameter.child_by_field_name("type")
        text = text_of(annotation).strip().removeprefix(":").strip() if annotation is not None else None
        named = parameter.named_child(0) if parameter.type == "typed_parameter" else parameter
        if family is PYTHON and parameter.type in _PYTHON_POSITIONAL and named is not None \
                and named.type in ("identifier", "default_parameter", "typed_default_parameter"):
            found.append((text, parameter.type in ("identifier", "typed_parameter")))
        elif family is JS and parameter.type in ("required_parameter", "optional_parameter") \
                and getattr(parameter.child_by_field_name("pattern"), "type", None) == "identifier":
            found.append((text, parameter.type == "required_parameter"
                          and parameter.child_by_field_name("value") is None))
        else:
            return None
    return found


def parameter_names(function: Node) -> set[str]:
    """The names a function's (or lambda's) parameters bind."""
    parameters = function.child_by_field_name("parameters") or function.child_by_field_name("parameter")
    if parameters is None:
        return set()
    if is_identifier(parameters):  # JS `x => ...`
        return {text_of(parameters)}
    names = set()
    for parameter in parameters.named_children:
        # Go's `a, b int` names two in one declaration.
        nodes = [parameter] if is_identifier(parameter) else parameter.children_by_field_name("name") or [
            parameter.child_by_field_name("pattern")
            or next((c for c in parameter.named_children if is_identifier(c)), None)]
        names.update(text_of(node) for node in nodes if node is not None and is_identifier(node))
    return names


def walk(node: Node, skip: frozenset[str] = frozenset()) -> Iterator[Node]:
    """``node`` and its named descendants in document order; subtrees whose
    root type is in ``skip`` (other than ``node`` itself) are not entered."""
    stack = [node]
    while stack:
        current = stack.pop()
        yield current
        if current.id == node.id or current.type not in skip:
            stack.extend(reversed(current.named_children))


# -- import bindings ---------------------------------------------------------------


@dataclass(frozen=True)
class Binding:
    """A name an import gives a file (or, for a re-export, gives its importers).

    ``spec`` is what ``ImportResolver`` resolves (Python ``M:n`` or ``M``, a
    JS module string, a Go import path). ``imported`` is the name taken from
    that module: None for the module itself, "*" for all of its names.
    ``package``: Python ``import a.b.c``, binding ``a``; ``a.b.c.f`` is then
    looked up by its dotted path. ``function``: Python, the first and last
    rows of the innermost function holding the import, whose local the name
    is (None: a module-level import).
    """

    local: str
    spec: str
    imported: str | None
    line: int
    reexport: bool = False
    package: bool = False
    function: tuple[int, int] | None = None


_IMPORT_QUERIES = {
    "python": "(import_statement) @import (import_from_statement) @import",
    "js": """
        (import_statement) @import
        (export_statement source: (_)) @import
        (variable_declarator
          value: (call_expression function: (identifier) @function
                                  arguments: (arguments . (string) @spec))
          (#eq? @function "require")) @require
        (variable_declarator name: (object_pattern) value: (identifier)) @destructure
        (import_alias) @import
    """,
    "go": "(import_spec) @import",
}
_queries: dict[tuple[str, str], Query] = {}
_queries_lock = threading.Lock()


def _query(language: str, family: str) -> Query:
    key = (language, family)
    with _queries_lock:
        query = _queries.get(key)
        if query is None:
            source = _IMPORT_QUERIES[family]
            if language == "javascript":  # `import x = require()` is TypeScript only
                source = source.replace("(import_alias) @import", "")
            elif family == "js":
                source = source.replace("(import_alias) @import",
                                        "(import_statement (import_require_clause)) @import")
            query = _queries[key] = Query(get_language(language), source)  # type: ignore[arg-type]
        return query


def import_bindings(language: str, family: Family, tree: Tree) -> list[Binding]:
    if family.name not in _IMPORT_QUERIES:
        return []
    captures = QueryCursor(_query(language, family.name)).captures(tree.root_node)
    statements = sorted(captures.get("import", []) + captures.get("require", []),
                        key=lambda node: node.start_byte)
    bindings: list[Binding] = []
    for statement in statements:
        if family is PYTHON:
            function = next((a for a in ancestors(statement) if a.type in family.functions), None)
            rows = (function.start_point.row, function.end_point.row) if function is not None else None
            bindings.extend(replace(b, function=rows) if rows else b for b in _python_bindings(statement))
        elif family is JS:
            bindings.extend(_js_bindings(statement))
        else:
            bindings.extend(_go_bindings(statement))
    for declarator in captures.get("destructure", []):
        bindings.extend(list(_js_namespace_destructuring(declarator, bindings)))
    return bindings


def _dotted(node: Node | None) -> str:
    return "".join(text_of(node).split())


def _python_bindings(statement: Node) -> Iterator[Binding]:
    line = statement.start_point.row
    if statement.type == "import_statement":
        for name in statement.children_by_field_name("name"):
            if name.type == "aliased_import":
                yield Binding(text_of(name.child_by_field_name("alias")),
                              _dotted(name.child_by_field_name("name")), None, line)
            else:
                dotted = _dotted(name)
                yield Binding(dotted.split(".")[0], dotted, None, line, package=True)
        return
    module = _dotted(statement.child_by_field_name("module_name"))
    if any(child.type == "wildcard_import" for child in statement.children):
        yield Binding("*", module, "*", line)
        return
    for name in statement.children_by_field_name("name"):
        if name.type == "aliased_import":
            imported = _dotted(name.child_by_field_name("name"))
            local = text_of(name.child_by_field_name("alias"))
        else:
            imported = local = _dotted(name)
        yield Binding(local, f"{module}:{imported}", imported, line)


def _js_string(node: Node | None) -> str:
    return text_of(node)[1:-1] if node is not None else ""


def _js_bindings(statement: Node) -> Iterator[Binding]:
    line = statement.start_point.row
    if statement.type == "variable_declarator":  # const x = require('m')
        spec_node = statement.child_by_field_name("value")
        arguments = spec_node.child_by_field_name("arguments") if spec_node is not None else None
        spec = _js_string(arguments.named_child(0) if arguments is not None else None)
        yield from _js_pattern_bindings(statement.child_by_field_name("name"), spec, line)
        return
    source = statement.child_by_field_name("source")
    spec = _js_string(source)
    reexport = statement.type == "export_statement"
    clause_found = False
    for child in statement.named_children:
        if child.type == "import_require_clause":  # import x = require('m')
            spec = _js_string(child.child_by_field_name("source"))
            yield Binding(text_of(child.named_child(0)), spec, None, line)
            return
        if child.type == "import_clause":
            clause_found = True
            for part in child.named_children:
                if part.type == "identifier":
                    yield Binding(text_of(part), spec, "default", line)
                elif part.type == "namespace_import":
                    yield Binding(text_of(part.named_child(0)), spec, None, line)
                elif part.type == "named_imports":
                    yield from _js_specifiers(part, "import_specifier", spec, line, False)
        elif child.type == "export_clause":
            clause_found = True
            yield from _js_specifiers(child, "export_specifier", spec, line, True)
        elif child.type == "namespace_export":  # export * as ns from 'm'
            clause_found = True
            yield Binding(text_of(child.named_child(0)), spec, None, line, reexport=True)
    if reexport and not clause_found:  # export * from 'm'
        yield Binding("*", spec, "*", line, reexport=True)


def _js_specifiers(clause: Node, kind: str, spec: str, line: int, reexport: bool) -> Iterator[Binding]:
    for specifier in clause.named_children:
        if specifier.type != kind:
            continue
        name = text_of(specifier.child_by_field_name("name")).strip("'\"")
        alias = text_of(specifier.child_by_field_name("alias")).strip("'\"")
        yield Binding(alias or name, spec, name, line, reexport=reexport)


def _js_pattern_bindings(pattern: Node | None, spec: str, line: int) -> Iterator[Binding]:
    if pattern is None:
        return
    if pattern.type == "identifier":
        yield Binding(text_of(pattern), spec, None, line)
        return
    for part in pattern.named_children if pattern.type == "object_pattern" else []:
        if part.type == "shorthand_property_identifier_pattern":
            yield Binding(text_of(part), spec, text_of(part), line)
        elif part.type == "pair_pattern":
            value = part.child_by_field_name("value")
            if value is not None and value.type == "identifier":
                yield Binding(text_of(value), spec, text_of(part.child_by_field_name("key")), line)


def _js_namespace_destructuring(declarator: Node, bindings: list[Binding]) -> Iterator[Binding]:
    """``const { a, b: c } = ns`` where ``ns`` is a module object (``import *
    as ns``, ``import ns = require()``, ``const ns = require()``): a and c
    are the module's a and b, as ``const { a } = require()`` makes them;
    where ``ns`` is a default import, its default export's properties
    (``default.a``: :func:`js_default_property`)."""
    namespace = text_of(declarator.child_by_field_name("value"))
    module = next((b for b in reversed(bindings)
                   if b.local == namespace and b.imported in (None, "default") and not b.reexport), None)
    for binding in _js_pattern_bindings(declarator.child_by_field_name("name"), module.spec,
                                        declarator.start_point.row) if module is not None else ():
        # A default import's names are its default export's properties (`export default { one }`).
        yield binding if module.imported is None else replace(binding, imported=f"default.{binding.imported}")


_GO_VERSION_SEGMENT = re.compile(r"v\d+")


def _go_bindings(spec_node: Node) -> Iterator[Binding]:
    path = text_of(spec_node.child_by_field_name("path")).strip("\"`")
    name_node = spec_node.child_by_field_name("name")
    line = spec_node.start_point.row
    if name_node is not None:
        name = text_of(name_node)
        if name == ".":
            yield Binding("*", path, "*", line)
        elif name != "_":
            yield Binding(name, path, None, line)
        return
    yield Binding(go_package_name(path), path, None, line)


def go_package_name(import_path: str) -> str:
    """The name an unaliased Go import binds, by convention: the last path
    segment, skipping a major-version segment and ``.vN``/``go-`` decorations."""
    segments = [s for s in import_path.split("/") if s]
    if len(segments) > 1 and _GO_VERSION_SEGMENT.fullmatch(segments[-1]):
        segments.pop()
    last = segments[-1] if segments else import_path
    return last.split(".")[0].removeprefix("go-")


def js_default_export(tree: Tree) -> str | None:
    """The local name ``export default`` refers to (``export default f`` or
    ``export default function f``), or None."""
    for statement in tree.root_node.named_children:
        if statement.type != "export_statement" or not any(c.type == "default" for c in statement.children):
            continue
        declaration = statement.child_by_field_name("declaration")
        if declaration is not None:
            return text_of(declaration.child_by_field_name("name")) or "default"
        value = statement.child_by_field_name("value")
        if value is not None and value.type == "identifier":
            return text_of(value)
        return "default"
    return None


def js_local_export(tree: Tree, name: str) -> str | None:
    """The local name a module exports as ``name`` under another name
    through an export clause of its own (``export { impl as name }``, no
    ``from``), or None."""
    for statement in tree.root_node.named_children:
        if statement.type != "export_statement" or statement.child_by_field_name("source") is not None:
            continue
        for clause in statement.named_children:
            for specifier in clause.named_children if clause.type == "export_clause" else ():
                local = text_of(specifier.child_by_field_name("name")).strip("'\"")
                if specifier.type == "export_specifier" and local != name \
                        and text_of(specifier.child_by_field_name("alias")).strip("'\"") == name:
                    return local
    return None


def js_default_property(tree: Tree, name: str) -> str | None:
    """The local name the property ``name`` of the object a module exports
    by default holds (``export default { one, two: twoFn }``, or ``export
    default helpers`` of a top-level ``const helpers = {…}``): ``one``,
    ``twoFn``; None when that is not a name of the module."""
    exported = None
    for statement in tree.root_node.named_children:
        if statement.type == "export_statement" and any(c.type == "default" for c in statement.children):
            exported = statement.child_by_field_name("value")
    while exported is not None and exported.type in ("as_expression", "satisfies_expression",
                                                     "parenthesized_expression"):
        exported = exported.named_child(0)
    if exported is not None and exported.type == "identifier":  # a top-level `const helpers = {…}`
        declarators = [d for statement in tree.root_node.named_children
                       if statement.type in ("lexical_declaration", "variable_declaration")
                       for d in statement.named_children if d.type == "variable_declarator"
                       and text_of(d.child_by_field_name("name")) == text_of(exported)]
        exported = declarators[-1].child_by_field_name("value") if declarators else None
    for member in exported.named_children if exported is not None and exported.type == "object" else ():
        if member.type == "shorthand_property_identifier" and text_of(member) == name:
            return name
        value = member.child_by_field_name("value")
        if member.type == "pair" and text_of(member.child_by_field_name("key")).strip("'\"") == name:
            return text_of(value) if value is not None and value.type == "identifier" else None
    return None


# -- parsed files -------------------------------------------------------------------


@dataclass(frozen=True)
class Span:
    """A range in protocol units: 0-based lines, UTF-16 columns, end exclusive."""

    start_line: int
    start_character: int
    end_line: int
    end_character: int


@dataclass
class SourceFile:
    """One file's current text (its open buffer, else the disk), parsed once."""

    path: str
    text: str
    language: str | None = field(init=False)
    family: Family | None = field(init=False)
    # Each node's parent, once looked up (:func:`ancestors`).
    parents: Parents = field(init=False, default_factory=Parents, repr=False, compare=False)
    # Ruby: each scope's (node id's) locals, by the start byte of their first binding.
    ruby_locals: dict[int, dict[str, int]] = field(init=False, default_factory=dict, repr=False, compare=False)

    def __post_init__(self) -> None:
        self.language = language_for_path(self.path, self.text)
        self._parsed_text = self._read_text = self.text
        if self.language == NOTEBOOK_LANGUAGE:
            # A notebook is read as its cells, words and tree alike: rows are
            # the file's, columns the view's (the JSON's quoting is not code).
            self.language, self._parsed_text = notebook_view(self.text)
            self._read_text = self._parsed_text
        self.family = family_for(self.language)
        # A component is parsed as its <script> (every other character
        # blanked: rows and the script's columns are the file's).
        if self.language in COMPONENT_LANGUAGES:
            self.language, self._parsed_text = script_view(self.text)

    @cached_property
    def lines(self) -> list[str]:
        return self._read_text.split("\n")

    @cached_property
    def tree(self) -> Tree | None:
        """None where the language has no family, or for a text the chunk
        worker could not parse (it hung or crashed a grammar, or ran past
        the parse deadline): the file then confirms nothing, as one in an
        unparsed language."""
        if self.family is None or self.language is None or hazard(self.text) is not None:
            return None
        tree = parse_source(parser_for(self.language),
                            parse_view(self.language, self._parsed_text.encode("utf-8", "replace")))
        if tree is not None and isinstance(self.parents, Parents):
            self.parents.root = tree.root_node
        return tree

    @cached_property
    def bindings(self) -> list[Binding]:
        if self.tree is None or self.family is None or self.language is None:
            return []
        return import_bindings(self.language, self.family, self.tree)

    def star_exports(self, name: str) -> bool:
        """Whether ``from <this Python module> import *`` binds ``name``: a
        name its literal ``__all__`` lists; without ``__all__``, a name not
        starting with ``_``; with one read otherwise (built, extended,
        bound twice), any name, as it may list it."""
        declared, listed = self._dunder_all
        if not declared:
            return not name.startswith("_")
        return listed is None or name in listed

    @cached_property
    def _dunder_all(self) -> tuple[bool, frozenset[str] | None]:
        """(whether the file names ``__all__``, the strings it lists when its
        one mention is ``__all__ = [...]`` or ``(...)`` of string literals)."""
        if "__all__" not in self.text or self.tree is None:
            return False, None
        found = (self.node_at(row, start, end)
                 for row, start, end in self.occurrences("__all__", range(len(self.lines))))
        mentions = [node for node in found if node is not None and node.type == "identifier"]
        if not mentions:
            return False, None
        assignment = mentions[0].parent
        if len(mentions) > 1 or assignment is None or assignment.type != "assignment" \
                or field_of(mentions[0]) != "left":
            return True, None
        value = assignment.child_by_field_name("right")
        try:
            listed = ast.literal_eval(text_of(value)) \
                if value is not None and value.type in ("list", "tuple") else None
        except (ValueError, SyntaxError, TypeError, MemoryError, RecursionError):
            listed = None
        if not isinstance(listed, (list, tuple)) or not all(isinstance(n, str) for n in listed):
            return True, None
        return True, frozenset(listed)

    def binding(self, local: str) -> Binding | None:
        """The module-level import that binds ``local`` in this file (the last
        one wins); an import in a function binds it in that function only
        (:meth:`function_binding`)."""
        found = None
        for binding in self.bindings:
            if binding.local == local and not binding.reexport and binding.function is None:
                found = binding
        return found

    def module_bindings(self, local: str) -> list[Binding]:
        """Every module-level import that binds ``local`` (``try: from a import f
        / except ImportError: from b import f`` binds it twice)."""
        return [b for b in self.bindings if b.local == local and not b.reexport and b.function is None]

    def declares_import(self, name: Node) -> bool:
        """Whether the name node ``name`` is what a JS/TS declaration taking
        a module's names binds (``const { a } = require("m")``, ``const
        { a } = ns`` of ``import * as ns``): an import, not a variable."""
        if self.family is not JS:
            return False
        declarator = next((a for a in itertools.islice(ancestors(name, self.parents), IMPORT_NESTING)
                           if a.type == "variable_declarator"), None)
        return declarator is not None and (declarator.start_point.row, text_of(name)) \
            in self._import_declarations

    @cached_property
    def _import_declarations(self) -> frozenset[tuple[int, str]]:
        return frozenset((b.line, b.local) for b in self.bindings)

    def function_binding(self, local: str, row: int) -> Binding | None:
        """The import in a function holding ``row`` that binds ``local``
        there (Python: an import in a function makes the name its local);
        the innermost function's, the last one in it."""
        found = None
        for binding in self.bindings:
            if binding.local == local and binding.function is not None \
                    and binding.function[0] <= row <= binding.function[1] \
                    and (found is None or binding.function[0] >= found.function[0]):  # type: ignore[index]
                found = binding
        return found

    def occurrences(self, word: str, rows: Iterable[int], ignore_case: bool = False) -> list[tuple[int, int, int]]:
        """(row, start, end) of every whole-word ``word`` (in any case with
        ``ignore_case``) on the given lines."""
        pattern = word_pattern(word, ignore_case)
        found = []
        for row in rows:
            if row < len(self.lines):
                found += [(row, m.start(), m.end()) for m in pattern.finditer(self.lines[row])]
        return found

    # -- positions --

    def byte_column(self, row: int, character: int) -> int:
        return len(self.lines[row][:character].encode("utf-8", "replace"))

    def utf16_column(self, row: int, character: int) -> int:
        return len(self.lines[row][:character].encode("utf-16-le", "surrogatepass")) // 2

    def character_from_utf16(self, row: int, utf16: int) -> int:
        line = self.lines[row]
        units = 0
        for index, char in enumerate(line):
            if units >= utf16:
                return index
            units += 2 if ord(char) > 0xFFFF else 1
        return len(line)

    def character_from_byte(self, row: int, byte_column: int) -> int:
        return len(self.lines[row].encode("utf-8", "replace")[:byte_column].decode("utf-8", "replace"))

    def span(self, row: int, start: int, end: int) -> Span:
        """Span of characters ``start``..``end`` (code points) of line ``row``."""
        return Span(row, self.utf16_column(row, start), row, self.utf16_column(row, end))

    def node_span(self, node: Node) -> Span:
        start_row, start_byte = node.start_point
        end_row, end_byte = node.end_point
        return Span(start_row, self.utf16_column(start_row, self.character_from_byte(start_row, start_byte)),
                    end_row, self.utf16_column(end_row, self.character_from_byte(end_row, end_byte)))

    def node_at(self, row: int, start: int, end: int) -> Node | None:
        """The smallest named node covering characters ``start``..``end`` of line ``row``."""
        if self.tree is None or row >= len(self.lines):
            return None
        span = ((row, self.byte_column(row, start)), (row, self.byte_column(row, end)))
        found = self.parents.named_at.get(span) if isinstance(self.parents, Parents) else None
        return found if found is not None else self.tree.root_node.named_descendant_for_point_range(*span)


class SourceCache:
    """Parsed files shared by requests, keyed by path and validated by text:
    a file parses again only when its text changed. LRU, bounded by the
    characters held: a syntax tree takes about 25 times its text in memory,
    so the default (4 M characters) keeps it near 100 MB."""

    def __init__(self, max_chars: int = 4_000_000):
        self._files: OrderedDict[str, SourceFile] = OrderedDict()
        self._max_chars = max_chars
        self._chars = 0
        self._lock = threading.Lock()

    def holds(self, key: str, text: str) -> bool:
        with self._lock:
            cached = self._files.get(key)
            return cached is not None and cached.text == text

    def get(self, key: str, path: str, text: str) -> SourceFile:
        """The parsed ``text`` of ``path``; ``key`` tells workspaces apart."""
        with self._lock:
            cached = self._files.get(key)
            if cached is not None and cached.text == text:
                self._files.move_to_end(key)
                return cached
        parsed = SourceFile(path, text)
        with self._lock:
            replaced = self._files.pop(key, None)
            self._chars += len(text) - (len(replaced.text) if replaced is not None else 0)
            self._files[key] = parsed
            while self._chars > self._max_chars and len(self._files) > 1:
                _, evicted = self._files.popitem(last=False)
                self._chars -= len(evicted.text)
        return parsed
