"""Trial features for locate's scorer, on the dev projects only.

A trial is a column computed beside each candidate's feature record (from
the commit, the records and today's model's first pass over them); the
shipped kind of model (train_locate_scorer.py: listwise, L2 0.001 toward
the hand weights, the history hidden for half the training commits) is
fitted on the train projects with and without the trial's columns and both
are scored on the dev projects. Test is never scored here: a trial that
wins on dev becomes a feature of index/locate_scorer.py, and the trainer
reports test once for it.

    python bench/locate_trial.py folder_mates stem_mates stub

docs/decisions.md, "Locate: folder and stem mates in the first pass, a stub
feature, a pooled fit", holds the figures of the trials below.
"""

from __future__ import annotations

import argparse
import posixpath
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench modules import each other by plain name

import train_locate_scorer as trainer  # noqa: E402

# The shipped model's regularisation and history drop (train_locate_scorer's chosen configuration).
L2 = 0.001
HISTORY_DROP = 0.5
_STUBS = (".pyi", ".d.ts", ".d.mts", ".d.cts", ".rbi")


def _share_of_mates(first_pass: np.ndarray, keys: list[str]) -> np.ndarray:
    """Each candidate's share of the first pass's softmax held by the other
    candidates with its key."""
    p = np.exp(first_pass - first_pass.max())
    p /= p.sum()
    held: dict[str, float] = {}
    for key, share in zip(keys, p):
        held[key] = held.get(key, 0.0) + share
    return np.asarray([held[key] - share for key, share in zip(keys, p)])


def folder_mates(commit: dict, paths: list[str], first_pass: np.ndarray) -> np.ndarray:
    return _share_of_mates(first_pass, [posixpath.dirname(p) for p in paths])


def stem_mates(commit: dict, paths: list[str], first_pass: np.ndarray) -> np.ndarray:
    """Mates by stem (`foo.h` / `foo.c`; OCaml's `foo_intf.ml` beside `foo.ml`)."""
    stems = [posixpath.basename(p).split(".")[0].removesuffix("_intf") for p in paths]
    return _share_of_mates(first_pass, stems)


def stub(commit: dict, paths: list[str], first_pass: np.ndarray) -> np.ndarray:
    return np.asarray([float(p.endswith(_STUBS)) for p in paths])


# (the commit, its candidates' paths, today's model's raw scores of them) -> a column.
Trial = Callable[[dict, list[str], np.ndarray], np.ndarray]
TRIALS: dict[str, Trial] = {"folder_mates": folder_mates, "stem_mates": stem_mates, "stub": stub}


def trial_records(commit: dict, trials: list[Trial], today, history: bool = True,
                  semantic: bool = False) -> np.ndarray:
    """The commit's records (train_locate_scorer.commit_records) with each
    trial's column after them."""
    x = trainer.commit_records(commit, history, semantic)
    paths = [c["path"] for c in commit["candidates"]]
    first_pass = today.raw(x)
    return np.column_stack([x, *(trial(commit, paths, first_pass) for trial in trials)]) if trials else x


def fit(train: list[dict], trials: list[Trial], today) -> np.ndarray:
    """Linear weights over the records and the trials' columns: listwise,
    L2 toward the hand weights (0 for a trial's column) at their best scale."""
    rows = []
    for commit in train:
        y = trainer.labels(commit)
        if not y.any():
            continue
        x = trial_records(commit, trials, today, not trainer.seen_without(commit, HISTORY_DROP))
        hand = np.asarray(trainer.hand_scores(commit))
        keep = np.union1d(np.argsort(-hand, kind="stable")[:trainer.TRAIN_CANDIDATES], np.flatnonzero(y))
        rows.append((x[keep], y[keep]))
    return trainer.listwise_weights(rows, L2, np.r_[trainer.hand_vector(), np.zeros(len(trials))])


def run(commits: list[dict], names: list[str], today=None) -> dict:
    """Dev metrics of the fit without trials and with each of ``names`` (and
    all of them together when more than one), and each trial's fitted weight."""
    today = today or trainer.todays_scorer()
    train = [c for c in commits if c["split"] == "train"]
    dev = [c for c in commits if c["split"] == "dev"]
    variants = {"without": []} | {name: [name] for name in names}
    if len(names) > 1:
        variants["all"] = list(names)
    out = {}
    for label, chosen in variants.items():
        trials = [TRIALS[name] for name in chosen]
        w = fit(train, trials, today)
        scores = [trial_records(c, trials, today) @ w for c in dev]
        out[label] = {"dev": trainer.metrics(dev, scores),
                      "weights": dict(zip(chosen, np.round(w[len(trainer.FEATURES):], 3).tolist()))}
    return out


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("trials", nargs="+", choices=sorted(TRIALS))
    parser.add_argument("--dumps", default=trainer.DUMPS, help="glob of the feature dumps")
    args = parser.parse_args()
    commits, data_id = trainer.load(args.dumps)
    print(f"dumps {data_id}; embeddings off; dev projects only", file=sys.stderr)
    for label, result in run(commits, args.trials).items():
        m = result["dev"]
        print(f"{label}: dev Acc@1 {m['acc@1']} Acc@5 {m['acc@5']} Acc@10 {m['acc@10']} MRR {m['mrr']}"
              + (f"; weights {result['weights']}" if result["weights"] else ""))


if __name__ == "__main__":
    main()
