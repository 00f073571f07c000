"""Locate's git-history features (index/locate_history.py): read at the
repository's HEAD and only its ancestors, absent without a repository, read
again when HEAD moves, and carried into the scorer's record and ``why``."""

from __future__ import annotations

import json
import math
from pathlib import Path

import numpy as np

from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.locate import Locator
from ctxls.index.locate_history import (HISTORY_FEATURES, MAX_FILES, WINDOW, History, git_base,
                                        parse_log, read_history)
from ctxls.index.locate_scorer import FEATURES, Scorer, records

from conftest import commit_files, git



def _repo(tmp_path: Path) -> tuple[Path, list[str]]:
    """shop/cart.py changed in three commits (two fixes), shop/money.py in one."""
    root = tmp_path / "repo"
    root.mkdir()
    git(root, "init", "-q")
    commits = [commit_files(root, "Add the shop", {"shop/cart.py": "def total(cart):\n    return 0\n",
                                              "shop/money.py": "def cents(x):\n    return x\n"}),
               commit_files(root, "Fix the cart total", {"shop/cart.py": "def total(cart):\n    return 1\n"}),
               commit_files(root, "Fix crash on empty cart", {"shop/cart.py": "def total(cart):\n    return 2\n"}),
               commit_files(root, "Round money", {"shop/money.py": "def cents(x):\n    return 2 * x\n"})]
    return root, commits


def test_history_counts_commits_fixes_and_recency_at_head(tmp_path: Path):
    root, commits = _repo(tmp_path)
    history = History(root).current()
    assert history.head == commits[-1] and history.window == 4
    cart, money = history.files["shop/cart.py"], history.files["shop/money.py"]
    assert (cart.commits, cart.fixes, cart.newest) == (3, 2, 1)
    assert (money.commits, money.fixes, money.newest) == (2, 0, 0)
    scale = math.log1p(WINDOW)
    assert history.features("shop/cart.py") == {
        "history": 1.0, "hist_commits": math.log1p(3) / scale, "hist_fixes": math.log1p(2) / scale,
        "hist_recency": 1.0 - math.log1p(1) / scale, "hist_text": 0.0}
    # A file the window never touched: history read, nothing in it.
    assert history.features("shop/other.py") == {"history": 1.0, "hist_commits": 0.0, "hist_fixes": 0.0,
                                                 "hist_recency": 0.0, "hist_text": 0.0}


def test_only_the_ancestors_of_head_are_read(tmp_path: Path):
    root, commits = _repo(tmp_path)
    git(root, "checkout", "-q", "--detach", commits[1])  # before the crash fix and the money change
    history = History(root).current()
    assert history.head == commits[1]
    assert (history.files["shop/cart.py"].commits, history.files["shop/cart.py"].fixes) == (2, 1)
    assert history.files["shop/money.py"].commits == 1
    # The same read from a bare git dir at that commit (how bench reads a snapshot).
    bare = read_history(git_base(git_dir=root / ".git"), commits[1], relative=False)
    assert bare.files == history.files


def test_no_repository_no_history(tmp_path: Path):
    plain = tmp_path / "plain"
    (plain / "shop").mkdir(parents=True)
    (plain / "shop" / "cart.py").write_text("def total(cart):\n    return 0\n")
    assert History(plain).current().head is None
    assert History(None).current().head is None
    assert History(plain).current().features("shop/cart.py") == dict.fromkeys(HISTORY_FEATURES, 0.0)
    # A repository without a commit has no history either.
    git(plain, "init", "-q")
    assert History(plain).current().head is None
    engine = Engine(plain, EngineOptions(db_path=str(tmp_path / "plain.db")))
    try:
        engine.cold_index()
        evidence = engine.locator.evidence(engine.store.reader(), "total() of the cart is wrong")
        assert evidence["shop/cart.py"].history == dict.fromkeys(HISTORY_FEATURES, 0.0)
    finally:
        engine.close()


def test_history_is_read_once_per_head_and_again_when_head_moves(tmp_path: Path):
    root, commits = _repo(tmp_path)
    history = History(root)
    first = history.current()
    assert history.current() is first and history.reads == 1
    new = commit_files(root, "Fix money rounding", {"shop/money.py": "def cents(x):\n    return 3 * x\n"})
    moved = history.current()
    assert history.reads == 2 and moved.head == new
    assert moved.files["shop/money.py"].fixes == 1 and moved.files["shop/money.py"].newest == 0
    git(root, "checkout", "-q", "--detach", commits[0])
    assert history.current().files["shop/cart.py"].commits == 1 and history.reads == 3


