"""The ``ctxls`` command: the daemon and headless verbs for people and scripts.

Every verb except ``serve`` and ``mcp`` sends one protocol request: to the
running daemon through its socket when there is one (so it sees unsaved
buffers), else in this process over the store on disk. ``--json`` prints the
protocol's result as is.

The repository is found like git and ripgrep find theirs: the nearest folder
at or above the current one holding ``.ctxls/`` or ``.git`` (``--root``
overrides). Only ``index`` (and ``serve``/``mcp``) create an index; the other
verbs say how to create one when there is none.

Line numbers people read or type (output, ``get --start-line/--end-line``) are 1-based;
the protocol's JSON (``--json``) keeps its 0-based fields.

The parser and the entry point live here; the verbs in ``cli_verbs`` (one
protocol request each) and ``cli_host`` (index, serve, mcp, memory); what
they print in ``formatting`` (shared with the MCP bridge).

Exit codes: 0 success; 1 nothing found (no hit, unknown id or symbol,
abstained) or the request failed (message on stderr, a file the system refused
or a failed write too); 2 bad usage; 130 interrupted (Ctrl-C); 141 stdout's
reader went away.
"""

from __future__ import annotations

import argparse
import os
import sys

from ctxls import __version__
from ctxls.daemon.cli_host import cmd_index, cmd_mcp, cmd_memory, cmd_serve
from ctxls.daemon.client import DaemonNotAnswering
# OPTION_OF_FIELD(_IN_VERB) live with the verbs that say them; tests read them here too.
from ctxls.daemon.cli_verbs import (EXIT_USAGE, LOG_LEVELS, OPTION_OF_FIELD, OPTION_OF_FIELD_IN_VERB,
                                    CliError, OutputClosed, OutputFailed,
                                    cmd_assemble, cmd_forget, cmd_get, cmd_impact, cmd_locate,
                                    cmd_outline, cmd_recall, cmd_recent, cmd_related, cmd_remember,
                                    cmd_status, cmd_symbols, cmd_trust_memory, options_of_fields,
                                    text_streams_never_fail, write_out)
from ctxls.daemon.formatting import in_caller_names
from ctxls.index.errors import EngineError, InvalidParams
from ctxls.index.vocabulary import RECALL_KINDS, RECALL_MODES


# Every verb build_parser knows (tests/test_cli.py checks the two agree).
COMMANDS = {"serve", "index", "recall", "locate", "get", "impact", "symbols", "outline", "related",
            "remember", "forget", "recent", "status", "assemble", "trust-memory", "memory", "mcp"}

