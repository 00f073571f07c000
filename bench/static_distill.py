"""Distil the static code embedding model (issue 35) from the shipped code model.

    .venv/bin/python bench/static_distill.py [--sif A] [--dims N] [--out FILE]

model2vec's method, written here with onnxruntime and numpy (model2vec's own
``distill`` needs torch and transformers):

1. every token of the vocabulary goes through ``ctxls-code-minilm-int8`` (the
   model that ships in ``index/models``) as ``[CLS] token [SEP]``, mean-pooled
   over the three positions the way the model pools a sentence;
2. PCA (centred, by SVD) down to ``--dims`` dimensions;
3. each token's vector is scaled by a SIF weight ``a / (a + p)``, ``p`` the
   token's share of all tokens in the training corpora's code (the corpora of
   ``embed_train.py``: no project of a dev, test or held-out set), so that
   ``(``, ``self`` or ``return`` weigh little in a mean and a rare identifier
   piece a lot. A token never seen there gets the weight of one seen once.

At run time (``index/embeddings.StaticEmbedder``) a text is tokenized with the
same tokenizer, its token vectors averaged and the mean normalised: no model.

Writes ``index/models/code-static-256.npy`` (float16 [vocab, dims]) and prints
its sha256, which ``index/embeddings.STATIC_MODEL_SHA256`` must then state.
The token counts are cached in ``bench/.cache/static-distill/counts.npy``.
Reproducible from HEAD with the pinned packages of pyproject.toml
(onnxruntime, tokenizers, numpy): the same numbers up to float rounding in
BLAS, so a rebuild on another machine may change the sha256.
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
SIF_COEFFICIENT = 1e-3
DIMS = 256
# Files larger than this are generated or vendored data more than code.
MAX_FILE_BYTES = 400_000


def token_counts(tokenizer, log) -> np.ndarray:
    """How often each vocabulary token occurs in the training corpora's files."""
    if COUNTS.is_file():
        return np.load(COUNTS)
    from codesearch_corpora import corpus_tree
    from embed_train import _corpora

    counts = np.zeros(tokenizer.get_vocab_size(), dtype=np.int64)
    for corpus in _corpora():
        try:
            tree = corpus_tree(corpus)
        except RuntimeError as exc:  # a registry that no longer serves the pin
            log(f"static-distill: skipped {corpus.id}: {str(exc)[-200:]}")
            continue
        texts = [p.read_text(encoding="utf-8", errors="replace") for p in sorted(tree.rglob("*"))
                 if p.is_file() and ".git" not in p.parts and p.stat().st_size <= MAX_FILE_BYTES]
        for encoding in tokenizer.encode_batch(texts, add_special_tokens=False):
            counts += np.bincount(encoding.ids, minlength=len(counts))
        log(f"static-distill: counted {corpus.id}: {len(texts)} files, {counts.sum()} tokens so far")
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    np.save(COUNTS, counts)
    return counts


def token_vectors(session, vocab_size: int, cls_id: int, sep_id: int, log) -> np.ndarray:
    """[vocab, hidden]: each token alone through the model, mean-pooled."""
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
    return np.concatenate(out).astype(np.float32)


def distill(sif: float, dims: int, log) -> np.ndarray:
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
    return (reduced * weights[:, None]).astype(np.float16)


def main(argv: list[str] | None = None) -> int:
    from ctxls.index import embeddings

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--sif", type=float, default=SIF_COEFFICIENT)
    parser.add_argument("--dims", type=int, default=DIMS)
    parser.add_argument("--out", type=Path, default=embeddings.STATIC_MODEL_FILE)
    args = parser.parse_args(argv)
    t0 = time.perf_counter()
    table = distill(args.sif, args.dims, lambda m: print(m, file=sys.stderr, flush=True))
    args.out.parent.mkdir(parents=True, exist_ok=True)
    np.save(args.out, table)
    digest = hashlib.sha256(args.out.read_bytes()).hexdigest()
    print(f"wrote {args.out} {table.shape} in {time.perf_counter() - t0:.0f}s, sha256 {digest}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
