"""Symlinks never carry a byte from outside the root into an answer (issue 15).

A repository holds a symlinked file and a symlinked folder pointing outside
its root (``notes.txt -> …/passwd``-style, ``vendor -> …/outside``) and one
symlink inside it. Every reader is probed: recall with bodies, assemble,
workspace/symbol, impact, get, and the watched-file / didSave updates.
"""

from __future__ import annotations

import json
import os
import subprocess
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from conftest import SAMPLE_FILES, serve, write_tree
from rawrpc import StdioDaemon
from ctxls.impact.ripgrep import sweep
from ctxls.index.discovery import (DiscoveryOptions, FileFilter, Skipped, discover, read_source)
from ctxls.index.engine import Engine, EngineOptions

MARKER = "zqxOUTSIDEqxz"
OUTSIDE_FILES = {
    "passwd": f"root:x:0:0:{MARKER}:/root:/bin/bash\n",
    "secret.py": (f"def {MARKER}_fn():\n"
                  f"    return '{MARKER} token'\n"
                  "\n"
                  f"def {MARKER}_caller():\n"
                  "    return send_prepared('GET', 'x', 1)\n"),
    "secret.md": f"# Deploying\n\nThe deploy FOO_URL is {MARKER}.\n",
}


def plant_links(tmp_path: Path, root: Path) -> Path:
    """The outside folder, and links to it from ``root``; returns the folder."""
    outside = tmp_path / "outside"
    outside.mkdir()
    write_tree(outside, OUTSIDE_FILES)
    (root / "notes.txt").symlink_to(outside / "passwd")
    (root / "lib.py").symlink_to(outside / "secret.py")
    (root / "vendor").symlink_to(outside, target_is_directory=True)
    (root / "docs").mkdir()
    (root / "docs" / "deploy.md").symlink_to(outside / "secret.md")
    # Inside the root: indexed once, under the target's path.
    (root / "pkg" / "alias.py").symlink_to("session.py")
    (root / "mirror").symlink_to("pkg", target_is_directory=True)
    return outside


@pytest.fixture
def linked_repo(tmp_path: Path, repo: Path) -> Path:
    plant_links(tmp_path, repo)
    return repo


def no_marker(value) -> None:
    dumped = json.dumps(value, default=repr)
    assert MARKER not in dumped and "root:x:0:0" not in dumped


@pytest.mark.parametrize("git", [True, False])
def test_discovery_skips_links_out_of_the_root_and_indexes_inside_links_once(tmp_path: Path, git: bool):
    root = tmp_path / "root"
    root.mkdir()
    write_tree(root, SAMPLE_FILES)
    if git:
        subprocess.run(["git", "init", "-q", str(root)], check=True)
    plant_links(tmp_path, root)
    listing = discover(root, FileFilter(DiscoveryOptions()))
    assert "pkg/session.py" in listing.paths
    for alias in ("notes.txt", "lib.py", "docs/deploy.md", "pkg/alias.py"):
        assert alias not in listing.paths
    assert not any(p.startswith(("vendor/", "mirror/")) for p in listing.paths)
    reasons = {s.path: s.reason for s in listing.skipped}
    assert reasons["notes.txt"] == "symlink outside the root"
    assert reasons["lib.py"] == "symlink outside the root"
    assert reasons["docs/deploy.md"] == "symlink outside the root"
    assert reasons["pkg/alias.py"] == "symlink to pkg/session.py"

    # Readers refuse the same paths whoever asks (watched files, didSave).
    for alias in ("notes.txt", "lib.py", "vendor/secret.py", "docs/deploy.md"):
        assert read_source(root, alias, 1 << 20) == Skipped(alias, "symlink outside the root")
    assert read_source(root, "mirror/session.py", 1 << 20) == Skipped(
        "mirror/session.py", "symlink to pkg/session.py")


def test_engine_never_reads_outside(tmp_path: Path, linked_repo: Path):
    engine = Engine(linked_repo, EngineOptions())
    try:
        engine.cold_index()
        result = engine.recall(f"{MARKER} deploy FOO_URL token root", n=50, body=True)
        no_marker([h.__dict__ for hits in result.hits_by_kind.values() for h in hits])
        no_marker([s.__dict__ for s in engine.symbols(MARKER)])
        for path in ("notes.txt", "lib.py", "vendor/secret.py", "vendor/passwd"):
            assert engine.current_text(path) is None
        # Watched-file events for the links change nothing.
        engine.files_changed_on_disk(["notes.txt", "lib.py", "docs/deploy.md"])
        engine.file_changed_on_disk("vendor/secret.py")
        no_marker([h.__dict__ for hits in engine.recall(MARKER, n=50, body=True).hits_by_kind.values()
                   for h in hits])
        # The inside alias: one copy, under its target's path.
        paths = [h.path for h in engine.recall("send prepared", kinds=["code"], n=50).hits_by_kind["code"]]
        assert "pkg/session.py" in paths and "pkg/alias.py" not in paths
        assert not any(p.startswith("mirror/") for p in paths)
        assert engine.get("pkg/alias.py").id == "pkg/session.py"
        skipped = {s["path"]: s["reason"] for s in engine.status()["skipped"]["files"]}
        assert skipped["notes.txt"] == "symlink outside the root"
    finally:
        engine.close()


