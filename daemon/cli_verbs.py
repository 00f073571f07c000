"""The ``ctxls`` verbs that send one protocol request (recall, locate, get,
impact, remember, forget, recent, status, assemble, trust-memory), and what
every verb shares: finding the repository, writing output, the exit codes.

A verb goes to the running daemon through its socket when there is one (so it
sees unsaved buffers), else to an engine opened in this process over the store
on disk. Nothing heavy is imported at the top: a verb the daemon answers
loads the standard library, the socket client and the formatters only (an
agent calling ``ctxls recall`` in a loop pays this module's imports every time).

Line numbers people read or type (output, ``get --start-line/--end-line``) are 1-based;
the protocol's JSON (``--json``) keeps its 0-based fields.
"""

from __future__ import annotations

import argparse
import codecs
import io
import json
import os
import re
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Any

from ctxls.daemon.client import EngineAccess, daemon_starting, default_socket
from ctxls.daemon.formatting import (Style, assemble_text, format_hits_human, format_hits_vimgrep,
                                     human_locate, impact_lines, not_defined_text, one_line,
                                     outline_text, partial_note, past_end_text, similar_text,
                                     status_lines, symbols_text,
                                     terminal_safe, vimgrep_column, vimgrep_line, vimgrep_path,
                                     weak_note)
from ctxls.index.errors import redact_credentials
from ctxls.index.roots import STORE_DIR_NAME, find_root, store_dir, too_broad_root

EXIT_NOT_FOUND = 1
EXIT_USAGE = 2
LOG_LEVELS = ("DEBUG", "INFO", "WARNING", "ERROR", "CRITICAL")


class CliError(Exception):
    """A message for the user and the exit code that goes with it."""

    def __init__(self, message: str, code: int = 1):
        super().__init__(message)
        self.message = message
        self.code = code


class OutputClosed(Exception):
    """stdout's reader went away (``ctxls ... | head``)."""


class OutputFailed(CliError):
    """A stream could not be written (a full disk, ``> /dev/full``, an I/O error)."""


# The protocol's params as the verbs' options spell them, so that an error names
# what the user typed (`--budget-tokens`, not `budgetTokens`); a positional
# (query, text, symbol, id) has the protocol's name already. One name per
# parameter: an option is its field's words (MCP's parameter, in snake case).
OPTION_OF_FIELD = {"budgetTokens": "--budget-tokens", "minScore": "--min-score",
                   "startLine": "--start-line", "endLine": "--end-line", "idPrefix": "--id-prefix",
                   "includeTests": "--include-tests",
                   "n": "-n", "kind": "--kind", "mode": "--mode", "scope": "--scope",
                   "days": "--days", "meta": "--meta", "by": "--by",
                   "paths": "PATH"}

# Where a verb spells a field otherwise: symbols' `limit` is its -n (recent's
# is --limit), its `query` the NAME it takes; related's path and line are PATH:LINE.
OPTION_OF_FIELD_IN_VERB = {"recent": {"limit": "--limit"},
                           "symbols": {"limit": "-n", "query": "name"},
                           "related": {"path": "PATH:LINE", "line": "PATH:LINE"}}


def options_of_fields(command: str) -> dict[str, str]:
    """The protocol's fields as ``command`` spells them."""
    return OPTION_OF_FIELD | OPTION_OF_FIELD_IN_VERB.get(command, {})


# -- where the repository is ------------------------------------------------------

def has_index(root: Path) -> bool:
    """A store, a daemon's socket, or a daemon starting (it makes the store:
    told "no index yet, create one", the user started a second indexer)."""
    store = store_dir(root.resolve())
    return ((store / "index.db").exists() or (store / "daemon.sock").exists()
            or daemon_starting(default_socket(root)))


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

