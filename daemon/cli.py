"""The ``ctxls`` command: the daemon and headless verbs for people and scripts.

Every verb except ``serve`` and ``mcp`` sends one protocol request: to the
running daemon through its socket when there is one (so it sees unsaved
buffers), else in this process over the store on disk. ``--json`` prints the
protocol's result as is.

The repository is found like git and ripgrep find theirs: the nearest folder
at or above the current one holding ``.ctxls/`` or ``.git`` (``--root``
overrides). Only ``index`` (and ``serve``/``mcp``) create an index; the other
verbs say how to create one when there is none.

Line numbers people read or type (output, ``get --start/--end``) are 1-based;
the protocol's JSON (``--json``) keeps its 0-based fields.

Exit codes: 0 success; 1 nothing found (no hit, unknown id or symbol,
abstained) or the request failed (message on stderr); 2 bad usage.
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import time
from pathlib import Path
from typing import Any

from ctxls import __version__
from ctxls.index.discovery import STORE_DIR_NAME, find_root, too_broad_root
from ctxls.index.errors import EngineError, InvalidParams
from ctxls.index.model import RECALL_KINDS, RECALL_MODES
from ctxls.daemon.formatting import (Style, format_hits_human, format_hits_vimgrep, human_locate,
                                     impact_lines, one_line, partial_note, past_end_text,
                                     status_lines, vimgrep_path, weak_note)

log = logging.getLogger("ctxls")

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2


class CliError(Exception):
    """A message for the user and the exit code that goes with it."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.message = message
        self.code = code


class OutputClosed(Exception):
    """stdout's reader went away (``ctxls ... | head``)."""


# -- where the repository is ------------------------------------------------------

def has_index(root: Path) -> bool:
    store = root / STORE_DIR_NAME
    return (store / "index.db").exists() or (store / "daemon.sock").exists()


def resolve_root(explicit: str | None, creates: bool) -> Path:
    """``explicit`` (``--root``) as is, else the nearest folder at or above the
    current one holding ``.ctxls/`` or ``.git``. A verb that does not
    ``creates`` an index refuses a root without one, saying how to make it."""
    if explicit is not None:
        root = Path(explicit).resolve()
        if not root.exists():
            raise CliError(f"{explicit} does not exist", EXIT_USAGE)
        if not root.is_dir():
            raise CliError(f"--root {explicit} is a file, not the repository's folder", EXIT_USAGE)
    else:
        found = find_root(Path.cwd())
        if found is None and not creates:
            raise CliError(f"no ctxls index in {Path.cwd()} or any folder above it (none holds "
                           f"{STORE_DIR_NAME}/ or .git); create one with `ctxls index` in the "
                           "repository's top folder, or pass --root")
        root = found or Path.cwd().resolve()
    if (broad := too_broad_root(root)) is not None:
        raise CliError(f"{root} {broad}; not indexed: pass --root with a project's folder",
                       EXIT_USAGE)
    if not creates and not has_index(root):
        raise CliError(f"{root} has no index yet; create one with `ctxls index --root {root}` "
                       f"(or keep one warm: `ctxls serve --root {root} --socket`)")
    return root


# -- output -------------------------------------------------------------------------

def _write(text: str, stream=None) -> None:
    stream = stream or sys.stdout
    if stream is None:  # started with stdout closed (`>&-`): like a closed pipe
        raise OutputClosed()
    try:
        stream.write(text)
        stream.flush()
    except BrokenPipeError as exc:
        raise OutputClosed() from exc


def _print_json(value: Any) -> None:
    _write(json.dumps(value, indent=2, ensure_ascii=False) + "\n")


def _style(args: argparse.Namespace) -> Style:
    return Style.for_stream(getattr(args, "color", "auto"), sys.stdout)


