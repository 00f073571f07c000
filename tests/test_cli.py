"""The `ctxls` command: headless verbs and the Unix-socket daemon."""

from __future__ import annotations

import asyncio
import json
import os
import re
import subprocess
import sys
import threading
import time
from pathlib import Path

CTXLS = [sys.executable, "-m", "ctxls.daemon.cli"]


def run(*args: str, cwd: Path | None = None, env: dict | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXLS, *args], capture_output=True, text=True, cwd=cwd, timeout=300,
                          env=env)


def test_index_recall_status_json_and_human(repo: Path):
    indexed = run("index", str(repo), "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["added"] == 5

    recalled = run("recall", "send prepared", "--root", str(repo), "--kind", "code", "--json")
    hits = json.loads(recalled.stdout)["hits"]
    assert hits[0]["chunk"] == {"symbol": "send_prepared", "startLine": 15, "endLine": 17}

    human = run("recall", "send prepared", "--root", str(repo))
    assert "pkg/session.py:16-18  send_prepared" in human.stdout

    status = json.loads(run("status", str(repo), "--json").stdout)
    assert status["files"] == 5 and status["root"] == str(repo.resolve())


def test_bad_usage_and_bad_root_exit_nonzero(tmp_path: Path):
    assert run("recall").returncode == 2
    missing = run("index", str(tmp_path / "nope"))
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    assert not (tmp_path / "nope").exists()


async def _rpc(reader, writer, msg_id: int, method: str, params) -> dict:
    body = json.dumps({"jsonrpc": "2.0", "id": msg_id, "method": method, "params": params}).encode()
    writer.write(b"Content-Length: %d\r\n\r\n" % len(body) + body)
    await writer.drain()
    while True:
        header = await reader.readuntil(b"\r\n\r\n")
        length = int(header.split(b"Content-Length:")[1].split(b"\r\n")[0])
        message = json.loads(await reader.readexactly(length))
        if message.get("id") == msg_id and "method" not in message:
            return message


def test_serve_on_a_unix_socket_with_a_prewarmed_root(repo: Path, tmp_path: Path):
    sock = tmp_path / "d.sock"
    sock.write_text("stale file from a crashed daemon")
    proc = subprocess.Popen([*CTXLS, "serve", "--root", str(repo), "--socket", str(sock)],
                            stderr=subprocess.PIPE, text=True)
    # The daemon and this test both give up rather than hang CI.
    killer = threading.Timer(60, proc.kill)
    killer.start()
    try:
        lines = []
        while "until interrupted" not in "".join(lines):
            line = proc.stderr.readline()
            assert line, "daemon exited: " + "".join(lines)
            lines.append(line)
        assert "indexed 5 files" in "".join(lines)

        async def session():
            reader, writer = await asyncio.open_unix_connection(str(sock))
            await _rpc(reader, writer, 1, "initialize",
                       {"processId": None, "rootUri": repo.resolve().as_uri(), "capabilities": {}})
            writer.write(b'Content-Length: 52\r\n\r\n{"jsonrpc":"2.0","method":"initialized","params":{}}')
            recall = await _rpc(reader, writer, 2, "ctxls/recall",
                                {"query": "send_prepared", "kind": "code"})
            await _rpc(reader, writer, 3, "shutdown", None)
            writer.close()
            return recall

        recall = asyncio.run(session())
        # Indexed before the client came; only vectors may still be on their way.
        assert "indexing" not in recall["result"].get("partialReason", "")
        assert recall["result"]["hits"][0]["chunk"]["symbol"] == "send_prepared"
        # It says why: the definition the query names (recall_scorer's contributions).
        assert "definition" in [c["feature"] for c in recall["result"]["hits"][0]["why"]]
        # A second `make run` on the served root: who serves it, its example, exit 0.
        again = run("serve", "--root", str(repo), "--socket", str(sock), "--example", "send_prepared")
        assert again.returncode == 0, again.stderr
        assert f"already served by PID {proc.pid} on {sock}" in again.stderr
        assert "pkg/session.py:16-18  send_prepared" in again.stderr
        assert "indexed" not in again.stderr and proc.poll() is None
    finally:
        killer.cancel()
        proc.terminate()
        proc.wait(timeout=10)


def test_a_repository_too_deep_for_a_unix_socket_is_served_on_one_in_the_state_folder(tmp_path: Path):
    """`<root>/.ctxls/daemon.sock` longer than a Unix socket may be (108 bytes)
    made `serve --socket` exit "cannot listen … (another daemon serves it?)",
    and no verb could share a daemon. The socket goes to the user's state
    folder then, where every process finds it."""
    from conftest import SAMPLE_FILES, write_tree
    from test_one_daemon import headless_owner

    root = tmp_path.joinpath(*["a_folder_name_of_some_length"] * 4, "repo")
    root.mkdir(parents=True)
    write_tree(root, SAMPLE_FILES)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert len(os.fsencode(root / ".ctxls" / "daemon.sock")) > 107
    with headless_owner(root):
        sockets = list((Path(os.environ["CTXLS_STATE_DIR"]) / "sockets").glob("*/daemon.sock"))
        assert len(sockets) == 1 and len(os.fsencode(sockets[0])) <= 107
        status = json.loads(run("status", "--json", "--root", str(root)).stdout)
        assert status["via"] == "daemon" and status["files"] == 5
        recalled = json.loads(run("recall", "send prepared", "--root", str(root), "--kind", "code",
                                  "--json").stdout)
        assert recalled["hits"][0]["chunk"]["symbol"] == "send_prepared"


def test_make_run_installs_again_only_when_pyproject_changed(tmp_path: Path):
    """`make run` reinstalled the package on every start (32 s): the install
    is a stamp that only pyproject.toml makes stale (the package is editable)."""
    checkout = Path(__file__).resolve().parents[1]
    for name in ("Makefile", "pyproject.toml"):
        (tmp_path / name).write_bytes((checkout / name).read_bytes())
    (tmp_path / ".venv" / "bin").mkdir(parents=True)
    (tmp_path / ".venv" / "bin" / "python").touch()

    def planned() -> str:
        made = subprocess.run(["make", "-n", "run", "REPO=/nowhere"], cwd=tmp_path,
                              capture_output=True, text=True, timeout=60)
        assert made.returncode == 0, made.stderr
        return made.stdout

    assert "pip install" in planned()  # never installed
    stamp = tmp_path / ".venv" / ".installed"
    stamp.touch()
    later = (tmp_path / "pyproject.toml").stat().st_mtime + 10
    os.utime(stamp, (later, later))
    again = planned()
    assert "pip install" not in again and "ctxls serve --root" in again
    os.utime(tmp_path / "pyproject.toml", (later + 10, later + 10))
    assert "pip install" in planned()


# -- issue 14: where the index lives -------------------------------------------------

def test_verbs_find_the_repository_from_a_subfolder_and_git_ignores_the_store(repo: Path):
    indexed = run("index", "--json", cwd=repo / "pkg")
    assert indexed.returncode == 0, indexed.stderr
    assert (repo / ".ctxls" / "index.db").exists() and not (repo / "pkg" / ".ctxls").exists()
    assert (repo / ".ctxls" / ".gitignore").read_text().splitlines()[-1] == "*"
    porcelain = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"],
                               cwd=repo, capture_output=True, text=True, check=True).stdout
    assert ".ctxls" not in porcelain and "pkg/session.py" in porcelain

    status = json.loads(run("status", "--json", cwd=repo / "pkg").stdout)
    assert status["root"] == str(repo.resolve()) and status["via"] == "local"
    # A path typed from the subfolder is read from there.
    got = run("get", "session.py", "--start-line", "16", "--end-line", "16", cwd=repo / "pkg")
    assert got.returncode == 0, got.stderr
    assert got.stdout == "def send_prepared(method, url, timeout):\n"  # 1-based line 16


