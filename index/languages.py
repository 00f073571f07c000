"""Which grammar handles a path, which files are indexed by default, a
per-thread parser cache, and the one way code is parsed (``parse_source``:
with a deadline).

Languages are the tree-sitter-language-pack names. Markdown is listed here
because it has its own chunking (sections by heading), but the chunker splits
it by lines rather than with the tree-sitter grammar.
"""

from __future__ import annotations

import collections
import json
import posixpath
import re
import threading
import time
from contextlib import contextmanager
from typing import TYPE_CHECKING, Iterator

from .linear_re import LinearPattern
from .model import UNPARSED_HAZARD, UNPARSED_SUSPENDED, content_hash
from .paths import DOC_EXTENSIONS

if TYPE_CHECKING:
    from tree_sitter import Parser, Tree

NOTEBOOK_LANGUAGE = "jupyter"

_LANGUAGE_BY_EXTENSION: dict[str, str] = {
    "py": "python",
    "pyi": "python",
    # Cython: Python's grammar reads its `def`s and classes (`cdef class`
    # too); `cdef`/`cpdef` functions are read with the module's other lines.
    "pyx": "python",
    "pxd": "python",
    "pxi": "python",
    "js": "javascript",
    "jsx": "javascript",
    "mjs": "javascript",
    "cjs": "javascript",
    "ts": "typescript",
    "mts": "typescript",
    "cts": "typescript",
    "tsx": "tsx",
    "go": "go",
    "rs": "rust",
    "java": "java",
    "c": "c",
    "h": "cpp",  # see header_language: C++ unless the text says C or Objective-C
    "cc": "cpp",
    "cpp": "cpp",
    "cxx": "cpp",
    "c++": "cpp",
    "hpp": "cpp",
    "hh": "cpp",
    "hxx": "cpp",
    "h++": "cpp",
    "ipp": "cpp",
    "inl": "cpp",
    "cu": "cuda",
    "cuh": "cuda",
    "rb": "ruby",
    "rake": "ruby",
    "gemspec": "ruby",
    "php": "php",
    "phtml": "php",
    "md": "markdown",
    "markdown": "markdown",
    # Markdown with code in it: MDX (documentation sites), R Markdown, Quarto.
    "mdx": "markdown",
    "rmd": "markdown",
    "qmd": "markdown",
    "kt": "kotlin",
    "kts": "kotlin",
    "swift": "swift",
    "cs": "csharp",
    "scala": "scala",
    "sc": "scala",
    "sbt": "scala",
    "ex": "elixir",
    "exs": "elixir",
    "lua": "lua",
    "sh": "bash",
    "bash": "bash",
    "zsh": "bash",
    "ksh": "bash",
    # Bats test files: shell, their `@test` blocks among the script's lines.
    "bats": "bash",
    "dart": "dart",
    "hs": "haskell",
    "lhs": "haskell",
    "ml": "ocaml",
    "mli": "ocaml_interface",
    "zig": "zig",
    "jl": "julia",
    "r": "r",
    "m": "objc",
    "mm": "objc",
    "erl": "erlang",
    "hrl": "erlang",
    "clj": "clojure",
    "cljs": "clojure",
    "cljc": "clojure",
    "edn": "clojure",
    "vue": "vue",
    "svelte": "svelte",
    "fs": "fsharp",
    "fsi": "fsharp",
    "fsx": "fsharp",
    "pl": "perl",
    "pm": "perl",
    "ps1": "powershell",
    "psm1": "powershell",
    "tf": "terraform",
    "tfvars": "terraform",
    "hcl": "hcl",
    "nix": "nix",
    "sql": "sql",
    "sol": "solidity",
    "proto": "proto",
    "graphql": "graphql",
    "gql": "graphql",
    "elm": "elm",
    "gleam": "gleam",
    "thrift": "thrift",
    "f90": "fortran",
    "f95": "fortran",
    "f03": "fortran",
    "f": "fortran",
    "for": "fortran",
    "d": "d",
    "nim": "nim",
    "vim": "vim",
    "glsl": "glsl",
    "frag": "glsl",
    "vert": "glsl",
    "hlsl": "hlsl",
    "wgsl": "wgsl",
    "lisp": "commonlisp",
    "el": "elisp",
    "rkt": "racket",
    "scm": "scheme",
    "adb": "ada",
    "ads": "ada",
    "purs": "purescript",
    "odin": "odin",
    "pas": "pascal",
    "pp": "pascal",
    "tcl": "tcl",
    "ino": "cpp",  # Arduino sketches are C++
    # Read as text windows (no definitions table yet), named so status can say so.
    "groovy": "groovy",
    "gradle": "groovy",
    "vb": "vbnet",
    "fish": "fish",
    "cr": "crystal",
    "v": "v",
    "fnl": "fennel",
    "cob": "cobol",
    "cbl": "cobol",
    "hx": "haxe",
    "gd": "gdscript",
    "m4": "m4",
    "cmake": "cmake",
    "mk": "make",
    "bzl": "starlark",
    "star": "starlark",
    "astro": "astro",
    "prisma": "prisma",
    "rego": "rego",
    "sv": "verilog",
    "svh": "verilog",
    "vhd": "vhdl",
    "vhdl": "vhdl",
    "asm": "asm",
    "s": "asm",
    "ll": "llvm",
    "jsonnet": "jsonnet",
    "libsonnet": "jsonnet",
    "dockerfile": "dockerfile",
    "tex": "latex",  # prose (paths.DOC_EXTENSIONS), read as line windows
    "coffee": "coffeescript",
    "bat": "batch",
    "cmd": "batch",
    "awk": "awk",
    "cue": "cue",
    "bicep": "bicep",
    "jsp": "jsp",
    # Templates: written by hand in every web framework (razor is C#'s; these
    # are Rails', Jinja's and Django-style, Go's, Node's, PHP's), never what
    # a documentation generator writes (that is `.html`).
    "cshtml": "razor",
    "razor": "razor",
    "erb": "erb",
    "haml": "haml",
    "slim": "slim",
    "jinja": "jinja",
    "jinja2": "jinja",
    "j2": "jinja",
    "njk": "nunjucks",
    "twig": "twig",
    "liquid": "liquid",
    "hbs": "handlebars",
    "handlebars": "handlebars",
    "mustache": "mustache",
    "ejs": "ejs",
    "pug": "pug",
    "gohtml": "gotemplate",
    "tmpl": "gotemplate",
    "scss": "scss",
    "less": "less",
    # HTML: templates and pages (Django's, Angular's); what a generator wrote
    # says so and is left out (discovery.looks_generated).
    "html": "html",
    "htm": "html",
    # Jupyter notebooks: their cells' code read through notebook_view.
    "ipynb": NOTEBOOK_LANGUAGE,
    # Not CSS or XML: in most repositories they are generated (build output)
    # or data; `include` brings them in.
}

