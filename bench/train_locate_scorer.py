"""Fit locate's scorer (index/locate_scorer.py) on fix commits mined from many
projects, split by project, and write the shipped model file.

Reads the feature dumps of ``--dumps`` (one JSON line per fix commit:
``{project, commit, split, gold, candidates: [{path, signals, test_or_doc,
gold}]}``, as bench's miner writes them from ``Locator.evidence``), turns each
candidate into its feature record (:func:`ctxls.index.locate_scorer.records`)
and fits, on the ``train`` projects:

* ``hand``: the hand weights the scorer replaces, as a linear model whose
  scale and bias only are fitted (a calibration: the same ranking);
* ``logistic``: a pointwise logistic model (L2);
* ``pairwise``: a linear RankNet (logistic loss on gold-minus-other pairs of
  one commit), then a logistic calibration of its score;
* ``listwise``: a linear model fitted by a softmax over each commit's
  candidates (the loss: minus the log of the gold files' share), L2 toward
  zero; ``listwise-hand``: the same with L2 toward the hand weights (at
  their best scale); both then calibrated like ``pairwise``;
* ``lambdarank``: LightGBM's lambdarank over a small grid of sizes, with and
  without monotone constraints (signals up, test and doc paths down)
  (training only: at run time the trees are evaluated with numpy).

The model is chosen on the ``dev`` projects (Acc@1 + Acc@5, then MRR) or,
with ``--folds K``, on train and dev pooled by K folds split by project (each
configuration fitted on the other folds' projects, scored on the held-out
ones), then refitted on them all; the
``test`` projects are scored once, for the chosen model and for the hand
weights it would replace (the baseline, :func:`hand_scores`). The chosen
model is adopted only if it beats both the hand weights and the model shipped
today on dev and on test, in Acc@1 and in MRR (:func:`beats`); with
``--replace-shipped`` (the shipped model's training data is no longer allowed)
the hand weights only; then ``--write`` writes
``index/models/locate-scorer.json`` and sets its sha256 in locate_scorer.py.
bench/locate.py's issue-style set (``--issue-set``, its stored answers) is
scored for both, never fitted or chosen on. ``--result`` writes a
bench/results file.

Acc@k: every gold file of the commit in the top k; Hit@k: one of them.
"""

from __future__ import annotations

import argparse
import datetime
import glob
import hashlib
import json
import os
import re
import subprocess
import sys
from pathlib import Path

import numpy as np
from scipy.optimize import minimize

from ctxls.index.locate_history import HISTORY_FEATURES
from ctxls.index.locate_scorer import FEATURES, MODEL_PATH, Scorer, records, text_terms
from ctxls.index.locate_signals import SIGNALS

sys.path.insert(0, str(Path(__file__).resolve().parent))  # the bench modules import each other by plain name

from locate_commits import relabelled  # noqa: E402

KS = (1, 3, 5, 10)
DUMPS = str(Path(__file__).resolve().parent / ".cache" / "locate_commits" / "features" / "*.jsonl")
# bench/locate.py's stored answers (the issue-style set).
ISSUE_SET = str(Path(__file__).resolve().parent / ".cache" / "locate" / "results-*.jsonl")
SCORER_SOURCE = Path(__file__).resolve().parent.parent / "index" / "locate_scorer.py"
# The hand weights the fitted scorer replaces (index/locate.py before issue 36):
# a weighted sum of the signals, tests and docs multiplied by 0.1.
HAND_WEIGHTS = {"frame": 2.0, "symbol": 1.0, "assignment": 2.0, "literal": 2.0, "path": 2.0,
                "message": 0.5, "import": 0.5, "text": 0.5, "title": 2.0, "semantic": 1.0}
HAND_TEST_FACTOR = 0.1
# The test factor as a linear model's additive weight: on the dev projects
# (550 commits) it ranks exactly as the factor does but for Acc@3 (67.3 vs 67.5).
HAND_TEST_WEIGHT = -3.0
# Candidates kept per commit for training (the best by the hand weights): the
# long tail of weak text matches is many rows and little information.
TRAIN_CANDIDATES = 200
L2 = (0.01, 0.1, 1.0)
LISTWISE_L2 = (0.001, 0.01, 0.1)
# lambdarank's monotone constraints: more evidence never lowers a score, a
# test or doc path never raises it.
MONOTONE = {**{s: 1 for s in SIGNALS}, "signal_count": 1, "max_signal": 1, "text_rank": 1,
            "test_or_doc": -1}
# Small ensembles (larger grids did not finish within minutes on the 2 loaded
# cores this is run on): 3 or 7 leaves, with or without the constraints.
LGB_GRID = [{"num_leaves": leaves, "n_estimators": trees, "learning_rate": 0.05, "min_child_samples": 50,
             "monotone": monotone}
            for leaves, trees in ((3, 300), (7, 100)) for monotone in (False, True)]


