"""Locate as a pipeline (index/locate*.py): the text-reading faults fixed at
the source, the shared path classifier, the fitted scorer read from its model
file, its additive contributions, and a selection independent of n."""

from __future__ import annotations

import hashlib
import json
import math
from pathlib import Path

import numpy as np
import pytest

from ctxls.index.engine import Engine
from ctxls.index.locate import Locator
from ctxls.index.locate_paths import PathIndex, go_module_path
from ctxls.index.locate_scorer import (FEATURES, MODEL_PATH, ScorerUnavailable, load_scorer, name_match,
                                       rank, shipped_scorer, text_terms)
from ctxls.index.locate_text import read_issue
from ctxls.index.paths import is_test_or_doc, is_vendored_path

from test_locate import git_tree, indexed_engine

# -- reading the text ---------------------------------------------------------------------------

def test_a_name_an_underscore_marks_at_one_end_is_code_and_markdown_emphasis_is_not():
    issue = read_issue("Config leaks a handle\n\nThe raw open call in execfile_ never closes it; "
                       "_load_module and __getattr__ read it too. This is _really_ broken.\n")
    assert issue.identifiers == ["execfile_", "_load_module", "__getattr__"]


def test_a_name_within_a_written_path_is_the_paths_not_a_mentioned_name():
    # `__init__` of `shop/__init__.py` gave every `__init__` method a `symbol`
    # reason, and files the text never names became candidates on it.
    issue = read_issue("Cart total is wrong\n\nIt fails in /opt/venv/lib/python3.11/site-packages/shop/__init__.py, "
                       "`shop/helpers/__init__.py`, `price_rules.py` and "
                       "https://github.com/o/r/blob/main/src/shop/tax_rules.py#L3 when Cart.__init__ runs.\n\n"
                       'Traceback (most recent call last):\n  File "/srv/site-packages/cachetools/__init__.py", '
                       "line 3, in get_item\n    x\nKeyError: 1\n")
    assert issue.identifiers == ["KeyError", "get_item", "Cart.__init__"]
    assert len(issue.paths) == 4
    # A name that goes on past a path's end is a name (`f.c` is a C file's path).
    assert read_issue("f.c.Result.formatParser fails").identifiers == ["f.c.Result.formatParser"]


def test_an_apostrophe_is_no_quote_mark():
    issue = read_issue("Saving fails\n\nI'll see that the cart is saved twice when I'm offline.\n"
                       "The log says 'the cart was saved twice already' each time.\n")
    assert issue.messages == ["the cart was saved twice already"]


def test_a_listing_of_installed_packages_without_versions_is_not_read():
    text = ("Autodoc skips the class\n\n"
            "Sphinx extensions: sphinx.ext.autodoc, sphinx.ext.napoleon, shop.cart\n\n"
            "Installed plugins:\n- shop.pricing\n- shop_extra.plugin\n- hypothesis\n\n"
            "The docstring of shop.money is not shown.\n")
    issue = read_issue(text)
    assert issue.modules == ["shop.money"]
    assert "shop.cart" not in issue.identifiers and "shop.pricing" not in issue.identifiers
    # A sentence naming packages is no listing; nor is a short list.
    assert read_issue("See the packages: numpy and shop.cart\n").modules == ["shop.cart"]
    assert read_issue("Extensions: shop.cart, shop.money\n").modules == ["shop.cart", "shop.money"]


def rows(issue) -> list[tuple]:
    """(path, line, function, depth) per frame."""
    return [(f.path, f.line, f.function, f.depth) for f in issue.frames]


def test_a_line_that_only_looks_like_a_frame_keeps_its_file():
    # A sanitizer's frame, a compiler's diagnostic (with a column any message,
    # without one an error, warning or note): a frame at its line.
    asan = read_issue("==1==ERROR: AddressSanitizer: stack-buffer-overflow\n"
                      "    #0 0x49a1b3 in __asan_memcpy (/home/me/shop/a.out+0x49a1b3)\n"
                      "    #1 0x4c5e21 in parse_header /home/me/shop/csrc/parse.c:4:3\n"
                      "    #2 0x4c6000 in Cart::add(int, char const*) const /home/me/shop/cart.cc:9:5\n")
    assert rows(asan) == [("/home/me/shop/csrc/parse.c", 4, "parse_header", 0),
                          ("/home/me/shop/cart.cc", 9, "Cart::add", 1)]
    build = read_issue("$ go build ./...\npkg/cart/cart.go:4:9: undefined: j\n"
                       "rs/src/parser.rs:2:18: error[E0308]: mismatched types\n"
                       "shop/cart.py:12: error: Incompatible return value type\n")
    assert rows(build) == [("pkg/cart/cart.go", 4, None, 0), ("rs/src/parser.rs", 2, None, 1),
                           ("shop/cart.py", 12, None, 2)]
    assert build.paths == []
    # Ruby's frames of a block, a rescue, the top of a required file.
    ruby = read_issue("lib/shop/cart.rb:5:in `block (2 levels) in checkout': undefined method `price' "
                      "for nil (NoMethodError)\n\tfrom lib/shop/cart.rb:4:in `each'\n"
                      "\tfrom lib/shop.rb:3:in `<top (required)>'\n")
    assert rows(ruby) == [("lib/shop/cart.rb", 5, "checkout", 0), ("lib/shop/cart.rb", 4, "each", 1),
                          ("lib/shop.rb", 3, "<top (required)>", 2)]
    assert "required" not in ruby.identifiers
    # Go's goroutine creator is a frame of its trace.
    go = read_issue("goroutine 7 [running]:\nshop/cart.(*Cart).Total(0x0)\n\t/src/shop/cart/cart.go:27 +0x1d\n"
                    "created by shop/cart.Start in goroutine 1\n\t/src/shop/cart/start.go:9 +0x25\n")
    assert rows(go) == [("/src/shop/cart/cart.go", 27, "shop/cart.(*Cart).Total", 0),
                        ("/src/shop/cart/start.go", 9, "shop/cart.Start", 1)]
    # A line no frame pattern reads is no frame, and its path is still a path:
    # `go test`'s failures, a Python warning's caller.
    test_run = read_issue("--- FAIL: TestCart (0.00s)\n    cart_test.go:12: got 3, want 4\n"
                          "src/shop/cart.py:5: DeprecationWarning: sum of a cart is deprecated\n")
    assert test_run.frames == [] and test_run.paths == ["cart_test.go", "src/shop/cart.py"]


