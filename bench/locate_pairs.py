"""(change description → changed code) pairs from the commit history of the
locate set's **train** projects, for a contrastive step on the static model.

    python bench/locate_pairs.py --mine [--scan N] [--per-project N] [--shard I/N]
    python bench/locate_pairs.py --train OUT.npy [--pairs DIR] [--epochs N] [--lr X] [--query-only]
    python bench/locate_pairs.py --evaluate TABLE.npy [--out DIR]   # dev: locate with that table

A pair is one non-merge commit of a train project (``locate_commits.split_of``;
dev and test projects are never read) whose message says what changed in
prose (``describes_a_change``, which the fix-commit miner's test builds
on), and whose
first-party source changes are 1 to ``MAX_GOLD`` modified files
(``gold_files``). Its query is what locate's semantic signal embeds of a text
(``semantic_query``); its passages the code chunks of the changed files, as the
chunker cuts them at the commit, that the diff's new lines fall in (at most
two, most changed lines first), each as the index embeds it
(``embedding_text``). Only git history is read.

``--train`` fits the shipped static table (``index/models/code-static-256.npy``)
to the pairs the way the runtime reads it (a text's vector is the normalised sum
of its token rows): an in-batch softmax (InfoNCE, both directions) over
batches of one project's pairs, so the negatives are the same repository's
other changes, as locate's semantic signal compares files of one repository;
Adam on the rows a batch touches (``--query-only``: only the query's rows;
the passages keep the shipped ones, as recall's chunk vectors would).
"""

from __future__ import annotations

import argparse
import json
import random
import re
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from git_walk import Blobs, git, snapshot_dir  # noqa: E402
from locate_commits import PROJECTS, TRAIN, describes_a_change, gold_files, messages, split_of  # noqa: E402

HERE = Path(__file__).resolve().parent
PAIRS_DIR = HERE / ".cache" / "locate_pairs" / "pairs"
SCAN = 8000  # newest commits read per project
PER_PROJECT = 1200  # pairs at most per project
CHUNKS_PER_COMMIT = 2
# Larger files are left out: tree-sitter's parse of a few generated or
# hostile files runs to gigabytes here (the product parses in a worker with
# a deadline; this miner does not).
MAX_FILE_BYTES = 200_000
_HUNK = re.compile(r"^@@ -\d+(?:,\d+)? \+(\d+)(?:,(\d+))? @@", re.M)


def changed_lines(git_dir: Path, commit: str, path: str) -> set[int]:
    """The 1-based lines of ``path`` at ``commit`` that the commit added or changed."""
    diff = git(git_dir, "show", "-U0", "--format=", "--no-renames", commit, "--", path)
    lines: set[int] = set()
    for match in _HUNK.finditer(diff):
        start, count = int(match.group(1)), int(match.group(2) or 1)
        # A pure deletion (count 0) changed the code around line ``start``.
        lines.update(range(start, start + count) if count else (start, start + 1))
    return lines


def mine_project(name: str, head: str, scan: int, per_project: int) -> list[dict]:
    from ctxls.index.chunker import chunk_file
    from ctxls.index.embed_text import embedding_text
    from ctxls.index.locate_signals import SignalConfig
    from ctxls.index.locate_text import read_issue, semantic_query

    git_dir = snapshot_dir(name)
    words = SignalConfig().semantic_query_words
    found = []
    candidates = []
    for c, subject, text in messages(git_dir, head, scan):
        gold = gold_files(c["changes"]) if describes_a_change(subject, text) else None
        if gold:
            candidates.append((c, text, gold))
    random.Random(name).shuffle(candidates)
    blobs = Blobs(git_dir)
    try:
        for c, text, gold in candidates:
            if len(found) >= per_project:
                break
            scored = []
            for path in gold:
                size = git(git_dir, "cat-file", "-s", f"{c['commit']}:{path}").strip()
                source = blobs.read(c["commit"], path) if size.isdigit() and int(size) <= MAX_FILE_BYTES else None
                if source is None:
                    continue
                lines = changed_lines(git_dir, c["commit"], path)
                try:
                    chunks = chunk_file(path, source).chunks
                except MemoryError:  # run under a memory limit (prlimit --as): a file too costly to parse
                    continue
                for chunk in chunks:
                    if chunk.kind != "code":
                        continue
                    overlap = sum(1 for n in lines if chunk.start_line <= n <= chunk.end_line)
                    if overlap:
                        scored.append((overlap, embedding_text(path, chunk.symbol, chunk.text)))
            if not scored:
                continue
            scored.sort(key=lambda pair: -pair[0])
            found.append({"project": name, "commit": c["commit"],
                          "query": semantic_query(read_issue(text), words),
                          "passages": [t for _, t in scored[:CHUNKS_PER_COMMIT]]})
    finally:
        blobs.close()
    return found