def load(pattern: str) -> tuple[list[dict], str]:
    """The commits of every dump, and an id of the data (sha256 of the files)."""
    digest = hashlib.sha256()
    commits = []
    for name in sorted(glob.glob(pattern)):
        data = Path(name).read_bytes()
        digest.update(Path(name).name.encode() + b"\0" + data)
        for line in data.decode().splitlines():
            commit = relabelled(json.loads(line)) if line.strip() else None
            if commit is not None:
                commits.append(commit)
    return commits, digest.hexdigest()[:16]


def hand_scores(commit: dict) -> list[float]:
    out = []
    for c in commit["candidates"]:
        total = sum(HAND_WEIGHTS.get(s, 0.0) * v for s, v in c["signals"].items())
        out.append(total * (HAND_TEST_FACTOR if c["test_or_doc"] else 1.0))
    return out


_HISTORY_COLUMNS = [FEATURES.index(f) for f in HISTORY_FEATURES]


def commit_records(commit: dict, history: bool = True, semantic: bool = True) -> np.ndarray:
    """The records of a commit's candidates, in the dump's order; without
    ``history`` the git-history features read 0 (a checkout without .git),
    without ``semantic`` the semantic signal does (embeddings off)."""
    # Without embeddings the signal is absent, not 0: it counts in signal_count and max_signal.
    paths, found = records({c["path"]: c["signals"] if semantic else
                            {k: v for k, v in c["signals"].items() if k != "semantic"}
                            for c in commit["candidates"]}, terms=text_terms(commit["text"]))
    at = {p: i for i, p in enumerate(paths)}
    out = found[[at[c["path"]] for c in commit["candidates"]]]
    if not history:
        out[:, _HISTORY_COLUMNS] = 0.0
    if WITHOUT:
        out[:, WITHOUT] = 0.0
    return out


def seen_without(commit: dict, share: float, salt: str = "") -> bool:
    """Whether a training commit is one of the ``share`` seen without a
    feature group (its history; with ``salt`` "semantic", the semantic
    signal), by a hash of the commit: the same ones every run."""
    return int(hashlib.sha256((commit["commit"] + salt).encode()).hexdigest()[:8], 16) / 0xFFFFFFFF < share


def load_semantic(commits: list[dict], folder: str) -> str:
    """Each candidate's ``semantic`` signal from ``bench/locate_commits.py
    --semantic``'s files in ``folder`` (the dumps are answered with
    embeddings off); returns an id of those files."""
    digest = hashlib.sha256()
    values: dict[str, dict[str, float]] = {}
    for name in sorted(glob.glob(str(Path(folder) / "*.jsonl"))):
        data = Path(name).read_bytes()
        digest.update(Path(name).name.encode() + b"\0" + data)
        for line in data.decode().splitlines():
            if line.strip():
                row = json.loads(line)
                values[row["commit"]] = row["semantic"]
    missing = 0
    for commit in commits:
        found = values.get(commit["commit"])
        missing += found is None
        for c in commit["candidates"]:
            c["signals"] = {k: v for k, v in c["signals"].items() if k != "semantic"}
            if found and found.get(c["path"]):
                c["signals"]["semantic"] = found[c["path"]]
    if missing:
        print(f"--semantic: {missing} of {len(commits)} commits have no semantic signal", file=sys.stderr)
    return digest.hexdigest()[:16]


def labels(commit: dict) -> np.ndarray:
    return np.asarray([1.0 if c["gold"] else 0.0 for c in commit["candidates"]])


def metrics(commits: list[dict], scores: list[np.ndarray | list[float]]) -> dict:
    """Acc@k, Hit@k (in percent) and MRR over ``commits``; a gold file no
    evidence points at is a miss."""
    acc = {k: 0 for k in KS}
    hit = {k: 0 for k in KS}
    rr = 0.0
    for commit, score in zip(commits, scores):
        paths = [c["path"] for c in commit["candidates"]]
        order = sorted(range(len(paths)), key=lambda i: (-score[i], paths[i]))
        ranked = [paths[i] for i in order]
        gold = set(commit["gold"])
        first = next((i for i, p in enumerate(ranked) if p in gold), None)
        for k in KS:
            acc[k] += gold <= set(ranked[:k])
            hit[k] += first is not None and first < k
        rr += 0.0 if first is None else 1.0 / (first + 1)
    n = max(len(commits), 1)
    out = {f"acc@{k}": round(100 * acc[k] / n, 1) for k in KS}
    out |= {f"hit@{k}": round(100 * hit[k] / n, 1) for k in KS}
    out["mrr"] = round(rr / n, 3)
    out["n"] = len(commits)
    return out


def objective(m: dict) -> tuple:
    return (m["acc@1"] + m["acc@5"], m["mrr"])


