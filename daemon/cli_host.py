"""The ``ctxls`` verbs that host something in this process: ``index`` (with
its progress line), ``serve``, ``mcp`` and ``memory``. Each imports what it
runs (the engine, the server, the MCP bridge) when it runs."""

from __future__ import annotations

import argparse
import io
import os
import sys
import time
from pathlib import Path

from ctxls import __version__
from ctxls.daemon.cli_verbs import (EXIT_NOT_FOUND, EXIT_USAGE, CliError, OutputClosed, call,
                                    drop_none, log_on_stderr, log_to_file, open_access,
                                    print_json, resolve_root, write_out, writing)
from ctxls.daemon.formatting import format_hits_human
from ctxls.index.roots import find_root, store_dir


# Back to the line's start, and erase it: the progress line is rewritten in place.
CLEAR_LINE = "\r\x1b[2K"


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
            write_out(text, sys.stderr, own_codes=CLEAR_LINE)
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
            write_out("", sys.stderr, own_codes=CLEAR_LINE)
            self._shown = False


def _index_target(args: argparse.Namespace) -> tuple[Path, list[str]]:
    """The root and pathspecs of `ctxls index`. Without --root, the first
    word is the root when it is a repository's folder (one holding .git or
    .ctxls/) or a folder in no repository; any other word is a PATH of the
    repository (a folder inside it, a file, a pattern): taking a folder inside
    the repository for a root made a second store there."""
    paths = list(args.paths)
    first = args.root_positional
    if first is not None and (args.root is not None or not _names_a_root(Path(first))):
        paths.insert(0, first)
        first = None
    root = resolve_root(args.root if args.root is not None else first, creates=True)
    return root, [_pathspec_of(spec, root) for spec in paths]


def _names_a_root(folder: Path) -> bool:
    if not folder.is_dir():
        return False
    enclosing = find_root(folder)
    return enclosing is None or enclosing == folder.resolve()


def _pathspec_of(spec: str, root: Path) -> str:
    """A file or folder on disk (typed relative to where the user is), or an
    absolute path, as its path in ``root``; else a pathspec of the root as
    typed (a pattern, a file since removed)."""
    on_disk = Path(spec)
    if not (on_disk.exists() or on_disk.is_absolute()):
        return spec
    try:
        return on_disk.resolve().relative_to(root).as_posix()
    except ValueError:
        raise CliError(f"{spec} is outside the repository {root}" if on_disk.exists()
                       else f"{spec} does not exist", EXIT_USAGE) from None


def cmd_index(args):
    """Index through the daemon when one runs (it owns the store), else here."""
    root, specs = _index_target(args)
    progress = Progress.for_args(args)
    started = time.perf_counter()
    access = open_access(args, root)
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
            stats = access.request("ctxls/index", drop_none({"paths": specs or None,
                                                              "force": args.force or None}))
            if args.embed:
                embedded = _wait_for_daemon_embedding(access, progress)
    finally:
        progress.clear()
        access.close()
    elapsed = time.perf_counter() - started
    if args.json:
        print_json(stats | {"embedded": embedded, "seconds": round(elapsed, 3), "via": access.via})
    else:
        write_out(f"indexed {root} in {elapsed:.2f}s: {stats['files']} files "
               f"({stats['added']} added, {stats['updated']} updated, {stats['removed']} removed, "
               f"{stats['unchanged']} unchanged, {stats['skipped']} skipped)"
               + (f", {embedded} chunks embedded" if args.embed else "")
               + (" [via the running daemon]" if access.via == "daemon" else "") + "\n")
    if specs and not (stats["files"] or stats["removed"] or stats["skipped"]):
        # A mistyped folder reads as a pathspec: say it named nothing, as git does.
        write_out(f"ctxls: {', '.join(specs)} matched no file on disk or in the index\n", sys.stderr)
        return 1
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


def _memory_backend(args):
    """The memory store a `ctxls memory` verb works on: --url (or
    $CTXLS_MEMORY_URL) names PostgreSQL, --db a SQLite store, else ROOT's
    store; and the SQLite store to close afterwards."""
    from ctxls.daemon.options import MEMORY_URL_ENV, MEMORY_URL_SCHEMES
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
    path = Path(args.db or store_dir(resolve_root(args.root, creates=False).resolve()) / "index.db")
    # An export is a read: it never makes a store where none is, nor moves
    # aside one that is not this user's own (quarantine), which left an
    # empty store in the named file's place and exported nothing.
    export = args.memory_verb == "export"
    if export and (not path.is_file() or path.stat().st_size == 0):
        raise CliError(f"no store at {path}: nothing to export", EXIT_NOT_FOUND)
    store = Store(path, refuse_untrusted=export)
    return SqliteMemoryStore(store), store