def test_read_verbs_never_create_an_index(tmp_path: Path):
    bare = tmp_path / "bare"
    (bare / "src").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(bare)], check=True)
    (bare / "src" / "a.py").write_text("def alpha():\n    return 1\n")
    for verb in (["recall", "alpha"], ["status"], ["get", "src/a.py"], ["forget", "x"],
                 ["assemble", "alpha"], ["impact", "alpha"], ["recent"]):
        out = run(*verb, cwd=bare / "src")
        assert out.returncode == 1, (verb, out.stderr)
        assert "has no index yet" in out.stderr and "ctxls index" in out.stderr, verb
    assert not (bare / ".ctxls").exists() and not (bare / "src" / ".ctxls").exists()
    # Forget with nothing to forget is a usage error, before anything is opened.
    assert run("forget", "--root", str(bare)).returncode == 2
    assert not (bare / ".ctxls").exists()


def test_index_a_file_and_the_positional_root_alias(repo: Path):
    one = run("index", "pkg/session.py", "--json", cwd=repo)
    assert one.returncode == 0, one.stderr
    assert json.loads(one.stdout)["added"] == 1
    assert json.loads(run("index", str(repo), "--json").stdout)["added"] == 4
    # With --root every word is a PATH: the root's own folder is all of it.
    both = run("index", str(repo), "--root", str(repo), "--json")
    assert both.returncode == 0 and json.loads(both.stdout)["unchanged"] == 5, both.stderr


# -- issue 14: status that tells the truth --------------------------------------------

def test_status_and_recall_say_what_is_missing_until_vectors_exist(repo: Path):
    assert run("index", "--root", str(repo)).returncode == 0
    status = json.loads(run("status", "--root", str(repo), "--json").stdout)
    # Chunks without vectors and no daemon to embed them: not ready, and not "indexing".
    assert status["indexing"] is False
    assert (status["state"], status["ready"]) == ("idle", False)
    assert status["pending"] >= status["chunks"] > 0
    human = run("status", "--root", str(repo)).stdout
    assert "state    idle" in human and "daemon   none" in human and "indexing yes" not in human

    recalled = json.loads(run("recall", "send prepared", "--root", str(repo), "--kind", "code",
                              "--mode", "semantic", "--json").stdout)
    assert recalled["partial"] is True and recalled["mode"] == "lexical"
    assert "no vectors yet" in recalled["partialReason"]
    assembled = json.loads(run("assemble", "send prepared", "--root", str(repo), "--json").stdout)
    assert assembled["partial"] is True and "no vectors yet" in assembled["partialReason"]

    embedded = run("index", "--root", str(repo), "--embed", "--json")
    assert embedded.returncode == 0, embedded.stderr
    assert json.loads(embedded.stdout)["embedded"] > 0
    status = json.loads(run("status", "--root", str(repo), "--json").stdout)
    assert (status["state"], status["ready"], status["pending"]) == ("ready", True, 0)
    recalled = json.loads(run("recall", "send prepared", "--root", str(repo), "--kind", "code",
                              "--mode", "semantic", "--json").stdout)
    assert (recalled["partial"], recalled["mode"]) == (False, "semantic")
    assert "partialReason" not in recalled


# -- issue 14: output, options and exit codes -------------------------------------------

def test_human_output_line_numbers_colour_vimgrep_and_bodies(repo: Path):
    assert run("index", "--root", str(repo)).returncode == 0
    root = ["--root", str(repo)]
    plain = run("recall", "send prepared", *root, "--kind", "code")
    assert "pkg/session.py:16-18  send_prepared" in plain.stdout and "\x1b[" not in plain.stdout
    coloured = run("recall", "send prepared", *root, "--kind", "code", "--color", "always")
    assert "\x1b[35mpkg/session.py\x1b[0m:\x1b[32m16-18\x1b[0m" in coloured.stdout
    vim = run("recall", "send prepared", "--kind", "code", "--vimgrep", cwd=repo)
    assert vim.stdout.splitlines()[0] == "pkg/session.py:16:1:def send_prepared(method, url, timeout):"
    # Paths as rg prints them: relative to the folder the command runs in.
    from_pkg = run("recall", "send prepared", "--kind", "code", "--vimgrep", cwd=repo / "pkg")
    assert from_pkg.stdout.splitlines()[0].startswith("session.py:16:1:def send_prepared(")
    body = run("recall", "send prepared", *root, "--kind", "code", "-n", "1", "--body")
    assert "    16  def send_prepared(method, url, timeout):" in body.stdout

    stored = run("remember", "retry-policy", "uploads retry three times with backoff", *root)
    assert stored.returncode == 0 and "retry-policy" in stored.stdout
    fact = run("recall", "retry backoff", *root, "--kind", "fact")
    assert "retry-policy  uploads retry three times with backoff" in fact.stdout

    impact = run("impact", "Session.request", *root)
    assert "1 confirmed caller," in impact.stdout and "callers" not in impact.stdout.split("\n")[0]
    vim_impact = run("impact", "Session.request", "--vimgrep", cwd=repo)
    assert vim_impact.stdout.startswith("pkg/retry.py:6:")
    vim_impact = run("impact", "Session.request", "--vimgrep", cwd=repo / "web")
    assert vim_impact.stdout.startswith("../pkg/retry.py:6:")
    assert len(run("impact", "send_prepared", *root, "-n", "1").stdout.splitlines()) >= 2


def test_impact_vimgrep_columns_are_byte_columns_as_rg_prints_them(tmp_path: Path):
    """`impact --vimgrep` printed the UTF-16 column + 1; a quickfix list's
    `%c` and `rg --vimgrep` count bytes, so after non-ASCII text on the line
    the jump landed short of the call."""
    from conftest import write_tree

    write_tree(tmp_path, {"a.py": 'def helper():\n    return 1\n\n\ns = "😀😀"; helper()\nt = "é"; helper()\n'})
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    assert run("index", str(tmp_path)).returncode == 0
    vim = run("impact", "a.helper", "--vimgrep", "--no-daemon", cwd=tmp_path)
    assert sorted(line.split(":", 3)[:3] for line in vim.stdout.splitlines()) == [
        ["a.py", "5", "17"], ["a.py", "6", "11"]]  # rg --vimgrep's columns


