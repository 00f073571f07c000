"""Locate (index/locate.py): reading an issue text, resolving what it names,
ranking files on a small repository, the request through the real server and
the CLI reading stdin."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

import pytest

from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.errors import InvalidParams
from ctxls.index.locate import Locator
from ctxls.index.locate_paths import PathIndex
from ctxls.index.locate_scorer import shipped_scorer
from ctxls.index.chunking.markdown import _heading_text, markdown_sections
from ctxls.index.languages import header_language, language_for_path
from ctxls.index.locate_signals import _format_words
from ctxls.index.locate_text import prose_lines, read_issue, semantic_query, written_qualified
from ctxls.index.paths import is_test_or_doc
from ctxls.index.query import declared_name, query_shape

from conftest import serve, write_tree

SHOP_FILES = {
    "shop/__init__.py": "from shop.pricing import Discount\n",
    "shop/pricing.py": (
        "class Discount:\n"
        "    rate = 0.1\n"
        "\n"
        "    def apply(self, price):\n"
        "        if price < 0:\n"
        "            raise ValueError('price must not be negative, got %r' % price)\n"
        "        return price * (1 - self.rate)\n"
    ),
    "shop/cart.py": (
        "from shop.pricing import Discount\n"
        "\n"
        "\n"
        "class Cart:\n"
        "    def __init__(self, prices):\n"
        "        self.prices = prices\n"
        "\n"
        "    def total(self):\n"
        "        return sum(Discount().apply(p) for p in self.prices)\n"
    ),
    "shop/money.py": (
        "def format_money(amount, currency='EUR'):\n"
        "    return f'{amount:.2f} {currency}'\n"
    ),
    "tests/test_cart.py": (
        "from shop.cart import Cart\n"
        "\n"
        "\n"
        "def test_cart_total_with_discount_and_negative_price():\n"
        "    cart = Cart([10, 20])\n"
        "    assert cart.total() == 27\n"
    ),
    "docs/pricing.md": "# Pricing\n\nA Cart applies a Discount to every price in it.\n",
    "shop/settings.py": "CURRENCY = 'EUR'\nROUNDING_MODE: str = 'half-even'\n",
    "shop/rounding.py": (
        "from shop.settings import ROUNDING_MODE\n"
        "\n"
        "\n"
        "def round_price(price):\n"
        "    if ROUNDING_MODE == 'half-even':\n"
        "        return round(price, 2)\n"
        "    return price\n"
    ),
}

PYTHON_TRACEBACK = """\
Checkout crashes on a refund

Traceback (most recent call last):
  File "/home/me/app/main.py", line 3, in <module>
    print(Cart([-3]).total())
  File "/usr/lib/python3.11/site-packages/shop/cart.py", line 9, in total
    return sum(Discount().apply(p) for p in self.prices)
  File "/usr/lib/python3.11/site-packages/shop/pricing.py", line 6, in apply
    raise ValueError('price must not be negative, got %r' % price)
