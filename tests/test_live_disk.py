"""Live on disk: the real watcher (watchfiles) on real files, no mocked events.

Every answer that points into files reflects them as they are now, whoever
changed them: the watcher re-indexes what changed, and answers check their
own files before they are given (so even before the watcher's batch, or with
the watcher off, no old line range is laid over new text).
"""

from __future__ import annotations

import asyncio
import json
import os
import random
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path

import pytest
from lsprotocol import types
from mcp import StdioServerParameters
from mcp.client.session import ClientSession
from mcp.client.stdio import stdio_client

from conftest import serve, write_tree
from ctxls.impact import analysis
from ctxls.index import discovery, live
from ctxls.index import engine as engine_module
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.errors import StalePointer
from ctxls.index.indexer import Indexer
from ctxls.index.model import content_hash

pytestmark = pytest.mark.filterwarnings("ignore::DeprecationWarning")


def wait_until(predicate, timeout: float = 10.0, interval: float = 0.02):
    """Poll ``predicate`` until it is truthy (its value) or the timeout passes (None)."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        value = predicate()
        if value:
            return value
        time.sleep(interval)
    return None


def git(root: Path, *args: str) -> None:
    subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                   env={**os.environ, "GIT_AUTHOR_NAME": "t", "GIT_AUTHOR_EMAIL": "t@t",
                        "GIT_COMMITTER_NAME": "t", "GIT_COMMITTER_EMAIL": "t@t"})


def live_engine(root: Path, watch: str = "auto", ready_wait_s: float = 3.0) -> Engine:
    engine = Engine(root, EngineOptions(watch=watch, ready_wait_s=ready_wait_s))
    engine.follow_disk()
    assert (engine.follower is None) == (watch == "off")
    assert engine.follower is None or engine.follower.established.wait(10)
    engine.cold_index()
    return engine


def code_symbols(engine: Engine, query: str) -> list[str | None]:
    return [h.symbol for h in engine.recall(query, ["code"], n=20).hits_by_kind["code"]]


@pytest.fixture
def tree(tmp_path: Path) -> Path:
    root = tmp_path / "live"
    write_tree(root, {
        "pkg/__init__.py": "",
        "pkg/core.py": ("def helper(x):\n    return x + 1\n\n\n"
                        "def compute(values):\n    total = 0\n    for v in values:\n"
                        "        if v > 2:\n            total += helper(v)\n    return total\n"),
        "pkg/use.py": "from pkg.core import compute\n\n\ndef run():\n    return compute([1, 2, 3])\n",
        ".gitignore": "build/\n",
    })
    git(root, "init", "-q")
    return root


def test_a_function_appended_on_disk_reaches_recall_impact_get_and_recent_activity(tree: Path):
    engine = live_engine(tree)
    try:
        assert engine.status()["watch"]["mode"] == "native"
        with open(tree / "pkg/core.py", "a") as fh:
            fh.write("\n\ndef appended_on_disk(y):\n    return compute([y])\n")
        # The watcher's batch, with no request to pull it in: recent activity reads no file.
        items = wait_until(lambda: [a for a in engine.recent_activity()
                                    if a.symbol == "appended_on_disk"])
        assert items and items[0].origin == "disk" and items[0].id == "pkg/core.py"
        hit = engine.recall("appended_on_disk", ["code"], body=True).hits_by_kind["code"][0]
        assert "def appended_on_disk(y):" in hit.body and hit.path == "pkg/core.py"
        found = analysis.analyze(engine, "appended_on_disk", with_callers=False)
        assert found is not None and found.definitions[0].start_line == 12
        lines = engine.get("pkg/core.py", 12, 13)
        assert lines.text == "def appended_on_disk(y):\n    return compute([y])"
        # A new file, and one in a new folder, are followed too.
        write_tree(tree, {"pkg/extra.py": "def brand_new_file_fn():\n    pass\n",
                          "newpkg/deep/mod.py": "def in_a_new_folder():\n    pass\n"})
        assert wait_until(lambda: engine.store.file_state("newpkg/deep/mod.py"))
        assert wait_until(lambda: engine.store.file_state("pkg/extra.py"))
        write_tree(tree, {"newpkg/deep/later.py": "def created_after_the_folder():\n    pass\n"})
        assert wait_until(lambda: engine.store.file_state("newpkg/deep/later.py"))
        # A folder moved out of the tree takes its files' rows with it.
        shutil.move(str(tree / "newpkg"), str(tree.parent / "moved_out"))
        assert wait_until(lambda: engine.store.file_state("newpkg/deep/mod.py") is None)
        assert engine.store.file_state("newpkg/deep/later.py") is None
        # Gone, not left out: the deletion is activity, not a skipped file.
        assert {a.symbol: (a.edits, a.origin) for a in engine.recent_activity()}.get(
            "created_after_the_folder") == (2, "disk")  # made, then gone
        assert engine.status()["skipped"]["count"] == 0
    finally:
        engine.close()


def test_ignored_files_are_neither_watched_nor_indexed(tree: Path):
    write_tree(tree, {"build/gen.py": "def generated_output():\n    pass\n"})
    engine = live_engine(tree)
    try:
        watched = engine.follower._watched
        assert "build" not in watched and "pkg" in watched
        write_tree(tree, {"build/gen2.py": "def generated_again():\n    pass\n",
                          "build/sub/x.py": "def generated_deeper():\n    pass\n",
                          "pkg/sentinel.py": "def sentinel_fn():\n    pass\n"})
        assert wait_until(lambda: engine.store.file_state("pkg/sentinel.py"))
        time.sleep(0.3)  # any batch the ignored writes could have made is over
        assert set(engine.store.file_states()) == {"pkg/__init__.py", "pkg/core.py", "pkg/use.py",
                                                   "pkg/sentinel.py"}
    finally:
        engine.close()


def test_a_clone_inside_the_repository_is_indexed_and_followed(tree: Path):
    """A repository cloned inside the one opened (git lists it as a folder):
    its files are indexed, its ignored files are not, and an edit in it on
    disk reaches recall through the watcher."""
    write_tree(tree, {"deps/lib/.gitignore": "out/\n", "deps/lib/lib_mod.py": "def lib_fn():\n    pass\n",
                      "deps/lib/out/gen.py": "def lib_generated():\n    pass\n"})
    git(tree / "deps/lib", "init", "-q")
    engine = live_engine(tree)
    try:
        assert code_symbols(engine, "lib_fn")[0] == "lib_fn"
        assert engine.store.file_state("deps/lib/out/gen.py") is None
        assert "deps/lib" in engine.follower._watched and "deps/lib/out" not in engine.follower._watched
        write_tree(tree, {"deps/lib/lib_mod.py": "def lib_fn_renamed_on_disk():\n    pass\n"})
        assert wait_until(lambda: code_symbols(engine, "lib_fn_renamed_on_disk")[:1] == ["lib_fn_renamed_on_disk"])
    finally:
        engine.close()


def test_a_folder_removed_and_made_again_in_one_batch_is_followed(tree: Path):
    """A generator's `rm -rf gen && mkdir gen` and its new files, faster than
    one batch: the folder's name was still watched, so it was not taken for
    new, and the files written into it before its new watch stood were never
    indexed (the old folder's watch had gone with it)."""
    write_tree(tree, {"pkg/gen/old.py": "def generated_before():\n    pass\n"})
    engine = live_engine(tree)
    try:
        assert engine.store.file_state("pkg/gen/old.py")
        shutil.rmtree(tree / "pkg/gen")
        (tree / "pkg/gen").mkdir()
        (tree / "pkg/gen/new.py").write_text("def generated_again():\n    pass\n")
        assert wait_until(lambda: engine.store.file_state("pkg/gen/new.py"))
        assert wait_until(lambda: engine.store.file_state("pkg/gen/old.py") is None)
        (tree / "pkg/gen/later.py").write_text("def generated_later():\n    pass\n")
        assert wait_until(lambda: engine.store.file_state("pkg/gen/later.py"))
    finally:
        engine.close()


def test_ignore_rules_changed_on_disk_take_files_out_and_bring_them_back(tree: Path):
    """A `.gitignore` (the root's or a folder's) or git's exclude file edited
    on disk names no file it affects: the files it newly ignores leave the
    index, those it lets in come (and their folders are watched from then
    on); a tracked file stays, as git lists it."""
    git(tree, "add", "pkg/core.py")
    write_tree(tree, {"notes_tool.py": "def untracked_helper():\n    pass\n",
                      "build/out.py": "def built_output():\n    pass\n"})
    engine = live_engine(tree)
    try:
        assert engine.store.file_state("notes_tool.py") and not engine.store.file_state("build/out.py")
        (tree / ".gitignore").write_text("notes_tool.py\npkg/core.py\n")
        assert wait_until(lambda: engine.store.file_state("notes_tool.py") is None)
        assert engine.store.file_state("pkg/core.py")  # tracked: git still lists it
        (tree / "pkg/.gitignore").write_text("use.py\n")
        assert wait_until(lambda: engine.store.file_state("pkg/use.py") is None)
        (tree / ".gitignore").write_text("")
        (tree / "pkg/.gitignore").unlink()
        assert wait_until(lambda: engine.store.file_state("notes_tool.py"))
        assert wait_until(lambda: engine.store.file_state("build/out.py"))
        assert wait_until(lambda: engine.store.file_state("pkg/use.py"))
        # The folder the old rules left out is watched now.
        (tree / "build/later.py").write_text("def built_later():\n    pass\n")
        assert wait_until(lambda: engine.store.file_state("build/later.py"))
        (tree / ".git/info/exclude").write_text("build/\n")
        assert wait_until(lambda: engine.store.file_state("build/out.py") is None)
        assert wait_until(lambda: engine.store.file_state("build/later.py") is None)
    finally:
        engine.close()


def test_ignore_rules_an_editor_reports_are_applied_without_the_watcher(tree: Path):
    """With the watcher off, an editor's watched-file event for a `.gitignore`
    is the only word of new rules: it re-lists the folder as the watcher would."""
    write_tree(tree, {"notes_tool.py": "def untracked_helper():\n    pass\n"})
    engine = live_engine(tree, watch="off")
    try:
        assert engine.store.file_state("notes_tool.py")
        (tree / ".gitignore").write_text("notes_tool.py\n")
        engine.disk_changed([".gitignore"])
        assert engine.store.file_state("notes_tool.py") is None
    finally:
        engine.close()


def test_a_folder_replaced_by_a_file_of_its_name_is_indexed(tree: Path):
    """`rm -rf gen.py && write gen.py`: the name was a watched folder, so its event
    was taken for the folder's going and the new file was never indexed."""
    write_tree(tree, {"pkg/gen.py/old.py": "def generated_before():\n    pass\n"})
    engine = live_engine(tree)
    try:
        assert engine.store.file_state("pkg/gen.py/old.py")
        shutil.rmtree(tree / "pkg/gen.py")
        (tree / "pkg/gen.py").write_text("def now_a_file():\n    pass\n")
        assert wait_until(lambda: engine.store.file_state("pkg/gen.py"))
        assert wait_until(lambda: engine.store.file_state("pkg/gen.py/old.py") is None)
        assert code_symbols(engine, "now_a_file") == ["now_a_file"]
    finally:
        engine.close()


@pytest.mark.parametrize("watch, watcher", [("auto", "RustNotify"), ("poll", "StatPoller")])
def test_a_change_made_while_a_new_watch_is_set_up_is_not_lost(tree: Path, monkeypatch,
                                                                watch: str, watcher: str):
    """A new folder replaces the watch (or the poller); a file edited after
    the old one's batch and before the new one stands was seen by the old one
    only. The old one now stays until the new one stands, and what it saw is handled."""
    in_the_gap = threading.Event()  # set once the first watch stands

    def edit() -> None:
        if in_the_gap.is_set():
            with open(tree / "pkg/use.py", "a") as fh:
                fh.write("\n\ndef edited_in_the_gap():\n    pass\n")

    if watcher == "RustNotify":  # not a class Python can derive from
        real = live.RustNotify
        monkeypatch.setattr(live, "RustNotify", lambda *args: (edit(), real(*args))[1])
    else:
        class PollerAfterAnEdit(live.StatPoller):
            def __init__(self, *args):
                edit()
                super().__init__(*args)

        monkeypatch.setattr(live, "StatPoller", PollerAfterAnEdit)
    engine = live_engine(tree, watch=watch)
    in_the_gap.set()
    try:
        (tree / "newpkg").mkdir()
        (tree / "newpkg/mod.py").write_text("def in_a_new_folder():\n    pass\n")
        assert wait_until(lambda: engine.store.file_state("newpkg/mod.py"))
        assert wait_until(lambda: code_symbols(engine, "edited_in_the_gap") == ["edited_in_the_gap"])
    finally:
        engine.close()


def test_an_install_made_while_following_is_neither_watched_nor_indexed(tree: Path):
    """`npm install` or `python -m venv env` in a repository whose
    .gitignore does not name them: discovery lists none of their untracked
    files, and the watcher neither watches nor walks them."""
    engine = live_engine(tree)
    try:
        write_tree(tree, {"node_modules/pad/index.js": "module.exports = function leftPad() {};\n",
                          "env/pyvenv.cfg": "home = /usr/bin\n",
                          "env/lib/site.py": "def site_function():\n    pass\n"})
        write_tree(tree, {"pkg/sentinel.py": "def sentinel_fn():\n    pass\n"})
        assert wait_until(lambda: engine.store.file_state("pkg/sentinel.py"))
        time.sleep(0.3)  # any batch the install could have made is over
        watched = engine.follower._watched
        assert not any(f.startswith(("node_modules", "env")) for f in watched), watched
        assert set(engine.store.file_states()) == {"pkg/__init__.py", "pkg/core.py", "pkg/use.py",
                                                   "pkg/sentinel.py"}
    finally:
        engine.close()


def test_an_open_buffer_wins_over_the_disk(tree: Path):
    engine = live_engine(tree)
    try:
        engine.set_buffer("pkg/use.py", "def typed_in_the_editor():\n    pass\n")
        (tree / "pkg/use.py").write_text("def written_by_an_agent():\n    pass\n")
        (tree / "pkg/other.py").write_text("def unrelated_sentinel():\n    pass\n")
        assert wait_until(lambda: engine.store.file_state("pkg/other.py"))  # the batch is over
        assert code_symbols(engine, "written_by_an_agent") == []
        assert code_symbols(engine, "typed_in_the_editor")[0] == "typed_in_the_editor"
        assert engine.get("pkg/use.py").provenance == "buffer"
        assert {a.symbol: a.origin for a in engine.recent_activity()}.get(
            "typed_in_the_editor") == "editor"
        engine.close_buffer("pkg/use.py")  # the disk is the truth again
        assert code_symbols(engine, "written_by_an_agent")[0] == "written_by_an_agent"
        assert {a.symbol: a.origin for a in engine.recent_activity()}.get(
            "written_by_an_agent") == "disk"
    finally:
        engine.close()


def test_a_buffer_with_nothing_unsaved_neither_hides_disk_writes_nor_takes_credit_for_them(
        tree: Path):
    """A file an editor only has open (or has saved) is the disk's: a write
    on disk under it was hidden until the buffer closed, and the editor's
    reload of it (a didChange with the disk's new text) was logged as typed."""
    engine = live_engine(tree)
    try:
        engine.set_buffer("pkg/use.py", (tree / "pkg/use.py").read_text())  # opened, unchanged
        agent_text = "def written_by_an_agent():\n    pass\n"
        (tree / "pkg/use.py").write_text(agent_text)
        assert wait_until(lambda: code_symbols(engine, "written_by_an_agent")[:1]
                          == ["written_by_an_agent"])
        assert engine.get("pkg/use.py").text == agent_text
        engine.set_buffer("pkg/use.py", agent_text)  # the editor reloads it from disk
        origins = {a.symbol: (a.edits, a.origin) for a in engine.recent_activity()}
        assert origins["written_by_an_agent"] == (1, "disk") and origins["run"] == (1, "disk")
        # Typed, then saved: nothing unsaved is left, so a later write is followed.
        engine.set_buffer("pkg/use.py", "def typed_then_saved():\n    pass\n")
        (tree / "pkg/use.py").write_text("def typed_then_saved():\n    pass\n")
        engine.file_changed_on_disk("pkg/use.py")  # didSave
        origins = {a.symbol: (a.edits, a.origin) for a in engine.recent_activity()}
        assert origins["typed_then_saved"] == (1, "editor")  # typed, and the save not again
        (tree / "pkg/use.py").write_text("def written_after_the_save():\n    pass\n")
        assert wait_until(lambda: code_symbols(engine, "written_after_the_save")[:1]
                          == ["written_after_the_save"])
        origins = {a.symbol: (a.edits, a.origin) for a in engine.recent_activity()}
        assert origins["written_after_the_save"] == (1, "disk")
    finally:
        engine.close()


def test_answers_check_their_files_even_with_the_watcher_off(tree: Path):
    """Two lines inserted above a function: impact and recall give the new
    bounds at once, never the old ones laid over the new text."""
    engine = live_engine(tree, watch="off")
    try:
        assert engine.status()["watch"]["mode"] == "off"
        old = (tree / "pkg/core.py").read_text()
        (tree / "pkg/core.py").write_text("# one\n# two\n" + old)
        found = analysis.analyze(engine, "compute", with_callers=False)
        assert (found.definitions[0].start_line, found.definitions[0].end_line) == (6, 11)
        assert found.complexity == 3
        hit = engine.recall("compute", ["code"], body=True).hits_by_kind["code"][0]
        lines = (tree / "pkg/core.py").read_text().split("\n")
        assert hit.body == "\n".join(lines[hit.start_line:hit.end_line + 1])
        # A range kept from before the change: -32002 says what works.
        (tree / "pkg/core.py").write_text(old)
        with pytest.raises(StalePointer) as err:
            engine.get("pkg/core.py", 6, 11)
        assert "without startLine/endLine" in err.value.message
        # Refused until the caller holds the current text: a whole-file get (or a new answer).
        with pytest.raises(StalePointer):
            engine.get("pkg/core.py", 4, 9)
        assert engine.get("pkg/core.py").text == old
        assert engine.get("pkg/core.py", 4, 9).text.startswith("def compute(values):")
        # The same file touched and rewritten within one clock tick, same size:
        # hashed, not trusted by its (mtime, size).
        st = os.stat(tree / "pkg/core.py")
        (tree / "pkg/core.py").write_text(old.replace("helper", "HELPER"))
        os.utime(tree / "pkg/core.py", ns=(st.st_atime_ns, st.st_mtime_ns))
        assert "HELPER" in engine.recall("HELPER", ["code"], body=True).hits_by_kind["code"][0].body
    finally:
        engine.close()


def test_a_file_written_as_it_was_indexed_is_hashed_once_then_trusted(tree: Path, monkeypatch):
    """Racy git's rule costs one read, not one per answer: a row made within
    the clock's margin of the file's write is checked by content once the
    margin has passed, and trusted by its (mtime, size) from then on."""
    from ctxls.index import indexer

    engine = live_engine(tree, watch="off")
    try:
        path = tree / "pkg/core.py"
        old_write = time.time_ns() - 10 * indexer.RACY_MARGIN_NS
        os.utime(path, ns=(old_write, old_write))
        engine.refresh_stale(["pkg/core.py"])  # the new stat: rows checked now
        with engine.store.write() as conn:  # as if indexed in the tick it was written
            conn.execute("UPDATE files SET indexed_at = ? WHERE path = 'pkg/core.py'",
                         (old_write // 1_000_000,))
        reads: list[str] = []
        read_source = indexer.read_source
        monkeypatch.setattr(indexer, "read_source",
                            lambda root, rel, limit: reads.append(rel) or read_source(root, rel, limit))
        for _ in range(3):
            assert engine.recall("compute", ["code"]).hits_by_kind["code"][0].path == "pkg/core.py"
        assert reads.count("pkg/core.py") == 1  # the others, written moments ago, are racy still
    finally:
        engine.close()


def test_polling_follows_the_disk_and_says_so(tree: Path):
    engine = live_engine(tree, watch="poll")
    try:
        watch = engine.status()["watch"]
        assert watch["mode"] == "poll" and "poll" in watch["reason"]
        assert watch["polled"] == watch["folders"] == 2  # the root and pkg
        with open(tree / "pkg/core.py", "a") as fh:
            fh.write("\n\ndef seen_by_polling():\n    pass\n")
        assert wait_until(lambda: [a for a in engine.recent_activity()
                                   if a.symbol == "seen_by_polling"], timeout=15)
    finally:
        engine.close()


WATCH_LIMIT_SCRIPT = """
import json, sys, time
from ctxls.index.engine import Engine, EngineOptions
engine = Engine(sys.argv[1], EngineOptions(watch="auto"))
engine.follow_disk()
engine.follower.established.wait(10)
engine.cold_index()
watch = engine.status()["watch"]
for i in range(6):
    with open(f"{sys.argv[1]}/d{i}/m.py", "a") as fh:
        fh.write(f"\\n\\ndef probe_{i}():\\n    pass\\n")
deadline = time.monotonic() + 15
while time.monotonic() < deadline:
    seen = sorted(a.symbol for a in engine.recent_activity() if a.symbol)
    if len(seen) == 6:
        break
    time.sleep(0.1)
print(json.dumps({"watch": watch, "seen": seen}))
engine.close()
"""


def run_with_watch_limit(limit: int, script: Path, root: Path) -> subprocess.CompletedProcess:
    """``script`` on ``root`` in a user namespace of its own whose
    max_inotify_watches is ``limit`` (the kernel counts watches per user namespace)."""
    run = subprocess.run(
        ["unshare", "--user", "--map-root-user", "sh", "-c",
         f'echo {limit} > /proc/sys/user/max_inotify_watches && exec "$0" "$@"',
         sys.executable, str(script), str(root)],
        capture_output=True, text=True, timeout=60)
    assert run.returncode == 0, run.stderr
    return run


NEW_FOLDER_NEAR_THE_LIMIT_SCRIPT = """
import json, os, sys, time
from ctxls.index.engine import Engine, EngineOptions
root = sys.argv[1]
engine = Engine(root, EngineOptions(watch="auto"))
engine.follow_disk()
engine.follower.established.wait(10)
engine.cold_index()
before = engine.status()["watch"]
os.mkdir(f"{root}/d9")
with open(f"{root}/d9/m.py", "w") as fh:
    fh.write("def in_the_new_folder():\\n    pass\\n")
deadline = time.monotonic() + 15
while time.monotonic() < deadline and not engine.store.file_state("d9/m.py"):
    time.sleep(0.05)
deadline = time.monotonic() + 15
while time.monotonic() < deadline and engine.status()["watch"]["folders"] < 6:
    time.sleep(0.05)  # the watch that takes the new folder in is being set up
time.sleep(0.2)
after = engine.status()["watch"]
with open(f"{root}/d9/m.py", "a") as fh:
    fh.write("\\n\\ndef appended_later():\\n    pass\\n")
deadline = time.monotonic() + 15
while time.monotonic() < deadline:
    seen = sorted(a.symbol for a in engine.recent_activity() if a.symbol)
    if "appended_later" in seen:
        break
    time.sleep(0.05)
print(json.dumps({"before": before, "after": after, "seen": seen}))
engine.close()
"""


UNREADABLE_FOLDER_SCRIPT = """
import json, sys
from ctxls.index.engine import Engine, EngineOptions
engine = Engine(sys.argv[1], EngineOptions(watch="auto", embeddings=False))
engine.follow_disk()
engine.follower.established.wait(10)
stats = engine.cold_index()
status = engine.status()
print(json.dumps({"skipped": dict(engine.indexer.skipped), "files": status["files"],
                  "watch": status["watch"], "stats_skipped": stats.skipped}))
engine.close()
"""


def test_a_folder_this_user_may_not_read_is_listed_skipped_not_taken_for_the_watch_limit(
        tmp_path: Path):
    """A tracked file in a folder this user may not read vanished silently
    (its stat failed: taken for a deleted file), and the folder, which
    inotify refuses, was reported as over the platform's watch limit, with
    advice to raise fs.inotify.max_user_watches. Run in a user namespace
    with no uid mapped, where mode 000 holds even for root."""
    root = tmp_path / "perm"
    write_tree(root, {"pkg/open.py": "def readable():\n    pass\n",
                      "secret/hidden.py": "def hidden():\n    pass\n"})
    git(root, "init", "-q")
    git(root, "add", ".")
    script = tmp_path / "perm.py"
    script.write_text(UNREADABLE_FOLDER_SCRIPT)
    (root / "secret").chmod(0)
    try:
        run = subprocess.run(["unshare", "--user", sys.executable, str(script), str(root)],
                             capture_output=True, text=True, timeout=60)
    finally:
        (root / "secret").chmod(0o755)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["files"] == 1 and result["stats_skipped"] == 2
    assert result["skipped"] == {"secret/": "unreadable (Permission denied)",
                                 "secret/hidden.py": "unreadable (Permission denied)"}
    assert result["watch"]["mode"] == "native" and result["watch"]["polled"] == 0, result["watch"]
    assert result["watch"]["reason"] is None and "watch limit" not in run.stderr


@pytest.mark.parametrize("in_git", [True, False], ids=["git", "walk"])
def test_a_folder_this_user_may_not_read_is_named_skipped_with_its_files_unlisted(
        tmp_path: Path, in_git: bool):
    """The untracked files of a folder this user may not read (every file
    of it outside git) were left out of the index without a word: git only
    warned on its stderr, the walk passed over it, and status said nothing
    was skipped. The folder is now skipped `unreadable (…)`, its path
    ending in "/". Run in a user namespace with no uid mapped, where mode
    000 holds even for root."""
    root = tmp_path / "perm"
    write_tree(root, {"pkg/open.py": "def readable():\n    pass\n",
                      "secret/hidden.py": "def hidden():\n    pass\n"})
    if in_git:
        git(root, "init", "-q")
    script = tmp_path / "perm.py"
    script.write_text(UNREADABLE_FOLDER_SCRIPT)
    (root / "secret").chmod(0)
    try:
        run = subprocess.run(["unshare", "--user", sys.executable, str(script), str(root)],
                             capture_output=True, text=True, timeout=60)
    finally:
        (root / "secret").chmod(0o755)
    assert run.returncode == 0, run.stderr
    result = json.loads(run.stdout.strip().splitlines()[-1])
    assert result["files"] == 1
    assert result["skipped"] == {"secret/": "unreadable (Permission denied)"}


def test_a_new_folder_near_the_watch_limit_is_watched_not_polled(tmp_path: Path):
    """The replaced watch stays open until its successor stands: with more
    than half of the platform's watches in use, the successor could not get
    them all and polled the rest for good. It now lets the old one go and
    watches again."""
    root = tmp_path / "near"
    write_tree(root, {f"d{i}/m.py": f"def f{i}():\n    pass\n" for i in range(4)})
    git(root, "init", "-q")
    script = tmp_path / "near.py"
    script.write_text(NEW_FOLDER_NEAR_THE_LIMIT_SCRIPT)
    # 7 paths watched (the root, d0-d3, the git folder and its info folder),
    # 8 with the new folder; 12 allowed, fewer than both watches together.
    result = json.loads(run_with_watch_limit(12, script, root).stdout.strip().splitlines()[-1])
    assert result["before"]["polled"] == 0 and result["after"]["polled"] == 0, result
    assert result["after"]["mode"] == "native" and result["after"]["folders"] == 6
    assert "in_the_new_folder" in result["seen"] and "appended_later" in result["seen"]


EDIT_WHILE_REWATCHING_SCRIPT = """
import json, os, sys, time
from ctxls.index import live
from ctxls.index.engine import Engine, EngineOptions
root, edit_in = sys.argv[1], os.environ["EDIT_IN"]  # "polled" or "watched"
pollers = []  # the folders each StatPoller was made for
watches = []
edited = []


def edit_once() -> None:
    folders = [f for f in os.listdir(root) if f.startswith("d") and f != "d9"]
    polled = {os.path.basename(f) for f in pollers[0]}
    folder = max(f for f in folders if f in polled) if edit_in == "polled" \\
        else min(f for f in folders if f not in polled)
    with open(f"{root}/{folder}/m.py", "a") as fh:
        fh.write("\\n\\ndef edited_while_rewatching():\\n    pass\\n")
    edited.append(folder)


class PollerAfterAnEdit(live.StatPoller):
    # "polled": the first poller is the first watch's; the next one is made
    # while a new folder's watch is set up: the edit lands just before it lists.
    def __init__(self, folders, *args):
        if edit_in == "polled" and pollers and not edited:
            edit_once()
        pollers.append(list(folders))
        super().__init__(folders, *args)


def watch_after_an_edit(*args):
    # "watched": the second watch finds the first holding every watch the
    # limit allows; both go, and the edit lands before the third one stands.
    if edit_in == "watched" and len(watches) == 2 and not edited:
        edit_once()
    watches.append(args[0])
    return real_watch(*args)


real_watch = live.RustNotify
live.StatPoller = PollerAfterAnEdit
live.RustNotify = watch_after_an_edit
engine = Engine(root, EngineOptions(watch="auto"))
engine.follow_disk()
engine.follower.established.wait(10)
engine.cold_index()
os.mkdir(f"{root}/d9")
with open(f"{root}/d9/m.py", "w") as fh:
    fh.write("def in_the_new_folder():\\n    pass\\n")
deadline = time.monotonic() + 15
while time.monotonic() < deadline:
    seen = sorted(a.symbol for a in engine.recent_activity() if a.symbol)
    if {"in_the_new_folder", "edited_while_rewatching"} <= set(seen):
        break
    time.sleep(0.1)
print(json.dumps({"edited": edited, "watches": len(watches), "seen": seen}))
engine.close()
"""


@pytest.mark.parametrize("edit_in", ["polled", "watched"])
def test_an_edit_made_while_a_new_watch_is_set_up_at_the_watch_limit_is_not_lost(
        tmp_path: Path, monkeypatch, edit_in: str):
    """At the watch limit the folders over it are polled, and a new watch
    cannot stand beside the old one: both go and the watch is made again.
    The poller went with the old watch, so the next poller's first listing
    already held a file edited in between ("polled"), and a folder the old
    watch covered was followed by nothing until the next stood ("watched"):
    either edit was never reported. A picture of every folder, taken while
    the old watch stands, is now scanned once its successor stands."""
    root = tmp_path / "rewatch"
    write_tree(root, {f"d{i}/m.py": f"def f{i}():\n    pass\n" for i in range(6)})
    git(root, "init", "-q")
    script = tmp_path / "rewatch.py"
    script.write_text(EDIT_WHILE_REWATCHING_SCRIPT)
    monkeypatch.setenv("EDIT_IN", edit_in)
    result = json.loads(run_with_watch_limit(4, script, root).stdout.strip().splitlines()[-1])
    assert result["edited"], result  # the edit was made where it was meant to be
    assert "in_the_new_folder" in result["seen"], result
    assert "edited_while_rewatching" in result["seen"], result


def test_folders_over_the_platforms_watch_limit_are_polled_and_reported(tmp_path: Path):
    """inotify's limit, for real: a user namespace of its own whose
    max_inotify_watches is 4 (the kernel counts watches per user namespace)."""
    root = tmp_path / "limited"
    write_tree(root, {f"d{i}/m.py": f"def f{i}():\n    pass\n" for i in range(6)})
    git(root, "init", "-q")
    script = tmp_path / "limited.py"
    script.write_text(WATCH_LIMIT_SCRIPT)
    run = run_with_watch_limit(4, script, root)
    result = json.loads(run.stdout.strip().splitlines()[-1])
    watch = result["watch"]
    # 9 folders to watch (the root, d0-d5, the git folder, its info folder
    # for the exclude file), 4 watches allowed.
    assert watch["mode"] == "native" and watch["polled"] == 5, watch
    assert "watch limit was reached: 5 of 9 folders are polled" in watch["reason"]
    assert "watch limit was reached" in run.stderr  # the log says it too
    # Every folder is still followed: the watched ones by events, the rest by polling.
    assert result["seen"] == [f"probe_{i}" for i in range(6)]


def test_a_checkout_is_one_pass_with_progress_and_partial_answers(tmp_path: Path):
    root = tmp_path / "co"
    write_tree(root, {f"mods/m{i:03}.py": f"def old_name_{i}(x):\n    return x\n" for i in range(150)})
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "old")
    git(root, "checkout", "-q", "-b", "renamed")
    write_tree(root, {f"mods/m{i:03}.py": f"# moved down\n\ndef new_name_{i}(x):\n    return x\n"
                      for i in range(150)})
    git(root, "commit", "-q", "-am", "new")
    git(root, "checkout", "-q", "main")
    engine = live_engine(root, ready_wait_s=0.0)
    bursts: list[str] = []
    during: list[tuple[bool, str | None]] = []

    class Progress:
        def report(self, done: int, total: int) -> None:
            if not during:  # a request while the pass runs: partial, and says why
                result = engine.recall("new_name_7", ["code"])
                during.append((result.partial, result.partial_reason))

        def end(self, message: str) -> None:
            bursts.append(message)

    def on_burst(title: str) -> Progress:
        bursts.append(title)
        return Progress()

    engine.on_burst = on_burst
    try:
        passes_before = engine.follower.batches
        git(root, "checkout", "-q", "renamed")
        assert wait_until(lambda: len(bursts) >= 2, timeout=30), bursts
        assert bursts[0] == "a checkout" and bursts[1].startswith("re-indexed after a checkout")
        assert during and during[0][0] is True and "re-indexing after a change on disk" in during[0][1]
        assert engine.follower.batches - passes_before <= 3  # batches, not 150 single updates
        hit = engine.recall("new_name_7", ["code"], body=True).hits_by_kind["code"][0]
        lines = (root / "mods/m007.py").read_text().split("\n")
        assert hit.path == "mods/m007.py" and "def new_name_7(x):" in hit.body
        assert hit.body == "\n".join(lines[hit.start_line:hit.end_line + 1])
        assert engine.symbols("old_name_", "substring") == []
        # What git changed is no work done here: recent activity leaves it out
        # (it listed all 150 files as "0 min ago, disk"), while the edit log
        # keeps it as a checkout's, so a fact anchored to that code reads as stale.
        assert engine.recent_activity(limit=1000) == []
        origins = engine.store.reader().execute(
            "SELECT DISTINCT origin FROM edits WHERE path = 'mods/m007.py'").fetchall()
        assert [r[0] for r in origins] == ["checkout"]
        from ctxls.index.knowledge import _is_stale
        assert _is_stale(engine.store, ("mods/m007.py", None), 0)
        # An edit on disk after it (an agent's) is work again.
        (root / "mods/m008.py").write_text("def new_name_8(x):\n    return x * 2\n")
        assert wait_until(lambda: [(a.id, a.origin) for a in engine.recent_activity()],
                          timeout=10) == [("mods/m008.py", "disk")]
    finally:
        engine.close()


def test_randomized_disk_edits_never_serve_a_stale_range(tmp_path: Path):
    """Insertions above functions, renames, deletions and new files on disk,
    interleaved with recall, impact and get: every range served matches the
    file as it is when the answer comes back."""
    root = tmp_path / "rand"
    rng = random.Random(34)
    names: dict[str, list[str]] = {}  # path -> function names in it
    for f in range(12):
        path = f"src/f{f:02}.py"
        names[path] = [f"fn_{f}_{k}" for k in range(4)]
        write_tree(root, {path: "".join(f"def {n}(a):\n    return a + {k}\n\n\n"
                                        for k, n in enumerate(names[path]))})
    git(root, "init", "-q")
    engine = live_engine(root)
    serial = 1000
    checked = {"recall": 0, "impact": 0, "get": 0}

    def render(path: str, pad: int) -> str:
        return "# pad\n" * pad + "".join(f"def {n}(a):\n    return a + {k}\n\n\n"
                                         for k, n in enumerate(names[path]))

    def current_lines(path: str) -> list[str]:
        return (root / path).read_text().split("\n")

    try:
        for step in range(1000):
            op = rng.random()
            path = rng.choice(sorted(names))
            if op < 0.45:  # lines inserted above the functions
                (root / path).write_text(render(path, rng.randint(1, 6)))
            elif op < 0.7 and names[path]:  # a function renamed
                k = rng.randrange(len(names[path]))
                serial += 1
                names[path][k] = f"renamed_{serial}"
                (root / path).write_text(render(path, rng.randint(0, 3)))
            elif op < 0.8 and len(names) > 4:  # a file deleted
                (root / path).unlink()
                del names[path]
            else:  # a new file
                serial += 1
                new = f"src/new_{serial}.py"
                names[new] = [f"made_{serial}_{k}" for k in range(2)]
                (root / new).write_text(render(new, 0))
            if step % 3:
                continue
            target_path = rng.choice(sorted(names))
            target = rng.choice(names[target_path])
            for hit in engine.recall(target, ["code"], n=5, body=True).hits_by_kind["code"]:
                assert hit.body == "\n".join(current_lines(hit.path)[hit.start_line:hit.end_line + 1])
                got = engine.get(hit.path, hit.start_line, hit.end_line)
                assert got.text == hit.body
                checked["recall"] += 1
                checked["get"] += 1
            if step % 9 == 0:
                # A name written a moment ago may wait for the watcher's batch
                # (impact cannot know which file to check for a name it lacks).
                found = wait_until(lambda: analysis.analyze(engine, target, with_callers=False),
                                   timeout=5)
                assert found is not None, target
                definition = found.definitions[0]
                assert definition.path == target_path
                lines = current_lines(definition.path)
                # The comment lines right above a function are part of it.
                span = lines[definition.start_line:definition.end_line + 1]
                assert f"def {target}(a):" in span and all(
                    line == "# pad" for line in span[:span.index(f"def {target}(a):")])
                assert span[-1].startswith("    return a + ")
                checked["impact"] += 1
        assert checked["recall"] > 300 and checked["impact"] > 30
    finally:
        engine.close()


async def test_the_daemon_follows_the_disk_and_dedupes_the_editors_events(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        status = await s.request("ctxls/status")
        assert status["watch"]["mode"] == "native" and status["watch"]["folders"] >= 3
        # Registered with the client (which watches too) ...
        assert any(r.method == "workspace/didChangeWatchedFiles" for r in s.registrations)
        with open(repo / "pkg/retry.py", "a") as fh:
            fh.write("\n\ndef written_while_the_daemon_runs():\n    return retry_upload(1)\n")

        async def visible():
            result = await s.request("ctxls/recentActivity", {})
            return [i for i in result["items"] if i["symbol"] == "written_while_the_daemon_runs"]

        items = await s.wait_for(visible, timeout=10)
        assert items and items[0]["origin"] == "disk"
        # ... and its report of the same change is not handled twice.
        s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=s.uri("pkg/retry.py"), type=types.FileChangeType.Changed)]))

        async def skipped():
            return (await s.request("ctxls/status"))["watch"]["editorEventsSkipped"] == 1

        assert await s.wait_for(skipped)
        assert (await visible())[0]["edits"] == 1
        # A burst (a formatter rewriting many files) is one pass with work-done progress.
        write_tree(repo, {f"gen/g{i:03}.py": f"def generated_{i}():\n    pass\n"
                          for i in range(300)})

        def burst_ended() -> bool:
            return any(isinstance(r, types.WorkDoneProgressEnd) and "re-indexed after" in (r.message or "")
                       for reports in s.client.progress_reports.values() for r in reports)

        async def indexed():
            return burst_ended() and (await s.request("ctxls/status"))["files"] == 305

        assert await s.wait_for(indexed, timeout=30)
        titles = [r.title for reports in s.client.progress_reports.values() for r in reports
                  if isinstance(r, types.WorkDoneProgressBegin)]
        assert any(t.startswith("ctxls: re-indexing after") for t in titles), titles


