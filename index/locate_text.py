"""Locate, step 1: reading an issue text the way an engineer reads it.

:func:`read_issue` splits a text into prose and code (fenced and doctest
blocks), and reads from it traceback frames (Python as the interpreter,
IPython and pytest print them, JavaScript/Node, Java, Go panics, Rust
backtraces), error and log messages, quoted sentences, identifiers, file
paths (with the line they name, and the repository path a forge's URL
names), dotted module names and names registered as strings. It knows nothing
of the repository: index/locate_signals.py looks what it found up in the index.
"""

from __future__ import annotations

import bisect
import functools
import html
import itertools
import re
from dataclasses import dataclass, field

from ctxls.index.chunker import reads_definitions
from ctxls.index.languages import DEFAULT_INCLUDE, language_for_path
from ctxls.index.tokenize import NO_SPACE_SCRIPTS, STOPWORDS

# A character of a name or a path: a word character of any script but those
# written without spaces (tokenize's runs read as bigrams: Han, kana, Hangul,
# Thai). Chinese and Japanese glue code words to the sentence
# (`请看shop/cart.py文件，CartTotals的apply_discount方法`): their letters end a
# name as a space would, while accented Latin, Greek or Cyrillic letters stay
# part of one (`Größe.berechnen`).
_NAME_CHAR = rf"[^\W{NO_SPACE_SCRIPTS}]"
# A name's first character: a letter of those scripts or `_` (`öffnen`, `_private`).
_NAME_START = rf"[^\W\d{NO_SPACE_SCRIPTS}]"
# Those scripts' own punctuation (`，`, `。`, `「`, full-width forms): no URL's.
_NO_SPACE_PUNCTUATION = "\u3000-\u303f\uff00-\uffef"

@dataclass(frozen=True)
class Frame:
    """One stack frame as printed. ``depth`` 0 is where the error was raised
    (the last frame of a Python traceback, the first of faulthandler's dump
    and of the others)."""

    path: str
    line: int | None  # 1-based, as printed
    function: str | None
    language: str
    depth: int


@dataclass
class IssueText:
    prose: str  # the text without its code blocks and tracebacks
    code: list[str] = field(default_factory=list)  # code blocks (fenced, doctest, indented)
    frames: list[Frame] = field(default_factory=list)
    messages: list[str] = field(default_factory=list)  # error messages / quoted sentences
    identifiers: list[str] = field(default_factory=list)  # code names, first mention first
    paths: list[str] = field(default_factory=list)  # file paths as written
    modules: list[str] = field(default_factory=list)  # dotted module names (import lines too)
    imported: list[tuple[str, str]] = field(default_factory=list)  # (module, name) of `from m import n`
    # Names a project registers as strings, not symbols: command-line options
    # (`--import-mode`), message ids (`W0611`, `admin.E108`), hyphenated names
    # (`unused-import`), reST directives (`.. automodule::`).
    literals: list[str] = field(default_factory=list)
    title: str = ""  # the first line of the report's own prose ("" when none)
    raw: str = ""  # the whole text
    # A source path read from a documentation page's link (see
    # _source_of_docs_page), by the link's path the text writes.
    linked_paths: dict[str, str] = field(default_factory=dict)
    # The module whose source such a page shows (`_modules/shop.html`:
    # `shop`, a module's file or a package's `__init__`), by its path in ``paths``.
    linked_modules: dict[str, str] = field(default_factory=dict)
    # The file's path from the repository's root that a forge's file URL
    # names after its ref (see _repository_path_of_url), by the URL's path in ``paths``.
    repository_paths: dict[str, str] = field(default_factory=dict)
    # The line a written path names (1-based as written: `cart.py:12`, a
    # link's `#L12-L20`), by its entry in ``paths``; its first mention's.
    path_lines: dict[str, int] = field(default_factory=dict)

    def prominence(self, name: str) -> float:
        """How central a name is to the text: named in the title 1, else by how
        often it occurs (once 0.35, twice 0.6, more 0.8)."""
        word = re.compile(rf"(?<!{_NAME_CHAR})" + re.escape(name) + rf"(?!{_NAME_CHAR})")
        if word.search(self.title):
            return 1.0
        return PROMINENCE_BY_COUNT[min(len(word.findall(self.raw)), len(PROMINENCE_BY_COUNT) - 1)]

    @functools.cached_property
    def _prose_without_imports(self) -> str:
        return _IMPORT_LINE.sub("", self.prose)

    def in_prose(self, written: str) -> bool:
        """Whether the prose writes ``written`` outside import lines: a module
        the text names only in its code (`import matplotlib.pyplot as plt`, a
        call through that alias, a fenced block) is how the reporter reached
        the code, seldom where it breaks."""
        written = self.linked_paths.get(written, written)
        # A path read from a name (`-p no:cacheprovider`: `cacheprovider.py`) by that name.
        as_name = written.removesuffix(".py").replace("/", ".")
        return written in self._prose_without_imports or as_name in self._prose_without_imports


# A name's weight by how often the text mentions it (index: mentions, capped).
PROMINENCE_BY_COUNT = (0.35, 0.35, 0.6, 0.8)
# A message is looked for by its words in chunks (locate_signals): an error
# line longer than this is a dump (a pasted log, a data value), and reading
# one of 40,000 characters cost seconds per chunk; it is cut at a space.
MAX_MESSAGE_CHARS = 1_000
# A dotted name of more parts is no module (resolving one costs the square of
# its parts: `a.a.a…` of 20,000 parts took minutes).
MAX_MODULE_PARTS = 64

# Spaces in an absolute path, at most: a path written in prose (read back
# from its file's name, _absolute_start) or a frame's (a hostile line of
# `panicked at '…', /a b c …` read each path to the line's end: quadratic).
_SPACES_IN_PATH = 3


def _spaced_absolute(char: str) -> str:
    """An absolute path (from its root, home or a drive) of ``char``s whose
    folder names hold up to _SPACES_IN_PATH spaces (`/Users/jane/Library/Application
    Support/…`, `C:\\Users\\Jane Doe\\…`), for a frame whose syntax delimits
    its path (`at fn (PATH:12:5)`, `panicked at PATH:3:9:`, `File PATH:91,
    in f`). Each space is followed by a name's character, so each end of the
    path has one reading (linear)."""
    return rf"(?:[A-Za-z]:)?[\\/~]{char}*(?: {char}+){{0,{_SPACES_IN_PATH}}}"


# A fenced block opens on a line starting ``` or ~~~ (after spaces or tabs)
# and closes at the next line holding that marker alone (fenced_blocks).
_FENCE_OPENER = re.compile(r"[ \t]*(```|~~~)")
_DOCTEST = re.compile(r"^[ \t]*(?:>>>|\.\.\.)[ \t]?.*$", re.M)

# Line-anchored patterns start with `[ \t]*`, never `\s*`: under re.M that would
# run across blank lines from every line start (quadratic: minutes for a text
# of 40,000 newlines). Python 3.11's exception groups print their tracebacks
# behind `|` margins. faulthandler writes its function without the comma
# (`File "keys.py", line 12 in __hash__`).
_PY_FRAME = re.compile(r'^[ \t]*(?:\|[ \t]*)*File "([^"]+)", line (\d+)(?:,? in ([^\s]+))?', re.M)
# faulthandler's header over each thread's frames (`Current thread 0x… (most
# recent call first):`, `Stack (most recent call first):`): innermost first.
_MOST_RECENT_FIRST = re.compile(r"\(most recent call first\):?[ \t]*\n[ \t]*$")
# The other ways Python frames get printed, most recent call last too:
# IPython 8 `File ~/env/.../dataarray.py:409, in DataArray.__init__(self, …)` (a
# module's top level without `, in …`),
# older IPython `~/env/.../point.py in __add__(self, other)` followed by its
# source with `--> 220` at the line, pytest's short form `sympy/core/expr.py:124:
# in __eq__` (before the source) and its long form `sympy/core/expr.py:124: `
# (after the source; the last frame of a traceback ends in the exception's type:
# `src/shop/pricing.py:6: ValueError`). pytest's default mixes both forms.
_PY_FRAME_OTHER = re.compile(
    r"^[ \t]*(?:File (?P<ipy8>(?:" + _spaced_absolute(r"[^\s\"]") + r"|[^\s\"]+)\.py):(?P<ipy8_line>\d+)"
    r"(?:, in (?P<ipy8_fn>[\w.<>]+))?"
    r"|(?P<ipy>[^\s\"]+\.py) in (?P<ipy_fn>[\w.<>]+)\("
    r"|(?P<pytest>[^\s\"]+\.py):(?P<pytest_line>\d+): in (?P<pytest_fn>[\w.<>]+)\s*$"
    r"|(?P<pylong>[^\s\"]+\.py):(?P<pylong_line>\d+):(?:[ \t]+(?P<pylong_exc>[\w.]+))?[ \t]*$)", re.M)
_IPYTHON_ARROW = re.compile(r"^[ \t]*-+>\s*(\d+)", re.M)
# Lines between two frames of one printed traceback, at most (IPython shows
# a few lines of source around each; pytest's long form whole functions).
_PY_FRAME_GAP_LINES = 12
_PYTEST_LONG_GAP_LINES = 200
# `at fn (/path/x.js:10:5)`, `at /path/x.js:10:5`, `at async fn (file:///x.mjs:1:2)`,
# `at new Cart (…)`; a bundler's or dev server's URL names the project's file
# after its origin (`webpack:///./src/cart.ts`, `webpack-internal:///./src/…`,
# `http://localhost:5173/src/cart.ts?t=1`), a file URL or a Windows path
# from its drive (`file:///C:/app/cart.ts`, `C:\app\cart.ts`).
_JS_PLACE = (r"(?:file://(?:/(?=[A-Za-z]:))?|webpack(?:-internal)?://[^/\s()]*/|https?://[^/\s()]+/)?"
             r"(?P<path>(?:" + _spaced_absolute(r"[^\s():?]") + r"|(?:[A-Za-z]:)?[^\s():?]+)"
             r"\.(?:[cm]?js|jsx|tsx?|vue|svelte))(?:\?[^\s():]*)?"
             r":(?P<line>\d+)(?::\d+)?")
_JS_FRAME = re.compile(
    r"^[ \t]*at (?:async )?(?:new )?(?:(?P<fn>[^\s()]+(?: \[as [^\]\n]{1,200}\])?) \()?"
    + _JS_PLACE + r"\)?\s*$", re.M)
# Firefox and Safari: `replaceXRange@http://localhost:5173/src/range.ts:11:22`,
# a function's name before the `@` (`Range/this.set<@…`, `async*load@…`,
# Safari's `global code@…`, none for an anonymous one).
_JS_AT_FRAME = re.compile(
    r"^[ \t]*(?:(?:global|module|eval) code|(?P<fn>[^\s@]{1,200}))?@" + _JS_PLACE + r"[ \t]*$", re.M)
# Vitest: ` ❯ src/range.ts:11:22`, ` ❯ Object.notify src/atom.ts:6:29`.
_VITEST_FRAME = re.compile(r"^[ \t]*❯ (?:(?P<fn>[^\s()]{1,200}) )?" + _JS_PLACE + r"[ \t]*$", re.M)
# Where Node threw, printed above the stack: the place alone on its line, then
# the source line and a caret under it (`/app/lib/parse.js:12`, `export
# function parse(…`, `^^^^^^`): a SyntaxError's only place. Babel names it
# in its message (`SyntaxError: /app/src/cart.js: Unexpected token (120:4)`).
_NODE_THROWN = re.compile(r"^[ \t]*" + _JS_PLACE + r"[ \t]*(?=\n[^\n]*\n[ \t]*\^)(?P<fn>)", re.M)
_BABEL_PLACE = re.compile(
    r"^[ \t]*(?:\w{0,100}Error: )?(?P<path>(?:" + _spaced_absolute(r"[^\s():?]") + r"|(?:[A-Za-z]:)?[^\s():?]+)"
    r"\.(?:[cm]?js|jsx|tsx?|vue|svelte)): [^\n]*?\((?P<line>\d+):\d+\)[ \t]*$(?P<fn>)", re.M)