class Progress:
    """One rewritten line on stderr while long work runs; silent unless stderr
    is a terminal (and never with ``--json``)."""

    def __init__(self, enabled: bool):
        self.enabled = enabled
        self._shown = False
        self._eta = None  # the embedding pass's (EmbeddingEta), once one runs

    @classmethod
    def for_args(cls, args: argparse.Namespace) -> "Progress":
        return cls(not args.json and sys.stderr.isatty())

    def show(self, text: str) -> None:
        if self.enabled:
            _write(f"\r\x1b[2K{text}", sys.stderr)
            self._shown = True

    def files(self, done: int, total: int) -> None:
        self.show(f"indexing: {done}/{total} files")

    def chunks(self, done: int, total: int) -> None:
        if self._eta is None:
            from ctxls.index.semantic import EmbeddingEta  # numpy: only when embedding here

            self._eta = EmbeddingEta()
        self.show(self._eta.text(done, total))

    def clear(self) -> None:
        if self._shown:
            _write("\r\x1b[2K", sys.stderr)
            self._shown = False


# -- verbs ------------------------------------------------------------------------

def _access(args: argparse.Namespace, refresh: bool, creates: bool = False):
    from ctxls.daemon.client import EngineAccess

    root = resolve_root(args.root, creates)
    return EngineAccess(root, use_daemon=not args.no_daemon,
                        refresh=refresh and not getattr(args, "no_refresh", False))


def _call(args: argparse.Namespace, method: str, params: dict, refresh: bool = True
          ) -> tuple[Any, str]:
    """(the protocol's result, "daemon" | "local")."""
    access = _access(args, refresh)
    try:
        return access.request(method, params), access.via
    finally:
        access.close()


def _drop_none(params: dict) -> dict:
    return {k: v for k, v in params.items() if v is not None}


def cmd_recall(args):
    wants_text = not args.json or args.body  # a fact's text is what a person reads
    params = _drop_none({"query": args.query, "kind": args.kind, "n": args.n,
                         "body": wants_text or args.vimgrep or None,
                         "mode": args.mode, "scope": args.scope})
    result, _ = _call(args, "ctxls/recall", params)
    groups = result.get("groups") or {args.kind: result.get("hits", [])}
    found = any(groups.values())
    if args.json:
        _print_json(result)
    elif args.vimgrep:
        text = format_hits_vimgrep(groups)
        _write(text + "\n" if text else "")
    else:
        text = format_hits_human(groups, _style(args), bodies=args.body) if found else "no hits"
        _write(text + weak_note(result) + partial_note(result) + "\n")
    return 0 if found and not result.get("weak") else EXIT_NOT_FOUND