ValueError: price must not be negative, got -3
"""


def git_tree(root: Path, files: dict[str, str]) -> Path:
    root.mkdir()
    write_tree(root, files)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def indexed_engine(root: Path):
    """An engine over ``root``, indexed, closed after the test."""
    eng = Engine(root, EngineOptions())
    eng.cold_index()
    yield eng
    eng.close()


@pytest.fixture
def shop(tmp_path: Path) -> Path:
    return git_tree(tmp_path / "shop-repo", SHOP_FILES)


@pytest.fixture
def engine(shop: Path):
    yield from indexed_engine(shop)


# -- reading the text ---------------------------------------------------------------------------

def frame_rows(issue, short: bool = False) -> list[tuple]:
    """(path, or its file name when ``short``; line; function; depth) per frame."""
    return [(f.path.rsplit("/", 1)[-1] if short else f.path, f.line, f.function, f.depth)
            for f in issue.frames]

def test_python_traceback_frames_message_and_prose():
    issue = read_issue(PYTHON_TRACEBACK)
    assert frame_rows(issue, short=True) == [
        ("main.py", 3, "<module>", 2), ("cart.py", 9, "total", 1), ("pricing.py", 6, "apply", 0)]
    assert "price must not be negative, got -3" in issue.messages
    assert {"ValueError", "Cart", "total", "Discount", "apply"} <= set(issue.identifiers)
    # A frame's file is weighed by its depth (`frame`), not as a path the text names.
    assert issue.paths == []


def test_a_windows_traceback_names_no_paths_but_its_frames():
    text = ('Traceback (most recent call last):\n'
            '  File "C:\\app\\.venv\\Lib\\site-packages\\shop\\cart.py", line 9, in total\n'
            '    return sum(Discount().apply(p) for p in self.prices)\n'
            'ValueError: bad price\nSee also shop/money.py for the formatting.\n')
    issue = read_issue(text)
    assert [(f.path.rsplit("\\", 1)[-1], f.line) for f in issue.frames] == [("cart.py", 9)]
    assert issue.paths == ["shop/money.py"]


def test_node_java_go_and_rust_frames_innermost_first():
    node = read_issue("TypeError: x is undefined\n    at parseArgs (/srv/app/src/cli/args.js:42:13)\n"
                      "    at main (/srv/app/src/index.js:7:3)\n    at node:internal/main:1:1\n")
    assert frame_rows(node) == [
        ("/srv/app/src/cli/args.js", 42, "parseArgs", 0), ("/srv/app/src/index.js", 7, "main", 1)]
    java = read_issue("java.lang.NullPointerException\n"
                      "\tat com.acme.store.Basket.add(Basket.java:31)\n"
                      "\tat com.acme.Main.main(Main.java:12)\n")
    assert frame_rows(java) == [
        ("com/acme/store/Basket.java", 31, "add", 0), ("com/acme/Main.java", 12, "main", 1)]
    go = read_issue("panic: runtime error: index out of range [3] with length 3\n\n"
                    "goroutine 1 [running]:\n"
                    "example.com/shop/cart.(*Cart).Total(0xc000010018)\n"
                    "\t/home/me/shop/cart/cart.go:27 +0x1d\n"
                    "main.main()\n\t/home/me/shop/main.go:9 +0x25\n")
    assert [(f.path, f.line, f.depth) for f in go.frames] == [
        ("/home/me/shop/cart/cart.go", 27, 0), ("/home/me/shop/main.go", 9, 1)]
    assert go.frames[0].function == "example.com/shop/cart.(*Cart).Total"
    assert "runtime error: index out of range [3] with length 3" in go.messages
    rust = read_issue("thread 'main' panicked at src/parser.rs:88:9:\nunexpected token\n"
                      "stack backtrace:\n   0: shop::parser::Parser::next\n"
                      "             at ./src/parser.rs:88:9\n   1: shop::main\n"
                      "             at ./src/main.rs:5:5\n")
    assert [(f.path, f.line, f.depth) for f in rust.frames if f.function] == [
        ("./src/parser.rs", 88, 0), ("./src/main.rs", 5, 1)]
    assert any(f.path == "src/parser.rs" and f.function is None for f in rust.frames)


def test_dotnet_ruby_php_elixir_lua_gdb_and_swift_frames():
    dotnet = read_issue("System.NullReferenceException: Object reference not set\n"
                        "   at Shop.Orders.Cart.Add(Item item) in /src/Shop/Orders/Cart.cs:line 42\n"
                        "   at Shop.Program.Main() in C:\\src\\Shop\\Program.cs:line 9\n")
    assert frame_rows(dotnet) == [("/src/Shop/Orders/Cart.cs", 42, "Add", 0),
                                  ("C:\\src\\Shop\\Program.cs", 9, "Main", 1)]
    ruby = read_issue("NoMethodError: undefined method `total' for nil\n"
                      "  lib/shop/cart.rb:12:in `checkout'\n"
                      "  from lib/shop/app.rb:40:in 'Shop::App#call'\n")
    assert frame_rows(ruby) == [("lib/shop/cart.rb", 12, "checkout", 0), ("lib/shop/app.rb", 40, "call", 1)]
    # A PHP frame's line names what it calls: a frame is in the function the
    # next line calls (the thrown place in frame #0's), the last in none.
    php = read_issue("PHP Fatal error:  Uncaught TypeError: add() in /srv/src/Cart.php:31\nStack trace:\n"
                     "#0 /srv/src/Shop.php(120): Shop\\Cart->add()\n#1 {main}\n")
    assert frame_rows(php) == [("/srv/src/Cart.php", 31, "add", 0), ("/srv/src/Shop.php", 120, None, 0)]
    php = read_issue("Uncaught Exception: no stock in /srv/src/Stock.php:9\nStack trace:\n"
                     "#0 /srv/src/Cart.php(31): Shop\\Stock::take()\n"
                     "#1 [internal function]: Shop\\Cart->add()\n"
                     "#2 /srv/src/Shop.php(120): call_user_func()\n#3 {main}\n")
    assert frame_rows(php) == [("/srv/src/Stock.php", 9, "take", 0), ("/srv/src/Cart.php", 31, "add", 0),
                               ("/srv/src/Shop.php", 120, None, 1)]
    elixir = read_issue("** (FunctionClauseError) no function clause matching in Shop.Cart.add/2\n"
                        "    (shop 0.1.0) lib/shop/cart.ex:90: Shop.Cart.add(%{}, [])\n"
                        "    lib/shop.ex:12: Shop.run/0\n")
    assert frame_rows(elixir) == [("lib/shop/cart.ex", 90, "add", 0), ("lib/shop.ex", 12, "run", 1)]
    lua = read_issue("E5108: Error executing lua: .../lua/shop/cart.lua:34: attempt to index a nil value\n"
                     "stack traceback:\n\t.../lua/shop/cart.lua:34: in function 'total'\n")
    assert frame_rows(lua) == [(".../lua/shop/cart.lua", 34, "total", 0)]
    gdb = read_issue("Program received signal SIGSEGV.\n"
                     "#0  0x0000555555555149 in cart_total (cart=0x0) at src/cart.c:42\n"
                     "#1  main () at src/main.c:10\n")
    assert frame_rows(gdb) == [("src/cart.c", 42, "cart_total", 0), ("src/main.c", 10, "main", 1)]
    swift = read_issue("Fatal error: Unexpectedly found nil: file Sources/Shop/Cart.swift, line 42\n")
    assert frame_rows(swift) == [("Sources/Shop/Cart.swift", 42, None, 0)]
    # An issue number at a line's start is no frame: its path is still a path.
    assert "shop/cart.py" in read_issue("#1234 broke shop/cart.py when saving\n").paths


@pytest.mark.parametrize("text, message, name", [
    ('Exception in thread "main" java.lang.IllegalStateException: connection pool is closed\n',
     "connection pool is closed", "IllegalStateException"),
    ("Caused by: java.io.IOException: the socket was reset by the peer\n",
     "the socket was reset by the peer", "IOException"),
    ("Unhandled exception. System.InvalidOperationException: Sequence contains no matching element\n",
     "Sequence contains no matching element", "InvalidOperationException"),
    ("lib/shop/cart.rb:12:in `checkout': undefined method `total' for nil (NoMethodError)\n",
     "undefined method `total' for nil", "NoMethodError"),
    ("PHP Fatal error:  Uncaught InvalidArgumentException: The quantity must be positive in /srv/Cart.php:31\n",
     "The quantity must be positive", "InvalidArgumentException"),
    ("Fatal error: Uncaught Shop\\CartException: The quantity must be positive in /srv/Cart.php on line 31\n",
     "The quantity must be positive", "CartException"),
    ("** (ArgumentError) the quantity must be positive\n    lib/shop/cart.ex:90: Shop.Cart.add/2\n",
     "the quantity must be positive", "ArgumentError"),
    ("thread 'main' panicked at src/cart.rs:31:9:\nthe quantity must be positive\n",
     "the quantity must be positive", None),
    ("thread 'main' panicked at 'the quantity must be positive', src/cart.rs:31:9\n",
     "the quantity must be positive", None),
    ("Fatal error: Index out of range in the cart: file Sources/Shop/Cart.swift, line 42\n",
     "Index out of range in the cart", None),
])
def test_each_ecosystems_error_line_gives_its_message_and_type(text: str, message: str, name: str | None):
    issue = read_issue(text)
    assert message in issue.messages
    assert name is None or name in issue.identifiers


def test_a_file_name_in_any_language_read_by_definitions_is_a_path():
    issue = read_issue("Since the upgrade lib/shop/cart.ex and contracts/Token.sol fail; "
                       "see also lua/shop/init.lua, src/cart.zig and R's x.d\n")
    assert {"lib/shop/cart.ex", "contracts/Token.sol", "lua/shop/init.lua", "src/cart.zig"} <= set(issue.paths)
    assert "x.d" not in issue.paths  # a one-letter extension but C's is too often no file


@pytest.mark.parametrize("text, names", [
    ("Calling Parser::parse_expr on an empty input loops forever", {"Parser", "parse_expr"}),
    ("ActiveSupport::Cache::Store#fetch returns nil", {"Cache", "Store", "fetch"}),
    ("Shop\\Cart\\LineItem::total() is wrong", {"Cart", "LineItem", "total"}),
    ("the Cart#checkout method double charges", {"Cart", "checkout"}),
])
def test_rust_cpp_ruby_and_php_qualified_names_give_their_parts(text: str, names: set[str]):
    assert names <= set(read_issue(text).identifiers)


def test_a_windows_path_and_latex_give_no_qualified_names():
    assert read_issue("it fails in src\\shop\\cart.py on Windows").identifiers == []
    assert read_issue("the output is x\\left\\right and \\frac\\theta").identifiers == []


def test_ipython_and_pytest_frames_most_recent_call_last():
    # The tracebacks of data-science issues come from notebooks (IPython, old
    # and 8+) and from pytest; their frames are frames, not mentioned paths.
    ipython = read_issue(
        "TypeError                                 Traceback (most recent call last)\n"
        "<ipython-input-3-1e1d6b9a3f23> in <module>\n----> 1 a + b * 2.0\n\n"
        "~/venv/lib/python3.6/site-packages/shop/cart.py in __add__(self, other)\n"
        "    219         try:\n--> 220             s = Cart(other)\n    221         except TypeError:\n\n"
        "~/venv/lib/python3.6/site-packages/shop/cart.py in __new__(cls, *args)\n"
        "--> 129             raise TypeError('not a cart')\n\n"
        "TypeError: not a cart\n\n"
        "With IPython 8:\n"
        "File ~/env/lib/python3.10/site-packages/shop/pricing.py:409, in Discount.apply(self, price)\n"
        "    407 x = 1\n--> 409 return money(price)\n"
        "File ~/env/lib/python3.10/site-packages/shop/money.py:25, in money(value)\n"
        "ValueError: bad\n\n"
        "An import, with a module's top level:\n"
        "Cell In[2], line 1\n----> 1 import shop\n\n"
        "File ~/env/lib/python3.10/site-packages/shop/__init__.py:3\n"
        "      1 from .money import format_money\n----> 3 from .cart import Cart\n\n"
        "File ~/env/lib/python3.10/site-packages/shop/cart.py:9, in Cart.total(self)\n"
        "ImportError: cannot import name Cart\n")
    assert frame_rows(ipython, short=True) == [
        ("cart.py", 220, "__add__", 1), ("cart.py", 129, "__new__", 0),
        ("pricing.py", 409, "apply", 1), ("money.py", 25, "money", 0),
        ("__init__.py", 3, None, 1), ("cart.py", 9, "total", 0)]
    pytest_run = read_issue("shop/cart.py:124: in total\n    return sum(prices)\n"
                            "shop/pricing.py:6: in apply\n    raise ValueError(price)\n"
                            "E   ValueError: -3\n")
    assert frame_rows(pytest_run) == [
        ("shop/cart.py", 124, "total", 1), ("shop/pricing.py", 6, "apply", 0)]
    assert ipython.paths == [] and pytest_run.paths == []


def test_code_blocks_identifiers_paths_and_modules():
    issue = read_issue("QuerySet.bulk_update() ignores `batch_size` in django/db/models/query.py.\n"
                       "```python\nfrom django.db.models import Q, F\n"
                       "Book.objects.filter(Q(title__startswith='A'))\n```\n"
                       ">>> get_user_model().objects.count()\n"
                       "The docs say \"a plain queryset is returned here\".\n")
    assert issue.code[0].startswith("from django.db.models import Q, F")
    assert "get_user_model().objects.count()" in issue.code[1]
    assert "django/db/models/query.py" in issue.paths
    assert "django.db.models" in issue.modules
    assert ("django.db.models", "Q") in issue.imported
    assert {"QuerySet.bulk_update", "batch_size", "Q", "get_user_model", "Book.objects.filter"} \
        <= set(issue.identifiers)
    assert "a plain queryset is returned here" in issue.messages
    assert "```" not in issue.prose and ">>>" not in issue.prose


def test_a_message_built_from_parts_is_looked_for_part_by_part():
    issue = read_issue("shop.errors.BadPrice: invalid price -3: must not be negative, got -3\n")
    assert {"invalid price -3", "must not be negative, got -3"} <= set(issue.messages)
    assert "BadPrice" in issue.identifiers


def test_names_in_the_title_or_repeated_weigh_more():
    issue = read_issue("Cart.total() is wrong\n\nIt calls format_money, then apply, apply and apply.")
    assert issue.title == "Cart.total() is wrong"
    assert issue.prominence("total") == 1.0
    assert issue.prominence("format_money") < issue.prominence("apply") < 1.0


def test_the_embedding_query_is_the_title_and_the_prose_sentences_only():
    text = ("Cart.total() is wrong for refunds\n"
            "Description\n"
            "When a price is negative the discount is applied twice to the refund.\n"
            "def refund(cart):\n"
            "\treturn cart.total()\n"
            "result = Cart([-3]).total() # {'expected': -2.7}\n"
            "Traceback (most recent call last):\n"
            '  File "/srv/shop/cart.py", line 9, in total\n'
            "    return sum(Discount().apply(p) for p in self.prices)\n"
            "```python\nprint(Cart([1, 2]).total())\n```\n"
            "It used to be right in the last release, as far as anyone here remembers.\n")
    issue = read_issue(text)
    assert prose_lines(issue) == [
        "Cart.total() is wrong for refunds",
        "When a price is negative the discount is applied twice to the refund.",
        "It used to be right in the last release, as far as anyone here remembers."]
    query = semantic_query(issue, 64)
    assert query.startswith("Cart.total() is wrong for refunds When a price is negative")
    assert query.count("Cart.total() is wrong") == 1  # the title once, though it is prose too
    for code in ("def refund", "result =", "Traceback", "File ", "print("):
        assert code not in query
    assert semantic_query(issue, 4) == "Cart.total() is wrong for"


def test_an_error_message_matches_its_longest_run_of_words():
    from ctxls.index.locate_signals import _longest_run
    message = "price must not be negative got".split()
    text = "raise valueerror price must not be negative got r price".split()
    assert _longest_run(message, text, shortest=3, longest=8) == 6
    assert _longest_run(message, "a price must not be zero".split(), shortest=3, longest=8) == 4
    # Words must be consecutive and whole: "price must" then "be negative" elsewhere is 2.
    assert _longest_run(message, "price must x be negative".split(), shortest=3, longest=8) == 0
    assert _longest_run(message, "prices must not".split(), shortest=3, longest=8) == 0


def test_paths_resolve_by_their_tail_and_only_unambiguously():
    index = PathIndex(["shop/cart.py", "shop/pricing.py", "tools/cart.py", "lib/json/decoder.py"])
    assert index.resolve_path("/usr/lib/python3/site-packages/shop/cart.py") == ("shop/cart.py", 2)
    assert index.resolve_path("pricing.py") == ("shop/pricing.py", 1)
    assert index.resolve_path("cart.py") is None  # two files have that name
    # A stdlib frame shares only the file name with a repository file: not ours.
    assert index.resolve_path("/usr/lib/python3.11/decoder.py") is None
    assert index.resolve_module("shop.pricing.Discount") == ("shop/pricing.py", "shop.pricing")


def test_test_and_doc_paths():
    assert is_test_or_doc("tests/test_cart.py") and is_test_or_doc("pkg/sub/tests/helpers.py")
    assert is_test_or_doc("docs/pricing.md") and is_test_or_doc("web/app.spec.ts")
    assert is_test_or_doc("static/admin/js/vendor/jquery/jquery.js")
    # Other projects' test suites, test data, example galleries and benchmarks.
    for path in ("testing/python/collect.py", "tests/functional/u/unused_import.py",
                 "tests/roots/test-ext/target/module.py", "pkg/testdata/input.py",
                 "galleries/examples/lines/plot.py", "tutorials/intro.py", "bench/bench_argcomplete.py",
                 "doc/en/conf.py"):
        assert is_test_or_doc(path), path
    assert not is_test_or_doc("shop/pricing.py") and not is_test_or_doc("shop/contest.py")
    # Example folders as Swift and .NET name them, and Xcode's playgrounds.
    for path in ("Examples/Repeat/Repeat.swift", "Demo/Shared/GitHubAPI.swift",
                 "Sample-iOS.playground/Contents.swift", "src/Samples/Program.cs"):
        assert is_test_or_doc(path), path
    # A Go package named doc is library code, whatever its case.
    assert not is_test_or_doc("go/Doc/comment.go") and not is_test_or_doc("Sources/Demux/Demuxer.swift")


# -- ranking files ------------------------------------------------------------------------------

def test_traceback_ranks_the_deepest_in_repo_frame_first(engine: Engine):
    located = engine.locate(PYTHON_TRACEBACK, 5)
    assert [f.path for f in located[:2]] == ["shop/pricing.py", "shop/cart.py"]
    top = located[0]
    signals = {r.signal for r in top.reasons}
    assert {"frame", "message", "symbol"} <= signals
    frame = next(r for r in top.reasons if r.signal == "frame")
    assert frame.line == 5 and "in apply" in frame.detail
    # The frame's chunk is one of the best chunks, line-exact: the small
    # class is one chunk (packing), and the frame's function in it is named
    # at its own lines.
    assert any(c.symbol == "Discount.apply" and c.start_line == 3 and c.end_line == 6
               for c in top.chunks)
    assert top.chunks[0].end_character == len(SHOP_FILES["shop/pricing.py"].split("\n")[
        top.chunks[0].end_line])


def test_a_named_symbol_leads_to_its_defining_file(engine: Engine):
    located = engine.locate("format_money() drops the currency for amounts over a million", 3)
    assert located[0].path == "shop/money.py"
    assert any(r.signal == "symbol" and r.detail == "format_money" for r in located[0].reasons)


def test_a_named_setting_leads_to_the_file_assigning_it(engine: Engine):
    # No class or function is named ROUNDING_MODE: the file assigning it is
    # where it is defined; the file comparing it (`==`) only uses it.
    located = engine.locate("Totals ignore ROUNDING_MODE when it is changed at run time", 5)
    assert located[0].path == "shop/settings.py"
    reason = next(r for r in located[0].reasons if r.signal == "assignment")
    assert reason.detail == "ROUNDING_MODE" and reason.line == 1
    rounding = next((f for f in located if f.path == "shop/rounding.py"), None)
    assert rounding is None or "assignment" not in rounding.signals


def test_a_name_too_long_to_be_indexed_is_no_error(engine: Engine):
    name = "_".join(["settings"] * 8)  # 71 characters: no index token holds it whole
    located = engine.locate(f"{name} is ignored by round_price", 5)
    assert located[0].path == "shop/rounding.py"


@pytest.mark.parametrize("filler", ["/", ".", "a.", "a/", "a_"])
def test_a_text_padded_with_a_long_run_is_read_whole_and_still_leads_to_its_file(engine: Engine, filler: str):
    """A pasted run in an error message, a path or a dotted name cost the cube
    or the square of its length (2,000 slashes in a message: 20 s; a dotted
    name of 20,000 parts: minutes): each such run is read in one pass now,
    and the report around it still leads to the file."""
    run = filler * (12_000 // len(filler))
    text = (PYTHON_TRACEBACK.replace("got -3\n", f"got -3 {run}\n")
            + f"\nsee {run}x.py and {run}Cart and {run}\n")
    located = engine.locate(text, 5)
    assert located[0].path == "shop/pricing.py"
    assert "message" in located[0].signals and "frame" in located[0].signals


def test_with_embeddings_the_best_files_get_a_semantic_signal(shop: Path):
    text = "Cart.total is wrong when a Discount is applied to a refund (a negative price)"
    lexical = Engine(shop, EngineOptions())
    embedded = Engine(shop, EngineOptions(db_path=str(shop / "embedded.db"), embeddings=True))
    try:
        lexical.cold_index()
        embedded.cold_index()
        assert embedded.embed_pending() > 0
        without = lexical.locate(text, 5)
        located = embedded.locate(text, 5)
    finally:
        lexical.close()
        embedded.close()
    assert all("semantic" not in f.signals for f in without)
    semantic = {f.path: f.signals["semantic"] for f in located if "semantic" in f.signals}
    # Scaled to the best file, which scores 1; the reason says the cosine.
    assert max(semantic.values()) == 1.0 and all(0 <= v <= 1 for v in semantic.values())
    best = next(f for f in located if f.signals.get("semantic") == 1.0)
    assert any(r.signal == "semantic" and r.detail.startswith("cosine ") for r in best.reasons)


def test_a_failing_query_embedding_leaves_the_lexical_answer(shop: Path, monkeypatch):
    text = "Cart.total is wrong when a Discount is applied to a refund (a negative price)"
    engine = Engine(shop, EngineOptions(db_path=str(shop / "embedded.db"), embeddings=True))
    try:
        engine.cold_index()
        assert engine.embed_pending() > 0
        assert any("semantic" in f.signals for f in engine.locate(text, 5))

        def broken(query):
            raise RuntimeError("the model went away")

        # The model fails on a text it has not embedded before (a vector
        # already computed is reused from the query cache).
        monkeypatch.setattr(engine.semantic.embedder, "embed_query", broken)
        located = engine.locate(text + " Seen again after a restart.", 5)
    finally:
        engine.close()
    assert located and all("semantic" not in f.signals for f in located)
    assert located[0].path in ("shop/cart.py", "shop/pricing.py")


def test_an_import_step_follows_a_reexport(engine: Engine):
    located = engine.locate("```\nfrom shop import Discount\nDiscount().apply(-1)\n```\nraises.", 3)
    assert located[0].path == "shop/pricing.py"
    assert any(r.signal == "import" and "shop/__init__.py" in r.detail for r in located[0].reasons)


def test_tests_are_demoted_unless_asked_for(engine: Engine):
    text = "test_cart_total_with_discount_and_negative_price fails"
    demoted = engine.locate(text, 10)
    asked = engine.locate(text, 10, include_tests=True)
    assert asked[0].path == "tests/test_cart.py"
    score = {f.path: f.score for f in demoted}
    assert score["tests/test_cart.py"] < next(f.score for f in asked if f.path == "tests/test_cart.py")


def test_bad_locate_params(engine: Engine):
    with pytest.raises(InvalidParams):
        engine.locate("   ", 5)
    with pytest.raises(InvalidParams):
        engine.locate("Cart", 0)


# -- through the server and the CLI --------------------------------------------------------------

async def test_locate_request_through_the_server(shop: Path):
    async with serve(shop) as session:
        await session.wait_indexed()
        result = await session.request("ctxls/locate", {"text": PYTHON_TRACEBACK, "n": 3})
        top = result["files"][0]
        assert top["path"] == "shop/pricing.py" and top["uri"] == session.uri("shop/pricing.py")
        assert {w["signal"] for w in top["why"]} >= {"frame", "message"}
        # The scorer's additive contributions, largest first; the frame's evidence
        # leads here (as `frame` itself in a linear model, as the strongest
        # signal or the signal count in the trees of a ranking ensemble).
        lead = top["contributions"][0]
        assert lead["feature"] in ("frame", "max_signal", "signal_count") and lead["value"] > 0
        assert lead["contribution"] > 0
        if shipped_scorer().kind == "linear":
            assert 0 < top["score"] < 1
        chunk = next(c for c in top["chunks"] if c["symbol"] == "Discount.apply")
        assert chunk["startLine"] == 3 and chunk["range"]["end"] == {
            "line": 6, "character": len("        return price * (1 - self.rate)")}
        assert result["partial"] is False
        with pytest.raises(Exception) as error:
            await session.request("ctxls/locate", {"text": ""})
        assert "text" in str(error.value)


def test_cli_locate_reads_stdin_and_a_file(shop: Path, tmp_path: Path):
    # Read verbs never create an index (issue 14): make it first.
    subprocess.run([sys.executable, "-m", "ctxls.daemon.cli", "index", "--root", str(shop)],
                   check=True, capture_output=True, timeout=120)
    cli = [sys.executable, "-m", "ctxls.daemon.cli", "locate", "--root", str(shop)]
    piped = subprocess.run([*cli, "-", "--json"], input=PYTHON_TRACEBACK, capture_output=True,
                           text=True, timeout=120)
    assert piped.returncode == 0, piped.stderr
    assert json.loads(piped.stdout)["files"][0]["path"] == "shop/pricing.py"
    issue = tmp_path / "issue.txt"
    issue.write_text("format_money() drops the currency", encoding="utf-8")
    human = subprocess.run([*cli, "--file", str(issue), "-n", "2"], capture_output=True, text=True,
                           timeout=120)
    assert human.returncode == 0, human.stderr
    first = human.stdout.splitlines()[0]
    assert first.endswith("shop/money.py") and "symbol   format_money" in human.stdout


def test_cli_locate_reads_a_text_not_in_utf8_from_stdin_and_the_command_line_as_from_a_file(shop: Path):
    # A cp1252 text (`café`) on stdin or as the argument was refused: "invalid
    # param 'text': must not contain unpaired surrogates" (exit 2).
    subprocess.run([sys.executable, "-m", "ctxls.daemon.cli", "index", "--root", str(shop)],
                   check=True, capture_output=True, timeout=120)
    cli = [sys.executable, "-m", "ctxls.daemon.cli", "locate", "--root", str(shop), "--json"]
    issue = "format_money() drops the currency of a café's bill".encode("cp1252")
    for argv, stdin in (([*cli, "-"], issue), ([*cli, issue], b"")):
        located = subprocess.run(argv, input=stdin, capture_output=True, timeout=120)
        assert located.returncode == 0, located.stderr
        assert json.loads(located.stdout)["files"][0]["path"] == "shop/money.py"


def test_the_text_terms_share_is_of_the_chunks_there_are_not_of_the_largest_chunk_id(tmp_path: Path):
    # 20 one-function files; `widget` in 3 of them (15 % of the chunks: over
    # the 5 % share a text term may have), `gizmo` in one. Re-indexing gives
    # changed chunks new ids, so the largest id outgrows the number of chunks:
    # the share must stay a share of the chunks there are.
    root = tmp_path / "many"

    def write(version: int) -> None:
        write_tree(root, {f"pkg/mod{i}.py": (
            f"def handler_{i}(value):\n"
            f"    # {'widget ' if i < 3 else ''}{'gizmo ' if i == 5 else ''}step {i}\n"
            f"    return value + {version}\n") for i in range(20)})

    write(0)
    engine = Engine(root, EngineOptions())
    try:
        engine.cold_index()
        text = "Crash report\nThe widget breaks the gizmo"
        for version in range(1, 5):
            with_text = {f.path for f in engine.locate(text, 20) if "text" in f.signals}
            assert with_text == {"pkg/mod5.py"}, version
            write(version)
            engine.index()
        conn = engine.store.reader()
        largest, chunks = conn.execute("SELECT max(rowid), count(*) FROM fts_code").fetchone()
        assert largest >= 3 / 0.05 > chunks  # the old reading (largest id) would keep `widget`
        assert {f.path for f in engine.locate(text, 20) if "text" in f.signals} == {"pkg/mod5.py"}
    finally:
        engine.close()


NESTED_FILES = {
    "shop/__init__.py": "",
    "shop/contrib/__init__.py": "",
    "shop/contrib/auth/__init__.py": "",
    "shop/contrib/auth/validators.py": (
        "def validate_username(name):\n"
        "    return name.strip() == name\n"),
    "shop/errors.py": "class PricingError(Exception):\n    pass\n",
    "shop/pricing.py": (
        "from shop.errors import PricingError\n"
        "\n"
        "\n"
        "class Discount:\n"
        "    def apply(self, price):\n"
        "        if price < 0:\n"
        "            raise PricingError(price)\n"
        "        return price * 0.9\n"),
}


@pytest.fixture
def nested(tmp_path: Path):
    yield from indexed_engine(git_tree(tmp_path / "nested", NESTED_FILES))


def test_a_module_written_from_inside_its_package_names_its_file(nested: Engine):
    # `contrib.auth.validators` is no importable module (the package is `shop`),
    # but one file's path ends in it.
    located = nested.locate("Usernames ending in a newline pass contrib.auth.validators", 5)
    validators = next(f for f in located if f.path == "shop/contrib/auth/validators.py")
    assert validators.signals["path"] == 1.0
    assert any(r.signal == "path" and r.detail == "contrib.auth.validators" for r in validators.reasons)


def test_a_dotted_name_of_a_method_names_its_module_fully_one_of_a_class_does_not(nested: Engine):
    text = "shop.pricing.Discount.apply raises shop.errors.PricingError on a refund"
    signals = {f.path: f.signals for f in nested.locate(text, 5)}
    # The method's definition is in pricing.py: named as fully as the module itself.
    assert signals["shop/pricing.py"]["path"] == 1.0
    # An exception class named by its module (as tracebacks do) stays a weaker pointer.
    assert signals["shop/errors.py"]["path"] == 0.5


# -- other projects' shapes: src layout, installed copies, pytest and warnings output ----------

SRC_LAYOUT_FILES = {
    "src/shop/__init__.py": "",
    "src/shop/cart.py": (
        "import logging\n"
        "\n"
        "\n"
        "def checkout(prices):\n"
        "    logging.getLogger('shop').info('total %s', sum(prices))\n"
        "    return sum(prices)\n"),
    # Namesakes of standard-library modules inside the package.
    "src/shop/logging/__init__.py": "def get_logger(name):\n    return name\n",
    "src/shop/compat/__init__.py": "",
    "src/shop/compat/json/__init__.py": "",
    "src/shop/compat/json/decoder.py": "def decode(text):\n    return text\n",
    "src/shop/utils/__init__.py": "",
    "src/shop/utils/helpers.py": "def clamp(value):\n    return max(value, 0)\n",
    "src/shop/templates/cart.html": "<p>{{ total }}</p>\n",
    "testing/test_cart.py": "from shop.cart import checkout\n\n\ndef test_checkout():\n    assert checkout([1])\n",
}


def test_installed_and_standard_library_paths_name_only_the_projects_own_files():
    index = PathIndex(list(SRC_LAYOUT_FILES))
    # The project's own package installed: its import path from an import root.
    for written in ("/usr/lib/python3.11/site-packages/shop/cart.py",
                    "/usr/lib/python3/dist-packages/shop/cart.py",
                    "C:\\app\\.venv\\Lib\\site-packages\\shop\\cart.py",
                    "/opt/venv/lib/python3.8/site-packages/shop-1.0-py3.8.egg/shop/cart.py",
                    "/home/me/shop-checkout/src/shop/cart.py",  # a checkout elsewhere
                    "/srv/app/shop/cart.py"):  # the package copied to a folder
        assert index.resolve_path(written) == ("src/shop/cart.py", 2 + ("src" in written)), written
    assert index.resolve_path("/x/site-packages/shop/templates/cart.html") == (
        "src/shop/templates/cart.html", 3)
    # The standard library, another installed library, the writer's own
    # application: never a file of the repository that shares their tail.
    for written in ("/usr/lib/python3.11/logging/__init__.py",
                    "/usr/lib/python3.11/json/decoder.py",
                    "C:\\Users\\me\\AppData\\Local\\Programs\\Python\\Python311\\Lib\\logging\\__init__.py",
                    "/home/me/.venv/lib/python3.11/site-packages/other/logging/__init__.py",
                    "/home/me/.venv/lib/python3.11/site-packages/utils/helpers.py",
                    "/home/me/app/utils/helpers.py",
                    "<frozen runpy>"):
        assert index.resolve_path(written) is None, written
    # Written relative, a tail still names its file.
    assert index.resolve_path("utils/helpers.py") == ("src/shop/utils/helpers.py", 2)
    # A Cargo registry's copy of a workspace crate names its file by the
    # crate's folder (test_a_cargo_registrys_frame_names_only_the_repositorys_own_crates).
    crates = PathIndex(["shop/src/de/mod.rs", "shop_derive/src/lib.rs"],
                       crate_name={"shop": "shop", "shop_derive": "shop_derive"}.get)
    assert crates.resolve_path(
        "/home/me/.cargo/registry/src/index.crates.io-6f17/shop-0.1.0/src/de/mod.rs") == (
        "shop/src/de/mod.rs", 3)


def test_pytest_runs_and_warnings_give_frames_messages_and_paths():
    # pytest's default: long form for the first and last frames (the location
    # after the source, the last naming the exception type), short between.
    run = read_issue(
        "____________________________ test_checkout ____________________________\n\n"
        "    def test_checkout():\n"
        ">       checkout([-1])\n\n"
        "testing/test_cart.py:5: \n"
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n"
        "src/shop/cart.py:5: in checkout\n"
        "    logging.getLogger('shop').info('total %s', sum(prices))\n"
        "_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _\n\n"
        "prices = [-1]\n\n"
        "    def clamp(value):\n"
        "        if value < 0:\n"
        ">           raise ValueError('a clamped value must not be negative')\n"
        "E           ValueError: a clamped value must not be negative\n\n"
        "src/shop/utils/helpers.py:3: ValueError\n"
        "=========================== short test summary info ============================\n"
        "FAILED testing/test_cart.py::test_checkout - KeyError: the cart has no such price\n"
        "src/shop/cart.py:5: DeprecationWarning: sum of a cart with negative prices is deprecated\n"
        "  return sum(prices)\n")
    assert frame_rows(run) == [("testing/test_cart.py", 5, None, 2),
                               ("src/shop/cart.py", 5, "checkout", 1),
                               ("src/shop/utils/helpers.py", 3, None, 0)]
    assert {"a clamped value must not be negative", "the cart has no such price",
            "sum of a cart with negative prices is deprecated"} <= set(run.messages)
    assert {"ValueError", "KeyError", "DeprecationWarning"} <= set(run.identifiers)
    assert "src/shop/cart.py" in run.paths  # the warning's file
    # Two long-form tracebacks: each ends at its exception type.
    two = read_issue("a/x.py:3: \n    y()\nb/y.py:9: TypeError\n\nc/z.py:4: \nd/w.py:7: KeyError\n")
    assert [f.depth for f in two.frames] == [1, 0, 1, 0]


def test_an_exception_groups_tracebacks_behind_their_margins():
    issue = read_issue(
        "  + Exception Group Traceback (most recent call last):\n"
        '  |   File "/home/me/app.py", line 10, in <module>\n'
        "  |     asyncio.run(main())\n"
        "  | ExceptionGroup: unhandled errors in a TaskGroup (1 sub-exception)\n"
        "  +-+---------------- 1 ----------------\n"
        "    | Traceback (most recent call last):\n"
        '    |   File "/home/me/.venv/lib/python3.11/site-packages/shop/cart.py", line 5, in checkout\n'
        "    |     raise ValueError('the cart is empty here')\n"
        "    | ValueError: the cart is empty here\n"
        "    +------------------------------------\n")
    assert frame_rows(issue, short=True) == [("app.py", 10, "<module>", 0), ("cart.py", 5, "checkout", 0)]
    assert "the cart is empty here" in issue.messages and "ValueError" in issue.identifiers
    assert issue.paths == []


def test_line_patterns_start_on_their_own_line_not_across_blank_lines():
    # Under re.M a pattern starting `^\s*` runs across blank lines from every line
    # start: reading a text of 40,000 newlines took minutes (`git show 98206f9:BENCHMARKS.md`,
    # "Locate, sixth session"). Each must match from the line it reads.
    from ctxls.index import locate_text as locate
    samples = {
        locate._PY_FRAME: '  File "shop/cart.py", line 9, in total',
        locate._PY_FRAME_OTHER: "shop/cart.py:124: in total",
        locate._IPYTHON_ARROW: "--> 220     s = Cart(other)",
        locate._EXCEPTION_LINE: "ValueError: bad price",
        locate._JS_FRAME: "    at parseArgs (/srv/app/src/cli/args.js:42:13)",
        locate._JAVA_FRAME: "\tat com.acme.store.Basket.add(Basket.java:31)",
        locate._RUST_FRAME: "   0: shop::parser::Parser::next\n             at ./src/parser.rs:88:9",
        locate._GO_FRAME: "main.main()\n\t/home/me/shop/main.go:9 +0x25",
        locate._FROM_IMPORT: "from shop.cart import Cart",
        locate._IMPORT: "import shop.cart",
        locate._LOG_LINE: "WARNING: the cart is empty",
        locate._DIRECTIVE: ".. automodule:: shop.cart",
        locate._CSHARP_FRAME: "   bei Shop.Cart.Add(Item item) in C:\\src\\Cart.cs:Zeile 42",
        locate._UNITY_FRAME: "Shop.Cart:Add (int) (at Assets/Scripts/Cart.cs:42)",
        locate._SANITIZER_FRAME: "    #1 0x4c5e21 in parse_header /src/csrc/parse.c:4:3",
        locate._DIAGNOSTIC: "pkg/cart/cart.go:4:9: undefined: j",
        locate._JAVA_CAUSE: "Caused by: java.io.IOException: reset",
        locate._BLOCKQUOTE: "> Traceback (most recent call last):",
        **{pattern: line for pattern, line in zip(locate._LOG_LINES[1:], (
            "2024-03-01 12:00:01,123 - shop.cart - WARNING - the cart is empty",
            "[2024-03-01 12:00:01,123] WARNING in cart: the cart is empty",
            "2024-03-01T12:00:01.123Z  WARN 4242 --- [main] shop.Cart : the cart is empty",
            "12:00:01.123 [main] WARN  shop.Cart - the cart is empty",
            "[WARNING] the cart is empty",
            "2024-03-01 12:00:01,123 WARNING [shop.cart] the cart is empty",
            "W0301 12:00:01.123456    4242 cart.go:14] the cart is empty"))},
    }
    assert len(locate._LOG_LINES) == 8
    for pattern, line in samples.items():
        match = pattern.search("\n \n\n" + line)
        assert match is not None and match.start() == 4, pattern.pattern
    assert read_issue("\n" * 40_000).frames == []
    # Nor may a margin of `|` be read again as the start of a warning's path.
    assert locate._EXCEPTION_LINE.search("|" * 40_000) is None
    # A line of many paths: each is looked up among the frames' paths by
    # bisection (a line was once read whole per path: quadratic).
    assert len(read_issue("|a.py" * 200 + "\nsee b.py and c.py\n").paths) == 3


def test_windows_absolute_and_url_paths_in_prose_are_read_whole():
    issue = read_issue("Seen in C:\\work\\shop\\src\\shop\\utils\\helpers.py and in\n"
                       "/home/me/shop/src/shop/cart.py, see "
                       "https://github.com/acme/shop/blob/main/src/shop/compat/json/decoder.py#L2\n"
                       "It started with https://github.com/acme/shop/blob/v2/src/shop/cart.py.\n")
    assert issue.paths == ["C:\\work\\shop\\src\\shop\\utils\\helpers.py",
                           "/home/me/shop/src/shop/cart.py",
                           "/acme/shop/blob/main/src/shop/compat/json/decoder.py",
                           "/acme/shop/blob/v2/src/shop/cart.py"]
    index = PathIndex(list(SRC_LAYOUT_FILES))
    assert [index.resolve_path(p)[0] for p in issue.paths] == [
        "src/shop/utils/helpers.py", "src/shop/cart.py", "src/shop/compat/json/decoder.py",
        "src/shop/cart.py"]


@pytest.fixture
def src_layout(tmp_path: Path):
    yield from indexed_engine(git_tree(tmp_path / "src-layout", SRC_LAYOUT_FILES))


def test_a_traceback_through_the_installed_package_and_the_standard_library(src_layout: Engine):
    text = ("Checkout logs crash\n\n"
            "Traceback (most recent call last):\n"
            '  File "/home/me/.venv/lib/python3.11/site-packages/shop/cart.py", line 5, in checkout\n'
            "    logging.getLogger('shop').info('total %s', sum(prices))\n"
            '  File "/usr/lib/python3.11/logging/__init__.py", line 1489, in info\n'
            "    self._log(INFO, msg, args, **kwargs)\n"
            '  File "/usr/lib/python3.11/json/decoder.py", line 337, in decode\n'
            "    obj, end = self.raw_decode(s, idx=_w(s, 0).end())\n"
            "json.decoder.JSONDecodeError: Expecting value: line 1 column 1 (char 0)\n"
            "Run with `python -m shop.cart --total`.\n")
    located = {f.path: f for f in src_layout.locate(text, 10)}
    # The deepest frame in the project is the installed copy of src/shop/cart.py;
    # the standard library's logging and json frames, and the exception's module
    # `json.decoder`, are not the namesakes'.
    assert located["src/shop/cart.py"].signals["frame"] == 1.0
    for namesake in ("src/shop/logging/__init__.py", "src/shop/compat/json/decoder.py"):
        assert namesake not in located or not {"frame", "path"} & set(located[namesake].signals), \
            namesake
    # Nor do the standard library's function names (`decode`) name the namesake's definitions.
    decoder = located.get("src/shop/compat/json/decoder.py")
    assert decoder is None or "symbol" not in decoder.signals
    assert located["src/shop/cart.py"].signals["path"] == 1.0  # `python -m shop.cart`
    assert next(iter(located)) == "src/shop/cart.py"


# -- names registered as strings; test projects inside the test folder -------------------------

# A tool's source under a private package (`src/_shop`, imported as `_shop`),
# with what it registers by string: command-line options, a table of message
# ids and names, a configuration key. Its test folder holds test projects
# (`tests/roots/…/conf.py`, `tests/functional/…`) that set and define the same names.
TOOL_FILES = {
    "src/_shop/__init__.py": "",
    "src/shop/__init__.py": "from _shop.main import main\n",
    "src/_shop/main.py": (
        "def main(args=None):\n"
        "    return run(parse(args))\n"
        "\n"
        "\n"
        "def run(config):\n"
        "    return config.option.import_mode\n"),
    "src/_shop/config.py": (
        "def add_options(parser):\n"
        "    group = parser.getgroup('general')\n"
        "    group.addoption('--import-mode', default='prepend', choices=['prepend', 'importlib'],\n"
        "                    dest='import_mode', help='how test modules are imported')\n"
        "    group.addoption('--rootdir', action='store', dest='rootdir', help='the root')\n"),
    "src/_shop/checkers/format.py": (
        "OPTIONS = (\n"
        "    ('max-line-length', {'default': 100, 'type': 'int', 'help': 'longest line allowed'}),\n"
        ")\n"),
    "src/_shop/ext/keys.py": (
        "def setup(app):\n"
        "    app.add_role('kbd', keyboard_role)\n"),
    "src/_shop/loader.py": (
        "def import_path(path, mode='prepend'):\n"
        "    if mode == 'importlib':\n"
        "        return load_module(path)\n"
        "    return insert_path(path)\n"),
    "src/_shop/checkers/imports.py": (
        "MESSAGES = {\n"
        "    'W0611': ('Unused %s', 'unused-import', 'Used when an imported module is not used.'),\n"
        "    'W0404': ('Reimport %r', 'reimported', 'Used when a module is imported twice.'),\n"
        "}\n"
        "\n"
        "\n"
        "class ImportsChecker:\n"
        "    messages = MESSAGES\n"),
    "src/_shop/checkers/variables.py": (
        "class VariablesChecker:\n"
        "    def leave_module(self, node):\n"
        "        self.add_message('unused-import', node=node)\n"),
    "src/_shop/ext/typehints.py": (
        "import logging\n"
        "\n"
        "\n"
        "def setup(app):\n"
        "    app.add_config_value('typehints_format', 'signature', True)\n"
        "    return {}\n"
        "\n"
        "\n"
        "def import_object(name):\n"
        "    try:\n"
        "        return __import__(name)\n"
        "    except ImportError:\n"
        "        logging.getLogger(__name__).warning(\n"
        "            'typehints: failed to import the module %r; the import raised', name)\n"),
    "src/_shop/plugins.py": "DEFAULT_PLUGINS = ('main', 'cacheprovider', 'nodes')\n",
    "src/_shop/print_versions.py": (
        "DEPENDENCIES = [\n"
        "    ('netcdf_tools', lambda mod: mod.__version__),\n"
        "    ('time_axis_lib', lambda mod: mod.__version__),\n"
        "    ('array_groupies', lambda mod: mod.__version__),\n"
        "    ('scipy', lambda mod: mod.__version__),\n"
        "]\n"),
    "src/_shop/cacheprovider.py": (
        "class Cache:\n"
        "    def set(self, key, value):\n"
        "        self.values[key] = value\n"),
    "src/_shop/ext/signature.py": (
        "def format_signature(app, obj):\n"
        "    if app.config.typehints_format == 'none':\n"
        "        return ''\n"
        "    return str(obj)\n"),
    "src/_shop/nodes.py": (
        "def collect_items(session):\n"
        "    return [item for item in session.items if item.selected]\n"),
    "tests/functional/u/unused_import.py": "import os  # [unused-import]\n",
    "tests/roots/test-typehints/conf.py": "typehints_format = 'description'\n",
    "tests/test_config.py": (
        "def test_import_mode(runner):\n"
        "    assert runner.run('--import-mode', 'importlib') == 0\n"),
    # Test projects defining the source's function names (as plugins do).
    **{f"tests/roots/test-plugin-{i}/plugin.py": (
        f"def collect_items(session):\n    return session.items[{i}:]\n") for i in range(3)},
}


@pytest.fixture
def tool(tmp_path: Path):
    yield from indexed_engine(git_tree(tmp_path / "tool", TOOL_FILES))


def test_names_registered_as_strings_are_read():
    issue = read_issue(
        "--import-mode=importlib breaks, see W0611 (unused-import) and admin.E108\n"
        "---\n"
        "--> 220     x = y\n"
        ".. automodule:: shop.cart\n"
        "Press :kbd:`Ctrl+C` or see :py:func:`shop.cart.total`; ::\n"
        "See tests/unused-import.py and 2020-01-01.\n")
    assert issue.literals == ["--import-mode", "W0611", "admin.E108", "unused-import", "automodule",
                              "kbd", "func"]


def test_an_option_a_message_id_or_a_config_key_leads_to_the_file_registering_it(tool: Engine):
    def top(text: str) -> list[str]:
        return [f.path for f in tool.locate(text, 5)]

    located = tool.locate("--import-mode=importlib breaks conftest discovery\n\n"
                          "Running with `--import-mode=importlib` fails.", 5)
    assert located[0].path == "src/_shop/config.py"
    assert any(r.signal == "literal" and r.detail == "--import-mode" and r.line == 2
               for r in located[0].reasons)
    # The message id's table, then (by its name) the checker emitting it too.
    assert top("False positive W0611 for a module used in a type comment")[0] == (
        "src/_shop/checkers/imports.py")
    assert set(top("unused-import is a false positive here")[:2]) == {
        "src/_shop/checkers/imports.py", "src/_shop/checkers/variables.py"}
    # A configuration key only a test project assigns (`conf.py`): the file
    # registering it with the tool leads, not the test project.
    assert top("typehints_format = 'description' has no effect on overloaded callables")[0] == (
        "src/_shop/ext/typehints.py")
    # An option registered without its dashes; a role by its name.
    for text, registering, name in (
            ("--max-line-length=120 is ignored for long comments", "src/_shop/checkers/format.py",
             "--max-line-length"),
            ("The :kbd:`Shift+Tab` role renders the wrong markup", "src/_shop/ext/keys.py", "kbd")):
        located = tool.locate(text, 5)
        assert located[0].path == registering
        assert any(r.signal == "literal" and r.detail == name for r in located[0].reasons)


def test_a_test_projects_definitions_do_not_dilute_the_sources(tool: Engine):
    # `collect_items` is defined once in the source and in three test projects:
    # the source's definition is the name's whole share.
    located = {f.path: f for f in tool.locate("collect_items skips deselected items", 10)}
    assert located["src/_shop/nodes.py"].signals["symbol"] == 1.0
    assert next(iter(located)) == "src/_shop/nodes.py"
    plugin = located.get("tests/roots/test-plugin-0/plugin.py")
    assert plugin is None or plugin.signals["symbol"] == 0.25


def test_a_plugin_on_the_command_line_and_a_logged_warning(tool: Engine):
    issue = read_issue("Running with -p no:cacheprovider still writes .cache\n\n"
                       "WARNING: typehints: failed to import the module 'shop.cart'; the import raised\n"
                       "docs/index.rst:12: ERROR: Unknown directive type \"autoclass\".\n"
                       "ERROR:shop.cart:the cart total went negative\n")
    assert "cacheprovider.py" in issue.paths and "cacheprovider" in issue.literals
    assert {"failed to import the module", "Unknown directive type",
            "the cart total went negative"} <= set(issue.messages)
    located = {f.path: f for f in tool.locate(
        "Running with -p no:cacheprovider still writes .cache", 5)}
    # The plugin's module by its name, and the file registering that name.
    assert located["src/_shop/cacheprovider.py"].signals["path"] == 1.0
    assert located["src/_shop/plugins.py"].signals["literal"] > 0
    warned = tool.locate("Docs build warns\n\nWARNING: typehints: failed to import the module "
                         "'shop.cart'; the import raised\n", 3)
    assert warned[0].path == "src/_shop/ext/typehints.py" and "message" in warned[0].signals


def test_a_frame_in_node_modules_names_only_the_repositorys_own_packages(tmp_path: Path):
    index = PathIndex(["lib/router/index.js", "lib/read.js", "packages/ui/src/button.js"],
                      {"": "shop", "packages/ui": "@acme/ui"}.get)
    assert index.resolve_path("/app/node_modules/shop/lib/router/index.js") == ("lib/router/index.js", 3)
    assert index.resolve_path("/app/node_modules/@acme/ui/src/button.js") == (
        "packages/ui/src/button.js", 2)
    # Another library's file with the same tail as one of the repository's.
    for written in ("/app/node_modules/body-parser/lib/read.js", "/app/node_modules/shop",
                    "/app/node_modules/@other/ui/src/button.js"):
        assert index.resolve_path(written) is None, written
    # Through the engine: the package's name is read from its indexed package.json.
    engine = Engine(git_tree(tmp_path / "js", {
        "package.json": '{\n  "author": {"name": "Someone"},\n  "name": "shop",\n  "version": "1.0.0"\n}\n',
        "lib/read.js": "function read(stream) {\n  return stream.read();\n}\nmodule.exports = read;\n",
        "lib/cart.js": "function total(items) {\n  return items.length;\n}\nmodule.exports = total;\n",
    }), EngineOptions())
    try:
        engine.cold_index()
        located = {f.path: f for f in engine.locate(
            "TypeError: stream.read is not a function\n"
            "    at read (/srv/app/node_modules/body-parser/lib/read.js:2:17)\n"
            "    at total (/srv/app/node_modules/shop/lib/cart.js:2:10)\n", 5)}
    finally:
        engine.close()
    assert located["lib/cart.js"].signals["frame"] == 1.0
    assert "lib/read.js" not in located or "frame" not in located["lib/read.js"].signals
    # A package.json that is a link out of the repository is not read.
    outside = tmp_path / "elsewhere.json"
    outside.write_text('{"name": "shop"}\n', encoding="utf-8")
    linked = git_tree(tmp_path / "linked", {"lib/cart.js": "function total(items) {}\n"})
    (linked / "package.json").symlink_to(outside)
    assert Locator(root=linked).signals._package_name("") is None
    assert Locator(root=tmp_path / "js").signals._package_name("") == "shop"


def test_a_cargo_registrys_frame_names_only_the_repositorys_own_crates(tmp_path: Path):
    index = PathIndex(["src/lib.rs", "src/config.rs", "derive/src/lib.rs"], None,
                      {"": "shopcfg", "derive": "shopcfg-derive"}.get)
    registry = "/home/me/.cargo/registry/src/index.crates.io-6f17d22bba15001f"
    assert index.resolve_path(f"{registry}/shopcfg-0.1.0/src/config.rs") == ("src/config.rs", 2)
    assert index.resolve_path(f"{registry}/shopcfg-derive-0.1.0-rc.1/src/lib.rs") == ("derive/src/lib.rs", 2)
    # Another crate's file of the same tail, Rust's own library: none of the repository's.
    for written in (f"{registry}/anyhow-1.0.75/src/lib.rs", "/usr/local/cargo/registry/src/github.com-1ecc/"
                    "tokio-util-0.7.10/src/lib.rs",
                    "/rustc/90c541806f23a127002de5b4038be731ba1458ca/library/core/src/lib.rs"):
        assert index.resolve_path(written) is None, written
    assert PathIndex(["src/lib.rs"]).resolve_path(f"{registry}/shopcfg-0.1.0/src/lib.rs") is None
    # Through the engine: the crate's name is read from its Cargo.toml.
    root = git_tree(tmp_path / "rs", {
        "Cargo.toml": '[package]\nname = "shopcfg"\nversion = "0.1.0"\n',
        "src/lib.rs": "pub mod config;\n\npub fn version() -> &'static str {\n    \"0.1.0\"\n}\n",
        "src/config.rs": "pub fn load(path: &str) -> anyhow::Result<String> {\n"
                         "    Err(anyhow::anyhow!(\"config file is missing\"))\n}\n",
    })
    engine = Engine(root, EngineOptions())
    try:
        engine.cold_index()
        located = {f.path: f for f in engine.locate(
            "Error: config file is missing\n\nStack backtrace:\n   0: anyhow::__private::format_err\n"
            f"             at {registry}/anyhow-1.0.75/src/lib.rs:689:13\n"
            "   1: shopcfg::config::load\n             at ./src/config.rs:2:5\n", 5)}
    finally:
        engine.close()
    assert located["src/config.rs"].signals["frame"] == 1.0
    assert "src/lib.rs" not in located or "frame" not in located["src/lib.rs"].signals
    assert Locator(root=root).signals._crate_name("") == "shopcfg"
    (root / "Cargo.toml").write_text("[workspace]\nmembers = [\n", encoding="utf-8")  # unreadable
    assert Locator(root=root).signals._crate_name("") is None


def test_an_issue_templates_comments_and_headings_are_not_its_prose():
    text = ("Cart.total() is wrong for refunds\n"
            "<!--\nThanks for submitting an issue! Here is a checklist of what to provide:\n"
            "- a detailed description of the bug\n-->\n"
            "### Describe the bug\n"
            "When a price is negative the discount is applied twice to the refund.\n"
            "### Expected behavior\n"
            "# the total stays negative and is not discounted twice\n"
            "The total of a refund is the negative of the purchase's total.\n"
            "<!-- Add any other context about the problem here. -->\n")
    issue = read_issue(text)
    assert prose_lines(issue) == [
        "Cart.total() is wrong for refunds",
        "When a price is negative the discount is applied twice to the refund.",
        "The total of a refund is the negative of the purchase's total."]
    assert "checklist" not in issue.raw and "context" not in issue.raw
    assert "checklist" not in issue.prose and issue.messages == []


def test_names_called_through_an_import_alias_are_the_modules():
    issue = read_issue("```python\nimport shop.data as sd, shop.cart\nfrom shop import open_cart as oc\n"
                       "sd.load(oc('x.nc'))\n```\n")
    assert {"shop.data.load", "shop.open_cart"} <= set(issue.identifiers)
    assert {"shop.data", "shop.cart", "shop.data.load"} <= set(issue.modules)
    assert ("shop", "open_cart") in issue.imported and ("shop", "oc") not in issue.imported


def test_a_function_called_through_an_alias_leads_through_the_package_to_its_file(tmp_path: Path):
    engine = Engine(git_tree(tmp_path / "aliased", {
        "src/shop/__init__.py": "from shop.backends.api import open_cart\n",
        "src/shop/backends/__init__.py": "",
        "src/shop/backends/api.py": "def open_cart(path):\n    return read(path)\n",
        # A namesake the alias does not mean.
        "src/shop/alt.py": "def open_cart(name):\n    return name\n",
    }), EngineOptions())
    try:
        engine.cold_index()
        located = engine.locate("Opening a cart file raises\n\n```python\nimport shop as sp\n"
                                "cart = sp.open_cart('x.nc')\n```\nKeyError: 'items'\n", 5)
    finally:
        engine.close()
    assert located[0].path == "src/shop/backends/api.py"
    assert any(r.signal == "import" and "src/shop/__init__.py" in r.detail for r in located[0].reasons)


def test_a_module_named_only_in_the_issues_code_points_weaker_than_one_in_its_prose(tmp_path: Path):
    engine = Engine(git_tree(tmp_path / "plotting", {
        # The entry point every reproduction imports, and the module the prose blames.
        "plotkit/pyplot.py": "from plotkit.colors import Normalize\n\n\ndef subplots():\n"
                             "    return Figure()\n",
        "plotkit/colors.py": "class Normalize:\n    def __call__(self, value):\n"
                             "        return value / self.vmax\n",
    }), EngineOptions())
    try:
        engine.cold_index()
        located = {f.path: f for f in engine.locate(
            "Normalizing an empty array divides by zero\n\nThe bug is in plotkit.colors, "
            "see below.\n\n```python\nimport plotkit.pyplot as plt\nfig = plt.subplots()\n```\n", 5)}
    finally:
        engine.close()
    assert located["plotkit/colors.py"].signals["path"] == 1.0
    # Named by the import line and the call through its alias only.
    assert located["plotkit/pyplot.py"].signals["path"] == pytest.approx(0.25)
    issue = read_issue("See lib/plot/colors.py.\n```python\nimport plot.pyplot as plt\n```\n")
    assert issue.in_prose("lib/plot/colors.py") and not issue.in_prose("plot.pyplot")


ENVIRONMENT_REPORT = (
    "<details>\n\n"
    "INSTALLED VERSIONS\n"
    "------------------\n"
    "commit: None\n"
    "python: 3.8.5 (default, Jul 28 2020, 12:59:40) [GCC 7.3.0]\n"
    "OS: Linux\n"
    "LANG: en_US.UTF-8\n"
    "netcdf_tools: 1.5.4\n"
    "time_axis_lib: None\n"
    "array_groupies: 0.9.10\n"
    "scipy: 1.5.2\n"
    "\n</details>\n")


def test_an_environment_report_is_not_read(tool: Engine):
    text = ("collect_items drops the last item\n\n```python\nsettings = {'a': 1.5}\n"
            "collect_items(session)\n```\n\n" + ENVIRONMENT_REPORT
            + "Package    Version\n---------- -------\nattrs      20.3.0\npluggy     0.13.1\n"
            "py         1.10.0\n")
    issue = read_issue(text)
    for reported in ("netcdf_tools", "time_axis_lib", "LANG", "GCC", "attrs", "pluggy",
                     "INSTALLED VERSIONS", "Package    Version"):
        assert reported not in issue.raw, reported
    assert "settings = {'a': 1.5}" in issue.raw and "<details>" in issue.raw
    # Its package names would have named the file listing the dependencies.
    located = {f.path: f for f in tool.locate(text, 10)}
    assert next(iter(located)) == "src/_shop/nodes.py"
    assert "src/_shop/print_versions.py" not in located


def test_a_chinese_report_writing_code_words_without_spaces_leads_to_the_file_it_names(engine: Engine):
    located = engine.locate("折扣错误\n\n请看shop/pricing.py文件，Discount.apply方法在价格为负数时报错。\n", 3)
    assert located[0].path == "shop/pricing.py"
    assert located[0].signals["path"] == 1.0 and located[0].signals["symbol"] > 0


def test_a_private_package_under_src_is_read_from_installed_paths_and_dotted_names(tool: Engine):
    # Already so before this test was written: it guards the src layout of a
    # private package (`src/_shop`, imported as `_shop`).
    text = ("Traceback (most recent call last):\n"
            '  File "/home/me/.venv/lib/python3.11/site-packages/_shop/main.py", line 2, in main\n'
            "    return run(parse(args))\n"
            '  File "/home/me/.venv/lib/python3.11/site-packages/_shop/loader.py", line 3, in import_path\n'
            "    return load_module(path)\n"
            "NameError: name 'load_module' is not defined\n"
            "It happens since _shop.loader.import_path was changed.\n")
    located = {f.path: f for f in tool.locate(text, 5)}
    assert next(iter(located)) == "src/_shop/loader.py"
    assert located["src/_shop/loader.py"].signals["frame"] == 1.0
    assert located["src/_shop/loader.py"].signals["path"] == 1.0
    assert located["src/_shop/main.py"].signals["frame"] == 0.6


def test_a_cancelled_request_stops_gathering_evidence(engine: Engine):
    """The router cancels a request through its thread's token; locate stops at
    its next kind of evidence instead of reading the rest of a long text."""
    from ctxls.index.cancel import CancelToken, cancelling
    from ctxls.index.errors import RequestCancelled

    text = "Discount.apply fails\nTraceback:\n  File \"shop/pricing.py\", line 5, in apply"
    conn = engine.store.reader()
    assert Locator().evidence(conn, text)  # uncancelled: the evidence is there
    token = CancelToken()
    token.cancel()
    with cancelling(token), pytest.raises(RequestCancelled):
        Locator().evidence(conn, text)


HOSTILE_READS = """
from ctxls.index.chunking.markdown import markdown_sections
from ctxls.index.languages import header_language, language_for_path
from ctxls.index.locate_signals import _format_words
from ctxls.index.locate_paths import PathIndex
from ctxls.index.locate_text import read_issue
from ctxls.index.query import query_shape
fmt = 'raise UsageError(f"Takes {nargs} values but {len(values)} were given.")'
_format_words(fmt, "Takes" + " " * 600 + "values but" + " " * 600 + "x y")
for hostile in (" " * 40_000 + "x", "```a\\n" * 8_000, "<!--" * 10_000,
                "Packages: " + ")" * 40_000 + "x", "panicked at '" * 3_000, "\\t" * 40_000 + "WARNING",
                # each frame, log and quote pattern, the path readers
                "    at f [as \\n" * 3_000, "    at f (http://" + "a" * 40_000, "\\tat " + "a/" * 20_000,
                "created by " + "(a" * 20_000 + "\\n\\tx.go:1\\n", "   0: " + " " * 40_000 + "\\n",
                "  bei a.b(x) in " + "a" * 40_000, "  at " + "a." * 20_000, "a.b (x) (at " + "a" * 40_000,
                "#1 0x1 in " + "a" * 40_000, "a" + ".a" * 20_000 + ":1:", "x.c:1: " + " " * 40_000 + "z",
                "Uncaught " + "a." * 20_000, " - WARNING" * 4_000, " WARN 1 --- " * 3_000,
                "x WARN 1 --- [a] " + "a" * 40_000, " WARN " * 7_000, " [WARNING]" * 4_000, "[" + "a" * 40_000,
                "'a" * 20_000, "'" + "a'" * 20_000, "\u2018" + "a\u2019" * 20_000, "\u00ab" * 40_000,
                "`a" * 20_000, "a" * 40_000 + "=", "a==" + "1." * 20_000 + "x", "&#" * 20_000,
                "&" + "a" * 40_000, "> " * 20_000 + "x", ">" * 40_000, " a/b" * 10_000 + ".py",
                "/x a/b.py " * 4_000, '  File "a.py", line 1, in f\\n' * 5_000 + "see b.py " * 5_000,
                "\\tat a.B.c(B.java:1)\\nCaused by: x\\n" * 5_000,
                "   at A.b() in /a.cs:line 1\\n   --- End of inner exception stack trace ---\\n" * 5_000):
    read_issue(hostile)
