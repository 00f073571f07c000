"""Assemble's abstention on off-topic questions (issue 14): calibration and
precision/recall.

On-topic questions are the retrieval set's queries (bench/dataset.py: a
function's docstring sentence, asked of the corpus it comes from); off-topic
questions are about other domains (below), asked of every corpus. For each
question the signals ``ctxls/assemble`` uses are computed over the embedded
store bench/semantic.py builds (``Engine.topicality``: the share of the
question's terms found anywhere in the indexed code and docs, and the cosine
of the nearest vector), then

- calibrate: a grid over the thresholds of ``index.assemble.off_topic`` on the
  dev queries and the first half of the off-topic questions: the most
  off-topic abstentions with at most ``--max-false`` (default 2%) of on-topic
  dev questions abstained;
- report abstention precision and recall with those thresholds on the
  calibration set and on held-out questions (test queries, the second half of
  the off-topic questions).

Thresholds are per embedding model (cosine scales differ): ``--model`` names
the model whose stores are built and calibrated (default: the engine's
default model; ``ctxls-code-static-256`` is the fast tier's). Two sets of
on-topic questions, both split by project where they can be:

- ``docstring``: the retrieval set's dev (calibration) and test (held-out)
  queries of requests and flask (split by query within each project);
- ``lang``: the hand-written questions of the multi-language set
  (bench/codesearch_lang.py: symbols, descriptions, "how does X work"); its dev
  projects calibrate, its test projects are held out.

Each corpus is indexed and fully embedded once per model into
``bench/.cache/abstain/<model>/<corpus>/`` (reused by later runs).

Run: .venv/bin/python bench/abstain.py [--model NAME] [--sets docstring lang]
     [--max-queries 300] [--json FILE]
"""

from __future__ import annotations

import argparse
import itertools
import json
import os
import subprocess
import statistics
import sys
import time
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import codesearch_lang  # noqa: E402
from corpora import CACHE_DIR  # noqa: E402
from dataset import build_dataset  # noqa: E402

from ctxls.index.assemble import OffTopicThresholds, Topicality, off_topic  # noqa: E402
from ctxls.index.discovery import DiscoveryOptions  # noqa: E402
from ctxls.index.embeddings import DEFAULT_MODEL_NAME  # noqa: E402
from ctxls.index.engine import Engine, EngineOptions  # noqa: E402
from ctxls.index.languages import DEFAULT_INCLUDE  # noqa: E402

STORES_DIR = CACHE_DIR / "abstain"

