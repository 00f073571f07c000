"""Calibrated recall scores: an estimate of P(relevant) per hit, comparable across sources.

A hit's ``score`` is its source's ranking score: file hits' hybrid scores are
min-max fused over the query's candidates (the best scores about 1 whatever
the query), lexical file scores are BM25 (unbounded), written memory's hybrid
score is ``0.7·cosine + 0.3·(BM25 / best BM25)·coverage``. None of them says
how likely a hit is to answer the question, so none can be compared with
another source's, another folder's or another query's.

``calibrated`` is that likelihood: a logistic model per (source, mode) over
features that mean the same whatever the query (the hit's own cosine and
its list's best cosine, the share of the query's words the index holds at
all, which assemble's off-topic test reads too; for memory the cosine and the
share of the query's terms the row holds), plus the hit's score and place in
its own list. The models are fitted by bench/fit_recall_calibration.py
on labelled dev hits (set 4's dev projects for files, bench/memory.py's
queries for memory, split by project and by target) and shipped in
``index/models/recall-calibration.json`` (checked by sha256). Cosines are
model-specific: a (source, mode) has a model per embedding model it was fitted
for, and one without cosine features for any other model.

Within one source's list the calibrated values never rise down the list
(:func:`calibrate` takes the running minimum), so merging on them interleaves
sources and folders but never reorders one source's ranking.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from pathlib import Path

from ctxls.index.model_file import read_checked_json

MODEL_PATH = Path(__file__).parent / "models" / "recall-calibration.json"
MODEL_SHA256 = "2c0d4068a9c2f246f32c3a6d0116b85820942c6d0577cc3db712b325780a5292"

SOURCES = ("file", "memory")


@dataclass(frozen=True)
class Evidence:
    """What a hit's calibration reads besides its place in its list."""

    source: str  # "file" or "memory"
    mode: str  # the ranking that scored it: "lexical", "hybrid" or "semantic"
    score: float  # its source's raw score
    cosine: float | None = None  # its own cosine with the query (None: lexical, or no vector)
    coverage: float | None = None  # memory: the share of the query's terms the row holds
    model: str | None = None  # the embedding model of ``cosine``


@dataclass(frozen=True)
class QueryEvidence:
    """What a query's calibration reads of the index as a whole (Engine.topicality)."""

    term_coverage: float = 0.0  # share of the query's terms found anywhere in code and docs
    terms: int = 0  # how many terms the query has (tokenize.query_terms)


@dataclass(frozen=True)
class ListTop:
    """The best of one source's list: its top score and top cosine."""

    score: float
    cosine: float


def _cos(value: float | None) -> float:
    return value if value is not None else 0.0


# Each feature: its name -> its value from (hit, rank in its list, the list's top, query).
# The query's nearest cosine (topicality) is not one: the ANN index holds written
# memory's rows too, so with memory it is often a fact's, not a file's; the
# list's top cosine is the files' own.
FEATURE_VALUES = {
    "score": lambda e, rank, top, q: e.score,
    "log_score": lambda e, rank, top, q: math.log1p(max(e.score, 0.0)),
    "relative": lambda e, rank, top, q: e.score / top.score if top.score > 0 else 0.0,
    "first": lambda e, rank, top, q: 1.0 / (1.0 + rank),
    "cosine": lambda e, rank, top, q: _cos(e.cosine),
    "top_cosine": lambda e, rank, top, q: top.cosine,
    "coverage": lambda e, rank, top, q: e.coverage if e.coverage is not None else 0.0,
    # How many of the query's terms the row holds (log): all of a one-word
    # query is weak evidence, all of a sentence strong.
    "matched": lambda e, rank, top, q: math.log1p((e.coverage or 0.0) * q.terms),
    "query_coverage": lambda e, rank, top, q: q.term_coverage,
}