# Files named by their language, with a suffix of their own: `Dockerfile.dev`
# (and `prod.Dockerfile`, by the extension below). Not `Makefile.in`:
# automake writes it.
NAMED_VARIANTS = frozenset({"Dockerfile", "Containerfile"})

# Extension-less files whose content is in a known language.
_LANGUAGE_BY_FILENAME: dict[str, str] = {
    "Gemfile": "ruby",
    "Rakefile": "ruby",
    "Podfile": "ruby",
    "Vagrantfile": "ruby",
    "Brewfile": "ruby",
    "Fastfile": "ruby",
    "Makefile": "make",
    "GNUmakefile": "make",
    "Dockerfile": "dockerfile",
    "Containerfile": "dockerfile",
    "Jenkinsfile": "groovy",
    "Justfile": "make",
    "BUILD": "starlark",
    "BUILD.bazel": "starlark",
    "WORKSPACE": "starlark",
    "CMakeLists.txt": "cmake",
}


# A script with no extension (`bin/deploy`, `libexec/tool`) is in the
# language its `#!` line names: the interpreter, directly or through `env`,
# its version dropped (`python3.11`).
_LANGUAGE_BY_INTERPRETER: dict[str, str] = {
    "sh": "bash",
    "bash": "bash",
    "dash": "bash",
    "ash": "bash",
    "zsh": "bash",
    "ksh": "bash",
    "mksh": "bash",
    "bats": "bash",
    "python": "python",
    "pypy": "python",
    "node": "javascript",
    "nodejs": "javascript",
    "deno": "typescript",
    "ruby": "ruby",
    "perl": "perl",
    "php": "php",
    "lua": "lua",
    "luajit": "lua",
    "tclsh": "tcl",
    "wish": "tcl",
    "Rscript": "r",
    "julia": "julia",
    "awk": "awk",
    "gawk": "awk",
    "fish": "fish",
    "pwsh": "powershell",
    "escript": "erlang",
    "elixir": "elixir",
    "groovy": "groovy",
    "make": "make",
}
# Bytes read of an extension-less file for its `#!` line.
SHEBANG_BYTES = 256
_SHEBANG = re.compile(r"#![ \t]*(\S+)[ \t]*([^\r\n]*)")
_VERSIONED = re.compile(r"([A-Za-z]+?)[0-9.]*")


