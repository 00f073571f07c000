"""daemon/edits.py: incremental edits as LSP defines them, checked against a
plain reference (the whole text's line ends found anew for every edit); and
the edit log recent activity reads (which edits it lists, and whose)."""

from __future__ import annotations

import os
import random
import re
import time

import pytest
from lsprotocol import types

from ctxls.daemon.edits import EditedText, EditOutOfRange


UNITS = {"utf-8": lambda c: len(c.encode("utf-8")), "utf-16": lambda c: 2 if ord(c) > 0xFFFF else 1,
         "utf-32": lambda c: 1}


def reference_edit(text: str, start: tuple[int, int], end: tuple[int, int], new_text: str,
                   encoding: str = "utf-16") -> str:
    """LSP's rules spelled out: lines end at \\n, \\r\\n, \\r; a column (in
    ``encoding``'s code units) past a line's end is that end; a line past the
    last is the text's end."""
    bounds, begin = [], 0
    for match in re.finditer(r"\r\n|\r|\n", text):
        bounds.append((begin, match.start()))
        begin = match.end()
    bounds.append((begin, len(text)))

    def offset(line: int, character: int) -> int:
        if line >= len(bounds):
            return len(text)
        first, last = bounds[line]
        units = 0
        for index in range(first, last):
            if units >= character:
                return index
            units += UNITS[encoding](text[index])
        return last

    return text[:offset(*start)] + new_text + text[offset(*end):]


def edit(text: str, start: tuple[int, int], end: tuple[int, int], new_text: str) -> str:
    edited = EditedText(text)
    edited.replace(types.Range(types.Position(*start), types.Position(*end)), new_text)
    return edited.text()


def test_lines_end_only_where_lsp_says():
    """pygls counted a form feed and U+2028 as line ends: an edit below one
    landed a line off."""
    text = "a = 1\n\x0c\nb = 2\u2028still b\nc = 3\n"
    assert edit(text, (3, 0), (3, 1), "d") == "a = 1\n\x0c\nb = 2\u2028still b\nd = 3\n"
    assert edit("abc\r\ndef\rghi", (2, 0), (2, 3), "X") == "abc\r\ndef\rX"


def test_lines_split_at_lsp_breaks_only_and_a_long_last_line_is_one_line():
    """A last line without a break (a one-line JSON or minified file) was
    rescanned from each of its characters: one didChange in a 60 KB one held
    the daemon's event loop for minutes."""
    from ctxls.daemon.edits import _split

    assert _split("a\nb\r\nc\rd") == ["a\n", "b\r\n", "c\r", "d"]
    assert _split("\r\r\n\n\n\r") == ["\r", "\r\n", "\n", "\n", "\r", ""]
    assert _split("") == [""]
    # Breaks for str.splitlines, never for LSP.
    odd = "a\vb\fc\x1cd\x1de\x1ef\x85g\u2028h\u2029i"
    assert _split(odd + "\n" + odd) == [odd + "\n", odd]
    long_last = "x" * 200_000
    assert _split("head\r\n" + long_last) == ["head\r\n", long_last]
    assert edit("head\n" + long_last, (1, 100_000), (1, 100_000), "Y") == (
        "head\n" + "x" * 100_000 + "Y" + "x" * 100_000)


def test_the_line_split_matches_the_line_breaks_alone(monkeypatch):
    """The split finds each line break once and never matches a line's
    content, so its work grows with the text, not with a line's square."""
    from ctxls.daemon import edits

    found: list[str] = []

    class Recording:
        def finditer(self, text):
            for match in re.compile(r"\r\n?|\n").finditer(text):
                found.append(match.group())
                yield match

    assert {edits.LINE_BREAK.match(s).group() for s in ("\n", "\r", "\r\n")} == {"\n", "\r",
                                                                                 "\r\n"}
    assert edits.LINE_BREAK.match("x\n") is None
    monkeypatch.setattr(edits, "LINE_BREAK", Recording())
    assert edits._split("ab\r\ncd\ref\n" + "g" * 50_000) == ["ab\r\n", "cd\r", "ef\n", "g" * 50_000]
    assert found == ["\r\n", "\r", "\n"]


def test_a_column_past_the_line_is_its_end_and_surrogate_pairs_count_two():
    assert edit("abc\ndef\nghi", (2, 99), (2, 99), "X") == "abc\ndef\nghiX"  # pygls: ghXi
    assert edit("abc\r\ndef", (0, 99), (0, 99), "X") == "abcX\r\ndef"
    assert edit("x\U0001F600y\n", (0, 3), (0, 4), "Z") == "x\U0001F600Z\n"
    assert edit("abc", (1, 0), (1, 0), "\nX") == "abc\nX"  # the line after the last: the end