# (source, mode) -> its features with cosines, and without (a model not fitted for).
FEATURES: dict[tuple[str, str], tuple[tuple[str, ...], tuple[str, ...]]] = {
    ("file", "lexical"): (("log_score", "relative", "first", "query_coverage"),) * 2,
    ("file", "hybrid"): (("score", "first", "query_coverage", "cosine", "top_cosine"),
                         ("score", "first", "query_coverage")),
    ("file", "semantic"): (("score", "first", "cosine", "top_cosine"), ("relative", "first")),
    ("memory", "lexical"): (("coverage", "matched", "relative", "first", "query_coverage"),) * 2,
    ("memory", "hybrid"): (("score", "coverage", "matched", "first", "cosine", "query_coverage"),
                           ("coverage", "matched", "relative", "first", "query_coverage")),
    ("memory", "semantic"): (("cosine", "first", "query_coverage"), ("relative", "first", "query_coverage")),
}


def model_key(source: str, mode: str, model: str | None) -> str:
    """``file/hybrid@MODEL`` (cosine features, that model's) or ``file/hybrid`` (none)."""
    return f"{source}/{mode}@{model}" if model is not None else f"{source}/{mode}"


def feature_names(key: str) -> tuple[str, ...]:
    source_mode, _, model = key.partition("@")
    source, _, mode = source_mode.partition("/")
    with_cosines, without = FEATURES[(source, mode)]
    return with_cosines if model else without


def list_top(evidence: list[Evidence]) -> ListTop:
    return ListTop(max((e.score for e in evidence), default=0.0),
                   max((_cos(e.cosine) for e in evidence), default=0.0))


def feature_vector(names: tuple[str, ...], evidence: Evidence, rank: int, top: ListTop,
                   query: QueryEvidence) -> list[float]:
    return [FEATURE_VALUES[name](evidence, rank, top, query) for name in names]


@dataclass(frozen=True)
class Logistic:
    features: tuple[str, ...]
    weights: tuple[float, ...]
    bias: float

    def probability(self, values: list[float]) -> float:
        z = self.bias + sum(w * v for w, v in zip(self.weights, values))
        return 1.0 / (1.0 + math.exp(-z)) if z > -700 else 0.0


class CalibrationUnavailable(RuntimeError):
    pass


class Calibration:
    """The shipped models, by key (:func:`model_key`)."""

    def __init__(self, data: dict) -> None:
        if data.get("version") != 1:
            raise CalibrationUnavailable(f"unknown recall calibration version {data.get('version')!r}")
        self.models: dict[str, Logistic] = {}
        for key, model in data["models"].items():
            if tuple(model["features"]) != feature_names(key):
                raise CalibrationUnavailable(f"{key} was fitted on other features than these")
            self.models[key] = Logistic(tuple(model["features"]), tuple(model["weights"]),
                                        float(model["bias"]))
        self.training = data.get("training", {})

    def model_for(self, source: str, mode: str, embedding_model: str | None) -> Logistic:
        """The model fitted for that embedding model's cosines, else the one without cosines."""
        if mode != "lexical" and embedding_model is not None:
            fitted = self.models.get(model_key(source, mode, embedding_model))
            if fitted is not None:
                return fitted
        return self.models[model_key(source, mode, None)]

    def calibrate(self, evidence: list[Evidence], query: QueryEvidence) -> list[float]:
        """P(relevant) of each hit of one source's list (best first): the
        model's estimate, never above the hit before it."""
        if not evidence:
            return []
        first = evidence[0]
        model = self.model_for(first.source, first.mode, first.model)
        top = list_top(evidence)
        out: list[float] = []
        ceiling = 1.0
        for rank, hit in enumerate(evidence):
            ceiling = min(ceiling, model.probability(feature_vector(model.features, hit, rank, top, query)))
            out.append(round(ceiling, 6))
        return out


def load_calibration(path: Path = MODEL_PATH, sha256: str | None = MODEL_SHA256) -> Calibration:
    """The shipped models (checked by sha256), or another file (``sha256`` None)."""
    return Calibration(read_checked_json(path, sha256, CalibrationUnavailable))


@functools.lru_cache(maxsize=1)
def shipped_calibration() -> Calibration:
    return load_calibration()