# `at com.example.Foo.bar(Foo.java:42)`; since Java 9 behind the class loader's
# and the module's names: `at app//com.example.Foo.bar(…)`, `at java.base@17/java.lang.…`.
_JAVA_FRAME = re.compile(
    r"^[ \t]*at (?:[\w.$@+-]*/){0,2}(?P<qual>[\w$.<>]+)\((?P<file>[\w$]+\.(?:java|kt|scala|groovy)):"
    r"(?P<line>\d+)\)", re.M)
# Where a Java trace's next section is the cause of the one before (printed last: the root cause).
_JAVA_CAUSE = re.compile(r"^[ \t]*Caused by: ", re.M)
# Go: a function line, then `\t/path/file.go:123 +0x1d`; the goroutine's creator
# after its frames (`created by main.main in goroutine 1`).
_GO_FRAME = re.compile(r"^(created by )?(?P<fn>\S+?)(?(1)(?: in goroutine \d+)?|\([^()\n]*\))\n"
                       r"[ \t]+(?P<path>\S+\.go):(?P<line>\d+)", re.M)
# Rust: `  3: crate::module::func` then `at ./src/module.rs:12:5`; a trait's or an
# impl's method is written with spaces (`<shop::Config as core::str::FromStr>::from_str`).
_RUST_FRAME = re.compile(r"^[ \t]*\d+: (?P<fn>[^\n]+)\n[ \t]+at (?P<path>(?:" + _spaced_absolute(r"\S")
                         + r"|\S+)\.rs):(?P<line>\d+)", re.M)
# The other ecosystems' own trace formats, innermost frame first:
# .NET: `   at Shop.Cart.Add(Item item) in /src/Shop/Cart.cs:line 42`, in the
# system's language too (`bei … in C:\src\Cart.cs:Zeile 42`), and as Mono
# prints it (`at Shop.Cart.Add (Shop.Item item) [0x00012] in /src/Shop/Cart.cs:42`).
# A generic method's type arguments follow its name (`Build[T](…)`); an
# iterator's frame ends `+MoveNext()` (`Tokenize(String value)+MoveNext()`);
# what the compiler generates for an async method, a lambda or a local
# function names the source's method in angle brackets before `d__`, `b__`,
# `g__` (`<SaveAsync>d__5.MoveNext()`, `<>c.<Main>b__0_0(…)`): that method
# is the frame's.
_CSHARP_FRAME = re.compile(
    r"^[ \t]*\w{1,12} (?:(?=[^\s(]*<(?P<generated>\w+)>\w__))?(?:[^\s(]+\.)?(?P<fn>[^\s.(\[]+)(?:\[[^\]\n]*\])?"
    r" ?\([^()\n]*\)(?:\+\w+\(\))?(?: \[0x[0-9a-fA-F]+\])? \w{1,12} "
    r"(?P<path>(?:[A-Za-z]:)?[^\n:]+?\.cs):(?:\w{1,12} )?(?P<line>\d+)", re.M)
# Unity's console: `Shop.Cart:Add (Shop.Item) (at Assets/Scripts/Cart.cs:42)`
_UNITY_FRAME = re.compile(
    r"^[ \t]*(?:[^\s(]+[.:])?(?P<fn>[^\s.:(]+) ?\([^()\n]*\) \(at (?P<path>[^\n:()]+?\.cs):(?P<line>\d+)\)",
    re.M)
# Ruby: `lib/rack/builder.rb:244:in 'call'` (`from …` after the first, `Class#method` in 3.4,
# `block (2 levels) in call`, `<top (required)>`)
_RUBY_FRAME = re.compile(
    r"^[ \t]*(?:from )?(?P<path>[^\s:]+\.rb):(?P<line>\d+):in [`']"
    r"(?:(?:block|rescue|ensure)(?: \(\d+ levels\))? in )?(?:[^'`\s]*[#.])?"
    r"(?P<fn><top \(required\)>|[^'`#.\s]+)['`]", re.M)
# PHP: `… in /srv/src/Cart.php:321` (where it was thrown), then `#0 /srv/src/Shop.php(120): Cart->add()`.
# A frame's line names what it calls: the function it is in is the one the
# next frame's line calls (the thrown place's, frame #0's), none for the
# last before `{main}`.
_PHP_CALL = r"#\d+ (?:[^\s()]+\.php\(\d+\)|\[internal function\]): (?:[\w\\]+(?:->|::))?(?P<fn>\w+)\("
_PHP_THROWN = re.compile(r"\bin (?P<path>[^\s:()]+\.php)(?::| on line )(?P<line>\d+)"
                         r"(?:(?=[^\n]*\n(?:Stack trace:[ \t]*\n)?[ \t]*" + _PHP_CALL + r"))?")
_PHP_FRAME = re.compile(
    r"^[ \t]*#\d+ (?P<path>[^\s()]+\.php)\((?P<line>\d+)\): [^\n]*"
    r"(?:(?=\n[ \t]*" + _PHP_CALL + r"))?", re.M)
# Elixir: `(tesla 1.4.0) lib/tesla/middleware/json.ex:90: Tesla.Middleware.JSON.decode/2`
_ELIXIR_FRAME = re.compile(
    r"^[ \t]*(?:\([\w]+(?: [\w.+-]+)?\) )?(?P<path>[^\s:()]+\.exs?):(?P<line>\d+): "
    r"(?:[\w.]+\.)?(?P<fn>[\w!?]+)(?:/\d+|\()", re.M)
# Lua: `.../lua/gitsigns/manager.lua:343: in function 'update'`
_LUA_FRAME = re.compile(
    r"^[ \t]*(?P<path>[^\s:]+\.lua):(?P<line>\d+): in (?:(?:local|upvalue|field|method|function) )?"
    r"['<]?(?:[\w.:]+[.:])?(?P<fn>\w+)?", re.M)
# gdb and lldb: `#0  0x0000555555555149 in parse_args (argc=1) at src/cli.c:42`
_GDB_FRAME = re.compile(
    r"^[ \t]*(?:frame )?#\d+:?[ \t]+(?:0x[0-9a-fA-F]+ in )?(?:[\w~<>]+::)*(?P<fn>[\w~]+)[ \t]*\([^\n]*\) at "
    r"(?P<path>[^\s:]+):(?P<line>\d+)", re.M)
# AddressSanitizer and the other sanitizers: `#1 0x4c5e21 in parse_header /src/parse.c:42:3`
# (`in Cart::add(int) const /src/cart.cc:9:5` in C++; a library's frame names
# its module and offset instead: `(/lib/libc.so.6+0x21bf6)`).
_SANITIZER_FRAME = re.compile(
    r"^[ \t]*#\d+ 0x[0-9a-fA-F]+ in (?P<fn>[^\s(]+)(?:\([^()\n]*\))?(?: const)? "
    r"(?P<path>[^\s:()]+):(?P<line>\d+)", re.M)
# Swift: `Fatal error: Unexpectedly found nil: file Sources/Shop/Cart.swift, line 42`
_SWIFT_TRAP = re.compile(r"\bfile (?P<path>[^\s,]+\.swift), line (?P<line>\d+)(?P<fn>)")
# A file name's extensions: every language the chunker reads by definitions
# (`cart.ex`, `Cart.sol`, `cart.zig`; one-letter ones but C's are too often
# not a file: `x.d`, `e.m`), and documents and configuration.
_SOURCE_EXTENSIONS = tuple(sorted(
    {extension for extension in DEFAULT_INCLUDE
     if extension.isalnum() and extension.islower() and (len(extension) > 1 or extension in ("c", "h"))
     and reads_definitions(language_for_path(f"file.{extension}"))}
    | {"pyx", "vue", "svelte", "rst", "md", "txt", "toml", "cfg", "ini", "yml", "yaml", "json", "html", "css",
       "sh"}, key=lambda extension: (-len(extension), extension)))
# A compiler's or linter's diagnostic: the place of the error, one a line,
# the first most likely the cause. With a column any message (gcc, clang,
# rustc's short form, `go build`/`go vet`, flake8: `src/parse.c:4:3: error: …`,
# `pkg/cart/cart.go:4:9: undefined: j`), without one an error, warning or note
# (`shop/cart.py:12: error: …`; a Python warning, `cart.py:12: DeprecationWarning:`,
# is the caller's line, a path). Its file has a path's extension.
# Swift 5.3 and later print a runtime trap so too (`Sources/Shop/Cart.swift:9:
# Fatal error: …`). tsc's default (pretty) output and pyright's set the
# level off by a dash after the column (`src/range.ts:20:13 - error TS2589: …`).
_DIAGNOSTIC = re.compile(
    r"^[ \t]*(?P<path>(?:[A-Za-z]:)?[^\s:()]+\.(?:" + "|".join(_SOURCE_EXTENSIONS) + r"))"
    r":(?P<line>\d+)(?::(?P<column>\d+))?(?::[ \t](?(column)|[ \t]*(?:(?:fatal )?(?:error|warning|note)\b"
    r"|(?:Fatal error|Precondition failed|Assertion failed):))"
    r"|(?(column) - (?:error|warning|information)\b|(?!)))(?P<fn>)",
    re.M)
# The same with the place in brackets, as MSBuild, tsc and MSVC print it
# (`App/Program.cs(10,28): error CS0266: …`, `src/range.ts(11,23): error TS2345: …`).
_DIAGNOSTIC_BRACKETED = re.compile(
    r"^[ \t]*(?P<path>(?:[A-Za-z]:)?[^\s:()]+\.(?:" + "|".join(_SOURCE_EXTENSIONS) + r"))"
    r"\((?P<line>\d+)(?:,\d+)?\): (?:fatal )?(?:error|warning)\b(?P<fn>)", re.M)
# rustc's place under its `error[E0308]: …` line: ` --> src/value.rs:7:9`.
_RUSTC_PLACE = re.compile(r"^[ \t]*--> (?P<path>(?:[A-Za-z]:)?[^\s:]+\.rs):(?P<line>\d+)(?P<fn>)", re.M)
# Each with its language, None: the file's.
_INNERMOST_FIRST = ((_JS_FRAME, "javascript"), (_JS_AT_FRAME, "javascript"), (_VITEST_FRAME, "javascript"),
                    (_NODE_THROWN, "javascript"), (_BABEL_PLACE, "javascript"), (_GO_FRAME, "go"),
                    (_RUST_FRAME, "rust"), (_CSHARP_FRAME, "csharp"), (_UNITY_FRAME, "csharp"), (_RUBY_FRAME, "ruby"),
                    (_PHP_THROWN, "php"), (_PHP_FRAME, "php"), (_ELIXIR_FRAME, "elixir"), (_LUA_FRAME, "lua"),
                    (_GDB_FRAME, "c"), (_SANITIZER_FRAME, None), (_SWIFT_TRAP, "swift"), (_DIAGNOSTIC, None),
                    (_DIAGNOSTIC_BRACKETED, None), (_RUSTC_PLACE, "rust"))
# .NET prints an inner exception's frames first, then this line, then the outer one's.
_INNER_EXCEPTION_END = re.compile(r"--- End of inner exception stack trace ---")
# The message bounded: each `panicked at '` scanned to the line's end was
# quadratic in a line of them.
_RUST_PANIC_PATH = r"(?:" + _spaced_absolute(r"[^\s:]") + r"|[^\s:]+)\.rs"
_RUST_PANIC = re.compile(r"panicked at (?:'.{0,1000}?', )?(?P<path>" + _RUST_PANIC_PATH + r"):(?P<line>\d+)")