@pytest.mark.parametrize("start, end", [((2, 1), (0, 1)), ((0, 5), (0, 4)), ((0, 0), (5, 0))])
def test_ranges_naming_no_place_are_refused(start, end):
    with pytest.raises(EditOutOfRange):
        edit("abc\ndef\nghi", start, end, "X")


@pytest.mark.parametrize("encoding", ["utf-16", "utf-8", "utf-32"])
def test_many_edits_match_the_reference(encoding: str):
    """Random texts with every kind of line end, and random edits (line
    ends inserted and removed, a \\r meeting a \\n), applied in order, with
    columns in each position encoding a client may negotiate."""
    rng = random.Random(7)
    pieces = ["a", "bc", "\n", "\r", "\r\n", "\x0c", "\U0001F600", "\u2028", "\xe9", " "]
    for _ in range(300):
        text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 30)))
        edited = EditedText(text, encoding)
        for _ in range(8):
            lines = len(re.split(r"\r\n|\r|\n", text))
            start = (rng.randrange(0, lines + 1), rng.randrange(0, 6))
            end = max(start, (rng.randrange(start[0], lines + 1), rng.randrange(0, 6)))
            new_text = "".join(rng.choice(pieces) for _ in range(rng.randrange(0, 4)))
            edited.replace(types.Range(types.Position(*start), types.Position(*end)), new_text)
            text = reference_edit(text, start, end, new_text, encoding)
            assert edited.text() == text


# -- the edit log: which edits recent activity lists, and whose ----------------------

def _recent(engine) -> list[tuple[str, str | None, str | None, int]]:
    return [(a.id, a.symbol, a.origin, a.edits) for a in engine.recent_activity()]


@pytest.fixture
def sample_root(tmp_path):
    from conftest import SAMPLE_FILES, write_tree

    root = tmp_path / "repo"
    root.mkdir()
    write_tree(root, SAMPLE_FILES)
    three_days_ago = time.time() - 3 * 86400
    for path in root.rglob("*.py"):
        os.utime(path, (three_days_ago, three_days_ago))
    return root


def test_a_buffer_closed_without_saving_is_no_disk_edit(sample_root):
    """Closing a buffer unsaved re-read the disk's older text and logged it
    as a disk edit: recent activity said the editor's discarded edit was
    the disk's (origin "disk", edits 2)."""
    from ctxls.index.engine import Engine, EngineOptions

    engine = Engine(sample_root, EngineOptions(embeddings=False))
    try:
        engine.cold_index()
        disk = (sample_root / "pkg/retry.py").read_text()
        engine.set_buffer("pkg/retry.py", disk.replace("return False", "return None"))
        engine.close_buffer("pkg/retry.py")
        assert _recent(engine) == [("pkg/retry.py", "retry_upload", "editor", 1)]
    finally:
        engine.close()


@pytest.mark.parametrize("dated_ms", [1, -4], ids=["after-the-rows", "a-clock-tick-before"])
def test_a_file_written_on_disk_while_its_buffer_was_open_is_a_disk_edit_at_close(
        sample_root, dated_ms: int):
    """The other side of the rule above: the disk's text is newer than the
    buffer's rows, so going back to it is a disk edit, dated by its write.
    The kernel dates a write by its coarse clock, up to a tick before the
    wall clock that dated the buffer's rows: a write just after they were
    made read as older, and going back to it logged nothing (CI saw an
    agent's write vanish from recent activity). The rows keep the disk's
    stat from when the buffer took over; any other stat is a write."""
    from ctxls.index.engine import Engine, EngineOptions

    engine = Engine(sample_root, EngineOptions(embeddings=False))
    try:
        engine.cold_index()
        path = sample_root / "pkg/session.py"
        engine.set_buffer("pkg/session.py", path.read_text())
        path.write_text(path.read_text().replace("self.closed = True", "self.closed = 'yes'"))
        written_ms = engine.store.file_state("pkg/session.py").indexed_at + dated_ms
        os.utime(path, ns=(written_ms * 1_000_000, written_ms * 1_000_000))
        engine.close_buffer("pkg/session.py")
        items = engine.recent_activity()
        assert [(a.id, a.symbol, a.origin) for a in items] == [
            ("pkg/session.py", "Session.close", "disk")]
        assert items[0].last_edited_at == path.stat().st_mtime_ns // 1_000_000
    finally:
        engine.close()