# The share of training commits seen without their history (--history-drop),
# and whether the history features are used at all (--no-history).
HISTORY_DROP = [0.0]
USE_HISTORY = [True]
# The share of training commits seen with embeddings off (--semantic-drop).
SEMANTIC_DROP = [0.0]
# Features read as 0 everywhere (--without: an ablation).
WITHOUT: list[int] = []


def training_rows(commits: list[dict]) -> list[tuple[np.ndarray, np.ndarray]]:
    """Per commit with a gold candidate: its records and labels, the best
    TRAIN_CANDIDATES by the hand weights (gold ones always kept)."""
    out = []
    for commit in commits:
        y = labels(commit)
        if not y.any():
            continue
        x = commit_records(commit, USE_HISTORY[0] and not seen_without(commit, HISTORY_DROP[0]),
                           not seen_without(commit, SEMANTIC_DROP[0], "semantic"))
        hand = np.asarray(hand_scores(commit))
        keep = np.argsort(-hand, kind="stable")[:TRAIN_CANDIDATES]
        keep = np.union1d(keep, np.flatnonzero(y))
        out.append((x[keep], y[keep]))
    return out


def _logistic(x: np.ndarray, y: np.ndarray, l2: float, sample_weight: np.ndarray) -> np.ndarray:
    """Weights (bias last) of an L2 logistic regression, by L-BFGS."""
    xb = np.hstack([x, np.ones((len(x), 1))])

    def loss(w):
        z = xb @ w
        p = 1 / (1 + np.exp(-z))
        ll = sample_weight * (np.logaddexp(0, z) - y * z)
        grad = xb.T @ (sample_weight * (p - y))
        reg = l2 * np.r_[w[:-1], 0.0]
        return ll.sum() / sample_weight.sum() + 0.5 * l2 * (w[:-1] @ w[:-1]), \
            grad / sample_weight.sum() + reg

    return minimize(loss, np.zeros(xb.shape[1]), jac=True, method="L-BFGS-B").x


def fit_logistic(rows, l2: float) -> dict:
    x = np.vstack([r[0] for r in rows])
    y = np.concatenate([r[1] for r in rows])
    # Each commit weighs the same, whatever its number of candidates.
    weight = np.concatenate([np.full(len(r[1]), 1.0 / len(r[1])) for r in rows])
    w = _logistic(x, y, l2, weight)
    return {"kind": "linear", "weights": w[:-1].tolist(), "bias": float(w[-1])}


def fit_pairwise(rows, l2: float, rng: np.random.Generator) -> dict:
    """RankNet with a linear score: gold minus other differences, at most 50
    pairs per gold file; then the score calibrated to a probability."""
    diffs = []
    for x, y in rows:
        gold, other = np.flatnonzero(y), np.flatnonzero(y == 0)
        if not len(other):
            continue
        for g in gold:
            chosen = rng.choice(other, size=min(50, len(other)), replace=False)
            diffs.append(x[g] - x[chosen])
    d = np.vstack(diffs)
    # Symmetric: each pair once each way, so no bias is needed.
    x = np.vstack([d, -d])
    y = np.r_[np.ones(len(d)), np.zeros(len(d))]
    return _calibrated(rows, _logistic(x, y, l2, np.ones(len(x)))[:-1])


class _Lists:
    """Training rows stacked for a listwise loss: each commit one contiguous group."""

    def __init__(self, rows):
        self.x = np.vstack([r[0] for r in rows])
        y = np.concatenate([r[1] for r in rows])
        sizes = np.asarray([len(r[1]) for r in rows])
        self.starts = np.r_[0, np.cumsum(sizes)[:-1]]
        self.group_of = np.repeat(np.arange(len(rows)), sizes)
        self.gold_mask = np.where(y > 0, 0.0, -np.inf)  # the gold rows' softmax: the others out
        self.commits = len(rows)

    def _log_sum_exp(self, z: np.ndarray) -> tuple[np.ndarray, np.ndarray]:
        """Per group, log(sum(exp z)) and each row's softmax share."""
        top = np.maximum.reduceat(z, self.starts)
        shifted = np.exp(z - top[self.group_of])
        total = np.add.reduceat(shifted, self.starts)
        return top + np.log(total), shifted / total[self.group_of]

    def loss(self, w: np.ndarray) -> tuple[float, np.ndarray]:
        """Mean over commits of -log(the gold files' share of the softmax over
        the candidates' linear scores), and its gradient."""
        z = self.x @ w
        log_all, p_all = self._log_sum_exp(z)
        log_gold, p_gold = self._log_sum_exp(z + self.gold_mask)
        return float((log_all - log_gold).mean()), self.x.T @ (p_all - p_gold) / self.commits


def _calibrated(rows, w: np.ndarray) -> dict:
    """A linear score ``w`` with its scale and bias fitted as a logistic model
    (the ranking unchanged; the score a probability)."""
    xs = np.vstack([r[0] for r in rows])
    ys = np.concatenate([r[1] for r in rows])
    weight = np.concatenate([np.full(len(r[1]), 1.0 / len(r[1])) for r in rows])
    scale, bias = _logistic((xs @ w)[:, None], ys, 0.0, weight)
    return {"kind": "linear", "weights": (scale * w).tolist(), "bias": float(bias)}