def _port(value: str) -> int:
    try:
        port = int(value)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{value!r} is not a port number") from None
    if not 1 <= port <= 65535:
        raise argparse.ArgumentTypeError(f"{port} is not a TCP port (1-65535)")
    return port


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``command`` only that verb's: argparse spends
    about a millisecond on each verb (gettext looks for a catalogue three
    times), which a call through the daemon pays for every verb it does not run."""
    parser = argparse.ArgumentParser(
        prog="ctxls", description="code-context language server and its command line",
        epilog="The repository is the nearest folder at or above the current one holding "
               ".ctxls/ or .git, unless --root says otherwise. Lines you read or type are "
               "1-based; --json prints the protocol's 0-based fields.")
    parser.add_argument("--version", action="version", version=f"ctxls {__version__}")
    parser.add_argument("--log-level", default=os.environ.get("CTXLS_LOG", "WARNING"),
                        type=str.upper, choices=LOG_LEVELS,
                        help="logging level on stderr (default WARNING, or $CTXLS_LOG)")
    sub = parser.add_subparsers(dest="command", required=True, metavar="COMMAND",
                                help="`ctxls COMMAND -h` shows its options")

    def wanted(name: str) -> bool:
        return command is None or name == command

    def verb(name: str, help_text: str, func, root_positional: str | None = None,
             colour: bool = True) -> argparse.ArgumentParser:
        """``root_positional``: the help of a first argument naming the root."""
        p = sub.add_parser(name, help=help_text, description=help_text)
        if root_positional:
            p.add_argument("root_positional", nargs="?", metavar="ROOT", help=root_positional)
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

    if wanted("serve"):
        serve = sub.add_parser("serve", help="run the language server (stdio by default)",
                               description="run the language server (stdio by default)")
        where = serve.add_mutually_exclusive_group()
        # The transport flags LSP clients append (vscode-languageclient: --stdio
        # and --clientProcessId=PID); stdio is the default anyway.
        where.add_argument("--stdio", action="store_true", help="serve LSP on stdin/stdout (the default)")
        where.add_argument("--node-ipc", action="store_true", help=argparse.SUPPRESS)
        where.add_argument("--tcp", type=_port, metavar="PORT", help="one LSP client on 127.0.0.1:PORT, of this user only "
                           "(told by Linux's /proc/net/tcp; refused where it cannot be told)")
        where.add_argument("--socket", nargs="?", const="", metavar="PATH",
                           help="headless: serve the shared socket only (default ROOT/.ctxls/daemon.sock)")
        serve.add_argument("--root", help="index this folder before a client connects")
        serve.add_argument("--example", help="with --root: print this recall once indexed")
        serve.add_argument("--no-socket", action="store_true",
                           help="stdio only: do not open the shared daemon socket")
        serve.add_argument("--clientProcessId", dest="client_process_id", type=int, metavar="PID",
                           help="exit when this process (the editor) exits")
        serve.add_argument("--log-file", metavar="PATH",
                           help="log to this file (and send stderr there), set aside as PATH.1 "
                                "past 4 MiB")
        serve.set_defaults(func=cmd_serve)

    if wanted("index"):
        index = verb("index", "index (incrementally) a repository, or some files of it", cmd_index,
                     root_positional="the repository (same as --root), when it is a folder holding "
                                     ".git or .ctxls/ or one in no repository; any other first "
                                     "argument is a PATH",
                     colour=False)
        index.add_argument("paths", nargs="*", metavar="PATH",
                           help="only these files, folders or pathspecs (as found from the current "
                                "folder; else relative to the root, like a pattern 'pkg/*.py')")
        index.add_argument("--force", action="store_true", help="re-chunk every file")
        index.add_argument("--embed", action="store_true",
                           help="also embed every chunk lacking a vector (with a daemon: wait for "
                                "its embedding to finish)")

    if wanted("recall"):
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

    if wanted("locate"):
        locate = verb("locate", "the files to change for an issue text or stack trace", cmd_locate)
        locate.add_argument("text", nargs="?",
                            help="the issue text; '-' or nothing reads it from stdin")
        locate.add_argument("--file", help="read the issue text from this file")
        locate.add_argument("-n", type=int, default=10, help="at most this many files (default 10)")
        locate.add_argument("--include-tests", action="store_true",
                            help="do not demote test and doc files")
        locate.add_argument("--no-refresh", action="store_true",
                            help="without a daemon: skip the incremental pass first")

    if wanted("get"):
        get = verb("get", "print a file, a line range or a memory", cmd_get, colour=False)
        get.add_argument("id", help="a file path (from the repository or the current folder) or a "
                                    "memory id; PATH:16-18 (as answers print it) gives those lines")
        get.add_argument("--start-line", type=int, help="first line (1-based)")
        get.add_argument("--end-line", type=int, help="last line (1-based, inclusive)")
        get.add_argument("--scope", help="the memory tenant the id belongs to")

    if wanted("impact"):
        impact = verb("impact", "callers, callees and change risk of a symbol", cmd_impact)
        impact.add_argument("symbol", help="a name or qualified name, like Session.request")
        impact.add_argument("-n", type=int, default=20,
                            help="show at most this many callers and callees (default 20)")
        impact.add_argument("--vimgrep", action="store_true",
                            help="print path:line:col:text per caller (for quickfix lists)")

    if wanted("symbols"):
        symbols = verb("symbols", "definitions by name (exact, prefix, substring or fuzzy)",
                       cmd_symbols)
        symbols.add_argument("name", help="a name or a qualified tail, like request or Session.request")
        symbols.add_argument("--match", choices=("exact", "prefix", "substring", "fuzzy"),
                             help="the loosest match allowed (default fuzzy: the letters in order)")
        symbols.add_argument("--kind", action="append",
                             help="only this kind (function, method, class, …); repeat for several")
        symbols.add_argument("-n", type=int, default=50, help="at most this many (default 50)")

    if wanted("outline"):
        outline = verb("outline", "a file's definitions, nested, with their lines", cmd_outline)
        outline.add_argument("path", help="a file (from the repository or the current folder)")

    if wanted("related"):
        related = verb("related", "code like the code at a location (by meaning, else by its "
                                  "identifiers)", cmd_related)
        related.add_argument("location", metavar="PATH:LINE", help="a file and a 1-based line")
        related.add_argument("-n", type=int, default=10, help="at most this many (default 10)")

    if wanted("remember"):
        remember = verb("remember", "write a fact, episode or doc", cmd_remember, colour=False)
        remember.add_argument("id", help="its id; the same id replaces the earlier text")
        remember.add_argument("text", help="what to remember")
        remember.add_argument("--kind", choices=("fact", "episode", "doc"), help="default fact")
        remember.add_argument("--by", choices=("human", "agent"), default="human",
                              help="who wrote it (default human)")
        remember.add_argument("--scope", help="the memory tenant to write to")
        remember.add_argument("--meta", help="a JSON object stored with it, like '{\"pinned\": true}'")

    if wanted("forget"):
        forget = verb("forget", "remove written memory", cmd_forget, colour=False)
        forget.add_argument("id", nargs="?", help="the id to remove")
        forget.add_argument("--id-prefix", help="every id starting with this")
        forget.add_argument("--kind", choices=("fact", "episode", "doc"), help="only this kind")
        forget.add_argument("--by", choices=("human", "agent"), help="only what this author wrote")
        forget.add_argument("--scope", help="only this memory tenant")

    if wanted("recent"):
        recent = verb("recent", "what was edited lately", cmd_recent)
        recent.add_argument("--days", type=float, help="how far back (default 7)")
        recent.add_argument("--limit", type=int, help="at most this many rows (default 20)")

    if wanted("status"):
        verb("status", "what the index holds and whether it is ready", cmd_status,
             root_positional="the repository (same as --root)")

    if wanted("assemble"):
        assemble = verb("assemble", "token-budgeted context for a query", cmd_assemble, colour=False)
        assemble.add_argument("query", help="the question to gather context for")
        assemble.add_argument("--budget-tokens", type=int, default=2000,
                              help="at most this many tokens of context (default 2000)")
        assemble.add_argument("--kind", choices=RECALL_KINDS, help="only this kind of hit")
        assemble.add_argument("--mode", choices=RECALL_MODES,
                              help="ranking: hybrid (default), lexical or semantic")
        assemble.add_argument("--min-score", type=float,
                              help="abstain when the top hit scores lower (see docs/protocol.md)")
        assemble.add_argument("--scope", help="the memory tenant to search")

    if wanted("trust-memory"):
        verb("trust-memory", "import the written memory of stores quarantined as not yours "
                             "(one that came with the checkout, or was copied from elsewhere)",
             cmd_trust_memory, colour=False)

    if wanted("memory"):
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

    if wanted("mcp"):
        mcp = sub.add_parser("mcp", help="serve the Model Context Protocol on stdio (for agents)",
                             description="serve the Model Context Protocol on stdio (for agents)")
        mcp.add_argument("--root", help="the repository (default: the nearest folder at or above the "
                                        "current one holding .ctxls/ or .git)")
        mcp.add_argument("--no-daemon", action="store_true",
                         help="never use a running daemon: host the engine in this process")
        mcp.set_defaults(func=cmd_mcp)

    return parser


def command_in(argv: list[str]) -> str | None:
    """The verb ``argv`` runs, when it is plain: the first word that is not an
    option (or --log-level's value); None before -h or --version, or for an
    unknown word, so that the whole parser answers."""
    words = iter(argv)
    for word in words:
        if word == "--log-level":
            next(words, None)
        elif word in COMMANDS:
            return word
        elif not word.startswith("--log-level="):
            return None
    return None


def main(argv: list[str] | None = None) -> int:
    argv = sys.argv[1:] if argv is None else argv
    text_streams_never_fail()
    parser = build_parser(command_in(argv))
    args = parser.parse_args(argv)
    if args.log_level not in LOG_LEVELS:  # $CTXLS_LOG's: argparse checks a default against no choices
        parser.error(f"$CTXLS_LOG: invalid choice: {args.log_level!r} "
                     f"(choose from {', '.join(map(repr, LOG_LEVELS))})")
    if getattr(args, "root_positional", None) is not None and args.command == "status":
        if args.root is not None:
            print("ctxls: give the root once: as --root or as the first argument", file=sys.stderr)
            return EXIT_USAGE
        args.root = args.root_positional
    try:
        code = args.func(args)
        if sys.stdout is not None:
            write_out("")  # what print() left buffered: a failure to write it is reported here
        return code
    except KeyboardInterrupt:
        # Ctrl-C: a quiet stop, with the status a shell gives a command SIGINT ended.
        return 130  # 128 + SIGINT
    except OutputClosed:
        # Like other Unix tools: a closed pipe ends the output quietly.
        drop_unwritten_output()
        return 141  # 128 + SIGPIPE
    except OutputFailed as exc:
        say_error(exc.message)
        drop_unwritten_output()
        return exc.code
    except CliError as exc:
        say_error(exc.message)
        return exc.code
    except EngineError as exc:
        # An import's errors name the fields of the records read, not options.
        say_error(exc.message if args.func is cmd_memory
                  else in_caller_names(exc.message, options_of_fields(args.command)))
        return EXIT_USAGE if exc.code == InvalidParams.code else 1
    except DaemonNotAnswering as exc:  # it says which process, and what to do
        say_error(str(exc))
        return 1
    except ConnectionError as exc:
        say_error(f"lost the daemon: {exc}")
        return 1
    except OSError as exc:  # a file or folder the system refused (a name too long, no permission)
        say_error(f"{exc.filename}: {exc.strerror}" if exc.filename is not None and exc.strerror
                  else str(exc))
        return 1


def drop_unwritten_output() -> None:
    """stdout to /dev/null: what it still buffers would fail again, as a
    traceback, when Python flushes it at exit."""
    if sys.stdout is not None:
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())


def say_error(message: str) -> None:
    """An error on stderr (write_out makes it terminal-safe on a terminal: it
    may name a repository's file)."""
    if sys.stderr is not None:
        try:
            write_out(f"ctxls: {message}\n", sys.stderr)
        except (OutputClosed, OutputFailed):
            pass  # stderr is gone too: the exit code is all that is left to say it


if __name__ == "__main__":
    sys.exit(main())
