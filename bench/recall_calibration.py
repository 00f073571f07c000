"""Fit recall's calibration (index/recall_calibration.py) and measure merging on it.

    .venv/bin/python bench/recall_calibration.py collect [--split dev|test] [--fast-tier]
    .venv/bin/python bench/recall_calibration.py fit [--write]
    .venv/bin/python bench/recall_calibration.py mixed [--split dev|test] [--fast-tier] [--result FILE]

Data: one workspace per set 4 corpus (bench/codesearch.py's store) with bench/memory.py's 30 facts and 12
episodes remembered into it (their own kinds). Its queries are the corpus's set 4
queries (symbol, description, concept: the answer is a file chunk) and
bench/memory.py's 60 memory queries (exact, morph, paraphrase: the answer is
a written row). ``collect`` asks every query of the chosen split's corpora with
``Engine.recall(query, n=10)`` (every kind) in each mode (lexical, hybrid,
semantic) and keeps each hit's calibration evidence (recall_calibration.Evidence),
the query's topicality and which targets the hit finds (a code hit: it holds a
target's definition row, as bench/codesearch.py scores; a memory hit: it is
the target row). Memory and file hits of the other kind of question are
labelled not relevant: they are what a merged list must keep out. With
``--fast-tier`` the files are ranked with the fast tier's static model alone
(as where the transformer cannot load; while it only embeds, it scores the
fast tier's first hits again and its own model calibrates them; memory keeps
the transformer's), into SPLIT-fast.jsonl: the file models for that model's cosines.

The split: set 4's, by project (dev corpora fit, test corpora are scored);
memory queries by target row (:data:`FIT_TARGETS`: those of half of the rows
fit, the others' queries are scored), so no fact is both fitted and scored.

``fit`` fits one logistic model per (source, mode) and feature set
(recall_calibration.FEATURES: with the embedding model's cosines, and
without them for other models) on the dev corpora's code hits (kind "code")
and fit-target memory hits (facts and episodes), L2 1e-3, and reports
log-loss, Brier score and calibration error on the held-out queries;
``--write`` writes index/models/recall-calibration.json and sets its sha256.

``mixed``: each query's lists (every kind, n = 10 each) merged into one list
of 10, by raw ``score`` (what recall did before) and by ``calibrated``
(what it does now; each list calibrated with the shipped model), scored with
NDCG@10 (set 4's grades; a memory target grade 1) and hit@1, for code
questions, memory questions and both. Scored queries only: held-out memory
targets, and on dev the dev corpora's code queries (fitted on: in-sample).
"""

from __future__ import annotations

import argparse
import hashlib
import json
import math
import re
import sys
import time
from dataclasses import asdict
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import numpy as np

from ctxls.index.embeddings import DEFAULT_MODEL_NAME, STATIC_MODEL_NAME
from ctxls.index.engine import Engine
from ctxls.index.recall_calibration import (FEATURES, MODEL_PATH, Calibration, Evidence,
                                            QueryEvidence, feature_names, feature_vector, list_top,
                                            load_calibration, model_key)
from ctxls.index.scopes import EVERYTHING
from ctxls.index.tokenize import query_terms

from codesearch import embed_store, finds, open_engine, selected_corpora
from codesearch_set import build_set
from corpora import CACHE_DIR
from memory import FACTS, QUERIES

WORK_DIR = CACHE_DIR / "recall-calibration"
MODES = ("lexical", "hybrid", "semantic")
K = 10
CALIBRATION_SOURCE = Path(__file__).resolve().parent.parent / "index" / "recall_calibration.py"
# Memory rows whose queries are fitted on; the other rows' queries are scored.
FIT_TARGETS = frozenset([f"f{i:02}" for i in range(1, 16)] + [f"e{i:02}" for i in range(1, 7)])
L2 = 1e-3
PRIMARY_MODEL = DEFAULT_MODEL_NAME


# -- collect ----------------------------------------------------------------------

def _memory_queries() -> list[dict]:
    out = []
    for group, queries in QUERIES.items():
        for i, (query, target) in enumerate(queries):
            out.append({"id": f"memory:{group}:{i}", "kind": f"memory-{group}", "query": query,
                        "memory_target": target, "fit": target in FIT_TARGETS, "grades": [1]})
    return out


def records_path(split: str, fast_tier: bool) -> Path:
    return WORK_DIR / f"{split}{'-fast' if fast_tier else ''}.jsonl"