@pytest.mark.parametrize("frame, path", [
    ("at new CartView (/home/me/shop/web/src/cart.ts:4:13)", "/home/me/shop/web/src/cart.ts"),
    ("at render (webpack:///./src/cart.ts:4:13)", "./src/cart.ts"),
    ("at render (webpack://shop-web/./src/cart.ts:4:13)", "./src/cart.ts"),
    ("at render (webpack-internal:///./src/cart.ts:4:13)", "./src/cart.ts"),
    ("at render (http://localhost:5173/src/cart.ts?t=1712:4:13)", "src/cart.ts"),
    ("at render (C:\\Users\\me\\shop\\web\\src\\cart.ts:4:13)", "C:\\Users\\me\\shop\\web\\src\\cart.ts"),
    ("at render (file:///C:/Users/me/shop/web/src/cart.ts:4:13)", "C:/Users/me/shop/web/src/cart.ts"),
    ("at file:///home/me/shop/web/src/cart.ts:4:13", "/home/me/shop/web/src/cart.ts"),
])
def test_javascript_frames_through_bundlers_dev_servers_and_windows_paths(frame: str, path: str):
    issue = read_issue(f"RangeError: negative\n    {frame}\n    at main (index.js:1:1)\n")
    assert [(f.path, f.line, f.depth) for f in issue.frames] == [(path, 4, 0), ("index.js", 1, 1)]
    assert issue.paths == []


def test_rust_frames_of_trait_and_impl_methods_are_read():
    issue = read_issue("stack backtrace:\n   0: <shopcfg::config::Config as core::str::FromStr>::from_str\n"
                       "             at ./src/config.rs:6:20\n"
                       "   1: shopcfg::config::<impl shopcfg::config::Config>::parse\n"
                       "             at ./src/config.rs:12:9\n   2: shopcfg::main::{{closure}}\n"
                       "             at ./src/main.rs:4:5\n")
    assert [(f.path, f.line, f.depth) for f in issue.frames] == [
        ("./src/config.rs", 6, 0), ("./src/config.rs", 12, 1), ("./src/main.rs", 4, 2)]
    assert {"from_str", "parse"} <= set(issue.identifiers)


def test_each_cause_of_a_java_trace_is_a_trace_of_its_own_the_root_cause_first():
    issue = read_issue('Exception in thread "main" java.lang.RuntimeException: save failed\n'
                       "\tat com.example.shop.Api.save(Api.java:8)\n"
                       "\tat com.example.shop.Controller.post(Controller.java:5)\n"
                       "Caused by: java.lang.IllegalStateException: the pool is closed\n"
                       "\tat com.example.shop.Pool.get(Pool.java:3)\n"
                       "\t... 2 more\n"
                       "Caused by: java.sql.SQLException: order id not assigned\n"
                       "\tat com.example.shop.OrderRepo.insert(OrderRepo.java:6)\n"
                       "\tat com.example.shop.Api.save(Api.java:6)\n"
                       "\t... 1 more\n")
    assert [(f.path.rsplit("/", 1)[-1], f.line, f.depth) for f in issue.frames] == [
        ("OrderRepo.java", 6, 0), ("Api.java", 6, 1), ("Pool.java", 3, 0),
        ("Api.java", 8, 0), ("Controller.java", 5, 1)]
    # .NET prints the inner exception first: the outer one's frames start again.
    dotnet = read_issue("System.InvalidOperationException: save failed\n"
                        " ---> System.Exception: order id not assigned\n"
                        "   at Shop.OrderRepo.Insert() in /src/Shop/OrderRepo.cs:line 6\n"
                        "   --- End of inner exception stack trace ---\n"
                        "   at Shop.Api.Save() in /src/Shop/Api.cs:line 8\n"
                        "   at Shop.Program.Main() in /src/Shop/Program.cs:line 3\n")
    assert [(f.path, f.depth) for f in dotnet.frames] == [
        ("/src/Shop/OrderRepo.cs", 0), ("/src/Shop/Api.cs", 0), ("/src/Shop/Program.cs", 1)]


@pytest.mark.parametrize("line, name", [
    ("Error: Cannot render a negative cart total: -5", None),
    ("Exception: Refusing to submit an order without lines", None),
    ("Unhandled exception. System.Exception: Ledger rejected the posting of 12", None),
    ("Uncaught RangeError: Cannot render a negative cart total", "RangeError"),
    ("Uncaught (in promise) TypeError: the cart has no lines yet", "TypeError"),
])
def test_a_bare_error_line_or_the_consoles_uncaught_gives_its_message(line: str, name: str | None):
    issue = read_issue(f"Checkout fails\n\n{line}\n")
    assert line.split(": ", 1)[1] in issue.messages
    # The base classes name no class of the repository's.
    assert not {"Error", "Exception"} & set(issue.identifiers)
    assert name is None or name in issue.identifiers


@pytest.mark.parametrize("prefix", ["[Error] ", "[Error] Unhandled Promise Rejection: "])
def test_safaris_console_error_lines_give_their_message_and_type(prefix: str):
    issue = read_issue(f"Loading fails in Safari\n\n```\n{prefix}YAMLException: "
                       "end of the stream or a document separator is expected (3:1)\n```\n")
    assert "end of the stream or a document separator is expected (3:1)" in issue.messages
    assert "YAMLException" in issue.identifiers