def test_exit_codes_and_messages_name_the_real_cause(repo: Path):
    assert run("index", "--root", str(repo)).returncode == 0
    root = ["--root", str(repo)]
    missing = run("get", "nosuch.py", *root)
    assert missing.returncode == 1 and "not found: nosuch.py" in missing.stderr
    assert run("impact", "no_such_symbol", *root).returncode == 1
    assert run("recall", "zzqqxxnothing", *root, "--kind", "code").returncode == 1
    assert run("get", "pkg/session.py", "--start-line", "0", *root).returncode == 2
    past = run("get", "pkg/session.py", "--start-line", "90", "--end-line", "95", *root)
    assert past.returncode == 1 and "pkg/session.py ends before line 90" in past.stderr
    # The last line is the last one an editor numbers: a final newline starts no line.
    last = len((repo / "pkg/session.py").read_text().splitlines())
    at_end = run("get", "pkg/session.py", "--start-line", str(last), *root)
    assert at_end.returncode == 0 and at_end.stdout.strip()
    after = run("get", "pkg/session.py", "--start-line", str(last + 1), *root)
    assert after.returncode == 1 and after.stdout == ""
    assert f"pkg/session.py ends before line {last + 1}" in after.stderr
    whole = json.loads(run("get", "pkg/session.py", "--json", *root).stdout)
    assert whole["meta"]["lines"] == last
    meta = run("remember", "k", "text", "--meta", "{bad", *root)
    assert meta.returncode == 2 and "--meta is not valid JSON" in meta.stderr
    assert "daemon" not in meta.stderr
    off_topic = run("assemble", "kubernetes helm chart", *root)
    assert off_topic.returncode == 1
    assert off_topic.stdout.startswith("(abstained: ")
    on_topic = run("assemble", "send prepared request", *root)
    assert on_topic.returncode == 0 and "[1] pkg/session.py:16-18 send_prepared" in on_topic.stdout
    # Errors name the option typed, never the protocol's field (budgetTokens, endLine).
    budget = run("assemble", "send", "--budget-tokens", "0", *root)
    assert budget.returncode == 2 and "invalid param '--budget-tokens'" in budget.stderr
    backwards = run("get", "pkg/session.py", "--start-line", "5", "--end-line", "2", *root)
    assert backwards.returncode == 2
    assert "invalid param '--end-line': must not be before --start-line" in backwards.stderr
    assert "Line" not in budget.stderr + backwards.stderr and "Tokens" not in budget.stderr
    port = run("serve", "--tcp", "99999")
    assert port.returncode == 2 and "Traceback" not in port.stderr and "99999" in port.stderr


def test_a_closed_pipe_ends_the_output_silently(repo: Path):
    assert run("index", "--root", str(repo)).returncode == 0
    proc = subprocess.Popen([*CTXLS, "recall", "send", "--root", str(repo), "--json", "-n", "50"],
                            stdout=subprocess.PIPE, stderr=subprocess.PIPE)
    proc.stdout.close()  # the reader is gone before the first byte is written
    _, stderr = proc.communicate(timeout=120)
    assert stderr == b"" and proc.returncode == 141


def test_every_option_has_help_text():
    from ctxls.daemon.cli import build_parser

    parser = build_parser()
    subparsers = next(a for a in parser._actions if a.dest == "command")
    missing = [f"{name} {action.dest}" for name, sub in subparsers.choices.items()
               for action in sub._actions if not action.help]
    missing += [a.dest for a in parser._actions if not a.help]
    assert missing == []


# The MCP tools that send a CLI verb's request (recent_memory and knowledge
# have no verb).
VERB_OF_TOOL = {"recall": "recall", "locate": "locate", "get": "get", "impact": "impact",
                "remember": "remember", "forget": "forget", "recent_activity": "recent",
                "assemble": "assemble", "status": "status", "find_symbol": "symbols",
                "outline": "outline", "related": "related"}


def test_a_parameter_has_one_name_in_the_cli_mcp_and_errors():
    """An agent that read `ctxls assemble -h` types MCP's parameter right,
    and the reverse (issue 39: `budget` against `budget_tokens`)."""
    from ctxls.daemon.cli import OPTION_OF_FIELD, build_parser
    from ctxls.daemon.mcp_bridge import TOOLS

    verbs = next(a for a in build_parser()._actions if a.dest == "command").choices
    assert {t.name for t in TOOLS} - set(VERB_OF_TOOL) == {"recent_memory", "knowledge"}
    for tool in TOOLS:
        if tool.name not in VERB_OF_TOOL:
            continue
        cli_names = {a.dest for a in verbs[VERB_OF_TOOL[tool.name]]._actions}
        # `format` is the CLI's --json; related's path and line are its PATH:LINE.
        other_shape = {"format"} | ({"path", "line"} if tool.name == "related" else set())
        assert set(tool.params) - other_shape - cli_names == set(), tool.name
    # Errors name the option typed: the protocol field's words.
    for field, option in OPTION_OF_FIELD.items():
        if option.startswith("--"):
            assert option[2:].replace("-", "_") == re.sub("([A-Z])", r"_\1", field).lower()


def test_a_verb_parses_the_same_with_only_its_own_options_built():
    """A call builds only its verb's options (argparse's cost for the others
    was paid on every call through the daemon); the parse must not change."""
    from ctxls.daemon.cli import COMMANDS, build_parser, command_in

    def verbs(parser):
        return next(a for a in parser._actions if a.dest == "command").choices

    full = build_parser()
    assert set(verbs(full)) == COMMANDS
    for name in COMMANDS:
        alone = verbs(build_parser(name))
        assert list(alone) == [name]
        assert [a.option_strings for a in alone[name]._actions] == \
            [a.option_strings for a in verbs(full)[name]._actions]
    argv = ["--log-level", "debug", "recall", "send prepared", "-n", "3", "--kind", "code"]
    assert command_in(argv) == "recall"
    assert vars(build_parser("recall").parse_args(argv)) == vars(full.parse_args(argv))
    assert command_in(["--help", "recall"]) is None and command_in(["recal"]) is None
    assert command_in(["--log-level=INFO", "status"]) == "status"


