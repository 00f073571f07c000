"""Recall's hand constants, each turned off alone (issue 36): what each one is worth.

    .venv/bin/python bench/recall_ablation.py [--variants NAME ...] [--sets set4,files,pathclass]
                                              [--json bench/results/recall-ablation.json]

Every variant is today's ``RankingConfig`` with one constant (or rule) set to
the value that turns it off (a penalty 1.0, a boost 0, ``NO_PRIORS``'s
values; a bound: the list's own depth or lifted), scored against the defaults
at query time on the same stores:

* set 4 (bench/codesearch.py), dev and test, lexical and hybrid with the
  static model (``ctxls-code-static-256``: its stores; the transformer's
  would take hours to build on a 2-core machine), each hit list scored by
  chunk and by file (``score_hits``; the same hits both ways);
* the files set's hand-written ten (bench/codesearch_files.py, by file,
  lexical; the public benchmark's five need annotations this machine lacks,
  the held-out six trees not fetched here);
* ``--sets pathclass``: the path-class set (``PATHCLASS_CORPORA`` in
  bench/codesearch_corpora.py), whole package trees with vendored copies,
  locale tables or ``.d.ts`` stubs beside first-party code, queries mined
  from the first-party definitions only (set 4's miner), lexical and hybrid,
  by chunk and by file. Only the three penalties these paths exist for are
  judged there (``PATHCLASS_VARIANTS``; ``pathclass_verdict``): kept when
  turning one off loses more than ``RETIRE_SLACK`` on a test project of its
  class, in either mode or scoring. Beside it, its cost: the same trees with
  the gold turned round (``PATHCLASS_COST``: the answer a vendored, locale or
  stub file's own definition), reported, not judged.

A rule that a mode never reads (the import boost, the pool and the named
files are lexical's; the fusion and its pool hybrid's) is run in the modes
that read it only. Per (variant, corpus, mode) the queries' scores are kept
in ``bench/.cache/recall-ablation/scores.jsonl``: a rerun scores only what is
missing (delete the file after a ranking change).

Retired on this measurement (their rows are in
bench/results/recall-ablation.json, run at cfe5f90): ``example_penalty``,
``compat_penalty``, ``tiny_penalty``.

A rule may be retired when turning it off is no worse than ``-RETIRE_SLACK``
on dev and test, by chunk and by file, in both modes and on the files set,
and no language (set 4, either split, mode and scoring) loses more than
``LANGUAGE_SLACK`` (``verdict``).
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from dataclasses import dataclass, field, replace
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import codesearch  # noqa: E402
import codesearch_files  # noqa: E402
from codesearch import RECALL_MODE, embedding_variant, open_engine, pending_vectors, score_hits  # noqa: E402
from codesearch_corpora import CODE_CORPORA, PATHCLASS_CLASSES, PATHCLASS_CORPORA, PATHCLASS_COST  # noqa: E402
from codesearch_set import build_set  # noqa: E402
from corpora import CACHE_DIR  # noqa: E402

from ctxls.index import ranking as ranking_module  # noqa: E402
from ctxls.index.paths import path_class  # noqa: E402
from ctxls.index.ranking import RankingConfig  # noqa: E402

STATIC_MODEL = "ctxls-code-static-256"
MODES = ("lexical", "hybrid")
SCORES = CACHE_DIR / "recall-ablation" / "scores.jsonl"
RETIRE_SLACK = 0.002
LANGUAGE_SLACK = 0.01
FILES_LANGUAGES = ("c", "go", "javascript", "python", "rust", "typescript")


@dataclass(frozen=True)
class Variant:
    constant: str  # what is turned off, as the table names it
    priors: dict = field(default_factory=dict)
    ranking: dict = field(default_factory=dict)
    module: dict = field(default_factory=dict)  # ranking.py module constants
    modes: tuple[str, ...] = MODES  # the modes that read it
    bound: bool = False  # a cost bound: its "off" lifts it

    def config(self) -> RankingConfig:
        base = RankingConfig()
        return replace(base, priors=replace(base.priors, **self.priors), **self.ranking)


LEX = ("lexical",)
HYB = ("hybrid",)
VARIANTS: dict[str, Variant] = {
    "default": Variant("today's defaults"),
    "test_penalty": Variant("test_penalty 0.3", {"test_penalty": 1.0}),
    "vendored_penalty": Variant("vendored_penalty 0.3", {"vendored_penalty": 1.0}),
    "barrel_penalty": Variant("barrel_penalty 0.7", {"barrel_penalty": 1.0}),
    "stub_penalty": Variant("stub_penalty 0.7", {"stub_penalty": 1.0}),
    "locale_penalty": Variant("locale_penalty 0.5", {"locale_penalty": 1.0}),
    "module_after_code": Variant("module_after_code", {"module_after_code": False}),
    "definition_boost": Variant("definition_boost 3", {"definition_boost": 0.0}),
    "embedded_share": Variant("embedded_share 0.5", {"embedded_share": 0.0}),
    "word_share": Variant("word_share 0.5", {"word_share": 0.0}),
    "home_share": Variant("home_share 1.5", {"home_share": 1.0}),
    "signature_share": Variant("signature_share 0.5", {"signature_share": 1.0}),
    "member_share": Variant("member_share 1", {"member_share": 0.0}),
    "max_definitions": Variant("max_definitions 20 (lifted: 200)", {"max_definitions": 200}, bound=True),
    "file_name_boost": Variant("file_name_boost 0.5", {"file_name_boost": 0.0}),
    "named_files": Variant("named_files 5", {"named_files": 0}, modes=LEX),
    "file_text_boost": Variant("file_text_boost 0.2", {"file_text_boost": 0.0}),
    "coherence_boost": Variant("coherence_boost 0.5", {"coherence_boost": 0.0}),
    "saturation": Variant("saturation 1 / 0.5", {"saturation_decay": 1.0}),
    "column_weights": Variant("symbol/path/body weights 32/4/1", ranking={"symbol_weight": 1.0,
                                                                         "path_weight": 1.0}),
    "import_boost": Variant("import_boost 0.1", ranking={"import_boost": 0.0}, modes=LEX),
    "candidate_pool": Variant("candidate_pool 50 (off: 10)", ranking={"candidate_pool": 10}, modes=LEX),
    "fusion": Variant("fusion min-max (off: linear)", ranking={"fusion": "linear"}, modes=HYB),
    "fusion_pool": Variant("fusion_pool 30 (off: 10)", ranking={"fusion_pool": 10}, modes=HYB),
    "identifier_dense_weight": Variant("identifier_dense_weight 0.2 (off: 0.5)",
                                       ranking={"identifier_dense_weight": 0.5}, modes=HYB),
    "file_bm25_b": Variant("FILE_BM25_B 0.75", module={"FILE_BM25_B": 0.0}),
}


# -- scoring ---------------------------------------------------------------------------

def _done() -> dict[tuple[str, str, str], list]:
    if not SCORES.is_file():
        return {}
    out = {}
    for line in SCORES.read_text(encoding="utf-8").splitlines():
        if line.strip():
            row = json.loads(line)
            out[(row["variant"], row["corpus"], row["mode"])] = row["scores"]
    return out


def _keep(variant: str, corpus: str, mode: str, scores: list) -> None:
    SCORES.parent.mkdir(parents=True, exist_ok=True)
    with SCORES.open("a", encoding="utf-8") as out:
        out.write(json.dumps({"variant": variant, "corpus": corpus, "mode": mode, "scores": scores}) + "\n")


def _patched(variant: Variant):
    saved = {name: getattr(ranking_module, name) for name in variant.module}
    for name, value in variant.module.items():
        setattr(ranking_module, name, value)
    return saved


def _with_variant(engine, variant: Variant, run):
    engine.options = replace(engine.options, ranking=variant.config())
    saved = _patched(variant)
    try:
        return run()
    finally:
        for name, value in saved.items():
            setattr(ranking_module, name, value)


def run_set4(names: list[str], log, corpora=CODE_CORPORA) -> None:
    """Every variant's per-query scores on set 4 (both splits; ``corpora``:
    another set's, the path-class set's), kept in SCORES."""
    done = _done()
    with embedding_variant(None, STATIC_MODEL) as store_variant:
        for corpus in corpora:
            todo = [(v, m) for v in names for m in VARIANTS[v].modes if (v, corpus.id, m) not in done]
            if not todo:
                continue
            code_set = build_set(corpus)
            codesearch.embed_store(code_set, variant=store_variant, log=log)  # vectors from the cache
            engine = open_engine(code_set, True, variant=store_variant, log=log)
            try:
                if engine.semantic is None or not engine.semantic.ensure_loaded() or pending_vectors(engine):
                    raise RuntimeError(f"{corpus.id}: the static store is not fully embedded "
                                       f"(bench/codesearch.py build --embed-model {STATIC_MODEL})")
                for name, mode in todo:
                    t0 = time.perf_counter()

                    def run():
                        scores = []
                        for q in code_set.queries:
                            hits = engine.recall(q.query, kinds=["code"], n=codesearch.K,
                                                 mode=RECALL_MODE[mode]).hits_by_kind["code"]
                            spans = [(h.path, h.start_line, h.end_line) for h in hits]
                            scores.append([q.id, round(score_hits(spans, q.targets).ndcg, 5),
                                           round(score_hits(spans, q.targets, by_file=True).ndcg, 5)])
                        return scores
                    _keep(name, corpus.id, mode, _with_variant(engine, VARIANTS[name], run))
                    log(f"recall_ablation: {corpus.id} {mode} {name} in {time.perf_counter() - t0:.0f}s "
                        f"(load {os.getloadavg()[0]:.1f})")
            finally:
                engine.close()


def _files_projects(held_out: bool):
    return [p for p in codesearch_files.PROJECTS
            if p.hand_written and p.held_out == held_out]  # the ten tuned ones, or the held-out six


def run_files(names: list[str], log, held_out: bool = False) -> None:
    """Every variant's per-query NDCG@10 by file on the files set's hand-written
    ten (``held_out``: its six held-out projects instead), lexical."""
    done = _done()
    for project in _files_projects(held_out):
        key = f"{'held' if held_out else 'files'}-{project.name}"
        todo = [v for v in names if "lexical" in VARIANTS[v].modes and (v, key, "lexical") not in done]
        if not todo:
            continue
        code_set = codesearch_files._code_set(project)
        queries = codesearch_files.load_queries(project)
        engine = open_engine(code_set, False, log=log)
        try:
            for name in todo:
                def run():
                    scored = codesearch_files.score_queries(engine, queries, project.root, "lexical")
                    return [[f"{q.category}:{q.query}", round(s, 5)] for q, s in scored]
                _keep(name, key, "lexical", _with_variant(engine, VARIANTS[name], run))
            log(f"recall_ablation: {key} ({len(todo)} variants, load {os.getloadavg()[0]:.1f})")
        finally:
            engine.close()


# -- the deltas -------------------------------------------------------------------------

def _mean(values: list[float]) -> float:
    return sum(values) / len(values) if values else float("nan")


def set4_figures(done, variant: str) -> dict:
    """{split: {mode: {"chunk"|"file": {language|"all": NDCG@10}}}} (all: the mean over languages)."""
    out: dict = {}
    for split in ("dev", "test"):
        for mode in VARIANTS[variant].modes:
            for column, scoring in ((1, "chunk"), (2, "file")):
                per_language: dict[str, list[float]] = {}
                for corpus in CODE_CORPORA:
                    if corpus.split != split:
                        continue
                    rows = done.get((variant, corpus.id, mode))
                    if rows is None:
                        break
                    per_language.setdefault(corpus.language, []).extend(r[column] for r in rows)
                else:
                    figures = {lang: _mean(v) for lang, v in sorted(per_language.items())}
                    figures["all"] = _mean(list(figures.values()))
                    out.setdefault(split, {}).setdefault(mode, {})[scoring] = figures
    return out


def files_figures(done, variant: str, held_out: bool = False) -> dict | None:
    """{project|language|"all": NDCG@10} of the files set's ten (``held_out``:
    its held-out six), lexical (all: the mean over projects)."""
    per_project = {}
    for project in _files_projects(held_out):
        rows = done.get((variant, f"{'held' if held_out else 'files'}-{project.name}", "lexical"))
        if rows is None:
            return None
        per_project[project.name] = (project.language, _mean([r[1] for r in rows]))
    out = {name: v for name, (_, v) in per_project.items()}
    for language in sorted({lang for lang, _ in per_project.values()}):
        out[language] = _mean([v for lang, v in per_project.values() if lang == language])
    out["all"] = _mean([v for _, v in per_project.values()])
    return out


def deltas(done, variant: str) -> dict:
    """Variant minus default, in every figure both have."""
    base, mine = set4_figures(done, "default"), set4_figures(done, variant)
    out: dict = {"set4": {}}
    for split, by_mode in mine.items():
        for mode, by_scoring in by_mode.items():
            for scoring, figures in by_scoring.items():
                ref = base.get(split, {}).get(mode, {}).get(scoring)
                if ref:
                    out["set4"].setdefault(split, {}).setdefault(mode, {})[scoring] = {
                        k: round(v - ref[k], 4) for k, v in figures.items()}
    # How many queries' scores moved at all: 0 where the rule never acts on these sets.
    moved: dict[str, int] = {}
    for (name, corpus, mode), rows in done.items():
        base_rows = done.get(("default", corpus, mode))
        if name != variant or base_rows is None:
            continue
        if corpus in PATHCLASS_IDS:
            continue  # the path-class set's are counted apart (pathclass_figures)
        split = "files" if corpus.startswith("files-") else "held-out" if corpus.startswith("held-") \
            else next(c.split for c in CODE_CORPORA if c.id == corpus)
        key = split if split in ("files", "held-out") else f"{split} {mode}"
        moved[key] = moved.get(key, 0) + sum(a[1:] != b[1:] for a, b in zip(rows, base_rows))
    out["moved"] = dict(sorted(moved.items()))
    files_base, files_mine = files_figures(done, "default"), files_figures(done, variant)
    if files_base and files_mine and "lexical" in VARIANTS[variant].modes:
        out["files"] = {k: round(v - files_base[k], 4) for k, v in files_mine.items()}
    # Read, not judged: the held-out six have informed choices since (codesearch_files.py).
    held_base, held_mine = files_figures(done, "default", True), files_figures(done, variant, True)
    if held_base and held_mine and "lexical" in VARIANTS[variant].modes:
        out["held_out"] = {k: round(v - held_base[k], 4) for k, v in held_mine.items()}
    return out


def verdict(delta: dict, bound: bool = False) -> tuple[str, list[str]]:
    """("retire"|"keep"|"unmeasured"|"bound"|"incomplete", the figures that keep it).
    "unmeasured": no query of any set moved; "bound": a cost bound that no
    figure needs (kept: it bounds the work, not the ranking)."""
    reasons = []
    set4 = delta.get("set4", {})
    for split in ("dev", "test"):
        for mode in MODES:
            for scoring in ("chunk", "file"):
                figures = set4.get(split, {}).get(mode, {}).get(scoring)
                if figures is None:
                    continue
                if figures["all"] < -RETIRE_SLACK:
                    reasons.append(f"{split} {mode} {scoring} {figures['all']:+.3f}")
                for lang, value in figures.items():
                    if lang != "all" and value < -LANGUAGE_SLACK:
                        reasons.append(f"{split} {mode} {scoring} {lang} {value:+.3f}")
    if "files" in delta:
        if delta["files"]["all"] < -RETIRE_SLACK:
            reasons.append(f"files {delta['files']['all']:+.3f}")
        for lang in FILES_LANGUAGES:
            if delta["files"].get(lang, 0.0) < -LANGUAGE_SLACK:
                reasons.append(f"files {lang} {delta['files'][lang]:+.3f}")
    if not set4.get("dev") or not set4.get("test"):
        return "incomplete", reasons
    if reasons:
        return "keep", reasons
    if not any(n for key, n in delta.get("moved", {}).items() if key != "held-out"):
        # Not one query moved: these sets hold no path or query it acts on.
        return "unmeasured", reasons
    return ("bound" if bound else "retire"), reasons


# -- the path-class set -------------------------------------------------------------------

PATHCLASS_IDS = frozenset(c.id for c in PATHCLASS_CORPORA + PATHCLASS_COST)
# The penalties the path-class set is for: variant -> the class its projects stand for.
PATHCLASS_VARIANTS = {"vendored_penalty": "vendored", "locale_penalty": "locale", "stub_penalty": "stub"}


def _target_classes(corpus) -> dict[str, set[str]]:
    """query id -> the path classes (vendored, stub, locale) of its targets' files."""
    classes = {}
    for q in build_set(corpus).queries:
        kinds = [path_class(t.path) for t in q.targets]
        classes[q.id] = {name for name, flag in (("vendored", any(k.vendored for k in kinds)),
                                                 ("stub", any(k.stub for k in kinds)),
                                                 ("locale", any(k.locale for k in kinds))) if flag}
    return classes