PathIndex(["src/lib.rs"]).resolve_path("/" + "registry/src/" * 3_000 + "a-" + "1" * 40_000 + ".1.1/src/lib.rs")
query_shape("class " + "A" * 10_000 + "!")
header_language("\\n" * 65_536)
language_for_path("x.m", "\\n" * 32_768)
markdown_sections(["# " + "![" * 32_768])
"""


def test_hostile_texts_are_read_in_linear_time_and_still_read_right():
    """An issue an agent pastes, a query, a repository's file: each shape in
    HOSTILE_READS backtracked as a power of its length (a 358-character
    issue near a format string the repository has: 67 s, this one's 1,200
    spaces: hours; 40,000 spaces: 10 s; 65,536 blank lines in a `.h`: 40 s;
    a heading of `![`: 13 s). Together they take well under a second now;
    run apart, so that a regression fails at the timeout instead of hanging."""
    subprocess.run([sys.executable, "-c", HOSTILE_READS], check=True, timeout=60)
    fmt = 'raise UsageError(f"Takes {nargs} values but {len(values)} were given.")'
    assert _format_words(fmt, "Takes 2 values but 3 were given.") >= 5
    assert _format_words(fmt, "Takesvalues butwere given.") == 0  # a placeholder holds something
    issue = read_issue("<!-- the template -->Cart fails\n```py\nprint(Cart())\n```\n"
                       "WARNING: cart is empty\nPackages: attrs, click, ['rich']\n")
    assert issue.code == ["print(Cart())\n"] and "the template" not in issue.prose
    assert "cart is empty" in issue.messages
    assert query_shape("class " + "A" * 100 + "!").symbol is None
    assert query_shape("CartTotal").symbol == "CartTotal" and declared_name("class CartTotal") == "CartTotal"
    assert header_language("\n" * 1000) == "cpp"
    assert header_language("\n\n  @interface Cart\n@end\n") == "objc"
    assert language_for_path("x.m", "\n\n% a comment\nx = 1;\n") == "matlab"
    assert len(markdown_sections(["# " + "![" * 100])) == 1
    assert _heading_text('Shop <img alt="logo" src="x.png"> [docs](https://x)') == "Shop logo docs"


# -- text forms read by the locate probe of 2026-12-07 (docs/decisions.md, stop 65) -----------

JAVA_TRACE_LINES = ["java.lang.IllegalArgumentException: Can not construct IdKey for null key",
                    "\tat com.acme.ids.IdGenerator$IdKey.<init>(IdGenerator.java:10)",
                    "\tat com.acme.ids.Registry.lookup(Registry.java:7)"]


@pytest.mark.parametrize("margin", [
    "03-11 14:02:17.412 18244 18244 E AndroidRuntime: ",  # logcat's default, threadtime
    "E/AndroidRuntime(18244): ",  # logcat's brief
    "2024-03-11 14:02:17.412  18244-18244  AndroidRuntime          com.example.shop  E  ",  # Android Studio
    "2024-03-11T14:02:17.4123456Z ",  # GitHub Actions' raw log
    "worker-1  | ",  # docker compose
    "Mar 11 14:02:17 host shop[18244]: ",  # syslog, journalctl
])
def test_a_trace_pasted_from_a_log_is_read_behind_each_lines_margin(margin: str):
    issue = read_issue("App crashes\n\n```\n" + "".join(margin + line + "\n" for line in JAVA_TRACE_LINES) + "```\n")
    assert frame_rows(issue) == [("com/acme/ids/IdGenerator.java", 10, "<init>", 0),
                                 ("com/acme/ids/Registry.java", 7, "lookup", 1)]
    assert "Can not construct IdKey for null key" in issue.messages


def test_a_log_margin_is_read_away_only_where_consecutive_lines_share_its_shape():
    compose = read_issue("worker-1  | Traceback (most recent call last):\n"
                         'worker-1  |   File "/usr/src/app/src/app/worker.py", line 7, in handle\n'
                         'worker-1  |     raise ValueError("payload carries no identifier field")\n'
                         "worker-1  | ValueError: payload carries no identifier field\n")
    assert frame_rows(compose) == [("/usr/src/app/src/app/worker.py", 7, "handle", 0)]
    assert "payload carries no identifier field" in compose.messages
    # A line alone keeps its start: it may be the text's own.
    alone = read_issue("release-1 | notes for src/shop/cart.py\n\nwhat changed\n")
    assert alone.raw.startswith("release-1 | notes") and alone.paths == ["src/shop/cart.py"]
    # A logger's own line after a timestamp margin still reads as its format (Spring Boot's, level unpadded).
    spring = read_issue("2024-03-01T12:00:01.123Z ERROR 4242 --- [main] shop.Cart : the cart lost its items\n"
                        "2024-03-01T12:00:02.123Z ERROR 4242 --- [main] shop.Cart : the cart lost its coupon\n")
    assert {"the cart lost its items", "the cart lost its coupon"} <= set(spring.messages)


def test_file_names_joined_by_plus_or_holding_router_brackets_are_read_whole():
    issue = read_issue("The conversion in Sources/String+Rainbow.swift rounds twice; "
                       "web/src/pages/posts/[id].tsx renders nothing, nor src/routes/blog/[slug]/+page.server.ts "
                       "nor app/(marketing)/about/page.tsx; [[...slug]].tsx alone too.\n")
    assert issue.paths == ["Sources/String+Rainbow.swift", "web/src/pages/posts/[id].tsx",
                           "src/routes/blog/[slug]/+page.server.ts", "app/(marketing)/about/page.tsx",
                           "[[...slug]].tsx"]
    index = PathIndex(["Sources/Rainbow.swift", "Sources/String+Rainbow.swift"])
    assert index.resolve_path(issue.paths[0])[0] == "Sources/String+Rainbow.swift"
    # Brackets and `+` around paths in prose are not the paths'.
    prose = read_issue("see (src/a.py), [src/b.py], [the docs](docs/c.md), a.py+b.py and items[0].json()\n")
    assert prose.paths == ["src/a.py", "src/b.py", "docs/c.md", "a.py", "b.py"]
    # A diff's added line: `+` starts a file's name, never a folder's.
    assert read_issue("-click/_textwrap.py\n+click/termui.py\n").paths[-1] == "click/termui.py"


def test_dotnet_iterator_async_and_lambda_frames_name_the_methods_written_in_the_source():
    issue = read_issue(
        "Unhandled exception. System.IndexOutOfRangeException: Index was outside the bounds of the array.\n"
        "   at Cli.Core.Tokenizer.TokenizeShortName(String value)+MoveNext() in /_/src/Cli/Core/Tokenizer.cs:line 23\n"
        "   at System.Linq.Enumerable.SelectManySingleSelectorIterator`2.MoveNext()\n"
        "   at Cli.Core.InstanceBuilder.Build[T](IEnumerable`1 arguments)"
        " in /_/src/Cli/Core/InstanceBuilder.cs:line 10\n"
        "   at Shop.Orders.<SaveAsync>d__5.MoveNext() in /src/Shop/Orders.cs:line 42\n"
        "   at Shop.Program.<>c.<Main>b__0_0(String x) in /src/Shop/Program.cs:line 9\n")
    assert frame_rows(issue, short=True) == [
        ("Tokenizer.cs", 23, "TokenizeShortName", 0), ("InstanceBuilder.cs", 10, "Build", 1),
        ("Orders.cs", 42, "SaveAsync", 2), ("Program.cs", 9, "Main", 3)]


@pytest.mark.parametrize("text, frame, message", [
    ("Sources/Shop/Cart.swift:9: Fatal error: Unexpectedly found nil while unwrapping an Optional value\n",
     ("Sources/Shop/Cart.swift", 9), "Unexpectedly found nil while unwrapping an Optional value"),
    ("web/src/range.ts(11,23): error TS2345: Argument of type 'string | undefined' is not assignable.\n",
     ("web/src/range.ts", 11), "Argument of type 'string | undefined' is not assignable."),
    ("App/Program.cs(10,28): error CS0266: Cannot implicitly convert type 'long' to 'int'. [/src/App/App.csproj]\n",
     ("App/Program.cs", 10), "Cannot implicitly convert type"),
    ("error[E0308]: mismatched types in the returned value\n --> src/value.rs:7:9\n  |\n7 |         self.inner\n",
     ("src/value.rs", 7), "mismatched types in the returned value"),
    ("src/parse.c:4:3: error: expected a semicolon before the brace\n",
     ("src/parse.c", 4), "expected a semicolon before the brace"),
])
def test_compiler_diagnostics_and_swift_traps_give_their_place_and_message(text: str, frame: tuple, message: str):
    issue = read_issue(text)
    assert [(f.path, f.line, f.depth) for f in issue.frames] == [(*frame, 0)]
    assert message in issue.messages


def test_firefox_and_safari_frames_node_error_codes_and_a_consoles_url_place():
    issue = read_issue("Uncaught TypeError: can't access property \"split\", comp is undefined\n"
                       "    replaceXRange@http://localhost:5173/src/range.ts:11:22\n"
                       "    parseRange@http://localhost:5173/src/range.ts:16:44\n"
                       "    @http://localhost:5173/src/main.ts:3:1\n"
                       "    global code@http://localhost:5173/src/main.ts:5:1\n")
    assert frame_rows(issue) == [("src/range.ts", 11, "replaceXRange", 0), ("src/range.ts", 16, "parseRange", 1),
                                 ("src/main.ts", 3, None, 2), ("src/main.ts", 5, None, 3)]
    assert issue.paths == []
    node = read_issue('TypeError [ERR_INVALID_ARG_TYPE]: The "version" argument must be of type string.\n')
    assert 'The "version" argument must be of type string.' in node.messages and "TypeError" in node.identifiers
    assert read_issue("it breaks at http://localhost:5173/src/range.ts:11:22 in Firefox\n").paths == ["/src/range.ts"]


def test_backticked_commands_and_paths_give_no_names_and_a_ruby_quote_gives_one():
    issue = read_issue("Steps: `pip install -e .` then `$ python -m build --wheel`, then\n"
                       "     Running `target/debug/my-app`\n"
                       "lib/shop.rb:12:in `call': undefined method `amount' for nil:NilClass (NoMethodError)\n"
                       "and `cart.add(item)` fails\n")
    assert {"amount", "cart.add", "item", "NoMethodError"} <= set(issue.identifiers)
    noise = {"pip", "install", "python", "build", "wheel", "target", "debug", "my", "app", "undefined", "method"}
    assert not noise & set(issue.identifiers)
    # A code span holding a quote is no Ruby quote; a function's arity is no path.
    code = read_issue("`Key(key='shift')` and `String.length/1` in `block (2 levels) in checkout'\n")
    assert {"Key", "key", "shift", "String.length", "checkout"} <= set(code.identifiers)


def test_plurals_written_in_brackets_and_abbreviations_are_no_names():
    issue = read_issue("When two file(s) define a section, some value(s) are dropped by merge_sections, e.g. here.\n"
                       "    Finished dev [unoptimized + debuginfo] target(s) in 2.31s\n"
                       "x = parse(s)\n")
    assert issue.identifiers == ["parse", "merge_sections"]
    assert issue.modules == []
    # A dotted name starting with one-letter parts is still one.
    assert read_issue("f.c.Result.formatParser fails").modules == ["f.c.Result.formatParser"]
    # Without a determiner, a number or a `]` before it, `name(s)` may be a
    # call of the repository's (`prompt(s)`, the regression probe's click case).
    assert read_issue("prompt(s) shows the default twice").identifiers == ["prompt"]


@pytest.mark.parametrize("text, message", [
    ("I, [2024-03-11T14:02:17.412345 #18244]  INFO -- : Started POST\n"
     "E, [2024-03-11T14:02:17.415901 #18244] ERROR -- : failed to flush the write buffer to the socket\n",
     "failed to flush the write buffer to the socket"),
    ("W, [2024-03-11T14:02:17.415901 #1]  WARN -- shop: the disk is almost full\n", "the disk is almost full"),
    ("[2024-03-11T14:02:17Z INFO  my_service] reloading\n"
     "[2024-03-11T14:02:17Z ERROR my_service::db] cannot reuse a closed connection pool\n",
     "cannot reuse a closed connection pool"),
])
def test_ruby_logger_and_rust_env_logger_lines_give_their_message(text: str, message: str):
    assert message in read_issue(text).messages


# -- qualified names: the definition the qualifier names ---------------------------------------

def symbol_reasons(located, path: str) -> list[tuple[str, int | None]]:
    found = next((f for f in located if f.path == path), None)
    return [] if found is None else [(r.detail, r.line) for r in found.reasons if r.signal == "symbol"]


def test_a_qualified_method_is_cited_and_not_the_files_first_namesake(make_engine):
    engine = make_engine({"pkg/__init__.py": "", "pkg/base.py": (
        "class BaseTzinfoParser:\n"
        "    def parse(self, text):\n"
        "        return text\n"), "pkg/parser.py": (
        "class DateTimeParser:\n"
        "    def parse(self, string, fmt):\n"
        "        return (string, fmt)\n"
        "\n"
        "\n"
        "class TzinfoParser:\n"
        "    @classmethod\n"
        "    def parse(cls, tzinfo_string):\n"
        "        raise ValueError(tzinfo_string)\n")})
    located = engine.locate('TzinfoParser.parse rejects UTC+3\n\nCalling TzinfoParser.parse("UTC+3") fails.\n', 3)
    reasons = symbol_reasons(located, "pkg/parser.py")
    assert ("TzinfoParser.parse", 6) in reasons  # its decorator's line, 0-based
    assert not any(detail == "DateTimeParser.parse" for detail, _ in reasons)
    # `TzinfoParser.parse` is not `BaseTzinfoParser.parse`.
    assert symbol_reasons(located, "pkg/base.py") == []


@pytest.mark.parametrize("written", ["Beta::parse", "crate::beta::Beta::parse"])
def test_a_name_qualified_with_double_colons_names_its_owners_definition(make_engine, written: str):
    engine = make_engine({
        "src/alpha.rs": "pub struct Alpha;\nimpl Alpha {\n    pub fn parse(input: &str) -> u32 { 1 }\n}\n",
        "src/beta.rs": "pub struct Beta;\nimpl Beta {\n    pub fn parse(input: &str) -> u32 { 2 }\n}\n"})
    located = engine.locate(f"{written} drops the second field\n\nCalling {written}(\"1,2\") loses data.\n", 5)
    assert ("Beta.parse", 2) in symbol_reasons(located, "src/beta.rs")
    assert symbol_reasons(located, "src/alpha.rs") == []


MOMENT_FILES = {
    "clock/__init__.py": "",
    "clock/moment.py": (
        "class Moment:\n"
        "    def date(self):\n"
        "        return self._dt.date()\n"
        "\n"
        "    def time(self):\n"
        "        return self._dt.time()\n"),
    "clock/zone.py": "class TzinfoParser:\n    def parse(self, text):\n        return text\n",
    # A top-level module of the repository named as the standard library's is its own.
    "calendar.py": "def month_range(year, month):\n    return (year, month)\n",
}


def test_a_name_qualified_by_a_standard_library_module_is_not_the_repositorys(make_engine):
    engine = make_engine(MOMENT_FILES)
    standard = engine.locate("TzinfoParser rejects UTC+3\n\nWe compare against the standard library: "
                             "`datetime.date.today()` and `time.time()` agree, TzinfoParser does not.\n", 5)
    assert symbol_reasons(standard, "clock/moment.py") == []
    # Written with its own class too, or qualified by the repository's own module, it counts.
    own = engine.locate("Moment.time differs from time.time() by an hour\n\n"
                        "calendar.month_range(2024, 2) is off by one too.\n", 5)
    assert ("Moment.time", 4) in symbol_reasons(own, "clock/moment.py")
    assert ("month_range", 0) in symbol_reasons(own, "calendar.py")


# -- text forms read by the locate probe of 2026-12-07 on unseen projects (stop 66) ------------

@pytest.mark.parametrize("text, title", [
    # A traceback alone: its header's words (`most recent call last`) name no code.
    ("Traceback (most recent call last):\n"
     '  File "C:\\Users\\x\\site-packages\\arrow\\util.py", line 81, in normalize_timestamp\n'
     '    raise ValueError(f"The specified timestamp {timestamp!r} is too large.")\n'
     "ValueError: The specified timestamp 1e+20 is too large.\n", ""),
    ("Traceback (most recent call last):\n  File \"shop/loader.py\", line 3, in load\n    return x\n"
     "NameError: name 'x' is not defined\n\nIt happens since the loader was changed.\n",
     "It happens since the loader was changed."),
    # Node's uncaught error: where it threw, the source line, a caret, the trace, Node's release.
    ("/home/me/app/node_modules/semver/functions/inc.js:12\nthrow new TypeError(`Invalid version`)\n^\n\n"
     "TypeError: Invalid version\n    at inc (/home/me/app/node_modules/semver/functions/inc.js:12:11)\n\n"
     "Node.js v20.11.0\n", ""),
    ("thread 'main' panicked at src/de.rs:495:18:\nUnable to read table values\n"
     "note: run with `RUST_BACKTRACE=1` environment variable to display a backtrace\n\nThe table is empty.\n",
     "The table is empty."),
    ("ValueError                                Traceback (most recent call last)\n"
     "Cell In[3], line 1\n----> 1 arrow.get('x')\nFile ~/env/arrow/api.py:91, in get(*args)\n"
     "---> 91 return _factory.get(*args)\n\nValueError: bad\n", ""),
    ("2024-05-02 10:11:12,347 ERROR [report] Ordinal 0 is out of range.\nThe nightly job fails\n",
     "The nightly job fails"),
    ("```\nprint(Cart())\n```\nCart prints nothing\n", "Cart prints nothing"),
    # A title that is an error's line stays the title.
    ("TypeError: unsupported operand when adding a Discount\n\nSee below.\n",
     "TypeError: unsupported operand when adding a Discount"),
])
def test_an_output_pasted_first_is_no_title(text: str, title: str):
    assert read_issue(text).title == title


def test_a_pasted_tracebacks_header_gives_no_title_evidence(make_engine):
    # `Traceback (most recent call last):` read as the title raised `title`
    # on a file whose docstring has those words.
    engine = make_engine({
        "shop/__init__.py": "",
        "shop/pricing.py": SHOP_FILES["shop/pricing.py"],
        "shop/calls.py": ('"""The call log: the most recent call last, as a traceback lists them."""\n\n\n'
                          "def record(log, call):\n    log.append(call)\n"),
        "shop/cart.py": "class Cart:\n    def total(self):\n        return 0\n",
    })
    text = ("Traceback (most recent call last):\n"
            '  File "/srv/app/main.py", line 3, in <module>\n    run()\n'
            '  File "/srv/app/venv/lib/python3.11/site-packages/shop/pricing.py", line 6, in apply\n'
            "    raise ValueError('price must not be negative, got %r' % price)\n"
            "ValueError: price must not be negative, got -1\n")
    located = engine.locate(text, 5)
    assert located[0].path == "shop/pricing.py"
    assert all("title" not in f.signals for f in located)


@pytest.mark.parametrize("base, sep", [("/Users/jane/Library/Application Support/MyApp", "/"),
                                       ("C:\\Users\\Jane Doe\\MyApp", "\\")])
def test_node_frames_through_a_folder_with_a_space_are_frames(base: str, sep: str):
    package = f"{base}{sep}node_modules{sep}semver{sep}classes{sep}"
    issue = read_issue("TypeError: Cannot read properties of null (reading 'length')\n"
                       f"    at Comparator.parse ({package}comparator.js:41:20)\n"
                       f"    at new Range ({package}range.js:36:34)\n"
                       f"    at {base}{sep}src{sep}main.js:12:10\n")
    assert frame_rows(issue) == [(f"{package}comparator.js", 41, "Comparator.parse", 0),
                                 (f"{package}range.js", 36, "Range", 1),
                                 (f"{base}{sep}src{sep}main.js", 12, None, 2)]
    assert issue.paths == []  # each path is its frame's


def test_rust_and_ipython_frames_through_a_folder_with_a_space_are_frames():
    registry = "C:\\Users\\Jane Doe\\.cargo\\registry\\src\\index.crates.io-6f17d22bba15001f\\toml-0.5.11\\src\\"
    rust = read_issue(f"thread 'main' panicked at {registry}de.rs:495:18:\nUnable to read table values\n"
                      "stack backtrace:\n   2: toml::de::MapVisitor::next_value_seed\n"
                      f"             at {registry}de.rs:495\n")
    assert (f"{registry}de.rs", 495, None, 0) in frame_rows(rust)
    assert (f"{registry}de.rs", 495, "toml::de::MapVisitor::next_value_seed", 0) in frame_rows(rust)
    assert "Unable to read table values" in rust.messages
    ipython = read_issue("File c:\\Users\\Jane Doe\\venv\\Lib\\site-packages\\arrow\\api.py:91, in get(*args)\n"
                         "---> 91 return _factory.get(*args)\n")
    assert frame_rows(ipython) == [("c:\\Users\\Jane Doe\\venv\\Lib\\site-packages\\arrow\\api.py", 91, "get", 0)]


# -- text forms read by the locate probe of 2026-12-07 (stop 67): places and lines -------------

def test_a_github_url_line_anchor_and_a_paths_line_name_the_lines(make_engine):
    issue = read_issue("Bounds\n\nSee https://github.com/acme/pkg/blob/main/pkg/checks.py#L36-L40, "
                       "https://gitlab.com/g/p/-/blob/v1/pkg/a.py#L47C5-L52C9, "
                       "https://github.com/acme/pkg/blob/main/pkg/b.py?plain=1#L7, [here](https://github.com/"
                       "acme/pkg/blob/main/pkg/c.py#L9) and pkg/d.py:651; core.py#L120-L135 and e.py too.\n")
    assert issue.path_lines == {"pkg/d.py": 651, "core.py": 120, "/acme/pkg/blob/main/pkg/checks.py": 36,
                                "/g/p/-/blob/v1/pkg/a.py": 47, "/acme/pkg/blob/main/pkg/b.py": 7,
                                "/acme/pkg/blob/main/pkg/c.py": 9}
    # Small functions, packed into chunks of several.
    checks = "".join(f'def {name}(value):\n    """Validate {name}."""\n'
                     + "".join(f"    value = step_{name}(value, {k})\n" for k in range(6)) + "    return value\n\n\n"
                     for name in ("parse_email", "parse_url", "check_length", "check_range", "check_regex",
                                  "coerce_int"))
    engine = make_engine({"pkg/__init__.py": "", "pkg/checks.py": checks,
                          "pkg/other.py": "def unrelated():\n    return 1\n"})
    start = checks.split("\n").index("def check_range(value):")  # 0-based
    located = engine.locate("Validate email fails for NaN\n\nThe code: https://github.com/acme/pkg/"
                            f"blob/main/pkg/checks.py#L{start + 3}-L{start + 5}\n", 3)
    assert located[0].path == "pkg/checks.py"
    assert [(r.signal, r.line) for r in located[0].reasons if r.signal == "path"] == [("path", start + 2)]
    # The anchored lines' definition names the chunk shown first, not the
    # title's match (`parse_email`) packed into the same chunk.
    assert located[0].chunks[0].symbol == "check_range"


def test_a_forge_url_names_its_file_by_the_path_after_its_ref(make_engine):
    issue = read_issue("Exports\n\nhttps://github.com/acme/tiny/blob/main/index.js#L2 and "
                       "https://raw.githubusercontent.com/acme/tiny/v1/atom/index.js, "
                       "https://codeberg.org/acme/tiny/src/branch/main/map/index.js\n")
    assert issue.repository_paths == {"/acme/tiny/blob/main/index.js": "index.js",
                                      "/acme/tiny/v1/atom/index.js": "atom/index.js",
                                      "/acme/tiny/src/branch/main/map/index.js": "map/index.js"}
    engine = make_engine({"index.js": "export { atom } from './atom/index.js'\n",
                          "atom/index.js": "export let atom = (value) => ({ get: () => value })\n",
                          "map/index.js": "export let map = (value) => ({ get: () => value })\n"})
    located = engine.locate("Exports missing from the entry\n\nThe list: "
                            "https://github.com/acme/tiny/blob/main/index.js#L2\n", 3)
    assert [f.path for f in located if "path" in f.signals] == ["index.js"]


def test_a_frames_chunk_is_shown_first_though_other_evidence_chose_it_too(make_engine):
    def function(name: str, words: str) -> str:
        return f"def {name}(value):\n" + "".join(f"    value = value + {k}  # {words}\n"
                                                 for k in range(14)) + "    return value\n\n\n"
    widget = (function("first_step", "plain") + function("quokka_merge", "quokka flummox quokka flummox")
              + function("quokka_split", "quokka flummox quokka") + function("quokka_frame", "quokka"))
    engine = make_engine({"shop/__init__.py": "", "shop/widget.py": widget,
                          "shop/other.py": function("other", "plain")})
    line = widget.split("\n").index("def quokka_frame(value):") + 3
    located = engine.locate("Quokka flummox breaks\n\nTraceback (most recent call last):\n"
                            f'  File "/srv/app/shop/widget.py", line {line}, in quokka_frame\n'
                            "    value = value + 1\nValueError: boom\n", 3)
    assert located[0].path == "shop/widget.py"
    # The frame's function was also a named symbol and a title match: still first.
    assert located[0].chunks[0].symbol == "quokka_frame"


def test_a_files_frame_chunks_are_shown_deepest_frame_first(make_engine):
    """Frames of one file name several chunks: the function that raised
    (the deepest frame) is shown first, then its callers, whatever their
    lines' order in the file."""
    def function(name: str, call: str) -> str:
        # Each long enough to be a chunk of its own.
        return f"def {name}(value):\n" + "".join(f"    value = value + {k}\n" for k in range(60)) \
            + f"    return {call}\n\n\n"
    widget = function("outer_load", "middle_parse(value)") + function("middle_parse", "inner_check(value)") \
        + function("inner_check", "value")
    engine = make_engine({"shop/__init__.py": "", "shop/widget.py": widget})
    lines = widget.split("\n")
    line_of = {name: lines.index(f"def {name}(value):") + 62 for name in ("outer_load", "middle_parse", "inner_check")}
    located = engine.locate("Loading fails\n\nTraceback (most recent call last):\n" + "".join(
        f'  File "/srv/app/shop/widget.py", line {line_of[name]}, in {name}\n    return x\n'
        for name in ("outer_load", "middle_parse", "inner_check")) + "ValueError: boom\n", 3)
    assert located[0].path == "shop/widget.py"
    assert [c.symbol for c in located[0].chunks] == ["inner_check", "middle_parse", "outer_load"]
    assert {c.score for c in located[0].chunks} == {0.0}  # placed by frames: no score of their own