def hand_vector() -> np.ndarray:
    """The hand weights over FEATURES (the test factor as HAND_TEST_WEIGHT)."""
    return np.asarray([HAND_WEIGHTS.get(f, HAND_TEST_WEIGHT if f == "test_or_doc" else 0.0)
                       for f in FEATURES])


def listwise_weights(rows, l2: float, hand: np.ndarray | None) -> np.ndarray:
    """Linear weights of a listwise (softmax) loss over ``rows``, the L2
    pulling toward zero or toward ``hand`` (a weight per column) at the scale
    that fits it best."""
    lists = _Lists(rows)
    prior = np.zeros(rows[0][0].shape[1])
    if hand is not None:
        scale = minimize(lambda a: lists.loss(a[0] * hand)[0], np.ones(1), method="Nelder-Mead").x[0]
        prior = scale * hand

    def loss(w):
        value, grad = lists.loss(w)
        d = w - prior
        return value + 0.5 * l2 * d @ d, grad + l2 * d

    return minimize(loss, prior.copy(), jac=True, method="L-BFGS-B").x


def fit_listwise(rows, l2: float, toward_hand: bool) -> dict:
    """A linear listwise (softmax) model, its L2 pulling toward zero or toward
    the hand weights at the scale that fits them best; then calibrated."""
    return _calibrated(rows, listwise_weights(rows, l2, hand_vector() if toward_hand else None))


def fit_lambdarank(rows, params: dict) -> dict:
    import lightgbm  # training only: never imported at run time

    x = np.vstack([r[0] for r in rows])
    y = np.concatenate([r[1] for r in rows])
    data = lightgbm.Dataset(x, y, group=[len(r[1]) for r in rows])
    options = {"objective": "lambdarank", "verbose": -1, "deterministic": True, "force_row_wise": True,
               "seed": 0, "num_threads": 2,
               **{k: v for k, v in params.items() if k not in ("n_estimators", "monotone")}}
    if params.get("monotone"):
        options["monotone_constraints"] = [MONOTONE.get(f, 0) for f in FEATURES]
        options["monotone_constraints_method"] = "advanced"
    booster = lightgbm.train(options, data, num_boost_round=params["n_estimators"])
    return {"kind": "trees", "bias": 0.0,
            "trees": [_flat_tree(t["tree_structure"]) for t in booster.dump_model()["tree_info"]]}


def _flat_tree(root: dict) -> dict:
    """A LightGBM tree as locate_scorer's flat arrays (children: node index,
    or ``~leaf`` for a leaf)."""
    tree = {"feature": [], "threshold": [], "left": [], "right": [], "node_value": [], "leaf_value": []}
    if "leaf_value" in root:  # a single leaf
        tree["leaf_value"].append(root["leaf_value"])
        return tree

    def visit(node: dict) -> int:
        if "leaf_value" in node:
            tree["leaf_value"].append(node["leaf_value"])
            return ~(len(tree["leaf_value"]) - 1)
        if node["decision_type"] != "<=":
            raise ValueError(f"unexpected split {node['decision_type']}")
        at = len(tree["feature"])
        tree["feature"].append(node["split_feature"])
        tree["threshold"].append(node["threshold"])
        tree["node_value"].append(node["internal_value"])
        tree["left"].append(0)
        tree["right"].append(0)
        tree["left"][at] = visit(node["left_child"])
        tree["right"][at] = visit(node["right_child"])
        return at

    visit(root)
    return tree


def fit_hand(rows) -> dict:
    """The hand weights as a linear model (the test factor 0.1 as an additive
    HAND_TEST_WEIGHT: the same ranking on the dev projects), only their scale
    and bias fitted: a logistic calibration, so the score is a probability."""
    return _calibrated(rows, hand_vector())


def model_configs(wanted: list[str]) -> list[tuple[str, object]]:
    """(name, fit: training rows -> model) of every configuration tried, the
    simplest first (a tie on dev goes to it)."""
    configs = [("hand weights, calibrated", fit_hand)] if "hand" in wanted else []
    for l2 in L2:
        if "logistic" in wanted:
            configs.append((f"logistic l2={l2}", lambda rows, l2=l2: fit_logistic(rows, l2)))
        if "pairwise" in wanted:
            configs.append((f"pairwise l2={l2}",
                            lambda rows, l2=l2: fit_pairwise(rows, l2, np.random.default_rng(0))))
    for l2 in LISTWISE_L2:
        if "listwise" in wanted:
            configs.append((f"listwise l2={l2}", lambda rows, l2=l2: fit_listwise(rows, l2, False)))
        if "listwise-hand" in wanted:
            configs.append((f"listwise l2={l2} toward the hand weights",
                            lambda rows, l2=l2: fit_listwise(rows, l2, True)))
    if "lambdarank" in wanted:
        for params in LGB_GRID:
            configs.append((f"lambdarank {params}", lambda rows, p=params: fit_lambdarank(rows, p)))
    return configs