def pathclass_figures(done, variant: str, cost_of: str | None = None) -> dict | None:
    """{project: {"class", "split", "queries", mode: {"chunk"|"file": NDCG@10}, "moved"}}
    of the path-class set (``cost_of``: a class; its penalized-gold set instead,
    the queries whose target is a file of that class), and per mode the
    queries whose score moved against the defaults (id, chunk and file delta)."""
    out = {}
    for corpus in (PATHCLASS_COST if cost_of else PATHCLASS_CORPORA):
        entry = {"class": PATHCLASS_CLASSES[corpus.name], "split": corpus.split}
        keep = None
        if cost_of:
            keep = {qid for qid, kinds in _target_classes(corpus).items() if cost_of in kinds}
            if not keep:
                continue
        moved = set()
        for mode in MODES:
            rows = done.get((variant, corpus.id, mode))
            if rows is None:
                return None
            base = done.get(("default", corpus.id, mode)) or rows
            pairs = [(a, b) for a, b in zip(rows, base) if keep is None or a[0] in keep]
            entry["queries"] = len(pairs)
            entry[mode] = {"chunk": _mean([a[1] for a, _ in pairs]), "file": _mean([a[2] for a, _ in pairs])}
            moved |= {a[0] for a, b in pairs if a[1:] != b[1:]}
            entry[f"{mode}_moved"] = [[a[0], round(a[1] - b[1], 4), round(a[2] - b[2], 4)]
                                      for a, b in pairs if a[1:] != b[1:]]
        entry["moved"] = len(moved)
        out[corpus.name] = entry
    return out