def test_tscs_and_pyrights_default_diagnostics_give_their_place_and_message():
    issue = read_issue("Build fails\n\n```\nnode_modules/tiny/deep-map/path.d.ts:20:13 - error TS2589: "
                       "Type instantiation is excessively deep and possibly infinite.\n"
                       "  /home/u/app/src/shop/number.py:12:5 - error: Import \"x\" could not be resolved\n```\n")
    assert frame_rows(issue) == [("node_modules/tiny/deep-map/path.d.ts", 20, None, 0),
                                 ("/home/u/app/src/shop/number.py", 12, None, 1)]
    assert "Type instantiation is excessively deep and possibly infinite." in issue.messages
    assert issue.paths == []


def test_vitest_frames_are_frames_innermost_first():
    issue = read_issue(" FAIL  src/cart.test.ts > cart > notifies once\n"
                       "TypeError: Cannot read properties of undefined (reading 'has')\n"
                       " ❯ node_modules/tiny/listen-keys/index.js:4:17\n"
                       " ❯ Object.notify node_modules/tiny/atom/index.js:6:29\n")
    assert frame_rows(issue) == [("node_modules/tiny/listen-keys/index.js", 4, None, 0),
                                 ("node_modules/tiny/atom/index.js", 6, "Object.notify", 1)]


