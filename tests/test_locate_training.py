"""bench/train_locate_scorer.py: the scorer's fitting on feature dumps, its
metrics, and the model file it writes (read back by index/locate_scorer.py)."""

from __future__ import annotations

import importlib.util
import json
import sys
from pathlib import Path

import numpy as np

from ctxls.index.locate_scorer import FEATURES, load_scorer, rank

BENCH = Path(__file__).resolve().parent.parent / "bench"


def trainer():
    spec = importlib.util.spec_from_file_location("_train_locate_scorer", BENCH / "train_locate_scorer.py")
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module
    spec.loader.exec_module(module)
    return module


def synthetic_commits(count: int, seed: int) -> list[dict]:
    """Commits whose gold file is the one with a `frame`; `text` is noise
    spread over every candidate (it misleads the hand weights at times)."""
    rng = np.random.default_rng(seed)
    commits = []
    for n in range(count):
        gold = int(rng.integers(8))
        candidates = [{"path": f"pkg/mod{i}.py", "test_or_doc": False, "gold": i == gold,
                       "signals": {"text": float(rng.random())} | ({"frame": 0.1} if i == gold else {})}
                      for i in range(8)]
        commits.append({"project": f"p{n % 3}", "commit": str(n), "split": "train", "text": "a fix",
                        "gold": [f"pkg/mod{gold}.py"], "candidates": candidates})
    return commits


def test_a_fitted_linear_scorer_learns_the_informative_signal_and_is_read_back(tmp_path: Path):
    train = trainer()
    commits = synthetic_commits(60, 0)
    rows = train.training_rows(commits)
    model = train.fit_logistic(rows, 0.01)
    weights = dict(zip(FEATURES, model["weights"]))
    assert weights["frame"] > 5 * abs(weights["text"])
    held_out = synthetic_commits(30, 1)
    fitted = train.metrics(held_out, train.scores_of(model, held_out))
    hand = train.metrics(held_out, [train.hand_scores(c) for c in held_out])
    assert fitted["acc@1"] == 100.0 and hand["acc@1"] < 100.0
    # Written with its sha256 into a copy of the scorer's source, read back alike.
    source = tmp_path / "locate_scorer.py"
    source.write_text('MODEL_SHA256 = "' + "0" * 64 + '"\n')
    path = tmp_path / "locate-scorer.json"
    sha = train.write_model({"version": 1, "features": list(FEATURES), "training": {"data": "synthetic"},
                             **model}, path, source)
    assert f'MODEL_SHA256 = "{sha}"' in source.read_text()
    scorer = load_scorer(path, sha)
    commit = held_out[0]
    best = rank(scorer, {c["path"]: c["signals"] for c in commit["candidates"]}, 1)[0]
    assert [best.path] == commit["gold"]


def test_metrics_count_every_gold_file_for_acc_and_the_first_for_hit():
    train = trainer()
    commit = {"gold": ["a.py", "c.py"],
              "candidates": [{"path": p} for p in ("a.py", "b.py", "c.py")]}
    m = train.metrics([commit], [[3.0, 2.0, 1.0]])
    assert (m["acc@1"], m["acc@3"], m["hit@1"], m["mrr"]) == (0.0, 100.0, 100.0, 1.0)


def test_a_lightgbm_tree_dump_is_flattened_as_the_scorer_walks_it():
    train = trainer()
    frame, text = FEATURES.index("frame"), FEATURES.index("text")
    dumped = {"split_feature": frame, "threshold": 0.5, "decision_type": "<=", "internal_value": 0.1,
              "left_child": {"leaf_value": -1.0},
              "right_child": {"split_feature": text, "threshold": 0.2, "decision_type": "<=",
                              "internal_value": 0.4, "left_child": {"leaf_value": 0.5},
                              "right_child": {"leaf_value": 2.0}}}
    tree = train._flat_tree(dumped)
    model = {"kind": "trees", "bias": 0.0, "trees": [tree]}
    records = np.zeros((3, len(FEATURES)))
    records[1, frame] = 1.0
    records[2, [frame, text]] = 1.0
    assert train.Scorer({"features": list(FEATURES), **model}).raw(records).tolist() == [
        -1.0, 0.5, 2.0]
    assert json.loads(json.dumps(tree)) == tree