def test_progress_goes_to_a_terminal_only(repo: Path):
    import os
    import pty

    leader, follower = pty.openpty()
    proc = subprocess.Popen([*CTXLS, "index", "--root", str(repo), "--embed"],
                            stdout=subprocess.PIPE, stderr=follower)
    os.close(follower)
    shown = b""
    while True:
        try:
            data = os.read(leader, 4096)
        except OSError:  # the terminal closed with the process
            break
        if not data:
            break
        shown += data
    proc.wait(timeout=300)
    os.close(leader)
    assert proc.returncode == 0
    assert b"indexing: 5/5 files" in shown
    # One batch of 5 chunks: no second batch to measure a rate on (tests/test_embedding_eta.py).
    assert re.search(rb"embedding \d+/\d+ chunks, ([\d.]+/s, ETA \dm\d\ds|estimating)", shown)
    piped = run("index", "--root", str(repo), "--force", "--embed")
    assert piped.stderr == ""


def on_a_terminal(*args: str, command: list[str] = CTXLS) -> tuple[bytes, bytes]:
    """(stdout, stderr) of a verb (or ``command``) whose stdout and stderr
    are a pseudo-terminal each."""
    import pty

    out_master, out_slave = pty.openpty()
    err_master, err_slave = pty.openpty()
    proc = subprocess.Popen([*command, *args], stdout=out_slave, stderr=err_slave,
                            env={**os.environ, "NO_COLOR": "1"})
    os.close(out_slave)
    os.close(err_slave)

    def drain(fd: int) -> bytes:
        chunks = []
        while True:
            try:
                chunk = os.read(fd, 65536)
            except OSError:  # the slave side closed
                break
            if not chunk:
                break
            chunks.append(chunk)
        os.close(fd)
        return b"".join(chunks)

    errors: list[bytes] = []
    reader = threading.Thread(target=lambda: errors.append(drain(err_master)))
    reader.start()
    out = drain(out_master)
    proc.wait(timeout=120)
    reader.join(10)
    return out, errors[0]


def test_a_repositorys_control_characters_never_reach_a_terminal(tmp_path: Path):
    """A file name or text holding escape sequences (retitle, clear, hide a
    line) or a bidi override was written raw to the terminal by every verb.
    On a terminal they are shown as escapes; a pipe still gets the exact text.
    (A name holding a control character is not indexed at all: see
    test_file_names_with_a_line_break_are_skipped_so_no_answer_prints_a_forged_line.)"""
    root = tmp_path / "evil"
    root.mkdir()
    name = "evil_\u202ehidden.py"  # a bidi override: indexed, shown escaped
    (root / name).write_text('def escape_probe_fn():\n    """doc \x1b[2J \u202e reversed"""\n'
                             "    return 1\n")
    escaping = "evil_\x1b]0;PWNED\x07_\x1b[8mhidden.py"
    (root / escaping).write_text("def never_indexed():\n    pass\n")
    assert run("index", "--root", str(root)).returncode == 0
    out, _ = on_a_terminal("recall", "escape_probe_fn", "--body", "--root", str(root))
    shown = out.decode()
    assert "escape_probe_fn" in shown
    assert not any(c in shown for c in "\x1b\x07\u202e"), shown
    assert "evil_\\u202ehidden.py" in shown
    assert "doc \\u001b[2J \\u202e reversed" in shown
    _, err = on_a_terminal("get", escaping + ":99", "--root", str(root))
    assert b"\x1b" not in err and b"\\u001b" in err  # the error names the file
    piped = run("recall", "escape_probe_fn", "--body", "--root", str(root))
    assert name in piped.stdout and "doc \x1b[2J \u202e reversed" in piped.stdout
    # The log too (`ctxls serve` in a terminal logs the repository's file names).
    log_a_name = ("import argparse, logging; from ctxls.daemon.cli_verbs import log_on_stderr; "
                  "log_on_stderr(argparse.Namespace(log_level='INFO')); "
                  f"logging.getLogger('probe').warning('skipped %s', {escaping!r})")
    _, logged = on_a_terminal("-c", log_a_name, command=[sys.executable])
    assert b"skipped evil_\\u001b]0;PWNED" in logged and b"\x1b" not in logged, logged


def test_a_name_the_file_system_refuses_or_a_full_disk_is_a_message_not_a_traceback(repo: Path):
    """An id or path with a part over 255 bytes (memory ids may be 1024
    characters) made Path.is_file raise ENAMETOOLONG, and a write to a full
    disk raised ENOSPC: both were tracebacks."""
    assert run("index", "--root", str(repo)).returncode == 0
    root = ["--root", str(repo)]
    long_id = "note-" + "x" * 260
    assert run("remember", long_id, "the long id fact", *root).returncode == 0
    got = run("get", long_id, *root, cwd=repo)
    assert got.returncode == 0 and got.stdout == "the long id fact\n", got.stderr
    outline = run("outline", "y" * 300 + ".py", *root, cwd=repo)
    assert outline.returncode == 1 and "not indexed: " in outline.stdout
    assert "Traceback" not in outline.stderr
    for verb in (["recent", "--root", "z" * 300], ["memory", "export", "--db", "z" * 300]):
        refused = run(*verb, cwd=repo)
        assert refused.returncode == 1 and "Traceback" not in refused.stderr, refused.stderr
        assert refused.stderr.startswith("ctxls: ") and "File name too long" in refused.stderr
        assert len(refused.stderr.splitlines()) == 1
    for verb in (["recent", *root], ["memory", "export", *root]):
        with open("/dev/full", "w") as full:
            proc = subprocess.run([*CTXLS, *verb], stdout=full, stderr=subprocess.PIPE, text=True,
                                  timeout=300)
        assert proc.returncode == 1, proc.stderr
        assert proc.stderr.endswith("ctxls: cannot write the output: No space left on device\n")
        assert "Traceback" not in proc.stderr and "Exception ignored" not in proc.stderr


def test_ctrl_c_stops_a_verb_quietly_with_status_130(repo: Path, monkeypatch, capsys):
    """Ctrl-C while `ctxls locate` waited for the issue text on stdin printed
    a traceback; now it stops as a shell reports a command SIGINT ended."""
    from ctxls.daemon import cli

    class InterruptedStdin:
        def read(self, *args):
            raise KeyboardInterrupt  # what Python's SIGINT handler raises in the blocked read

    assert run("index", "--root", str(repo)).returncode == 0
    monkeypatch.setattr(sys, "stdin", InterruptedStdin())
    try:
        code = cli.main(["locate", "--root", str(repo)])
    except KeyboardInterrupt:  # escaping, it would stop pytest itself
        code = "KeyboardInterrupt escaped main"
    assert code == 130
    assert capsys.readouterr() == ("", "")


