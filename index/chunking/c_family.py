"""What a C or C++ syntax node defines: functions (C++ ``A::f`` as a method),
function prototypes at file or namespace scope, macros,
structs/unions/enums/classes (by typedef name first), typedefs, namespaces
and templates."""

from __future__ import annotations

from tree_sitter import Node

from ..definition_table import C_PREPROCESSOR
from .spans import Decl, named_decl, node_text

_C_SPECIFIER_KINDS = {
    "struct_specifier": "struct",
    "union_specifier": "union",
    "enum_specifier": "enum",
    "class_specifier": "class",
}


def c_decl(node: Node) -> Decl | None:
    return _c_family_decl(node, cpp=False)


def cpp_decl(node: Node) -> Decl | None:
    node_type = node.type
    if node_type == "namespace_definition":
        name = node_text(node.child_by_field_name("name"))  # anonymous namespaces are transparent
        return Decl("namespace", tuple(name.split("::")), node.child_by_field_name("body"), False) if name else None
    if node_type == "template_declaration":
        inner = node.named_children[-1] if node.named_child_count else None
        return cpp_decl(inner) if inner is not None and inner.type != "template_parameter_list" else None
    return _c_family_decl(node, cpp=True)


def _c_family_decl(node: Node, cpp: bool) -> Decl | None:
    node_type = node.type
    if node_type == "function_definition":
        name = _c_function_name(node.child_by_field_name("declarator"))
        if not name:
            return None
        return Decl("method" if len(name) > 1 else "function", name)
    if node_type == "preproc_function_def":
        return named_decl(node, "macro")
    if node_type in _C_SPECIFIER_KINDS:
        return _c_type_decl(node, None, cpp)
    if node_type in ("type_definition", "declaration", "field_declaration"):
        # `typedef struct {…} Vec;`, `struct S {…} instance;`, a nested struct field.
        specifier = node.child_by_field_name("type")
        alias = _c_declared_name(node.child_by_field_name("declarator")) \
            if node_type == "type_definition" else None
        if specifier is not None and specifier.type in _C_SPECIFIER_KINDS:
            declared = _c_type_decl(specifier, alias, cpp)
            if declared is not None or (alias is None and specifier.child_by_field_name("body") is not None):
                return declared
        if alias:  # `typedef long long mstime_t;`, `typedef void (*handler)(int);`
            return Decl("typedef", (alias,))
        if node_type == "declaration" and _at_file_scope(node):
            return _c_prototype_decl(node.child_by_field_name("declarator"))
    if node_type == "function_declarator" and node.parent is not None and node.parent.is_error \
            and _at_file_scope(node.parent) \
            and not any(sibling.type == "compound_statement" for sibling in node.parent.named_children):
        # `void g_print (const gchar *format, ...) G_GNUC_PRINTF (1, 2);`: an
        # attribute macro after the parameters (or a macro before the type) is
        # an error the declaration's declarator is left inside, bodiless.
        return _c_prototype_decl(node)
    return None


# Where a prototype declares a function of the file or a namespace (`extern "C"
# { … }` and a namespace hold a declaration_list); in a class body it declares a
# member, which the class's own lines list.
_FILE_SCOPES = frozenset({"translation_unit", "declaration_list", "linkage_specification"})


def _at_file_scope(node: Node) -> bool:
    """Whether ``node`` is a declaration of the file or of a namespace. One
    the file holds directly starts in column 0: an indented one is a
    statement of a function whose body a syntax error cut, which the
    re-parse from the next column-0 line (spans.symbol_spans) reads as the
    file's (`Json j(Json::value_t::null);` in a test macro's body)."""
    parent = node.parent
    while parent is not None and (parent.type in C_PREPROCESSOR or parent.type == "template_declaration"):
        parent = parent.parent
    if parent is None or parent.type not in _FILE_SCOPES:
        return False
    return parent.type != "translation_unit" or node.start_point.column == 0