# `ValueError: message`, `django.core.exceptions.FieldError: message`, `TypeError: x`,
# the base classes themselves (`Error: x` as JavaScript throws it, `Exception: x`,
# `System.Exception: x`); also as pytest prints them (`E   ValueError: x`,
# `FAILED tests/t.py::test_x - ValueError: x`), as warnings are printed
# (`shop/cart.py:12: DeprecationWarning: x`) and as a browser's console
# (Chrome's and Firefox's `Uncaught (in promise) TypeError: x`, Safari's
# `[Error] TypeError: x`, `[Error] Unhandled Promise Rejection: TypeError: x`);
# Node writes its error's code after the type (`TypeError [ERR_INVALID_ARG_TYPE]: x`).
_EXCEPTION_LINE = re.compile(
    r"^[ \t]*(?:\|[ \t]*)*(?:E\s+|(?:FAILED|ERROR) \S+ - |[^\s|]\S*\.py:\d+:[ \t]+"
    # the JVM's, .NET's and the browser's prefixes
    r'|Exception in thread "[^"\n]*" |Caused by: |Unhandled [Ee]xception\.? |Uncaught (?:\(in promise\) )?'
    r"|\[Error\] (?:Unhandled Promise Rejection: )?)?"
    r"(?P<type>(?:[A-Za-z_]\w*\.)*(?:[A-Z]\w*(?:Error|Exception|Warning|Exit|Interrupt|Panic)|Error|Exception)"
    r"|(?:[a-z_]\w*\.)+[A-Z]\w*)"
    r"(?: \[[A-Z][A-Z0-9_]{0,100}\])?(?::[ \t]*(?P<message>.+))?$", re.M)
# The base classes name no class of the repository's.
_BASE_EXCEPTIONS = frozenset({"Error", "Exception"})
_GO_PANIC = re.compile(r"^panic: (?P<message>.+)$", re.M)
# The other ecosystems' error lines, each with its message (and its type, a name):
_OTHER_ERROR_LINES = (
    # Ruby: `lib/shop/cart.rb:12:in 'checkout': undefined method 'total' for nil (NoMethodError)`
    re.compile(r"^[ \t]*\S+\.rb:\d+:in [`'][^'`\n]+['`]: (?P<message>.+) \((?P<type>[A-Z][\w:]*)\)$", re.M),
    # PHP: `PHP Fatal error:  Uncaught InvalidArgumentException: msg in /srv/src/Cart.php:31`
    # (without `PHP ` as a web page shows it: `Fatal error: Uncaught …`)
    re.compile(r"^(?:PHP (?:Fatal error|Warning|Notice|Deprecated):\s+(?:Uncaught (?P<type>[\w\\]+): )?"
               r"|Fatal error:\s+Uncaught (?P<type2>[\w\\]+): )"
               r"(?P<message>.+?)(?: in \S+\.php(?::| on line )\d+)?$", re.M),
    # Elixir: `** (ArgumentError) msg`
    re.compile(r"^[ \t]*\*\* \((?P<type>[\w.]+)\) (?P<message>.+)$", re.M),
    # Rust: `panicked at 'msg', src/x.rs:3:9`, or since 1.73 the message on the next line
    re.compile(r"panicked at '(?P<message>[^'\n]+)'|panicked at " + _RUST_PANIC_PATH
               + r":\d+:\d+:\n(?P<message2>[^\n]+)"),
    # Swift: `Fatal error: msg: file Sources/Shop/Cart.swift, line 42`, since 5.3
    # `Sources/Shop/Cart.swift:42: Fatal error: msg`
    re.compile(r"^(?:[^\s:]+\.swift:\d+: )?(?:Fatal error|Precondition failed|Assertion failed): "
               r"(?!\s*Uncaught )(?P<message>.+?)(?:: file \S+, line \d+)?$", re.M),
    # A compiler's diagnostic: `error[E0308]: msg` (rustc), `src/x.c:4:3: error: msg`
    # (gcc, clang), `src/x.ts(11,23): error TS2345: msg` (tsc, MSBuild),
    # `src/x.ts:11:23 - error TS2345: msg` (tsc's default, pyright).
    re.compile(r"^[ \t]*(?:(?:[A-Za-z]:)?[^\s:()]+(?::\d+(?::\d+)?(?:: | - )|\(\d+(?:,\d+)?\): ))?(?:fatal )?"
               r"(?:error|warning)(?:\[[A-Z]+\d+\]| [A-Z]{1,4}\d{1,6})?: (?P<message>.+)$", re.M),
)
# A logged line's level, as Python's logging, Java's and others' name it.
_LOG_LEVEL = r"(?:WARNING|WARN|ERROR|CRITICAL|FATAL|SEVERE)"
# A log's timestamp: a time, after a date perhaps (` ` or ISO 8601's `T`),
# its fraction after `.` or `,` (logging's milliseconds), a zone perhaps.
_LOG_TIMESTAMP = r"(?:\d{4}-\d\d-\d\d[ T])?\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[ ]?[+-]\d\d:?\d\d)?"
# Logged lines: `WARNING: msg`, logging's default `ERROR:shop.cart:msg`, and
# a documentation build's `index.rst:12: WARNING: msg`.
# (A prefix or leading spaces, never both: the prefix may start with spaces
# itself, and spaces both could take made a long run of them quadratic.)
_LOG_LINE = re.compile(rf"^(?:[^\n]*?: |[ \t]*){_LOG_LEVEL}(?::[\w.]+)?:[ \t]*(?P<message>\S.*)$", re.M)
_LOG_LINES = (
    _LOG_LINE,
    # The level a field between ` - ` or ` | ` (the logging cookbook's
    # `%(asctime)s - %(name)s - %(levelname)s - %(message)s`, loguru's
    # `time | WARNING  | shop.cart:checkout:8 - msg`).
    re.compile(rf"^[^\n]*?[ \t][-|][ \t]++{_LOG_LEVEL}[ \t]++[-|][ \t]++(?:[\w.:<>]+ - )?(?P<message>\S.*)$",
               re.M),
    # Flask's default: `[2024-03-01 12:00:01,123] WARNING in cart: msg`
    re.compile(rf"^\[[^\]\n]{{0,100}}\] {_LOG_LEVEL} in [\w.<>]+: (?P<message>\S.*)$", re.M),
    # Spring Boot's default: `2024-03-01T12:00:01.123Z  WARN 4242 --- [main] shop.Cart : msg`
    # (its timestamp may have been read away as a log's margin: _LOG_MARGINS)
    re.compile(rf"^(?:[^\n]*?[ \t])?{_LOG_LEVEL}[ \t]++\d+ --- (?:\[[^\]\n]{{0,100}}\][ \t]*+){{1,3}}"
               rf"[\w.$]+[ \t]*+: (?P<message>\S.*)$", re.M),
    # Logback's and log4j's default (`12:00:01.123 [main] WARN  shop.Cart - msg`),
    # Ruby's Logger's (`E, [2024-03-11T14:02:17.415901 #18244] ERROR -- progname: msg`,
    # the program's name often empty) and a bracketed level (`[ERROR] msg`,
    # `[main] [WARNING] msg`; Rust's env_logger with its time and target,
    # `[2024-03-11T14:02:17Z ERROR shop::db] msg`).
    re.compile(rf"^(?:[^\n]*?[ \t\]])?{_LOG_LEVEL}[ \t]++(?:[\w.$]+ -|-- [^:\n]{{0,100}}:) (?P<message>\S.*)$",
               re.M),
    re.compile(rf"^(?:[^\n]*?[ \t\]])?\[(?:[^\s\]]++[ \t]++)?{_LOG_LEVEL}(?:[ \t]++[^\s\]]++)?\][ \t]++"
               rf"(?P<message>\S.*)$", re.M),
    # A timestamp, then the level set off by spaces: Python logging's
    # `%(asctime)s %(levelname)s %(message)s` (`2024-05-02 10:11:12,347 ERROR msg`),
    # log4j's `%d %-5p [%c] %m` (`… ERROR [shop.Cart] msg`), the timestamp
    # bracketed or ISO 8601's (`[2024-05-02 10:11:12] ERROR msg`,
    # `2024-05-02T10:11:12.345Z ERROR msg`); the logger's name, bracketed or
    # before a colon, is no part of the message.
    re.compile(rf"^[ \t]*+(?:\[{_LOG_TIMESTAMP}\]|{_LOG_TIMESTAMP})[ \t]++{_LOG_LEVEL}[ \t]++"
               rf"(?:\[[^\]\n]{{0,100}}\][ \t]*+|[\w.$]+:[ \t]++)?(?P<message>\S.*)$", re.M),
    # klog's and glog's header (Kubernetes, Go's and C++'s glog): the level's
    # letter (warning, error, fatal), the date, the time, the thread and the
    # place (`E0301 12:00:02.123456    4242 controller.go:114] msg`).
    re.compile(r"^[ \t]*+[WEF]\d{4} \d\d:\d\d:\d\d\.\d{6}[ \t]++\d+ [^\s\]]{1,200}:\d+\] (?P<message>\S.*)$", re.M),
)
# Punctuation a message's parts are split at: quote marks of every kind
# (_QUOTED's) are where a format string's placeholders were filled in.
_MESSAGE_PARTS = re.compile(r"[:;\"'()\[\]{}<>‘’“”„«»「」『』]")
# A quoted sentence: in double quotes, single quotes, curly ones, a language's
# own (« », „ “, 「 」, 『 』). A single quote inside a word is an apostrophe,
# not a quote mark ("I'll see that ... I'm" quotes nothing): an opening quote
# follows no letter or digit, a closing one precedes none, and within a quote
# one between letters is the quoted words' own ('Can't check out'). Double
# quotes pair left to right whatever they hold: a quoted word (`"ok"`), an
# empty string or a pasted text, not a sentence, still closes its pair
# (else its closing mark opened the next quote: `"ok" then "x"` read `then`).
_QUOTED_SENTENCE_CHARS = (12, 200)
_QUOTED = re.compile(
    r"\"([^\"\n]*)\""
    rf"|(?<!{_NAME_CHAR})(?<!')'((?:[^'\n]|(?<=\w)'(?=\w)){{12,200}})'(?!{_NAME_CHAR})(?!')"
    rf"|(?<!{_NAME_CHAR})(?<![‘’])‘((?:[^‘’\n]|(?<=\w)’(?=\w)){{12,200}})’(?!{_NAME_CHAR})(?![‘’])"
    r"|“([^“”\n]{12,200})”|„([^„“”\n]{12,200})[“”]|«([^«»\n]{12,200})»|「([^「」\n]{12,200})」"
    r"|『([^『』\n]{12,200})』")
# A sentence in backticks (`Can't check out an anonymous basket`): four words
# or more, not starting like code, none of them an option, a dotted or
# qualified name, and no code's operators, ellipsis or brackets in it
# (`pip install -e .`, `cart.add(item)`, `items[0]`, `List<Item>`, `from x
# import m as z` are code). A sentence's own punctuation is no code's: a
# bracket opened after a space, a `;` before one, a `<` or `>` standing
# alone (`cannot merge mappings; the source is unacceptable`, `Cannot read
# properties of undefined (reading 'get')`, `Unexpected token < in JSON`).
_BACKTICKED_SENTENCE = re.compile(r"`([A-Za-z][^`\n]{10,198}[^`\s])`")
_BACKTICKED_WORDS = 4
_CODE_CHARACTERS = re.compile(r"[=$|\\/@#*_\"]|[\w)\]}][(\[{]|[)\]}]\.\w|\w[<>]|[<>]\w|;\S"
                              r"|\w[.:]\S|\.\.\.|(?:^|\s)-")

