"""Distil the static code embedding model (issue 35) from the shipped code model.

    .venv/bin/pip install torch==2.13.0     # training only; never a ctxls dependency
    .venv/bin/python bench/static_distill.py [--sif A] [--dims N] [--kd W] [--max-tokens N]
        [--out FILE]

model2vec's method, written here with onnxruntime and numpy (model2vec's own
``distill`` needs transformers), then one contrastive step:

1. every token of the vocabulary goes through ``ctxls-code-minilm-int8`` (the
   model that ships in ``index/models``) as ``[CLS] token [SEP]``, mean-pooled
   over the three positions the way the model pools a sentence;
2. PCA (centred, by SVD) down to ``--dims`` dimensions;
3. each token's vector is scaled by a SIF weight ``a / (a + p)``, ``p`` the
   token's share of all tokens in the training corpora's files (the corpora of
   ``embed_train.py``: no project of a dev, test or held-out set), so that
   ``(``, ``self`` or ``return`` weigh little in a mean and a rare identifier
   piece a lot. A token never seen there gets the weight of one seen once;
4. the table is trained as the runtime uses it (a text's vector is the
   normalised mean of its tokens' rows) on ``embed_train.py``'s (doc
   sentence, chunk) pairs with in-batch negatives, CONTRASTIVE_EPOCHS epochs
   of batches of one corpus, sparse Adam (only the rows a batch uses move).
   This step needs torch; the pairs are built first if missing
   (``embed_train.py pairs``). ``--kd W`` adds W x the KL divergence from the
   teacher's in-batch scores (its cosines of the batch's queries and
   passages, x CONTRASTIVE_SCALE) to the table's: distillation of the ranking, not
   only of the labels (measured and not kept: docs/decisions.md, "The static
   table stays"). The teacher's vectors of every pair are cached in
   ``bench/.cache/static-distill/teacher`` (~70 texts/s on two loaded cores).

Candidates are scored on set 4 without shipping them by
``bench/static_candidate.py NAME FILE``.

At run time (``index/embeddings.StaticEmbedder``) a text is tokenized with the
same tokenizer, its token vectors averaged and the mean normalised: no model.

Writes ``index/models/code-static-256.npy`` (float16 [vocab, dims]) and prints
its sha256, which ``index/embeddings.STATIC_MODEL_SHA256`` must then state
(and a changed table ships under a new ``STATIC_MODEL_NAME``: vectors are
stamped with the name). Token counts and the tokens' vectors are cached in
``bench/.cache/static-distill/``. Versions of the shipped build:
numpy 2.4.6, onnxruntime 1.32.0, tokenizers 0.23.3, torch 2.13.0+cpu; the
same numbers up to float rounding in BLAS, so a rebuild elsewhere may change
the sha256. A rebuild on Dec 3 2026 (commit e00ef70) got 24,288 pairs where the
shipped build had 24,521 (the registries serve slightly different files now)
and a table of another sha256 (af8aa996…) that scores the same (set 4 dev
hybrid NDCG@10 0.568 by chunk, 0.854 by file; the shipped table 0.569 / 0.855).
"""

from __future__ import annotations

import argparse
import hashlib
import sys
import time
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))

from corpora import CACHE_DIR  # noqa: E402

WORK_DIR = CACHE_DIR / "static-distill"
COUNTS = WORK_DIR / "counts.npy"
TOKEN_VECTORS = WORK_DIR / "token-vectors.npy"
TEACHER_DIR = WORK_DIR / "teacher"
SIF_COEFFICIENT = 1e-3
DIMS = 256
CONTRASTIVE_EPOCHS = 3
CONTRASTIVE_BATCH = 128
CONTRASTIVE_LR = 3e-3
CONTRASTIVE_SCALE = 20.0
# Files larger than this are generated or vendored data more than code.
MAX_FILE_BYTES = 400_000


def token_counts(tokenizer, log) -> np.ndarray:
    """How often each vocabulary token occurs in the training corpora's files."""
    if COUNTS.is_file():
        return np.load(COUNTS)
    from embed_train import training_trees

    counts = np.zeros(tokenizer.get_vocab_size(), dtype=np.int64)
    for corpus, tree in training_trees(log, "static-distill"):
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(tree.rglob("*"))
                 if p.is_file() and ".git" not in p.parts and p.stat().st_size <= MAX_FILE_BYTES]
        for encoding in tokenizer.encode_batch(texts, add_special_tokens=False):
            counts += np.bincount(encoding.ids, minlength=len(counts))
        log(f"static-distill: counted {corpus.id}: {len(texts)} files, {counts.sum()} tokens so far")
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    np.save(COUNTS, counts)
    return counts