def pathclass_delta(done, variant: str, cost_of: str | None = None) -> dict | None:
    """Per project: off minus on (mode -> chunk/file), the queries moved."""
    base = pathclass_figures(done, "default", cost_of)
    mine = pathclass_figures(done, variant, cost_of)
    if base is None or mine is None:
        return None
    out = {}
    for name, entry in mine.items():
        out[name] = {"class": entry["class"], "split": entry["split"], "queries": entry["queries"],
                     "moved": entry["moved"],
                     **{mode: {k: round(entry[mode][k] - base[name][mode][k], 4) for k in ("chunk", "file")}
                        for mode in MODES}}
    return out


def pathclass_verdict(delta: dict, klass: str) -> tuple[str, list[str]]:
    """("keep"|"retire"|"unmeasured", the figures that keep it), on the test
    projects of the penalty's class: kept when off loses more than
    RETIRE_SLACK on one of them (either mode, by chunk or by file);
    "unmeasured" when no query of them moved. (The cost, on the
    penalized-gold queries, is reported beside it, not judged: how often
    the vendored, locale or stub code is what is asked for is not known.)"""
    tests = {n: d for n, d in delta.items() if d["class"] == klass and d["split"] == "test"}
    reasons = [f"{n} {mode} {k} {d[mode][k]:+.3f}" for n, d in tests.items()
               for mode in MODES for k in ("chunk", "file") if d[mode][k] < -RETIRE_SLACK]
    if reasons:
        return "keep", reasons
    if not any(d["moved"] for d in tests.values()):
        return "unmeasured", reasons
    return "retire", reasons


