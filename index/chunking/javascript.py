"""What a JavaScript / TypeScript syntax node defines: declarations, plus
the CommonJS, prototype, object-literal and `export default` shapes."""

from __future__ import annotations

from tree_sitter import Node

from .spans import Decl, container_decl, named_decl, node_text

_JS_FUNCTIONS = frozenset(
    {
        "function_declaration",
        "generator_function_declaration",
        "function_signature",
        "method_definition",
        "method_signature",
        "abstract_method_signature",
    }
)
_JS_FUNCTION_VALUES = frozenset({"arrow_function", "function_expression", "function", "generator_function"})
_JS_LEAF_TYPES = {"type_alias_declaration": "type", "enum_declaration": "enum"}


def js_decl(node: Node) -> Decl | None:
    node_type = node.type
    if node_type in _JS_FUNCTIONS:
        return named_decl(node, "function")
    if node_type in ("class_declaration", "abstract_class_declaration"):
        return container_decl(node, "class")
    if node_type == "interface_declaration":
        # Its method signatures are members (`PaymentGateway.charge`), as an abstract class's are.
        return container_decl(node, "interface")
    if node_type in _JS_LEAF_TYPES:
        return named_decl(node, _JS_LEAF_TYPES[node_type])
    if node_type in ("lexical_declaration", "variable_declaration"):
        return _js_variable_decl(node)
    if node_type in ("public_field_definition", "field_definition"):
        # Class fields holding arrow functions are methods in all but syntax.
        value = node.child_by_field_name("value")
        name = node.child_by_field_name("name") or node.child_by_field_name("property")
        if value is not None and value.type in _JS_FUNCTION_VALUES and name is not None:
            return Decl("function", (node_text(name),))
        return None
    if node_type == "export_statement":
        declaration = node.child_by_field_name("declaration")
        if declaration is not None:
            found = js_decl(declaration)
            if found is None and declaration.type in ("lexical_declaration", "variable_declaration"):
                found = _js_exported_constant(declaration)
            return found
        value = node.child_by_field_name("value")  # export default <expression>
        function = _js_unwrapped(value) if value is not None else None
        if function is not None and function.type in _JS_FUNCTION_VALUES:
            return Decl("function", (node_text(function.child_by_field_name("name")) or "default",))
        if value is not None and value.type == "class":
            return Decl("class", (node_text(value.child_by_field_name("name")) or "default",), value.child_by_field_name("body"))
        members = _js_object_literal(value) if value is not None else None
        # `export default { setup() {…} }` (vitest's environments): like
        # `module.exports = {…}`, its functions are the module's own.
        return Decl("namespace", (), members, is_type=False) if members is not None else None
    if node_type in ("expression_statement", "ambient_declaration"):
        # `namespace X {}` parses as an expression; `declare …` wraps a declaration.
        inner = node.named_child(0)
        return js_decl(inner) if inner is not None else None
    if node_type == "assignment_expression":
        return _js_assignment_decl(node)
    if node_type == "pair":  # `{ key: function () {…} }`, `{ key: () => … }`, a member of an object below
        key, value = node.child_by_field_name("key"), node.child_by_field_name("value")
        name = node_text(key).strip("'\"`") if key is not None else ""
        if not name or value is None:
            return None
        if value.type in _JS_FUNCTION_VALUES:
            return Decl("function", (name,))
        # `methods: { toggle() {…} }` (a Vue component's options): an object of functions.
        if value.type == "object" and any(js_decl(member) is not None for member in value.named_children):
            return Decl("object", (name,), value, is_type=False)
        return None
    if node_type in ("internal_module", "module"):
        name = node_text(node.child_by_field_name("name")).strip("'\"")
        body = node.child_by_field_name("body")
        if name.startswith(("./", "../")):
            # `declare module '../vanilla' { interface StoreMutators … }` (zustand's
            # middleware) augments a file of the project: its members are named as
            # that file names them, not after a path (`../vanilla.StoreMutators`).
            return Decl("namespace", (), body, is_type=False)
        return Decl("namespace", (name,), body, is_type=False) if name else None
    return None


# CommonJS exports name nothing of their own: `module.exports.parse = …` defines `parse`.
_JS_EXPORT_PREFIXES = (("module", "exports"), ("exports",))


def _js_object_literal(value: Node) -> Node | None:
    """The object of `{…}` or `Object.freeze({…})` (a namespace of
    functions), through the type syntax around it: `<Environment>{…}`,
    `{…} satisfies T`, `({…} as T)`, `{…} as const`."""
    for _ in range(3):
        if value.type == "object":
            return value
        if value.type == "type_assertion":
            inner = [child for child in value.named_children if child.type != "type_arguments"]
        elif value.type in ("parenthesized_expression", "as_expression", "satisfies_expression"):
            inner = value.named_children[:1]
        elif value.type == "call_expression" and node_text(value.child_by_field_name("function")) == "Object.freeze":
            arguments = value.child_by_field_name("arguments")
            inner = arguments.named_children[:1] if arguments is not None else []
        else:
            return None
        if not inner:
            return None
        value = inner[0]
    return value if value.type == "object" else None


