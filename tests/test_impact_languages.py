"""Impact in the languages read by a definitions table (Java, C#, C, C++,
Kotlin, Rust, Ruby, PHP): overloads, visibility, which languages call
each other, constructors named as their class, inline Rust tests."""

from __future__ import annotations

from conftest import callers
from ctxls.impact import analysis


def test_overloads_in_one_file_are_definitions_of_their_own(make_engine):
    """Java `MemRepo()` + `MemRepo(int)` and C# `Fill(int)` + `Fill(int,
    double)` were one definition over both bodies: `this(16)` was a
    confirmed caller of the first, `Fill(n, 1.0)` a confirmed caller of
    and callee of itself, and the second's callees were lost."""
    engine = make_engine({
        "com/shop/MemRepo.java": ("package com.shop;\npublic class MemRepo {\n"
                                  "    public MemRepo() {\n        this(16);\n    }\n"  # lines 2-4
                                  "    public MemRepo(int size) {\n        validate(size);\n    }\n"  # 5-7
                                  "    static void validate(int size) {\n    }\n}\n"),
        "Shop/Cart.cs": ("namespace Shop {\n    public class Cart {\n"
                         "        public void Fill(int n) {\n            Fill(n, 1.0);\n        }\n"  # 2-4
                         "        public void Fill(int n, double price) {\n            Audit(price);\n"  # 5-6
                         "        }\n        void Audit(double p) { }\n    }\n}\n"),
    })
    java = analysis.analyze(engine, "MemRepo.MemRepo")
    assert java.definitions_matched == 2
    by_line = {a.definition.start_line: a for a in java.per_definition}
    assert {line: (a.definition.end_line, callers(a)) for line, a in by_line.items()} == {
        2: (4, set()),
        # `this(16)` in MemRepo() runs the other constructor: confirmed for it alone.
        5: (7, {("com/shop/MemRepo.java", 3, "MemRepo.MemRepo", True)})}
    assert java.definitions[0].start_line == 5
    assert [c.symbol for c in java.callees] == ["MemRepo.validate"]

    csharp = analysis.analyze(engine, "Cart.Fill")
    assert csharp.definitions_matched == 2
    # `Fill(n, 1.0)`: either overload by its name, so confirmed for neither.
    for answer in csharp.per_definition:
        assert callers(answer) == {("Shop/Cart.cs", 3, "Shop.Cart.Fill", False)}
    second = analysis.analyze(engine, path="Shop/Cart.cs", line=5, character=20)
    assert (second.definitions[0].start_line, second.definitions[0].end_line) == (5, 7)
    assert [c.symbol for c in second.callees] == ["Shop.Cart.Audit"]
    first = analysis.analyze(engine, path="Shop/Cart.cs", line=2, character=20)
    # The call in Fill(int) is the other overload's, not a recursion.
    assert [(c.symbol, [d.start_line for d in c.definitions]) for c in first.callees] == [("Shop.Cart.Fill", [5])]