@pytest.mark.parametrize("line, path", [
    ("\tat app//com.example.shop.CartService.checkout(CartService.java:6)", "com/example/shop/CartService.java"),
    ("\tat com.example.shop@1.0/com.example.shop.CartService.checkout(CartService.java:6)",
     "com/example/shop/CartService.java"),
    ("\tat loader/com.example.shop@1.0/com.example.shop.CartService.checkout(CartService.java:6)",
     "com/example/shop/CartService.java"),
    ("  at Shop.Ledger.Post (System.Int32 amount) [0x00008] in /home/me/game/Assets/Scripts/Ledger.cs:6",
     "/home/me/game/Assets/Scripts/Ledger.cs"),
    ("Shop.Ledger.Post (System.Int32 amount) (at Assets/Scripts/Ledger.cs:6)", "Assets/Scripts/Ledger.cs"),
    ("Shop.Ledger:Post (int) (at Assets/Scripts/Ledger.cs:6)", "Assets/Scripts/Ledger.cs"),
    ("   bei Shop.Ledger.Post(Int32 amount) in C:\\src\\Ledger.cs:Zeile 6", "C:\\src\\Ledger.cs"),
    ("   場所 Shop.Ledger.Post(Int32 amount) 場所 C:\\src\\Ledger.cs:行 6", "C:\\src\\Ledger.cs"),
])
def test_jvm_and_dotnet_frames_in_their_other_printed_forms(line: str, path: str):
    issue = read_issue(f"IllegalStateException: anonymous\n{line}\n")
    assert [(f.path, f.line, f.depth) for f in issue.frames] == [(path, 6, 0)]
    assert issue.paths == []


def test_a_traceback_quoted_as_a_blockquote_is_read_as_one():
    traceback = ('Traceback (most recent call last):\n  File "/app/src/shop/api.py", line 5, in post\n'
                 '    add_item(items)\n  File "/app/src/shop/cart.py", line 3, in add_item\n'
                 "    raise ValueError('quantity must be positive')\nValueError: quantity must be positive")
    for margin in ("> ", ">", "> > "):
        issue = read_issue("Posting crashes\n\n" + "\n".join(margin + line for line in traceback.split("\n")))
        assert rows(issue) == [("/app/src/shop/api.py", 5, "post", 1), ("/app/src/shop/cart.py", 3, "add_item", 0)]
        assert "quantity must be positive" in issue.messages and issue.paths == []
    # A doctest's prompt is no margin.
    assert read_issue("Cart\n\n>>> Cart().total()\n0\n").code == ["Cart().total()"]


def test_an_html_escaped_traceback_is_read_as_shown():
    issue = read_issue("Adding fails\n\nTraceback (most recent call last):\n"
                       "  File &quot;/srv/app/shop/cart.py&quot;, line 3, in &lt;module&gt;\n"
                       "ValueError: quantity for &#39;abc&#39; must be positive&#x21;\n"
                       "See https://example.com/search?a=1&lt=2&amp;b=3\n")
    assert rows(issue) == [("/srv/app/shop/cart.py", 3, "<module>", 0)]
    assert "quantity for 'abc' must be positive!" in issue.messages
    # An entity without its semicolon is a URL's text.
    assert "?a=1&lt=2&b=3" in issue.raw
    # A text with `<`, `>` or `"` of its own was not escaped whole: it writes its entities on purpose.
    assert "`<p>&lt;img src=x&gt;</p>` is shown as text" in read_issue(
        "Escaping\n\n`<p>&lt;img src=x&gt;</p>` is shown as text\n").raw


@pytest.mark.parametrize("escape", ["\x1b", ""], ids=["escape sequences", "what GitHub shows of them"])
def test_a_tracebacks_terminal_colour_codes_are_read_away(escape: str):
    # IPython's colours split the frame's path from its function and the
    # exception's type from its message: no function, no message.
    red, green, cyan, blue, reset = (f"{escape}[{code}m" for code in ("0;31", "0;32", "0;36", "0;34", "0"))
    issue = read_issue(f"Cache popitem fails\n\n```\n{red}KeyError{reset}    Traceback (most recent call last)\n"
                       f"File {green}/opt/venv/lib/python3.11/site-packages/shop/cache.py:17{reset}, "
                       f"in {cyan}Cache.popitem{blue}(self){reset}\n"
                       f"{escape}[1;32m     16{reset} {escape}[38;5;28;01mtry{escape}[39;00m:\n"
                       f"{red}KeyError{reset}: 'popitem(): cache is empty'\n```\n")
    assert rows(issue) == [("/opt/venv/lib/python3.11/site-packages/shop/cache.py", 17, "popitem", 0)]
    assert "cache is empty" in issue.messages and "KeyError" in issue.identifiers
    assert "[0" not in issue.raw
    # A bracketed duration is no colour code.
    assert "[5m]" in read_issue("Retries wait [5m] each\n").raw


def test_an_absolute_path_with_a_space_in_a_folder_name_is_read_whole():
    issue = read_issue("Import warns\n\n"
                       "C:\\Users\\Jane Doe\\myapp\\utils\\helpers.py:3: DeprecationWarning: shop.total is old\n"
                       "My module /home/jane/My Projects/myapp/utils/helpers.py and (C:\\Program Files\\My App\\x.py)\n"
                       "calls it, as src/shop/cart.py and /home/me/a.py with/without tools/b.py do.\n")
    assert issue.paths == ["C:\\Users\\Jane Doe\\myapp\\utils\\helpers.py",
                           "/home/jane/My Projects/myapp/utils/helpers.py", "C:\\Program Files\\My App\\x.py",
                           "src/shop/cart.py", "/home/me/a.py", "tools/b.py"]


