"""Locate, step 3: one scorer over the candidates' feature records, and the selection.

A candidate's feature record (:func:`records`) is its signals
(locate_signals.py), each 0 when absent, cheap facts about its path (the
shared classifier's classes, index/paths.py; depth, language group), how many
signals point at it, its place among the other candidates (in the
language most of them are in; its rank by ``text``), how much of its
file or folder name the text says (``name``), and the repository's
git history of it (locate_history.py: read in the candidate's signals dict
under :data:`HISTORY_FEATURES`' names, all 0 without a repository; no signal).
``generated`` is its path's class or, read there under that name, the
store's word that its text says a program wrote it (paths.says_generated). The
scorer's weights are read from a shipped model file
(``index/models/locate-scorer.json``, checked by sha256) that
bench/train_locate_scorer.py writes: it fits candidates (logistic, pairwise,
listwise, LightGBM lambdarank) on fix commits mined from many projects,
split by project, keeps the one best on the dev projects and ships it only
if it beats the hand weights on dev and test. Today that is a linear
listwise model (L2 toward the hand weights) fitted on 1,597 commits of 64
projects with the git-history features, the history hidden for half of
them (docs/decisions.md, "Locate: the repository's git history as
evidence" and "Locate's history model: linear, not trees").

Two kinds of model read the same records: ``linear`` (a logistic model: the
score is the probability, on the training projects, that a candidate is one
of the files the fix changed) and ``trees`` (a boosted ranking ensemble:
the score is its raw sum, comparable only within one call). Each scored
file carries its largest feature contributions (``why``): additive, they
sum with the model's bias to the score's logit (linear) or raw value (trees,
by path attribution).

Selection is a total order: score, then path. The first k of a list of n > k
are the list of k.
"""

from __future__ import annotations

import functools
import math
import posixpath
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ctxls.index.locate_history import HISTORY_FEATURES
from ctxls.index.locate_signals import SIGNALS
from ctxls.index.model_file import read_checked_json
from ctxls.index.paths import (is_doc_path, is_generated_path, is_test_or_doc, is_test_path,
                               is_vendored_path)
from ctxls.index.tokenize import query_terms

MODEL_PATH = Path(__file__).parent / "models" / "locate-scorer.json"
MODEL_SHA256 = "96c496f2ff64d57ae08ac5d24295dbc3e00be21df120ccae44aac99ec686bedd"

# Language groups by extension: the fix of a bug report is mostly in code of
# the project's main language; prose and configuration files seldom.
_PYTHON = (".py", ".pyi", ".pyx")
_SCRIPT = (".js", ".jsx", ".mjs", ".cjs", ".ts", ".tsx", ".vue", ".svelte")
_COMPILED = (".java", ".kt", ".scala", ".go", ".rs", ".c", ".h", ".cc", ".cpp", ".hpp", ".cs",
             ".swift", ".rb", ".php")
_BARRELS = frozenset({"__init__.py", "index.ts", "index.js", "index.mjs", "mod.rs", "lib.rs"})
# The path classes a caller asking for tests wants treated as first-party.
_TEST_CLASSES = ("test_or_doc", "test", "doc")

FEATURES = (*SIGNALS, "test_or_doc", "test", "doc", "vendored", "generated", "barrel", "depth",
            "python", "script", "compiled", "signal_count", "max_signal", "main_language",
            "text_rank", *HISTORY_FEATURES, "name")
_GROUPS = (FEATURES.index("python"), FEATURES.index("script"), FEATURES.index("compiled"))


@functools.lru_cache(maxsize=16384)
def _path_features(path: str) -> tuple[float, ...]:
    depth = path.count("/")
    return (float(is_test_or_doc(path)), float(is_test_path(path)), float(is_doc_path(path)),
            float(is_vendored_path(path)), float(is_generated_path(path)),
            float(posixpath.basename(path) in _BARRELS), min(depth, 10) / 10,
            float(path.endswith(_PYTHON)), float(path.endswith(_SCRIPT)),
            float(path.endswith(_COMPILED)))


@functools.lru_cache(maxsize=16384)
def _name_words(name: str) -> frozenset[str]:
    """The index words of a file or folder name (``TextWriter`` → textwriter,
    text, writer), digits and words under three letters left out."""
    return frozenset(w for w in query_terms(name) if len(w) >= 3 and not w.isdigit())