def _js_target_parts(target: Node) -> tuple[str, ...]:
    """An assignment target's name, `prototype` and the CommonJS export
    prefix left out: `module.exports.parse` -> (parse,), `exports` -> ()."""
    parts = tuple(part for part in node_text(target).split(".") if part != "prototype")
    for prefix in _JS_EXPORT_PREFIXES:
        if parts[:len(prefix)] == prefix:
            return parts[len(prefix):]
    return parts


def _js_assignment_decl(node: Node) -> Decl | None:
    """CommonJS and prototype style: `Router.prototype.use = function use(…) {…}`
    defines `Router.use`, `exports.parse = (…) => …` defines `parse`, and
    `module.exports = {…}` holds functions as an object's members. A chained
    `res.header = res.set = function header(…)` (express's aliases) is named
    by its first target, an export by the first target that names something
    (`exports = module.exports = internals.Server = class {…}`, hapi's style,
    defines `internals.Server`)."""
    left, right = node.child_by_field_name("left"), node.child_by_field_name("right")
    targets = [left]
    while right is not None and right.type == "assignment_expression":
        targets.append(right.child_by_field_name("left"))
        right = right.child_by_field_name("right")
    if right is None or any(t is None or t.type not in ("member_expression", "identifier") for t in targets):
        return None
    named = [_js_target_parts(target) for target in targets]
    parts = next((p for p in named if p), ())
    if not parts and right.type in ("class", *_JS_FUNCTION_VALUES):
        # `module.exports = class ConfigCommentParser {…}`: named by itself.
        name = node_text(right.child_by_field_name("name"))
        if not name:
            return None
        if right.type == "class":
            return Decl("class", (name,), right.child_by_field_name("body"))
        return Decl("function", (name,))
    if not parts or not all(part.isidentifier() or part.startswith("$") for part in parts):
        members = _js_object_literal(right)
        # `module.exports = {…}`: its functions are the module's own.
        return Decl("namespace", (), members, is_type=False) if members is not None and not parts else None
    if right.type in _JS_FUNCTION_VALUES:
        return Decl("function", parts)
    if right.type == "class":
        return Decl("class", parts, right.child_by_field_name("body"))
    members = _js_object_literal(right)
    return Decl("object", parts, members) if members is not None else None


def _js_unwrapped(value: Node, depth: int = 3) -> Node:
    """The function a value wraps, or the value: `supported && function http(…) {…}`
    (axios's adapters), `(async (config) => {…})`, `memo((props) => …)`,
    `$constructor("Name", (inst, def) => {…})` (zod's schemas)."""
    while depth > 0 and value.type not in _JS_FUNCTION_VALUES:
        depth -= 1
        if value.type in ("parenthesized_expression", "binary_expression", "as_expression",
                          "satisfies_expression"):
            candidates = [value.named_children[-1]] if value.named_children else []
        elif value.type == "call_expression":
            arguments = value.child_by_field_name("arguments")
            candidates = [a for a in (arguments.named_children if arguments is not None else [])
                          if a.type in _JS_FUNCTION_VALUES or a.type == "parenthesized_expression"][-1:]
        else:
            candidates = []
        if not candidates:
            return value
        value = candidates[0]
    return value


def _js_variable_decl(node: Node) -> Decl | None:
    """`const f = () => …` is a function, `const C = class {…}` a class,
    `const fixer = Object.freeze({ remove() {…} })` an object of methods."""
    for declarator in node.named_children:
        if declarator.type != "variable_declarator":
            continue
        name = declarator.child_by_field_name("name")
        value = declarator.child_by_field_name("value")
        if name is None or value is None or name.type != "identifier":
            continue
        if _js_unwrapped(value).type in _JS_FUNCTION_VALUES:
            return Decl("function", (node_text(name),))
        if value.type == "class":
            return Decl("class", (node_text(name),), value.child_by_field_name("body"))
        members = _js_object_literal(value)
        if members is not None and any(js_decl(member) is not None for member in members.named_children):
            return Decl("object", (node_text(name),), members)
    return None


# Values an exported constant is built from: a factory's result
# (`export const safeParse = _safeParse(ZodRealError)`, mobx's
# `export const action = createActionFactory(false)`), an alias
# (`export const router = t.router`), an instance (`new AsyncScheduler(…)`).
_JS_BUILT_VALUES = frozenset({"call_expression", "member_expression", "new_expression", "identifier",
                              "as_expression", "satisfies_expression", "await_expression"})


def _js_exported_constant(node: Node) -> Decl | None:
    """`export const NAME = <call, alias or instance>`: the module's API
    names it, so a query for NAME should find this line. Only exported ones:
    a module's private `const x = require('y')` names an import, not a
    definition. With a function type annotation it is a function."""
    for declarator in node.named_children:
        if declarator.type != "variable_declarator":
            continue
        name = declarator.child_by_field_name("name")
        value = declarator.child_by_field_name("value")
        if name is None or value is None or name.type != "identifier" or value.type not in _JS_BUILT_VALUES:
            continue
        annotation = declarator.child_by_field_name("type")
        annotated = annotation.named_child(0) if annotation is not None and annotation.named_child_count else None
        kind = "function" if annotated is not None and annotated.type == "function_type" else "constant"
        return Decl(kind, (node_text(name),))
    return None