def write_out(text: str, stream=None, own_codes: str = "") -> None:
    """``text`` on ``stream`` (stdout by default), after ``own_codes``: ctxls's
    own terminal controls (the progress line's), written as they are."""
    stream = stream or sys.stdout
    if stream is None:  # started with stdout closed (`>&-`): like a closed pipe
        raise OutputClosed()
    if stream is sys.stderr and stream.isatty():  # never styled: made safe here
        text = terminal_safe(text)
    with writing(stream):
        stream.write(own_codes + text)
        stream.flush()


@contextmanager
def writing(stream):
    """Writes to ``stream`` whose failure is the output's, not the request's:
    OutputClosed for a reader gone, OutputFailed for any other refusal."""
    try:
        yield
    except BrokenPipeError as exc:
        raise OutputClosed() from exc
    except OSError as exc:
        what = "stderr" if stream is sys.stderr else "the output"
        raise OutputFailed(f"cannot write {what}: {exc.strerror or exc}") from exc


def print_json(value: Any) -> None:
    # JSON's \u escapes where stdout's encoding cannot carry a character.
    text = json.dumps(value, indent=2, ensure_ascii=not writes_utf8(sys.stdout))
    if sys.stdout is not None and sys.stdout.isatty():
        # JSON escapes the C0 controls itself; DEL, the C1 controls and the bidi
        # ones, only inside its strings, become \uXXXX escapes: the same value.
        text = terminal_safe(text)
    write_out(text + "\n")


def writes_utf8(stream) -> bool:
    encoding = getattr(stream, "encoding", None) or "utf-8"
    return codecs.lookup(encoding).name == "utf-8"


def text_streams_never_fail() -> None:
    """stdout and stderr in a locale that is not UTF-8 (ISO-8859-1, ASCII
    via PYTHONIOENCODING): a character they cannot encode (an emoji in a
    docstring) is written as ``\\xNN``/``\\uXXXX``, not a crash with a traceback."""
    for stream in (sys.stdout, sys.stderr):
        if isinstance(stream, io.TextIOWrapper) and not writes_utf8(stream):
            stream.reconfigure(errors="backslashreplace")


def _style(args: argparse.Namespace) -> Style:
    return Style.for_stream(getattr(args, "color", "auto"), sys.stdout)


# -- verbs ------------------------------------------------------------------------

def open_access(args: argparse.Namespace, root: Path, refresh: bool = False):
    """The engine of ``root``: its daemon's socket, else opened here (and then
    logging set up: a verb the daemon answers never logs, and importing
    logging would cost it 5-15 ms)."""
    access = EngineAccess(root, use_daemon=not getattr(args, "no_daemon", False), refresh=refresh)
    if access.via != "daemon":
        log_on_stderr(args)
    return access


def redact_log_record(record) -> bool:
    """The filter of every log handler ctxls installs: the record's message
    and traceback with credentials masked, so no handler writes a password
    (on stderr, an editor's output channel, daemon.log). It never drops a record."""
    import logging

    try:
        message = record.getMessage()
    except Exception:  # args that do not fit the message: the handler reports that itself
        return True
    masked = redact_credentials(message)
    if masked != message:
        record.msg, record.args = masked, None
    if record.exc_info and not record.exc_text:
        record.exc_text = logging.Formatter().formatException(record.exc_info)
    if record.exc_text:
        record.exc_text = redact_credentials(record.exc_text)
    return True


def log_on_stderr(args: argparse.Namespace) -> None:
    """The log on stderr; on a terminal, terminal-safe (a log line names files
    of the repository, `ctxls serve` in a terminal logs them all)."""
    import logging

    class TerminalSafe(logging.Formatter):
        def format(self, record: logging.LogRecord) -> str:
            return terminal_safe(super().format(record))

    handler = logging.StreamHandler(sys.stderr)
    fmt = "%(asctime)s %(levelname)s %(name)s: %(message)s"
    handler.setFormatter(TerminalSafe(fmt) if sys.stderr is not None and sys.stderr.isatty()
                         else logging.Formatter(fmt))
    handler.addFilter(redact_log_record)
    logging.basicConfig(level=getattr(args, "log_level", "WARNING"), handlers=[handler])