def cmd_locate(args):
    if args.file is not None:
        if args.text is not None:
            raise CliError("locate takes the text or --file, not both", EXIT_USAGE)
        try:
            text = Path(args.file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise CliError(f"cannot read {args.file}: {exc.strerror}") from exc
    elif args.text is None or args.text == "-":
        if sys.stdin is None:
            raise CliError("locate needs the issue text: as an argument, with --file, or on "
                           "stdin (which is closed)", EXIT_USAGE)
        text = sys.stdin.read()
    else:
        text = args.text
    params = _drop_none({"text": text, "n": args.n, "includeTests": args.include_tests or None})
    result, _ = _call(args, "ctxls/locate", params)
    if args.json:
        _print_json(result)
    else:
        _write(human_locate(result) + "\n")
    return 0 if result.get("files") else EXIT_NOT_FOUND


def cmd_get(args):
    for name in ("start", "end"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise CliError(f"--{name} is a 1-based line number: 1 or more", EXIT_USAGE)
    item_id = args.id
    root = resolve_root(args.root, creates=False)
    local = Path(item_id)
    if not local.is_absolute() and (Path.cwd() / local).is_file():
        item_id = str((Path.cwd() / local).resolve())  # a path typed from a subfolder
    params = _drop_none({"id": item_id,
                         "startLine": args.start - 1 if args.start else None,
                         "endLine": args.end - 1 if args.end else None, "scope": args.scope})
    args.root = str(root)
    item, _ = _call(args, "ctxls/get", params)
    past_end = past_end_text(item)
    if past_end:
        if args.json:
            _print_json(item)
        _write(f"ctxls: {past_end}\n", sys.stderr)
        return EXIT_NOT_FOUND
    if args.json:
        _print_json(item)
    elif item is not None:
        text = item.get("text") or ""
        _write(text if text.endswith("\n") or not text else text + "\n")
    if item is None:
        if not args.json:
            _write(f"ctxls: not found: {args.id} (neither an indexed file nor a written memory)\n",
                   sys.stderr)
        return EXIT_NOT_FOUND
    return 0


def cmd_impact(args):
    if args.n < 1:
        raise CliError("-n must be 1 or more", EXIT_USAGE)
    impact, _ = _call(args, "ctxls/impact", {"symbol": args.symbol})
    if args.json:
        _print_json(impact)
    elif impact is not None and args.vimgrep:
        text = "\n".join(f"{vimgrep_path(c)}:{c['range']['start']['line'] + 1}:"
                         f"{c['range']['start']['character'] + 1}:"
                         f"{args.symbol} called in {c.get('symbol') or c['path']}"
                         + ("" if c.get("confirmed") else " (unconfirmed)")
                         for c in impact.get("callers", [])[:args.n])
        _write(text + "\n" if text else "")
    elif impact is not None:
        _write("\n".join(impact_lines(impact, args.n, _style(args))) + "\n")
    if impact is None:
        if not args.json:
            _write(f"ctxls: {args.symbol} is not defined in the index\n", sys.stderr)
        return EXIT_NOT_FOUND
    return 0


def cmd_remember(args):
    meta = None
    if args.meta is not None:
        try:
            meta = json.loads(args.meta)
        except json.JSONDecodeError as exc:
            raise CliError(f"--meta is not valid JSON ({exc.msg} at character {exc.pos}); "
                           "give an object like '{\"pinned\": true}'", EXIT_USAGE) from exc
        except (ValueError, RecursionError) as exc:  # nested too deep, or a too long number
            raise CliError(f"--meta cannot be read ({type(exc).__name__}); give an object like "
                           "'{\"pinned\": true}'", EXIT_USAGE) from exc
        if not isinstance(meta, dict):
            raise CliError("--meta must be a JSON object, like '{\"pinned\": true}'", EXIT_USAGE)
    params = _drop_none({"id": args.id, "text": args.text, "kind": args.kind, "by": args.by,
                         "scope": args.scope, "meta": meta})
    result, _ = _call(args, "ctxls/remember", params, refresh=False)
    if args.json:
        _print_json(result)
    else:
        _write(f"remembered {args.kind or 'fact'} {args.id}: {one_line(args.text)}\n")
    return 0


def cmd_forget(args):
    if args.id is None and args.prefix is None and args.scope is None \
            and not (args.kind and args.by):
        raise CliError("say what to forget: an ID, --prefix, --scope, or --kind with --by",
                       EXIT_USAGE)
    params = _drop_none({"id": args.id, "idPrefix": args.prefix, "kind": args.kind,
                         "by": args.by, "scope": args.scope})
    result, _ = _call(args, "ctxls/forget", params, refresh=False)
    if args.json:
        _print_json(result)
    else:
        _write(f"removed {result['removed']}\n")
    return 0 if result["removed"] else EXIT_NOT_FOUND


def cmd_recent(args):
    params = _drop_none({"days": args.days, "limit": args.limit})
    result, _ = _call(args, "ctxls/recentActivity", params, refresh=False)
    if args.json:
        _print_json(result)
        return 0
    items = result.get("items", [])
    if not items:
        _write("no recent edits\n")
        return 0
    now = time.time() * 1000
    style = _style(args)
    _write("\n".join(f"  {int((now - i['lastEditedAt']) / 60000):5d} min ago  {i['edits']:3d} edits  "
                     f"{i.get('origin') or '':6s}  {style.path(i['id'])}  {i.get('symbol') or ''}"
                     .rstrip() for i in items) + "\n")
    return 0


def cmd_status(args):
    status, via = _call(args, "ctxls/status", {}, refresh=False)
    if args.json:
        _print_json(status | {"via": via})
    else:
        _write(status_lines(status, via, _style(args)) + "\n")
    return 0


def cmd_assemble(args):
    params = _drop_none({"query": args.query, "budgetTokens": args.budget, "kind": args.kind,
                         "mode": args.mode, "minScore": args.min_score, "scope": args.scope})
    result, _ = _call(args, "ctxls/assemble", params)
    if args.json:
        _print_json(result)
    elif result.get("abstained"):
        note = result.get("stats", {}).get("note") or "nothing relevant found"
        _write(f"(abstained: {note})\n")
    else:
        _write(result.get("context", "") + partial_note(result) + "\n")
    return EXIT_NOT_FOUND if result.get("abstained") else 0


def _index_target(args: argparse.Namespace) -> tuple[Path, list[str]]:
    """The root and pathspecs of `ctxls index`: a positional folder is the
    root (an alias of --root); a positional file means "index this file"."""
    paths = list(args.paths)
    positional = args.root_positional
    if positional is not None and args.root is not None:
        raise CliError("give the root once: as --root or as the first argument", EXIT_USAGE)
    if positional is not None and Path(positional).is_file():
        paths.insert(0, positional)
        positional = None
    root = resolve_root(args.root if args.root is not None else positional, creates=True)
    specs = []
    for spec in paths:
        on_disk = Path(spec)
        if on_disk.exists():  # a file or folder typed relative to where the user is
            try:
                spec = on_disk.resolve().relative_to(root).as_posix()
            except ValueError:
                raise CliError(f"{spec} is outside the repository {root}", EXIT_USAGE) from None
        specs.append(spec)
    return root, specs


def cmd_index(args):
    """Index through the daemon when one runs (it owns the store), else here."""
    from ctxls.daemon.client import EngineAccess

    root, specs = _index_target(args)
    progress = Progress.for_args(args)
    started = time.perf_counter()
    access = EngineAccess(root, use_daemon=not args.no_daemon, refresh=False)
    embedded = 0
    try:
        if access.via == "local":
            from ctxls.daemon import wire

            engine = access.local_engine()
            stats = wire.index_stats_json(engine.index(specs or None, args.force,
                                                       progress=progress.files))
            progress.clear()
            if args.embed:
                embedded = engine.embed_pending(progress=progress.chunks)
        else:
            stats = access.request("ctxls/index", _drop_none({"paths": specs or None,
                                                              "force": args.force or None}))
            if args.embed:
                embedded = _wait_for_daemon_embedding(access, progress)
    finally:
        progress.clear()
        access.close()
    elapsed = time.perf_counter() - started
    if args.json:
        _print_json(stats | {"embedded": embedded, "seconds": round(elapsed, 3), "via": access.via})
    else:
        _write(f"indexed {root} in {elapsed:.2f}s: {stats['files']} files "
               f"({stats['added']} added, {stats['updated']} updated, {stats['removed']} removed, "
               f"{stats['unchanged']} unchanged, {stats['skipped']} skipped)"
               + (f", {embedded} chunks embedded" if args.embed else "")
               + (" [via the running daemon]" if access.via == "daemon" else "") + "\n")
    return 0


def _wait_for_daemon_embedding(access, progress: Progress) -> int:
    """`index --embed` with a daemon: its worker embeds; wait until it is done."""
    first = access.request("ctxls/status", {})
    total, before = first.get("pending", 0), first.get("vectors", 0)
    while True:
        status = access.request("ctxls/status", {})
        done = status.get("vectors", 0) - before
        if status.get("state") in ("ready", "idle") or status.get("pending", 0) == 0 \
                or (status.get("embeddings") or {}).get("error"):
            return max(done, 0)
        total = max(total, done + status.get("pending", 0))
        progress.chunks(max(done, 0), total)
        time.sleep(0.5)


def cmd_trust_memory(args):
    result, _ = _call(args, "ctxls/trustMemory", {}, refresh=False)
    if args.json:
        _print_json(result)
    elif not result["stores"]:
        _write("no quarantined store\n")
    else:
        counts = ", ".join(f"{n} {table}" for table, n in result["imported"].items() if n)
        _write(f"imported from {len(result['stores'])} quarantined store(s): {counts or 'nothing'}\n")
    return 0


def _memory_backend(args):
    """The memory store a `ctxls memory` verb works on: --url (or
    $CTXLS_MEMORY_URL) names PostgreSQL, --db a SQLite store, else ROOT's
    store; and the SQLite store to close afterwards."""
    from ctxls.daemon.options import MEMORY_URL_ENV, MEMORY_URL_SCHEMES
    from ctxls.index.discovery import STORE_DIR_NAME
    from ctxls.index.memory import SqliteMemoryStore
    from ctxls.index.store import Store

    url = args.url or (None if args.db else os.environ.get(MEMORY_URL_ENV))
    if url is not None:
        if not url.startswith(MEMORY_URL_SCHEMES):
            raise CliError("--url must be a postgresql:// URL", EXIT_USAGE)
        from ctxls.index.memory.postgres import PostgresMemoryStore

        semantic = scratch = None
        if args.memory_verb == "import" and not args.no_embed:
            # Imported rows get vectors of the model a daemon loads by default; the
            # scratch store only keeps the model check's bookkeeping (vectors live in PostgreSQL).
            from ctxls.index.embeddings import load_embedder
            from ctxls.index.semantic import SemanticIndex

            scratch = Store(None)
            semantic = SemanticIndex(scratch, None, load_embedder,
                                     lambda message: print(f"ctxls: {message}", file=sys.stderr))
        return PostgresMemoryStore(url, migrate=args.memory_verb != "export",
                                   semantic=semantic), scratch
    store = Store(args.db or resolve_root(args.root, creates=False) / STORE_DIR_NAME / "index.db")
    return SqliteMemoryStore(store), store


def cmd_memory(args):
    """migrate | export (JSON lines on stdout) | import (JSON lines from stdin)."""
    from ctxls.index.memory.postgres import FULL_TEXT_SCAN_WARNING, MemorySchemaError
    from ctxls.index.memory.transfer import read_lines, write_lines

    backend, store = _memory_backend(args)
    try:
        if args.memory_verb == "migrate":
            if backend.kind != "postgresql":
                print("the SQLite store migrates itself when opened: nothing to do")
                return 0
            before, after = backend.migrate()
            print(f"memory schema {before} -> {after}" if before != after
                  else f"memory schema {after}: up to date")
            if not backend.full_text_index_usable():
                print(f"ctxls: {FULL_TEXT_SCAN_WARNING}", file=sys.stderr)
        elif args.memory_verb == "export":
            sys.stdout.writelines(write_lines(backend.export_records()))
        else:
            records = read_lines(sys.stdin)  # every line checked before anything is written
            count = backend.import_records(records)
            print(f"imported {count} records", file=sys.stderr)
            if backend.kind == "postgresql" and backend.semantic is not None:
                embedded = backend.embed_missing(
                    lambda done: print(f"\rembedded {done} rows", end="", file=sys.stderr, flush=True))
                print(f"\rembedded {embedded} rows", file=sys.stderr)
        return 0
    except MemorySchemaError as exc:
        print(f"ctxls: {exc}", file=sys.stderr)
        return 1
    finally:
        backend.close()
        if store is not None:
            store.close()


def _need_stdio(verb: str) -> None:
    """A protocol on stdin/stdout cannot run with either closed: say so, not a traceback."""
    closed = [name for name in ("stdin", "stdout") if getattr(sys, name) is None]
    if closed:
        raise CliError(f"{verb} talks over stdin and stdout, and {' and '.join(closed)} "
                       f"{'is' if len(closed) == 1 else 'are'} closed", EXIT_USAGE)


def cmd_mcp(args):
    from ctxls.daemon.mcp_bridge import run_mcp

    _need_stdio("ctxls mcp")
    return run_mcp(resolve_root(args.root, creates=True), use_daemon=not args.no_daemon)


def cmd_serve(args):
    from ctxls.daemon import server as server_module
    from ctxls.daemon.server import server

    if args.node_ipc:
        print("ctxls: --node-ipc is not supported (it needs a Node.js server); start "
              "`ctxls serve` over stdio (the default, or --stdio)", file=sys.stderr)
        return 2
    if args.tcp is None and args.socket is None:
        _need_stdio("ctxls serve --stdio")
    if args.client_process_id is not None:
        server.client_watch.watch(args.client_process_id)
    if args.root:
        root = resolve_root(args.root, creates=True)
        if args.socket is not None and _already_served(root, args):
            return 0
        engine = server_module.prewarm(root)
        status = engine.status()
        print(f"ctxls {__version__}: indexed {status['files']} files, {status['chunks']} chunks "
              f"of {status['root']}", file=sys.stderr)
        if args.example:
            from ctxls.daemon import wire
            result = engine.recall(args.example, None, 5, body=True)
            print(f'example recall "{args.example}":', file=sys.stderr)
            print(format_hits_human(wire.recall_json(result, False)["groups"]), file=sys.stderr)
    try:
        if args.tcp is not None:
            print(f"serving LSP on 127.0.0.1:{args.tcp} until interrupted", file=sys.stderr)
            try:
                server.start_tcp("127.0.0.1", args.tcp)
            except OSError as exc:
                raise CliError(f"cannot listen on 127.0.0.1:{args.tcp}: {exc.strerror or exc}")
        elif args.socket is not None:
            if not args.root:
                raise CliError("serve --socket needs --root (the folder to serve)", EXIT_USAGE)
            asyncio.run(server_module.serve_headless(Path(args.root), args.socket or None))
        else:
            from ctxls.daemon.proxy import serve_stdio

            # A proxy when the repository already has a daemon, else the owner.
            serve_stdio(server, args.no_socket)
    except KeyboardInterrupt:
        pass
    finally:
        server.workspaces.close()
    return 0


def _already_served(root: Path, args) -> bool:
    """A second `serve --root R --socket` (a second `make run`) on a served
    root says who serves it, answers its example there, and leaves it be:
    indexing again only to find the socket taken helped nobody."""
    from ctxls.daemon.framing import SOCKET_NAME
    from ctxls.daemon.socket_server import socket_owner_pid

    path = Path(args.socket) if args.socket else root / STORE_DIR_NAME / SOCKET_NAME
    pid = socket_owner_pid(path)
    if pid is None:
        return False
    owner = f"PID {pid}" if pid else "another process"
    print(f"ctxls: {root} is already served by {owner} on {path}; the verbs answer through it "
          f"(`ctxls status --root {root}`)", file=sys.stderr)
    if args.example:
        result, _ = _call(argparse.Namespace(root=str(root), no_daemon=False), "ctxls/recall",
                          {"query": args.example, "n": 5, "body": True})
        print(f'example recall "{args.example}":', file=sys.stderr)
        print(format_hits_human(result["groups"]), file=sys.stderr)
    return True


def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a TCP port (1-65535)")
    return port


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(
        prog="ctxls", description="code-context language server and its command line",
        epilog="The repository is the nearest folder at or above the current one holding "
               ".ctxls/ or .git, unless --root says otherwise. Lines you read or type are "
               "1-based; --json prints the protocol's 0-based fields.")
    parser.add_argument("--version", action="version", version=f"ctxls {__version__}")
    parser.add_argument("--log-level", default=os.environ.get("CTXLS_LOG", "WARNING"),
                        help="logging level on stderr (default WARNING, or $CTXLS_LOG)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="`ctxls COMMAND -h` shows its options")

    def verb(name: str, help_text: str, func, root_positional: bool = False,
             colour: bool = True) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text, description=help_text)
        if root_positional:
            p.add_argument("root_positional", nargs="?", metavar="ROOT",
                           help="the repository (same as --root)")
        p.add_argument("--root", help="the repository's folder (default: the nearest folder at "
                                      "or above the current one holding .ctxls/ or .git)")
        p.add_argument("--json", action="store_true", help="print the protocol's JSON result")
        p.add_argument("--no-daemon", action="store_true",
                       help="open the store in this process even if a daemon runs")
        if colour:
            p.add_argument("--color", choices=("auto", "always", "never"), default="auto",
                           help="colour the output (auto: on a terminal, unless NO_COLOR is set)")
        p.set_defaults(func=func)
        return p

    serve = sub.add_parser("serve", help="run the language server (stdio by default)",
                           description="run the language server (stdio by default)")
    where = serve.add_mutually_exclusive_group()
    # The transport flags LSP clients append (vscode-languageclient: --stdio
    # and --clientProcessId=PID); stdio is the default anyway.
    where.add_argument("--stdio", action="store_true", help="serve LSP on stdin/stdout (the default)")
    where.add_argument("--node-ipc", action="store_true", help=argparse.SUPPRESS)
    where.add_argument("--tcp", type=_port, metavar="PORT", help="one LSP client on 127.0.0.1:PORT")
    where.add_argument("--socket", nargs="?", const="", metavar="PATH",
                       help="headless: serve the shared socket only (default ROOT/.ctxls/daemon.sock)")
    serve.add_argument("--root", help="index this folder before a client connects")
    serve.add_argument("--example", help="with --root: print this recall once indexed")
    serve.add_argument("--no-socket", action="store_true",
                       help="stdio only: do not open the shared daemon socket")
    serve.add_argument("--clientProcessId", dest="client_process_id", type=int, metavar="PID",
                       help="exit when this process (the editor) exits")
    serve.set_defaults(func=cmd_serve)

    index = verb("index", "index (incrementally) a repository, or some files of it", cmd_index,
                 root_positional=True, colour=False)
    index.add_argument("paths", nargs="*", metavar="PATH",
                       help="only these files, folders or pathspecs")
    index.add_argument("--force", action="store_true", help="re-chunk every file")
    index.add_argument("--embed", action="store_true",
                       help="also embed every chunk lacking a vector (with a daemon: wait for "
                            "its embedding to finish)")

    recall = verb("recall", "search the index", cmd_recall)
    recall.add_argument("query", help="words, a question or an identifier")
    recall.add_argument("--kind", choices=RECALL_KINDS, help="only this kind of hit")
    recall.add_argument("-n", type=int, default=10, help="hits per kind (default 10)")
    recall.add_argument("--body", action="store_true",
                        help="print each hit's text (with --json: include it)")
    recall.add_argument("--mode", choices=RECALL_MODES,
                        help="ranking: hybrid (default), lexical (keywords) or semantic (meaning)")
    recall.add_argument("--scope", help="the memory tenant to search (default: all)")
    recall.add_argument("--vimgrep", action="store_true",
                        help="print path:line:col:text per file hit (for quickfix lists)")
    recall.add_argument("--no-refresh", action="store_true",
                        help="without a daemon: skip the incremental pass first")

    locate = verb("locate", "the files to change for an issue text or stack trace", cmd_locate)
    locate.add_argument("text", nargs="?",
                        help="the issue text; '-' or nothing reads it from stdin")
    locate.add_argument("--file", help="read the issue text from this file")
    locate.add_argument("-n", type=int, default=10, help="at most this many files (default 10)")
    locate.add_argument("--include-tests", action="store_true",
                        help="do not demote test and doc files")
    locate.add_argument("--no-refresh", action="store_true",
                        help="without a daemon: skip the incremental pass first")

    get = verb("get", "print a file, a line range or a memory", cmd_get, colour=False)
    get.add_argument("id", help="a file path (from the repository or the current folder) or a "
                                "memory id")
    get.add_argument("--start", type=int, help="first line (1-based)")
    get.add_argument("--end", type=int, help="last line (1-based, inclusive)")
    get.add_argument("--scope", help="the memory tenant the id belongs to")

    impact = verb("impact", "callers, callees and change risk of a symbol", cmd_impact)
    impact.add_argument("symbol", help="a name or qualified name, like Session.request")
    impact.add_argument("-n", type=int, default=20,
                        help="show at most this many callers and callees (default 20)")
    impact.add_argument("--vimgrep", action="store_true",
                        help="print path:line:col:text per caller (for quickfix lists)")

    remember = verb("remember", "write a fact, episode or doc", cmd_remember, colour=False)
    remember.add_argument("id", help="its id; the same id replaces the earlier text")
    remember.add_argument("text", help="what to remember")
    remember.add_argument("--kind", choices=("fact", "episode", "doc"), help="default fact")
    remember.add_argument("--by", choices=("human", "agent"), default="human",
                          help="who wrote it (default human)")
    remember.add_argument("--scope", help="the memory tenant to write to")
    remember.add_argument("--meta", help="a JSON object stored with it, like '{\"pinned\": true}'")

    forget = verb("forget", "remove written memory", cmd_forget, colour=False)
    forget.add_argument("id", nargs="?", help="the id to remove")
    forget.add_argument("--prefix", help="every id starting with this")
    forget.add_argument("--kind", choices=("fact", "episode", "doc"), help="only this kind")
    forget.add_argument("--by", choices=("human", "agent"), help="only what this author wrote")
    forget.add_argument("--scope", help="only this memory tenant")

    recent = verb("recent", "what was edited lately", cmd_recent)
    recent.add_argument("--days", type=float, help="how far back (default 7)")
    recent.add_argument("--limit", type=int, help="at most this many rows (default 20)")

    verb("status", "what the index holds and whether it is ready", cmd_status,
         root_positional=True)

    assemble = verb("assemble", "token-budgeted context for a query", cmd_assemble, colour=False)
    assemble.add_argument("query", help="the question to gather context for")
    assemble.add_argument("--budget", type=int, default=2000, help="tokens (default 2000)")
    assemble.add_argument("--kind", choices=RECALL_KINDS, help="only this kind of hit")
    assemble.add_argument("--mode", choices=RECALL_MODES,
                          help="ranking: hybrid (default), lexical or semantic")
    assemble.add_argument("--min-score", type=float,
                          help="abstain when the top hit scores lower (see docs/protocol.md)")
    assemble.add_argument("--scope", help="the memory tenant to search")

    verb("trust-memory", "import the written memory of stores quarantined as not yours "
                         "(one that came with the checkout, or was copied from elsewhere)",
         cmd_trust_memory, colour=False)

    memory = sub.add_parser("memory", help="team memory: migrate the database, export or import")
    memory.add_argument("memory_verb", choices=("migrate", "export", "import"),
                        help="export prints JSON lines; import reads them from stdin")
    memory.add_argument("--url", help="a postgresql:// URL (default $CTXLS_MEMORY_URL)")
    memory.add_argument("--no-embed", action="store_true",
                        help="import: leave rows without vectors (recalled by their words only)")
    memory.add_argument("--db", help="a SQLite store file instead")
    memory.add_argument("--root", help="else ROOT/.ctxls/index.db (default: the nearest folder "
                                       "at or above the current one holding .ctxls/ or .git)")
    memory.set_defaults(func=cmd_memory)

    mcp = sub.add_parser("mcp", help="serve the Model Context Protocol on stdio (for agents)",
                         description="serve the Model Context Protocol on stdio (for agents)")
    mcp.add_argument("--root", help="the repository (default: the nearest folder at or above the "
                                    "current one holding .ctxls/ or .git)")
    mcp.add_argument("--no-daemon", action="store_true",
                     help="never use a running daemon: host the engine in this process")
    mcp.set_defaults(func=cmd_mcp)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    if getattr(args, "root_positional", None) is not None and args.command == "status":
        if args.root is not None:
            print("ctxls: give the root once: as --root or as the first argument", file=sys.stderr)
            return EXIT_USAGE
        args.root = args.root_positional
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except OutputClosed:
        # Like other Unix tools: a closed pipe ends the output quietly.
        if sys.stdout is not None:
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 141  # 128 + SIGPIPE
    except CliError as exc:
        print(f"ctxls: {exc.message}", file=sys.stderr)
        return exc.code
    except EngineError as exc:
        print(f"ctxls: {exc.message}", file=sys.stderr)
        return EXIT_USAGE if exc.code == InvalidParams.code else 1
    except ConnectionError as exc:
        print(f"ctxls: lost the daemon: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