def shebang_language(head: str) -> str | None:
    """The language a script's `#!` line names (``head``: its first bytes),
    or None: no `#!`, or an interpreter not known here. `env`'s options
    (`-S`, `-u NAME`) and `NAME=value` settings are skipped."""
    found = _SHEBANG.match(head)
    if found is None:
        return None
    command = found.group(1).rsplit("/", 1)[-1]
    words = found.group(2).split()
    if command == "env":
        while words and (words[0].startswith("-") or "=" in words[0]):
            option = words.pop(0)
            if option in ("-u", "--unset", "-C", "--chdir") and words:
                words.pop(0)
        if not words:
            return None
        command = words[0].rsplit("/", 1)[-1]
    versioned = _VERSIONED.fullmatch(command)
    return _LANGUAGE_BY_INTERPRETER.get(versioned.group(1) if versioned else command)


def script_languages(include: frozenset[str]) -> frozenset[str]:
    """The languages whose extension-less scripts are indexed under the
    ``include`` option (extensions, lower case, no dot): those with one of
    their extensions included."""
    return frozenset(language for extension, language in _LANGUAGE_BY_EXTENSION.items()
                     if extension in include)


# Indexed by default: every language above, prose, and hand-written config and
# scripts (chunked as line windows). JSON is left out on purpose: in most
# repositories it is fixtures, lock files or generated data.
DEFAULT_INCLUDE: tuple[str, ...] = (
    *_LANGUAGE_BY_EXTENSION,
    *_LANGUAGE_BY_FILENAME,
    "rst",
    "txt",
    "adoc",
    "toml",
    "yaml",
    "yml",
    "ini",
    "cfg",
)


def _extension(path: str) -> str:
    name = posixpath.basename(path.replace("\\", "/"))
    stem, dot, extension = name.rpartition(".")
    return extension.lower() if dot and stem else ""


# C-family headers declare what their sources define (recall ranks a
# function's definition in a source above its prototype in a header).
_C_FAMILY_HEADERS = frozenset({"h", "hh", "hpp", "hxx", "h++", "cuh"})
_C_FAMILY_SOURCES = frozenset({"c", "cc", "cpp", "cxx", "c++", "cu", "m", "mm"})


def is_c_family_header(path: str) -> bool:
    return _extension(path) in _C_FAMILY_HEADERS


def is_c_family_source(path: str) -> bool:
    return _extension(path) in _C_FAMILY_SOURCES


def language_for_path(path: str, text: str | None = None) -> str | None:
    """The language of ``path`` (None for prose, config and unknown text).
    ``text``, when given, settles what the name cannot: a ``.h`` file's, and
    a script's with no extension (by its `#!` line)."""
    name = posixpath.basename(path.replace("\\", "/"))
    if name in _LANGUAGE_BY_FILENAME:
        return _LANGUAGE_BY_FILENAME[name]
    stem = name.split(".", 1)[0]
    if stem in NAMED_VARIANTS and stem != name:
        return _LANGUAGE_BY_FILENAME[stem]
    extension = _extension(path)
    if extension == "h" and text is not None:
        return header_language(text)
    if extension == "m" and text is not None and _MATLAB.search(text[:4096]) \
            and not _OBJC.search(text[:65536]):
        return "matlab"
    if not extension:
        return shebang_language(text[:SHEBANG_BYTES]) if text is not None else None
    return _LANGUAGE_BY_EXTENSION.get(extension)