def test_where_node_threw_and_babels_place_are_frames():
    node = read_issue("require() fails\n\n```\n/home/u/app/node_modules/tinyparse/lib/parse.js:12\n"
                      "export function parse(text) {\n^^^^^^\n\nSyntaxError: Unexpected token 'export'\n"
                      "    at wrapSafe (node:internal/modules/cjs/loader:1283:20)\n```\n")
    assert frame_rows(node) == [("/home/u/app/node_modules/tinyparse/lib/parse.js", 12, None, 0)]
    assert node.paths == []
    babel = read_issue("SyntaxError: /app/node_modules/js-yaml/lib/dumper.js: Unexpected token (120:4)\n")
    assert frame_rows(babel) == [("/app/node_modules/js-yaml/lib/dumper.js", 120, None, 0)]
    # A path and line alone, with no caret under its next line, is no place Node threw.
    assert read_issue("lib/parse.js:12\nexport function parse(text) {\n").frames == []


def test_a_sphinx_source_view_of_a_package_names_its_init(make_engine):
    issue = read_issue("See https://shop.readthedocs.io/en/stable/_modules/shop.html#Basket\n")
    assert issue.paths == ["shop.py"] and issue.linked_modules == {"shop.py": "shop"}
    engine = make_engine({"src/shop/__init__.py": "class Basket:\n    def add(self, line):\n        pass\n",
                          "src/shop/util.py": "def fmt(value):\n    return value\n",
                          "src/shop/orders.py": "def place(basket):\n    return basket\n"})
    located = engine.locate("Rounding looks off\n\nThe source shown at "
                            "https://shop.readthedocs.io/en/stable/_modules/shop.html#Basket is wrong.\n", 3)
    assert [(f.path, f.signals.get("path")) for f in located if "path" in f.signals] == [
        ("src/shop/__init__.py", 1.0)]