# Relative, absolute (`/`, `~/`, `C:\\`) and Windows paths; a path inside a URL
# is read from the URL (_URL_PATH). A script without spaces ends a path glued
# to the sentence (`请看shop/cart.py文件`): a path written apart may name its
# folders and file in one after its root or first folder (`C:\\Users\\张三\\cart.py`,
# `docs/中文/说明.md`), one glued to such a letter only in other scripts (its
# folders scanned from each letter of a run of `文/` were quadratic).
_PATH_CHAR = rf"(?:{_NAME_CHAR}|[.-])"
# A bracketed part of a name, as routers name their files (Next.js `[id].tsx`,
# `[...slug]`, `[[...slug]]`, `(marketing)`; SvelteKit `[lang=locale]`): never
# a slash inside, so `(src/a.py)`, `[src/a.py]` and a link's `[text](src/a.py)`
# are brackets around a path; nor a digit first (`items[0].json()` indexes a list).
_NAME_BRACKETS = r"\[\[?(?:[^\W\d]|\.)[\w.+=-]{0,99}\]\]?|\((?:[^\W\d]|\.)[\w.+-]{0,99}\)"


def _path_name(letter: str, letter_or_dot: str) -> str:
    """A file's or folder's name in a path: ``letter``s, `-` and brackets,
    joined by `+` before its first dot (Swift's and Objective-C's
    `String+Rainbow.swift`, SvelteKit's `+page.server.ts`; after a dot a `+`
    joins two files, `a.py+b.py`), then ``letter_or_dot``s. At most four
    `+` a name, taken once (possessive): a run of `+a+a…` read again from
    each `+` was quadratic."""
    return (rf"(?:\+?(?:{letter}|-|{_NAME_BRACKETS})++){{0,4}}+"
            rf"(?:{letter_or_dot}|{_NAME_BRACKETS})*")


_FIRST_NAME = _path_name(_NAME_CHAR, _PATH_CHAR)
# Past its root or first folder a path's names are of any script.
_LATER_NAME = _path_name(r"\w", r"[\w.-]")
# (A path starts after no letter, separator or closing bracket, and at an
# opening bracket after no bracket: each start reads its name once.)
_PATH = re.compile(rf"((?:(?<!\w)(?<![/.\\:~\])-])(?:(?<![\[(])|(?![\[(]))(?:~|[A-Za-z]:)?"
                   rf"(?:(?:[\\/]|(?![\\/]){_FIRST_NAME}[\\/])[\\/]*"
                   rf"(?:(?![\\/]){_LATER_NAME}[\\/]+)*"
                   rf"{_LATER_NAME}(?<=[\w\])])"
                   rf"|{_FIRST_NAME}(?<={_NAME_CHAR}|[\])]))"
                   rf"|(?<=[{NO_SPACE_SCRIPTS}])(?:~|[A-Za-z]:)?[\\/]*(?:{_PATH_CHAR}+[\\/]+)*{_PATH_CHAR}*{_NAME_CHAR})"
                   r"\.(?:" + "|".join(_SOURCE_EXTENSIONS) + rf"))(?!{_NAME_CHAR})(?![/\\-])")
# A name followed by a release is a product's, no file's (`Node.js v20.11.0`,
# the last line of each crash Node prints; `Next.js 14.1`).
_RELEASE_AFTER = re.compile(r"[ \t]+v?\d+\.\d+")
# (A URL copied from a browser's address bar has its non-ASCII letters
# percent-encoded: one of those scripts' letters is the sentence again.)
_URL_PATH = re.compile(rf"(?<!{_NAME_CHAR})https?://[^/\s]+(/[^\s#?)\]>'\"`{NO_SPACE_SCRIPTS}{_NO_SPACE_PUNCTUATION}]+)")
# A line and column after a file's URL or name.
_PLACE_SUFFIX = re.compile(r"(?::\d+){1,2}$")
# The line a path or a file's URL names after it: `cart.py:12`, `cart.py:12:5`,
# a forge's or source view's anchor (`#L12`, `#L12-L20`, `#L12C5-L20C9`,
# GitLab's `#L12-20`, Bitbucket's `#lines-12`, rustdoc's `#12`), after
# the URL's query perhaps (`?plain=1#L12`).
_WRITTEN_LINE = re.compile(r":(\d+)(?!\d)|(?:\?[^\s#?)\]>'\"`]{0,200})?#(?:L|lines-)?(\d+)(?!\d)")
# An absolute path's start: root, home or a drive (after an opening bracket or quote).
_ABSOLUTE_START = re.compile(r"[\"'(<\[`]*((?:~|[A-Za-z]:)?[\\/])")
# A folder name with spaces in an absolute path (`C:\Users\Jane Doe\app\x.py`,
# `/home/me/My Projects/x.py`): spaces looked back over, at most
# (_SPACES_IN_PATH), and the characters of one folder name.
_MAX_NAME_CHARS = 255
# (Letters each followed by a dot are an abbreviation, `e.g.`, `i.e.`, `a.k.a.`.)
_DOTTED = re.compile(rf"(?<!{_NAME_CHAR})(?<!\.)(?!(?:[^\W\d_]\.)+[^\W\d_](?!{_NAME_CHAR})(?!\.{_NAME_START}))"
                     rf"({_NAME_START}{_NAME_CHAR}*(?:\.{_NAME_START}{_NAME_CHAR}*)+)"
                     rf"(?!{_NAME_CHAR})(?!\()")
# A word written with English's plural in brackets (`two file(s)`, `some
# match(es)`, and cargo's `Finished dev [...] target(s) in 2.31s`) is no
# call: after a determiner, a number or a `]`, and before a word or a
# sentence's punctuation. Without one it may be a call after all
# (`prompt(s) shows the default twice`).
_DETERMINERS = ("a", "an", "the", "all", "any", "some", "no", "each", "every", "many", "several",
                "multiple", "other", "these", "those", "its", "their", "your", "our", "my", "of",
                "for", "in", "with", "and", "or", "more", "both", "few", "two", "three")
_AFTER_DETERMINER = "(?:" + "|".join(rf"(?<=\b(?i:{word})[ \t])" for word in _DETERMINERS) \
    + r"|(?<=\d[ \t])|(?<=\][ \t]))"
_PLURAL = _AFTER_DETERMINER + r"[A-Za-z][a-z]+\(e?s\)(?=[ \t]+[a-z]|[,.;:!?](?:\s|$))"
_DOTTED_CALL = re.compile(rf"(?<!{_NAME_CHAR})(?<!\.)(?!{_PLURAL})"
                          rf"({_NAME_START}{_NAME_CHAR}*(?:\.{_NAME_START}{_NAME_CHAR}*)*)\(")
_CAMEL = re.compile(rf"(?<!{_NAME_CHAR})(?<!\.)([A-Z][a-z0-9]+(?:[A-Z][a-z0-9]*)+|[a-z]+[A-Z]{_NAME_CHAR}*"
                    rf"|[A-Z]{{2,}}[a-z]{_NAME_CHAR}*)(?!{_NAME_CHAR})")
# snake_case; or a name underscores mark as code: one at one end (`_private`,
# `class_`) or two at both (`__init__`); one at both ends is Markdown's emphasis
# (`_really_`), prose.
_SNAKE = re.compile(rf"(?<!{_NAME_CHAR})(?<!\.)(_*[A-Za-z][A-Za-z0-9]*(?:_[A-Za-z0-9]+)+_*|__[A-Za-z][A-Za-z0-9]*__"
                    rf"|_{{1,2}}[A-Za-z][A-Za-z0-9]*(?!{_NAME_CHAR})|[A-Za-z][A-Za-z0-9]*_(?!{_NAME_CHAR}))")
# A backticked span, or a name quoted from a backtick to an apostrophe as Ruby
# (before 3.4) and older GNU tools print it (`in `call': undefined method
# `amount'`, `block (2 levels) in call'`): one name, not the words between two
# such quotes (nor a code span holding a quote, `Key(key='x')`).
_BACKTICKED = re.compile(r"`(?P<quoted>[\w<>#.:?!](?:[\w<>#.:?! ]|\([\w ]{1,20}\)){0,79})'(?!\w)"
                         r"|`(?P<span>[^`\n]{2,80})`")
# A backticked shell command: a command's word (`pip`, `./build.sh`), after a
# prompt's `$` perhaps, and an option after it (`pip install -e .`,
# `python -m build --wheel`).
_COMMAND_WORD = re.compile(r"(?:\.{0,2}/|~/)?[a-z][\w.+/-]*")
_OPTION_WORD = re.compile(r"--?[A-Za-z]")
_ARITY = re.compile(r"\w/\d+$")
# A name qualified the way Rust, C++, Ruby and PHP write it (`Parser::parse_expr`,
# `ActiveSupport::Cache::Store#fetch`, `Shop\Cart\LineItem::total`): its parts.
# A file's extension is none of them: a pytest node id's names follow its
# file (`tests/test_cart.py::TestCart::test_total`: `TestCart::test_total`).
_QUALIFIED = re.compile(
    rf"(?<!{_NAME_CHAR})(?:(?<![:\\.])|(?<=\.py::))((?:[A-Za-z_]{_NAME_CHAR}*::)+[A-Za-z_]{_NAME_CHAR}*"
    rf"|[A-Z]{_NAME_CHAR}*(?:\\[A-Z]{_NAME_CHAR}*)+(?:::{_NAME_CHAR}+)?)"
    rf"(?!{_NAME_CHAR})(?![.\\])(?:#([A-Za-z_]{_NAME_CHAR}*[?!]?))?"
    rf"|(?<!{_NAME_CHAR})(?<![:#])([A-Z]{_NAME_CHAR}*)#([a-z_]{_NAME_CHAR}*[?!]?)")
_WORD = re.compile(rf"{_NAME_START}{_NAME_CHAR}*")


def _qualified_parts(match: re.Match) -> list[str]:
    """The parts of a ``_QUALIFIED`` name, owners first."""
    qualified, method, owner, owners_method = match.groups()
    return [part for part in [*re.split(r"::|\\", qualified or owner), method or owners_method] if part]


def written_qualified(text: str) -> list[str]:
    """The names ``text`` writes qualified the Rust, C++, Ruby and PHP way
    (`Beta::parse`, `Shop\\Cart\\LineItem::total`, `Store#fetch`), dotted
    (`Beta.parse`): the reader keeps only their parts (IssueText.identifiers),
    and a signal asks the owner which definition of the last part is meant."""
    return [".".join(parts) for match in _QUALIFIED.finditer(text)
            if len(parts := _qualified_parts(match)) > 1]


# Names registered as strings (IssueText.literals). An option's value
# (`--import-mode=importlib`) is not its name; `-->` (IPython's arrow) and
# `---` (a rule) are no options.
_OPTION = re.compile(rf"(?<!{_NAME_CHAR})(?<!-)(--[A-Za-z0-9](?:{_NAME_CHAR}|-)*[A-Za-z0-9])(?!{_NAME_CHAR})(?!-)")
# (A link's line anchor, `core.py#L120-L135`, is no message id, nor a log's
# level and date before its time: klog's `E0301 12:00:02.123456`.)
_MESSAGE_ID = re.compile(rf"(?<!{_NAME_CHAR})(?<![.#-])((?:[a-z_]+\.)?[A-Z]{{1,2}}\d{{3,4}})(?!{_NAME_CHAR})(?!-)"
                         r"(?![ \t]+\d\d:\d\d:\d\d)")
# (A package's name before its release, `pytest-8.0.0`, `numpy-1.26.4.tar.gz`, is none.)
_HYPHENATED = re.compile(rf"(?<!{_NAME_CHAR})(?<![./-])([a-z][a-z0-9]*(?:-[a-z0-9]+)+)(?!{_NAME_CHAR})(?![/-])"
                         r"(?!\.\d)")