def test_a_failed_read_is_not_retried_until_head_moves(tmp_path: Path, monkeypatch):
    root, commits = _repo(tmp_path)
    import ctxls.index.locate_history as module
    monkeypatch.setattr(module, "_git", lambda base, *args: None if args[0] == "log" else commits[-1])
    history = History(root)
    assert history.current().head is None and history.current().head is None
    assert history.reads == 1  # a timed-out log costs its time once per HEAD, not once per call
    monkeypatch.setattr(module, "_git", lambda base, *args: None if args[0] == "log" else commits[0])
    assert history.current().head is None and history.reads == 2


def test_bulk_commits_are_skipped_and_paths_stay_relative_to_a_subfolder(tmp_path: Path):
    many = "".join(f"f{i}.py\n" for i in range(MAX_FILES + 1))
    parsed = parse_log(f"\x1eFix all\x1f\n{many}\x1eFix one\x1f\nshop/cart.py\n")
    assert parsed.window == 2 and list(parsed.files) == ["shop/cart.py"]
    assert parsed.files["shop/cart.py"].newest == 1 and parsed.counted == 1
    root, commits = _repo(tmp_path)
    sub = History(root / "shop").current()
    assert set(sub.files) == {"cart.py", "money.py"}


def test_the_text_matches_the_subjects_of_a_files_past_commits(tmp_path: Path):
    root, _ = _repo(tmp_path)
    history = History(root).current()
    annotated = history.annotate("Crash in the cart when it is empty", ["shop/cart.py", "shop/money.py",
                                                                       "shop/other.py"])
    # "crash", "empty", "cart": the subjects of cart.py's commits; none of money.py's.
    assert annotated["shop/cart.py"]["hist_text"] == 1.0
    assert annotated["shop/money.py"]["hist_text"] == 0.0 and annotated["shop/other.py"]["hist_text"] == 0.0
    money = history.annotate("Round the money", ["shop/cart.py", "shop/money.py"])
    assert money["shop/money.py"]["hist_text"] == 1.0 and money["shop/cart.py"]["hist_text"] == 0.0
    assert History(None).current().annotate("Crash in the cart", ["shop/cart.py"])["shop/cart.py"] == \
        dict.fromkeys(HISTORY_FEATURES, 0.0)


def test_history_features_reach_the_record_and_why(tmp_path: Path):
    root, _ = _repo(tmp_path)
    # The same symbol evidence on both files; a model weighing only the history.
    weights = np.zeros(len(FEATURES))
    weights[FEATURES.index("symbol")] = 1.0
    weights[FEATURES.index("hist_fixes")] = 4.0
    scorer = Scorer({"kind": "linear", "features": list(FEATURES), "weights": weights.tolist(),
                     "bias": -1.0})
    engine = Engine(root, EngineOptions(db_path=str(tmp_path / "repo.db")))
    try:
        engine.cold_index()
        locator = Locator(root=root, scorer=scorer)
        located = locator.locate(engine.store.reader(), "total() and cents() return wrong values", 2)
        assert [f.path for f in located] == ["shop/cart.py", "shop/money.py"]
        why = {c.feature: c for c in located[0].why}
        assert math.isclose(why["hist_fixes"].value, math.log1p(2) / math.log1p(WINDOW), abs_tol=1e-4)
        assert why["hist_fixes"].contribution > 0
        # The history is no signal: the located file's signals are the evidence's only.
        assert not set(located[0].signals) & set(HISTORY_FEATURES)
        # Without the history (a checkout without .git) the same files tie on the history.
        blind = Locator(root=root, scorer=scorer, history=False)
        assert all("hist_fixes" not in {c.feature for c in f.why}
                   for f in blind.locate(engine.store.reader(), "total() and cents() return wrong values", 2))
    finally:
        engine.close()
    paths, found = records({"a.py": {"text": 1.0, "hist_commits": 0.5, "history": 1.0}})
    assert found[0, FEATURES.index("hist_commits")] == 0.5 and found[0, FEATURES.index("history")] == 1.0
    assert found[0, FEATURES.index("signal_count")] == 1 / 10  # history counts as no signal


def test_the_history_is_read_after_the_first_pass_so_no_locate_waits_for_it(tmp_path: Path):
    root, commits = _repo(tmp_path)
    engine = Engine(root, EngineOptions(db_path=str(tmp_path / "repo.db")))
    try:
        engine.cold_index()
        engine._warm_thread.join(30)  # the first pass's background warm-up
        history = engine.locator.history
        assert history.reads == 1 and history.current().head == commits[-1]
        engine.locate("total() returns wrong values", 2)
        assert history.reads == 1  # the locate found it read
    finally:
        engine.close()


def test_the_shipped_model_names_the_history_features():
    model = json.loads((Path(__file__).parent.parent / "index" / "models" / "locate-scorer.json").read_text())
    assert set(HISTORY_FEATURES) <= set(model["features"])