def collect(split: str, fast_tier: bool = False, log=print) -> Path:
    """Every query of ``split``'s corpora in every mode (files ranked by the
    fast tier with ``fast_tier``): WORK_DIR/SPLIT[-fast].jsonl."""
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    out_path = records_path(split, fast_tier)
    memory_queries = _memory_queries()
    with out_path.open("w", encoding="utf-8") as out:
        for corpus in selected_corpora(split):
            code_set = build_set(corpus)
            embed_store(code_set, log=log)
            # The bench's own store (a copy is refused: a store is sealed to its
            # place); the memory rows are removed again after.
            engine = open_engine(code_set, True, log=log)
            if fast_tier:  # the tier that serves until the transformer has caught up
                engine.serving_tier = lambda engine=engine: engine.fast_semantic
                # Its own cosines, as where the transformer cannot load: a hit the
                # transformer scored again is calibrated by the transformer's model.
                engine._rescoring_tier = lambda serving: None
            try:
                for key, (kind, text) in FACTS.items():
                    engine.memory.remember(EVERYTHING, key, text, kind=kind)
                engine.embed_pending()
                started = time.perf_counter()
                code_queries = [{"id": q.id, "kind": q.kind, "query": q.query, "fit": True,
                                 "targets": [asdict(t) for t in q.targets],
                                 "grades": [t.grade for t in q.targets]}
                                for q in code_set.queries]
                for q in code_queries + memory_queries:
                    for mode in MODES:
                        out.write(json.dumps(_record(engine, corpus, q, mode)) + "\n")
                log(f"recall_calibration: {corpus.id}: {len(code_queries)} code + "
                    f"{len(memory_queries)} memory queries x {len(MODES)} modes in "
                    f"{time.perf_counter() - started:.0f}s")
            finally:
                for key in FACTS:
                    engine.memory.forget(EVERYTHING, key=key)
                engine.close()
    return out_path


def _record(engine: Engine, corpus, q: dict, mode: str) -> dict:
    result = engine.recall(q["query"], None, K, mode=mode)
    topicality = result.topicality
    lists = {}
    for kind, hits in result.hits_by_kind.items():
        lists[kind] = [{"evidence": asdict(h.evidence), "score": h.score, "path": h.path,
                        "line": h.start_line, "finds": _finds(q, h)} for h in hits]
    return {"corpus": corpus.id, "split": corpus.split, "id": q["id"], "kind": q["kind"],
            "fit": q["fit"], "mode": mode, "result_mode": result.mode, "grades": q["grades"],
            "query": asdict(QueryEvidence(topicality.term_coverage, len(query_terms(q["query"])))),
            "nearest_cosine": topicality.nearest_cosine,
            "lists": lists}


def _finds(q: dict, hit) -> list[int]:
    """Indexes of the query's targets the hit finds."""
    if "memory_target" in q:
        return [0] if hit.uri is None and hit.path == q["memory_target"] else []
    if hit.uri is None:
        return []
    from codesearch_set import Target
    return [i for i, t in enumerate(q["targets"])
            if finds((hit.path, hit.start_line, hit.end_line), Target(**t))]


def read_records(split: str, fast_tier: bool = False) -> list[dict]:
    """The collected records (none if that collection was not run)."""
    path = records_path(split, fast_tier)
    if not path.is_file():
        return []
    return [json.loads(line) for line in path.read_text(encoding="utf-8").splitlines()]


# -- fit ----------------------------------------------------------------------------

def _source_lists(record: dict, source: str) -> list[list[dict]]:
    """The record's lists of one source that calibration is fitted on."""
    kinds = ("code",) if source == "file" else ("fact", "episode")
    return [record["lists"][k] for k in kinds if record["lists"].get(k)]


def _evidence(hit: dict) -> Evidence:
    return Evidence(**hit["evidence"])


def _query(record: dict) -> QueryEvidence:
    return QueryEvidence(**record["query"])


def examples(records: list[dict], key: str) -> tuple[np.ndarray, np.ndarray]:
    """(features, labels) of the records' hits that a model of ``key`` calibrates."""
    source_mode, _, model = key.partition("@")
    source, mode = source_mode.split("/")
    names = feature_names(key)
    rows, labels = [], []
    for record in records:
        for hits in _source_lists(record, source):
            first = _evidence(hits[0])
            if first.mode != mode:
                continue
            query = _query(record)
            if model and first.model != model:
                continue
            listed = [_evidence(hit) for hit in hits]
            if not model:  # the model-free fallback: no cosines
                listed = [Evidence(e.source, e.mode, e.score, None, e.coverage, None) for e in listed]
            top = list_top(listed)
            for rank, (hit, evidence) in enumerate(zip(hits, listed)):
                rows.append(feature_vector(names, evidence, rank, top, query))
                labels.append(1.0 if hit["finds"] else 0.0)
    return np.asarray(rows, dtype=np.float64).reshape(len(rows), len(names)), np.asarray(labels)