def test_private_and_file_local_definitions_are_not_public(make_engine):
    """Each has one caller in its own file: risk low, and no hedge that
    callers outside the workspace are invisible. A C `static` function of
    another file is no caller or callee of this one's."""
    engine = make_engine({
        "A.java": ("public class A {\n    private static void validate(int x) {\n    }\n"
                   "    public void run() {\n        validate(1);\n    }\n}\n"),
        "Price.cs": ("public class Price {\n    static double RoundPrice(double x) { return x; }\n"
                     "    public double Total() { return RoundPrice(2.0); }\n}\n"),
        "src/lib.rs": "fn checksum(d: u8) -> u8 {\n    d\n}\npub fn verify(d: u8) -> u8 {\n    checksum(d)\n}\n",
        "buf.c": ("static void grow(int *b) {\n    b[0] += 1;\n}\n"
                  "void buf_push(int *b) {\n    grow(b);\n}\n"),
        "main.c": "static void grow(void) {\n}\nint main(void) {\n    grow();\n    return 0;\n}\n",
        "geo.cpp": "namespace {\nint clamp_value(int x) { return x; }\n}\nint scale(int x) { return clamp_value(x); }\n",
        "cart.rb": ("class Cart\n  def total\n    tally\n  end\n\n  private\n\n  def tally\n    1\n  end\nend\n"),
        "Cart.php": ("<?php\nclass Cart {\n    private function tax() { return 1; }\n"
                     "    public function total() { return $this->tax(); }\n}\n"),
        "Shop.kt": "private fun round2(x: Double) = x\nfun total() = round2(1.0)\nfun open() = 1\nfun use() = open()\n",
    })
    for symbol in ("A.validate", "Price.RoundPrice", "checksum", "clamp_value", "Cart.tally", "Cart.tax", "round2"):
        answer = analysis.analyze(engine, symbol)
        assert answer is not None and answer.confirmed + answer.unconfirmed == 1, symbol
        assert answer.risk == "low", (symbol, answer.risk, answer.hedges)
        assert not any("public or exported" in hedge for hedge in answer.hedges), symbol
    public = analysis.analyze(engine, "open")  # Kotlin's default: public, still hedged
    assert public.risk == "med" and any("public or exported" in hedge for hedge in public.hedges)
    buf = analysis.analyze(engine, "grow", "buf.c")
    assert callers(buf) == {("buf.c", 4, "buf_push", False)}  # C: by name only
    main = analysis.analyze(engine, "main", "main.c")
    assert [(c.symbol, [d.path for d in c.definitions]) for c in main.callees] == [("grow", ["main.c"])]


def test_a_call_reaches_only_definitions_of_languages_it_can_call(make_engine):
    """A Ruby script's and a PHP file's own `checksum(…)` were unconfirmed
    callers of a Rust `pub fn checksum`; a Ruby method's callees named a
    Kotlin method. Java and Kotlin share a JVM: they still call each other."""
    engine = make_engine({
        "src/lib.rs": "pub fn checksum(d: u8) -> u8 {\n    d\n}\n",
        "scripts/verify.rb": "def checksum(path)\n  path\nend\nputs checksum(ARGV[0])\n",
        "tools/verify.php": "<?php\nfunction checksum($p) { return $p; }\necho checksum($argv[1]);\n",
        "lib/builder.rb": "class Builder\n  def self.default(f)\n    f.build\n  end\nend\n",
        "app/Factory.kt": "class Factory {\n    fun build(): Int = 1\n}\n",
        "app/Main.java": "class Main {\n    void go(Factory f) {\n        f.build();\n    }\n}\n",
    })
    rust = analysis.analyze(engine, "checksum", "src/lib.rs")
    assert rust.callers == [] and rust.risk == "low"
    assert rust.mention_kinds.get("elsewhere") == 2  # counted, not dropped
    assert [c.symbol for c in analysis.analyze(engine, "Builder.default").callees] == []
    assert {(c.path, c.span.start_line) for c in analysis.analyze(engine, "Factory.build").callers} == {
        ("app/Main.java", 2)}