async def test_mcp_hosting_its_engine_waits_for_the_first_index_then_follows_the_disk(repo: Path):
    params = StdioServerParameters(
        command=sys.executable, args=["-m", "ctxls.daemon.cli", "mcp", "--root", str(repo),
                                      "--no-daemon"],
        env={**os.environ, "CTXLS_LOG": "ERROR"})
    async with stdio_client(params) as (read, write):
        async with ClientSession(read, write) as session:
            await session.initialize()
            # The first call comes while the first index may still run: it
            # waits for it (readyWaitMs), never "no hits".
            first = await session.call_tool("recall", {"query": "send_prepared",
                                                       "kind": "code", "mode": "lexical"})
            assert "pkg/session.py:16-18  send_prepared" in first.content[0].text
            with open(repo / "pkg/session.py", "a") as fh:
                fh.write("\n\ndef agent_wrote_this():\n    return send_prepared(1, 2, 3)\n")
            deadline = time.monotonic() + 10
            while True:
                found = await session.call_tool("recall", {
                    "query": "agent_wrote_this", "kind": "code", "mode": "lexical"})
                if "pkg/session.py:21-22" in found.content[0].text or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            # Packed with the short function above it, yet the hit for its name is
            # its own lines (issue 39).
            assert "pkg/session.py:21-22  agent_wrote_this" in found.content[0].text
            got = await session.call_tool("get", {"id": "pkg/session.py", "start_line": 21,
                                                  "end_line": 22})
            assert got.content[0].text.endswith(
                "\ndef agent_wrote_this():\n    return send_prepared(1, 2, 3)")
            recent = await session.call_tool("recent_activity", {})
            assert "agent_wrote_this  1 edits (disk)" in recent.content[0].text
            status = await session.call_tool("status", {})
            assert "following" in status.content[0].text