def test_an_items_origin_is_its_latest_edits(sample_root):
    """The origin came from the row logged last, the time from the row with
    the latest time: a disk edit a pass found (dated by its old mtime)
    after the editor's edit made the editor's edit read as the disk's."""
    from ctxls.index.engine import Engine, EngineOptions

    engine = Engine(sample_root, EngineOptions(embeddings=False))
    try:
        engine.cold_index()
        path = sample_root / "pkg/retry.py"
        engine.set_buffer("pkg/retry.py", path.read_text().replace("attempts=3", "attempts=4"))
        typed = engine.recent_activity()[0].last_edited_at
        engine.close_buffer("pkg/retry.py")
        with engine.store.write() as conn:  # the store last looked at the file four hours ago
            conn.execute("UPDATE files SET indexed_at = indexed_at - ?", (4 * 3600 * 1000,))
        path.write_text(path.read_text().replace("attempts=3", "attempts=5"))
        an_hour_ago = time.time() - 3600
        os.utime(path, (an_hour_ago, an_hour_ago))
        assert engine.index().updated == 1  # logged last, dated an hour ago
        items = engine.recent_activity()
        assert [(a.id, a.symbol, a.origin, a.edits) for a in items] == [
            ("pkg/retry.py", "retry_upload", "editor", 2)]
        assert items[0].last_edited_at == typed
    finally:
        engine.close()


@pytest.mark.parametrize("next_pass", ["cold_index", "index"])
def test_a_buffer_left_by_a_crashed_editor_is_no_disk_edit(sample_root, next_pass):
    """An editor (or its daemon) killed with a buffer open leaves that
    buffer's rows in the store; the next pass, finding the disk's text,
    logged the definitions only ever typed as removed on disk."""
    from ctxls.index.engine import Engine, EngineOptions

    engine = Engine(sample_root, EngineOptions(embeddings=False))
    engine.cold_index()
    disk = (sample_root / "pkg/retry.py").read_text()
    engine.set_buffer("pkg/retry.py", disk.replace("retry_upload", "ghost_fn"))
    engine.close()  # never closed: as a crash leaves it
    engine = Engine(sample_root, EngineOptions(embeddings=False))
    try:
        getattr(engine, next_pass)()
        assert engine.store.file_state("pkg/retry.py").source == "disk"
        assert sorted(_recent(engine)) == [("pkg/retry.py", "ghost_fn", "editor", 1),
                                           ("pkg/retry.py", "retry_upload", "editor", 1)]
    finally:
        engine.close()


def test_the_first_pass_of_an_indexed_store_logs_what_was_written_meanwhile(sample_root):
    """A daemon's (or a hosted `ctxls mcp`'s) first pass logged no edits:
    a file written while no process served the store was in recent
    activity only if a CLI verb's pass found it first."""
    from ctxls.index.engine import Engine, EngineOptions

    engine = Engine(sample_root, EngineOptions(embeddings=False))
    engine.cold_index()
    assert engine.recent_activity() == []  # a first index of an empty store logs none
    engine.close()
    path = sample_root / "pkg/retry.py"
    path.write_text(path.read_text() + "\n\ndef written_while_no_daemon():\n    pass\n")
    engine = Engine(sample_root, EngineOptions(embeddings=False))
    try:
        engine.cold_index()
        items = engine.recent_activity()
        assert [(a.id, a.symbol, a.origin) for a in items] == [
            ("pkg/retry.py", "written_while_no_daemon", "disk")]
        assert items[0].last_edited_at == path.stat().st_mtime_ns // 1_000_000
    finally:
        engine.close()