def fit_logistic(x: np.ndarray, y: np.ndarray, l2: float = L2) -> tuple[np.ndarray, float]:
    """Newton's method on the mean log-loss + l2·|w|² (the bias not penalised)."""
    design = np.hstack([x, np.ones((len(x), 1))])
    beta = np.zeros(design.shape[1])
    penalty = np.full(design.shape[1], 2 * l2)
    penalty[-1] = 0.0
    for _ in range(100):
        p = 1.0 / (1.0 + np.exp(-np.clip(design @ beta, -30, 30)))
        gradient = design.T @ (p - y) / len(y) + penalty * beta
        hessian = (design.T * (p * (1 - p))) @ design / len(y) + np.diag(penalty + 1e-9)
        step = np.linalg.solve(hessian, gradient)
        beta -= step
        if np.max(np.abs(step)) < 1e-8:
            break
    return beta[:-1], float(beta[-1])


def quality(p: np.ndarray, y: np.ndarray) -> dict:
    """Log-loss, Brier score and expected calibration error (10 equal-count bins)."""
    if not len(y):
        return {"n": 0}
    clipped = np.clip(p, 1e-6, 1 - 1e-6)
    order = np.argsort(p)
    ece = sum(abs(p[b].mean() - y[b].mean()) * len(b) for b in np.array_split(order, 10) if len(b))
    return {"n": int(len(y)), "positives": int(y.sum()),
            "log_loss": round(float(-np.mean(y * np.log(clipped) + (1 - y) * np.log(1 - clipped))), 4),
            "brier": round(float(np.mean((p - y) ** 2)), 4), "ece": round(float(ece / len(y)), 4)}


def model_keys() -> list[str]:
    keys = []
    for (source, mode) in FEATURES:
        keys.append(model_key(source, mode, None))
        if mode != "lexical":
            keys.append(model_key(source, mode, PRIMARY_MODEL))
            if source == "file":
                keys.append(model_key(source, mode, STATIC_MODEL_NAME))
    return keys


def fitted_on(record: dict) -> bool:
    """Is the record fitting data? The dev corpora's code queries and the fit rows' memory queries."""
    return record["fit"] and record["split"] == "dev"


def scored(record: dict) -> bool:
    """Is the record held out? Memory queries of the other rows, and the test corpora's code queries."""
    return not record["fit"] or (record["split"] == "test" and not record["kind"].startswith("memory-"))


def fit(records: dict[bool, list[dict]], held_out: dict[bool, list[dict]]) -> tuple[dict, dict]:
    """The model file's content, and each model's quality on the fitting data
    and on the held-out records; ``records[fast_tier]``: the collections. The
    static model's file models read the fast-tier collection, every other
    model the transformer's (memory's hits are the same in both)."""
    models, report = {}, {}
    for key in model_keys():
        fast = key.endswith("@" + STATIC_MODEL_NAME)
        x, y = examples([r for r in records[fast] if fitted_on(r)], key)
        if not y.any() or y.all():
            raise SystemExit(f"{key}: no relevant and not-relevant hits to fit on "
                             f"({len(y)} examples); collect{' --fast-tier' if fast else ''} again")
        weights, bias = fit_logistic(x, y)
        models[key] = {"features": list(feature_names(key)), "weights": [round(float(w), 6) for w in weights],
                       "bias": round(bias, 6)}
        held_x, held_y = examples([r for r in held_out[fast] if scored(r)], key)
        p = 1.0 / (1.0 + np.exp(-(held_x @ weights + bias))) if len(held_y) else np.zeros(0)
        report[key] = {"fit": quality(1.0 / (1.0 + np.exp(-(x @ weights + bias))), y),
                       "held_out": quality(p, held_y)}
    data = {"version": 1, "models": models,
            "training": {"script": "bench/recall_calibration.py fit",
                         "data": "set 4 dev corpora (code hits of their code queries; "
                                 "file hits of the memory queries), bench/memory.py's queries "
                                 f"of rows {', '.join(sorted(FIT_TARGETS))}; every kind's top {K}; "
                                 f"files by {PRIMARY_MODEL} and (its models only) by "
                                 f"{STATIC_MODEL_NAME}",
                         # Named, so that a project reserved later can be checked against it.
                         "corpora": sorted({r["corpus"] for fast in (False, True)
                                            for r in records[fast] if fitted_on(r)}),
                         "l2": L2}}
    return data, report


def placeholder() -> dict:
    return {"version": 1, "training": {"placeholder": True},
            "models": {key: {"features": list(feature_names(key)), "bias": 0.0,
                             "weights": [0.0] * len(feature_names(key))} for key in model_keys()}}