@pytest.mark.parametrize("quoted", [
    "'Can't check out an anonymous basket'", "`Can't check out an anonymous basket`",
    "« Can't check out an anonymous basket »", "„Can't check out an anonymous basket“",
    "「Can't check out an anonymous basket」", "‘Can’t check out an anonymous basket’",
])
def test_a_message_in_any_quote_marks_is_read(quoted: str):
    issue = read_issue(f"Guests are blocked\n\nAfter login the page still says {quoted} again.\n")
    assert "Can't check out an anonymous basket" in issue.messages or (
        "Can’t check out an anonymous basket" in issue.messages)


def test_backticked_code_is_no_message():
    issue = read_issue("Install fails\n\nRun `pip install -e .[dev]` and `python -m pytest tests` "
                       "or `cart.add(item, quantity=2)`, `shop_cart total is wrong`.\n")
    assert issue.messages == []


@pytest.mark.parametrize("sentence", [
    "cannot merge mappings; the provided source object is unacceptable",
    "Cannot read properties of undefined (reading 'get')",
    "Unexpected token < in JSON at position 0",
])
def test_a_backticked_error_message_keeps_its_sentences_punctuation(sentence: str):
    # Its `;`, its bracket after a space or its lone `<` read it as code: no message.
    assert sentence in read_issue(f"Loading fails\n\nIt throws `{sentence}` every time.\n").messages
    # A call's, an index's and a type's brackets are still code's.
    for code in ("items[0] is never the first", "List<Item> is not assignable here", "(a).b is not a function"):
        assert read_issue(f"Loading fails\n\nIt throws `{code}` every time.\n").messages == []


@pytest.mark.parametrize("line", [
    "2024-03-01 12:00:01,123 - shop.cart - WARNING - {}",
    "2024-03-01 12:00:01.123 | WARNING  | shop.cart:checkout:8 - {}",
    "[2024-03-01 12:00:01,123] WARNING in cart: {}",
    "2024-03-01T12:00:01.123Z  WARN 4242 --- [main] shop.cart                : {}",
    "2024-03-01T12:00:01.123Z  WARN 4242 --- [shop] [           main] c.e.shop.Cart : {}",
    "12:00:01.123 [main] WARN  shop.Cart - {}",
    "[WARNING] {}",
    "[main] [ERROR] {}",
    "FATAL:  {}",
])
def test_common_log_formats_give_their_message(line: str):
    message = "checkout refused for user bob"
    assert message in read_issue(f"Baskets are lost\n\n```\n{line.format(message)}\n```\n").messages


@pytest.mark.parametrize("separator", ["==", "="])
def test_pip_freeze_and_conda_listings_are_environment_reports(separator: str):
    listing = "\n".join(f"{name}{separator}{version}" for name, version in (
        ("numpy", "1.26.4"), ("pandas", "2.2.1"), ("pyarrow", "15.0.0"), ("sqlalchemy", "2.0.27")))
    issue = read_issue(f"cart_total is wrong\n\nEnvironment:\n\n```\n{listing}\n```\n")
    assert "numpy" not in issue.raw and issue.code == [""]
    # Settings are no versions: lines of `name=0.5` stay.
    settings = read_issue("Slow retries\n\nretry_delay=0.5\nmax_wait=2.5\nback_off=1.5\n")
    assert {"retry_delay", "max_wait", "back_off"} <= set(settings.identifiers)


@pytest.mark.parametrize("report", [
    "app@1.0.0 /home/me/app\n├─┬ semverlib@7.5.4\n│ └── lrucachex@10.0.1 deduped\n└── requestsx@10.3.10\n",
    "app@1.0.0 /home/me/app\n+-- semverlib@7.5.4\n| `-- lrucachex@10.0.1\n`-- requestsx@10.3.10\n",
    "app v0.1.0 (/home/me/app)\n├── semverlib v1.0.197\n│   └── lrucachex v0.4.21 (*)\n└── requestsx v1.10.3\n",
    "attrs==23.1.0\nclick @ file:///home/conda/feedstock_root/build_artifacts/click_1692311806742/work\n"
    "semverlib==2.0.4\nlrucachex @ file:///home/conda/feedstock_root/build_artifacts/l_1/work\nrequestsx==2.31.0\n",
    "- OS: Ubuntu 22.04\n- Python: 3.11\n- semverlib version: 2.0.4\n- requestsx version: 2.31.0\n"
    "- lrucachex version: 10.0.1\n",
], ids=["npm ls", "npm ls in ASCII", "cargo tree", "pip freeze with conda's file lines", "issue template"])
def test_npm_cargo_conda_and_issue_template_environment_reports_are_not_read(report: str):
    issue = read_issue(f"Sum is one cent off\n\nWith a discount the sum is wrong.\n\n```\n{report}```\n")
    assert not [name for name in ("semverlib", "lrucachex", "requestsx") if name in issue.raw]
    assert "With a discount the sum is wrong." in issue.raw


def test_a_markdown_table_of_versions_is_an_environment_report():
    # Its `tiny-yaml` was a `literal` naming the CLI's file; as bullets it was dropped.
    body = "Merge keys crash\n\nLoading a compose file throws.\n\n"
    for report in ("| package | version |\n|---|:---:|\n| tiny-yaml | 4.1.0 |\n| node | 18.17.1 |\n| npm | 9.6.7 |\n",
                   "- tiny-yaml: 4.1.0\n- node: 18.17.1\n- npm: 9.6.7\n"):
        issue = read_issue(body + report)
        assert issue.raw == body and issue.literals == []
    # A table of cases is the text's.
    cases = "| input | expected | got |\n|---|---|---|\n| naturaldelta(89) | a minute | 2 minutes |\n"
    assert read_issue(body + cases).raw == body + cases