# Signs a header is Objective-C or C++ (C++ also when it says neither: its
# grammar reads C's declarations alike, and a C++ class read as C is lost).
# Line-anchored with `[ \t]*`, never `\s*`: under MULTILINE that ran across
# every blank line from every line start (65,536 newlines: 40 s).
_OBJC = re.compile(r"^[ \t]*(?:@interface|@protocol|@implementation|#import)\b", re.MULTILINE)
_CPP = re.compile(r"^[ \t]*(?:(?:template\s*<)|(?:namespace\s+\w)|(?:class\s+\w+[^;\n]*$)|(?:public:|private:|protected:)"
                  r"|(?:using\s+namespace\b))|\bstd::|\w::\w", re.MULTILINE)
# A C header says so: `extern "C"` guards written for C++ callers mean the file is C.
_C_ONLY = re.compile(r'#\s*ifdef\s+__cplusplus|\bextern\s+"C"', re.MULTILINE)
_MATLAB = re.compile(r"^[ \t]*(?:function\s+(?:\[?[\w, ]*\]?\s*=\s*)?\w+\s*\(|%\s)", re.MULTILINE)


def header_language(text: str) -> str:
    """The grammar for a ``.h`` file: Objective-C, C++, or C when the text
    says it is written for C (an `extern "C"` guard) and shows nothing of C++."""
    head = text[:65536]
    if _OBJC.search(head):
        return "objc"
    if _CPP.search(head):
        return "cpp"
    return "c" if _C_ONLY.search(head) else "cpp"


# Vue and Svelte components: their <script> blocks are JavaScript or TypeScript.
# RE2 (linear): every unclosed `<script>` scanned to the end of the file.
_SCRIPT_BLOCK = LinearPattern(r"(?is)<script\b([^>]*)>(.*?)</script\s*>")
_SCRIPT_LANG = re.compile(r"""\blang\s*=\s*["']?(ts|typescript|tsx|js|javascript|jsx)""", re.IGNORECASE)
COMPONENT_LANGUAGES = frozenset({"vue", "svelte"})


def script_view(text: str) -> tuple[str, str]:
    """(grammar, text) for a Vue or Svelte component: its <script> blocks as
    they stand, every other character blanked (newlines kept, so rows and
    the script's byte columns are the file's)."""
    encoded = text.encode("utf-8", "replace")
    kept = bytearray(0x0A if byte == 0x0A else 0x20 for byte in encoded)
    language = "javascript"
    for match in _SCRIPT_BLOCK.finditer(text):
        lang = _SCRIPT_LANG.search(match.group(1))
        if lang and lang.group(1).lower().startswith("t"):
            language = "typescript"
        start = len(text[:match.start(2)].encode("utf-8", "replace"))
        end = start + len(match.group(2).encode("utf-8", "replace"))
        kept[start:end] = encoded[start:end]
    return language, kept.decode("utf-8", "replace")


# A notebook's kernel language -> the grammar its code cells are read with.
_NOTEBOOK_GRAMMARS = {"python": "python", "r": "r", "julia": "julia"}
_CELL_KEY = re.compile(r'^(\s*)"(cell_type|source)": ')