def project_folds(commits: list[dict], folds: int) -> list[int]:
    """Each commit's fold, by a hash of its project (a project in one fold only)."""
    return [int(hashlib.sha256(c["project"].encode()).hexdigest()[:8], 16) % folds for c in commits]


def scores_of(model: dict, commits: list[dict], history: bool | None = None,
              semantic: bool = True) -> list[np.ndarray]:
    scorer = model if isinstance(model, Scorer) else Scorer({"features": list(FEATURES), **model})
    history = USE_HISTORY[0] if history is None else history
    return [scorer.raw(commit_records(c, history, semantic)) for c in commits]


def todays_scorer(path: Path = MODEL_PATH) -> Scorer:
    """The model file as it is before this fit: a linear model fitted on
    fewer features (before the git-history ones) reads the new ones as
    weighing nothing."""
    model = json.loads(path.read_text())
    if model["kind"] != "linear" or model["features"] == list(FEATURES):
        return Scorer(model)
    weights = dict(zip(model["features"], model["weights"]))
    return Scorer(dict(model, features=list(FEATURES), weights=[weights.get(f, 0.0) for f in FEATURES]))


def write_model(model: dict, path: Path = MODEL_PATH, scorer_source: Path = SCORER_SOURCE) -> str:
    """Writes the model file and sets its sha256 in the scorer's source."""
    data = (json.dumps(model, indent=1) + "\n").encode()
    path.write_bytes(data)
    sha = hashlib.sha256(data).hexdigest()
    source = scorer_source.read_text()
    scorer_source.write_text(re.sub(r'MODEL_SHA256 = "[0-9a-f]{64}"', f'MODEL_SHA256 = "{sha}"', source))
    return sha


