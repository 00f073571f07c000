"""tokenlearn's recipe at scale for the static table (issue 35): the teacher's
vectors of many training chunks, the table trained to match them.

    .venv/bin/python bench/static_tokenlearn.py prepare [--out DIR]        # CPU, ~15 min
    python bench/static_tokenlearn_train.py --data DIR --out DIR [--variants ...]  # torch; H200: ~2 min
    .venv/bin/python bench/static_candidate.py NAME DIR/VARIANT.npy       # score a table on set 4

``prepare`` (CPU, the project's venv; the corpora are fetched if missing):

1. ``embed_train.py pairs`` (the contrastive step's 24k (doc sentence, chunk) pairs);
2. every file of every training corpus (``embed_train._corpora()``: role train in
   bench/projects.md, no project of a dev, test or held-out set) that the
   product can read is cut by the product's chunker, packed (``chunk_file``)
   and unpacked (``definition_chunks``: the teacher reads a chunk's first 126
   tokens only, so a packed chunk's later definitions are texts of their own
   too), each chunk's embedding text made as the product makes it
   (``embed_text.embedding_text``); duplicates and texts of fewer than
   ``MIN_TOKENS`` tokens dropped; the pairs' queries added (the table must
   place a sentence as well as a chunk);
3. what the trainer needs, in ``DIR`` (default ``bench/.cache/static-tokenlearn``),
   9.4 MiB in all, small enough to travel to a GPU machine:
   ``texts.json.xz`` (each text cut after the word that holds its 126th token:
   what the teacher reads, ``[CLS]`` + 126 + ``[SEP]`` = embeddings.MAX_TOKENS;
   a text whose first 126 tokens the cut would change is dropped),
   ``pairs.json.xz`` (the pairs, passages cut at ``PASSAGE_TOKENS``),
   ``counts.npy`` (static_distill.py's token counts, for the SIF weights).

The training (``static_tokenlearn_train.py``) needs numpy, torch, onnx and
tokenizers and no project import: it runs from a copy of itself and those
files beside the repository's ``index/models`` (the teacher and tokenizer).
"""

from __future__ import annotations

import argparse
import json
import lzma
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import CACHE_DIR  # noqa: E402

WORK_DIR = CACHE_DIR / "static-tokenlearn"
# The contrastive step's passages are cut here (the data must fit a device
# machine's transfer); the regression's texts at what the teacher reads.
PASSAGE_TOKENS = 256
TEACHER_TOKENS = 126  # embeddings.MAX_TOKENS less [CLS] and [SEP]
QUERY_TOKENS = 48
MIN_TOKENS = 8
MAX_FILE_BYTES = 400_000


def chunk_texts(log) -> list[tuple[str, str]]:
    """(corpus, embedding text) of every chunk of every training corpus, unique."""
    from embed_train import training_trees

    from ctxls.index.chunker import chunk_file, definition_chunks
    from ctxls.index.embed_text import embedding_text
    from ctxls.index.languages import language_for_path

    seen, out = set(), []
    for corpus, tree in training_trees(log, "static-tokenlearn"):
        n = 0
        for path in sorted(tree.rglob("*")):
            rel = path.relative_to(tree).as_posix()
            if (not path.is_file() or rel.startswith(".git/") or path.stat().st_size > MAX_FILE_BYTES
                    or language_for_path(rel) is None):
                continue
            text = path.read_bytes().decode("utf-8", errors="replace")
            # The product's chunks, then the unpacked reading (one chunk a
            # definition): the teacher reads a chunk's first 126 tokens only,
            # so a packed chunk's later definitions are texts of their own too.
            for parsed in (chunk_file(rel, text), definition_chunks(rel, text)):
                for chunk in parsed.chunks:
                    embedded = embedding_text(rel, chunk.symbol, chunk.text)
                    if embedded not in seen:
                        seen.add(embedded)
                        out.append((corpus.name, embedded))
                        n += 1
        log(f"static-tokenlearn: {corpus.name}: {n} chunks ({len(out)} in all)")
    return out