def notebook_view(text: str) -> tuple[str, str]:
    """(grammar, text) for a Jupyter notebook (nbformat's JSON, written one
    source line per JSON line by Jupyter, VS Code and nbformat): each code
    cell's lines decoded at their own rows (a magic or shell line, `%` or
    `!`, as a comment), each Markdown or raw cell's lines as comments, every
    other row blank (outputs, images, metadata). Rows are the file's, so a
    range read from the view is the file's lines; columns are not (the
    JSON's quotes and indentation). A notebook laid out otherwise (one line
    of JSON) reads as blank."""
    rows = text.split("\n")
    try:
        notebook = _json_value(text)
        cells = notebook["cells"]
        metadata = notebook.get("metadata") or {}
        kernel = ((metadata.get("language_info") or {}).get("name")
                  or (metadata.get("kernelspec") or {}).get("language") or "python")
        kinds = [cell["cell_type"] for cell in cells]
    except (KeyError, TypeError, AttributeError):  # not JSON (None), or not a notebook's
        return "python", "\n" * (len(rows) - 1)
    grammar = _NOTEBOOK_GRAMMARS.get(str(kernel).lower(), "python")
    view = [""] * len(rows)
    key_indent: str | None = None
    cell = -1
    open_at: int | None = None  # the row after a cell's `"source": [`
    for number, row in enumerate(rows):
        if open_at is not None:
            item = row.strip()
            if item.startswith("]"):
                open_at = None
                continue
            line = _json_value(item[:-1] if item.endswith(",") else item)
            if isinstance(line, str) and 0 <= cell < len(kinds):
                view[number] = _cell_row(kinds[cell], line.split("\n", 1)[0].rstrip("\r"))
            continue
        found = _CELL_KEY.match(row)
        if found is None or (key_indent is not None and found.group(1) != key_indent):
            continue
        if found.group(2) == "cell_type":
            key_indent = found.group(1)
            cell += 1
        elif key_indent is not None:
            value = row[found.end():].rstrip().rstrip(",")
            if value == "[":
                open_at = number + 1
            elif value.startswith('"') and 0 <= cell < len(kinds):
                line = _json_value(value)
                if isinstance(line, str) and "\n" not in line.rstrip("\n"):
                    view[number] = _cell_row(kinds[cell], line.rstrip("\n"))
    if cell + 1 != len(kinds):  # keys not where nbformat writes them: no row is known
        return grammar, "\n" * (len(rows) - 1)
    return grammar, "\n".join(view)


def _json_value(text: str) -> object:
    """``text`` decoded, or None: not JSON, or nested past the parser's
    recursion (a file of 200,000 `[` failed every pass)."""
    try:
        return json.loads(text)
    except (ValueError, RecursionError):
        return None


def _cell_row(kind: str, line: str) -> str:
    if kind == "code" and not line.lstrip().startswith(("%", "!")):
        return line
    return f"# {line}" if line.strip() else ""


# Configuration and data: their own recall kind, so a CI file that names a
# feature does not outrank the code implementing it.
_CONFIG_EXTENSIONS = frozenset({"toml", "yaml", "yml", "ini", "cfg", "json", "conf", "properties"})


def chunk_kind_for_path(path: str) -> str:
    """The recall kind of a file's chunks: "doc" (prose), "config", or "code"."""
    extension = _extension(path)
    if extension in DOC_EXTENSIONS:
        return "doc"
    return "config" if extension in _CONFIG_EXTENSIONS else "code"


_thread_state = threading.local()


def parser_for(language: str) -> "Parser":
    """A parser for ``language``, cached per thread: a Parser must not be used
    by two threads at once, and creating one costs more than a small parse."""
    parsers: dict[str, Parser] | None = getattr(_thread_state, "parsers", None)
    if parsers is None:
        parsers = _thread_state.parsers = {}
    parser = parsers.get(language)
    if parser is None:
        # Imported on first use: the CLI's daemon path never parses anything.
        from tree_sitter_language_pack import get_parser

        parser = parsers[language] = get_parser(language)  # type: ignore[arg-type]
    return parser