def text_terms(text: str) -> frozenset[str]:
    """The words of a query text the ``name`` feature compares names with."""
    return frozenset(query_terms(text))


def name_match(path: str, terms: frozenset[str]) -> float:
    """The ``name`` feature: the larger share of the file's name (its stem)
    and of its folder's name whose words the text says. Fix descriptions name
    the module they change ("the encoder drops timezones" → encoder.py): on
    the fix-commit projects Acc@1 +2.7 / MRR +0.017 (dev), +0.3 / +0.008
    (test) (docs/decisions.md, "Locate: the file's name as evidence")."""
    if not terms:
        return 0.0
    folder, _, file_name = path.rpartition("/")
    best = 0.0
    for name in (file_name.split(".")[0], folder.rpartition("/")[2]):
        words = _name_words(name) if name else frozenset()
        if words:
            best = max(best, len(words & terms) / len(words))
    return best


def features(path: str, signals: dict[str, float], include_tests: bool = False,
             terms: frozenset[str] = frozenset()) -> list[float]:
    """The feature record of one candidate on its own, in :data:`FEATURES`
    order (the features of its place among the others 0: :func:`records`).
    With ``include_tests`` its test and doc classes read 0: the caller asked
    for them as for first-party code."""
    values = [float(signals.get(s, 0.0)) for s in SIGNALS]
    present = [v for v in values if v > 0]
    path_part = list(_path_features(path))
    if include_tests:
        for name in _TEST_CLASSES:
            path_part[FEATURES.index(name) - len(SIGNALS)] = 0.0
    generated = FEATURES.index("generated") - len(SIGNALS)
    path_part[generated] = max(path_part[generated], float(signals.get("generated", 0.0)))
    history = [float(signals.get(h, 0.0)) for h in HISTORY_FEATURES]
    return (values + path_part + [len(present) / len(SIGNALS), max(present, default=0.0), 0.0, 0.0]
            + history + [name_match(path, terms)])


def records(candidates: dict[str, dict[str, float]], include_tests: bool = False,
            terms: frozenset[str] = frozenset()) -> tuple[list[str], np.ndarray]:
    """The candidates' paths (sorted) and their feature records (``terms``:
    the query text's, :func:`text_terms`), with the
    features of a candidate's place among the others: ``main_language``, its
    language group is the one most candidates are in; ``text_rank``,
    1 / (1 + its rank by the ``text`` signal)."""
    paths = sorted(candidates)
    out = np.asarray([features(p, candidates[p], include_tests, terms) for p in paths],
                     dtype=np.float64).reshape(len(paths), len(FEATURES))
    if not paths:
        return paths, out
    groups = out[:, _GROUPS]
    main = int(np.argmax(groups.sum(axis=0)))
    out[:, FEATURES.index("main_language")] = groups[:, main]
    text = out[:, FEATURES.index("text")]
    order = sorted(range(len(paths)), key=lambda i: (-text[i], paths[i]))
    rank_of = np.empty(len(paths))
    rank_of[order] = np.arange(len(paths))
    out[:, FEATURES.index("text_rank")] = np.where(text > 0, 1.0 / (1.0 + rank_of), 0.0)
    return paths, out


@dataclass(frozen=True)
class Contribution:
    feature: str  # one of FEATURES
    value: float  # the feature's value in the record
    contribution: float  # its additive share of the score's logit (linear) or raw value (trees)


class ScorerUnavailable(RuntimeError):
    pass


