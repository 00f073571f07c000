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

Run: .venv/bin/python bench/abstain.py [--corpora requests flask] [--max-queries 300]
(the stores must be built: bench/semantic.py build requests flask)
"""

from __future__ import annotations

import argparse
import itertools
import statistics
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from dataset import build_dataset  # noqa: E402
from semantic import open_engine  # noqa: E402

from ctxls.index.assemble import Topicality, off_topic  # noqa: E402

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

COSINES = [round(0.10 + 0.02 * i, 2) for i in range(26)]  # 0.10 .. 0.60
COVERAGES = [0.0, 0.2, 0.25, 0.34, 0.4, 0.5, 0.6, 0.67, 0.75]


def signals(engine, questions: list[str]) -> list[Topicality]:
    return [engine.topicality(q) for q in questions]


def abstains(sig: Topicality, thresholds: tuple[float, float, float]) -> bool:
    return off_topic(sig, *thresholds) is not None


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


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--corpora", nargs="*", default=["requests", "flask"])
    parser.add_argument("--max-queries", type=int, default=300,
                        help="on-topic questions per corpus and split")
    parser.add_argument("--max-false", type=float, default=0.02,
                        help="the share of on-topic dev questions calibration may abstain on")
    args = parser.parse_args()
    cal_on, cal_off, held_on, held_off = [], [], [], []
    per_corpus = {}
    started = time.perf_counter()
    for name in args.corpora:
        dataset = build_dataset(name)
        engine = open_engine(name)
        assert engine.semantic is not None and engine.semantic.ensure_loaded()
        engine.serve_stored_index()
        dev = [q.query for q in dataset.split("dev")[:args.max_queries]]
        test = [q.query for q in dataset.split("test")[:args.max_queries]]
        per_corpus[name] = (signals(engine, dev), signals(engine, CALIBRATION_OFF_TOPIC),
                            signals(engine, test), signals(engine, HELD_OUT_OFF_TOPIC))
        engine.close()
        cal_on += per_corpus[name][0]
        cal_off += per_corpus[name][1]
        held_on += per_corpus[name][2]
        held_off += per_corpus[name][3]
    thresholds = calibrate(cal_on, cal_off, args.max_false)
    print(f"thresholds (min cosine, min coverage, cosine under which low coverage abstains): "
          f"{thresholds}  [{time.perf_counter() - started:.0f}s]")
    print("| set | on-topic | off-topic | off-topic abstained | on-topic abstained | "
          "precision | recall | false-abstain rate |")
    print("|---|---:|---:|---:|---:|---:|---:|---:|")
    print(report("calibration (dev + first half off-topic), all corpora", cal_on, cal_off,
                 thresholds))
    print(report("held out (test + second half off-topic), all corpora", held_on, held_off,
                 thresholds))
    for name, (dev, off1, test, off2) in per_corpus.items():
        print(report(f"held out, {name}", test, off2, thresholds))
    for label, values in (("on-topic dev", cal_on), ("off-topic", cal_off + held_off)):
        cosines = sorted(s.nearest_cosine for s in values if s.nearest_cosine is not None)
        coverage = sorted(s.term_coverage for s in values)
        if cosines:
            print(f"{label}: nearest cosine p5 {cosines[len(cosines) // 20]:.3f} "
                  f"median {cosines[len(cosines) // 2]:.3f} p95 {cosines[len(cosines) * 19 // 20]:.3f}; "
                  f"term coverage median {coverage[len(coverage) // 2]:.2f}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