def test_a_listwise_fit_learns_the_informative_signal_with_or_without_the_hand_prior():
    train = trainer()
    rows = train.training_rows(synthetic_commits(60, 0))
    held_out = synthetic_commits(30, 1)
    for toward_hand in (False, True):
        model = train.fit_listwise(rows, 0.01, toward_hand)
        weights = dict(zip(FEATURES, model["weights"]))
        assert weights["frame"] > 5 * abs(weights["text"]), toward_hand
        assert train.metrics(held_out, train.scores_of(model, held_out))["acc@1"] == 100.0


def test_a_model_is_adopted_only_when_better_in_acc1_and_mrr():
    train = trainer()
    hand = {"acc@1": 48.5, "mrr": 0.716}
    assert train.beats({"acc@1": 49.0, "mrr": 0.72}, hand)
    assert not train.beats({"acc@1": 49.0, "mrr": 0.716}, hand)
    assert not train.beats({"acc@1": 48.5, "mrr": 0.73}, hand)


def test_the_issue_style_sets_answers_are_read_as_commits_without_semantic(tmp_path: Path):
    train = trainer()
    answer = {"id": "t-1", "repo": "owner/name", "split": "test", "gold": ["pkg/a.py", "pkg/gone.py"],
              "evidence": {"pkg/a.py": {"s": {"frame": 1.0, "semantic": 0.9}, "t": False},
                           "tests/test_a.py": {"s": {"text": 0.4}, "t": True}}}
    (tmp_path / "results-owner+name.jsonl").write_text(json.dumps(answer) + "\n")
    (tmp_path / "results-owner+name@other-model.jsonl").write_text(json.dumps(answer) + "\n")
    (commit,) = train.issue_set(str(tmp_path / "results-*.jsonl"))
    assert commit["split"] == "test" and commit["gold"] == answer["gold"]
    assert [(c["path"], c["gold"], c["test_or_doc"], c["signals"]) for c in commit["candidates"]] == [
        ("pkg/a.py", True, False, {"frame": 1.0}), ("tests/test_a.py", False, True, {"text": 0.4})]
    # A gold file with no evidence counts as a miss: Acc@1 0, Hit@1 and MRR from the other.
    m = train.metrics([commit], [train.hand_scores(commit)])
    assert (m["acc@1"], m["hit@1"], m["mrr"]) == (0.0, 100.0, 1.0)


def test_the_result_rows_show_the_shipped_models_figures_beside_the_others():
    train = trainer()
    hand = {"acc@1": 44.8, "acc@5": 73.3, "mrr": 0.688, "n": 600}
    chosen = {"acc@1": 45.3, "acc@5": 73.3, "mrr": 0.692, "n": 600}
    for adopted, shipped, other in ((True, chosen, "hand weights 44.8"), (False, hand, "chosen 45.3")):
        report = {"adopted": adopted, "test": {"chosen": chosen, "hand weights": hand},
                  "issue-style set": {"test": {"chosen": chosen, "hand weights": hand}}}
        rows = train.result_rows(report)
        assert rows[0]["value"] == f"{shipped['acc@1']} ({other})" and rows[0]["met"] is False
        assert rows[2]["value"].startswith(f"{shipped['acc@1']} / 73.3 / {shipped['mrr']} (")


def test_the_semantic_files_set_each_candidates_signal_and_records_drop_it_when_asked(tmp_path: Path):
    train = trainer()
    commits = synthetic_commits(2, seed=3)
    commits[0]["candidates"][0]["signals"]["semantic"] = 0.3  # a stale value is replaced
    (tmp_path / "p0.jsonl").write_text(json.dumps(
        {"commit": "0", "model": "m", "semantic": {"pkg/mod1.py": 1.0, "pkg/mod2.py": 0.25}}) + "\n")
    data_id = train.load_semantic(commits, str(tmp_path))
    assert len(data_id) == 16
    assert [c["signals"].get("semantic") for c in commits[0]["candidates"][:3]] == [None, 1.0, 0.25]
    assert all("semantic" not in c["signals"] for c in commits[1]["candidates"])
    column = FEATURES.index("semantic")
    assert list(train.commit_records(commits[0])[:3, column]) == [0.0, 1.0, 0.25]
    off = train.commit_records(commits[0], semantic=False)
    assert not off[:, column].any()
    # As if the dump had no semantic signal at all: its count and maximum drop it too.
    for c in commits[0]["candidates"]:
        c["signals"].pop("semantic", None)
    assert np.array_equal(off, train.commit_records(commits[0]))