def test_a_faulthandler_dump_is_read_innermost_first_with_its_functions():
    issue = read_issue("Crash\n\n```\nFatal Python error: Segmentation fault\n\n"
                       "Current thread 0x00007f1c2b7fe700 (most recent call first):\n"
                       '  File "/opt/venv/lib/python3.11/site-packages/memo/keys.py", line 12 in __hash__\n'
                       '  File "/opt/venv/lib/python3.11/site-packages/memo/cache.py", line 27 in lookup\n'
                       '  File "/srv/app/main.py", line 5 in <module>\n```\n')
    assert frame_rows(issue, short=True) == [("keys.py", 12, "__hash__", 0), ("cache.py", 27, "lookup", 1),
                                             ("main.py", 5, "<module>", 2)]


@pytest.mark.parametrize("text, message", [
    ('When the value is "ok" the parser returns "invalid escape value" even though.', "invalid escape value"),
    ('I passed "ok" then the parser rejects it with an odd message "Invalid date given here".',
     "Invalid date given here"),
    # Rust's debug output: an empty string closes its pair too.
    ('Got Error { found: "a newline" } while the parser expected "a table key", message: "".', None),
])
def test_a_short_double_quoted_word_closes_its_pair(text: str, message: str | None):
    assert read_issue("Parsing fails\n\n" + text + "\n").messages == ([message] if message else [])