def commit_id() -> str:
    head = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True, text=True).stdout.strip()
    dirty = subprocess.run(["git", "status", "--porcelain", "--untracked-files=no"],
                           capture_output=True, text=True).stdout.strip()
    return head + ("+dirty" if dirty else "")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--dumps", default=DUMPS, help="glob of the feature dumps")
    parser.add_argument("--models", default="hand,logistic,pairwise,listwise,listwise-hand,lambdarank")
    parser.add_argument("--write", action="store_true", help="write the chosen model file")
    parser.add_argument("--result", help="write a bench/results file of this name")
    parser.add_argument("--folds", type=int, default=0,
                        help="pool train and dev, choose by this many folds split by project")
    parser.add_argument("--issue-set", default=ISSUE_SET,
                        help="glob of bench/locate.py's stored answers, scored for the chosen model")
    parser.add_argument("--history-drop", type=float, default=0.0,
                        help="this share of training commits is seen without its git history")
    parser.add_argument("--semantic", metavar="FOLDER",
                        help="the semantic signal from bench/locate_commits.py --semantic's files")
    parser.add_argument("--semantic-drop", type=float, default=0.0,
                        help="this share of training commits is seen with embeddings off")
    parser.add_argument("--without", default="",
                        help="comma-separated features read as 0 everywhere (an ablation)")
    parser.add_argument("--no-history", action="store_true",
                        help="fit without the git-history features (they read 0 everywhere)")
    parser.add_argument("--replace-shipped", action="store_true",
                        help="adopt the chosen model without a gain over the shipped one (still "
                             "better than the hand weights): the shipped model was fitted on a "
                             "project no longer allowed, e.g. one reserved since")
    parser.add_argument("--dev-only", action="store_true",
                        help="stop after choosing on dev: the test projects are not scored")
    parser.add_argument("--score-only", metavar="SECTION",
                        help="fit nothing: score today's model on the dumps' dev and test projects "
                             "(with --result, a result file of this section)")
    args = parser.parse_args()
    HISTORY_DROP[0] = args.history_drop
    USE_HISTORY[0] = not args.no_history
    WITHOUT[:] = [FEATURES.index(f) for f in args.without.split(",") if f]
    SEMANTIC_DROP[0] = args.semantic_drop
    commits, data_id = load(args.dumps)
    if args.semantic:
        data_id += "+semantic " + load_semantic(commits, args.semantic)
    by_split = {s: [c for c in commits if c["split"] == s] for s in ("train", "dev", "test")}
    projects = {s: sorted({c["project"] for c in cs}) for s, cs in by_split.items()}
    for split, cs in by_split.items():
        print(f"{split}: {len(cs)} commits of {len(projects[split])} projects", file=sys.stderr)
    if set(projects["train"]) & (set(projects["dev"]) | set(projects["test"])) or \
            set(projects["dev"]) & set(projects["test"]):
        raise SystemExit("the splits share a project")
    if args.score_only:
        report = todays_figures(by_split, projects)
        print(json.dumps(report, indent=1))
        if args.result:
            kinds = {c.get("kind") for c in commits}
            what = ("issue-like tasks (bench/locate_commits.py --with-tests): a fix commit's subject and the "
                    "first block of test code it adds (a reproduction, as an issue's example), the gold its "
                    "modified source files" if kinds == {"fix-with-test"} else
                    "fix commits (bench/locate_commits.py): a cleaned commit message, the gold its modified "
                    "source files")
            write_result(args.result, args.score_only, score_rows(report), report,
                         f"{len(by_split['dev']) + len(by_split['test'])} {what}, of the dev and "
                         "test projects, split by project; today's shipped model, with the git "
                         "history, embeddings off, fitted on none of these tasks; Acc@k: every gold file "
                         "in the top k")
        return
    configs = model_configs(args.models.split(","))
    if args.folds:
        # Train and dev pooled; each configuration scored on every fold's held-out
        # projects by a fit on the others; the chosen one refitted on them all.
        pooled = by_split["train"] + by_split["dev"]
        dev = pooled
        folds = project_folds(pooled, args.folds)
        held_out_scores = {name: [None] * len(pooled) for name, _ in configs}
        for fold in range(args.folds):
            rows = training_rows([c for c, f in zip(pooled, folds) if f != fold])
            for name, fit in configs:
                model = fit(rows)
                at = [i for i, f in enumerate(folds) if f == fold]
                for i, score in zip(at, scores_of(model, [pooled[i] for i in at])):
                    held_out_scores[name][i] = score
        rows = training_rows(pooled)
        tried = [{"model": name, "dev": metrics(pooled, held_out_scores[name])} for name, _ in configs]
    else:
        rows = training_rows(by_split["train"])
        dev = by_split["dev"]
        tried = [{"model": name, "dev": metrics(dev, scores_of(fit(rows), dev))} for name, fit in configs]
    baseline_dev = metrics(dev, [hand_scores(c) for c in dev])
    print(f"dev, hand weights: {baseline_dev}", file=sys.stderr)
    for row in tried:
        print(f"dev, {row['model']}: {row['dev']}", file=sys.stderr)
    best = max(range(len(configs)), key=lambda i: objective(tried[i]["dev"]))
    name, model = configs[best][0], configs[best][1](rows)
    # Today's shipped model (fitted before the history features: they weigh
    # nothing in it), and the chosen one read without history (no .git).
    today = todays_scorer()
    if not args.folds:
        without = {"chosen, no history": metrics(dev, scores_of(model, dev, False)),
                   "today's model": metrics(dev, scores_of(today, dev, False))}
        for key, m in without.items():
            print(f"dev, {key}: {m}", file=sys.stderr)
    if args.dev_only:
        print(f"chosen on dev: {name} (test not scored)", file=sys.stderr)
        return
    # The test projects, once, for the model chosen on dev and the hand weights.
    test = by_split["test"]
    chosen_test = metrics(test, scores_of(model, test))
    baseline_test = metrics(test, [hand_scores(c) for c in test])
    history_figures = {
        split: {"chosen": metrics(cs, scores_of(model, cs)),
                "chosen, no history": metrics(cs, scores_of(model, cs, False)),
                "today's model": metrics(cs, scores_of(today, cs, False)),
                "today's model, with history": metrics(cs, scores_of(today, cs, True)),
                **({"chosen, embeddings off": metrics(cs, scores_of(model, cs, semantic=False)),
                    "chosen, no history, embeddings off": metrics(cs, scores_of(model, cs, False, False)),
                    "today's model, with history, embeddings off": metrics(cs, scores_of(today, cs, True, False))}
                   if args.semantic else {})}
        for split, cs in (("dev", by_split["dev"]), ("test", test))}
    for split, figures in history_figures.items():
        for key, m in figures.items():
            print(f"{split}, {key}: {m}", file=sys.stderr)
    today_figures = {split: history_figures[split]["today's model, with history"] for split in ("dev", "test")}
    adopt = (beats(tried[best]["dev"], baseline_dev) and beats(chosen_test, baseline_test)
             and (args.replace_shipped or (beats(tried[best]["dev"], today_figures["dev"])
                                           and beats(chosen_test, today_figures["test"]))))
    print(f"chosen on dev: {name}\ntest, chosen: {chosen_test}\ntest, hand weights: {baseline_test}\n"
          f"{'adopted' if adopt else 'rejected: the shipped model is kept'}", file=sys.stderr)
    report = {"data": data_id, "projects": projects,
              "sizes": {s: {"commits": len(cs), "projects": len(projects[s])} for s, cs in by_split.items()},
              "chosen": name, "adopted": adopt, "tried": tried,
              "dev": {"chosen": tried[best]["dev"], "hand weights": baseline_dev,
                      "today's model": today_figures["dev"]},
              "test": {"chosen": chosen_test, "hand weights": baseline_test,
                       "today's model": today_figures["test"]},
              "history": history_figures, "history_drop": args.history_drop,
              "uses_history": USE_HISTORY[0]}
    issue_rows = issue_set(args.issue_set)
    if issue_rows:
        # The issue-style set (bench/locate.py, split by task): scored, never fitted or chosen on.
        report["issue-style set"] = {
            split: {"chosen": metrics(cs, scores_of(model, cs)),
                    "hand weights": metrics(cs, [hand_scores(c) for c in cs]),
                    "today's model": metrics(cs, scores_of(today, cs))}
            for split, cs in (("dev", [r for r in issue_rows if r["split"] == "dev"]),
                              ("test", [r for r in issue_rows if r["split"] == "test"]))}
    print(json.dumps(report, indent=1))
    if args.write and adopt:
        if model["kind"] == "linear" and not any(c["signals"].get("semantic") for c in
                                                 (c for commit in commits for c in commit["candidates"])):
            # The dumps are answered with embeddings off: `semantic` is never seen.
            # Its weight is carried over from the hand weights' ratio to `symbol`
            # (1 : 1, bench/locate.py's dev grid), unmeasured on these projects.
            weights = list(model["weights"])
            weights[FEATURES.index("semantic")] = weights[FEATURES.index("symbol")] * (
                HAND_WEIGHTS["semantic"] / HAND_WEIGHTS["symbol"])
            model = dict(model, weights=weights)
        shipped = {"version": 1, "kind": model["kind"], "features": list(FEATURES), "bias": model["bias"],
                   **({"weights": model["weights"]} if model["kind"] == "linear" else {"trees": model["trees"]}),
                   "training": {"data": f"locate_commits features {data_id}", "model": name,
                                "projects": projects, "dev": tried[best]["dev"], "test": chosen_test}}
        print(f"wrote {MODEL_PATH}, sha256 {write_model(shipped)}", file=sys.stderr)
    if args.result:
        section = (f"Locate on fix commits, semantic signal of {Path(args.semantic).name.removeprefix('semantic-')}"
                   if args.semantic else "Locate: the fitted scorer on fix commits")
        write_result(args.result, section, result_rows(report), report,
                     f"chosen on the dev projects: {name}; test scored once; "
                     + ("adopted, replacing the shipped model fitted on data no longer allowed "
                        "(better than the hand weights on dev and test, Acc@1 and MRR)"
                        if adopt and args.replace_shipped else
                        "adopted (better than the hand weights and today's model on dev and "
                        "test, Acc@1 and MRR)" if adopt else
                        "rejected (not better than the hand weights and today's model on dev "
                        "and test, Acc@1 and MRR): today's model is kept"))