def test_a_rejected_fit_reports_todays_model_as_the_shipped_one():
    train = trainer()
    hand = {"acc@1": 44.8, "acc@5": 73.3, "mrr": 0.688, "n": 600}
    chosen = {"acc@1": 47.0, "acc@5": 74.0, "mrr": 0.700, "n": 600}
    today = {"acc@1": 47.3, "acc@5": 74.7, "mrr": 0.708, "n": 600}
    report = {"adopted": False, "test": {"chosen": chosen, "hand weights": hand, "today's model": today},
              "issue-style set": {"test": {"chosen": chosen, "hand weights": hand, "today's model": today}}}
    rows = train.result_rows(report)
    assert rows[0]["value"] == "47.3 (chosen 47.0)"
    assert rows[2]["value"] == "47.3 / 74.7 / 0.708 (chosen 47.0 / 74.0 / 0.7)"


def test_score_only_reports_todays_model_per_split_and_language_with_the_goals_on_test():
    train = trainer()
    commits = synthetic_commits(12, 2)
    for n, commit in enumerate(commits):
        commit.update(split=("dev", "test")[n % 2], language=("python", "go")[n // 6], kind="fix-description")
    by_split = {s: [c for c in commits if c["split"] == s] for s in ("train", "dev", "test")}
    projects = {s: sorted({c["project"] for c in cs}) for s, cs in by_split.items()}
    report = train.todays_figures(by_split, projects)
    today = train.todays_scorer()
    for split in ("dev", "test"):
        cs = by_split[split]
        assert report[split]["today's model, with history"] == train.metrics(cs, train.scores_of(today, cs, True))
        assert set(report[split]["by language (Acc@1/Acc@5/MRR, n)"]) == {"python", "go"}
        assert report[split]["projects"] == len(projects[split]) and report[split]["multi-file share"] == 0.0
    rows = train.score_rows(report)
    test = report["test"]["today's model, with history"]
    assert rows[0]["value"] == str(test["acc@1"]) and rows[0]["goal"] == ">= 60"
    assert rows[0]["met"] is (test["acc@1"] >= 60) and f"({test['n']} tasks" in rows[0]["target"]
    assert rows[1]["value"] == str(test["acc@5"]) and rows[1]["goal"] == ">= 85"


def test_a_trial_column_is_fitted_beside_the_records_and_scored_on_dev_only():
    """bench/locate_trial.py: a column the records lack (here: the gold file
    is the one stub among the candidates, the other signals noise) is fitted
    a weight and lifts dev; the test projects are never scored."""
    trainer()  # the trial module imports it by plain name
    sys.path.insert(0, str(BENCH))
    import locate_trial

    rng = np.random.default_rng(3)
    commits = []
    for n in range(90):
        gold = int(rng.integers(8))
        candidates = [{"path": f"pkg/mod{i}.py" + ("i" if i == gold else ""), "test_or_doc": False,
                       "gold": i == gold, "signals": {"text": float(rng.random())}} for i in range(8)]
        commits.append({"project": f"p{n % 6}", "commit": str(n), "text": "a fix",
                        "split": ("train", "train", "train", "dev", "dev", "test")[n % 6],
                        "gold": [candidates[gold]["path"]], "candidates": candidates})
    result = locate_trial.run(commits, ["stub"])
    assert result["stub"]["weights"]["stub"] > 1.0
    assert result["stub"]["dev"]["acc@1"] == 100.0 > result["without"]["dev"]["acc@1"]
    dev = sum(c["split"] == "dev" for c in commits)
    assert result["stub"]["dev"]["n"] == result["without"]["dev"]["n"] == dev