_DIRECTIVE = re.compile(r"^[ \t]*\.\. (?:[\w-]+:)?([\w-]+)::", re.M)
# A reST role before its backticked target (`:kbd:` in ":kbd:`Ctrl+C`",
# `func` in ":py:func:`f`").
_ROLE = re.compile(r"(?<![\w:`]):(?:[a-z][\w-]*:)?([a-z][\w-]*):`")
# A plugin named on the command line (`-p no:cacheprovider`): registered by
# that name, and the module of that name.
_PLUGIN = re.compile(rf"(?<!{_NAME_CHAR})(?<!-)-p[ \t]+(?:no:)?([A-Za-z_](?:{_NAME_CHAR}|\.)*{_NAME_CHAR})")
# The names imported: in parentheses across lines, else to the line's end.
_FROM_IMPORT = re.compile(r"^[ \t]*from\s+([\w.]+)\s+import\s+(?:\(([\w\s,]+)\)|([\w \t,]+))", re.M)
_IMPORT = re.compile(r"^[ \t]*import\s+([\w.]+(?:\s+as\s+\w+)?(?:\s*,\s*[\w.]+(?:\s+as\s+\w+)?)*)",
                     re.M)
_IMPORT_LINE = re.compile(r"^[ \t]*(?:from[ \t]+[\w.]+[ \t]+import|import[ \t]+[\w.]).*$", re.M)

# Words in code that name nothing of the repository's.
_CODE_NOISE = frozenset("""self cls None True False def class return import from as if else elif
    for while in not and or is lambda with try except finally raise pass print assert yield async
    await global nonlocal del break continue const let var function new this null undefined true
    false int str float bool list dict set tuple len range object type super isinstance
    Traceback most recent call last File line module stdin""".split())


def _frames(text: str) -> tuple[list[Frame], list[tuple[int, int]]]:
    """The text's stack frames, and where each frame's path is written (a path
    a frame was read from is the frame's, not a path the text names)."""
    frames: list[Frame] = []
    spans: list[tuple[int, int]] = []
    # Python: most recent call last, but under faulthandler's header; each
    # traceback is a run of consecutive frames.
    runs: list[list[re.Match]] = []
    innermost_first: list[bool] = []
    last_end = -1
    for match in _PY_FRAME.finditer(text):
        between = text[last_end:match.start()] if last_end >= 0 else ""
        if runs and between.count("\n") <= 4 and "Traceback" not in between:
            runs[-1].append(match)
        else:
            runs.append([match])
            # The header is the line before the run's first frame.
            line_start = text.rfind("\n", 0, match.start())
            header_start = text.rfind("\n", 0, max(line_start, 0)) + 1
            innermost_first.append(_MOST_RECENT_FIRST.search(text, header_start, match.start()) is not None)
        last_end = match.end()
        spans.append(match.span(1))
    for run, reversed_order in zip(runs, innermost_first):
        for i, match in enumerate(run):
            frames.append(Frame(match.group(1), int(match.group(2)), match.group(3), "python",
                                i if reversed_order else len(run) - 1 - i))
    frames += _other_python_frames(text, spans)
    # The rest print the innermost frame first.
    for pattern, language in _INNERMOST_FIRST:
        depth = 0
        previous_end = -1
        for match in pattern.finditer(text):
            if previous_end >= 0 and (text.count("\n", previous_end, match.start()) > 3
                                      or _INNER_EXCEPTION_END.search(text, previous_end, match.start())):
                depth = 0  # a new trace, or the outer exception's after the inner one's
            fn = match.groupdict().get("generated") or match.group("fn") or None
            path = match.group("path")
            frames.append(Frame(path, int(match.group("line")), fn,
                                language or language_for_path(path) or "", depth))
            spans.append(match.span("path"))
            depth += 1
            previous_end = match.end()
    # Java prints a chain of causes outermost first, each `Caused by:` section
    # a trace of its own: listed root cause first, as Python prints them.
    chains: list[list[list[Frame]]] = []
    previous_end = -1
    for match in _JAVA_FRAME.finditer(text):
        if previous_end >= 0 and _JAVA_CAUSE.search(text, previous_end, match.start()):
            chains[-1].append([])
        elif previous_end < 0 or text.count("\n", previous_end, match.start()) > 3:
            chains.append([[]])
        qual = match.group("qual")
        parts = qual.split(".")
        package = [p for p in parts[:-2] if p and p[0].islower()]
        path = "/".join(package + [match.group("file")])
        trace = chains[-1][-1]
        trace.append(Frame(path, int(match.group("line")), parts[-1], "java", len(trace)))
        spans.append(match.span("file"))
        previous_end = match.end()
    frames += [frame for chain in chains for trace in reversed(chain) for frame in trace]
    for match in _RUST_PANIC.finditer(text):
        frames.append(Frame(match.group("path"), int(match.group("line")), None, "rust", 0))
        spans.append(match.span("path"))
    return frames, spans


def _other_python_frames(text: str, spans: list[tuple[int, int]]) -> list[Frame]:
    """Frames of IPython's and pytest's tracebacks (see _PY_FRAME_OTHER),
    grouped into tracebacks by the lines between them; the last of each is
    depth 0. Where each frame's path is written is added to ``spans``."""
    runs: list[list[tuple[str, int | None, str | None]]] = []
    last_end = -1
    # pytest's long form: the previous frame was one, and not a traceback's last.
    long_open = False
    for match in _PY_FRAME_OTHER.finditer(text):
        long_form = bool(match.group("pylong"))
        if match.group("ipy8"):
            frame = (match.group("ipy8"), int(match.group("ipy8_line")), match.group("ipy8_fn"))
            spans.append(match.span("ipy8"))
        elif match.group("pytest"):
            frame = (match.group("pytest"), int(match.group("pytest_line")), match.group("pytest_fn"))
            spans.append(match.span("pytest"))
        elif long_form:  # no function name: it is in the source printed above
            frame = (match.group("pylong"), int(match.group("pylong_line")), None)
            spans.append(match.span("pylong"))
        else:  # old IPython: the line is the `-->` arrow in the source shown below
            following = text[match.end():match.end() + 2000]
            arrow = _IPYTHON_ARROW.search(following)
            next_frame = _PY_FRAME_OTHER.search(following)
            line = int(arrow.group(1)) if arrow and (
                next_frame is None or arrow.start() < next_frame.start()) else None
            frame = (match.group("ipy"), line, match.group("ipy_fn"))
            spans.append(match.span("ipy"))
        between = text[last_end:match.start()] if last_end >= 0 else ""
        # A traceback ends at its exception line, a code fence or a new "Traceback";
        # in pytest's long form a frame follows a whole function's source and the
        # exception's `E` lines, and the last one names the exception's type.
        if long_form or long_open:
            joins = (long_open and between.count("\n") <= _PYTEST_LONG_GAP_LINES
                     and (long_form or not _EXCEPTION_LINE.search(between)))
        else:
            joins = (runs and between.count("\n") <= _PY_FRAME_GAP_LINES
                     and not _EXCEPTION_LINE.search(between))
        joins = joins and "Traceback" not in between and "```" not in between
        if joins:
            runs[-1].append(frame)
        else:
            runs.append([frame])
        last_end = match.end()
        # pytest's default prints the middle frames in the short form: they keep
        # a long-form traceback open.
        long_open = not match.group("pylong_exc") if long_form else bool(joins and long_open)
    return [Frame(path, line, function.rsplit(".", 1)[-1] if function else None, "python",
                  len(run) - 1 - i)
            for run in runs for i, (path, line, function) in enumerate(run)]


def _clipped(text: str, limit: int) -> str:
    """``text`` cut at its last space within ``limit`` characters."""
    if len(text) <= limit:
        return text
    cut = text.rfind(" ", 0, limit + 1)
    return text[:cut if cut > 0 else limit]


def _add(seen: dict[str, None], value: str) -> None:
    if value:
        seen.setdefault(value)


class _Spans:
    """Where things are written in a text, ``(start, end)`` each: looked up by
    their starts and the furthest end up to each."""

    def __init__(self, spans: list[tuple[int, int]]):
        spans = sorted(spans)
        self._starts = [start for start, _ in spans]
        self._furthest_ends = list(itertools.accumulate((end for _, end in spans), max))

    def overlap(self, start: int, end: int) -> bool:
        """Whether ``start``..``end`` overlaps one of the spans."""
        before = bisect.bisect_left(self._starts, end)
        return before > 0 and self._furthest_ends[before - 1] > start

    def hold(self, start: int, end: int) -> bool:
        """Whether ``start``..``end`` lies within one of the spans."""
        before = bisect.bisect_right(self._starts, start)
        return before > 0 and self._furthest_ends[before - 1] >= end


# An environment report (`pip list`, a library's show_versions(), "System
# Details", an issue template's `- Python version: 3.11.4`): a version line
# `numpy: 1.19.1`, `attrs 20.3.0`, `commit: None`, and the lines around it
# (`OS: Linux`, `LANG: en_US.UTF-8`, a rule, a heading: `INSTALLED VERSIONS`,
# `Package    Version`). After a colon a version has three parts or a `v`, or
# its key names a version or a language's runtime (`Python version: 3.11`,
# `Node: 20.1`): `retry_backoff_max: 30.0` is a setting (a line around
# version lines, never one of them). `pip freeze` writes `numpy==1.26.4` and
# `click @ file:///…` (installed from a file or a repository), conda
# `numpy=1.26.4=py311h_0` (a release of three parts: `rate=0.5`, `RATE=0.5`
# are settings), `npm ls` `semver@7.5.4`, `cargo tree` `serde v1.0.197`,
# `npx envinfo` (JavaScript issue templates ask for it) a package's wanted
# range and its installed release, `semver: ^7.6.3 => 7.6.3`, under headings
# alone on their lines (`System:`, `Binaries:`, `npmPackages:`). A Markdown
# table's row is read as such a line (_table_row).
_VERSION_KEY = r"[A-Za-z][\w.-]*(?:[ \t]+[\w.-]+){0,3}"
_RELEASE = r"v?\d+(?:\.\d+)+"
_RUNTIME = r"(?i:python|pypy|node(?:\.?js)?|deno|bun|go|rustc?|java|jdk|ruby|php|perl|dotnet|\.net)"
_VERSION_LINE = re.compile(
    rf"[ \t]*(?:{_VERSION_KEY}[ \t]*:[ \t]*(?:v\d+(?:\.\d+)+|\d+(?:\.\d+){{2,}}|None)\b"
    rf"|(?:{_VERSION_KEY}(?<=[Vv]ersion)|{_RUNTIME})[ \t]*:[ \t]*{_RELEASE}\b"
    rf"|[A-Za-z][\w.-]*(?:[ \t]+|==)(?:{_RELEASE}|None)\b"
    rf"|(?:@[\w.-]+/)?[A-Za-z][\w.-]*@(?:npm:)?{_RELEASE}\b"
    r"|[A-Za-z][\w.-]*[ \t]+@[ \t]+[a-z][\w+.-]*://"
    r"|[a-z][\w.-]*=\d+\.\d+\.\d"
    rf"|(?:@[\w.-]+/)?[A-Za-z][\w.-]*[ \t]*:[ \t]*\S{{1,100}}[ \t]+=>[ \t]*{_RELEASE}\b).*")
# Leading spaces taken once (possessive): given back to `[-= \t]{3,}` one by
# one, a long line of spaces ending otherwise was quadratic.
_REPORT_LINE = re.compile(r"[ \t]*+(?:[\w.-]+[ \t]*:[ \t]*\S.{0,80}|" + _VERSION_KEY + r"[ \t]*:[ \t]*"
                          r"|(?i:[\w .-]{0,40}\bversions?\b[\w .-]{0,40}))|[-= \t]{3,}")