def test_what_a_reset_or_a_move_while_no_daemon_ran_wrote_is_not_recent_activity_a_commit_is(
        tmp_path: Path):
    """A reset or a pull moves the branch, not HEAD's file: the watcher saw
    no checkout and logged git's rewrites as work. A move made while no
    daemon ran was logged as work by the next pass. Both are git's now (the
    reflog says why HEAD moved); a commit is not: its edits were somebody's."""
    root = tmp_path / "moves"
    write_tree(root, {f"mods/m{i}.py": f"def f_{i}():\n    return {i}\n" for i in range(5)})
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "one")
    write_tree(root, {f"mods/m{i}.py": f"def g_{i}():\n    return {i}\n" for i in range(3)})
    git(root, "commit", "-q", "-am", "two")
    engine = live_engine(root)
    try:
        git(root, "reset", "-q", "--hard", "HEAD~1")  # the branch moves; HEAD's file does not
        assert wait_until(lambda: engine.symbols("f_0", "exact"), timeout=10)
        assert engine.recent_activity() == []
        # A commit of an edit: still work done here.
        (root / "mods/m4.py").write_text("def h_4():\n    return 44\n")
        assert wait_until(lambda: engine.symbols("h_4", "exact"), timeout=10)
        git(root, "commit", "-q", "-am", "three")
        work = {(a.id, a.symbol) for a in engine.recent_activity()}
        assert work == {("mods/m4.py", "h_4"), ("mods/m4.py", "f_4")}  # f_4 went, h_4 came
    finally:
        engine.close()
    git(root, "checkout", "-q", "-b", "side", "HEAD~1")  # while no daemon runs
    later = Engine(root, EngineOptions(watch="off"))
    try:
        assert later.index().updated == 1  # m4.py back to f_4
        assert later.symbols("f_4", "exact")
        # The edit made just before (seconds, not minutes) stays work; the checkout's is git's.
        assert {(a.id, a.symbol) for a in later.recent_activity()} == work
        origins = later.store.reader().execute(
            "SELECT origin, count(*) FROM edits WHERE path = 'mods/m4.py' GROUP BY origin").fetchall()
        assert dict(map(tuple, origins)) == {"disk": 2, "checkout": 2}
    finally:
        later.close()