def test_the_repositorys_own_folder_is_named_as_its_root_not_as_outside(repo: Path):
    """`outline .` (or '' or the root's absolute path) said ". resolves outside
    the workspace root": Engine.relative took the root for outside."""
    assert run("index", "--root", str(repo)).returncode == 0
    for path in (".", "", str(repo), str(repo / "pkg" / "..")):
        outline = run("outline", path, cwd=repo)
        assert outline.returncode == 1, outline.stderr
        assert outline.stdout == "not indexed: . (the repository's root folder, not a file)\n"
        assert outline.stderr == ""
    got = run("get", ".", cwd=repo)
    assert got.returncode == 1 and got.stderr.startswith("ctxls: not found: . (")
    assert run("related", ".:3", cwd=repo).stdout == "no indexed code at that line\n"
    assert "not indexed: pkg (no such file" in run("outline", "pkg", cwd=repo).stdout
    outside = run("outline", str(repo.parent), cwd=repo)
    assert outside.returncode == 1 and "resolves outside the workspace root" in outside.stderr


def test_no_log_handler_writes_a_password(repo: Path, tmp_path: Path):
    """A mistyped memoryUrl put its password in the log: libpq quotes the whole
    connection string it cannot parse, and psycopg.pool logs that as it is.
    Every handler ctxls installs (stderr, the daemon's --log-file) masks URL
    passwords and conninfo password= in messages and tracebacks."""
    log_file = tmp_path / "daemon.log"
    log_three = (
        "import argparse, logging; from ctxls.daemon.cli_verbs import log_on_stderr, log_to_file\n"
        f"args = argparse.Namespace(log_level='INFO', log_file={str(log_file)!r})\n"
        "log_on_stderr(args)\n"
        "for stream in ('stderr', 'file'):\n"
        "    if stream == 'file': log_to_file(args)\n"
        "    log = logging.getLogger('psycopg.pool')\n"
        "    log.warning('missing \"=\" after \"%s\" in connection info string',\n"
        "                'mysql://team:S3cretPW@db.internal/ctxls')\n"
        "    log.warning(\"host=db user=team password='S3cret PW' dbname=ctxls: refused\")\n"
        "    try:\n"
        "        raise ValueError('bad URI: \"postgresql://team:S3cretPW@[::1/ctxls\"')\n"
        "    except ValueError:\n"
        "        log.exception('connecting failed')\n")
    logged = subprocess.run([sys.executable, "-c", log_three], capture_output=True, text=True,
                            timeout=60)
    assert logged.returncode == 0, logged.stderr
    for text in (logged.stderr, log_file.read_text()):
        assert "S3cret" not in text, text
        assert 'after "mysql://team:***@db.internal/ctxls" in' in text
        assert "user=team password=*** dbname=ctxls: refused" in text
        assert 'ValueError: bad URI: "postgresql://team:***@[::1/ctxls"' in text

    # End to end: the URL's typo (an unclosed IPv6 bracket) fails every connection attempt.
    assert run("index", "--root", str(repo)).returncode == 0
    mistyped = run("remember", "k", "a fact", "--root", str(repo), "--no-daemon",
                   env={**os.environ, "CTXLS_MEMORY_URL": "postgresql://team:S3cretPW@[::1/ctxls"})
    assert mistyped.returncode == 1
    assert "S3cretPW" not in mistyped.stdout + mistyped.stderr
    assert "postgresql://team:***@[::1/ctxls" in mistyped.stderr


def _never_answering_daemon(repo: Path, backlog: int = 16):
    """A socket where the repository's daemon listens that accepts nothing and
    answers nothing: what a stopped (kill -STOP) or hung daemon's socket is to
    a client, the kernel completing its connects. Its PID is this process's."""
    import socket

    from ctxls.daemon.client import default_socket

    path = default_socket(repo)
    path.parent.mkdir(parents=True, exist_ok=True)
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen(backlog)
    return listener, path


def test_a_daemon_that_accepts_but_never_answers_is_named_not_waited_for(repo: Path):
    """`ctxls status` and `ctxls recall` on a daemon that was stopped (kill
    -STOP) or hung waited for its answer forever: the kernel still accepts
    connections on its socket, and the client read without a bound. The
    first exchange is now bounded (client.LIVENESS_TIMEOUT_S); the verb then
    exits 1 naming the process and what to do, and never opens the store in
    its place (a second writer beside the one that holds it)."""
    listener, path = _never_answering_daemon(repo)
    try:
        for verb in (["status"], ["recall", "send prepared"]):
            proc = subprocess.run([*CTXLS, *verb, "--root", str(repo)], capture_output=True,
                                  text=True, timeout=60)
            assert proc.returncode == 1, proc.stdout + proc.stderr
            assert f"ctxls daemon on {path} (PID {os.getpid()}) accepts connections but did not " \
                   "answer" in proc.stderr
            assert f"`kill -CONT {os.getpid()}`" in proc.stderr and "Traceback" not in proc.stderr
            assert proc.stdout == ""
        assert not (path.parent / "index.db").exists()  # no store opened here meanwhile
    finally:
        listener.close()
        path.unlink()


def test_a_daemon_whose_backlog_is_full_is_not_taken_for_a_dead_one(repo: Path):
    """A daemon that accepts nothing for long enough (stopped, with clients
    still trying) fills its listen backlog; a connect then fails at once
    (EAGAIN), which was taken for a dead daemon's socket: the verb opened the
    store itself, beside the daemon holding it. It now says the daemon does
    not answer, as when it accepts."""
    import socket

    listener, path = _never_answering_daemon(repo, backlog=0)
    queued = []
    try:
        while True:  # fill the backlog
            waiting = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            waiting.setblocking(False)
            queued.append(waiting)
            try:
                waiting.connect(str(path))
            except BlockingIOError:
                break
        proc = subprocess.run([*CTXLS, "status", "--root", str(repo)], capture_output=True,
                              text=True, timeout=60)
        assert proc.returncode == 1, proc.stdout + proc.stderr
        assert f"ctxls daemon on {path} listens but takes no more connections" in proc.stderr
        assert f"ss -xlp src {path}" in proc.stderr  # its PID cannot be asked without a connection
        assert not (path.parent / "index.db").exists()
        # Nor is it stale to a daemon starting: it would replace the socket and write the store.
        from ctxls.daemon.socket_server import socket_owner_pid
        assert socket_owner_pid(path) is not None
    finally:
        for waiting in queued:
            waiting.close()
        listener.close()
        path.unlink()