def mine(scan: int, per_project: int, shard: tuple[int, int] = (0, 1), folder: Path = PAIRS_DIR,
         only: list[str] | None = None) -> int:
    """Writes each train project's pairs to ``folder/<owner+name>.jsonl``
    (``shard``: the i-th of n parts of the projects, by position); a project
    already written is kept (a re-run resumes)."""
    index, shards = shard
    folder.mkdir(parents=True, exist_ok=True)
    total = 0
    train = [repo for repo in PROJECTS if split_of(repo.name) == TRAIN]
    for repo in train[index::shards]:
        if only and repo.name not in only:
            continue
        out = folder / f"{repo.name.replace('/', '+')}.jsonl"
        if out.exists():
            continue
        started = time.monotonic()
        pairs = mine_project(repo.name, repo.head, scan, per_project)
        partial = out.with_suffix(".part")
        partial.write_text("".join(json.dumps(pair) + "\n" for pair in pairs))
        partial.replace(out)
        total += len(pairs)
        print(f"{repo.name}: {len(pairs)} pairs, {time.monotonic() - started:.0f} s", flush=True)
    return total


def read_pairs(folder: Path = PAIRS_DIR) -> list[dict]:
    return [json.loads(line) for name in sorted(folder.glob("*.jsonl"))
            for line in name.read_text().splitlines() if line.strip()]


# -- the contrastive step ------------------------------------------------------------------------

SCALE = 20.0  # the softmax's inverse temperature (static_distill.py's contrastive step)
BATCH = 64
HELD_OUT = 0.1  # share of the train projects whose pairs choose the epoch