def log_to_file(args: argparse.Namespace) -> None:
    """The log in ``args.log_file`` (a proxy's daemon: its stderr is that file
    too), bounded as it is written; a file that cannot be opened (a link
    there) leaves the log on stderr, saying so."""
    import logging

    from ctxls.daemon.proxy import DaemonLogFile

    try:
        handler = DaemonLogFile(Path(args.log_file))
    except OSError as exc:
        logging.getLogger("ctxls").warning("logging on stderr: cannot write %s: %s",
                                           args.log_file, exc.strerror or exc)
        return
    handler.setFormatter(logging.Formatter("%(asctime)s %(levelname)s %(name)s: %(message)s"))
    handler.addFilter(redact_log_record)
    root = logging.getLogger()
    for old in root.handlers[:]:
        root.removeHandler(old)
    root.addHandler(handler)


def call(args: argparse.Namespace, method: str, params: dict, refresh: bool = True
         ) -> tuple[Any, str]:
    """(the protocol's result, "daemon" | "local"); for a person's terminal,
    with its strings terminal-safe (a pipe, a file or ``--json`` gets them
    exactly: print_json keeps JSON terminal-safe itself)."""
    access = open_access(args, resolve_root(args.root, creates=False),
                         refresh and not getattr(args, "no_refresh", False))
    try:
        result = access.request(method, params)
    finally:
        access.close()
    if sys.stdout is not None and sys.stdout.isatty() and not getattr(args, "json", False):
        result = terminal_safe(result)
    return result, access.via


def drop_none(params: dict) -> dict:
    return {k: v for k, v in params.items() if v is not None}


def cmd_recall(args):
    wants_text = not args.json or args.body  # a fact's text is what a person reads
    params = drop_none({"query": args.query, "kind": args.kind, "n": args.n,
                         "body": wants_text or args.vimgrep or None,
                         "mode": args.mode, "scope": args.scope})
    result, _ = call(args, "ctxls/recall", params)
    groups = result.get("groups") or {args.kind: result.get("hits", [])}
    found = any(groups.values())
    if args.json:
        print_json(result)
    elif args.vimgrep:
        text = format_hits_vimgrep(groups)
        write_out(text + "\n" if text else "")
    else:
        text = format_hits_human(groups, _style(args), bodies=args.body) if found else "no hits"
        write_out(text + weak_note(result) + partial_note(result) + "\n")
    return 0 if found and not result.get("weak") else EXIT_NOT_FOUND


def issue_text(data: bytes | str) -> str:
    """The issue text read as UTF-8, each byte that is not UTF-8 as U+FFFD (a
    Windows user's cp1252 log: `café`), whether it came from a file, stdin or
    the command line. A string is what Python decoded (an argument: its
    undecodable bytes as surrogate escapes, which the protocol refuses): its
    bytes are read again."""
    if isinstance(data, str):
        data = os.fsencode(data)
    return data.decode("utf-8", errors="replace")


def cmd_locate(args):
    if args.file is not None:
        if args.text is not None:
            raise CliError("locate takes the text or --file, not both", EXIT_USAGE)
        try:
            text = issue_text(Path(args.file).read_bytes())
        except OSError as exc:
            raise CliError(f"cannot read {args.file}: {exc.strerror}") from exc
    elif args.text is None or args.text == "-":
        if sys.stdin is None:
            raise CliError("locate needs the issue text: as an argument, with --file, or on "
                           "stdin (which is closed)", EXIT_USAGE)
        # Its bytes: a text stream decodes strictly, or with surrogate escapes
        # in UTF-8 mode (a text stream put in its place has no bytes).
        text = issue_text(getattr(sys.stdin, "buffer", sys.stdin).read())
    else:
        text = issue_text(args.text)
    params = drop_none({"text": text, "n": args.n, "includeTests": args.include_tests or None})
    result, _ = call(args, "ctxls/locate", params)
    if args.json:
        print_json(result)
    else:
        write_out(human_locate(result) + "\n")
    return 0 if result.get("files") else EXIT_NOT_FOUND