def teacher_cut(text: str, encoding, tokens: int) -> str:
    """``text`` cut after the word that holds its ``tokens``-th token: what the
    teacher reads of it (and a little more), a fraction of the bytes."""
    if len(encoding.ids) <= tokens:
        return text
    end = encoding.offsets[tokens - 1][1]
    while end < len(text) and not text[end].isspace() and text[end].isalnum():
        end += 1
    return text[:end]


def prepare(out_dir: Path, log) -> None:
    import static_distill
    from embed_train import PAIRS, build_pairs
    from tokenizers import Tokenizer

    from ctxls.index import embeddings

    files = embeddings.builtin_model_files(embeddings.CODE_MODEL_NAME)
    embeddings.check_file(files.tokenizer, files.tokenizer_sha256)
    tokenizer = Tokenizer.from_file(str(files.tokenizer))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    out_dir.mkdir(parents=True, exist_ok=True)

    if not PAIRS.is_file():
        build_pairs(log)
    pairs = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line]
    cached = WORK_DIR / "chunks.jsonl.xz"
    if cached.is_file():
        chunks = [tuple(json.loads(line)) for line in lzma.open(cached, "rt", encoding="utf-8")]
    else:
        chunks = chunk_texts(log)
        WORK_DIR.mkdir(parents=True, exist_ok=True)
        with lzma.open(cached, "wt", encoding="utf-8") as f:
            for row in chunks:
                f.write(json.dumps(row) + "\n")
    queries = sorted({(p["corpus"], p["query"]) for p in pairs})
    corpora = sorted({c for c, _ in chunks} | {p["corpus"] for p in pairs})

    t0 = time.perf_counter()
    rows, mismatched = [], 0
    for kind, group in (("chunk", chunks), ("query", queries)):
        encodings = tokenizer.encode_batch([t for _, t in group], add_special_tokens=False)
        cut = [teacher_cut(t, e, TEACHER_TOKENS) for (_, t), e in zip(group, encodings)]
        again = tokenizer.encode_batch(cut, add_special_tokens=False)
        for (corpus, _), e, c, a in zip(group, encodings, cut, again):
            if kind == "chunk" and len(e.ids) < MIN_TOKENS:
                continue
            if a.ids[:TEACHER_TOKENS] != e.ids[:TEACHER_TOKENS]:
                mismatched += 1
                continue
            rows.append([corpora.index(corpus), int(kind == "query"), c])
    with lzma.open(out_dir / "texts.json.xz", "wt", encoding="utf-8", preset=9) as f:
        json.dump({"corpora": corpora, "texts": rows}, f)
    log(f"static-tokenlearn: {len(rows)} texts ({sum(1 for r in rows if not r[1])} chunks), "
        f"{mismatched} dropped (cut changed their tokens), in {time.perf_counter() - t0:.0f}s")

    passage_keys: dict[str, int] = {}
    encodings = tokenizer.encode_batch([p["passage"] for p in pairs], add_special_tokens=False)
    out = [[corpora.index(p["corpus"]), passage_keys.setdefault(p["passage"], len(passage_keys)),
            p["query"], teacher_cut(p["passage"], e, PASSAGE_TOKENS)] for p, e in zip(pairs, encodings)]
    with lzma.open(out_dir / "pairs.json.xz", "wt", encoding="utf-8", preset=9) as f:
        json.dump(out, f)
    log(f"static-tokenlearn: {len(pairs)} pairs")

    # SIF weights of static_distill.py (token counts of the training corpora's files).
    np.save(out_dir / "counts.npy", static_distill.token_counts(tokenizer, log))
    log(f"static-tokenlearn: wrote {out_dir}: " + ", ".join(
        f"{p.name} {p.stat().st_size / 2**20:.1f} MiB" for p in sorted(out_dir.iterdir())))


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    sub = parser.add_subparsers(dest="command", required=True)
    p = sub.add_parser("prepare")
    p.add_argument("--out", type=Path, default=WORK_DIR)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    prepare(args.out, lambda m: print(m, file=sys.stderr, flush=True))
    print(f"prepared {args.out} in {time.perf_counter() - t0:.0f}s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