def test_a_held_connection_checks_the_daemon_still_answers_before_each_request(tmp_path: Path,
                                                                              monkeypatch):
    """An agent holds its connection between tool calls: a daemon stopped
    after one call left the next waiting forever, the connect's check long
    past. Each request on a connection used before first has the daemon
    answer an ``initialize`` within the bound."""
    import socket

    from ctxls.daemon import client
    from ctxls.daemon.framing import frame

    monkeypatch.setattr(client, "LIVENESS_TIMEOUT_S", 1.0)
    path = tmp_path / "d.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()

    def answers_two_then_stops() -> None:
        connection, _ = listener.accept()
        reader = connection.makefile("rb")
        for _ in range(2):  # the connect's initialize, then one request
            length = int(reader.readline().split(b":")[1])
            reader.readline()
            message = json.loads(reader.read(length))
            connection.sendall(frame({"jsonrpc": "2.0", "id": message["id"], "result": {}}))
        stopped.wait()  # reads nothing more, answers nothing: stopped
        connection.close()

    stopped = threading.Event()
    daemon = threading.Thread(target=answers_two_then_stops, daemon=True)
    daemon.start()
    outcome: list[BaseException | object] = []

    def two_requests() -> None:
        held = client.DaemonClient.connect(path)
        outcome.append(held.request("ctxls/status", {}))
        try:
            held.request("ctxls/status", {})
        except client.DaemonNotAnswering as exc:
            outcome.append(exc)

    try:
        asking = threading.Thread(target=two_requests, daemon=True)
        asking.start()
        asking.join(60)
        assert not asking.is_alive(), "the second request waited on the stopped daemon"
        assert outcome[0] == {} and isinstance(outcome[1], client.DaemonNotAnswering)
        assert f"(PID {os.getpid()}) accepts connections but did not answer within 1 s" \
            in str(outcome[1])
    finally:
        stopped.set()
        listener.close()


# -- CLI probe 5 ---------------------------------------------------------------------

def test_index_takes_paths_after_root_and_a_first_word_inside_the_repository_is_a_path(
        repo: Path, tmp_path: Path):
    """`ctxls index --root R PATH` took PATH for a second root and refused
    ("give the root once"); `ctxls index pkg` (a folder of the repository)
    made a second store in pkg/.ctxls that later verbs there answered from;
    `ctxls index 'pkg/*.py'` said the pattern does not exist. Only a
    repository's folder (or one in no repository) is a root; any other first
    word is a PATH of the repository."""
    elsewhere = tmp_path / "elsewhere"
    elsewhere.mkdir()
    with_root = run("index", "--root", str(repo), "pkg/session.py", "web", "--json", cwd=elsewhere)
    assert with_root.returncode == 0, with_root.stderr
    assert json.loads(with_root.stdout)["added"] == 2
    for first in ("pkg", "pkg/*.py"):
        only = run("index", first, "--json", cwd=repo)
        assert only.returncode == 0, (first, only.stderr)
        assert json.loads(only.stdout)["files"] == 3, first  # pkg's three files
    here = run("index", ".", "--json", cwd=repo / "pkg")
    assert here.returncode == 0 and json.loads(here.stdout)["files"] == 3, here.stderr
    assert not (repo / "pkg" / ".ctxls").exists()
    assert json.loads(run("status", "--json", cwd=repo / "pkg").stdout)["root"] == str(repo.resolve())
    # A repository's own folder is its root, from anywhere; a missing one is refused, nothing made.
    whole = run("index", str(repo), "--json", cwd=elsewhere)
    assert whole.returncode == 0 and json.loads(whole.stdout)["files"] == 5, whole.stderr
    missing = run("index", str(tmp_path / "nope"), cwd=repo)
    assert missing.returncode == 2 and "does not exist" in missing.stderr
    outside = run("index", str(elsewhere), cwd=repo / "pkg")  # a folder in no repository: a root
    assert outside.returncode == 0 and (elsewhere / ".ctxls").is_dir(), outside.stderr
    # A mistyped folder is a pathspec naming nothing: said, as git says it (it indexed 0 files, exit 0).
    typo = run("index", "pgk", cwd=repo)
    assert typo.returncode == 1 and "pgk matched no file on disk or in the index" in typo.stderr


_SIGINT_AT_FIRST_HANDLER = """
import os, signal, sys
def _at_return(frame, event, arg):
    # Ctrl-C right after the server's import registered its first handler.
    if event == "return" and frame.f_code.co_name == "register" \\
            and frame.f_code.co_filename.endswith(os.path.join("daemon", "app.py")):
        sys.setprofile(None)
        os.kill(os.getpid(), signal.SIGINT)
sys.setprofile(_at_return)
"""


def test_ctrl_c_while_a_verb_starts_exits_130_quietly(repo: Path, tmp_path: Path):
    """Ctrl-C during the first import of the server (a verb without a
    daemon starting up): EngineAccess.close imported it again, registering
    its handlers twice, and printed FeatureAlreadyRegisteredError with status 1."""
    hook = tmp_path / "hook"
    hook.mkdir()
    (hook / "sitecustomize.py").write_text(_SIGINT_AT_FIRST_HANDLER)
    assert run("index", "--root", str(repo)).returncode == 0
    env = {**os.environ, "PYTHONPATH": str(hook)}
    for verb in (["status"], ["index"], ["recall", "send"]):
        stopped = run(*verb, "--root", str(repo), "--no-daemon", env=env)
        assert (stopped.returncode, stopped.stderr) == (130, ""), verb


def test_the_progress_line_writes_its_own_controls_and_escapes_the_rest(repo: Path, monkeypatch):
    """On a terminal the progress line's \\r and ESC[2K were printed as the
    text `\\u000d\\u001b[2K`: write_out made the whole line terminal-safe."""
    import io

    from ctxls.daemon.cli_host import Progress

    class Terminal(io.StringIO):
        def isatty(self) -> bool:
            return True

    terminal = Terminal()
    monkeypatch.setattr(sys, "stderr", terminal)
    progress = Progress(True)
    progress.show("indexing: 1/2 \x1b]0;retitled\x07")
    progress.clear()
    assert terminal.getvalue() == "\r\x1b[2Kindexing: 1/2 \\u001b]0;retitled\\u0007\r\x1b[2K"
    monkeypatch.undo()
    _, shown = on_a_terminal("index", "--root", str(repo), "--no-daemon")
    assert b"\r\x1b[2Kindexing: 5/5 files" in shown and b"\\u00" not in shown, shown


def test_json_on_a_terminal_is_the_piped_json_and_a_crlf_line_end_is_a_line_end(tmp_path: Path):
    """On a terminal, `--json` made the result terminal-safe before encoding
    it: a CRLF file's \\r became the text \\u000d, another value than the
    pipe's. And plain `get` showed \\u000d at every CRLF line's end."""
    root = tmp_path / "crlf"
    root.mkdir()
    (root / "w.py").write_bytes("def crlf_func(x):\r\n    return x  # \u202e\x7f\r\n".encode())
    an_hour_ago = time.time() - 3600  # not racy: each verb's check leaves the row (and its time) as it is
    os.utime(root / "w.py", (an_hour_ago, an_hour_ago))
    assert run("index", str(root)).returncode == 0
    piped = run("get", "w.py", "--json", "--root", str(root))
    shown, _ = on_a_terminal("get", "w.py", "--json", "--root", str(root))
    assert json.loads(shown) == json.loads(piped.stdout)
    assert json.loads(shown)["text"] == "def crlf_func(x):\r\n    return x  # \u202e\x7f\r\n"
    assert "\u202e".encode() not in shown and b"\x7f" not in shown  # still terminal-safe
    shown, _ = on_a_terminal("get", "w.py", "--root", str(root))
    # The terminal ends each line with \r\n itself (onlcr); the file's CRs are gone.
    assert shown == b"def crlf_func(x):\r\n    return x  # \\u202e\\u007f\r\n"