class Scorer:
    """A fitted model over :data:`FEATURES` records: ``linear`` or ``trees``."""

    def __init__(self, model: dict):
        if model.get("features") != list(FEATURES):
            raise ScorerUnavailable("the locate scorer was fitted on other features than these")
        self.kind = model["kind"]
        self.bias = float(model.get("bias", 0.0))
        self.training = model.get("training", {})
        if self.kind == "linear":
            self.weights = np.asarray(model["weights"], dtype=np.float64)
        elif self.kind == "trees":
            self.trees = [_Tree(t) for t in model["trees"]]
        else:
            raise ScorerUnavailable(f"unknown locate scorer kind {self.kind!r}")

    def raw(self, records: np.ndarray) -> np.ndarray:
        """The logit (linear) or the ensemble's sum (trees) of each row."""
        if not len(records):
            return np.zeros(0)
        if self.kind == "linear":
            return records @ self.weights + self.bias
        return self.bias + sum(tree.predict(records) for tree in self.trees)

    def score(self, raw: float) -> float:
        """What a hit's ``score`` says: a probability in 0..1 (linear), else the raw value."""
        if self.kind == "linear":
            return 1.0 / (1.0 + math.exp(-raw))
        return raw

    def contributions(self, record: np.ndarray) -> list[Contribution]:
        """Each feature's additive share of ``record``'s raw score (those not
        0), largest magnitude first."""
        if self.kind == "linear":
            shares = record * self.weights
        else:
            shares = np.zeros(len(FEATURES))
            for tree in self.trees:
                tree.attribute(record, shares)
        out = [Contribution(FEATURES[i], float(record[i]), float(shares[i]))
               for i in range(len(FEATURES)) if abs(shares[i]) > 1e-9]
        out.sort(key=lambda c: (-abs(c.contribution), c.feature))
        return out


class _Tree:
    """One regression tree of a boosted ensemble, as flat arrays: a node's
    feature and threshold (go left when ``value <= threshold``), children
    (negative: ``~leaf``), each node's mean value (for path attribution)."""

    def __init__(self, tree: dict):
        self.feature = np.asarray(tree["feature"], dtype=np.int64)
        self.threshold = np.asarray(tree["threshold"], dtype=np.float64)
        self.left = np.asarray(tree["left"], dtype=np.int64)
        self.right = np.asarray(tree["right"], dtype=np.int64)
        self.node_value = np.asarray(tree["node_value"], dtype=np.float64)
        self.leaf_value = np.asarray(tree["leaf_value"], dtype=np.float64)

    def predict(self, records: np.ndarray) -> np.ndarray:
        if not len(self.feature):  # a single leaf
            return np.full(len(records), self.leaf_value[0])
        node = np.zeros(len(records), dtype=np.int64)
        rows = np.arange(len(records))
        inner = node >= 0
        while inner.any():
            at = node[inner]
            goes_left = records[rows[inner], self.feature[at]] <= self.threshold[at]
            node[inner] = np.where(goes_left, self.left[at], self.right[at])
            inner = node >= 0
        return self.leaf_value[~node]

    def attribute(self, record: np.ndarray, shares: np.ndarray) -> None:
        """Adds to ``shares`` each split feature's change of the expected value
        along ``record``'s path (Saabas): the shares sum to the leaf's value
        less the root's."""
        if not len(self.feature):
            return
        node = 0
        while node >= 0:
            feature = self.feature[node]
            child = self.left[node] if record[feature] <= self.threshold[node] else self.right[node]
            after = self.leaf_value[~child] if child < 0 else self.node_value[child]
            shares[feature] += after - self.node_value[node]
            node = child

    @property
    def root_value(self) -> float:
        return float(self.node_value[0]) if len(self.feature) else float(self.leaf_value[0])


def load_scorer(path: Path = MODEL_PATH, sha256: str | None = MODEL_SHA256) -> Scorer:
    """The shipped model (checked by sha256), or another model file (``sha256`` None)."""
    return Scorer(read_checked_json(path, sha256, ScorerUnavailable))


@functools.lru_cache(maxsize=1)
def shipped_scorer() -> Scorer:
    return load_scorer()


@dataclass(frozen=True)
class Scored:
    path: str
    raw: float
    score: float
    record: np.ndarray


def rank(scorer: Scorer, candidates: dict[str, dict[str, float]], n: int,
         include_tests: bool = False, terms: frozenset[str] = frozenset()) -> list[Scored]:
    """The best ``n`` candidates (path -> signals), best first; ties by path
    (``terms``: the query text's, :func:`text_terms`)."""
    paths, found = records(candidates, include_tests, terms)
    raw = scorer.raw(found)
    order = sorted(range(len(paths)), key=lambda i: (-raw[i], paths[i]))[:n]
    return [Scored(paths[i], float(raw[i]), scorer.score(float(raw[i])), found[i]) for i in order]
