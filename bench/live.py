"""Live on disk (issue 34): how soon a file written on disk is visible, how a
checkout is followed, and what following the disk costs when nothing changes.

On a django-sized tree (the django 5.2.17 wheel's package: bench/projects.md),
in process, lexical (no embedding worker competing for the CPU), with the
real watcher (index/live.py) and no editor:

- write → visible, p50/p95 over ``--trials`` appends of a new function to a
  random file, measured from the write's return until (each in its own trial)
  recall finds the new function's lines, impact finds its definition at the
  right line, or the edit log lists it (the watcher alone: recent activity
  reads no file, so no answer's own check pulls the change in); `get` of the
  new lines is answered from the file itself (always current).
- a git checkout between two commits ``--burst`` files apart (two comment lines
  inserted at the top of each, a function renamed in each): seconds until the
  burst's pass ends and the index holds every changed file's new text;
  meanwhile a thread asks recall without pause and counts answers that mix old
  line ranges with new text (a hit whose file did not change during its
  answer and whose body is not the file's text at its range).
- idle CPU: the process's CPU time over ``--idle`` seconds with nothing
  changing, as a share of one core.

    .venv/bin/python bench/live.py [--trials 60] [--burst 400] [--idle 30] [--watch poll]
"""

from __future__ import annotations

import argparse
import os
import random
import re
import shutil
import statistics
import subprocess
import sys
import threading
import time
import zipfile
from pathlib import Path

from corpora import CORPORA_DIR
from ctxls.impact import analysis
from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.model import content_hash

DJANGO = "5.2.17"
GIT_ENV = {**os.environ, "GIT_AUTHOR_NAME": "bench", "GIT_AUTHOR_EMAIL": "b@b",
           "GIT_COMMITTER_NAME": "bench", "GIT_COMMITTER_EMAIL": "b@b"}


def git(root: Path, *args: str) -> str:
    return subprocess.run(["git", "-C", str(root), *args], check=True, capture_output=True,
                          env=GIT_ENV, text=True).stdout


def django_tree() -> Path:
    """A fresh copy of django's package from its wheel (pip, the local index),
    committed as a git repository's first commit."""
    wheel_dir = CORPORA_DIR / "wheels"
    wheel = next(wheel_dir.glob(f"django-{DJANGO}-*.whl"), None) if wheel_dir.is_dir() else None
    if wheel is None:
        wheel_dir.mkdir(parents=True, exist_ok=True)
        subprocess.run([sys.executable, "-m", "pip", "download", "--no-deps", "-q",
                        f"django=={DJANGO}", "-d", str(wheel_dir)], check=True)
        wheel = next(wheel_dir.glob(f"django-{DJANGO}-*.whl"))
    tree = CORPORA_DIR / f"django-{DJANGO}-live"
    shutil.rmtree(tree, ignore_errors=True)
    tree.mkdir(parents=True)
    with zipfile.ZipFile(wheel) as archive:
        for member in archive.namelist():
            if member.startswith("django/"):
                archive.extract(member, tree)
    git(tree, "init", "-q", "-b", "main")
    git(tree, "add", "-A")
    git(tree, "commit", "-q", "-m", "django")
    return tree


def pct(values: list[float], q: float) -> float:
    ordered = sorted(values)
    return ordered[min(len(ordered) - 1, int(round(q * (len(ordered) - 1))))]


def wait_for(predicate, timeout: float = 30.0, interval: float = 0.005) -> float | None:
    started = time.perf_counter()
    while time.perf_counter() - started < timeout:
        if predicate():
            return time.perf_counter() - started
        time.sleep(interval)
    return None


def python_files(tree: Path) -> list[str]:
    return sorted(p for p in git(tree, "ls-files", "*.py").split("\n")
                  if p and (tree / p).stat().st_size > 2000)