def report(names: list[str]) -> dict:
    done = _done()
    out = {"figures": {"default": {"set4": set4_figures(done, "default"),
                                   "files": files_figures(done, "default"),
                                   "held_out": files_figures(done, "default", True)}},
           "variants": {}}
    for name in names:
        if name == "default":
            continue
        delta = deltas(done, name)
        decision, reasons = verdict(delta, VARIANTS[name].bound)
        out["variants"][name] = {"constant": VARIANTS[name].constant, "modes": list(VARIANTS[name].modes),
                                 "verdict": decision, "reasons": reasons, "delta": delta}
    base = pathclass_figures(done, "default")
    if base is not None:
        out["pathclass"] = {"default": {n: {k: v for k, v in e.items() if not k.endswith("_moved")}
                                        for n, e in base.items()}, "variants": {}}
        for name in names:
            delta = pathclass_delta(done, name) if name in PATHCLASS_VARIANTS else None
            if delta is None:
                continue
            klass = PATHCLASS_VARIANTS[name]
            decision, reasons = pathclass_verdict(delta, klass)
            cost = pathclass_delta(done, name, cost_of=klass)
            out["pathclass"]["variants"][name] = {
                "constant": VARIANTS[name].constant, "class": klass,
                "verdict": decision, "reasons": reasons, "delta": delta,
                "moved_queries": {f"{n} {m}": e[f"{m}_moved"]
                                  for n, e in pathclass_figures(done, name).items()
                                  for m in MODES if e[f"{m}_moved"]},
                # Off minus on where the answer is a file of the penalty's class.
                "cost_delta": cost,
                "cost_moved_queries": cost and {f"{n} {m}": e[f"{m}_moved"]
                                                for n, e in pathclass_figures(done, name, klass).items()
                                                for m in MODES if e[f"{m}_moved"]}}
            out["pathclass"].setdefault("cost_default", {})[klass] = {
                n: {k: v for k, v in e.items() if not k.endswith("_moved")}
                for n, e in (pathclass_figures(done, "default", klass) or {}).items()}
    return out


