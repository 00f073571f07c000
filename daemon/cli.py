"""The ``ctxls`` command: the daemon and a few headless verbs.

Exit codes: 0 success; 1 the work failed (an engine error, printed on stderr);
2 bad usage (argparse).
"""

from __future__ import annotations

import argparse
import asyncio
import json
import logging
import os
import sys
import threading
import time
from pathlib import Path

from ctxls import __version__
from ctxls.index.engine import ALL_KINDS, Engine, EngineOptions
from ctxls.index.errors import EngineError

log = logging.getLogger("ctxls")


def _engine(root: str) -> Engine:
    path = Path(root).resolve()
    if not path.is_dir():
        raise SystemExit(f"ctxls: {root} is not a directory")
    return Engine(path, EngineOptions())


def _print_json(value) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


def cmd_index(args: argparse.Namespace) -> int:
    from ctxls.daemon import wire

    engine = _engine(args.root)
    started = time.perf_counter()
    stats = engine.index(args.paths or None, force=args.force)
    elapsed = time.perf_counter() - started
    if args.json:
        _print_json(wire.index_stats_json(stats) | {"seconds": round(elapsed, 3)})
    else:
        print(f"indexed {engine.root} in {elapsed:.2f}s: {stats.files} files "
              f"({stats.added} added, {stats.updated} updated, {stats.removed} removed, "
              f"{stats.unchanged} unchanged, {stats.skipped} skipped)")
    engine.close()
    return 0


def cmd_status(args: argparse.Namespace) -> int:
    engine = _engine(args.root)
    status = engine.status()
    if args.json:
        _print_json(status)
    else:
        print(f"ctxls {status['version']}  root {status['root']}\n"
              f"  store  {status['dbPath']}\n"
              f"  files  {status['files']}   chunks {status['chunks']}")
    engine.close()
    return 0


def format_hits_human(groups: dict[str, list[dict]]) -> str:
    lines: list[str] = []
    for kind, hits in groups.items():
        if not hits:
            continue
        lines.append(f"{kind}:")
        for hit in hits:
            chunk = hit["chunk"] or {}
            where = f"{hit['path']}:{chunk.get('startLine', 0) + 1}-{chunk.get('endLine', 0) + 1}"
            symbol = chunk.get("symbol") or ""
            lines.append(f"  {hit['score']:8.3f}  {where}  {symbol}")
    return "\n".join(lines) if lines else "no hits"


def cmd_recall(args: argparse.Namespace) -> int:
    from ctxls.daemon import wire

    engine = _engine(args.root)
    if not args.no_refresh:
        engine.index()  # incremental: a no-op pass costs a fraction of a second
    kinds = [args.kind] if args.kind else None
    result = engine.recall(args.query, kinds, args.n, body=args.body)
    out = wire.recall_json(result, flat=bool(args.kind))
    if args.json:
        _print_json(out)
    else:
        print(format_hits_human(out.get("groups") or {args.kind: out.get("hits", [])}))
    engine.close()
    return 0


async def _serve_unix(path: str) -> None:
    """One LSP session over a Unix socket (pygls ships TCP and stdio only)."""
    from pygls.io_ import run_async
    from pygls.server import logger as pygls_logger

    from ctxls.daemon.server import server

    if os.path.exists(path):
        os.unlink(path)  # a leftover from a crashed daemon; we own this path
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    stop = asyncio.Event()

    async def connection(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        server.protocol.set_writer(writer)  # type: ignore[arg-type]
        server._stop_event = stop_flag = threading.Event()
        await run_async(stop_event=stop_flag, reader=reader, protocol=server.protocol,
                        logger=pygls_logger, error_handler=server.report_server_error)
        stop.set()

    unix_server = await asyncio.start_unix_server(connection, path)
    # Said only once the socket accepts connections: clients wait for this line.
    print(f"serving LSP on {path} until interrupted", file=sys.stderr, flush=True)
    async with unix_server:
        await stop.wait()
    os.unlink(path)


def cmd_serve(args: argparse.Namespace) -> int:
    from ctxls.daemon import server as server_module
    from ctxls.daemon.server import server

    if args.root:
        engine = server_module.prewarm(Path(args.root))
        status = engine.status()
        print(f"ctxls {__version__}: indexed {status['files']} files, {status['chunks']} chunks "
              f"of {status['root']}", file=sys.stderr)
        if args.example:
            from ctxls.daemon import wire
            result = engine.recall(args.example, None, 5)
            print(f'example recall "{args.example}":', file=sys.stderr)
            print(format_hits_human(wire.recall_json(result, False)["groups"]), file=sys.stderr)
    try:
        if args.tcp is not None:
            print(f"serving LSP on 127.0.0.1:{args.tcp} until interrupted", file=sys.stderr)
            server.start_tcp("127.0.0.1", args.tcp)
        elif args.socket:
            asyncio.run(_serve_unix(args.socket))
        else:
            server.start_io()
    except KeyboardInterrupt:
        pass
    finally:
        server.workspaces.close()
    return 0


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ctxls", description="code-context language server")
    parser.add_argument("--version", action="version", version=f"ctxls {__version__}")
    parser.add_argument("--log-level", default=os.environ.get("CTXLS_LOG", "WARNING"))
    sub = parser.add_subparsers(dest="command", required=True)

    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    where = serve.add_mutually_exclusive_group()
    where.add_argument("--tcp", type=int, metavar="PORT", help="listen on 127.0.0.1:PORT")
    where.add_argument("--socket", metavar="PATH", help="listen on a Unix socket")
    serve.add_argument("--root", help="index this folder before a client connects")
    serve.add_argument("--example", help="with --root: print this recall once indexed")
    serve.set_defaults(func=cmd_serve)

    index = sub.add_parser("index", help="index (incrementally) a folder")
    index.add_argument("root", nargs="?", default=".")
    index.add_argument("paths", nargs="*", help="only these pathspecs")
    index.add_argument("--force", action="store_true", help="re-chunk every file")
    index.add_argument("--json", action="store_true")
    index.set_defaults(func=cmd_index)

    recall = sub.add_parser("recall", help="search the index")
    recall.add_argument("query")
    recall.add_argument("--root", default=".")
    recall.add_argument("--kind", choices=ALL_KINDS)
    recall.add_argument("-n", type=int, default=10)
    recall.add_argument("--body", action="store_true", help="include chunk text")
    recall.add_argument("--no-refresh", action="store_true", help="skip the incremental pass")
    recall.add_argument("--json", action="store_true")
    recall.set_defaults(func=cmd_recall)

    status = sub.add_parser("status", help="what the index holds")
    status.add_argument("root", nargs="?", default=".")
    status.add_argument("--json", action="store_true")
    status.set_defaults(func=cmd_status)
    return parser


def main(argv: list[str] | None = None) -> int:
    args = build_parser().parse_args(argv)
    logging.basicConfig(level=args.log_level.upper(), stream=sys.stderr,
                        format="%(asctime)s %(levelname)s %(name)s: %(message)s")
    try:
        return args.func(args)
    except EngineError as exc:
        print(f"ctxls: {exc.message}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
