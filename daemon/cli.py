"""The ``ctxls`` command: the daemon and headless verbs for people and scripts.

Every verb except ``serve`` and ``mcp`` sends one protocol request: to the
running daemon through its socket when there is one (so it sees unsaved
buffers), else in this process over the store on disk. ``--json`` prints the
protocol's result as is.

Exit codes: 0 success; 1 the request failed (message on stderr); 2 bad usage.
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
from typing import Any, Callable

from ctxls import __version__
from ctxls.index.model import RECALL_KINDS, RECALL_MODES
from ctxls.index.errors import EngineError

log = logging.getLogger("ctxls")


def _root(value: str) -> Path:
    path = Path(value).resolve()
    if not path.is_dir():
        raise SystemExit(f"ctxls: {value} is not a directory")
    return path


def _print_json(value: Any) -> None:
    json.dump(value, sys.stdout, indent=2, ensure_ascii=False)
    sys.stdout.write("\n")


# -- human output ---------------------------------------------------------------

def _where(hit: dict) -> str:
    chunk = hit.get("chunk") or {}
    if "startLine" not in chunk:
        return hit["path"]
    return f"{hit['path']}:{chunk['startLine'] + 1}-{chunk['endLine'] + 1}"


def format_hits_human(groups: dict[str, list[dict]]) -> str:
    lines: list[str] = []
    for kind, hits in groups.items():
        if not hits:
            continue
        lines.append(f"{kind}:")
        for hit in hits:
            symbol = (hit.get("chunk") or {}).get("symbol") or ""
            lines.append(f"  {hit['score']:8.3f}  {_where(hit)}  {symbol}".rstrip())
    return "\n".join(lines) if lines else "no hits"


def _human_recall(result: dict, args: argparse.Namespace) -> str:
    groups = result.get("groups") or {args.kind: result.get("hits", [])}
    text = format_hits_human(groups)
    return text + ("\n(partial: indexing is still running)" if result.get("partial") else "")


def _human_status(status: dict, args: argparse.Namespace) -> str:
    embeddings = status.get("embeddings") or {}
    model = embeddings.get("model") or ("on" if embeddings.get("enabled") else "off")
    return (f"ctxls {status['version']}  root {status['root']}\n"
            f"  store    {status['dbPath']}\n"
            f"  files    {status['files']}   chunks {status['chunks']}   "
            f"vectors {status.get('vectors', 0)}   pending {status.get('pending', 0)}\n"
            f"  indexing {'yes' if status.get('indexing') else 'no'}   embeddings {model}")


def _human_get(item: dict | None, args: argparse.Namespace) -> str:
    return "not found" if item is None else (item.get("text") or "")


def _human_impact(impact: dict | None, args: argparse.Namespace) -> str:
    if impact is None:
        return "symbol not defined in the index"
    unconfirmed = impact.get("unconfirmed", 0)
    lines = [f"{impact['symbol']}: risk {impact['risk']}, {impact['confirmed']} confirmed callers"
             + (f" (+{unconfirmed} unconfirmed)" if unconfirmed else "")
             + f", {impact['mentions']} mentions, complexity {impact['complexity']}"]
    matched = impact.get("definitionsMatched", 1)

    def where(location: dict) -> str:
        return f"{location['path']}:{location['range']['start']['line'] + 1}  {location.get('symbol') or ''}"

    for definition in impact.get("definitions", []):
        lines.append(f"  definition  {where(definition)}" + (f"  (best of {matched} matches)" if matched > 1 else ""))
    for other in impact.get("perDefinition", [])[1:]:
        lines.append(f"  other       {where(other['definition'])}  {other['confirmed']} confirmed, "
                     f"{other['unconfirmed']} unconfirmed, risk {other['risk']}")
    for caller in impact.get("callers", []):
        start = caller["range"]["start"]["line"] + 1
        mark = "" if caller.get("confirmed") else f"  (unconfirmed: {caller.get('reason', 'unknown')})"
        lines.append(f"  caller  {caller['path']}:{start}  {caller.get('symbol') or ''}{mark}")
    if impact.get("unconfirmedOmitted"):
        reasons = ", ".join(f"{reason} {n}" for reason, n in impact.get("unconfirmedReasons", {}).items())
        lines.append(f"  ... {impact['unconfirmedOmitted']} more unconfirmed not listed ({reasons})")
    for callee in impact.get("callees", []):
        places = ", ".join(f"{d['path']}:{d['range']['start']['line'] + 1}" for d in callee.get("definitions", []))
        lines.append(f"  callee  {callee['symbol']}" + (f"  {places}" if places else ""))
    lines.extend(f"  hedge   {h}" for h in impact.get("hedges", []))
    return "\n".join(lines)


def _human_recent(result: dict, args: argparse.Namespace) -> str:
    items = result.get("items", [])
    if not items:
        return "no recent edits"
    now = time.time() * 1000
    return "\n".join(f"  {int((now - i['lastEditedAt']) / 60000):5d} min ago  {i['edits']:3d} edits  "
                     f"{i['id']}  {i.get('symbol') or ''}".rstrip() for i in items)


def _human_assemble(result: dict, args: argparse.Namespace) -> str:
    note = result.get("stats", {}).get("note") or "nothing relevant found"
    return result.get("context") or f"(abstained: {note})"


def _human_locate(result: dict, args: argparse.Namespace) -> str:
    files = result.get("files", [])
    if not files:
        return "nothing located"
    lines: list[str] = []
    for found in files:
        lines.append(f"{found['score']:8.3f}  {found['path']}")
        for reason in found.get("why", []):
            where = f" (line {reason['line'] + 1})" if "line" in reason else ""
            lines.append(f"            {reason['signal']:8s} {reason['detail']}{where}")
        for chunk in found.get("chunks", []):
            lines.append(f"            chunk    {found['path']}:{chunk['startLine'] + 1}-"
                         f"{chunk['endLine'] + 1}  {chunk.get('symbol') or ''}".rstrip())
    if result.get("partial"):
        lines.append("(partial: indexing is still running)")
    return "\n".join(lines)


def _human_plain(result: Any, args: argparse.Namespace) -> str:
    return json.dumps(result, indent=2, ensure_ascii=False)


# -- verbs ------------------------------------------------------------------------

def _request(args: argparse.Namespace, method: str, params: dict,
             human: Callable[[Any, argparse.Namespace], str], refresh: bool = True) -> int:
    from ctxls.daemon.client import EngineAccess

    access = EngineAccess(_root(args.root), use_daemon=not args.no_daemon,
                          refresh=refresh and not getattr(args, "no_refresh", False))
    try:
        result = access.request(method, params)
    finally:
        access.close()
    if args.json:
        _print_json(result)
    else:
        print(human(result, args))
    return 0


def _drop_none(params: dict) -> dict:
    return {k: v for k, v in params.items() if v is not None}


def cmd_recall(args):
    params = _drop_none({"query": args.query, "kind": args.kind, "n": args.n, "body": args.body,
                         "mode": args.mode, "scope": args.scope})
    return _request(args, "ctxls/recall", params, _human_recall)


def cmd_locate(args):
    if args.file is not None:
        if args.text is not None:
            raise SystemExit("ctxls: locate takes the text or --file, not both")
        try:
            text = Path(args.file).read_text(encoding="utf-8", errors="replace")
        except OSError as exc:
            raise SystemExit(f"ctxls: cannot read {args.file}: {exc.strerror}")
    elif args.text is None or args.text == "-":
        text = sys.stdin.read()
    else:
        text = args.text
    params = _drop_none({"text": text, "n": args.n, "includeTests": args.include_tests or None})
    return _request(args, "ctxls/locate", params, _human_locate)


def cmd_get(args):
    params = _drop_none({"id": args.id, "startLine": args.start, "endLine": args.end,
                         "scope": args.scope})
    return _request(args, "ctxls/get", params, _human_get)


def cmd_impact(args):
    return _request(args, "ctxls/impact", {"symbol": args.symbol}, _human_impact)


def cmd_remember(args):
    meta = json.loads(args.meta) if args.meta else None
    params = _drop_none({"id": args.id, "text": args.text, "kind": args.kind, "by": args.by,
                         "scope": args.scope, "meta": meta})
    return _request(args, "ctxls/remember", params, lambda r, a: f"remembered {args.id}",
                    refresh=False)


def cmd_forget(args):
    params = _drop_none({"id": args.id, "idPrefix": args.prefix, "kind": args.kind,
                         "by": args.by, "scope": args.scope})
    return _request(args, "ctxls/forget", params, lambda r, a: f"removed {r['removed']}",
                    refresh=False)


def cmd_recent(args):
    params = _drop_none({"days": args.days, "limit": args.limit})
    return _request(args, "ctxls/recentActivity", params, _human_recent, refresh=False)


def cmd_status(args):
    return _request(args, "ctxls/status", {}, _human_status, refresh=False)


def cmd_assemble(args):
    params = _drop_none({"query": args.query, "budgetTokens": args.budget, "kind": args.kind,
                         "mode": args.mode, "minScore": args.min_score, "scope": args.scope})
    return _request(args, "ctxls/assemble", params, _human_assemble)


def cmd_index(args):
    """Index through the daemon when one runs (it owns the store), else here."""
    from ctxls.daemon.client import EngineAccess

    root = _root(args.root)
    started = time.perf_counter()
    access = EngineAccess(root, use_daemon=not args.no_daemon, refresh=False)
    try:
        stats = access.request("ctxls/index", _drop_none({"paths": args.paths or None,
                                                          "force": args.force or None}))
        embedded = 0
        if args.embed and access.via == "local":
            from ctxls.daemon.server import server

            embedded = server.workspaces.engines[root].embed_pending()
    finally:
        access.close()
    elapsed = time.perf_counter() - started
    if args.json:
        _print_json(stats | {"embedded": embedded, "seconds": round(elapsed, 3), "via": access.via})
    else:
        print(f"indexed {root} in {elapsed:.2f}s: {stats['files']} files "
              f"({stats['added']} added, {stats['updated']} updated, {stats['removed']} removed, "
              f"{stats['unchanged']} unchanged, {stats['skipped']} skipped)"
              + (f", {embedded} chunks embedded" if args.embed else "")
              + (" [via the running daemon]" if access.via == "daemon" else ""))
    return 0


def cmd_mcp(args):
    from ctxls.daemon.mcp_bridge import run_mcp

    return run_mcp(_root(args.root), use_daemon=not args.no_daemon)


def cmd_serve(args):
    from ctxls.daemon import server as server_module
    from ctxls.daemon.server import server

    if args.node_ipc:
        print("ctxls: --node-ipc is not supported (it needs a Node.js server); start "
              "`ctxls serve` over stdio (the default, or --stdio)", file=sys.stderr)
        return 2
    if args.client_process_id is not None:
        server.client_watch.watch(args.client_process_id)
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
        elif args.socket is not None:
            if not args.root:
                raise SystemExit("ctxls: serve --socket needs --root (the folder to serve)")
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


def build_parser() -> argparse.ArgumentParser:
    parser = argparse.ArgumentParser(prog="ctxls", description="code-context language server")
    parser.add_argument("--version", action="version", version=f"ctxls {__version__}")
    parser.add_argument("--log-level", default=os.environ.get("CTXLS_LOG", "WARNING"))
    sub = parser.add_subparsers(dest="command", required=True)

    def verb(name: str, help_text: str, func, root_positional: bool = False) -> argparse.ArgumentParser:
        p = sub.add_parser(name, help=help_text)
        if root_positional:
            p.add_argument("root", nargs="?", default=".")
        else:
            p.add_argument("--root", default=".", help="the repository (default: .)")
        p.add_argument("--json", action="store_true", help="print the protocol's JSON result")
        p.add_argument("--no-daemon", action="store_true",
                       help="open the store in this process even if a daemon runs")
        p.set_defaults(func=func)
        return p

    serve = sub.add_parser("serve", help="run the language server (stdio by default)")
    where = serve.add_mutually_exclusive_group()
    # The transport flags LSP clients append (vscode-languageclient: --stdio
    # and --clientProcessId=PID); stdio is the default anyway.
    where.add_argument("--stdio", action="store_true", help="serve LSP on stdin/stdout (the default)")
    where.add_argument("--node-ipc", action="store_true", help=argparse.SUPPRESS)
    where.add_argument("--tcp", type=int, metavar="PORT", help="one LSP client on 127.0.0.1:PORT")
    where.add_argument("--socket", nargs="?", const="", metavar="PATH",
                       help="headless: serve the shared socket only (default ROOT/.ctxls/daemon.sock)")
    serve.add_argument("--root", help="index this folder before a client connects")
    serve.add_argument("--example", help="with --root: print this recall once indexed")
    serve.add_argument("--no-socket", action="store_true",
                       help="stdio only: do not open the shared daemon socket")
    serve.add_argument("--clientProcessId", dest="client_process_id", type=int, metavar="PID",
                       help="exit when this process (the editor) exits")
    serve.set_defaults(func=cmd_serve)

    index = verb("index", "index (incrementally) a folder", cmd_index, root_positional=True)
    index.add_argument("paths", nargs="*", help="only these pathspecs")
    index.add_argument("--force", action="store_true", help="re-chunk every file")
    index.add_argument("--embed", action="store_true",
                       help="without a daemon: also embed every chunk lacking a vector")

    recall = verb("recall", "search the index", cmd_recall)
    recall.add_argument("query")
    recall.add_argument("--kind", choices=RECALL_KINDS)
    recall.add_argument("-n", type=int, default=10)
    recall.add_argument("--body", action="store_true", help="include chunk text")
    recall.add_argument("--mode", choices=RECALL_MODES)
    recall.add_argument("--scope")
    recall.add_argument("--no-refresh", action="store_true",
                        help="without a daemon: skip the incremental pass first")

    locate = verb("locate", "the files to change for an issue text or stack trace", cmd_locate)
    locate.add_argument("text", nargs="?",
                        help="the issue text; '-' or nothing reads it from stdin")
    locate.add_argument("--file", help="read the issue text from this file")
    locate.add_argument("-n", type=int, default=10)
    locate.add_argument("--include-tests", action="store_true",
                        help="do not demote test and doc files")
    locate.add_argument("--no-refresh", action="store_true",
                        help="without a daemon: skip the incremental pass first")

    get = verb("get", "print a file, a line range or a memory", cmd_get)
    get.add_argument("id")
    get.add_argument("--start", type=int, help="first line (0-based)")
    get.add_argument("--end", type=int, help="last line (0-based, inclusive)")
    get.add_argument("--scope")

    impact = verb("impact", "callers, callees and change risk of a symbol", cmd_impact)
    impact.add_argument("symbol")

    remember = verb("remember", "write a fact, episode or doc", cmd_remember)
    remember.add_argument("id")
    remember.add_argument("text")
    remember.add_argument("--kind", choices=("fact", "episode", "doc"))
    remember.add_argument("--by", choices=("human", "agent"), default="human")
    remember.add_argument("--scope")
    remember.add_argument("--meta", help="a JSON object stored with it")

    forget = verb("forget", "remove written memory", cmd_forget)
    forget.add_argument("id", nargs="?")
    forget.add_argument("--prefix", help="every id starting with this")
    forget.add_argument("--kind", choices=("fact", "episode", "doc"))
    forget.add_argument("--by", choices=("human", "agent"))
    forget.add_argument("--scope")

    recent = verb("recent", "what was edited lately", cmd_recent)
    recent.add_argument("--days", type=float)
    recent.add_argument("--limit", type=int)

    verb("status", "what the index holds", cmd_status, root_positional=True)

    assemble = verb("assemble", "token-budgeted context for a query", cmd_assemble)
    assemble.add_argument("query")
    assemble.add_argument("--budget", type=int, default=2000, help="tokens (default 2000)")
    assemble.add_argument("--kind", choices=RECALL_KINDS)
    assemble.add_argument("--mode", choices=RECALL_MODES)
    assemble.add_argument("--min-score", type=float,
                          help="abstain when the top hit scores lower (see docs/protocol.md)")
    assemble.add_argument("--scope")

    mcp = sub.add_parser("mcp", help="serve the Model Context Protocol on stdio (for agents)")
    mcp.add_argument("--root", default=".")
    mcp.add_argument("--no-daemon", action="store_true")
    mcp.set_defaults(func=cmd_mcp)
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
    except (ConnectionError, json.JSONDecodeError) as exc:
        print(f"ctxls: lost the daemon: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