def teacher_vectors(pairs: list[dict], log) -> dict[str, tuple[np.ndarray, np.ndarray]]:
    """The teacher's (the shipped code model's) vectors of the pairs' queries
    and passages, as the product embeds them, by corpus: {corpus: (queries
    [n, 384], passages [n, 384])} in the order of ``pairs``. Cached per corpus
    in ``TEACHER_DIR`` (resumable; ~70 texts/s on two loaded cores)."""
    from ctxls.index import embeddings

    by_corpus: dict[str, list[dict]] = {}
    for pair in pairs:
        by_corpus.setdefault(pair["corpus"], []).append(pair)
    TEACHER_DIR.mkdir(parents=True, exist_ok=True)
    embedder = None
    out = {}
    for corpus, group in by_corpus.items():
        cached = TEACHER_DIR / f"{corpus}-{len(group)}.npz"
        if not cached.is_file():
            embedder = embedder or embeddings.load_embedder(embeddings.CODE_MODEL_NAME)
            t0 = time.perf_counter()
            vectors = []
            for texts in ([p["query"] for p in group], [p["passage"] for p in group]):
                # by length, so a batch pads little; back in order after
                order = sorted(range(len(texts)), key=lambda i: len(texts[i]))
                embedded = embedder.embed([texts[i] for i in order])
                vectors.append(embedded[np.argsort(order)])
            np.savez(cached, queries=vectors[0], passages=vectors[1])
            log(f"static-distill: teacher embedded {corpus}: {len(group)} pairs "
                f"in {time.perf_counter() - t0:.0f}s")
        data = np.load(cached)
        out[corpus] = (data["queries"], data["passages"])
    return out


def token_vectors(session, vocab_size: int, cls_id: int, sep_id: int, log) -> np.ndarray:
    """[vocab, hidden]: each token alone through the model, mean-pooled (cached)."""
    if TOKEN_VECTORS.is_file():
        return np.load(TOKEN_VECTORS)
    out = []
    batch = 512
    for start in range(0, vocab_size, batch):
        ids = np.arange(start, min(start + batch, vocab_size), dtype=np.int64)
        input_ids = np.stack([np.full_like(ids, cls_id), ids, np.full_like(ids, sep_id)], axis=1)
        feeds = {"input_ids": input_ids, "attention_mask": np.ones_like(input_ids),
                 "token_type_ids": np.zeros_like(input_ids)}
        hidden = session.run(["last_hidden_state"], feeds)[0]
        out.append(hidden.mean(axis=1))
        if start % (batch * 10) == 0:
            log(f"static-distill: {start + len(ids)}/{vocab_size} tokens through the model")
    vectors = np.concatenate(out).astype(np.float32)
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    np.save(TOKEN_VECTORS, vectors)
    return vectors