def cmd_get(args):
    for name in ("start_line", "end_line"):
        value = getattr(args, name)
        if value is not None and value < 1:
            raise CliError(f"--{name.replace('_', '-')} is a 1-based line number: 1 or more",
                           EXIT_USAGE)
    root = resolve_root(args.root, creates=False)
    item_id = _typed_path(args.id)
    params = drop_none({"id": item_id,
                         "startLine": args.start_line - 1 if args.start_line else None,
                         "endLine": args.end_line - 1 if args.end_line else None,
                         "scope": args.scope})
    args.root = str(root)
    item, _ = call(args, "ctxls/get", params)
    past_end = past_end_text(item)
    if past_end:
        if args.json:
            print_json(item)
        write_out(f"ctxls: {past_end}\n", sys.stderr)
        return EXIT_NOT_FOUND
    if args.json:
        print_json(item)
    elif item is not None:
        text = item.get("text") or ""
        write_out(text if text.endswith("\n") or not text else text + "\n")
    if item is None:
        if not args.json:
            write_out(f"ctxls: not found: {args.id} (neither an indexed file nor a written memory)\n",
                   sys.stderr)
        return EXIT_NOT_FOUND
    return 0


def cmd_impact(args):
    if args.n < 1:
        raise CliError("-n must be 1 or more", EXIT_USAGE)
    impact, _ = call(args, "ctxls/impact", {"symbol": args.symbol})
    if args.json:
        print_json(impact)
    elif impact is not None and args.vimgrep:
        views: dict = {}
        at = [(c, vimgrep_path(c), c["range"]["start"]) for c in impact.get("callers", [])[:args.n]]
        text = "\n".join(f"{path}:{vimgrep_line(path, start['line'], views)}:"
                         f"{vimgrep_column(path, start['line'], start['character'], views)}:"
                         f"{args.symbol} called in {c.get('symbol') or c['path']}"
                         + ("" if c.get("confirmed") else " (unconfirmed)")
                         for c, path, start in at)
        write_out(text + "\n" if text else "")
    elif impact is not None:
        write_out("\n".join(impact_lines(impact, args.n, _style(args))) + "\n")
    if impact is None:
        if not args.json:
            status, _ = call(args, "ctxls/status", {})
            write_out(f"ctxls: {not_defined_text(args.symbol, status)}\n", sys.stderr)
        return EXIT_NOT_FOUND
    return 0


def _show(args, result: dict, text, found: bool) -> int:
    """``result`` as JSON (``--json``) or as ``text(result, style)``; exit 1
    when nothing was ``found``."""
    if args.json:
        print_json(result)
    else:
        write_out(text(result, _style(args)) + "\n")
    return 0 if found else EXIT_NOT_FOUND


def cmd_symbols(args):
    params = drop_none({"query": args.name, "match": args.match, "kind": args.kind,
                        "limit": args.n})
    result, _ = call(args, "ctxls/symbols", params)
    return _show(args, result, symbols_text, bool(result["symbols"]))


def _typed_path(path: str) -> str:
    """A path typed from a subfolder, made absolute, with the location it
    may end with (``:16-18``, ``#L16``, as the engine reads them) kept; else
    as typed (repo-relative, or a memory id)."""
    # The whole word first: a file may be named like a location.
    for end in (len(path), *(m.start() for m in reversed(list(_LOCATION_START.finditer(path))))):
        local = Path(path[:end])
        try:
            typed_here = end > 0 and not local.is_absolute() and (Path.cwd() / local).is_file()
        except OSError:  # a name the file system cannot hold (a long memory id): no file
            typed_here = False
        if typed_here:
            return str((Path.cwd() / local).resolve()) + path[end:]
    return path