@pytest.mark.parametrize("line", [
    "2024-05-02 10:11:12,347 ERROR Ordinal 0 is out of range.",  # logging's %(asctime)s %(levelname)s
    "2024-05-02 10:11:12,347 ERROR [report] Ordinal 0 is out of range.",  # log4j's %d %-5p [%c] %m
    "[2024-05-02 10:11:12] ERROR Ordinal 0 is out of range.",
    "2024-05-02T10:11:12.345Z ERROR Ordinal 0 is out of range.",
    "10:11:12.347 WARN  report: Ordinal 0 is out of range.",
])
def test_a_timestamp_then_a_level_starts_a_logged_message(line: str):
    assert read_issue("Job log\n\n" + line + "\n").messages == ["Ordinal 0 is out of range."]
    assert read_issue("Job log\n\n" + line.replace("ERROR", "INFO").replace("WARN ", "INFO") + "\n").messages == []


def test_docs_source_view_links_name_their_source_files():
    issue = read_issue("Week token wrong\n\nSee https://arrow.readthedocs.io/en/latest/_modules/shop/cart.html, "
                       "https://example.org/_modules/shop/compat/json/decoder/ and "
                       "https://docs.rs/toml/0.5.11/src/toml/de.rs.html#495.\n")
    assert issue.paths == ["shop/cart.py", "shop/compat/json/decoder.py", "toml/src/de.rs"]
    assert all(issue.in_prose(written) for written in issue.paths)
    index = PathIndex(list(SRC_LAYOUT_FILES))
    assert [index.resolve_path(p)[0] for p in issue.paths[:2]] == [
        "src/shop/cart.py", "src/shop/compat/json/decoder.py"]
    # A crate at the repository's root, or a workspace's member of the crate's name.
    assert PathIndex(["src/de.rs", "src/ser.rs"]).resolve_path("toml/src/de.rs")[0] == "src/de.rs"
    assert PathIndex(["crates/toml/src/de.rs", "crates/toml_edit/src/de.rs"]).resolve_path(
        "toml/src/de.rs")[0] == "crates/toml/src/de.rs"
    # The module index and a code block's link are no prose's.
    assert read_issue("See https://x.org/_modules/index.html\n").paths == ["/_modules/index.html"]
    assert not read_issue("x\n```\nhttps://x.org/_modules/shop/cart.html\n```\n").in_prose("shop/cart.py")