def token_ids(tokenizer, texts: list[str]) -> list[np.ndarray]:
    return [np.asarray(e.ids, dtype=np.int64) for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


def _forward(table: np.ndarray, ids: list[np.ndarray]) -> tuple[np.ndarray, np.ndarray]:
    sums = np.stack([table[i].sum(axis=0) if len(i) else np.zeros(table.shape[1], np.float32) for i in ids])
    norms = np.maximum(np.linalg.norm(sums, axis=1, keepdims=True), 1e-12)
    return sums / norms, norms


def _softmax(x: np.ndarray, axis: int) -> np.ndarray:
    e = np.exp(x - x.max(axis=axis, keepdims=True))
    return e / e.sum(axis=axis, keepdims=True)


def batch_gradient(table: np.ndarray, queries: list[np.ndarray], passages: list[np.ndarray] | np.ndarray):
    """The symmetric InfoNCE loss of a batch and its gradient on the rows it
    reads: (loss, row ids, row gradients). ``passages`` as vectors (an array):
    fixed, only the queries' rows learn."""
    q, q_norm = _forward(table, queries)
    fixed = isinstance(passages, np.ndarray)
    p, p_norm = (passages, None) if fixed else _forward(table, passages)
    logits = SCALE * q @ p.T
    n = len(queries)
    eye = np.eye(n, dtype=np.float32)
    rows, cols = _softmax(logits, 1), _softmax(logits, 0)
    loss = -(np.log(np.diag(rows) + 1e-12).mean() + np.log(np.diag(cols) + 1e-12).mean()) / 2
    g = ((rows - eye) + (cols - eye)) / (2 * n)
    # Through the normalisation: d(u/|u|) = (I - v v^T) / |u|.
    dq = SCALE * g @ p
    texts, du = queries, [(dq - q * (q * dq).sum(axis=1, keepdims=True)) / q_norm]
    if not fixed:
        dp = SCALE * g.T @ q
        texts, du = queries + passages, du + [(dp - p * (p * dp).sum(axis=1, keepdims=True)) / p_norm]
    all_ids = np.concatenate(texts)
    grads = np.concatenate([np.repeat(row[None, :], len(i), axis=0) for row, i in zip(np.concatenate(du), texts)])
    unique, inverse = np.unique(all_ids, return_inverse=True)
    summed = np.zeros((len(unique), table.shape[1]), np.float32)
    np.add.at(summed, inverse, grads)
    return float(loss), unique, summed


def held_out_mrr(table: np.ndarray, pairs: list[dict], passage_table: np.ndarray | None = None) -> float:
    """Each held-out query against every passage of its project: the MRR of
    its own (``passage_table``: the passages' table, when only queries learn)."""
    by_project: dict[str, list[dict]] = {}
    for pair in pairs:
        by_project.setdefault(pair["project"], []).append(pair)
    ranks = []
    for group in by_project.values():
        q, _ = _forward(table, [pair["q_ids"] for pair in group])
        owners = [k for k, pair in enumerate(group) for _ in pair["p_ids"]]
        p, _ = _forward(table if passage_table is None else passage_table,
                        [i for pair in group for i in pair["p_ids"]])
        sims = q @ p.T
        for k, row in enumerate(sims):
            best = np.full(len(group), -np.inf)
            np.maximum.at(best, owners, row)
            ranks.append(1 + int((best > best[k]).sum()))
    return float(np.mean([1 / r for r in ranks]))


def train(out: Path, epochs: int, lr: float, seed: int = 0, pairs: Path = PAIRS_DIR,
          query_only: bool = False) -> dict:
    from ctxls.index.embeddings import STATIC_MODEL_NAME, load_embedder

    embedder = load_embedder(STATIC_MODEL_NAME)
    shipped = embedder._table
    tokenizer = embedder._tokenizer
    folder, pairs = pairs, read_pairs(pairs)
    for pair, q_ids in zip(pairs, token_ids(tokenizer, [p["query"] for p in pairs])):
        pair["q_ids"] = q_ids
    passages = token_ids(tokenizer, [t for p in pairs for t in p["passages"]])
    at = 0
    for pair in pairs:
        pair["p_ids"] = passages[at:at + len(pair["passages"])]
        at += len(pair["passages"])
    projects = sorted({p["project"] for p in pairs})
    rng = random.Random(seed)
    held = set(rng.sample(projects, max(1, round(HELD_OUT * len(projects)))))
    fit = [p for p in pairs if p["project"] not in held]
    check = [p for p in pairs if p["project"] in held]
    table = shipped.copy()
    fixed = shipped if query_only else None
    if query_only:
        for pair in pairs:
            pair["p_vecs"] = _forward(shipped, pair["p_ids"])[0]
    m = np.zeros_like(table)
    v = np.zeros_like(table)
    step = 0
    history = [{"epoch": 0, "held_out_mrr": round(held_out_mrr(table, check, fixed), 4)}]
    print(history[-1], flush=True)
    best = (history[0]["held_out_mrr"], table.copy())
    for epoch in range(1, epochs + 1):
        started = time.monotonic()
        batches = []
        for project in projects:
            group = [p for p in fit if p["project"] == project]
            rng.shuffle(group)
            batches += [group[k:k + BATCH] for k in range(0, len(group), BATCH) if len(group[k:k + BATCH]) > 8]
        rng.shuffle(batches)
        losses = []
        for batch in batches:
            choice = [rng.randrange(len(p["p_ids"])) for p in batch]
            loss, ids, grad = batch_gradient(
                table, [p["q_ids"] for p in batch],
                np.stack([p["p_vecs"][k] for p, k in zip(batch, choice)]) if query_only
                else [p["p_ids"][k] for p, k in zip(batch, choice)])
            step += 1
            m[ids] = 0.9 * m[ids] + 0.1 * grad
            v[ids] = 0.999 * v[ids] + 0.001 * grad * grad
            m_hat = m[ids] / (1 - 0.9 ** step)
            v_hat = v[ids] / (1 - 0.999 ** step)
            table[ids] -= lr * m_hat / (np.sqrt(v_hat) + 1e-8)
            losses.append(loss)
        mrr = held_out_mrr(table, check, fixed)
        history.append({"epoch": epoch, "loss": round(float(np.mean(losses)), 4), "held_out_mrr": round(mrr, 4),
                        "seconds": round(time.monotonic() - started)})
        print(history[-1], flush=True)
        if mrr > best[0]:
            best = (mrr, table.copy())
    np.save(out, best[1].astype(np.float16))
    summary = {"pairs": len(fit), "held_out_pairs": len(check), "held_out_projects": sorted(held),
               "epochs": history, "lr": lr, "out": str(out), "pairs_from": str(folder),
               "query_only": query_only}
    out.with_suffix(".json").write_text(json.dumps(summary, indent=1) + "\n")
    return summary


# -- the measurement -----------------------------------------------------------------------------

def evaluate(table_path: Path, out: Path, split: str = "dev") -> dict:
    """Locate's semantic signal for the ``split`` projects' fix-commit tasks
    with ``table_path`` in place of the shipped table (chunks and query alike;
    written under ``out`` as ``locate_commits.py --semantic`` writes), then
    Acc@1 / @5 / MRR with today's scorer, and the signal alone: how often the
    pool's best file by cosine is gold (Hit@1) and the MRR of the first gold
    file, over the tasks whose gold file is in the pool."""
    import glob

    import ctxls.index.embeddings as embeddings
    import train_locate_scorer as scorer_fit
    from locate_commits import DATA_DIR, add_semantic, semantic_path

    # The engine's loader reads the static model's file through these globals
    # (as static_candidate.py serves a candidate); the name stays the shipped one.
    shipped = embeddings.STATIC_MODEL_FILE, embeddings.STATIC_MODEL_SHA256
    embeddings.STATIC_MODEL_FILE, embeddings.STATIC_MODEL_SHA256 = table_path, None
    try:
        for name in sorted(glob.glob(str(DATA_DIR / "features" / "*.jsonl"))):
            with open(name) as source:
                if json.loads(source.readline())["split"] == split:
                    add_semantic(Path(name), embeddings.STATIC_MODEL_NAME, data_dir=out)
    finally:
        embeddings.STATIC_MODEL_FILE, embeddings.STATIC_MODEL_SHA256 = shipped
    folder = semantic_path("x/y", embeddings.STATIC_MODEL_NAME, out).parent
    commits = [c for c in scorer_fit.load(scorer_fit.DUMPS)[0] if c["split"] == split]
    scorer_fit.load_semantic(commits, str(folder))
    figures = scorer_fit.metrics(commits, scorer_fit.scores_of(scorer_fit.todays_scorer(), commits, semantic=True))
    firsts = []
    for commit in commits:
        cosines = {c["path"]: c["signals"]["semantic"] for c in commit["candidates"] if "semantic" in c["signals"]}
        ranked = sorted(cosines, key=lambda path: -cosines[path])
        found = [ranked.index(g) + 1 for g in commit["gold"] if g in cosines]
        if found:
            firsts.append(min(found))
    return {"split": split, "tasks": len(commits), "acc@1": figures["acc@1"], "acc@5": figures["acc@5"],
            "mrr": figures["mrr"], "semantic alone, tasks": len(firsts),
            "semantic alone, hit@1": round(100 * sum(r == 1 for r in firsts) / len(firsts), 1),
            "semantic alone, mrr": round(float(np.mean([1 / r for r in firsts])), 3)}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    parser.add_argument("--mine", action="store_true")
    parser.add_argument("--scan", type=int, default=SCAN)
    parser.add_argument("--per-project", type=int, default=PER_PROJECT)
    parser.add_argument("--shard", default="0/1", help="--mine: the i-th of n parts of the projects (i/n)")
    parser.add_argument("--project", action="append", help="--mine: only this project (owner/name; repeat)")
    parser.add_argument("--pairs", type=Path, default=PAIRS_DIR, help="the pairs' folder")
    parser.add_argument("--train", type=Path, metavar="OUT.npy")
    parser.add_argument("--epochs", type=int, default=4)
    parser.add_argument("--lr", type=float, default=3e-3)
    parser.add_argument("--query-only", action="store_true", help="--train: the passages keep the shipped rows")
    parser.add_argument("--evaluate", type=Path, metavar="TABLE.npy",
                        help="locate on the dev projects with this table (the shipped one: index/models/…)")
    parser.add_argument("--out", type=Path, help="--evaluate: where the semantic files go")
    args = parser.parse_args()
    if args.train:
        train(args.train, args.epochs, args.lr, pairs=args.pairs, query_only=args.query_only)
    if args.evaluate:
        print(json.dumps(evaluate(args.evaluate, args.out or args.evaluate.with_suffix(".eval"))))
    if args.mine:
        index, shards = (int(part) for part in args.shard.split("/"))
        print(f"{mine(args.scan, args.per_project, (index, shards), args.pairs, args.project)} pairs")


if __name__ == "__main__":
    main()