# A parse's deadline. Real files parse at up to ~0.3 s a MiB (5,716 files
# of 35 projects, 35 MB: the slowest 0.04 s), but some grammars take
# minutes on hostile text (D, PureScript and F# on a 400 KB expression line,
# Gleam quadratically on keyword lines): a parse past this is abandoned and
# the file read as line windows. Per file, not per parse (``parse_deadline``
# bounds a file's re-parses together). Seconds of the parsing thread's CPU
# time (``time.thread_time``), not of the clock: a loaded machine (a test
# suite, a build beside the daemon) must not make real files unparsed.
PARSE_DEADLINE_S = 2.0
# tree-sitter reads the source through a callback (only a parse fed that
# way reports progress, and so can be abandoned); so does every later
# ``node.text`` of the tree: large slices while parsing (a small one costs
# the parse ~50 %), small ones after (each ``node.text`` copies a slice).
_PARSE_SLICE = 1 << 16
_TEXT_SLICE = 1 << 10


class ParseAbandoned(Exception):
    """A parse ran past its deadline: read the text without a tree."""


def _deadline_at() -> float | None:
    return getattr(_thread_state, "deadline", None)


@contextmanager
def parse_deadline(seconds: float | None = None) -> Iterator[None]:
    """Every parse on this thread inside the block ends by one deadline,
    ``seconds`` (else PARSE_DEADLINE_S) of this thread's CPU time from now;
    nested blocks keep the earlier one."""
    outer = _deadline_at()
    mine = time.thread_time() + (PARSE_DEADLINE_S if seconds is None else seconds)
    _thread_state.deadline = mine if outer is None else min(outer, mine)
    try:
        yield
    finally:
        _thread_state.deadline = outer


def parse_source(parser: "Parser", source: bytes, old_tree: "Tree | None" = None) -> "Tree":
    """``parser``'s tree of ``source``.

    Inside a ``parse_deadline`` block (the chunker, which may read hostile
    text) the source goes through tree-sitter's read callback, whose
    progress callback stops the parse at the deadline (``ParseAbandoned``).
    py-tree-sitter 0.26.1 leaks every object that callback returns (about
    twice the source a parse, and a slice per later ``node.text``), so the
    chunk worker that parses this way is recycled past a memory bound
    (chunk_worker.py). Outside a block the source is parsed whole, without
    a deadline and without the leak: the daemon parses only texts the chunk
    worker has read within its deadlines (hazard marks; impact's ``_vet``).
    A grammar that hangs inside one step is bounded only by the worker's
    deadline.

    Each NUL is parsed as a space (same offsets and rows): tree-sitter's
    lexers read a NUL as the end of input, so one in a Python string left
    the rest of the file an ERROR, its definitions read as calls."""
    if b"\0" in source:
        source = source.replace(b"\0", b" ")
    deadline = _deadline_at()
    if deadline is None:
        return parser.parse(source) if old_tree is None else parser.parse(source, old_tree)
    if time.thread_time() > deadline:
        raise ParseAbandoned("parse deadline passed")

    slice_size = _PARSE_SLICE

    def read(offset: int, _point: tuple[int, int]) -> bytes:
        return source[offset:offset + slice_size]

    def stop(*_state: object) -> bool:
        return time.thread_time() > deadline

    try:
        if old_tree is None:
            tree = parser.parse(read, progress_callback=stop)
        else:
            tree = parser.parse(read, old_tree, progress_callback=stop)
        slice_size = _TEXT_SLICE
        return tree
    except ValueError as failed:  # what py-tree-sitter raises when the callback stops it
        # A stopped parse is kept for resuming; the next source is another text.
        parser.reset()
        raise ParseAbandoned(str(failed)) from failed


# Digests of texts whose chunking crashed or hung the chunk worker, or ran
# past the parse deadline, with why: never parsed again in this process
# (impact parses in-process, without a deadline, where such a text would
# take the daemon down or stall it). Bounded: an attacker's stream of
# distinct hostile texts costs a worker restart each, not memory.
_HAZARDOUS_MAX = 4096
_hazardous: collections.OrderedDict[str, str] = collections.OrderedDict()
_hazardous_lock = threading.Lock()