def test_a_java_or_csharp_constructor_is_called_by_constructions_of_its_own_class_only(make_engine):
    """With two classes `Item` (packages or namespaces a and b), `new
    Item("x")` under `import …b.Item` / `using Shop.B` was a caller of a's
    constructor and `new ….a.Item("y")` of b's; a type use (`Item i`,
    `extends Item`) was a caller of the constructor."""
    engine = make_engine({
        "com/shop/a/Item.java": "package com.shop.a;\npublic class Item {\n    public Item(String name) { }\n}\n",
        "com/shop/b/Item.java": "package com.shop.b;\npublic class Item {\n    public Item(String name) { }\n}\n",
        "com/shop/app/Main.java": ("package com.shop.app;\nimport com.shop.b.Item;\npublic class Main {\n"
                                   "    public static void main(String[] args) {\n"
                                   "        Item i = new Item(\"x\");\n"  # line 4
                                   "        Object j = new com.shop.a.Item(\"y\");\n    }\n}\n"),  # line 5
        "com/shop/app/Use.kt": "import com.shop.b.Item\n\nfun make() = Item(\"k\")\n",  # line 2: either, by name
        "cs/A.cs": "namespace Shop.A {\n    public class Item {\n        public Item(string name) { }\n    }\n}\n",
        "cs/B.cs": "namespace Shop.B;\npublic class Item {\n    public Item(string name) { }\n}\n",
        "cs/Main.cs": ("using Shop.B;\nnamespace App {\n    public class Program {\n"
                       "        public static void Main() {\n            Item i = new Item(\"x\");\n"  # line 4
                       "            var j = new Shop.A.Item(\"y\");\n        }\n    }\n}\n"),  # line 5
    })
    answers = {a.definition.path: {(c.path, c.span.start_line, c.span.start_character) for c in a.callers}
               for a in analysis.analyze(engine, "Item.Item").per_definition}
    assert answers == {
        "com/shop/a/Item.java": {("com/shop/app/Main.java", 5, 34), ("com/shop/app/Use.kt", 2, 13)},
        "com/shop/b/Item.java": {("com/shop/app/Main.java", 4, 21), ("com/shop/app/Use.kt", 2, 13)},
        "cs/A.cs": {("cs/Main.cs", 5, 31)},
        "cs/B.cs": {("cs/Main.cs", 4, 25)},
    }


def test_rust_callers_in_an_inline_cfg_test_module_are_tests(make_engine):
    """`pub fn parse_port` called only by its file's `#[cfg(test)] mod
    tests` counted as production: risk med, no "only tests" hedge."""
    engine = make_engine({
        "Cargo.toml": '[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n',
        "src/lib.rs": ("pub fn parse_port(s: &str) -> u16 {\n    s.parse().unwrap()\n}\n\n"
                       "#[cfg(test)]\nmod tests {\n    use super::*;\n\n    #[test]\n    fn parses() {\n"
                       "        assert_eq!(parse_port(\"80\"), 80);\n    }\n}\n"),
    })
    answer = analysis.analyze(engine, "parse_port")
    assert [c.span.start_line for c in answer.callers] == [10]
    assert answer.risk == "low"
    assert any(hedge.startswith("only tests call it") for hedge in answer.hedges)


def test_callers_in_zig_test_blocks_and_tokio_test_functions_are_tests(make_engine):
    """Impact read test code inline by Rust attributes of its own, narrower
    than recall's (`#[tokio::test(flavor = "multi_thread")]` was production),
    and not at all in Zig's `test "…" { … }` blocks: both callers counted as
    production, risk med."""
    engine = make_engine({
        "Cargo.toml": '[package]\nname = "x"\nversion = "0.1.0"\nedition = "2021"\n',
        "src/lib.rs": ("pub fn parse_port(s: &str) -> u16 {\n    s.parse().unwrap()\n}\n\n"
                       "#[tokio::test(flavor = \"multi_thread\")]\nasync fn parses() {\n"
                       "    assert_eq!(parse_port(\"80\"), 80);\n}\n"),
        "src/add.zig": ("const std = @import(\"std\");\n\npub fn addPorts(a: u16, b: u16) u16 {\n"
                        "    return a + b;\n}\n\ntest \"adds two ports\" {\n"
                        "    try std.testing.expect(addPorts(1, 2) == 3);\n}\n"),
    })
    for target, line in (("parse_port", 6), ("addPorts", 7)):
        answer = analysis.analyze(engine, target)
        assert [c.span.start_line for c in answer.callers] == [line], target
        assert answer.risk == "low", target
        assert any(hedge.startswith("only tests call it") for hedge in answer.hedges), target