# Questions from domains an HTTP client or a web framework has nothing to do
# with. The first half calibrates, the second half is held out.
OFF_TOPIC = [
    "kubernetes helm chart deployment",
    "train a convolutional neural network on the GPU",
    "render a 3D mesh with vertex shaders",
    "bluetooth low energy device pairing",
    "kafka consumer group rebalancing",
    "terraform module for an s3 bucket policy",
    "android activity lifecycle and fragments",
    "compute the fast fourier transform of an audio signal",
    "rigid body physics collision response in a game loop",
    "smart contract token transfer on the blockchain",
    "protein folding molecular dynamics simulation",
    "interrupt handler for a microcontroller timer",
    "portfolio optimisation with the efficient frontier",
    "spark dataframe groupby aggregation on a cluster",
    "image segmentation with a U-Net model",
    "garbage collector mark and sweep in a virtual machine",
    "raytracing reflections and refraction",
    "docker container volume mounts and networking",
    "GPS coordinates to map tiles projection",
    "MIDI synthesizer envelope attack decay sustain release",
    "weather forecast numerical model on a grid",
    "inventory management with a barcode scanner",
    "compile a shader pipeline for vulkan",
    "chess move search with alpha beta pruning",
    "DNA sequence alignment scoring matrix",
    "robot arm inverse kinematics",
    "spreadsheet pivot table formulas",
    "elevator scheduling algorithm for a building",
    "payroll tax withholding calculation",
    "satellite orbit propagation",
    "video codec motion estimation",
    "recommend movies with collaborative filtering",
    "3D printer g-code slicing into layers",
    "credit card fraud detection model",
    "photo red-eye removal filter",
    "reinforcement learning reward and policy gradient",
]
CALIBRATION_OFF_TOPIC = OFF_TOPIC[:len(OFF_TOPIC) // 2]
HELD_OUT_OFF_TOPIC = OFF_TOPIC[len(OFF_TOPIC) // 2:]

COSINES = [round(0.04 + 0.02 * i, 2) for i in range(40)]  # 0.04 .. 0.82 (scales differ by model)
COVERAGES = [0.0, 0.2, 0.25, 0.34, 0.4, 0.5, 0.6, 0.67, 0.75]


def signals(engine, questions: list[str]) -> list[Topicality]:
    return [engine.topicality(q) for q in questions]


def abstains(sig: Topicality, thresholds: tuple[float, float, float]) -> bool:
    return off_topic(sig, OffTopicThresholds(*thresholds)) is not None


def score(on: list[Topicality], off: list[Topicality], thresholds) -> tuple[int, int]:
    """(on-topic questions abstained, off-topic questions abstained)."""
    return (sum(abstains(s, thresholds) for s in on), sum(abstains(s, thresholds) for s in off))


def calibrate(on: list[Topicality], off: list[Topicality], max_false: float):
    """The thresholds catching the most off-topic questions with at most
    ``max_false`` of the on-topic ones abstained (then the fewest of those).
    Many triples usually tie: the one nearest their coordinate-wise median
    is taken, so each threshold sits mid-gap rather than at an edge."""
    results = []
    for cosine, coverage, coverage_cosine in itertools.product(COSINES, COVERAGES, COSINES):
        if coverage_cosine < cosine:
            continue  # the coverage rule would never add anything
        false, caught = score(on, off, (cosine, coverage, coverage_cosine))
        if false <= max_false * len(on):
            results.append(((caught, -false), (cosine, coverage, coverage_cosine)))
    if not results:
        return (0.0, 0.0, 0.0)
    best_key = max(key for key, _ in results)
    tied = [t for key, t in results if key == best_key]
    median = [statistics.median(t[i] for t in tied) for i in range(3)]
    return min(tied, key=lambda t: sum((a - b) ** 2 for a, b in zip(t, median)))


def report(label: str, on: list[Topicality], off: list[Topicality], thresholds) -> str:
    false, caught = score(on, off, thresholds)
    abstained = false + caught
    precision = caught / abstained if abstained else 1.0
    recall = caught / len(off) if off else 0.0
    return (f"| {label} | {len(on)} | {len(off)} | {caught} | {false} | "
            f"{precision:.3f} | {recall:.3f} | {false / max(len(on), 1):.1%} |")


@dataclass(frozen=True)
class Corpus:
    name: str
    tree: Path
    include: tuple[str, ...]
    calibration: list[str]  # on-topic questions that calibrate
    held_out: list[str]  # on-topic questions held out


def docstring_corpora(max_queries: int) -> list[Corpus]:
    corpora = []
    for name in ("requests", "flask"):
        dataset = build_dataset(name)
        corpora.append(Corpus(name, dataset.tree, DEFAULT_INCLUDE,
                              [q.query for q in dataset.split("dev")[:max_queries]],
                              [q.query for q in dataset.split("test")[:max_queries]]))
    return corpora


def lang_corpora() -> list[Corpus]:
    corpora = []
    for project in codesearch_lang.PROJECTS:
        tree = codesearch_lang.TREES_DIR / project.name
        if not tree.is_dir() or not any(tree.iterdir()):
            print(f"skipped {project.name}: no tree at {tree}", file=sys.stderr)
            continue
        questions = [q.query for q in codesearch_lang.load_queries(project)]
        include = DEFAULT_INCLUDE + tuple(f"**/*.{ext}" for ext in
                                          codesearch_lang.EXTENSIONS[project.language])
        corpora.append(Corpus(project.name, tree, include,
                              questions if project.split == "dev" else [],
                              questions if project.split == "test" else []))
    return corpora


def open_embedded(corpus: Corpus, model: str) -> Engine:
    """An engine over ``corpus`` whose every row has a vector of ``model``
    (indexed and embedded on the first run, then reused)."""
    folder = STORES_DIR / model / corpus.name
    folder.mkdir(parents=True, exist_ok=True)
    options = EngineOptions(embeddings=True, db_path=str(folder / "index.db"),
                            embed_model=None if model == DEFAULT_MODEL_NAME else model,
                            discovery=DiscoveryOptions(include=corpus.include))
    engine = Engine(corpus.tree, options)
    if not (folder / "complete").exists():
        started = time.perf_counter()
        engine.index()
        assert engine.semantic is not None and engine.semantic.ensure_loaded()
        while engine.semantic.step():
            pass
        engine.semantic.save()
        (folder / "complete").write_text(f"{time.perf_counter() - started:.0f} s\n")
    engine.serve_stored_index()
    assert engine.semantic.pending() == 0 and engine.serving_tier() is engine.semantic
    return engine


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", default=DEFAULT_MODEL_NAME)
    parser.add_argument("--sets", nargs="*", default=["docstring", "lang"],
                        choices=["docstring", "lang"])
    parser.add_argument("--max-queries", type=int, default=300,
                        help="on-topic questions per corpus and split (docstring set)")
    parser.add_argument("--max-false", type=float, default=0.02,
                        help="the share of on-topic dev questions calibration may abstain on")
    parser.add_argument("--json", type=Path, help="write a bench/results file here")
    parser.add_argument("--thresholds", type=float, nargs=3, metavar=("COSINE", "COVERAGE", "COV_COSINE"),
                        help="report these thresholds instead of calibrating")
    args = parser.parse_args()
    corpora = ((docstring_corpora(args.max_queries) if "docstring" in args.sets else [])
               + (lang_corpora() if "lang" in args.sets else []))
    cal_on, cal_off, held_on, held_off = [], [], [], []
    per_corpus = {}
    started = time.perf_counter()
    for corpus in corpora:
        engine = open_embedded(corpus, args.model)
        per_corpus[corpus.name] = (signals(engine, corpus.calibration),
                                   signals(engine, CALIBRATION_OFF_TOPIC),
                                   signals(engine, corpus.held_out),
                                   signals(engine, HELD_OUT_OFF_TOPIC))
        engine.close()
        print(f"{corpus.name}: {len(corpus.calibration)} + {len(corpus.held_out)} on-topic "
              f"[{time.perf_counter() - started:.0f}s]", file=sys.stderr)
        dev, off1, test, off2 = per_corpus[corpus.name]
        cal_on += dev
        held_on += test
        # Off-topic questions asked of a corpus calibrate only where its
        # on-topic ones do (so held-out projects stay held out).
        if corpus.calibration:
            cal_off += off1
        if corpus.held_out:
            held_off += off2
    thresholds = (tuple(args.thresholds) if args.thresholds
                  else calibrate(cal_on, cal_off, args.max_false))
    lines = [f"model {args.model}; thresholds (min cosine, min coverage, cosine under which low "
             f"coverage abstains): {thresholds}  [{time.perf_counter() - started:.0f}s]",
             "| set | on-topic | off-topic | off-topic abstained | on-topic abstained | "
             "precision | recall | false-abstain rate |",
             "|---|---:|---:|---:|---:|---:|---:|---:|",
             report("calibration (dev + first half off-topic)", cal_on, cal_off, thresholds),
             report("held out (test + second half off-topic)", held_on, held_off, thresholds)]
    for name, (dev, off1, test, off2) in per_corpus.items():
        if test:
            lines.append(report(f"held out, {name}", test, off2, thresholds))
    for label, values in (("on-topic", cal_on + held_on), ("off-topic", cal_off + held_off)):
        cosines = sorted(s.nearest_cosine for s in values if s.nearest_cosine is not None)
        coverage = sorted(s.term_coverage for s in values)
        if cosines:
            lines.append(f"{label}: nearest cosine p5 {cosines[len(cosines) // 20]:.3f} "
                         f"median {cosines[len(cosines) // 2]:.3f} "
                         f"p95 {cosines[len(cosines) * 19 // 20]:.3f}; "
                         f"term coverage median {coverage[len(coverage) // 2]:.2f}")
    print("\n".join(lines))
    if args.json:
        write_result(args, thresholds, cal_on, cal_off, held_on, held_off)
    return 0


def write_result(args, thresholds, cal_on, cal_off, held_on, held_off) -> None:
    def rates(on, off):
        false, caught = score(on, off, thresholds)
        return false / max(len(on), 1), caught / max(len(off), 1)
    def git(*command: str) -> str:
        return subprocess.run(["git", *command], capture_output=True, text=True,
                              cwd=Path(__file__).parent).stdout.strip()
    commit = git("rev-parse", "--short", "HEAD") + ("+dirty" if git("status", "--porcelain") else "")
    rows = []
    for label, on, off in (("calibration", cal_on, cal_off), ("held out", held_on, held_off)):
        false_rate, caught_rate = rates(on, off)
        rows.append({"target": f"{args.model}: on-topic questions abstained ({label}, "
                               f"{len(on)} questions)", "value": f"{false_rate:.1%}",
                     "goal": "<= 2%", "met": false_rate <= 0.02})
        rows.append({"target": f"{args.model}: off-topic questions abstained ({label}, "
                               f"{len(off)} asks)", "value": f"{caught_rate:.1%}",
                     "goal": ">= 90%", "met": caught_rate >= 0.9})
    result = {"section": "Off-topic abstention per embedding model", "issue": 39,
              "date": time.strftime("%Y-%m-%d"), "commit": commit,
              "command": "python bench/abstain.py " + " ".join(sys.argv[1:]),
              "machine": f"2 cores, load average {os.getloadavg()[0]:.1f}",
              "rows": rows,
              "notes": f"thresholds {thresholds}; sets {', '.join(args.sets)}"}
    args.json.write_text(json.dumps(result, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