def _c_prototype_decl(declarator: Node | None) -> Decl | None:
    """What a declaration's ``declarator`` declares when it is a function's:
    `extern void strbuf_append(strbuf *sb, const char *fmt, ...);`, `char
    *strdup(const char *);`, a function the file declares, which a header
    that is an API surface (its .c files elsewhere or absent) never defines.
    A declaration only: dropped where the file defines the name
    (spans.symbol_spans). A pointer to a function (`int (*fp)(int);`) is a
    variable; a qualified name (`int A::f();`) redeclares a member."""
    holder = None  # the declarator right around the declared name
    while declarator is not None and (inner := _inner_declarator(declarator)) is not None:
        holder, declarator = declarator, inner
    if holder is None or declarator is None or holder.type != "function_declarator" \
            or declarator.type == "qualified_identifier":
        return None
    parameters = holder.child_by_field_name("parameters")
    if parameters is not None and node_text(parameters).replace(" ", "").startswith("(("):
        # `zlibVersion OF((void))`, `__P((int))`, `_ANSI_ARGS_((…))`: the
        # pre-ANSI prototype macro is the "function" the grammar sees, and
        # the declared name stands before it, outside the declarator.
        return None
    name = _cpp_name_parts(declarator)
    return Decl("function", name, declaration=True) if len(name) == 1 else None


def _c_declared_name(declarator: Node | None) -> str | None:
    """The name a declarator declares: `(*handler)(int)` -> handler, `name_t[16]` -> name_t."""
    while declarator is not None:
        if declarator.type in ("type_identifier", "identifier", "primitive_type"):
            return node_text(declarator) or None
        declarator = _inner_declarator(declarator)
    return None


def _inner_declarator(declarator: Node) -> Node | None:
    """The declarator ``declarator`` wraps, or None. A reference's (`& get()`,
    `&& take(…)`) and a parenthesized one have it as their only named child,
    under no field."""
    inner = declarator.child_by_field_name("declarator")
    if inner is None and declarator.type in ("reference_declarator", "parenthesized_declarator") \
            and declarator.named_child_count:
        inner = declarator.named_children[0]
    return inner


def _c_type_decl(specifier: Node, alias: str | None, cpp: bool) -> Decl | None:
    body = specifier.child_by_field_name("body")
    if body is None:  # a forward declaration or a use, not a definition
        return None
    # A typedef's name first: it is the one the code writes (`robj`, not `redisObject`).
    name = alias or node_text(specifier.child_by_field_name("name"))
    if not name:
        return None
    kind = _C_SPECIFIER_KINDS[specifier.type]
    has_members = cpp and kind != "enum"
    return Decl(kind, tuple(name.split("::")), body if has_members else None)


def _c_function_name(declarator: Node | None) -> tuple[str, ...]:
    """`*foo(int)` -> (foo,); `Shape<T>::area() const` -> (Shape, area);
    `int& Foo::get()` -> (Foo, get); `operator bool() const` -> (operator bool,)."""
    while declarator is not None and declarator.type != "operator_cast":
        inner = _inner_declarator(declarator)
        if inner is None:
            break
        declarator = inner
    return _cpp_name_parts(declarator)


def _cpp_name_parts(node: Node | None) -> tuple[str, ...]:
    """The components of a possibly qualified name, without template arguments."""
    if node is None:
        return ()
    if node.type == "qualified_identifier":
        return (*_cpp_name_parts(node.child_by_field_name("scope")), *_cpp_name_parts(node.child_by_field_name("name")))
    if node.type in ("template_type", "template_function"):
        return _cpp_name_parts(node.child_by_field_name("name"))
    if node.type == "operator_cast":  # a conversion is named by its type: `operator bool`
        converted = "".join(node_text(node.child_by_field_name("type")).split())
        return (f"operator {converted}",) if converted else ()
    name = "".join(node_text(node).split())
    return (name,) if name else ()


# Ruby