def cmd_memory(args):
    """migrate | export (JSON lines on stdout) | import (JSON lines from stdin)."""
    from ctxls.index.memory.postgres import FULL_TEXT_SCAN_WARNING
    from ctxls.index.memory.transfer import read_lines, write_lines

    log_on_stderr(args)
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
            # UTF-8 whatever the locale: the file is read on other machines.
            if sys.stdout is None:  # started with stdout closed (`>&-`): like a closed pipe
                raise OutputClosed()
            out = sys.stdout.buffer
            for line in write_lines(backend.export_records()):
                with writing(sys.stdout):
                    out.write(line.encode("utf-8", "surrogatepass"))
            with writing(sys.stdout):
                out.flush()
        else:
            if sys.stdin is None:
                raise CliError("memory import reads the records from stdin, which is closed",
                               EXIT_USAGE)
            lines = io.TextIOWrapper(sys.stdin.buffer, encoding="utf-8")
            try:
                records = read_lines(lines)  # every line checked before anything is written
            except UnicodeDecodeError as exc:
                print(f"ctxls: the records are not UTF-8 ({exc}); nothing was imported",
                      file=sys.stderr)
                return EXIT_USAGE
            count = backend.import_records(records)
            print(f"imported {count} records", file=sys.stderr)
            if backend.kind == "postgresql" and backend.semantic is not None:
                embedded = backend.embed_missing(
                    lambda done: print(f"\rembedded {done} rows", end="", file=sys.stderr, flush=True))
                print(f"\rembedded {embedded} rows", file=sys.stderr)
        return 0
    finally:  # a schema or database this ctxls cannot use is a MemoryUnavailable: cli.main says it
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
    log_on_stderr(args)
    return run_mcp(resolve_root(args.root, creates=True), use_daemon=not args.no_daemon)


def cmd_serve(args):
    log_on_stderr(args)
    if args.log_file:
        log_to_file(args)
    if args.node_ipc:
        print("ctxls: --node-ipc is not supported (it needs a Node.js server); start "
              "`ctxls serve` over stdio (the default, or --stdio)", file=sys.stderr)
        return 2
    if args.tcp is None and args.socket is None:
        _need_stdio("ctxls serve --stdio")
    if args.socket is not None and not args.root:
        raise CliError("serve --socket needs --root (the folder to serve)", EXIT_USAGE)
    root = resolve_root(args.root, creates=True) if args.root else None
    starting = None
    if args.socket is not None:
        if _already_served(root, args):
            return 0
        starting = _claim_start(root, args)
    try:
        return _serve(args, root, starting)
    finally:
        if starting is not None:
            starting.close()


def _claim_start(root: Path, args):
    """The takeover lock, held from before the daemon's slow start (the
    server's imports, opening the store) until it listens: meanwhile a CLI
    verb or an agent waits for it (daemon/client.py ``find_daemon``) instead
    of saying "no index yet" or opening the store beside it. None when
    another holds it (the editor's proxy that started this daemon, which
    waits for it to listen) or it cannot be taken (the bind decides, as before)."""
    from ctxls.daemon.client import default_socket, takeover_lock

    try:
        return takeover_lock(Path(args.socket) if args.socket else default_socket(root), wait=False)
    except OSError:
        return None


def _serve(args, root: Path | None, starting) -> int:
    """``serve`` once the arguments are checked; ``starting`` (the takeover
    lock, or None) is released once the socket listens."""
    import asyncio

    from ctxls.daemon import server as server_module
    from ctxls.daemon.server import server

    if args.client_process_id is not None:
        server.client_watch.watch(args.client_process_id)
    if root is not None and args.socket is None:
        # The headless daemon indexes once it listens (serve_headless).
        _say_indexed(server_module.prewarm(root), args.example)
    try:
        if args.tcp is not None:
            print(f"serving LSP on 127.0.0.1:{args.tcp} until interrupted (to this user's "
                  "connections only)", file=sys.stderr)
            return _serve_tcp(server, args.tcp)
        elif args.socket is not None:
            asyncio.run(server_module.serve_headless(
                root, args.socket or None,
                indexed=lambda engine: _say_indexed(engine, args.example),
                listening=starting.close if starting is not None else None))
        else:
            from ctxls.daemon.proxy import serve_stdio

            # A proxy when the repository already has a daemon, else the owner.
            return serve_stdio(server, args.no_socket)
    except KeyboardInterrupt:
        pass
    finally:
        server.workspaces.close()
    return 0