# A report line's margin: a bullet (`- `, `* `), or a dependency tree's
# branches (`npm ls`: `├── `, `│ └─┬ `, `+-- `, `` `-- ``; `cargo tree`:
# `│   └── `). A line on a branch is the tree's (`└── UNMET DEPENDENCY x`).
_LISTING_MARGIN = re.compile(r"[ \t]*+(?:[-*+][ \t]+|(?P<branch>(?:[│|][ \t]*+)*[├└`+][─┬-]+[ \t]*+))?")
# Marks of quoted text or code in a line (what a report line never holds).
_QUOTE_MARKS = re.compile("[\"`‘’“”«»„]|(?<![A-Za-z])'|'(?![A-Za-z])")
# A line naming the platform a report was made on (`OS: Ubuntu 22.04`,
# `Operating system: Windows 11`, `Browser: Firefox 121`): a fact of the
# environment as a version line is, and counted with them (an issue
# template's `OS:`, `Python:`, `<package>:` lines are a report).
_PLATFORM_LINE = re.compile(r"[ \t]*(?i:os|operating[ \t]+system|platform|system|distro|distribution|kernel"
                            r"|arch(?:itecture)?|cpu|machine|browser|device)[ \t]*:[ \t]*\S.*")
# Version and platform lines in one run that make it a report, one of them a
# version line at least (three platform lines alone may be a setting's).
_REPORT_LINES = 3
# A Markdown table's rule row's cells (`---`, `:---:`), or an empty header's.
_TABLE_RULE_CELL = re.compile(r"(?::?-+:?)?")
# A Markdown heading naming the environment is the report's that follows it
# (an issue template's `### What versions are you using?`, `## Environment`);
# another heading is the text's (its title: `# Crash on load`).
_MARKDOWN_HEADING = re.compile(r" {0,3}#{1,6}(?:[ \t]|$)")
_ENVIRONMENT_WORDS = re.compile(r"(?i)\b(?:versions?|environment|system|platform|setup)\b")


def _table_row(line: str) -> str | None:
    """A Markdown table's row read as a report's line: its first cell the
    key, the others its value (`| numpy | 1.26.4 |` is `numpy: 1.26.4`, the
    header `| Package | Version |` a report's heading), a rule row (`|---|:--:|`)
    or an empty header (`| | |`) a rule; None when ``line`` is no table row
    (it starts with no `|`)."""
    row = line.strip(" \t")
    if not row.startswith("|"):
        return None
    cells = [cell.strip(" \t") for cell in row[1:].removesuffix("|").split("|")]
    if all(_TABLE_RULE_CELL.fullmatch(cell) for cell in cells):
        return "---"
    key, *value = cells
    return f"{key}: {' '.join(value)}" if value else key


# A listing of installed packages, extensions or plugins without versions: a
# line labelled so (`Extensions: sphinx.ext.autodoc, myst_parser, …`) or such a
# heading followed by one bare name a line. The names are the reporter's
# setup, not the bug; read as dotted names they point at the project's modules
# of those names.
_LISTING_LABEL = re.compile(r"(?i)\b(?:installed|extensions?|plugins?|packages?|dependencies"
                            r"|requirements|librar(?:y|ies)|modules|add-?ons)\b")
_LISTED_NAME = re.compile(r"[A-Za-z@][\w.@/-]*")
# Items of a listing: separated by commas, perhaps quoted, perhaps in
# brackets (what an item is stripped of: between items, before the first, after the last).
_ITEM_EDGES, _LISTING_OPENS, _LISTING_CLOSES = " \t\r\n\f\v'\"[]()", " \t\r\n\f\v'\"[(", " \t\r\n\f\v'\"])"
# A label is a few words (`Sphinx extensions`, `Installed packages`), not a sentence.
_LABEL_WORDS = 4
_BULLET = re.compile(r"[ \t]*(?:[-*+][ \t]+)?")
# Names in a listing, at least (fewer are a sentence naming them).
_LISTING_NAMES = 3


def _listed_names(items: str) -> list[str] | None:
    """The names of ``items`` when it is nothing but names, else None."""
    # Split and stripped by hand: a separators regex tried at every position
    # of a run of brackets was quadratic in the run.
    pieces = items.split(",")
    last = len(pieces) - 1
    names = [name for at, piece in enumerate(pieces)
             if (name := piece.lstrip(_ITEM_EDGES if at else _LISTING_OPENS)
                 .rstrip(_ITEM_EDGES if at < last else _LISTING_CLOSES))]
    return names if all(_LISTED_NAME.fullmatch(n) for n in names) else None


def _without_package_listings(lines: list[str]) -> list[str]:
    keep: list[str] = []
    at = 0
    while at < len(lines):
        line = lines[at]
        label, colon, items = line.partition(":")
        labelled = colon and len(label.split()) <= _LABEL_WORDS and _LISTING_LABEL.search(label)
        listed = _listed_names(items) if labelled else None
        if listed is not None and len(listed) >= _LISTING_NAMES:
            at += 1  # `Extensions: a, b, c`
            continue
        if labelled and not items.strip():
            end = at + 1  # a heading, then one bare name a line
            while end < len(lines) and _LISTED_NAME.fullmatch(
                    lines[end][_BULLET.match(lines[end]).end():].strip()):
                end += 1
            if end - at - 1 >= _LISTING_NAMES:
                at = end
                continue
        keep.append(line)
        at += 1
    return keep


def _is_error_line(line: str) -> bool:
    """Whether ``line`` is an exception's, a panic's or a logged error's (read for its message)."""
    return any(pattern.match(line) for pattern in (_EXCEPTION_LINE, _GO_PANIC, *_LOG_LINES))


def _without_version_listings(text: str) -> str:
    """The text without its environment reports and package listings: their
    package names are rare words in any code base and point at the file
    listing dependencies (a versions printer) or the modules of those names,
    not at the bug."""
    lines = text.split("\n")
    keep = [True] * len(lines)
    start = 0
    while start < len(lines):
        end = start
        versions = 0
        platforms = 0
        while end < len(lines):
            margin = _LISTING_MARGIN.match(lines[end])
            content = lines[end][margin.end():]
            content = _table_row(content) or content
            version = _VERSION_LINE.fullmatch(content) is not None
            # A `key: value` line joins a report unless it quotes or shows code
            # (a template's `- Output: "Error: …"`): that, and an error printed
            # above the versions, is the evidence, not the report.
            described = _REPORT_LINE.fullmatch(content) and not _QUOTE_MARKS.search(content)
            if not (version or margin.group("branch") or described) \
                    or _is_error_line(lines[end]) or _is_error_line(content):
                break
            versions += version
            platforms += bool(described and not version and _PLATFORM_LINE.fullmatch(content))
            end += 1
        if versions and versions + platforms >= _REPORT_LINES:
            keep[start:end] = [False] * (end - start)
            heading = start - 1  # the heading above it, blank lines between
            while heading >= 0 and not lines[heading].strip():
                heading -= 1
            if heading >= 0 and _MARKDOWN_HEADING.match(lines[heading]) \
                    and _ENVIRONMENT_WORDS.search(lines[heading]):
                keep[heading:start] = [False] * (start - heading)
        start = max(end, start + 1)
    return "\n".join(_without_package_listings([line for line, kept in zip(lines, keep) if kept]))


def without_html_comments(text: str) -> str:
    """``text`` less its closed ``<!-- … -->`` comments, by a left-to-right
    scan (a lazy regex scanned to the end from every unclosed opener)."""
    kept: list[str] = []
    at = 0
    while (start := text.find("<!--", at)) >= 0 and (end := text.find("-->", start + 4)) >= 0:
        kept.append(text[at:start])
        at = end + 3
    kept.append(text[at:])
    return "".join(kept)


def fenced_blocks(text: str) -> tuple[list[str], str]:
    """The fenced blocks' code (each with its last newline) and the text with
    each block, fences included, replaced by a newline. A fence opens on a
    line starting ``` or ~~~ that a later line holding that marker alone
    closes; one never closed is text. Each opener's closer is looked up in
    the closers' line numbers (a lazy regex scanned to the end from every
    unclosed opener: quadratic in an issue of them)."""
    lines = text.split("\n")
    starts = list(itertools.accumulate((len(line) + 1 for line in lines[:-1]), initial=0))
    closers = {marker: [at for at, line in enumerate(lines) if line.strip(" \t") == marker]
               for marker in ("```", "~~~")}
    code: list[str] = []
    prose: list[str] = []
    kept_from = 0  # the text's offset where the text not yet in a block starts
    at = 0
    while at < len(lines) - 1:  # an opener has a line after it
        opener = _FENCE_OPENER.match(lines[at])
        following = closers[opener.group(1)] if opener else []
        closer = bisect.bisect_right(following, at)
        if closer == len(following):
            at += 1
            continue
        end = following[closer]
        code.append("".join(line + "\n" for line in lines[at + 1:end]))
        prose.append(text[kept_from:starts[at]] + "\n")
        kept_from = starts[end] + len(lines[end])
        at = end + 1
    prose.append(text[kept_from:])
    return code, "".join(prose)


# An HTML entity written out (`&quot;`, `&#39;`, `&#x27;`), with its semicolon:
# without one (`?a=1&lt=2`) it is a URL's text.
_HTML_ENTITY = re.compile(r"&(?:#\d{1,7}|#[xX][0-9a-fA-F]{1,6}|[A-Za-z][A-Za-z0-9]{1,31});")
# A Markdown blockquote's margin (`> `, `> > `, `>> `), never a doctest's `>>>`.
_BLOCKQUOTE = re.compile(r"^[ \t]{0,3}(?:>(?!>>)[ \t]?)+", re.M)


# A terminal's colour and style codes, kept in a pasted output (IPython's,
# pytest's tracebacks): the escape sequence (`ESC[0;31m`, any CSI, `ESC[2K`)
# and what GitHub shows of a colour code once it dropped the ESC (`[0;31m`,
# `[39;00m`; not before a `]`: `[5m]` is a bracketed duration).
_COLOUR_CODES = re.compile(r"\x1b\[[0-9;?]*+[ -/]*+[@-~]|\[(?:\d{1,3};)*+\d{1,3}m(?!\])")


def _uncoloured(text: str) -> str:
    """``text`` without its terminal colour codes (see _COLOUR_CODES): they
    split a frame's path from its function and an exception's type from its
    message."""
    return _COLOUR_CODES.sub("", text)


def _unescaped(text: str) -> str:
    """``text`` with its HTML entities read when the whole text was escaped (a
    traceback exported from a web page or an e-mail: `File &quot;/app/shop/cart.py&quot;,
    line 8`): such a text holds no ``<``, ``>`` or ``"`` of its own. One that
    does writes its entities on purpose (an issue about escaping: `<p>&lt;img&gt;</p>`)."""
    if "<" in text or ">" in text or '"' in text:
        return text
    return _HTML_ENTITY.sub(lambda entity: html.unescape(entity.group(0)), text)


def _unquoted(text: str) -> str:
    """``text`` without its blockquotes' margins (a reply quoting a traceback)."""
    return _BLOCKQUOTE.sub("", text)