def test_an_issue_templates_os_line_counts_with_its_version_lines():
    # `OS:` and two version lines were no report: their words and the
    # section's heading raised `text` on the project's version module.
    body = 'naturaldelta rounds 89 seconds wrongly\n\nIt says "a minute" for 89 seconds.\n\n'
    for report in ("### What versions are you using?\n\n* OS: Ubuntu 22.04\n* Python: 3.12.1\n* Humanize: 4.9.0\n",
                   "## Environment\n- OS: Linux\n- Python version: 3.11\n- voluptuous version: 0.14.2\n",
                   "| | |\n|---|---|\n| OS | macOS 14.2 |\n| Browser | Firefox 121 |\n| tiny-yaml | 4.1.0 |\n"):
        assert read_issue(body + report).raw == body, report
    # Two lines are no report, nor platform lines alone (a setting's), and a
    # heading naming no environment is the text's own.
    for text in (body + "OS: Linux\nPython: 3.12.1\n", body + "platform: linux\narch: x64\nos: ubuntu\n"):
        assert read_issue(text).raw == text
    titled = read_issue("# Crash on load\n\n- OS: Linux\n- Python: 3.11.4\n- humanize: 4.9.0\n")
    assert titled.title == "# Crash on load" and "humanize" not in titled.raw


def test_settings_with_decimal_values_and_an_error_above_versions_are_read():
    # A setting's decimal is no version: a pasted config is the only clue.
    config = read_issue("Configured values have no effect\n\n```yaml\nretry_first_delay: 1.0\n"
                        "retry_backoff_factor: 2.5\nretry_backoff_max: 30.0\n```\n")
    assert config.identifiers == ["retry_first_delay", "retry_backoff_factor", "retry_backoff_max"]
    # An exception printed right above version lines is the evidence, not the report.
    crash = read_issue("Crash\n\n```\nValueError: retry_backoff_max must be positive\nPython: 3.11.4\n"
                       "attrs: 23.1.0\nclick: 8.1.7\n```\n")
    assert crash.messages == ["retry_backoff_max must be positive"]
    assert "attrs" not in crash.raw and "click" not in crash.raw
    # A report's settings-like lines (two-part releases) go with its version lines.
    report = read_issue("Crash\n\npandas: 2.0.3\npytz: 2023.3\nnumpy: 1.25.1\nbottleneck: 1.3\n"
                        "scipy: 1.11.1\n")
    assert "pytz" not in report.raw and "bottleneck" not in report.raw


def test_a_templates_step_bullets_beside_its_version_bullets_are_read():
    """The regression probe: with bullets read as a listing's margin, a
    template's `- Command:` and `- Output: "…"` bullets joined the version
    bullets after them and were read away, the quoted error message with
    them. A line that quotes or shows code is evidence, never a report line."""
    report = read_issue("Passing a file name with spaces fails\n\n- Command: `mytool build my file.txt`\n"
                        '- Output: "Error: Got unexpected extra argument (file.txt)"\n'
                        "- click version: 8.1.7\n- Python version: 3.11.4\n"
                        "- shellingham version: 1.5.4\n- OS: Windows 11\n")
    assert "Got unexpected extra argument" in report.messages
    assert "shellingham" not in report.raw  # the versions are still a report
    starred = read_issue("Validator fails\n\n* Error: `ValueError: Length of 'name' must be <= 5: 7`\n"
                         "* attrs version: 23.1.0\n* Python version: 3.11.4\n* pytest version: 7.4.0\n")
    assert "ValueError" in starred.identifiers and "Length of 'name' must be" in starred.raw
    assert "pytest" not in starred.raw


def test_code_words_glued_to_chinese_or_japanese_text_are_read():
    chinese = read_issue("购物车折扣错误\n\n请看shop/cart.py文件，CartTotals的apply_discount方法在数量为0时返回负数。"
                         "运行时加上--fast-mode选项，报W0611。\n")
    assert chinese.paths == ["shop/cart.py"]
    assert chinese.identifiers == ["CartTotals", "apply_discount"]
    assert chinese.literals == ["--fast-mode", "W0611"]
    assert read_issue("结账失败\n\n日志里报'cart total must not be negative'了。\n").messages == [
        "cart total must not be negative"]
    assert read_issue("详见https://github.com/o/r/blob/main/src/shop/cart.py文件。\n").paths == [
        "/o/r/blob/main/src/shop/cart.py"]
    japanese = read_issue("TextWrapperクラスのextra_indentメソッドがtextwrap.pyで壊れる\n")
    assert japanese.identifiers == ["TextWrapper", "extra_indent"] and japanese.paths == ["textwrap.py"]
    assert japanese.prominence("TextWrapper") == 1.0  # in the title
    # A path written apart names its folders and file in any script after its
    # root or first folder; names in other scripts are read as before.
    others = read_issue("我把文件放在 C:\\Users\\张三\\Desktop\\cart.py 里，见 docs/中文/说明.md。\n"
                        "Größe.berechnen fails in shop/größe.py\n")
    assert others.paths == ["C:\\Users\\张三\\Desktop\\cart.py", "docs/中文/说明.md", "shop/größe.py"]
    assert others.identifiers == ["Größe.berechnen"]


def test_a_links_line_anchor_is_no_message_id():
    issue = read_issue("Wrong default\n\nSee https://github.com/pallets/click/blob/main/src/click/core.py#L120-L135 "
                       "and src/click/types.py#L1042; pylint says W0611.\n")
    assert issue.literals == ["W0611"]
    assert issue.paths == ["src/click/types.py", "/pallets/click/blob/main/src/click/core.py"]


LOG_FILES = {
    "shop/__init__.py": "",
    "shop/loader.py": (
        "import logging\n"
        "log = logging.getLogger(__name__)\n"
        "\n"
        "\n"
        "def load(name, where):\n"
        "    log.warning('%(kind)s %(name)r not found below %(where)s', {'kind': 'template',\n"
        "                'name': name, 'where': where})\n"
        "    return None\n"
    ),
    "shop/render.py": (
        "def render(name):\n"
        "    raise LookupError(f'{name} has no template below {name}')\n"
    ),
    "shop/options.py": (
        "OPTIONS = {'--fast': 1, '--quiet': 2, '--color': 3, '--verbose': 4, '--dry-run': 5}\n"
    ),
    "shop/cart.py": (
        "def add(cart, item, dry_run=False):\n"
        "    if dry_run:\n"
        "        return cart\n"
        "    return cart + [item]\n"
    ),
}