# Where a written location may start after a path: `:16…` or `#L16…`.
_LOCATION_START = re.compile(r":(?=\d)|#(?=L\d)")


def cmd_outline(args):
    result, _ = call(args, "ctxls/outline", {"path": _typed_path(args.path)})
    return _show(args, result, outline_text, bool(result["symbols"]))


def cmd_related(args):
    path, colon, line = args.location.rpartition(":")
    if not colon or not path or not line.isdigit() or int(line) < 1:
        raise CliError(f"give the location as PATH:LINE with a 1-based line, like "
                       f"src/app.py:42 (got {args.location!r})", EXIT_USAGE)
    params = {"path": _typed_path(path), "line": int(line) - 1, "n": args.n}
    result, _ = call(args, "ctxls/similar", params)
    return _show(args, result, similar_text, bool(result["hits"]))


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
    params = drop_none({"id": args.id, "text": args.text, "kind": args.kind, "by": args.by,
                         "scope": args.scope, "meta": meta})
    result, _ = call(args, "ctxls/remember", params, refresh=False)
    if args.json:
        print_json(result)
    else:
        write_out(f"remembered {args.kind or 'fact'} {args.id}: {one_line(args.text)}\n")
    return 0


def cmd_forget(args):
    if args.id is None and args.id_prefix is None and args.scope is None \
            and not (args.kind and args.by):
        raise CliError("say what to forget: an ID, --id-prefix, --scope, or --kind with --by",
                       EXIT_USAGE)
    params = drop_none({"id": args.id, "idPrefix": args.id_prefix, "kind": args.kind,
                         "by": args.by, "scope": args.scope})
    result, _ = call(args, "ctxls/forget", params, refresh=False)
    if args.json:
        print_json(result)
    else:
        write_out(f"removed {result['removed']}\n")
    return 0 if result["removed"] else EXIT_NOT_FOUND


def cmd_recent(args):
    params = drop_none({"days": args.days, "limit": args.limit})
    result, _ = call(args, "ctxls/recentActivity", params, refresh=False)
    if args.json:
        print_json(result)
        return 0
    items = result.get("items", [])
    if not items:
        write_out("no recent edits\n")
        return 0
    now = time.time() * 1000
    style = _style(args)
    write_out("\n".join(f"  {int((now - i['lastEditedAt']) / 60000):5d} min ago  {i['edits']:3d} edits  "
                     f"{i.get('origin') or '':6s}  {style.path(i['id'])}  {i.get('symbol') or ''}"
                     .rstrip() for i in items) + "\n")
    return 0


def cmd_status(args):
    status, via = call(args, "ctxls/status", {}, refresh=False)
    if args.json:
        print_json(status | {"via": via})
    else:
        write_out(status_lines(status, via, _style(args)) + "\n")
    return 0


def cmd_assemble(args):
    params = drop_none({"query": args.query, "budgetTokens": args.budget_tokens, "kind": args.kind,
                         "mode": args.mode, "minScore": args.min_score, "scope": args.scope})
    result, _ = call(args, "ctxls/assemble", params)
    if args.json:
        print_json(result)
    else:
        # The engine's note names the protocol's fields (minScore): said as typed here.
        write_out(assemble_text(result, options_of_fields("assemble")) + "\n")
    # No chunk fitting the budget is nothing found, as an abstention is.
    return EXIT_NOT_FOUND if result.get("abstained") or not result.get("context") else 0


def cmd_trust_memory(args):
    result, _ = call(args, "ctxls/trustMemory", {}, refresh=False)
    if args.json:
        print_json(result)
    elif not result["stores"]:
        write_out("no quarantined store\n")
    else:
        counts = ", ".join(f"{n} {table}" for table, n in result["imported"].items() if n)
        write_out(f"imported from {len(result['stores'])} quarantined store(s): {counts or 'nothing'}\n")
    return 0