# The margin a log writer puts before each line it copies from a program's
# output: Android logcat's (`threadtime`, the default, `03-11 14:02:17.412
# 18244 18244 E AndroidRuntime: `; `brief` and `time`, `E/AndroidRuntime(18244): `;
# Android Studio's, `2024-03-11 14:02:17.412  18244-18244  AndroidRuntime
# com.example.shop  E  `), an ISO 8601 timestamp (GitHub Actions' raw logs,
# `docker logs -t`: `2024-03-11T14:02:17.4123456Z `), docker compose's service
# (`worker-1  | `, `app_worker_1  | `: a container's name ends in its replica
# number) and syslog's (`Mar 11 14:02:17 host app[42]: `, journalctl's default).
_LOG_MARGINS = (
    re.compile(r"\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}[ \t]+\d+[ \t]+\d+[ \t]+[VDIWEFA][ \t]+[^\n:]{0,100}: "
               r"|(?:\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}[ \t]+)?[VDIWEFA]/[^\n(:]{1,100}\([ \t]*\d+\): "
               r"|\d{4}-\d\d-\d\d \d\d:\d\d:\d\d\.\d{3}[ \t]+\d+-\d+[ \t]+\S{1,200}[ \t]+\S{1,200}"
               r"[ \t]+[VDIWEFA][ \t]+"),
    # One space only: what follows may be a logger's own line, its level padded (Spring Boot's `  WARN`).
    re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:[.,]\d{1,9})?(?:Z|[+-]\d\d:?\d\d) "),
    re.compile(r"[A-Za-z0-9][\w.-]{0,100}[-_]\d{1,4}[ \t]*\|(?: |$)"),
    re.compile(r"[A-Z][a-z]{2} [ \d]\d \d\d:\d\d:\d\d [\w.-]{1,100} [^\s:\[]{1,100}(?:\[\d+\])?: "),
)
# A margin may hold another (CI's timestamp before compose's service, compose's
# before the container's timestamp): the shapes are read away this many times.
_LOG_MARGIN_PASSES = 2


def _without_log_margins(text: str) -> str:
    """``text`` with each log margin read away where the same shape starts
    consecutive lines (a trace pasted from a log, every line behind its
    margin); a line alone keeps its start, which may be its own text."""
    lines = text.split("\n")
    for _ in range(_LOG_MARGIN_PASSES):
        for margin in _LOG_MARGINS:
            found = [margin.match(line) for line in lines]
            for at, match in enumerate(found):
                if match and ((at > 0 and found[at - 1]) or (at + 1 < len(found) and found[at + 1])):
                    lines[at] = lines[at][match.end():]
    return "\n".join(lines)


def _absolute_start(text: str, start: int, line_start: int) -> int | None:
    """Where the absolute path starts that a path read from ``start`` continues
    past a space (`Doe\\app\\x.py` of `C:\\Users\\Jane Doe\\app\\x.py`), or
    None: the words before it are no folders of an absolute path (`see
    app/x.py`, `/home/me/a.py and src/b.py`)."""
    at = start
    for _ in range(_SPACES_IN_PATH):
        if at <= line_start or text[at - 1] != " ":
            return None
        lowest = max(line_start, at - 1 - _MAX_NAME_CHARS)
        space = text.rfind(" ", lowest, at - 1)
        if space < 0 and lowest > line_start:
            return None  # longer than a folder's name
        word_start = space + 1 if space >= 0 else lowest
        word = text[word_start:at - 1]
        if "/" not in word and "\\" not in word or word[-1] in "/\\" or _PATH.fullmatch(word):
            return None  # no folders, no folder's name before the space, or a file's path of its own
        absolute = _ABSOLUTE_START.match(word)
        if absolute:
            return word_start + absolute.start(1)
        at = word_start
    return None


def _source_of_docs_page(url_path: str) -> tuple[str, str | None] | None:
    """The source file a documentation site's source view shows, and the
    Python module it is, or None: Sphinx's viewcode writes module ``a.b``'s
    source at ``_modules/a/b.html`` (``_modules/a/b/`` by the dirhtml
    builder; ``_modules/index.html`` lists the modules): read as ``a/b.py``
    and module ``a.b`` (whose file may be a package's ``a/b/__init__.py``:
    the repository's import roots say), rustdoc (docs.rs too) a crate's file
    ``src/x/y.rs`` at ``src/<crate>/x/y.rs.html``: read as
    ``<crate>/src/x/y.rs`` (a workspace member's folder is most often its
    crate's name; the tail ``src/x/y.rs`` names a crate at the repository's
    root), no module."""
    parts = url_path.split("/")
    if "_modules" in parts:
        module = parts[parts.index("_modules") + 1:]
        if module[-1:] == [""]:
            module = module[:-1]
        elif module and module[-1].endswith(".html"):
            module[-1] = module[-1].removesuffix(".html")
        else:
            return None
        if module and module != ["index"] and all(part.isidentifier() for part in module):
            return "/".join(module) + ".py", ".".join(module)
        return None
    if url_path.endswith(".rs.html") and "src" in parts:
        at = parts.index("src")
        crate, inner = parts[at + 1:at + 2], parts[at + 2:]
        if crate and crate[0].isidentifier() and inner:
            return "/".join([crate[0], "src", *inner]).removesuffix(".html"), None
    return None


# A forge's page of a file at a ref, where the file's repository path
# follows the ref: GitHub's and Gitea's `/<owner>/<repo>/blob/<ref>/<path>`
# (`blame/`, `raw/`), GitLab's `/<group>/<project>/-/blob/<ref>/<path>`,
# Bitbucket's `/<owner>/<repo>/src/<ref>/<path>`, Gitea's and Codeberg's
# `/<owner>/<repo>/src/branch/<ref>/<path>` (`commit/`, `tag/`).
_FORGE_VIEWS = frozenset({"blob", "blame", "raw", "src"})
_GITEA_REF_KINDS = frozenset({"branch", "commit", "tag"})
# A host serving files raw: `/<owner>/<repo>/<ref>/<path>`.
_RAW_HOSTS = frozenset({"raw.githubusercontent.com"})


def _repository_path_of_url(host: str, url_path: str) -> str | None:
    """The path from the repository's root of the file a forge's URL shows
    (`index.js` of `/acme/shop/blob/main/index.js`, not any `index.js`), or
    None: no forge's page of a file. A ref holding a slash (`feature/x`)
    reads one folder too many, which names no file whole."""
    parts = url_path.split("/")[1:]
    if host.lower() in _RAW_HOSTS:
        ref = 2
    else:
        # After the owner and the repository (a GitLab group's subgroups too).
        view = next((at for at in range(2, len(parts) - 2) if parts[at] in _FORGE_VIEWS), None)
        if view is None:
            return None
        ref = view + 2 if parts[view] == "src" and parts[view + 1] in _GITEA_REF_KINDS else view + 1
    rest = parts[ref + 1:]
    return "/".join(rest) if rest and all(rest) else None


def _line_after(text: str, at: int) -> int | None:
    """The line written right after a path or a file's URL ending at ``at``
    (_WRITTEN_LINE: `:12`, `#L12`), else None."""
    found = _WRITTEN_LINE.match(text, at)
    return int(found.group(1) or found.group(2)) if found else None


def _is_command_or_path(span: str) -> bool:
    """Whether a backticked span is a shell command or a path (`target/debug/my-app`,
    a URL): its words are a command's, options and folders, not code names.
    (A backslash is no path's mark here: PHP's `Shop\\Cart` is a name.)"""
    words = span.split()
    if words[:1] == ["$"]:  # a prompt
        words = words[1:]
    if len(words) == 1:  # Elixir's and Erlang's `String.length/1` is a function and its arity
        return "/" in words[0] and not _ARITY.search(words[0])
    return (len(words) > 1 and _COMMAND_WORD.fullmatch(words[0]) is not None
            and any(_OPTION_WORD.match(word) for word in words[1:]))