def test_a_name_or_a_file_written_a_moment_ago_is_found_at_once(tree: Path):
    """An agent writes a file and asks about it at once: the watcher's batch
    is not in yet (STEP_MS of quiet, then indexing). A name query that finds
    nothing waits for the watcher to catch up; a path the index has no row
    for is indexed on the spot. Each answered "not found" for 0.1-0.25 s."""
    engine = live_engine(tree)
    try:
        for i in range(3):
            rel = f"pkg/fresh_{i}.py"
            staged = tree / f"pkg/.fresh_{i}.py.tmp"  # as agents write: a rename over
            staged.write_text(f"def freshly_written_{i}(x):\n    return x\n")
            os.replace(staged, tree / rel)
            assert [d.path for d in engine.symbols(f"freshly_written_{i}", "exact")] == [rel]
        (tree / "pkg/late.py").write_text("def late_arrival():\n    return helper(1)\n")
        found = analysis.analyze(engine, "late_arrival", with_callers=False)
        assert found is not None and found.definitions[0].path == "pkg/late.py"
        (tree / "pkg/newer.py").write_text("class Newer:\n    def method(self):\n        pass\n")
        assert engine.get("pkg/newer.py", 0, 0).text == "class Newer:"  # a new file: no -32002
        (tree / "pkg/newest.py").write_text("def outlined():\n    pass\n")
        assert [d.name for d in engine.outline("pkg/newest.py")] == ["outlined"]
        # A name defined nowhere still answers nothing, after one short wait.
        started = time.monotonic()
        assert engine.symbols("defined_nowhere_at_all", "exact") == []
        assert time.monotonic() - started < live.TICK_MS / 1000 + 0.9
    finally:
        engine.close()