def write_result(name: str, section: str, rows: list[dict], details: dict, notes: str) -> None:
    """bench/results/NAME.json (see bench/results/README.md)."""
    result = {"section": section, "issue": 36, "area": "Locate",
              "date": datetime.date.today().isoformat(), "commit": commit_id(),
              "command": "python bench/train_locate_scorer.py " + " ".join(sys.argv[1:]),
              "machine": f"2 cores, loaded (load average {os.getloadavg()[0]:.1f})",
              "rows": rows, "details": details, "notes": notes}
    path = Path(__file__).parent / "results" / f"{name}.json"
    path.write_text(json.dumps(result, indent=1) + "\n")
    print(f"wrote {path}", file=sys.stderr)


def todays_figures(by_split: dict[str, list[dict]], projects: dict[str, list[str]]) -> dict:
    """Today's shipped model on the dev and test commits: with and without the
    git history, the hand weights, the multi-file share, and per language."""
    today = todays_scorer()
    report = {}
    for split in ("dev", "test"):
        cs = by_split[split]
        by_language: dict[str, list[dict]] = {}
        for c in cs:
            by_language.setdefault(c["language"], []).append(c)
        report[split] = {
            "today's model, with history": metrics(cs, scores_of(today, cs, True)),
            "today's model, no history": metrics(cs, scores_of(today, cs, False)),
            "hand weights": metrics(cs, [hand_scores(c) for c in cs]),
            "projects": len(projects[split]),
            "multi-file share": round(100 * sum(len(c["gold"]) > 1 for c in cs) / max(len(cs), 1), 1),
            "by language (Acc@1/Acc@5/MRR, n)": {
                language: "{acc@1}/{acc@5}/{mrr}, {n}".format(**metrics(group, scores_of(today, group, True)))
                for language, group in sorted(by_language.items())}}
    return report