def pathclass_table(result: dict) -> str:
    """A markdown line per (penalty, project): off minus on, lexical and hybrid by chunk / by file."""
    lines = ["| penalty | project (class, split, queries) | moved | lexical chunk / file | "
             "hybrid chunk / file | verdict |", "|---|---|---:|---|---|---|"]
    for name, v in result.get("pathclass", {}).get("variants", {}).items():
        for project, d in v["delta"].items():
            lines.append(f"| {v['constant']} | {project} ({d['class']}, {d['split']}, {d['queries']}) | "
                         f"{d['moved']} | {d['lexical']['chunk']:+.3f} / {d['lexical']['file']:+.3f} | "
                         f"{d['hybrid']['chunk']:+.3f} / {d['hybrid']['file']:+.3f} | "
                         f"{v['verdict'] if d['class'] == v['class'] else ''} |")
        for project, d in (v.get("cost_delta") or {}).items():
            lines.append(f"| {v['constant']} | cost: {project} ({v['class']} gold, {d['split']}, "
                         f"{d['queries']}) | {d['moved']} | "
                         f"{d['lexical']['chunk']:+.3f} / {d['lexical']['file']:+.3f} | "
                         f"{d['hybrid']['chunk']:+.3f} / {d['hybrid']['file']:+.3f} | |")
    return "\n".join(lines)