def contrastive(table: np.ndarray, tokenizer, kd: float, max_tokens: int, log) -> np.ndarray:
    """A contrastive step on embed_train.py's (doc sentence, chunk) pairs: the
    runtime function itself (mean of token rows, normalised) trained with
    in-batch negatives (batches of one corpus, as embed_train does), sparse
    Adam, so only the rows a batch uses move; with ``kd`` > 0 the teacher's
    in-batch scores as soft targets too (weight ``kd``); texts cut at
    ``max_tokens`` as the runtime cuts them. Needs torch (training only)."""
    import json

    import torch

    from embed_train import PAIRS, _batches, build_pairs

    if not PAIRS.is_file():
        build_pairs(log)
    pairs = [json.loads(line) for line in PAIRS.read_text(encoding="utf-8").splitlines() if line]
    teacher: dict[tuple[str, str], tuple[np.ndarray, np.ndarray]] = {}
    if kd:
        for corpus, (queries, passages) in teacher_vectors(pairs, log).items():
            group = [p for p in pairs if p["corpus"] == corpus]
            for pair, q, v in zip(group, queries, passages):
                teacher[pair["query"], pair["passage"]] = (q, v)
    torch.manual_seed(0)
    torch.set_num_threads(2)
    bag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table, dtype=torch.float32), freeze=False,
                                                mode="mean", sparse=True)
    optimizer = torch.optim.SparseAdam(bag.parameters(), lr=CONTRASTIVE_LR)

    # Every text tokenized once, up front (the epochs reuse the ids).
    every_text = sorted({p["query"] for p in pairs} | {p["passage"] for p in pairs})
    unknown = [tokenizer.token_to_id("[UNK]")]
    encodings = tokenizer.encode_batch(every_text, add_special_tokens=False)
    token_ids = {text: e.ids[:max_tokens] or unknown for text, e in zip(every_text, encodings)}

    def encode(texts: list[str]) -> torch.Tensor:
        ids = [token_ids[text] for text in texts]
        offsets = torch.tensor([0] + [len(i) for i in ids[:-1]]).cumsum(0)
        vectors = bag(torch.tensor([t for i in ids for t in i]), offsets)
        return torch.nn.functional.normalize(vectors, dim=1)

    started = time.perf_counter()
    for epoch in range(CONTRASTIVE_EPOCHS):
        batches = _batches(pairs, CONTRASTIVE_BATCH, seed=epoch)
        total = 0.0
        for n, batch in enumerate(batches, 1):
            queries = encode([p["query"] for p in batch])
            passages = encode([p["passage"] for p in batch])
            logits = queries @ passages.T * CONTRASTIVE_SCALE
            loss = torch.nn.functional.cross_entropy(logits, torch.arange(len(batch)))
            if kd:
                q, v = zip(*(teacher[p["query"], p["passage"]] for p in batch))
                target = torch.tensor(np.stack(q) @ np.stack(v).T) * CONTRASTIVE_SCALE
                loss = loss + kd * torch.nn.functional.kl_div(
                    torch.log_softmax(logits, dim=1), torch.log_softmax(target, dim=1),
                    log_target=True, reduction="batchmean")
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()
            total += loss.item()
            if n % 50 == 0 or n == len(batches):
                log(f"static-distill: epoch {epoch + 1} batch {n}/{len(batches)} loss {total / n:.3f} "
                    f"({time.perf_counter() - started:.0f}s)")
    return bag.weight.detach().numpy()


def distill(sif: float, dims: int, kd: float, max_tokens: int, log) -> np.ndarray:
    import onnxruntime as ort
    from tokenizers import Tokenizer

    from ctxls.index import embeddings

    files = embeddings.builtin_model_files(embeddings.CODE_MODEL_NAME)
    embeddings.check_file(files.model, files.model_sha256)
    embeddings.check_file(files.tokenizer, files.tokenizer_sha256)
    tokenizer = Tokenizer.from_file(str(files.tokenizer))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    counts = token_counts(tokenizer, log)
    session = ort.InferenceSession(str(files.model), providers=["CPUExecutionProvider"])
    vocab_size = tokenizer.get_vocab_size()
    vectors = token_vectors(session, vocab_size, tokenizer.token_to_id("[CLS]"),
                            tokenizer.token_to_id("[SEP]"), log)
    centred = vectors - vectors.mean(axis=0)
    _, singular, components = np.linalg.svd(centred, full_matrices=False)
    kept = float((singular[:dims] ** 2).sum() / (singular ** 2).sum())
    log(f"static-distill: PCA {vectors.shape[1]} -> {dims} dims keeps {kept:.1%} of the variance")
    reduced = centred @ components[:dims].T
    share = np.maximum(counts, 1) / counts.sum()
    weights = sif / (sif + share)
    weighted = (reduced * weights[:, None]).astype(np.float32)
    return contrastive(weighted, tokenizer, kd, max_tokens, log).astype(np.float16)


def main(argv: list[str] | None = None) -> int:
    from ctxls.index import embeddings

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sif", type=float, default=SIF_COEFFICIENT)
    parser.add_argument("--dims", type=int, default=DIMS)
    parser.add_argument("--kd", type=float, default=0.0, help="weight of the teacher's soft targets")
    parser.add_argument("--max-tokens", type=int, default=embeddings.STATIC_MAX_TOKENS,
                        help="cut texts here in training (the runtime's cut: embeddings.STATIC_MAX_TOKENS)")
    parser.add_argument("--out", type=Path, default=embeddings.STATIC_MODEL_FILE)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    table = distill(args.sif, args.dims, args.kd, args.max_tokens,
                    lambda m: print(m, file=sys.stderr, flush=True))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.save(args.out, table)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} {table.shape} in {time.perf_counter() - t0:.0f}s, sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