def test_recall_locate_and_recent_activity_find_a_file_written_a_moment_ago(tree: Path):
    """An agent writes a file and asks recall or locate about it at once:
    they found older files (nearest rows, nothing partial) and the new one
    only once the watcher's batch was in, since no check of an answer's own
    files can bring in a file it does not point into (recent activity said
    "no recent edits"). They wait for the watcher to catch up first."""
    engine = live_engine(tree)
    try:
        for i in range(3):
            rel = f"pkg/fresh_{i}.py"
            (tree / rel).write_text(f"def helper_platypus_router_{i}(req):\n    return helper(req)\n")
            result = engine.recall(f"helper platypus router {i}", ["code"])
            assert rel in [h.path for h in result.hits_by_kind["code"]], i
            assert result.partial_reason is None or "still being indexed" not in result.partial_reason
        (tree / "pkg/boom.py").write_text(
            "def numbat_bilby(r):\n    raise ValueError('numbat exploded badly')\n")
        located = engine.locate("ValueError: numbat exploded badly\n  in numbat_bilby")
        assert [f.path for f in located][:1] == ["pkg/boom.py"]
        (tree / "pkg/last.py").write_text("def written_last():\n    pass\n")
        assert ("pkg/last.py", "written_last") in [(a.id, a.symbol) for a in engine.recent_activity()]
    finally:
        engine.close()


def test_a_line_range_from_before_a_change_is_refused_however_late_it_comes(tree: Path):
    """`get` with a range refused (-32002) only when the get itself found
    the file changed: a range kept until the watcher had indexed the change
    silently gave other lines, and lines the caller had just written itself
    were refused for a moment. Now a range is refused exactly when the file
    is no longer the text the latest answer pointing into it came from."""
    engine = live_engine(tree)
    try:
        found = engine.symbols("compute", "exact")
        assert [(d.path, d.start_line, d.end_line) for d in found] == [("pkg/core.py", 4, 9)]
        new = "import os\nimport sys\n\n" + (tree / "pkg/core.py").read_text()
        (tree / "pkg/core.py").write_text(new)
        assert wait_until(lambda: engine.store.file_state("pkg/core.py").hash == content_hash(new))
        with pytest.raises(StalePointer):  # the watcher has indexed the change: still refused
            engine.get("pkg/core.py", 4, 9)
        assert engine.get("pkg/core.py").text == new
        assert engine.get("pkg/core.py", 7, 12).text.startswith("def compute(values):")
        # A file no answer pointed into, written a moment ago: its current lines.
        (tree / "pkg/use.py").write_text("".join(f"value_{i} = {i}\n" for i in range(10)))
        assert engine.get("pkg/use.py", 1, 2).text == "value_1 = 1\nvalue_2 = 2"
    finally:
        engine.close()


def test_a_tracked_folder_removed_and_brought_back_later_is_followed_again(tree: Path):
    """git lists a deleted tracked file until the deletion is staged: the gone
    folder stayed "watched", so when it came back (`git checkout -- pkg`, a
    copy) its files were neither indexed nor followed."""
    git(tree, "add", "-A")
    git(tree, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "init")
    engine = live_engine(tree)
    try:
        shutil.rmtree(tree / "pkg")
        assert wait_until(lambda: engine.store.file_state("pkg/core.py") is None)
        time.sleep(0.3)  # the next watch stands without the folder
        git(tree, "checkout", "--", "pkg")
        assert wait_until(lambda: engine.store.file_state("pkg/core.py") is not None)
        with open(tree / "pkg/core.py", "a") as fh:
            fh.write("\n\ndef edited_after_coming_back():\n    pass\n")
        assert wait_until(lambda: engine.store.file_state("pkg/core.py").hash
                          == content_hash((tree / "pkg/core.py").read_text()))
    finally:
        engine.close()


def test_files_made_later_in_empty_nested_folders_are_followed(tree: Path):
    """`mkdir -p a/b/c`, then a file in a/b/c a while later: only `a` was
    watched (an empty folder is in no listing), so the file was missed."""
    engine = live_engine(tree)
    try:
        (tree / "gen/b/c").mkdir(parents=True)
        (tree / "pkg/x/y").mkdir(parents=True)
        time.sleep(0.5)  # the folders' batch handled, the next watch standing
        write_tree(tree, {"gen/b/c/deep.py": "def deep_later():\n    pass\n",
                          "pkg/x/y/deeper.py": "def deeper_later():\n    pass\n"})
        assert wait_until(lambda: engine.store.file_state("gen/b/c/deep.py"))
        assert wait_until(lambda: engine.store.file_state("pkg/x/y/deeper.py"))
    finally:
        engine.close()


def test_a_change_made_while_a_pass_runs_is_not_undone_by_it(tree: Path, monkeypatch):
    """A pass writes its reads a batch or two after making them: a file the
    watcher re-read (or dropped) meanwhile got the pass's older read laid
    over it (a daemon starting while somebody works: edits lost, deleted
    files back)."""
    original = Indexer._write_batch
    raced = []

    def edited_meanwhile(self, batch, log_edits, rewrite=False):
        if not raced:  # every file is read by now; its rows are not written yet
            raced.append(True)
            (tree / "pkg/core.py").write_text("def rewritten_meanwhile():\n    pass\n")
            (tree / "pkg/use.py").unlink()
            self.reindex_from_disk("pkg/core.py")  # what the watcher does with its events
            self.reindex_from_disk("pkg/use.py")
        return original(self, batch, log_edits, rewrite)

    monkeypatch.setattr(Indexer, "_write_batch", edited_meanwhile)
    engine = Engine(tree, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        assert raced
        assert engine.store.file_state("pkg/core.py").hash == content_hash(
            "def rewritten_meanwhile():\n    pass\n")
        assert engine.store.file_state("pkg/use.py") is None
        assert [d.path for d in engine.symbols("rewritten_meanwhile", "exact")] == ["pkg/core.py"]
        assert engine.symbols("compute", "exact") == []
    finally:
        engine.close()


def test_a_checkout_during_the_first_pass_is_not_recent_activity(tree: Path, monkeypatch):
    """The edit log had no commit to reconcile with until the first pass
    ended, so a checkout during it was logged as the user's disk edits of
    every file it changed that the pass had read."""
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "init")
    git(tree, "checkout", "-qb", "other")
    (tree / "pkg/core.py").write_text("def other_branch_fn():\n    pass\n")
    git(tree, "commit", "-qam", "other")
    git(tree, "checkout", "-q", "-")
    original = Indexer._write_batch
    checked_out = []

    def checkout_meanwhile(self, batch, log_edits, rewrite=False):
        if not checked_out:  # every file is read by now; its rows are not written yet
            checked_out.append(True)
            git(tree, "checkout", "-q", "other")
        return original(self, batch, log_edits, rewrite)

    monkeypatch.setattr(Indexer, "_write_batch", checkout_meanwhile)
    engine = Engine(tree, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        assert checked_out
        engine.disk_changed([], head_moved=True)  # the watcher's batch of the checkout
        assert [d.path for d in engine.symbols("other_branch_fn", "exact")] == ["pkg/core.py"]
        assert engine.recent_activity() == []
    finally:
        engine.close()


def test_a_file_name_that_is_not_utf8_does_not_end_following_the_disk(tree: Path):
    """watchfiles cannot report a path that is not UTF-8: it raised for it,
    with the rest of its batch, on that and every later call, and the
    watcher thread ended. Every later edit was missed until a restart and
    status said the watch was off. Now that watch is replaced, every file is
    checked, and following goes on."""
    engine = live_engine(tree)
    try:
        with open(os.path.join(os.fsencode(tree), b"pkg", b"bad\xffname.py"), "w") as fh:
            fh.write("x = 1\n")
        with open(tree / "pkg/core.py", "a") as fh:  # in the same batch: lost with it
            fh.write("\n\ndef written_beside_the_odd_name():\n    return 1\n")
        assert wait_until(lambda: engine.store.file_state("pkg/core.py")
                          and [a for a in engine.recent_activity()
                               if a.symbol == "written_beside_the_odd_name"])
        write_tree(tree, {"pkg/later.py": "def written_after_it():\n    return 2\n"})
        assert wait_until(lambda: [a for a in engine.recent_activity()
                                   if a.symbol == "written_after_it"])
        assert engine.status()["watch"]["mode"] == "native"
    finally:
        engine.close()


def test_a_folder_name_that_is_not_utf8_is_left_unwatched_and_following_goes_on(tree: Path):
    """watchfiles cannot take a path that is not UTF-8: a Latin-1 folder
    (an old archive's `docs/r\xe9sum\xe9/`), made while following or there
    at the start, ended the watcher for good (status `watch: off`). No file
    in it is indexed, so it is left out of the watch and the rest is followed."""
    odd = os.path.join(os.fsencode(tree), b"docs", b"r\xe9sum\xe9")
    engine = live_engine(tree)
    try:
        os.makedirs(odd)
        with open(os.path.join(odd, b"notes.py"), "w") as fh:
            fh.write("def in_the_odd_folder():\n    pass\n")
        write_tree(tree, {"docs/readme.md": "# Notes\n"})
        assert wait_until(lambda: engine.store.file_state("docs/readme.md"))
        write_tree(tree, {"pkg/later.py": "def written_after_the_odd_folder():\n    pass\n"})
        assert wait_until(lambda: [a for a in engine.recent_activity()
                                   if a.symbol == "written_after_the_odd_folder"])
        assert engine.status()["watch"]["mode"] == "native"
    finally:
        engine.close()
    engine = live_engine(tree)  # the folder there when following starts
    try:
        write_tree(tree, {"pkg/again.py": "def written_after_a_restart():\n    pass\n"})
        assert wait_until(lambda: [a for a in engine.recent_activity()
                                   if a.symbol == "written_after_a_restart"])
        assert engine.status()["watch"]["mode"] == "native"
    finally:
        engine.close()


def test_a_file_git_starts_or_stops_tracking_against_its_ignore_rules_is_followed(tree: Path):
    """`git add -f` of an ignored file lists it, `git rm --cached` of an
    ignored tracked one lists it no more: only git's index changes, which
    was not followed, so neither came or went until another change."""
    write_tree(tree, {"build/conf.py": "def force_added_fn():\n    pass\n",
                      "pkg/secret.py": "def tracked_secret_fn():\n    pass\n"})
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "init")
    (tree / ".gitignore").write_text("build/\npkg/secret.py\n")  # tracked: still listed
    engine = live_engine(tree)
    try:
        assert engine.store.file_state("build/conf.py") is None
        assert engine.store.file_state("pkg/secret.py") is not None
        git(tree, "add", "-f", "build/conf.py")
        assert wait_until(lambda: engine.store.file_state("build/conf.py"))
        git(tree, "rm", "-q", "--cached", "pkg/secret.py")
        assert wait_until(lambda: engine.store.file_state("pkg/secret.py") is None)
        with open(tree / "build/conf.py", "a") as fh:  # its folder is watched now
            fh.write("\n\ndef appended_to_the_forced_file():\n    pass\n")
        assert wait_until(lambda: [a for a in engine.recent_activity()
                                   if a.symbol == "appended_to_the_forced_file"])
    finally:
        engine.close()