# Give-ups (texts marked hazardous by the chunk worker) per language, by the
# path that held each; past GIVE_UPS_TO_SUSPEND that language's other texts
# are not parsed in this process (read as line windows, "set aside"). Real
# code never reaches one (0 of 7,817 files of 35 projects), while each costs
# a pass 2-10 s: a repository of a thousand hostile files would hold its
# first pass for hours. A path that gave up is forgiven when its file is
# deleted or holds another text (``forgive``): the suspension ends once the
# hostile files are gone, and the texts set aside may be parsed again.
GIVE_UPS_TO_SUSPEND = 16
# Give-ups of all languages together past which every grammar is suspended:
# hostile files in each of 40 languages would otherwise cost 16 give-ups in
# each (640 of 2-10 s) before all were.
GIVE_UPS_TO_SUSPEND_ALL = 48
_give_ups: dict[str, set[str]] = collections.defaultdict(set)
_set_aside: dict[str, set[str]] = collections.defaultdict(set)  # language -> digests


def mark_hazardous(text: str, reason: str = UNPARSED_HAZARD, language: str | None = None,
                   path: str = "") -> None:
    """Never parse ``text`` again in this process; ``language`` (with the
    ``path`` that held it): a give-up of that grammar's, counted toward its
    suspension."""
    with _hazardous_lock:
        _mark(content_hash(text), reason)
        if language is not None:
            _give_ups[language].add(path)


def _mark(digest: str, reason: str) -> None:
    _hazardous[digest] = reason
    while len(_hazardous) > _HAZARDOUS_MAX:
        _hazardous.popitem(last=False)


def set_aside(text: str, language: str) -> None:
    """``text`` of a suspended ``language`` is read as windows: nothing in
    this process parses it while the suspension lasts."""
    digest = content_hash(text)
    with _hazardous_lock:
        _mark(digest, UNPARSED_SUSPENDED)
        # Bounded like the marks: a text past the bound keeps its mark when the
        # suspension ends (windows until a new process, which reads it again).
        if len(_set_aside[language]) < _HAZARDOUS_MAX:
            _set_aside[language].add(digest)


def suspended(language: str) -> bool:
    """Whether ``language``'s grammar, or the grammars together, gave up on
    too many texts for ``language`` to be tried again."""
    if not _give_ups:
        return False
    return (len(_give_ups.get(language, ())) >= GIVE_UPS_TO_SUSPEND
            or sum(len(paths) for paths in _give_ups.values()) >= GIVE_UPS_TO_SUSPEND_ALL)


def forgive(path: str) -> list[str]:
    """``path`` no longer holds the text it gave up on (deleted, or another
    text): its give-up no longer counts. Returns the languages whose
    suspension this ends; their set-aside texts may be parsed again."""
    lifted: list[str] = []
    if not _give_ups:  # every file written calls this: no lock while nothing gave up
        return lifted
    with _hazardous_lock:
        holding = [language for language, paths in _give_ups.items() if path in paths]
        if not holding:
            return lifted
        # Every language the give-up may have held suspended: its own, and
        # under the bound of all, any with texts set aside.
        was = [language for language in {*_give_ups, *_set_aside} if suspended(language)]
        for language in holding:
            _give_ups[language].discard(path)
            if not _give_ups[language]:  # none left: the fast paths on an empty dict hold again
                del _give_ups[language]
        for language in sorted(was):
            if not suspended(language):
                lifted.append(language)
                for digest in _set_aside.pop(language, ()):
                    if _hazardous.get(digest) == UNPARSED_SUSPENDED:
                        del _hazardous[digest]
    return lifted


def hazard(text: str) -> str | None:
    """Why ``text`` is never parsed in this process (a ``ParsedFile.unparsed``
    reason), or None."""
    if not _hazardous:
        return None
    digest = content_hash(text)
    with _hazardous_lock:
        return _hazardous.get(digest)


# The last tree of the few files parsed most recently: an edited buffer is
# parsed again from its previous tree (tree-sitter's incremental parsing),
# which reuses every node the edit left alone (django's query.py, 2,700
# lines: a keystroke's parse ~12 -> ~1 ms). A tree takes about 20 times its
# source in memory: at most RECENT_TREES of them, of RECENT_TREE_BYTES of
# source in all.
RECENT_TREES = 4
RECENT_TREE_BYTES = 1 << 20
_recent_trees: collections.OrderedDict[tuple[str, str], tuple[bytes, "Tree"]] = collections.OrderedDict()
_recent_trees_lock = threading.Lock()