@pytest.fixture
def logs(tmp_path: Path):
    yield from indexed_engine(git_tree(tmp_path / "logs", LOG_FILES))


def test_a_logged_warning_matches_the_format_string_it_was_written_from(logs: Engine):
    # The quoted values ('base.html', shop/templates) are in no chunk: the
    # message's fixed words find the chunk, its format string matches the line.
    # (The title names no file: in a five-file tree every title word is rare.)
    located = logs.locate("Pages come out blank\n\nWARNING: template 'base.html' not found below "
                          "shop/templates\n", 3)
    assert located[0].path == "shop/loader.py"
    assert located[0].signals["message"] == 1.0


@pytest.mark.parametrize("source, message", [
    ('fprintf(stderr, "expected %zu bytes, got %lld from the stream\\n", n, m);',
     "expected 16 bytes, got 3 from the stream"),  # C's length modifiers
    ('NSLog(@"could not open %@ for writing", path);', "could not open /tmp/cart.db for writing"),
    ('throw IllegalStateException("Expected $count items but found $size")', "Expected 3 items but found 4"),
    ('fatalError("Cannot decode \\(key) in the container")', "Cannot decode sku in the container"),
])
def test_a_message_fills_in_each_languages_format_placeholders(source: str, message: str):
    from ctxls.index.locate_signals import _format_words

    assert _format_words(source, message) >= 4


def test_pasted_tool_output_does_not_make_its_registry_the_answer(logs: Engine):
    text = ("add() ignores dry_run and adds the item\n\n"
            "```\n$ shop --fast --quiet --color --verbose --dry-run\nadded 1 item\n```\n")
    evidence = Locator().evidence(logs.store.reader(), text)
    # Five options only the pasted command writes: one piece of evidence, at
    # the share of a name written only in code.
    assert evidence["shop/options.py"].signals["literal"] <= 0.25
    located = logs.locate(text, 3)
    assert located[0].path == "shop/cart.py"


# -- the shared path classifier -----------------------------------------------------------------

def test_versioned_and_minified_web_libraries_are_vendored():
    for path in ("static/js/jquery-3.6.0.js", "app/static/lib/bootstrap-4.1.3/js/bootstrap.js",
                 "assets/d3.v5.min.js", "web/htmx@1.9.2.js", "static/select2.min.css"):
        assert is_vendored_path(path) and is_test_or_doc(path), path
    for path in ("static/js/main.js", "src/app.js", "lib/v2/api.js", "src/build/__init__.py",
                 "static/app.bundle.js"):
        assert not is_vendored_path(path), path


def test_a_deps_folder_at_the_repository_top_is_vendored_and_deeper_is_not():
    """ujson (like node and redis) copies double-conversion into `deps/`:
    its files outranked the project's own encoder for "encode a double to
    string". `deps/` counts as vendored at the top only."""
    assert is_vendored_path("deps/double-conversion/double-conversion/strtod.cc")
    assert is_vendored_path("deps/jemalloc/src/arena.c")
    assert not is_vendored_path("src/deps/resolver.py") and not is_vendored_path("deps.py")
    assert not is_vendored_path("lib/dconv_wrapper.cc")


# -- resolving a written path -------------------------------------------------------------------

GO_FILES = ["flag.go", "bool.go", "main.go", "internal/parse.go", "tools/gen/emit.go"]
# go.mod's module per folder: the root's module and a nested one.
GO_MODULES = {"": "github.com/acme/flagx", "tools/gen": "github.com/acme/flagx/tools/gen"}


def test_a_go_module_caches_frame_names_only_the_repositorys_own_modules_files():
    index = PathIndex(GO_FILES, go_module=GO_MODULES.get)
    cache = "/home/ops/go/pkg/mod"
    # A file at the module's root (where most Go libraries keep their code), one below it.
    assert index.resolve_path(f"{cache}/github.com/acme/flagx@v1.0.5/flag.go") == ("flag.go", 1)
    assert index.resolve_path(f"{cache}/github.com/acme/flagx@v1.0.5/internal/parse.go") == (
        "internal/parse.go", 2)
    assert index.resolve_path(f"{cache}/github.com/acme/flagx/tools/gen@v0.2.0/emit.go") == (
        "tools/gen/emit.go", 1)
    # The cache writes a capital as `!` and its letter.
    upper = PathIndex(["decode.go"], go_module={"": "github.com/BurntSushi/toml"}.get)
    assert upper.resolve_path(f"{cache}/github.com/!burnt!sushi/toml@v1.3.2/decode.go") == ("decode.go", 1)
    # Another module's file of the same tail, the cache's downloads: none of the repository's.
    for written in (f"{cache}/github.com/other/cli@v2.1.0/internal/parse.go",
                    f"{cache}/github.com/other/cli@v2.1.0/flag.go",
                    f"{cache}/cache/download/github.com/acme/flagx/@v/flag.go"):
        assert index.resolve_path(written) is None, written


def test_a_go_frames_function_names_its_file_in_a_checkout_elsewhere():
    index = PathIndex(GO_FILES, go_module=GO_MODULES.get)
    checkout = "/home/runner/work/flagx/flagx"
    assert index.resolve_path(f"{checkout}/flag.go", "github.com/acme/flagx.(*FlagSet).AddFlag") == (
        "flag.go", 1)
    assert index.resolve_path(f"{checkout}/internal/parse.go", "github.com/acme/flagx/internal.SplitArg") == (
        "internal/parse.go", 2)
    # Type arguments may hold another package's path.
    assert index.resolve_path(f"{checkout}/bool.go", "github.com/acme/flagx.Map[go.shape.*github.com/x/y.T]"
                              ) == ("bool.go", 1)
    # A user's own program: its `main` package (or another module's) is none of the
    # repository's, so its main.go is not the repository's main.go.
    for written, function in (("/home/jo/app/main.go", "main.main"), ("/home/jo/app/flag.go", "main.parseFlags"),
                              ("/home/jo/app/flag.go", "github.com/jo/app.parseFlags"),
                              ("/home/jo/app/main.go", None),
                              # the package's folder is not the one the path was written in
                              ("/home/jo/app/emit.go", "github.com/acme/flagx/tools/gen/internal.Emit")):
        assert index.resolve_path(written, function) is None, (written, function)
    assert go_module_path("// the flags\nmodule github.com/acme/flagx // v1\n\ngo 1.21\n") == (
        "github.com/acme/flagx")
    assert go_module_path('module (\n\t"example.com/flagx"\n)\n') == "example.com/flagx"
    assert go_module_path("go 1.21\n") is None