def test_sweep_never_reports_a_file_outside_the_root(linked_repo: Path):
    found = sweep(linked_repo, "send_prepared", ("py",), FileFilter(DiscoveryOptions()), {}, 1 << 20)
    assert "pkg/session.py" in found.lines
    assert not any(p.startswith("vendor/") or p == "lib.py" for p in found.lines)
    # Links inside the root are the same file as their target: never twice.
    assert "pkg/alias.py" not in found.lines and not any(p.startswith("mirror/") for p in found.lines)


async def test_no_outside_byte_over_lsp(linked_repo: Path):
    async with serve(linked_repo) as s:
        await s.wait_indexed()
        recalled = await s.request("ctxls/recall", {"query": f"{MARKER} deploy FOO_URL token",
                                                    "n": 50, "body": True})
        no_marker(recalled)
        assembled = await s.request("ctxls/assemble", {"query": f"{MARKER} deploy FOO_URL",
                                                       "budgetTokens": 4000})
        no_marker(assembled)
        symbols = await s.client.workspace_symbol_async(types.WorkspaceSymbolParams(query=MARKER))
        no_marker([s.client.protocol._converter.unstructure(x) for x in symbols or []])
        impact = await s.request("ctxls/impact", {"symbol": "send_prepared"})
        no_marker(impact)
        assert not any(c["path"].startswith("vendor/") or c["path"] == "lib.py"
                       for c in impact["callers"])
        assert await s.request("ctxls/impact", {"symbol": f"{MARKER}_fn"}) is None
        for path in ("notes.txt", "lib.py", "vendor/secret.py"):
            with pytest.raises(JsonRpcException) as err:
                await s.request("ctxls/get", {"id": path})
            assert err.value.code == -32004

        # Watched-file events and saves of the links read nothing either.
        s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=(linked_repo / p).as_uri(), type=types.FileChangeType.Changed)
            for p in ("notes.txt", "lib.py", "vendor/secret.py", "docs/deploy.md")]))
        s.client.text_document_did_save(types.DidSaveTextDocumentParams(
            types.TextDocumentIdentifier(uri=(linked_repo / "notes.txt").as_uri())))
        status = await s.request("ctxls/status")
        no_marker(await s.request("ctxls/recall", {"query": MARKER, "n": 50, "body": True}))
        skipped = {f["path"]: f["reason"] for f in status["skipped"]["files"]}
        assert skipped["notes.txt"] == "symlink outside the root"
        assert skipped["pkg/alias.py"] == "symlink to pkg/session.py"


def test_a_directory_named_as_a_file_is_skipped_not_raised(tmp_path: Path):
    # A watched-file event can name a folder (an editor creates one): reading
    # it skips it, it never raises out of the reader.
    root = tmp_path / "repo"
    (root / "pkg" / "made_by_editor").mkdir(parents=True)
    assert read_source(root, "pkg/made_by_editor", 1 << 20) == Skipped("pkg/made_by_editor", "vanished")


def test_a_folder_opened_through_a_link_is_answered_in_the_links_uris(tmp_path: Path):
    """An editor that opens a project through a link (`~/work` to a data
    disk, macOS's `/tmp`) has its files by URIs under the link. Answers
    named them by the resolved path, so following a hit opened the same file
    a second time, as another document. Answers now use the folder's name
    as the editor gave it; files are still read where they really are."""
    real = tmp_path / "data" / "project"
    write_tree(real, SAMPLE_FILES)
    subprocess.run(["git", "init", "-q", str(real)], check=True)
    link = tmp_path / "work"
    os.symlink(real, link)
    daemon = StdioDaemon(real, folder_uri=link.as_uri())
    try:
        assert daemon.wait_indexed(timeout=30)["complete"]
        conn = daemon.conn
        under_link = (link / "pkg" / "session.py").as_uri()
        conn.send({"jsonrpc": "2.0", "method": "textDocument/didOpen", "params": {"textDocument": {
            "uri": under_link, "languageId": "python", "version": 1,
            "text": (real / "pkg" / "session.py").read_text() + "\ndef typed_in_the_editor():\n    pass\n"}}})
        hits = conn.request("ctxls/recall", {"query": "typed_in_the_editor", "kind": "code"}, "r")["result"]["hits"]
        assert hits[0]["uri"] == under_link
        located = conn.request("ctxls/locate", {"text": "send_prepared fails"}, "l")["result"]["files"]
        assert located and all(f["uri"].startswith(link.as_uri() + "/") for f in located)
        found = conn.request("ctxls/impact", {"symbol": "send_prepared"}, "i")["result"]
        assert found["definitions"][0]["uri"] == under_link
    finally:
        daemon.close()