def read_issue(text: str) -> IssueText:
    """Split an issue's text into prose, code and the evidence they carry.
    HTML comments (an issue template's instructions, never shown on the
    tracker) are not read; HTML entities and blockquotes' margins are read
    as what they show, and a log's margins (see _LOG_MARGINS) and a
    terminal's colour codes are read away."""
    text = _without_version_listings(_without_log_margins(_unquoted(_unescaped(without_html_comments(
        _uncoloured(text))))))
    code, prose = fenced_blocks(text)
    doctest = "\n".join(re.sub(r"^\s*(?:>>>|\.\.\.) ?", "", m.group(0)) for m in _DOCTEST.finditer(prose))
    if doctest.strip():
        code.append(doctest)
    prose = _DOCTEST.sub("", prose)
    frames, frame_spans = _frames(text)
    messages: dict[str, None] = {}
    identifiers: dict[str, None] = {}
    found: list[str] = []
    # Where each error line's message is written (a pasted output's line, for the title).
    messages_at: list[int] = []
    for match in _EXCEPTION_LINE.finditer(text):
        if (name := match.group("type").rsplit(".", 1)[-1]) not in _BASE_EXCEPTIONS:
            _add(identifiers, name)
        if match.group("message"):
            found.append(match.group("message"))
            messages_at.append(match.start("message"))
    for pattern in (_GO_PANIC, *_LOG_LINES):
        for match in pattern.finditer(text):
            found.append(match.group("message"))
            messages_at.append(match.start("message"))
    for pattern in _OTHER_ERROR_LINES:
        for match in pattern.finditer(text):
            # A pattern's alternatives name their groups type, type2, message, message2.
            groups = {name.rstrip("2"): value for name, value in match.groupdict().items() if value}
            if "type" in groups:
                _add(identifiers, re.split(r"[.:\\]+", groups["type"])[-1])
            found.append(groups["message"])
            messages_at.append(match.start("message2" if match.group("message") is None else "message"))
    for match in _QUOTED.finditer(prose):
        quote = next(g for g in match.groups() if g is not None)
        if _QUOTED_SENTENCE_CHARS[0] <= len(quote) <= _QUOTED_SENTENCE_CHARS[1]:
            found.append(quote.strip())
    found += [match.group(1) for match in _BACKTICKED_SENTENCE.finditer(prose)
              if len(match.group(1).split()) >= _BACKTICKED_WORDS and not _CODE_START.match(match.group(1))
              and not _CODE_CHARACTERS.search(match.group(1))]
    for message in found:
        # A message is often built from parts (`"invalid param %r: " + problem`):
        # each part between punctuation is looked for on its own too.
        for part in [message, *_MESSAGE_PARTS.split(message)]:
            if len(part.split()) >= 3:
                _add(messages, _clipped(part.strip(), MAX_MESSAGE_CHARS))
    paths: dict[str, None] = {}
    modules: dict[str, None] = {}
    imported: dict[tuple[str, str], None] = {}
    # A path a frame was read from is the frame's: `frame` weighs it by depth.
    # Any other path, on a line that only looks like a frame too, is a path.
    frame_spans.sort()
    frame_starts = [start for start, _ in frame_spans]
    in_frame = _Spans(frame_spans).overlap
    # Where each path is written, a frame's too: a name within one is the
    # path's (`shop/__init__.py` mentions no `__init__`; `f.c.Result` is a name).
    path_spans = list(frame_spans)
    line_starts = [0] + [m.end() for m in re.finditer("\n", text)]
    path_lines: dict[str, int] = {}
    for match in _PATH.finditer(text):
        if in_frame(*match.span(1)) or _RELEASE_AFTER.match(text, match.end(1)):
            continue
        line_start = line_starts[bisect.bisect_right(line_starts, match.start()) - 1]
        start = _absolute_start(text, match.start(1), line_start)
        written = text[start:match.end(1)] if start is not None else match.group(1)
        # `+` starts a name (SvelteKit's `+page.svelte`), never a folder: a
        # diff's added line, `+src/a.py`.
        if written.startswith("+") and "/" in written:
            written = written[1:]
        _add(paths, written)
        path_spans.append((match.end(1) - len(written), match.end(1)))
        if (line := _line_after(text, match.end(1))) is not None:
            path_lines.setdefault(written, line)
    linked_paths: dict[str, str] = {}
    linked_modules: dict[str, str] = {}
    repository_paths: dict[str, str] = {}
    for match in _URL_PATH.finditer(text):
        path_spans.append(match.span())  # its host too: `github.com` names no module
        # `https://github.com/o/r/blob/main/src/shop/cart.py#L9`: an absolute path
        # whose tail is the repository's file, and whose part after the ref
        # is its repository path.
        url_path = match.group(1).rstrip(".,;:!")  # a sentence's end is not the path's
        # A browser's console writes the place after the URL (`…/src/range.ts:11:22`).
        place = _PLACE_SUFFIX.search(url_path)
        url_path = url_path[:place.start()] if place else url_path
        if in_frame(*match.span(1)):
            continue
        # Its line: the place after it, else an anchor right after its path (`#L12`).
        line = int(place.group(0).split(":")[1]) if place else (
            _line_after(text, match.end(1)) if url_path == match.group(1) else None)
        docs_page = _source_of_docs_page(url_path)
        if docs_page is not None:
            written, module = docs_page
            linked_paths.setdefault(written, url_path)
            if module is not None:
                linked_modules.setdefault(written, module)
        elif _PATH.fullmatch(url_path.rsplit("/", 1)[-1]):
            written = url_path
            host = text[text.index("//", match.start()) + 2:match.start(1)]
            if (rooted := _repository_path_of_url(host, url_path)) is not None:
                repository_paths.setdefault(written, rooted)
        else:
            continue
        _add(paths, written)
        if line is not None:
            path_lines.setdefault(written, line)
    code_text = "\n".join(code)
    # `import shop.data as sd`, `from shop import open_cart as oc`: what the
    # issue's code calls `sd.load` or `oc` is the repository's `shop.data.load`,
    # `shop.open_cart`.
    aliases: dict[str, str] = {}
    for block in [code_text, text]:
        for match in _FROM_IMPORT.finditer(block):
            module = match.group(1)
            _add(modules, module)
            for part in re.split(r"\s*,\s*", (match.group(2) or match.group(3)).strip()):
                words = part.split()
                if not words:
                    continue
                imported.setdefault((module, words[0]))
                _add(identifiers, words[0])
                if len(words) == 3 and words[1] == "as":
                    aliases[words[2]] = f"{module}.{words[0]}"
        for match in _IMPORT.finditer(block):
            for part in re.split(r"\s*,\s*", match.group(1)):
                module, _, alias = part.partition(" as ")
                _add(modules, module.strip())
                if alias.strip():
                    aliases[alias.strip()] = module.strip()
    for frame in frames:
        if in_standard_library(frame.path):
            continue  # the standard library's function (`decode`, `info`): not the repository's
        # `pkg.(*Cart).Total`, `shop::parser::Parser::next`: the function's own name.
        words = _WORD.findall(frame.function or "")
        # `<module>`, `<lambda>`, Ruby's `<top (required)>`: no function's name.
        if words and not (frame.function.startswith("<") and frame.function.endswith(">")):
            _add(identifiers, words[-1])
    in_path = _Spans(path_spans).hold
    for source in (text,):
        for pattern in (_DOTTED_CALL, _DOTTED, _CAMEL, _SNAKE):
            for match in pattern.finditer(source):
                name = match.group(1)
                if name in paths or name.split(".")[-1] in _SOURCE_EXTENSIONS or in_path(*match.span(1)):
                    continue
                _add(identifiers, name)
                if "." in name:
                    _add(modules, name)
        for match in _BACKTICKED.finditer(source):
            if match.group("quoted"):  # `block (2 levels) in call': its name is the last word
                if not match.group("quoted").startswith("<"):  # `<main>', `<top (required)>'
                    _add(identifiers, (_WORD.findall(match.group("quoted")) or [""])[-1])
            elif not _is_command_or_path(match.group("span")):
                span = match.span("span")
                words = [*((call.group(1), call.span(1)) for call in _DOTTED_CALL.finditer(source, *span)),
                         *((word.group(), word.span()) for word in _WORD.finditer(source, *span))]
                for word, written_at in words:
                    if not in_path(*written_at):
                        _add(identifiers, word)
        for match in _QUALIFIED.finditer(source):
            if not in_path(*match.span()):
                for part in _qualified_parts(match):
                    _add(identifiers, part)
    for name in list(identifiers):
        head, dot, rest = name.partition(".")
        if aliases.get(head, head) != head:
            expanded = aliases[head] + dot + rest
            _add(identifiers, expanded)
            _add(modules, expanded)
    imported_names = {name for _, name in imported}

    def meaningful(name: str) -> bool:
        last = name.split(".")[-1]
        if last in _CODE_NOISE or last.isdigit() or last.lower() in STOPWORDS:
            return False
        return len(last) >= 2 or last in imported_names  # `from django.db.models import Q`

    names = [name for name in identifiers if meaningful(name)]
    literals: dict[str, None] = {}
    for pattern in (_OPTION, _MESSAGE_ID, _HYPHENATED, _DIRECTIVE, _ROLE, _PLUGIN):
        for match in pattern.finditer(text):
            _add(literals, match.group(1))
    for match in _PLUGIN.finditer(text):
        _add(paths, match.group(1).replace(".", "/") + ".py")
    title = _title(text, sorted(frame_starts), sorted(messages_at))
    return IssueText(prose=prose, code=code, frames=frames, messages=list(messages),
                     identifiers=names, paths=list(paths),
                     modules=[m for m in modules if m.count(".") < MAX_MODULE_PARTS],
                     imported=list(imported), literals=list(literals), title=title, raw=text,
                     linked_paths=linked_paths, linked_modules=linked_modules,
                     repository_paths=repository_paths, path_lines=path_lines)


# Lines of a pasted output that are no frame nor message: a traceback's
# header and its chaining lines (IPython writes the type before the header),
# and a caret under the failing source (Node, Python 3.11, rustc).
_TRACEBACK_HEADER = re.compile(r"[^\n]{0,200}?Traceback \(most recent call last\)|[ \t]*(?:During handling "
                               r"of the above exception|The above exception was the direct cause)")
_CARET_LINE = re.compile(r"[ \t]*+(?:~*+\^)++~*+[ \t]*+")
# The other lines such an output holds: IPython's arrow at the failing line
# (`---> 91 return …`) and a notebook cell's frame (`Cell In[3], line 2`),
# Rust's hint after a panic (`note: run with `RUST_BACKTRACE=1` …`) and the
# heading of its backtrace, PHP's of its trace and the entry point ending it (`#2 {main}`).
_OUTPUT_LINE = re.compile(r"[ \t]*(?:-+>|Cell In\[\d*\], line \d|note: |stack backtrace:|Stack trace:|#\d+ \{main\})")
_FENCE_MARKERS = ("```", "~~~")
# Where Node threw inside its own modules, printed above the source line and
# a caret as a file's place is (_NODE_THROWN): `node:internal/process/promises:288`.
_NODE_BUILTIN_PLACE = re.compile(r"node:[\w/.-]+:\d+")
_LETTER = re.compile(r"[^\W\d_]")


def _title(text: str, frame_starts: list[int], messages_at: list[int]) -> str:
    """The first line of the report's own prose, "" when it has none. An
    output pasted first is no title (its header's words, `most recent call
    last`, name no code): from a line that starts one (a traceback's header,
    a frame, a path with its line as Node prints where it threw, a logged
    line, a fenced block, a doctest) its lines are skipped while they are
    that output's (frames, error lines and their messages, indented source,
    a caret under it, the runtime's version, blank lines). ``frame_starts``
    and ``messages_at``: where the text's frames' paths and error lines'
    messages are written, sorted."""
    lines = text.split("\n")
    last_closer = {marker: max((at for at, line in enumerate(lines) if line.strip(" \t") == marker), default=-1)
                   for marker in _FENCE_MARKERS}

    def holds(starts: list[int], start: int, end: int) -> bool:
        return bisect.bisect_left(starts, end) > bisect.bisect_left(starts, start)

    in_paste = False
    closer = None  # the marker closing the fenced block the scan is in
    end = 0
    for at, line in enumerate(lines):
        start, end = end, end + len(line) + 1
        stripped = line.strip()
        if closer is not None:
            closer = None if line.strip(" \t") == closer else closer
            continue
        if not stripped:
            continue
        fence = _FENCE_OPENER.match(line)
        if fence and last_closer[fence.group(1)] > at:
            closer = fence.group(1)
            in_paste = True
            continue
        place = _PLACE_SUFFIX.search(stripped)
        if (fence or _TRACEBACK_HEADER.match(line) or holds(frame_starts, start, end)
                or _DOCTEST.match(line) or any(pattern.match(line) for pattern in _LOG_LINES)
                or place and _PATH.fullmatch(stripped[:place.start()])
                or _NODE_BUILTIN_PLACE.fullmatch(stripped)):
            in_paste = True
            continue
        # (A line of no letters, the `}` closing Node's dump of an error's
        # properties, is the output's too.)
        if in_paste and (line[:1] in (" ", "\t") or holds(messages_at, start, end) or not _LETTER.search(line)
                         or _is_error_line(line) or _CARET_LINE.fullmatch(line) or _OUTPUT_LINE.match(line)
                         or at + 1 < len(lines) and _CARET_LINE.fullmatch(lines[at + 1])
                         or _VERSION_LINE.fullmatch(stripped)):
            continue
        return stripped
    return ""


_PROSE_WORD = re.compile(r"[A-Za-z][a-z]+")
_CODE_START = re.compile(r"(?:def|class|return|import|from|try|except|raise|if|for|while|with|"
                         r"assert|print|lambda|Traceback)\b|#")


def prose_lines(issue: IssueText) -> list[str]:
    """The lines of the prose that read as sentences: indented lines, lines
    starting like code, stack frames and lines mostly of brackets and
    operators are left out (issue trackers often paste code unfenced), and so
    are Markdown headings (an issue template's "### Describe the bug") and
    comment lines, both starting ``#``."""
    out = []
    for line in issue.prose.splitlines():
        stripped = line.strip()
        if not stripped or line[:1] in (" ", "\t") or _CODE_START.match(stripped):
            continue
        words = _PROSE_WORD.findall(stripped)
        operators = sum(stripped.count(c) for c in "()[]{}=*<>")
        if len(words) < 3 or operators > 0.08 * len(stripped):
            continue
        out.append(stripped)
    return out


def semantic_query(issue: IssueText, max_words: int) -> str:
    """What the embedding model reads of an issue: its title, then its prose
    sentences, cut at ``max_words`` words. The model's cost grows with its
    input (a 256-token text costs several times a 64-token one) and the
    opening says what the issue is about; code and tracebacks are left to the
    lexical signals."""
    lines = [issue.title] + [line for line in prose_lines(issue) if line != issue.title]
    return " ".join(" ".join(lines).split()[:max_words])



# Where a written path leaves the writer's machine for an installed package:
# what follows is an import path (`site-packages/shop/cart.py` is `shop.cart`).
INSTALLED_DIRS = frozenset({"site-packages", "dist-packages"})
_PYTHON_FILES = (".py", ".pyi", ".pyx")
# A Python installation's standard library (`/usr/lib/python3.11/json/decoder.py`,
# `C:\Python311\Lib\logging\__init__.py`, pyenv's and conda's alike) or code
# with no file (`<frozen runpy>`, `<string>`): never the repository's.
_STDLIB_PATH = re.compile(r"(^|/)(lib|lib64)/python\d\.\d+/|(^|/)python\d+/lib/|(^|/)lib-python/"
                          r"|^<", re.I)


def in_standard_library(written: str) -> bool:
    """A path into a Python installation's own library (not its site-packages)."""
    parts = written.replace("\\", "/").split("/")
    return (not any(p in INSTALLED_DIRS or p.endswith(".egg") for p in parts)
            and _STDLIB_PATH.search("/".join(parts)) is not None)