def test_a_go_panic_gives_frames_on_its_modules_root_files_written_anywhere(tmp_path: Path):
    files = {"go.mod": "module github.com/acme/flagx\n\ngo 1.21\n",
             "flag.go": "package flagx\n\ntype FlagSet struct{}\n\nfunc (f *FlagSet) AddFlag(name string) {\n"
                        "\tpanic(name)\n}\n",
             "main.go": "package flagx\n\nfunc main() {}\n",
             "internal/parse.go": "package internal\n\nfunc SplitArg(arg string) string {\n\treturn arg\n}\n"}
    for engine in indexed_engine(git_tree(tmp_path / "flagx", files)):
        # The module cache of a user's machine, the project's own CI checkout.
        for prefix in ("/home/ops/go/pkg/mod/github.com/acme/flagx@v1.0.5", "/home/runner/work/flagx/flagx"):
            located = {f.path: f for f in engine.locate(
                "Startup panics\n\n```\ngoroutine 1 [running]:\n"
                f"github.com/acme/flagx.(*FlagSet).AddFlag(...)\n\t{prefix}/flag.go:6 +0x6a5\n"
                f"github.com/acme/flagx/internal.SplitArg(...)\n\t{prefix}/internal/parse.go:4\n"
                "main.main()\n\t/home/jo/app/main.go:14 +0x4b\n```\n", 5)}
            assert located["flag.go"].signals["frame"] == 1.0, prefix
            assert "frame" in located["internal/parse.go"].signals, prefix
            # The user's own main.go is not the repository's.
            assert "main.go" not in located or "frame" not in located["main.go"].signals, prefix
    assert Locator(root=tmp_path / "flagx").signals._go_module("") == "github.com/acme/flagx"


# -- the scorer ---------------------------------------------------------------------------------

def test_the_shipped_model_is_checked_and_names_its_features(tmp_path: Path):
    scorer = shipped_scorer()
    model = json.loads(MODEL_PATH.read_text())
    assert model["features"] == list(FEATURES) and scorer.kind == model["kind"]
    assert model["training"]["data"]
    tampered = tmp_path / "locate-scorer.json"
    tampered.write_text(MODEL_PATH.read_text().replace('"bias"', '"bias" ', 1))
    with pytest.raises(ScorerUnavailable):
        load_scorer(tampered)
    other = dict(model, features=list(FEATURES)[:-1])
    other_path = tmp_path / "other.json"
    other_path.write_text(json.dumps(other))
    with pytest.raises(ScorerUnavailable):
        load_scorer(other_path, sha256=hashlib.sha256(other_path.read_bytes()).hexdigest())


def _trees_model(tmp_path: Path) -> Path:
    """A two-tree ensemble over `frame` and `test_or_doc`, as the trainer writes it."""
    frame, test = FEATURES.index("frame"), FEATURES.index("test_or_doc")
    trees = [{"feature": [frame], "threshold": [0.5], "left": [-1], "right": [-2],
              "node_value": [0.2], "leaf_value": [0.0, 1.0]},
             {"feature": [test, frame], "threshold": [0.5, 0.9], "left": [1, -2], "right": [-1, -3],
              "node_value": [0.1, 0.3], "leaf_value": [-1.0, 0.0, 0.5]}]
    path = tmp_path / "trees.json"
    path.write_text(json.dumps({"version": 1, "kind": "trees", "features": list(FEATURES),
                                "bias": 0.5, "trees": trees, "training": {"data": "test"}}))
    return path


@pytest.mark.parametrize("kind", ["shipped", "trees"])
def test_contributions_add_up_to_the_score(kind: str, tmp_path: Path):
    scorer = shipped_scorer() if kind == "shipped" else load_scorer(_trees_model(tmp_path), None)
    candidates = {"shop/cart.py": {"frame": 1.0, "symbol": 0.5, "text": 0.3},
                  "tests/test_cart.py": {"frame": 0.6, "text": 1.0},
                  "shop/money.py": {"text": 0.7}}
    ranked = rank(scorer, candidates, 3)
    for scored in ranked:
        shares = sum(c.contribution for c in scorer.contributions(scored.record))
        if scorer.kind == "linear":
            assert math.isclose(scorer.bias + shares, scored.raw, abs_tol=1e-9)
            assert math.isclose(scored.score, 1 / (1 + math.exp(-scored.raw)))
        else:
            base = scorer.bias + sum(t.root_value for t in scorer.trees)
            assert math.isclose(base + shares, scored.raw, abs_tol=1e-9)
    if kind == "trees":  # by hand: cart 0.5 + 1.0 + 0.5; a tie of 0.5 ordered by path
        assert [(s.path, s.raw) for s in ranked] == [("shop/cart.py", 2.0), ("shop/money.py", 0.5),
                                                     ("tests/test_cart.py", 0.5)]


def test_trees_predict_each_record_as_walked_by_hand(tmp_path: Path):
    scorer = load_scorer(_trees_model(tmp_path), None)
    records = np.zeros((3, len(FEATURES)))
    records[0, FEATURES.index("frame")] = 1.0
    records[1, FEATURES.index("frame")] = 0.7
    records[2, FEATURES.index("test_or_doc")] = 1.0
    assert scorer.raw(records).tolist() == [2.0, 1.5, -0.5]