def visibility(engine: Engine, tree: Path, trials: int, rng: random.Random) -> dict:
    files = python_files(tree)
    found: dict[str, list[float]] = {"recall": [], "impact": [], "activity": []}
    missed: dict[str, int] = {k: 0 for k in found}
    for trial in range(trials):
        kind = ("recall", "impact", "activity")[trial % 3]
        path = rng.choice(files)
        name = f"live_probe_{trial}_{rng.randrange(10**6)}"
        text = (tree / path).read_text()
        start_line = text.count("\n") + 2
        with open(tree / path, "a") as fh:
            fh.write(f"\n\ndef {name}(value):\n    return value * {trial}\n")
        if kind == "recall":
            def seen() -> bool:
                hits = engine.recall(name, ["code"], n=3, body=True).hits_by_kind["code"]
                return any(h.path == path and f"def {name}(value):" in (h.body or "") for h in hits)
        elif kind == "impact":
            def seen() -> bool:
                result = analysis.analyze(engine, name, with_callers=False)
                return result is not None and result.definitions[0].start_line == start_line
        else:
            def seen() -> bool:
                return any(a.symbol == name for a in engine.recent_activity(limit=5))
        elapsed = wait_for(seen)
        if elapsed is None:
            missed[kind] += 1
        else:
            found[kind].append(elapsed)
        got = engine.get(path, start_line, start_line + 1)
        assert got.text == f"def {name}(value):\n    return value * {trial}", got.text
        time.sleep(0.2)  # one change at a time: the next write is a batch of its own
    return {kind: {"n": len(v), "missed": missed[kind],
                   "p50_ms": round(statistics.median(v) * 1000, 1) if v else None,
                   "p95_ms": round(pct(v, 0.95) * 1000, 1) if v else None,
                   "max_ms": round(max(v) * 1000, 1) if v else None}
            for kind, v in found.items()}


def prepare_branch(tree: Path, count: int, rng: random.Random) -> list[tuple[str, str, str]]:
    """A branch ``moved`` where ``count`` files get two comment lines on top
    and one function renamed; back on main. Returns (path, old, new) names."""
    renamed = []
    for path in rng.sample(python_files(tree), count):
        text = (tree / path).read_text()
        names = [n for n in re.findall(r"^\s*def ([A-Za-z_]\w*)\(", text, re.M)
                 if len(re.findall(rf"\bdef {n}\(", text)) == 1]
        if not names:
            continue
        old = rng.choice(names)
        new = f"{old}_moved_{len(renamed)}"
        text = re.sub(rf"\bdef {old}\(", f"def {new}(", text, count=1)
        (tree / path).write_text("# moved by a checkout\n# (bench/live.py)\n" + text)
        renamed.append((path, old, new))
    git(tree, "checkout", "-q", "-b", "moved")
    git(tree, "commit", "-q", "-am", "moved")
    git(tree, "checkout", "-q", "main")
    return renamed


def consistent(engine: Engine, tree: Path, renamed: list[tuple[str, str, str]]) -> bool:
    """The index holds every changed file's current text, and no pass is running."""
    for path, _, _ in renamed:
        state = engine.store.file_state(path)
        if state is None or state.hash != content_hash((tree / path).read_text()):
            return False
    return not engine.indexing