def _say_indexed(engine, example: str | None) -> None:
    """`make run`'s report of the first pass: the counts, and ``example``'s
    recall, on stderr (terminal-safe there: write_out)."""
    status = engine.status()
    write_out(f"ctxls {__version__}: indexed {status['files']} files, {status['chunks']} chunks "
              f"of {status['root']}\n", sys.stderr)
    if example:
        from ctxls.daemon import wire
        result = engine.recall(example, None, 5, body=True)
        _say_example(example, wire.recall_json(result, False)["groups"])


def _say_example(example: str, groups: dict) -> None:
    """The example recall's hits on stderr, terminal-safe when stderr is a
    terminal (write_out): a repository's file name or heading may hold a
    bidi override or an escape sequence, and this text was written raw."""
    write_out(f'example recall "{example}":\n{format_hits_human(groups)}\n', sys.stderr)


def _serve_tcp(server, port: int) -> int:
    """`serve --tcp PORT`: one LSP client on 127.0.0.1:PORT, its bytes read
    and written as stdio's are (daemon/proxy.py's FramedStdin, an Outbox).
    pygls's own TCP reader ignored an unusable Content-Length, left a header
    block without one unanswered, and lost the connection, unanswered, on a
    header line over 64 KiB. Any local user may connect to the port: a
    connection from another user, or from one that cannot be told, is
    closed unread, and the next one is waited for (``refuse_tcp_peer``).
    Its exit status is LSP's, as on stdio (``serve_stdio``): 0 when the
    client sent ``shutdown`` before it ended the session, else 1."""
    import socket

    from ctxls.daemon.outbox import Outbox
    from ctxls.daemon.proxy import FramedStdin
    from ctxls.daemon.socket_server import refuse_tcp_peer

    try:
        listener = socket.create_server(("127.0.0.1", port))
    except OSError as exc:
        raise CliError(f"cannot listen on 127.0.0.1:{port}: {exc.strerror or exc}") from None
    with listener:
        while True:
            connection, _ = listener.accept()
            if not refuse_tcp_peer(connection):
                break
            connection.close()
    with connection, connection.makefile("rb") as client_in:
        client_out = Outbox(connection.makefile("wb"))
        try:
            server.start_io(stdin=FramedStdin(b"", client_in), stdout=client_out)
        finally:
            client_out.close()  # the answers still queued reach the client first
    return 0 if server.protocol.shutdown_seen else 1


def _already_served(root: Path, args) -> bool:
    """A second `serve --root R --socket` (a second `make run`) on a served
    root says who serves it, answers its example there, and leaves it be:
    indexing again only to find the socket taken helped nobody."""
    from ctxls.daemon.client import DaemonClient, DaemonNotAnswering, default_socket
    from ctxls.daemon.socket_server import socket_owner_pid

    path = Path(args.socket) if args.socket else default_socket(root)
    pid = socket_owner_pid(path)
    if pid is None:
        return False
    try:  # a daemon that listens but does not answer is named, with what to do
        client = DaemonClient.connect(path)
    except DaemonNotAnswering as exc:
        raise CliError(str(exc)) from None
    except ConnectionError:
        client = None  # another program's socket: said as before
    if client is not None:
        client.close()
    owner = f"PID {pid}" if pid else "another process"
    write_out(f"ctxls: {root} is already served by {owner} on {path}; the verbs answer through "
              f"it (`ctxls status --root {root}`)\n", sys.stderr)
    if args.example:
        # json: the hits exactly (call makes them safe for stdout's terminal); they
        # go to stderr, which _say_example makes them safe for.
        result, _ = call(argparse.Namespace(root=str(root), no_daemon=False, json=True),
                         "ctxls/recall", {"query": args.example, "n": 5, "body": True})
        _say_example(args.example, result["groups"])
    return True