def test_a_location_typed_from_a_subfolder_is_read_from_there(repo: Path):
    """`get session.py:16-18` (and the #L forms, `outline session.py:16`) in
    pkg/ said not found, while `get session.py --start-line 16` worked."""
    assert run("index", "--root", str(repo)).returncode == 0
    sub = repo / "pkg"
    lines = run("get", "session.py", "--start-line", "16", "--end-line", "18", cwd=sub)
    assert lines.returncode == 0 and lines.stdout.startswith("def send_prepared("), lines.stderr
    for typed in ("session.py:16-18", "session.py#L16-L18", "./session.py#L16-18"):
        got = run("get", typed, cwd=sub)
        assert (got.returncode, got.stdout) == (0, lines.stdout), (typed, got.stderr)
    one = run("get", "session.py:16:5", cwd=sub)
    assert one.stdout == "def send_prepared(method, url, timeout):\n", one.stderr
    outline = run("outline", "session.py:16", cwd=sub)
    assert outline.returncode == 0 and outline.stdout.startswith("pkg/session.py"), outline.stderr


def test_an_unknown_ctxls_log_level_is_a_usage_error(repo: Path):
    """CTXLS_LOG=verbose printed a ValueError traceback (argparse checks no
    default against its choices); it is bad usage, like --log-level bogus."""
    assert run("index", "--root", str(repo)).returncode == 0
    refused = run("status", "--no-daemon", "--root", str(repo),
                  env={**os.environ, "CTXLS_LOG": "verbose"})
    assert refused.returncode == 2 and "Traceback" not in refused.stderr, refused.stderr
    assert "$CTXLS_LOG: invalid choice: 'VERBOSE'" in refused.stderr
    fine = run("status", "--no-daemon", "--root", str(repo), env={**os.environ, "CTXLS_LOG": "error"})
    assert fine.returncode == 0, fine.stderr


def test_an_error_names_the_option_as_its_verb_spells_it(repo: Path):
    """`symbols a -n 0` said "invalid param '--limit'": OPTION_OF_FIELD had
    recent's spelling of `limit` for every verb, and symbols has no --limit."""
    from ctxls.daemon.cli import OPTION_OF_FIELD_IN_VERB, build_parser

    verbs = next(a for a in build_parser()._actions if a.dest == "command").choices
    for verb, names in OPTION_OF_FIELD_IN_VERB.items():
        typed = {o for a in verbs[verb]._actions for o in (*a.option_strings, a.metavar or a.dest)}
        assert set(names.values()) <= typed, verb
    assert run("index", "--root", str(repo)).returncode == 0
    for verb, said in ((["symbols", "send", "-n", "0"], "invalid param '-n'"),
                       (["symbols", ""], "invalid param 'name'"),
                       (["recent", "--limit", "0"], "invalid param '--limit'")):
        refused = run(*verb, "--root", str(repo))
        assert refused.returncode == 2 and said in refused.stderr, (verb, refused.stderr)


def test_a_process_no_editor_configures_embeds_with_the_model_named_by_the_environment(repo: Path):
    """`ctxls mcp`, `serve --root` and a CLI verb without a daemon have no
    editor's embedModel: $CTXLS_EMBED_MODEL names it, and the store's vectors
    are that model's; an option a client sends still wins."""
    from ctxls.daemon.options import parse_init_options
    from ctxls.index.embeddings import STATIC_MODEL_NAME
    import sqlite3

    env = {**os.environ, "CTXLS_EMBED_MODEL": STATIC_MODEL_NAME}
    indexed = run("index", "--root", str(repo), "--embed", "--no-daemon", env=env)
    assert indexed.returncode == 0, indexed.stderr
    store = sqlite3.connect(repo / ".ctxls" / "index.db")
    try:
        stamp = store.execute("SELECT value FROM meta WHERE key = 'vector_model'").fetchone()
        assert stamp is not None and stamp[0].startswith(STATIC_MODEL_NAME + "/"), stamp
        assert store.execute("SELECT count(*) FROM vectors").fetchone()[0] > 0
    finally:
        store.close()
    os.environ["CTXLS_EMBED_MODEL"] = STATIC_MODEL_NAME
    try:
        assert parse_init_options({})[0].embedModel == STATIC_MODEL_NAME
        assert parse_init_options({"embedModel": None})[0].embedModel is None
    finally:
        del os.environ["CTXLS_EMBED_MODEL"]


def test_assembles_abstention_note_names_the_option_typed(repo: Path):
    """`assemble --min-score 50` abstained saying "is under minScore 50", the
    protocol's field: its errors named `--min-score` already, its note did not."""
    assert run("index", "--root", str(repo)).returncode == 0
    abstained = run("assemble", "send prepared request", "--min-score", "50", "--root", str(repo))
    assert abstained.returncode == 1, abstained.stderr
    assert abstained.stdout.startswith("(abstained: ") and "under --min-score 50" \
        in abstained.stdout, abstained.stdout
    assert "minScore" not in abstained.stdout


def _socket_daemon(repo: Path) -> subprocess.Popen:
    """`ctxls serve --root REPO --socket`, once it serves."""
    proc = subprocess.Popen([*CTXLS, "serve", "--root", str(repo), "--socket"],
                            stderr=subprocess.PIPE, text=True)
    said = ""
    while "until interrupted" not in said:
        line = proc.stderr.readline()
        assert line, "daemon exited: " + said
        said += line
    threading.Thread(target=proc.stderr.read, daemon=True).start()  # never blocks on a full pipe
    return proc