def test_old_edits_merge_into_one_row_per_item_and_span_and_keep_their_counts(sample_root):
    """The edit log was never pruned: a daemon open for months kept one row
    per buffer update. Now the logging process merges, a day on, one
    item's edits of one UTC day into one row (30-day spans after 30 days),
    and recent activity answers the same items, times, origins and counts."""
    from ctxls.index.edit_log import DAY_MS, LONG_SPAN_MS
    from ctxls.index.engine import Engine, EngineOptions
    from ctxls.index.store import now_ms

    engine = Engine(sample_root, EngineOptions(embeddings=False))
    try:
        engine.cold_index()
        now = now_ms()
        spans = [(now // DAY_MS - 2) * DAY_MS, (now // DAY_MS - 3) * DAY_MS,
                 (now // LONG_SPAN_MS - 2) * LONG_SPAN_MS, (now // LONG_SPAN_MS - 3) * LONG_SPAN_MS]
        logged = [("pkg/retry.py", symbol, "code", start + DAY_MS // 2 + k * 60_000, origin)
                  for start in spans for k in range(5)
                  for symbol, origin in (("retry_upload", "editor"), (None, "disk"))]
        with engine.store.write() as conn:
            conn.executemany("INSERT INTO edits(path, symbol, kind, ts, origin) VALUES (?, ?, ?, ?, ?)",
                             logged)
        def activity(engine):
            return [(a.id, a.symbol, a.origin, a.edits, a.last_edited_at)
                    for a in engine.recent_activity(days=1000) if a.id == "pkg/retry.py"]
        before = activity(engine)
        assert [row[3] for row in before] == [20, 20]

        # A new process's first logged edit (another file's) merges the log.
        engine.close()
        engine = Engine(sample_root, EngineOptions(embeddings=False))
        engine.cold_index()
        path = sample_root / "pkg/session.py"
        engine.set_buffer("pkg/session.py", path.read_text() + "\n\ndef added():\n    return 1\n")
        rows = engine.store.reader().execute(
            "SELECT symbol, origin, ts, times FROM edits WHERE path = 'pkg/retry.py' "
            "ORDER BY origin, ts").fetchall()
        assert len(rows) == 2 * len(spans)
        assert {row["times"] for row in rows} == {5}
        assert activity(engine) == before
        # Recent edits stay one row each: the session's is there, unmerged.
        assert [(a.id, a.symbol, a.edits) for a in engine.recent_activity(days=1)] == [
            ("pkg/session.py", "added", 1)]
    finally:
        engine.close()


def test_files_made_and_removed_while_no_process_ran_are_edits_of_the_next_pass(sample_root):
    """A pass logged only files its store already held: a file created while
    no process ran, and one deleted then, were never listed, and a fact
    anchored to the deleted file never read as stale. A first index of an
    empty store still logs none."""
    from ctxls.index.engine import Engine, EngineOptions

    engine = Engine(sample_root, EngineOptions(embeddings=False))
    engine.cold_index()
    assert engine.recent_activity(days=1) == []  # the first index logs nothing
    engine.close()
    (sample_root / "pkg/added_offline.py").write_text("def made_offline():\n    return 3\n")
    removed = sample_root / "pkg/retry.py"
    removed.unlink()
    an_hour_ago = time.time() - 3600
    os.utime(sample_root / "pkg", (an_hour_ago, an_hour_ago))  # when the removal was
    engine = Engine(sample_root, EngineOptions(embeddings=False))
    try:
        engine.cold_index()
        items = {(a.id, a.symbol, a.origin): a for a in engine.recent_activity(days=1)}
        assert ("pkg/added_offline.py", "made_offline", "disk") in items
        gone = items[("pkg/retry.py", "retry_upload", "disk")]
        # Dated by its folder's change, not by when the pass found it.
        assert gone.last_edited_at == int(an_hour_ago * 1000)
    finally:
        engine.close()


def test_recent_activity_waits_for_the_first_pass_that_logs_offline_edits(sample_root, monkeypatch):
    """A session's first `recentActivity` answered from the log before the
    first pass had logged what changed while no process ran: "no recent
    edits", then the edit a moment later."""
    import threading

    from ctxls.index.engine import Engine, EngineOptions
    from ctxls.index.indexer import Indexer

    engine = Engine(sample_root, EngineOptions(embeddings=False))
    engine.cold_index()
    engine.close()
    path = sample_root / "pkg/retry.py"
    path.write_text(path.read_text() + "\n\ndef typed_offline():\n    return 2\n")
    entered, release = threading.Event(), threading.Event()
    original = Indexer.run_pass

    def held_pass(self, *args, **kwargs):
        entered.set()
        release.wait(30)
        return original(self, *args, **kwargs)

    monkeypatch.setattr(Indexer, "run_pass", held_pass)
    engine = Engine(sample_root, EngineOptions(embeddings=False, ready_wait_s=30.0))
    first = threading.Thread(target=engine.first_pass)
    try:
        first.start()
        assert entered.wait(30)
        threading.Timer(0.3, release.set).start()
        assert ("pkg/retry.py", "typed_offline", "disk", 1) in _recent(engine)
    finally:
        release.set()
        first.join(30)
        engine.close()