def score_rows(report: dict) -> list[dict]:
    """The result rows of ``--score-only``: the goals on test, the rest beside them."""
    test, dev = report["test"]["today's model, with history"], report["dev"]["today's model, with history"]
    what = f"test ({test['n']} tasks, {report['test']['projects']} projects), embeddings off"
    return [{"target": f"Acc@1, {what}", "value": str(test["acc@1"]), "goal": ">= 60", "met": test["acc@1"] >= 60},
            {"target": "Acc@5, the same", "value": str(test["acc@5"]), "goal": ">= 85", "met": test["acc@5"] >= 85},
            {"target": f"dev ({dev['n']} tasks, {report['dev']['projects']} projects): Acc@1 / @5 / MRR",
             "value": f"{dev['acc@1']} / {dev['acc@5']} / {dev['mrr']}", "goal": None, "met": None},
            {"target": "test: Acc@3 / @10 / MRR; Hit@1 / @5",
             "value": f"{test['acc@3']} / {test['acc@10']} / {test['mrr']}; {test['hit@1']} / {test['hit@5']}",
             "goal": None, "met": None}]


def result_rows(report: dict) -> list[dict]:
    """The result file's rows: the shipped model's figures (the chosen one if
    adopted, else today's model, or the hand weights in a report without it),
    beside the other's."""
    kept = "today's model" if "today's model" in report["test"] else "hand weights"
    shipped, other = ("chosen", "hand weights") if report["adopted"] else (kept, "chosen")

    def figures(m: dict, keys: tuple[str, ...]) -> str:
        return " / ".join(str(m[k]) for k in keys)

    test = report["test"]
    rows = [{"target": f"locate {key.replace('acc', 'Acc')} on the project-disjoint test (mined fix commits)",
             "value": f"{test[shipped][key]} ({other} {test[other][key]})", "goal": f">= {goal}",
             "met": test[shipped][key] >= goal} for key, goal in (("acc@1", 60), ("acc@5", 85))]
    keys = ("acc@1", "acc@5", "mrr")
    every = ("acc@1", "acc@3", "acc@5", "acc@10", "mrr")
    for split, by_model in report.get("history", {}).items():
        if "today's model, with history, embeddings off" in by_model:
            # A --semantic run: today's model with the signal and without, the chosen one with it.
            rows.append({"target": f"locate Acc@1 / @3 / @5 / @10 · MRR on the {split} projects "
                                   f"({by_model['chosen']['n']} fix commits, git history read): "
                                   f"today's model with the semantic signal / embeddings off · the chosen one",
                         "value": " · ".join(" / ".join(str(m[k]) for k in every) for m in (
                             by_model["today's model, with history"],
                             by_model["today's model, with history, embeddings off"], by_model["chosen"])),
                         "goal": None, "met": None})
            continue
        # The git-history features: the chosen model with them, without them (a
        # checkout without .git), and the model shipped before this fit.
        rows.append({"target": f"locate Acc@1 / @3 / @5 / @10 · MRR on the {split} projects "
                               f"({by_model['chosen']['n']} fix commits): with the git history / "
                               f"without it · the model before, with / without",
                     "value": " · ".join(" / ".join(str(m[k]) for k in every)
                                         for m in (by_model["chosen"], by_model["chosen, no history"],
                                                   by_model["today's model, with history"],
                                                   by_model["today's model"])),
                     "goal": None, "met": None})
    for split, m in report.get("issue-style set", {}).items():
        rows.append({"target": f"locate Acc@1 / Acc@5 / MRR on the issue-style set's {split} tasks "
                               f"({m[shipped]['n']}, embeddings off)",
                     "value": f"{figures(m[shipped], keys)} ({other} {figures(m[other], keys)})",
                     "goal": None, "met": None})
    return rows


def beats(m: dict, baseline: dict) -> bool:
    """Better than the baseline on both Acc@1 and MRR (the adoption rule)."""
    return m["acc@1"] > baseline["acc@1"] and m["mrr"] > baseline["mrr"]


def issue_set(pattern: str) -> list[dict]:
    """bench/locate.py's stored answers (the issue-style set: SWE-bench Lite
    tasks of three projects, split by task) as commits of this trainer's shape,
    embeddings off (``semantic`` dropped, as its ``--evaluate`` does for
    lexical); a task answered with several embedding models counts once."""
    rows = []
    seen = set()
    names = sorted(glob.glob(pattern))
    tasks_file = Path(names[0]).parent / "tasks.json" if names else None
    texts = ({t["id"]: t["text"] for t in json.loads(tasks_file.read_text())}
             if tasks_file and tasks_file.exists() else {})
    for name in names:
        for line in Path(name).read_text().splitlines():
            task = json.loads(line)
            if task["id"] in seen:
                continue
            seen.add(task["id"])
            gold = set(task["gold"])
            rows.append({"project": task["repo"], "split": task["split"], "gold": task["gold"],
                         "text": texts.get(task["id"], ""),
                         "candidates": [{"path": path, "test_or_doc": ev["t"], "gold": path in gold,
                                         "signals": {k: v for k, v in ev["s"].items() if k != "semantic"}}
                                        for path, ev in sorted(task["evidence"].items())]})
    return rows


if __name__ == "__main__":
    main()