def test_a_request_over_the_message_bound_is_refused_before_it_is_sent(tmp_path: Path):
    """A request over the 64 MiB bound of a message was sent to the daemon,
    whose reader ended the connection: "lost the daemon: Broken pipe". It is
    now refused here (-32602 naming the param, its size and the bound), never
    sent, and the connection goes on answering; a locate text past its cut is
    cut here as the engine cuts it, so it is answered."""
    import socket

    from ctxls.daemon import client
    from ctxls.daemon.framing import MAX_MESSAGE_BYTES, frame
    from ctxls.index.errors import InvalidParams
    from ctxls.index.vocabulary import MAX_LOCATE_CHARS

    path = tmp_path / "d.sock"
    listener = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    listener.bind(str(path))
    listener.listen()
    read: list[tuple[str, int, dict]] = []  # (method, body bytes, params) of each message read

    def answers_each() -> None:
        connection, _ = listener.accept()
        reader = connection.makefile("rb")
        while header := reader.readline():
            reader.readline()
            body = reader.read(int(header.split(b":")[1]))
            message = json.loads(body)
            read.append((message["method"], len(body), message.get("params")))
            if "id" in message:
                connection.sendall(frame({"jsonrpc": "2.0", "id": message["id"], "result": {}}))
        connection.close()

    threading.Thread(target=answers_each, daemon=True).start()
    held = client.DaemonClient.connect(path)
    try:
        big = "x" * (MAX_MESSAGE_BYTES + 1)
        try:
            held.request("ctxls/remember", {"id": "k", "text": big})
            raise AssertionError("an over-bound request was sent")
        except InvalidParams as exc:
            assert exc.code == -32602 and exc.param == "text"
            said = re.search(r"the request is (\d+) bytes, over the 64 MiB bound", exc.message)
            assert said and int(said[1]) > MAX_MESSAGE_BYTES + 1, exc.message
            assert exc.data["limit"] == MAX_MESSAGE_BYTES
        log = "boom\n" + "word " * (MAX_MESSAGE_BYTES // 5 + 1) + "\nlast line"
        assert held.request("ctxls/locate", {"text": log}) == {}
        assert held.request("ctxls/status", {}) == {}
    finally:
        held.close()
        listener.close()
    assert max(size for _, size, _ in read) < MAX_MESSAGE_BYTES
    assert "ctxls/remember" not in [method for method, _, _ in read]
    (located,) = [params["text"] for method, _, params in read if method == "ctxls/locate"]
    half = MAX_LOCATE_CHARS // 2
    assert located == log[:half] + "\n" + log[-half:]


def test_a_locate_text_over_the_message_bound_is_answered_through_the_daemon(repo: Path):
    """`ctxls locate - < 70MiB_issue.txt` with a daemon said "ctxls: lost the
    daemon: [Errno 32] Broken pipe"; without one it was answered (the text is
    cut to its first and last 20,000 characters). Both answer alike now."""
    assert run("index", "--root", str(repo)).returncode == 0
    issue = "send_prepared failed\n" + "word " * ((70 << 20) // 5)
    daemon = _socket_daemon(repo)
    try:
        via_daemon = subprocess.run([*CTXLS, "locate", "--root", str(repo), "-"], input=issue,
                                    capture_output=True, text=True, timeout=300)
    finally:
        daemon.terminate()
        daemon.wait(60)
    assert via_daemon.returncode == 0, via_daemon.stderr
    assert "pkg/session.py" in via_daemon.stdout
    alone = subprocess.run([*CTXLS, "locate", "--root", str(repo), "--no-daemon", "-"],
                           input=issue, capture_output=True, text=True, timeout=300)

    def ranked_files(out: str) -> list[str]:  # scores differ with the daemon's semantic tier
        return re.findall(r"^\s+[\d.]+\s+(\S+)$", out, re.M)

    assert alone.returncode == 0 and ranked_files(via_daemon.stdout) == ranked_files(alone.stdout)
    assert ranked_files(alone.stdout)


def _stderr_on_a_terminal(argv: list[str], until: bytes | None = None
                          ) -> tuple[subprocess.Popen, bytes]:
    """(the process, its stderr) with stderr a pseudo-terminal and stdout not
    one: read until its end, or until ``until`` is shown (the process left
    running, its stderr drained meanwhile: a full terminal buffer nobody
    reads blocks its writes)."""
    import pty
    import select
    import threading

    master, slave = pty.openpty()
    proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=slave,
                            env={**os.environ, "NO_COLOR": "1", "CTXLS_LOG": "ERROR"})
    os.close(slave)
    shown = b""
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline and not (until and until in shown):
        if not select.select([master], [], [], 1)[0]:
            continue
        try:
            chunk = os.read(master, 65536)
        except OSError:  # the slave side closed: the process ended
            break
        if not chunk:
            break
        shown += chunk
    if until and proc.poll() is None:
        def drain() -> None:
            try:
                while os.read(master, 65536):
                    pass
            except OSError:  # the process ended
                pass
            finally:
                os.close(master)

        threading.Thread(target=drain, daemon=True).start()
    else:
        os.close(master)
    return proc, shown


def test_serves_example_recall_is_terminal_safe_on_its_stderr(tmp_path: Path):
    """`make run` (`serve --root R --example Q --socket`) printed its example
    recall to stderr raw: a file named with U+202E (indexed: only C0/C1
    controls are refused) reached the terminal as a live bidi override; a
    second one, answered by the first, escaped it only when stdout, not the
    stderr it wrote to, was a terminal. Both escape for stderr now."""
    root = tmp_path / "bidi"
    root.mkdir()
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / "notes\u202efdp.md").write_text("# Upload retry\n\nupload retry policy: three tries\n")
    serve = [*CTXLS, "serve", "--root", str(root), "--example", "upload retry", "--socket"]
    first, shown = _stderr_on_a_terminal(serve, until=b"until interrupted")
    second = None
    try:
        assert b"until interrupted" in shown, shown
        assert b"notes\\u202efdp.md:1-3" in shown and "\u202e".encode() not in shown, shown
        second, said = _stderr_on_a_terminal(serve)
        assert second.wait(120) == 0, said
        assert b"is already served by" in said, said
        assert b"notes\\u202efdp.md:1-3" in said and "\u202e".encode() not in said, said
    finally:
        for proc in (first, second):  # a second that did not find the first serves too
            if proc is not None and proc.poll() is None:
                proc.terminate()
                proc.wait(60)


def test_assemble_with_no_chunk_fitting_its_budget_says_so_and_finds_nothing(repo: Path):
    """`assemble --budget-tokens 5` printed an empty line and exited 0 where
    its JSON said `weak` with the note `no hit fits in 5 tokens` (MCP said
    it): the note now follows the context, as recall's weak note does, and
    an empty context exits 1, nothing found."""
    assert run("index", "--root", str(repo)).returncode == 0
    nothing_fits = run("assemble", "send prepared request", "--budget-tokens", "1", "--root", str(repo))
    assert nothing_fits.returncode == 1, nothing_fits.stderr
    assert nothing_fits.stdout.startswith("(weak: no hit fits in 1 tokens)\n"), nothing_fits.stdout
    on_topic = run("assemble", "send prepared request", "--root", str(repo))
    assert on_topic.returncode == 0 and on_topic.stdout.startswith("[1] "), on_topic.stdout


def test_gets_error_names_both_line_options_as_typed(repo: Path):
    """`get pkg/session.py:1-2 --start-line 1` said `with --start-line/endLine`:
    the option after the slash kept the protocol's name."""
    assert run("index", "--root", str(repo)).returncode == 0
    both = run("get", "pkg/session.py:1-2", "--start-line", "1", "--root", str(repo))
    assert both.returncode == 2, both.stderr
    assert "with --start-line/--end-line" in both.stderr and "Line" not in both.stderr, both.stderr