def test_a_repository_removed_and_cloned_again_at_its_path_is_followed(tree: Path, tmp_path: Path):
    """`rm -rf repo && git clone URL repo` under a running engine: every
    watch went with the old folders, and the store vanished for a moment (a
    read failing then ended the watcher). The new tree is watched."""
    git(tree, "add", "-A")
    git(tree, "commit", "-qm", "init")
    upstream = tmp_path / "upstream"
    subprocess.run(["git", "clone", "-q", str(tree), str(upstream)], check=True)
    engine = live_engine(tree)
    try:
        shutil.rmtree(tree)
        subprocess.run(["git", "clone", "-q", str(upstream), str(tree)], check=True)
        assert wait_until(lambda: engine.store.file_state("pkg/core.py"), timeout=20)
        write_tree(tree, {"later.py": "def written_in_the_new_clone():\n    pass\n"})
        assert wait_until(lambda: engine.store.file_state("later.py"), timeout=20)
        assert engine.status()["watch"]["mode"] == "native"
    finally:
        engine.close()


def committed(root: Path, files: dict[str, str]) -> Path:
    """A repository at ``root`` holding ``files``, committed on main."""
    write_tree(root, files)
    git(root, "init", "-q", "-b", "main")
    git(root, "add", "-A")
    git(root, "commit", "-qm", "init")
    return root


def with_submodule(app: Path, lib: Path, folder: str) -> None:
    """``lib`` added to ``app`` as the submodule at ``folder``, committed."""
    git(app, "-c", "protocol.file.allow=always", "submodule", "add", "-q", str(lib), folder)
    git(app, "commit", "-qm", "submodule")