def write_model(data: dict, path: Path = MODEL_PATH, source: Path = CALIBRATION_SOURCE) -> str:
    raw = (json.dumps(data, indent=1) + "\n").encode()
    path.write_bytes(raw)
    sha = hashlib.sha256(raw).hexdigest()
    text = source.read_text(encoding="utf-8")
    source.write_text(re.sub(r'MODEL_SHA256 = "[0-9a-zA-Z]+"', f'MODEL_SHA256 = "{sha}"', text),
                      encoding="utf-8")
    return sha


# -- mixed ----------------------------------------------------------------------------

def ndcg(found: list[list[int]], grades: list[int], k: int = K) -> float:
    """NDCG@k of a list where hit i finds the targets ``found[i]`` (each credited once)."""
    credited: set[int] = set()
    dcg = 0.0
    for rank, targets in enumerate(found[:k], 1):
        gain = 0.0
        for t in targets:
            if t not in credited:
                credited.add(t)
                gain = max(gain, 2.0 ** grades[t] - 1)
        dcg += gain / math.log2(rank + 1)
    ideal = sorted(grades, reverse=True)[:k]
    idcg = sum((2.0 ** g - 1) / math.log2(r + 1) for r, g in enumerate(ideal, 1))
    return dcg / idcg if idcg else 0.0


def merge(record: dict, calibration: Calibration | None, kinds: tuple[str, ...] | None) -> list[dict]:
    """The record's lists merged into one: by raw score (``calibration`` None)
    or by each list's calibrated values (stable: ties keep the lists' order)."""
    hits = []
    for kind, listed in record["lists"].items():
        if kinds is not None and kind not in kinds:
            continue
        if calibration is None:
            hits += [(h["score"], h) for h in listed]
        else:
            values = calibration.calibrate([_evidence(h) for h in listed], _query(record))
            hits += list(zip(values, listed))
    if calibration is None:
        hits.sort(key=lambda vh: (-vh[0], vh[1]["path"], vh[1]["line"]))
    else:
        hits.sort(key=lambda vh: -vh[0])
    return [h for _, h in hits[:K]]


def mixed(records: list[dict], calibration: Calibration) -> dict:
    """mode -> kinds asked -> question group -> merge -> {ndcg, hit1, n}."""
    out: dict = {}
    held_out = [r for r in records if not (r["kind"].startswith("memory-") and r["fit"])]
    for mode in MODES:
        mine = [r for r in held_out if r["mode"] == mode]
        for label, kinds in (("all kinds", None), ("code + facts + episodes", ("code", "fact", "episode"))):
            for group in ("code questions", "memory questions", "all questions"):
                chosen = [r for r in mine if group == "all questions"
                          or (group == "memory questions") == r["kind"].startswith("memory-")]
                cell = {}
                for name, cal in (("raw", None), ("calibrated", calibration)):
                    lists = [merge(r, cal, kinds) for r in chosen]
                    cell[name] = {
                        "ndcg10": round(float(np.mean([ndcg([h["finds"] for h in hs], r["grades"])
                                                       for hs, r in zip(lists, chosen)])), 4),
                        "hit1": round(float(np.mean([bool(hs and hs[0]["finds"]) for hs in lists])), 4)}
                cell["queries"] = len(chosen)
                out.setdefault(mode, {}).setdefault(label, {})[group] = cell
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("verb", choices=("collect", "fit", "mixed"))
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--write", action="store_true", help="fit: write the shipped model")
    parser.add_argument("--placeholder", action="store_true",
                        help="write a model of zero weights (collect needs a model of the "
                             "current features: the first collect after FEATURES changed)")
    parser.add_argument("--result", help="mixed: write this bench/results file")
    parser.add_argument("--fast-tier", action="store_true",
                        help="collect, mixed: files ranked by the fast tier's static model")
    args = parser.parse_args()

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.placeholder:
        log(f"wrote {MODEL_PATH}, sha256 {write_model(placeholder())}")
        return 0
    if args.verb == "collect":
        log(f"wrote {collect(args.split, args.fast_tier, log)}")
        return 0
    if args.verb == "fit":
        dev = {fast: read_records("dev", fast) for fast in (False, True)}
        held_out = {fast: dev[fast] + read_records("test", fast) for fast in (False, True)}
        data, report = fit(dev, held_out)
        print(json.dumps({"models": data["models"], "quality": report}, indent=1))
        if args.write:
            log(f"wrote {MODEL_PATH}, sha256 {write_model(data)}")
        return 0
    calibration = load_calibration()
    report = mixed(read_records(args.split, args.fast_tier), calibration)
    print(json.dumps(report, indent=1))
    if args.result:
        Path(args.result).write_text(json.dumps(report, indent=1) + "\n", encoding="utf-8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