def test_an_envinfo_report_is_not_read():
    issue = read_issue("satisfies() ignores includePrerelease for caret ranges\n\n```\n  System:\n"
                       "    OS: macOS 14.3\n    CPU: (10) arm64 Apple M1 Pro\n    Memory: 1.20 GB / 16.00 GB\n"
                       "    Shell: 5.9 - /bin/zsh\n  Binaries:\n"
                       "    Node: 20.11.0 - ~/.nvm/versions/node/v20.11.0/bin/node\n"
                       "    npm: 10.2.4 - ~/.nvm/versions/node/v20.11.0/bin/npm\n  npmPackages:\n"
                       "    semver: ^7.6.3 => 7.6.3\n    @types/node: ^20.0.0 => 20.11.5\n```\n")
    assert issue.identifiers == ["satisfies", "includePrerelease"]
    for reported in ("System:", "macOS", "Binaries:", "npmPackages", "=> 7.6.3"):
        assert reported not in issue.raw, reported


HOSTILE_READS_STOP66 = """
from ctxls.index.locate_text import read_issue
for hostile in ("    at f (/" + "a " * 20_000, "    at /" + "a " * 20_000 + "x.js:", "f@/" + "a " * 20_000,
                "panicked at /" + "a " * 20_000, "panicked at '" + "x', /a " * 5_000,
                "panicked at 'x', /a " * 2_000,
                "   0: f\\n      at /" + "a " * 20_000, "File /" + "a " * 20_000 + ".py:",
                '"a' * 20_000, '"' * 40_001, "10:11:12 ERROR " * 5_000, "12:00:00 ERROR " + "a" * 40_000 + ":",
                "2024-05-02 " * 10_000, "a: " + "^" * 40_000 + " => 1.1", "a " * 20_000 + ":",
                "Traceback (most recent call last):\\n" + "  x\\n" * 20_000 + "~" * 40_000 + "x",
                "Traceback (most recent call last):\\n" + "^" * 40_000 + "x", ":1" * 20_000,
                "```\\n" * 20_000 + "x", "https://x/_modules/" + "a/" * 20_000 + "b.html",
                "https://docs.rs/a/1/src/" + "a/" * 20_000 + "b.rs.html"):
    read_issue(hostile)
"""


def test_the_stop_66_text_forms_are_read_in_linear_time():
    """Each shape in HOSTILE_READS_STOP66 runs a pattern or a scan this stop
    added against its worst input; run apart, so that a regression fails at
    the timeout instead of hanging."""
    subprocess.run([sys.executable, "-c", HOSTILE_READS_STOP66], check=True, timeout=60)


# -- stop 69: reading pasted output ------------------------------------------------------------

def test_a_hex_id_in_a_logged_message_is_a_value_filled_in(tmp_path: Path):
    """A UUID's letter groups (`ceea`, `a9f8`) are no words of the format
    string that logged it: read as its fixed words, the message found no chunk."""
    root = git_tree(tmp_path / "svc", {
        "svc/worker.py": ("import logging\nlog = logging.getLogger(__name__)\n\n\ndef run(job):\n    try:\n"
                          "        job.go()\n    except Exception:\n"
                          "        log.error('request %s failed after %.1fs', job.id, job.elapsed)\n"),
        "svc/other.py": "def request_failed():\n    return 'after'\n"})
    text = ("Jobs fail silently\n\n2024-03-01 12:00:01,123 ERROR [worker] request "
            "8f14e45f-ceea-467f-a9f8-0123456789ab failed after 3.5s\n")
    for engine in indexed_engine(root):
        worker = next(f for f in engine.locate(text, 5) if f.path == "svc/worker.py")
        assert any(r.signal == "message" and r.line == 8 for r in worker.reasons)


def test_format_strings_of_more_languages_are_matched_by_their_messages():
    """Go's `%w` and `%T`, Java's positional `%1$s`, a template literal's or a
    Go raw string's backticks, a template's `{{name}}`: each message fills in
    its format string's placeholders."""
    for source, message in (
            ('return fmt.Errorf("decode manifest %s: %w", name, err)', "decode manifest app.yaml: unexpected EOF"),
            ('return fmt.Errorf("flag %q expects a bool, got %T", name, v)', 'flag "x" expects a bool, got string'),
            ('String.format("Cannot bind %1$s to %2$s port", a, b)', "Cannot bind foo to 80 port"),
            ("throw new Error(`unknown option ${name} in config`)", "unknown option foo in config"),
            ('return fmt.Errorf(`reading "%s" failed: %w`, dir, err)', 'reading "valid/" failed: no such file'),
            ("t('Cannot bind {{host}} to {{port}} port')", "Cannot bind foo to 80 port")):
        assert _format_words(source, message) >= 2, source
    assert _format_words("throw new Error(`unknown option ${name} in config`)", "unknown config") == 0


def test_a_release_after_a_name_is_no_hyphenated_literal():
    issue = read_issue("platform linux -- Python 3.12.1, pytest-8.0.0, pluggy-1.4.0\n"
                       "I installed numpy-1.26.4.tar.gz; `--import-mode` and `unused-import` are ignored.")
    assert issue.literals == ["--import-mode", "unused-import"]


def test_a_pytest_node_id_names_its_test_not_its_file_extension():
    text = "FAILED tests/test_cart.py::TestCart::test_total - AssertionError: assert 3 == 4\n"
    issue = read_issue(text)
    assert "py" not in issue.identifiers and {"TestCart", "test_total"} <= set(issue.identifiers)
    assert written_qualified(text) == ["TestCart.test_total"]
    assert written_qualified("see Parser::parse_expr") == ["Parser.parse_expr"]


def test_a_php_trace_s_entry_point_is_no_title():
    issue = read_issue("PHP Fatal error:  Uncaught RuntimeException: boom in /srv/app/src/Cart.php:14\n"
                       "Stack trace:\n#0 /srv/app/src/Shop.php(20): Acme\\Cart->add(NULL)\n#1 {main}\n"
                       "  thrown in /srv/app/src/Cart.php on line 14\n")
    assert issue.title == ""


def test_names_of_non_ascii_letters_are_read_whole():
    """A name starting with an accented letter (`öffnen`) or holding one
    (`Größe`) is one name, never its ASCII pieces (`ffnen`, `Gr`)."""
    assert read_issue("Der Aufruf `Größe.berechnen()` schlägt fehl").identifiers[:3] == [
        "Größe.berechnen", "Größe", "berechnen"]
    identifiers = read_issue("Die Methode Datei.öffnen() schlägt fehl, auch `Datei.öffnen()`").identifiers
    assert "Datei.öffnen" in identifiers and "öffnen" in identifiers and "ffnen" not in identifiers
    # An abbreviation is still none (`u.ä.`, `z.B.`).
    assert read_issue("Dateien, Ordner u.ä. und z.B. Links").modules == []


def test_klog_lines_are_logged_errors_not_message_ids():
    issue = read_issue("Controller loops\n\n"
                       "E0301 12:00:02.123456    4242 controller.go:114] failed to update status: conflict\n"
                       "I0301 12:00:01.123456    4242 leader.go:20] successfully acquired lease default/web\n")
    assert "failed to update status: conflict" in issue.messages
    assert not any("acquired lease" in message for message in issue.messages)
    assert issue.literals == [] and issue.path_lines["controller.go"] == 114


UNCLOSED_LITERALS = r"""
from ctxls.index.locate_signals import _format_words
for quote in "'\"`":
    _format_words("x = 1  # " + quote + "\\" * 1 + (quote + "\\") * 40_000, "request 12 failed after 3s")
"""


def test_a_line_of_escaped_quote_marks_is_read_in_linear_time():
    """A repository's line of escaped quote marks (`'\\'\\'…`) was read as a
    literal never closed from each of them again: 80 KB took minutes a
    chunk. Run apart, so that a regression fails at the timeout instead of
    hanging; the literals around such a line are still read."""
    subprocess.run([sys.executable, "-c", UNCLOSED_LITERALS], check=True, timeout=60)
    source = "# it's " + "'\\" * 100 + "\nraise ValueError('price %s is not %s here', p, q)  # `x\n"
    assert _format_words(source, "price 3 is not 4 here") == 4


def test_a_product_s_name_before_its_release_is_no_path():
    """Node ends each crash it prints with `Node.js v20.11.0`: a runtime, not
    a file `Node.js`."""
    issue = read_issue("TypeError: x is not a function\n    at run (/app/src/cart.js:3:9)\n\nNode.js v20.11.0\n"
                       "Also on Next.js 14.1 with lib/node.js open.")
    assert issue.paths == ["lib/node.js"]


def test_node_s_crash_in_its_own_modules_gives_no_title():
    """Where Node threw inside its own modules heads its output as a file's
    place does, and the `}` closing its dump of the error's properties is
    that output's too."""
    issue = read_issue("node:internal/process/promises:288\n"
                       "            triggerUncaughtException(err, true /* fromPromise */);\n            ^\n\n"
                       "Error: connect ECONNREFUSED 127.0.0.1:5432\n"
                       "    at TCPConnectWrap.afterConnect [as oncomplete] (node:net:1555:16) {\n  errno: -111,\n"
                       "  code: 'ECONNREFUSED'\n}\n\nNode.js v20.11.0\n\nMigrations cannot reach the database\n")
    assert issue.title == "Migrations cannot reach the database"