def checkout(engine: Engine, tree: Path, renamed: list[tuple[str, str, str]], to_moved: bool,
             rng: random.Random) -> dict:
    bursts: list[tuple[str, float]] = []
    stop = threading.Event()
    answers = {"answers": 0, "partial": 0, "checked_hits": 0, "mixed": 0}
    words = [new if to_moved else old for _, old, new in renamed]

    class Progress:
        def report(self, done: int, total: int) -> None:
            pass

        def end(self, message: str) -> None:
            bursts.append((message, time.perf_counter()))

    def on_burst(title: str) -> Progress:
        bursts.append((title, time.perf_counter()))
        return Progress()

    def ask() -> None:
        """Recall without pause during the checkout: no hit may lay old lines over new text."""
        while not stop.is_set():
            query = rng.choice(words)
            asked = time.time_ns()
            result = engine.recall(query, ["code"], n=5, body=True)
            answers["answers"] += 1
            answers["partial"] += result.partial
            for hit in result.hits_by_kind["code"]:
                try:
                    before = os.stat(tree / hit.path).st_mtime_ns
                    text = (tree / hit.path).read_text()
                except OSError:
                    continue
                if before >= asked - 2_000_000:  # changed around or during the answer
                    continue
                answers["checked_hits"] += 1
                lines = text.split("\n")
                if hit.body != "\n".join(lines[hit.start_line:hit.end_line + 1]):
                    answers["mixed"] += 1

    engine.on_burst = on_burst
    asker = threading.Thread(target=ask)
    asker.start()
    started = time.perf_counter()
    git(tree, "checkout", "-q", "moved" if to_moved else "main")
    git_done = time.perf_counter() - started
    elapsed = wait_for(lambda: consistent(engine, tree, renamed), timeout=120,
                       interval=0.05)
    stop.set()
    asker.join()
    engine.on_burst = None
    ends = [at for message, at in bursts if message.startswith("re-indexed")]
    return {"files": len(renamed), "git_s": round(git_done, 2),
            "consistent_s": round(elapsed, 2) if elapsed is not None else None,
            "burst_passes": sum(1 for m, _ in bursts if not m.startswith("re-indexed")),
            "last_pass_end_s": round(ends[-1] - started, 2) if ends else None, **answers}


def idle_cpu(seconds: float) -> float:
    """This process's CPU time over ``seconds`` of nothing changing, as % of one core."""
    cpu, wall = time.process_time(), time.perf_counter()
    time.sleep(seconds)
    return round((time.process_time() - cpu) / (time.perf_counter() - wall) * 100, 3)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--trials", type=int, default=60)
    parser.add_argument("--burst", type=int, default=400)
    parser.add_argument("--idle", type=float, default=30.0)
    parser.add_argument("--seed", type=int, default=34)
    parser.add_argument("--watch", choices=("auto", "poll"), default="auto",
                        help="poll: the stat scans used where native events cannot watch")
    args = parser.parse_args()
    rng = random.Random(args.seed)
    tree = django_tree()
    renamed = prepare_branch(tree, args.burst, rng)
    engine = Engine(tree, EngineOptions(watch=args.watch))
    started = time.perf_counter()
    engine.follow_disk()
    engine.follower.established.wait(30)
    watch_s = time.perf_counter() - started
    stats = engine.cold_index()
    print(f"tree {tree}: {stats.files} files indexed in {time.perf_counter() - started:.1f} s "
          f"(watch set up in {watch_s:.2f} s: {engine.status()['watch']})", flush=True)
    time.sleep(2)
    print(f"idle CPU over {args.idle:g} s: {idle_cpu(args.idle)} % of one core", flush=True)
    print("write -> visible:", visibility(engine, tree, args.trials, rng), flush=True)
    git(tree, "reset", "-q", "--hard")  # the probes go; the watcher follows
    time.sleep(3)
    print("checkout main -> moved:", checkout(engine, tree, renamed, True, rng), flush=True)
    print("checkout moved -> main:", checkout(engine, tree, renamed, False, rng), flush=True)
    time.sleep(2)
    print(f"idle CPU after, over {args.idle:g} s: {idle_cpu(args.idle)} % of one core", flush=True)
    engine.close()
    # The same process and store without the watcher: what following the disk adds.
    engine = Engine(tree, EngineOptions(watch="off"))
    engine.index()
    time.sleep(2)
    print(f"idle CPU without the watcher, over {args.idle:g} s: {idle_cpu(args.idle)} % of one "
          "core", flush=True)
    engine.close()
    print(f"load average: {os.getloadavg()}, cores: {os.cpu_count()}", flush=True)


if __name__ == "__main__":
    main()