def test_a_submodule_initialised_while_following_is_indexed_and_followed(tmp_path: Path):
    """A clone without --recursive, then `git submodule update --init`: the
    submodule's empty folder was no listed folder, so nothing watched it,
    and git filled a folder that was already there (no event above it) with
    HEAD unmoved: its files were never indexed. Its folder is watched now, a
    repository coming is a checkout (what git wrote there is not recent
    activity), and its HEAD is followed from then on."""
    lib = committed(tmp_path / "lib", {"plat.py": "def platypus_v1():\n    return 1\n",
                                       "deep/er.py": "def deeper_in_the_submodule():\n    pass\n"})
    git(lib, "tag", "v1")
    write_tree(lib, {"plat.py": "def submodule_platypus_fn():\n    return 42\n"})
    git(lib, "commit", "-qam", "v2")
    app = committed(tmp_path / "app", {"main.py": "def app_main():\n    return 1\n"})
    with_submodule(app, lib, "vendor/lib")
    root = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(app), str(root))
    engine = live_engine(root)
    try:
        assert "vendor/lib" in engine.follower._watched
        git(root, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
        assert wait_until(lambda: code_symbols(engine, "submodule_platypus_fn")[:1]
                          == ["submodule_platypus_fn"])
        assert wait_until(lambda: engine.store.file_state("vendor/lib/deep/er.py"))
        git(root / "vendor/lib", "checkout", "-q", "v1")
        assert wait_until(lambda: engine.symbols("platypus_v1", "exact"))
        assert engine.recent_activity() == []
        # Followed from now on, its sub-folders too.
        write_tree(root, {"vendor/lib/deep/later.py": "def written_in_the_submodule():\n    pass\n"})
        assert wait_until(lambda: engine.store.file_state("vendor/lib/deep/later.py"))
    finally:
        engine.close()


def test_what_a_submodule_initialised_later_wrote_is_not_recent_activity(tmp_path: Path):
    """`git submodule update --init` writes its files after the submodule's
    .git: a batch of them handled file by file logged them as new files on
    disk, and the first reconciling only took the submodule's HEAD down. A
    repository that comes while a process follows the root has every file
    it checked out counted as git's."""
    lib = committed(tmp_path / "lib", {f"m{i}.py": f"def lib_fn_{i}():\n    return {i}\n"
                                       for i in range(3)})
    app = committed(tmp_path / "app", {"main.py": "def app_main():\n    return 1\n"})
    with_submodule(app, lib, "vendor/lib")
    root = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(app), str(root))
    engine = Engine(root, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        git(root, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
        engine.disk_changed([f"vendor/lib/m{i}.py" for i in range(3)])  # an editor's events
        assert len(engine.recent_activity()) == 3  # no whole pass has listed the submodule yet
        engine.index()
        assert engine.recent_activity() == []
    finally:
        engine.close()


def test_a_submodule_initialised_then_moved_before_it_is_reconciled_is_not_recent_activity(
        tmp_path: Path):
    """`git submodule update --init` whose files' batches came after the pass
    its .git started (so no whole pass listed the submodule), then a checkout
    in it: the first reconciling, at the checkout's pass, counted as git's
    only the edits since the checkout wrote each file, so the init's edit of
    a file the checkout wrote again was listed as the user's (the flaky
    test_a_submodule_initialised_while_following_is_indexed_and_followed)."""
    lib = committed(tmp_path / "lib", {"plat.py": "def platypus_v1():\n    return 1\n",
                                       "other.py": "def other_fn():\n    pass\n"})
    git(lib, "tag", "v1")
    write_tree(lib, {"plat.py": "def submodule_platypus_fn():\n    return 42\n"})
    git(lib, "commit", "-qam", "v2")
    app = committed(tmp_path / "app", {"main.py": "def app_main():\n    return 1\n"})
    with_submodule(app, lib, "vendor/lib")
    root = tmp_path / "clone"
    git(tmp_path, "clone", "-q", str(app), str(root))
    engine = Engine(root, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        git(root, "-c", "protocol.file.allow=always", "submodule", "update", "-q", "--init")
        engine.disk_changed(["vendor/lib/plat.py", "vendor/lib/other.py"])  # the late batch
        written = (root / "vendor/lib/plat.py").stat().st_mtime_ns
        assert wait_until(lambda: time.time_ns() // 1_000_000 > written // 1_000_000)
        git(root / "vendor/lib", "checkout", "-q", "v1")
        engine.disk_changed([], head_moved=True)  # the checkout's pass
        assert engine.symbols("platypus_v1", "exact")
        assert engine.recent_activity() == []
    finally:
        engine.close()


def test_what_a_checkout_wrote_logged_after_the_next_checkout_was_found_is_not_recent_activity(
        tmp_path: Path):
    """Two checkouts a moment apart, the first one's batch handled after its
    move was found: the second move's record replaced the first's, so the
    first write's edits of a file the second wrote again stayed the user's."""
    root = committed(tmp_path / "repo", {"f.py": "def on_main():\n    pass\n",
                                         "g.py": "def g_main():\n    pass\n"})
    git(root, "checkout", "-qb", "a")
    write_tree(root, {"f.py": "def on_branch_a():\n    pass\n"})
    git(root, "commit", "-qam", "a")
    git(root, "checkout", "-qb", "b", "main")
    write_tree(root, {"f.py": "def on_branch_b():\n    pass\n"})
    git(root, "commit", "-qam", "b")
    git(root, "checkout", "-q", "main")
    engine = Engine(root, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        git(root, "checkout", "-q", "a")
        engine.log_git_writes()  # the move found before the watcher's batch of its files
        engine.disk_changed(["f.py"])
        written = (root / "f.py").stat().st_mtime_ns
        assert wait_until(lambda: time.time_ns() // 1_000_000 > written // 1_000_000)
        git(root, "checkout", "-q", "b")
        engine.disk_changed([], head_moved=True)
        assert engine.symbols("on_branch_b", "exact")
        assert engine.recent_activity() == []
        # An edit of the user's between two moves stays the user's.
        write_tree(root, {"g.py": "def g_main():\n    return 'mine'\n"})
        engine.disk_changed(["g.py"])
        git(root, "checkout", "-q", "a")
        engine.disk_changed([], head_moved=True)
        assert [(a.id, a.symbol) for a in engine.recent_activity()] == [("g.py", "g_main")]
    finally:
        engine.close()


@pytest.mark.parametrize("asked_during_the_conflict", [False, True])
def test_what_a_merge_brought_in_is_not_recent_activity_once_its_conflicts_are_committed(
        tmp_path: Path, asked_during_the_conflict: bool):
    """`git merge` stopping on a conflict, the conflict resolved, then `git
    commit`: HEAD moved by a commit ("commit (merge)"), so every file the
    merge wrote (the other branch's work) stayed listed as the user's own
    edits, during the conflict too (HEAD unmoved). What the merge took whole
    from the branch merged in is git's; the resolution is the user's."""
    root = committed(tmp_path / "repo", {"f.py": "def shared():\n    return 0\n",
                                         "g.py": "def g_main():\n    pass\n"})
    git(root, "checkout", "-qb", "other")
    write_tree(root, {"f.py": "def shared():\n    return 'other'\n",
                      "g.py": "def g_main():\n    pass\n\n\ndef their_work():\n    pass\n"})
    git(root, "commit", "-qam", "other")
    git(root, "checkout", "-q", "main")
    write_tree(root, {"f.py": "def shared():\n    return 'main'\n"})
    git(root, "commit", "-qam", "main")
    engine = Engine(root, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        with pytest.raises(subprocess.CalledProcessError):  # f.py conflicts
            git(root, "merge", "-q", "other")
        engine.disk_changed(["f.py", "g.py"])
        if asked_during_the_conflict:  # HEAD unmoved yet
            assert {a.id for a in engine.recent_activity()} == {"f.py"}
        write_tree(root, {"f.py": "def shared():\n    return 'both'\n\n\ndef my_resolution():\n"
                                  "    pass\n"})
        engine.disk_changed(["f.py"])
        git(root, "commit", "-qam", "merged")
        engine.disk_changed([], head_moved=True)
        assert {a.id for a in engine.recent_activity()} == {"f.py"}
        assert "my_resolution" in {a.symbol for a in engine.recent_activity()}
    finally:
        engine.close()


def test_what_a_cherry_pick_stopped_on_a_conflict_wrote_is_not_recent_activity(tmp_path: Path):
    """`git cherry-pick` stopping on a conflict leaves HEAD where it was, and
    `--continue` moves it by a commit: the picked commit's other files,
    written by git, were listed as the user's edits."""
    root = committed(tmp_path / "repo", {"f.py": "def shared():\n    return 0\n",
                                         "g.py": "def g_main():\n    pass\n"})
    git(root, "checkout", "-qb", "other")
    write_tree(root, {"f.py": "def shared():\n    return 'other'\n",
                      "g.py": "def g_main():\n    pass\n\n\ndef picked_work():\n    pass\n"})
    git(root, "commit", "-qam", "other")
    git(root, "checkout", "-q", "main")
    write_tree(root, {"f.py": "def shared():\n    return 'main'\n"})
    git(root, "commit", "-qam", "main")
    engine = Engine(root, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        with pytest.raises(subprocess.CalledProcessError):  # f.py conflicts
            git(root, "cherry-pick", "other")
        engine.disk_changed(["f.py", "g.py"])
        assert {a.id for a in engine.recent_activity()} == {"f.py"}
        write_tree(root, {"f.py": "def shared():\n    return 'both'\n"})
        engine.disk_changed(["f.py"])
        git(root, "add", "f.py")
        git(root, "-c", "core.editor=true", "cherry-pick", "--continue")
        engine.disk_changed([], head_moved=True)
        assert {a.id for a in engine.recent_activity()} == {"f.py"}
    finally:
        engine.close()


def test_what_a_checkout_wrote_is_not_recent_activity_when_a_commit_follows_it_in_one_batch(
        tmp_path: Path):
    """`git checkout other && edit && git commit -am …` (an agent's script)
    handled as one batch: only the reflog's latest entry was read, a commit,
    so what the checkout wrote was listed as the user's edits. The latest
    move git made since the reconciled commit is read; the commit's own
    edit stays the user's."""
    root = committed(tmp_path / "repo", {"f.py": "def on_main():\n    pass\n",
                                         "g.py": "def g_main():\n    pass\n"})
    git(root, "checkout", "-qb", "other")
    write_tree(root, {"f.py": "def on_other_branch():\n    pass\n"})
    git(root, "commit", "-qam", "other")
    git(root, "checkout", "-q", "main")
    engine = Engine(root, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        git(root, "checkout", "-q", "other")
        write_tree(root, {"g.py": "def g_main():\n    return 'mine'\n"})
        git(root, "commit", "-qam", "mine")
        engine.disk_changed(["f.py", "g.py"], head_moved=True)
        assert [(a.id, a.symbol) for a in engine.recent_activity()] == [("g.py", "g_main")]
    finally:
        engine.close()


def test_what_a_checkout_wrote_under_an_unsaved_buffer_is_not_recent_activity_when_it_closes(
        tmp_path: Path, monkeypatch):
    """An unsaved buffer over a file a checkout changes on disk, closed
    without saving after the checkout's reconciling window: going back to the
    disk's text logs what the checkout wrote (a disk edit dated by its write),
    which nothing reconciled any more, so it was listed as the user's work
    and the buffer's own edit showed origin "disk"."""
    monkeypatch.setattr(engine_module, "CHECKOUT_WINDOW_MS", 0)  # the window over at once
    root = committed(tmp_path / "repo", {"f.py": "def on_main():\n    pass\n"})
    git(root, "checkout", "-qb", "other")
    write_tree(root, {"f.py": "def on_other_branch():\n    pass\n"})
    git(root, "commit", "-qam", "other")
    git(root, "checkout", "-q", "main")
    engine = Engine(root, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        engine.set_buffer("f.py", "def on_main():\n    pass\n\n\ndef typing_here():\n    pass\n")
        git(root, "checkout", "-q", "other")
        engine.disk_changed([], head_moved=True)
        time.sleep(0.01)  # the clock past the window's end
        engine.recent_activity()  # a call after the window
        engine.close_buffer("f.py")
        assert [(a.id, a.symbol, a.origin) for a in engine.recent_activity()] == [
            ("f.py", "typing_here", "editor")]
    finally:
        engine.close()


def test_new_files_in_a_submodule_are_judged_by_its_own_ignore_rules(tmp_path: Path):
    """git refuses to judge a path inside a submodule from the superproject
    (128, "is in submodule"): the whole batch fell back to the .gitignore
    files from the root down, so the submodule's info/exclude was missed,
    the superproject's .gitignore was applied inside it, and the
    superproject's own info/exclude was missed for the rest of the batch."""
    lib = committed(tmp_path / "lib", {"l.py": "def lib_fn():\n    return 1\n"})
    app = committed(tmp_path / "app", {"main.py": "def app_main():\n    return 1\n",
                                       ".gitignore": "*.tmp.py\nbuild/\n"})
    with_submodule(app, lib, "vendor/lib")
    (app / ".git/modules/vendor/lib/info").mkdir(parents=True, exist_ok=True)
    (app / ".git/modules/vendor/lib/info/exclude").write_text("secret_*.py\n")
    (app / ".git/info/exclude").write_text("scratch_*.py\n")
    # A clone in a folder the superproject ignores: its files are ignored, whatever its rules.
    write_tree(app, {"build/clone/out.py": "def built():\n    pass\n"})
    git(app / "build/clone", "init", "-q")
    assert discovery.ignored_paths(app, ["vendor/lib/secret_a.py", "vendor/lib/y.tmp.py",
                                         "vendor/lib/", "scratch_1.py", "kept.py",
                                         "build/clone/out.py"]) == {
        "vendor/lib/secret_a.py", "scratch_1.py", "build/clone/out.py"}
    engine = live_engine(app)
    try:
        write_tree(app, {"vendor/lib/secret_a.py": "def sub_secret_fn():\n    pass\n",
                         "vendor/lib/y.tmp.py": "def sub_tmp_fn():\n    pass\n",
                         "scratch_1.py": "def top_scratch_fn():\n    pass\n"})
        assert wait_until(lambda: engine.store.file_state("vendor/lib/y.tmp.py"))
        time.sleep(0.3)  # the batch is over
        assert engine.store.file_state("vendor/lib/secret_a.py") is None
        assert engine.store.file_state("scratch_1.py") is None
    finally:
        engine.close()


def test_what_git_wrote_in_a_submodule_or_a_clone_inside_is_not_recent_activity(tmp_path: Path):
    """`git submodule update` after a checkout, or a checkout in a clone
    inside: the files git wrote there were logged as the user's own edits,
    as only the root's HEAD was followed. Each repository inside is
    reconciled as the root is, also when its files' batch is handled after
    the move was found, and when it moved while no daemon ran."""
    lib = committed(tmp_path / "lib", {f"m{i}.py": f"def lib_fn_{i}():\n    return {i}\n"
                                       for i in range(4)})
    git(lib, "tag", "v1")
    write_tree(lib, {f"m{i}.py": f"def lib_fn_{i}_v2():\n    return {i}\n" for i in range(4)})
    git(lib, "commit", "-qam", "v2")
    app = committed(tmp_path / "app", {"main.py": "def app_main():\n    return 1\n"})
    with_submodule(app, lib, "vendor/lib")
    git(app / "vendor/lib", "checkout", "-q", "v1")
    git(app, "commit", "-qam", "submodule at v1")
    git(app, "checkout", "-qb", "upgrade")
    git(app / "vendor/lib", "checkout", "-q", "main")
    git(app, "commit", "-qam", "submodule at v2")
    git(app, "checkout", "-q", "main")
    git(app, "-c", "protocol.file.allow=always", "submodule", "update", "-q")
    git(app, "clone", "-q", str(lib), "tools")  # a clone inside, untracked
    engine = live_engine(app)
    try:
        with open(app / "main.py", "a") as fh:
            fh.write("\n\ndef my_real_work():\n    return 0\n")
        assert wait_until(lambda: engine.symbols("my_real_work", "exact"))
        git(app, "checkout", "-q", "upgrade")
        git(app, "-c", "protocol.file.allow=always", "submodule", "update", "-q")
        engine.log_git_writes()  # the move found before the watcher's batch of its files
        git(app / "tools", "checkout", "-q", "v1")

        def swapped() -> bool:  # the submodule at v2, the clone at v1
            return all({d.path for d in engine.symbols(f"lib_fn_{i}_v2", "exact")}
                       == {f"vendor/lib/m{i}.py"} and {d.path for d in engine.symbols(
                           f"lib_fn_{i}", "exact")} == {f"tools/m{i}.py"} for i in range(4))

        assert wait_until(swapped)
        assert [(a.id, a.symbol) for a in engine.recent_activity()] == [("main.py", "my_real_work")]
    finally:
        engine.close()
    git(app / "tools", "checkout", "-q", "main")  # while no daemon runs
    later = Engine(app, EngineOptions(watch="off"))
    try:
        assert later.index().updated == 4
        assert [(a.id, a.symbol) for a in later.recent_activity()] == [("main.py", "my_real_work")]
    finally:
        later.close()


def test_a_folder_arriving_whole_leaves_its_installed_dependencies_out(tree: Path):
    """`cp -r proj` of a project holding a .venv, node_modules or a virtual
    environment of any name: the new folder's walk skipped only version
    control's folders, so their files were indexed (and their sub-folders
    watched), which discovery never does."""
    project = tree.parent / "proj"
    write_tree(project, {"main.py": "def proj_main():\n    pass\n",
                         ".venv/lib/v.py": "def venv_only_thing():\n    pass\n",
                         "myenv/pyvenv.cfg": "home = /usr\n",
                         "myenv/m.py": "def myenv_only_thing():\n    pass\n",
                         "node_modules/dep/index.js": "function nodeModulesOnlyThing() {}\n",
                         "src/app.py": "def proj_app():\n    pass\n"})
    engine = live_engine(tree)
    try:
        shutil.copytree(project, tree / "proj")
        assert wait_until(lambda: engine.store.file_state("proj/main.py")
                          and engine.store.file_state("proj/src/app.py"))
        time.sleep(0.3)  # the catch-up is over
        assert not {p for p in engine.store.file_states() if p.startswith("proj/")} - {
            "proj/main.py", "proj/src/app.py"}
        watched = engine.follower._watched | engine.follower._new_folders
        assert {f for f in watched if f.startswith("proj")} == {"proj", "proj/src"}
    finally:
        engine.close()


@pytest.mark.parametrize("configured", [True, False], ids=["core.excludesFile", "XDG default"])
def test_edits_to_the_global_excludes_file_and_an_inner_repositorys_exclude_file_are_followed(
        tree: Path, monkeypatch, configured: bool):
    """Only the root repository's HEAD and info/exclude were watched: a
    folder git's global excludes file (core.excludesFile, by default
    $XDG_CONFIG_HOME/git/ignore) or a clone's own info/exclude came to
    ignore kept being served."""
    home = tree.parent / "home"
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("XDG_CONFIG_HOME", str(home / "xdg"))
    excludes = home / "my_excludes" if configured else home / "xdg/git/ignore"
    write_tree(home, {".gitconfig": f"[core]\n\texcludesFile = {excludes}\n" if configured else "",
                      str(excludes.relative_to(home)): ""})
    write_tree(tree, {"scratch/s.py": "def scratch_only_fn():\n    return 2\n",
                      "deps/lib/lib_mod.py": "def lib_fn():\n    pass\n",
                      "deps/lib/lib_extra.py": "def lib_extra():\n    pass\n"})
    git(tree / "deps/lib", "init", "-q")
    engine = live_engine(tree)
    try:
        assert engine.store.file_state("scratch/s.py") and engine.store.file_state("deps/lib/lib_extra.py")
        excludes.write_text("scratch/\n")
        assert wait_until(lambda: engine.store.file_state("scratch/s.py") is None)
        (tree / "deps/lib/.git/info/exclude").write_text("lib_extra.py\n")
        assert wait_until(lambda: engine.store.file_state("deps/lib/lib_extra.py") is None)
        excludes.write_text("")
        assert wait_until(lambda: engine.store.file_state("scratch/s.py"))
        assert engine.store.file_state("deps/lib/lib_mod.py")
    finally:
        engine.close()


def import_rows(engine: Engine) -> list[tuple]:
    return sorted(tuple(r) for r in engine.store.reader().execute(
        "SELECT f.path, i.spec, i.line, i.target FROM imports i JOIN files f ON f.id = i.file_id"))


def cold_import_rows(root: Path, copy: Path) -> list[tuple]:
    """The import rows a cold index of ``root``'s files as they are now makes."""
    shutil.copytree(root, copy, ignore=shutil.ignore_patterns(".ctxls", ".git"))
    engine = Engine(copy, EngineOptions(watch="off", embeddings=False))
    try:
        engine.cold_index()
        return import_rows(engine)
    finally:
        engine.close()


def related_out(engine: Engine, path: str) -> list[str]:
    return sorted(r.path for r in engine.related(path, "out")[0])


def test_imports_of_a_file_deleted_or_made_while_following_resolve_as_a_cold_index_would(
        tree: Path, tmp_path: Path):
    """An unchanged file importing a file deleted, or one made, while the
    daemon ran kept its old resolution (crash probe): ctxls/related named the
    deleted file and never the new one, ctxls/node counted the deleted one."""
    write_tree(tree, {"pkg/a.py": "from pkg.b import helper_b\nfrom pkg.c import helper_c\n\n\n"
                                  "def use():\n    return helper_b() + helper_c()\n",
                      "pkg/b.py": "def helper_b():\n    return 1\n"})
    engine = live_engine(tree)
    try:
        assert related_out(engine, "pkg/a.py") == ["pkg/b.py"]
        (tree / "pkg/b.py").unlink()
        write_tree(tree, {"pkg/c.py": "def helper_c():\n    return 2\n"})
        assert wait_until(lambda: related_out(engine, "pkg/a.py") == ["pkg/c.py"]), \
            related_out(engine, "pkg/a.py")
        assert engine.file_node("pkg/a.py").imports_out == 1
        assert [r.path for r in engine.related("pkg/c.py", "in")[0]] == ["pkg/a.py"]
        assert import_rows(engine) == cold_import_rows(tree, tmp_path / "cold")
    finally:
        engine.close()


def test_imports_after_a_checkout_that_deletes_and_makes_imported_files_match_a_cold_index(
        tmp_path: Path):
    """The same through a checkout's pass: importers git left unchanged kept
    the deleted files as targets and missed the new ones; after a checkout
    this was the only difference from a cold index."""
    root = tmp_path / "co"
    write_tree(root, {"pkg/__init__.py": "", "pkg/a.py": "from pkg.b import helper\nfrom pkg import c\n",
                      "pkg/b.py": "def helper():\n    return 1\n",
                      "web/main.ts": "import { h } from './helpers';\n",
                      "web/helpers.ts": "export const h = 1;\n"})
    git(root, "init", "-q", "-b", "main")
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "old")
    git(root, "checkout", "-q", "-b", "moved")
    git(root, "rm", "-q", "pkg/b.py", "web/helpers.ts")
    write_tree(root, {"pkg/c.py": "def other():\n    return 2\n",
                      "web/helpers/index.ts": "export const h = 2;\n"})
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "new")
    git(root, "checkout", "-q", "main")
    engine = live_engine(root)
    try:
        assert related_out(engine, "pkg/a.py") == ["pkg/__init__.py", "pkg/b.py"]
        assert related_out(engine, "web/main.ts") == ["web/helpers.ts"]
        git(root, "checkout", "-q", "moved")
        assert wait_until(lambda: related_out(engine, "pkg/a.py") == ["pkg/c.py"], timeout=30), \
            related_out(engine, "pkg/a.py")
        assert wait_until(lambda: related_out(engine, "web/main.ts") == ["web/helpers/index.ts"])
        assert import_rows(engine) == cold_import_rows(root, tmp_path / "cold")
    finally:
        engine.close()


def _branches(root: Path) -> None:
    """``root`` on branch main, with a branch ``other`` adding a file that
    defines ``only_on_other`` and calls it (a checkout of it is a burst: HEAD moves)."""
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "base")
    git(root, "branch", "-M", "main")
    git(root, "checkout", "-q", "-b", "other")
    write_tree(root, {"pkg/other.py": "def only_on_other(x):\n    return x\n\n\n"
                                      "def caller_on_other():\n    return only_on_other(1)\n"})
    git(root, "add", ".")
    git(root, "commit", "-q", "-m", "other")
    git(root, "checkout", "-q", "main")


def test_a_name_a_checkout_brings_is_found_though_its_pass_outlasts_a_second(
        tree: Path, monkeypatch):
    """Right after a checkout, a name it brings was "not defined" (symbols
    [], impact None, recall no hits, none partial): a name query waited 1 s
    for the watcher, less than the checkout's pass takes, and recall did
    not wait at all. Each now waits for the pass, up to readyWaitMs."""
    _branches(tree)
    original = Engine._pass

    def slow_burst(self, *args, burst: bool = False, **kwargs):
        if burst:
            time.sleep(2.0)  # a checkout's pass of a larger repository
        return original(self, *args, burst=burst, **kwargs)

    monkeypatch.setattr(Engine, "_pass", slow_burst)
    engine = live_engine(tree, ready_wait_s=60.0)
    try:
        git(tree, "checkout", "-q", "other")
        assert [d.path for d in engine.symbols("only_on_other", "exact")] == ["pkg/other.py"]
        git(tree, "checkout", "-q", "main")
        assert engine.symbols("only_on_other", "exact") == []
        git(tree, "checkout", "-q", "other")
        found = analysis.analyze(engine, "only_on_other")
        assert found is not None and found.definitions[0].path == "pkg/other.py"
        assert [c.symbol for c in found.callers] == ["caller_on_other"]
        git(tree, "checkout", "-q", "main")
        assert wait_until(lambda: not engine.indexing and engine.disk_caught_up(1.0), timeout=60)
        git(tree, "checkout", "-q", "other")
        hits = engine.recall("only_on_other", ["code"], mode="lexical").hits_by_kind["code"]
        assert "pkg/other.py" in [h.path for h in hits]
    finally:
        engine.close()


def test_an_answer_that_found_nothing_while_a_checkouts_pass_runs_says_partial(
        tree: Path, monkeypatch):
    """Past readyWaitMs with the checkout's pass still running, an answer
    that found nothing says so (partial, why), not a plain "nothing"."""
    _branches(tree)
    release = threading.Event()
    original = Indexer.run_pass
    followed: list[Engine] = []  # the engine, once its first pass is done

    def held_burst(self, *args, **kwargs):
        if followed and followed[0].progress.burst:
            release.wait(60)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Indexer, "run_pass", held_burst)
    engine = live_engine(tree, ready_wait_s=5.0)
    followed.append(engine)
    try:
        git(tree, "checkout", "-q", "other")
        result = engine.recall("only_on_other", ["code"], mode="lexical")
        assert result.hits_by_kind["code"] == [] and result.partial
        assert "re-indexing after a change on disk" in result.partial_reason
        assert engine.symbols("only_on_other", "exact") == []
        assert "re-indexing after a change on disk" in engine.partial_reason()
        # What is found meanwhile says so too: impact's callers may be in files not read yet.
        from ctxls.impact.analysis import analyze

        found = analyze(engine, "compute")
        assert found is not None and found.partial, found
        assert "re-indexing after a change on disk" in found.partial_reason
        # A name not found meanwhile is no plain "not defined" (the CLI's and MCP's text).
        from ctxls.daemon.formatting import not_defined_text

        assert analyze(engine, "only_on_other") is None
        assert not_defined_text("only_on_other", engine.status()).endswith(
            "(it is still indexing a change on disk: ask again in a moment)")
    finally:
        release.set()
        engine.close()


def test_files_a_burst_rewrote_keeping_size_and_mtime_are_read_again(tmp_path: Path):
    """`rsync -a`, `tar x`, `cp -p` of many files: new text under the old
    size and mtime. The burst's pass trusted the stat for the very paths its
    events named, so the old definitions were served for good."""
    root = tmp_path / "copied"
    stamp = 1_764_583_200
    count = live.BURST_FILES + 20

    def write_all(name: str) -> None:
        for i in range(count):
            path = root / f"rs/f{i:03}.py"
            path.write_text(f"def {name}_{i:03}():\n    return 1\n")
            os.utime(path, (stamp, stamp))

    (root / "rs").mkdir(parents=True)
    write_all("rsalpha")
    engine = Engine(root, EngineOptions(watch="off"))
    try:
        engine.cold_index()
        assert [d.path for d in engine.symbols("rsalpha_007", "exact")] == ["rs/f007.py"]
        write_all("rsgamma")  # same length, same mtime
        engine.disk_changed([f"rs/f{i:03}.py" for i in range(count)])  # the watcher's batch
        assert [d.path for d in engine.symbols("rsgamma_007", "exact")] == ["rs/f007.py"]
        assert engine.symbols("rsalpha_007", "exact") == []
    finally:
        engine.close()


def test_a_pass_queued_behind_the_first_keeps_status_from_saying_ready(tree: Path, monkeypatch):
    """A checkout during the first pass queues its burst's pass behind it:
    the first pass's end marked the queued one's progress as over, so status
    said "ready" on an index missing the checkout (0 files, once)."""
    started: list[threading.Event] = [threading.Event(), threading.Event()]
    release: list[threading.Event] = [threading.Event(), threading.Event()]
    original = Indexer._run_pass

    def held(self, *args, **kwargs):
        which = 0 if not started[0].is_set() else 1
        started[which].set()
        release[which].wait(60)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Indexer, "_run_pass", held)
    engine = Engine(tree, EngineOptions(watch="off"))
    try:
        first = threading.Thread(target=engine.cold_index)
        first.start()
        assert started[0].wait(10)
        burst = threading.Thread(target=engine.disk_changed, args=([],), kwargs={"head_moved": True})
        burst.start()
        assert wait_until(lambda: engine._passes_running == 2)  # queued for the indexer's lock
        release[0].set()
        first.join(30)
        assert engine.cold_index_done and started[1].wait(10)
        assert engine.status()["state"] == "indexing"
        release[1].set()
        burst.join(30)
        assert engine.status()["state"] == "ready"
    finally:
        for event in release:
            event.set()
        engine.close()


def test_file_events_waiting_as_the_first_pass_ends_keep_status_from_saying_ready(
        tree: Path, monkeypatch):
    """The first pass ended after a checkout had taken its files away, and
    the watcher had not handed the checkout's batch over yet: status said
    "ready" on an empty index until the burst's pass began."""
    holding = threading.Event()
    release = threading.Event()
    original = live.DiskFollower._handle

    def held(self, changes):
        holding.set()
        release.wait(60)
        return original(self, changes)

    monkeypatch.setattr(live.DiskFollower, "_handle", held)
    engine = Engine(tree, EngineOptions(watch="auto"))
    try:
        engine.follow_disk()
        assert engine.follower.established.wait(10)
        (tree / "pkg/core.py").write_text("def rewritten_by_checkout():\n    pass\n")
        assert holding.wait(10)  # the watcher holds the batch, not handed over yet
        engine.cold_index()
        assert engine.follower.mode == "native"
        assert engine.status()["state"] == "indexing"
        release.set()
        assert wait_until(lambda: engine.status()["state"] == "ready")
    finally:
        release.set()
        engine.close()


def test_status_never_counts_the_files_a_pass_found_gone_beside_their_new_paths(
        tmp_path: Path, monkeypatch):
    """A checkout renaming every folder: the pass added the new paths' rows
    and dropped the old ones' only at its end, so status counted up to
    twice the files the tree holds."""
    root = tmp_path / "moved"
    count = 150
    write_tree(root, {f"old/m{i:03}.py": f"def fn_{i}(x):\n    return x\n" for i in range(count)})
    engine = Engine(root, EngineOptions(watch="off"))
    counted: list[int] = []
    original = Indexer._write_batch

    def counting(self, *args, **kwargs):
        original(self, *args, **kwargs)
        engine.store.renew_snapshot()
        counted.append(engine.status()["files"])

    try:
        engine.cold_index()
        (root / "old").rename(root / "new")
        monkeypatch.setattr(Indexer, "_write_batch", counting)
        stats = engine.index()
        assert (stats.added, stats.removed) == (count, count)
        assert counted and max(counted) <= count, counted
        assert engine.status()["files"] == count
    finally:
        engine.close()