def table(result: dict) -> str:
    """A markdown line per variant: test deltas (all languages) and the verdict."""
    lines = ["| constant | test lex chunk/file | test hyb chunk/file | dev lex | dev hyb | files | verdict |",
             "|---|---|---|---|---|---:|---|"]

    def pair(d, split, mode):
        x = d.get("set4", {}).get(split, {}).get(mode)
        return f"{x['chunk']['all']:+.3f} / {x['file']['all']:+.3f}" if x else "n/a"
    for name, v in result["variants"].items():
        d = v["delta"]
        files = f"{d['files']['all']:+.3f}" if "files" in d else "n/a"
        lines.append(f"| {v['constant']} | {pair(d, 'test', 'lexical')} | {pair(d, 'test', 'hybrid')} | "
                     f"{pair(d, 'dev', 'lexical')} | {pair(d, 'dev', 'hybrid')} | {files} | {v['verdict']} |")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    parser.add_argument("--sets", default="set4,files", help="of set4, files, held-out, pathclass")
    parser.add_argument("--report-only", action="store_true")
    parser.add_argument("--json", help="write the figures, deltas and verdicts here")
    args = parser.parse_args(argv)
    names = ["default", *[n for n in args.variants if n != "default"]]
    unknown = set(names) - set(VARIANTS)
    if unknown:
        raise SystemExit(f"unknown variants {sorted(unknown)}; known: {', '.join(VARIANTS)}")

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)
    if not args.report_only:
        sets = args.sets.split(",")
        if "files" in sets:
            run_files(names, log)
        if "held-out" in sets:
            run_files(names, log, held_out=True)
        if "set4" in sets:
            run_set4(names, log)
        if "pathclass" in sets:
            run_set4(names, log, corpora=PATHCLASS_CORPORA + PATHCLASS_COST)
    result = report(names)
    print(table(result))
    if "pathclass" in result:
        print(pathclass_table(result))
    if args.json:
        Path(args.json).write_text(json.dumps(result, indent=1), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