# tree-sitter-python takes time in the square of a run of comment-only lines
# between two statements (8,000 lines: 1.9 s, past the parse deadline, so the
# file lost its definitions; 16,000: 7.6 s), while a run of blank lines costs
# nothing (2 ms). Other grammars measured (JS, TS, Go, Rust, C, Java, Ruby,
# PHP, Bash, YAML: 8,000 lines in 2-4 ms) do not.
_COMMENT_RUN_LINES = 64


def parse_view(language: str, source: bytes) -> bytes:
    """``source`` as its grammar is given it: in Python, the comment lines of
    a run of at least ``_COMMENT_RUN_LINES`` of them (blank lines between
    them count in) become spaces (every offset and row kept; only the run's
    comment nodes go, which no definition needs)."""
    if language != "python" or source.count(b"#") < _COMMENT_RUN_LINES:
        return source
    lines = source.split(b"\n")
    run: list[int] = []  # the comment lines of the current run (blank lines between them count in)
    for number, line in enumerate([*lines, b"x"]):
        content = line.strip(b" \t\r\f")
        if content.startswith(b"#"):
            run.append(number)
        elif content:
            if len(run) >= _COMMENT_RUN_LINES:
                for blank in run:
                    lines[blank] = b" " * len(lines[blank])
            run = []
    return b"\n".join(lines)


def parse(language: str, source: bytes, path: str | None = None) -> "Tree":
    """``source``'s tree. For a ``path`` parsed lately, the edit between the
    two texts is given to the previous tree and the parse starts from it;
    only from a tree without syntax errors and only to one without them
    (tree-sitter may recover from an error differently than a fresh parse),
    so the tree is always the one a fresh parse gives."""
    parser = parser_for(language)
    with _recent_trees_lock:
        previous = _recent_trees.get((language, path)) if path is not None else None
    tree = None
    if previous is not None and not previous[1].root_node.has_error:
        old_source, old_tree = previous
        if old_source == source:
            tree = old_tree  # nobody edits a stored tree: edits go to copies
        else:
            edited = old_tree.copy()  # a tree is not for two threads at once
            edited.edit(**_edit_between(old_source, source))
            tree = parse_source(parser, source, edited)
            if tree.root_node.has_error:
                tree = None
    if tree is None:
        tree = parse_source(parser, source)
    if path is not None:
        with _recent_trees_lock:
            _recent_trees[(language, path)] = (source, tree)
            _recent_trees.move_to_end((language, path))
            while len(_recent_trees) > RECENT_TREES or sum(
                    len(kept) for kept, _ in _recent_trees.values()) > RECENT_TREE_BYTES:
                _recent_trees.popitem(last=False)
    return tree


def _edit_between(old: bytes, new: bytes) -> dict:
    """tree-sitter's description of the one edit turning ``old`` into ``new``:
    everything between their common start and their common end replaced."""
    start = _common_length(old, new, lambda text, n: text[:n])
    most = min(len(old), len(new)) - start
    end = _common_length(old, new, lambda text, n: text[len(text) - n:], most)
    old_end, new_end = len(old) - end, len(new) - end
    return {"start_byte": start, "old_end_byte": old_end, "new_end_byte": new_end,
            "start_point": _point(old, start), "old_end_point": _point(old, old_end),
            "new_end_point": _point(new, new_end)}


def _common_length(a: bytes, b: bytes, part, most: int | None = None) -> int:
    """The longest n <= ``most`` with part(a, n) == part(b, n), by bisection
    (each comparison a memcmp: a few dozen of them for any file)."""
    low, high = 0, min(len(a), len(b)) if most is None else most
    while low < high:
        middle = (low + high + 1) // 2
        if part(a, middle) == part(b, middle):
            low = middle
        else:
            high = middle - 1
    return low


def _point(text: bytes, offset: int) -> tuple[int, int]:
    """(row, byte column) of ``offset``."""
    row = text.count(b"\n", 0, offset)
    return row, offset - (text.rfind(b"\n", 0, offset) + 1)