def test_the_top_k_of_a_larger_n_is_the_list_of_k(tmp_path: Path):
    # Ten files define `checkout` (ten equal candidates), three tests too.
    files = {f"shop/store{i}.py": f"def checkout(cart):\n    return cart.total({i})\n" for i in range(10)}
    files |= {f"tests/test_store{i}.py": "def checkout():\n    pass\n" for i in range(3)}
    for engine in indexed_engine(git_tree(tmp_path / "stores", files)):
        for include_tests in (False, True):
            ten = [(f.path, f.score) for f in engine.locate("checkout() fails", 10, include_tests)]
            fifty = [(f.path, f.score) for f in engine.locate("checkout() fails", 50, include_tests)]
            assert len(fifty) == 13 and ten == fifty[:10]
            # Equal scores are ordered by path.
            assert [p for p, _ in ten[:10]] == sorted(p for p, _ in ten[:10])


def test_every_located_file_says_why_in_additive_contributions(logs: Engine):
    located = logs.locate("WARNING: template 'base.html' not found below shop/templates", 3)
    scorer = shipped_scorer()
    for hit in located:
        assert hit.why and all(c.feature in FEATURES for c in hit.why)
        magnitudes = [abs(c.contribution) for c in hit.why]
        assert magnitudes == sorted(magnitudes, reverse=True)
    top = located[0]
    # The message's evidence raises it: as `message` (linear), or as the strongest
    # signal or the signal count it sets (the trees of a ranking ensemble).
    assert any(c.feature in ("message", "max_signal", "signal_count") and c.value > 0 and c.contribution > 0
               for c in top.why)
    if scorer.kind == "linear":
        assert 0.0 < top.score < 1.0


def test_the_name_feature_is_the_share_of_a_file_or_folder_name_the_text_says():
    terms = text_terms("The JSON encoder drops the timezone of aware datetimes")
    assert name_match("pkg/encoder.py", terms) == 1.0
    # A compound name's words, and the compound whole (said only as written).
    assert name_match("pkg/json_encoder.py", terms) == pytest.approx(2 / 3)
    assert name_match("pkg/json_encoder.py", text_terms("json_encoder fails")) == 1.0
    assert name_match("pkg/TimezoneCache.java", terms) == pytest.approx(1 / 3)  # timezonecache, timezon, cach
    assert name_match("encoder/base.py", terms) == 1.0  # its folder's name
    assert name_match("pkg/decoder.py", terms) == 0.0
    assert name_match("pkg/encoder.py", frozenset()) == 0.0


def test_a_file_the_text_names_outranks_an_equal_candidate_it_does_not(tmp_path: Path):
    # Two files with the same code: only their names tell them apart.
    body = "def write(value, zone):\n    return value.astimezone(zone).isoformat()\n"
    files = {"shop/encoder.py": body, "shop/renderer.py": body}
    # Other code, so that the two files' words are rare enough to count.
    files |= {f"shop/part{i}.py": f"def part{i}(cart):\n    return cart.items[{i}]\n" for i in range(60)}
    for engine in indexed_engine(git_tree(tmp_path / "names", files)):
        located = engine.locate("the encoder writes value with the wrong zone", 2)
        assert [f.path for f in located] == ["shop/encoder.py", "shop/renderer.py"]
        assert any(c.feature == "name" and c.value == 1.0 and c.contribution > 0 for c in located[0].why)


def test_a_message_with_its_value_in_typographic_quotes_matches_its_format_string(tmp_path: Path):
    files = {"shop/__init__.py": "",
             "shop/options.py": ("def check_arity(name, nargs, got):\n    if got != nargs:\n"
                                 "        raise TypeError(f'Argument {name!r} takes {nargs} values.')\n"),
             "shop/cart.py": "class Cart:\n    def add(self, item):\n        self.items.append(item)\n"}
    for engine in indexed_engine(git_tree(tmp_path / "quotes", files)):
        # The quoted value's words are in no chunk: in any quote marks they are
        # what the format string filled in, not its fixed words.
        for opening, closing in (("'", "'"), ("‘", "’"), ("“", "”"), ("«", "»"), ("„", "“")):
            text = f"Wrong arity\n\n```\nTypeError: Argument {opening}verbosity_level{closing} takes 2 values.\n```\n"
            located = {f.path: f for f in engine.locate(text, 3)}
            assert located["shop/options.py"].signals.get("message") == 1.0, opening
            # Split at its quote marks, the message's parts are looked for too.
            assert "takes 2 values." in read_issue(text).messages, opening


def test_a_message_reason_cites_the_line_of_the_message(tmp_path: Path, logs: Engine):
    steps = "".join(f"    step_{i} = value * {i}\n" for i in range(30))
    files = {"shop/__init__.py": "",
             "shop/quantity.py": ('def check_quantity(value):\n    """Validate a quantity."""\n' + steps
                                  + "    if value < 0:\n"
                                  "        raise ValueError(f'quantity {value} must not be negative in this basket')\n"
                                  "    return value\n"),
             "shop/cart.py": "class Cart:\n    def add(self, item):\n        self.items.append(item)\n"}
    for engine in indexed_engine(git_tree(tmp_path / "message-line", files)):
        located = {f.path: f for f in engine.locate(
            "Adding fails\n\n```\nValueError: quantity -3 must not be negative in this basket\n```\n", 3)}
        # Found by its run of words, on line 33 of a chunk from line 0.
        assert {r.line for r in located["shop/quantity.py"].reasons if r.signal == "message"} == {33}
    # Found by the format string it fills in: shop/loader.py's line 5.
    located = {f.path: f for f in logs.locate(
        "Pages come out blank\n\nWARNING: template 'base.html' not found below shop/templates\n", 3)}
    assert {r.line for r in located["shop/loader.py"].reasons if r.signal == "message"} == {5}
