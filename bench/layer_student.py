"""A transformer of fewer layers distilled from the shipped code model (issue 35):
measured as a faster dense tier, not shipped.

    .venv/bin/python bench/layer_student.py texts [--per-corpus N] [--queries N]
    PYTHON_WITH_TORCH bench/layer_student.py train --layers 0,5 --out DIR [--epochs E]
        [--lr LR] [--init DIR]
    .venv/bin/python bench/layer_student.py eval NAME DIR/model.onnx [codesearch.py eval args]
    .venv/bin/python bench/layer_student.py speed DIR/model.onnx [--corpus django] [--texts N]

PYTHON_WITH_TORCH: a Python with ``torch==2.13.0 transformers safetensors onnx
onnxruntime tokenizers`` (training only; never a ctxls dependency).

* ``texts``: every chunk of ``embed_train.py``'s training corpora (no dev, test
  or reserved project; bench/projects.md, role train) as the product's chunker
  cuts it and ``embed_text`` writes it, at most ``--per-corpus`` a corpus drawn
  at random, plus ``--queries`` doc sentences of its pairs file (``embed_train.py
  pairs`` first), into ``WORK_DIR/texts.jsonl``; then the teacher's vectors
  (``ctxls-code-minilm-int8`` through the product's embedder, one text a run)
  into ``WORK_DIR/teacher.npy``.
* ``train``: the shipped int8 model dequantized exactly into a float BERT
  (each weight its int8 value times its per-channel scale; pooled vectors
  equal the shipped model's), its ``--layers`` kept, then trained to give
  each text the teacher's vector: ``1 - cosine`` plus the squared difference
  of the batch's cosine matrices (the geometry a ranking reads). Exported as
  ``embed_train.py export`` does (per-channel int8 weights).
* ``eval``: set 4 (bench/codesearch.py) with the student served as a
  built-in model named NAME (its own stores and vector-cache key).
* ``speed``: texts/s of the shipped model and the student, alternating
  three times, over the same sample of a corpus's chunk texts (django's by
  default: reserved, speed only) through the product's embedder (one run
  per usable core, background steps).

Findings: docs/decisions.md, "A transformer of fewer layers, distilled".
"""

from __future__ import annotations

import argparse
import json
import math
import random
import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from codesearch_corpora import CACHE_DIR  # noqa: E402

WORK_DIR = CACHE_DIR / "layer-student"
TOKENIZER = Path(__file__).resolve().parents[1] / "index" / "models" / "minilm-tokenizer.json"
SHIPPED = Path(__file__).resolve().parents[1] / "index" / "models" / "code-minilm-int8.onnx"
MAX_TOKENS = 128  # embeddings.MAX_TOKENS
# all-MiniLM-L6-v2's shape, which the shipped model keeps.
BERT_SHAPE = dict(vocab_size=30522, hidden_size=384, num_hidden_layers=6, num_attention_heads=12,
                  intermediate_size=1536, max_position_embeddings=512, type_vocab_size=2)


def chunk_texts(tree: Path) -> list[str]:
    """Every chunk of ``tree``'s files as the product's chunker cuts it and
    ``embed_text`` writes it (files the index would read: a language, 400 KB
    at most, UTF-8)."""
    from ctxls.index.chunker import chunk_file
    from ctxls.index.embed_text import embedding_text
    from ctxls.index.languages import language_for_path

    found = []
    for file in sorted(tree.rglob("*")):
        rel = str(file.relative_to(tree))
        if not file.is_file() or file.stat().st_size > 400_000 or language_for_path(rel) is None:
            continue
        try:
            text = file.read_text(encoding="utf-8")
        except (UnicodeDecodeError, OSError):
            continue
        found += [embedding_text(rel, chunk.symbol, chunk.text) for chunk in chunk_file(rel, text).chunks]
    return found


def texts(per_corpus: int, queries: int, log) -> None:
    import numpy as np

    import embed_train
    from ctxls.index import embeddings

    rng = random.Random(0)
    rows = []
    for corpus, tree in embed_train.training_trees(log, "layer_student"):
        found = chunk_texts(Path(tree))
        rng.shuffle(found)
        rows += [{"corpus": corpus.name, "kind": "chunk", "text": t} for t in found[:per_corpus]]
        log(f"layer_student: {corpus.name}: {len(found)} chunks")
    pairs = [json.loads(line) for line in embed_train.PAIRS.read_text().splitlines() if line]
    rng.shuffle(pairs)
    seen: set[str] = set()
    for pair in pairs:
        if len(seen) < queries and pair["query"] not in seen:
            seen.add(pair["query"])
            rows.append({"corpus": pair["corpus"], "kind": "query", "text": pair["query"]})
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    (WORK_DIR / "texts.jsonl").write_text("".join(json.dumps(r) + "\n" for r in rows), encoding="utf-8")
    teacher = embeddings.load_embedder(embeddings.CODE_MODEL_NAME)
    started = time.perf_counter()
    vectors = np.concatenate([teacher.embed([r["text"] for r in rows[i:i + 256]])
                              for i in range(0, len(rows), 256)])
    np.save(WORK_DIR / "teacher.npy", vectors.astype(np.float32))
    log(f"layer_student: {len(rows)} texts, the teacher's vectors in {time.perf_counter() - started:.0f}s")


def dequantized_teacher():
    """The shipped int8 model as a float ``BertModel``: each MatMulInteger's
    weight found by the bias its product is added to."""
    import numpy as np
    import onnx
    import torch
    from onnx import numpy_helper
    from transformers import BertConfig, BertModel

    graph = onnx.load(str(SHIPPED)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    producers = {out: node for node in graph.node for out in node.output}
    consumers: dict[str, list] = {}
    for node in graph.node:
        for name in node.input:
            consumers.setdefault(name, []).append(node)

    def dequantized(quantized, scale, zero_point):
        return (quantized.astype(np.float32) - zero_point.astype(np.float32)) * scale

    state = {name.removeprefix("inner."): value for name, value in inits.items()
             if name.startswith("inner.") and not name.endswith(("_scale", "_zero_point", "_quantized"))}
    for node in graph.node:
        if node.op_type == "DequantizeLinear":  # an embedding table, gathered while int8
            table = producers[node.input[0]].input[0]
            name = node.input[1].removesuffix("_scale")
            state[name.removeprefix("inner.")] = dequantized(inits[table], inits[node.input[1]], inits[node.input[2]])
        elif node.op_type == "MatMulInteger":
            base = node.input[1].removesuffix("_quantized")
            weight = dequantized(inits[node.input[1]], inits[base + "_scale"], inits[base + "_zero_point"])
            frontier, bias = [node.output[0]], None
            while bias is None and frontier:
                later = [c for out in frontier for c in consumers.get(out, [])]
                bias = next((x for c in later if c.op_type == "Add" for x in c.input
                             if x.endswith(".bias") and x in inits), None)
                frontier = [out for c in later for out in c.output]
            state[bias.removeprefix("inner.").removesuffix(".bias") + ".weight"] = weight.T.copy()
    model = BertModel(BertConfig(**BERT_SHAPE), add_pooling_layer=False)
    missing = [k for k in model.state_dict() if k not in state]
    if missing:
        raise SystemExit(f"layer_student: the shipped graph lacks {missing[:5]}")
    model.load_state_dict({k: torch.tensor(state[k]) for k in model.state_dict()})
    return model


def train(layers: list[int], out: Path, epochs: float, lr: float, init: Path | None, log) -> None:
    import numpy as np
    import torch
    from tokenizers import Tokenizer
    from transformers import BertModel

    import embed_train

    torch.manual_seed(0)
    torch.set_num_threads(2)
    if init is not None:
        model = BertModel.from_pretrained(str(init), add_pooling_layer=False)
    else:
        model = dequantized_teacher()
        model.encoder.layer = torch.nn.ModuleList([model.encoder.layer[i] for i in layers])
        model.config.num_hidden_layers = len(layers)
    model.train()
    rows = [json.loads(line)["text"] for line in (WORK_DIR / "texts.jsonl").read_text().splitlines()]
    targets = torch.tensor(np.load(WORK_DIR / "teacher.npy"))
    tokenizer = Tokenizer.from_file(str(TOKENIZER))
    tokenizer.enable_truncation(max_length=MAX_TOKENS)
    tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
    batch, rng = 64, random.Random(0)
    steps = int(math.ceil(len(rows) / batch) * epochs)
    optimizer = torch.optim.AdamW(model.parameters(), lr=lr, weight_decay=0.01)
    warmup = max(1, steps // 20)
    schedule = torch.optim.lr_scheduler.LambdaLR(
        optimizer, lambda s: min(1.0, (s + 1) / warmup) * max(0.0, (steps - s) / steps))

    def batches():
        order = list(range(len(rows)))
        while True:
            rng.shuffle(order)
            # Blocks of 50 batches sorted by length: little padding, batches still mixed.
            for start in range(0, len(order), batch * 50):
                block = sorted(order[start:start + batch * 50], key=lambda i: len(rows[i]))
                runs = [block[i:i + batch] for i in range(0, len(block), batch)]
                rng.shuffle(runs)
                yield from runs

    def pooled(texts):
        encodings = tokenizer.encode_batch(texts)
        ids = torch.tensor([e.ids for e in encodings])
        mask = torch.tensor([e.attention_mask for e in encodings]).unsqueeze(-1).float()
        hidden = model(input_ids=ids, attention_mask=mask[..., 0].long(),
                       token_type_ids=torch.zeros_like(ids)).last_hidden_state
        return torch.nn.functional.normalize((hidden * mask).sum(1) / mask.sum(1).clamp(min=1e-9), dim=-1)

    started, running = time.perf_counter(), 0.0
    for step, members in zip(range(steps), batches()):
        student, teacher = pooled([rows[i] for i in members]), targets[members]
        cosine = (student * teacher).sum(1).mean()
        loss = 1 - cosine + ((student @ student.T - teacher @ teacher.T) ** 2).mean()
        loss.backward()
        torch.nn.utils.clip_grad_norm_(model.parameters(), 1.0)
        optimizer.step()
        schedule.step()
        optimizer.zero_grad()
        running = loss.item() if step == 0 else 0.98 * running + 0.02 * loss.item()
        if step % 100 == 0 or step == steps - 1:
            log(f"layer_student: step {step}/{steps} loss {running:.4f} cosine {cosine.item():.4f} "
                f"{time.perf_counter() - started:.0f}s")
    out.mkdir(parents=True, exist_ok=True)
    model.save_pretrained(str(out))
    embed_train.export_int8(model, out)


def evaluate(name: str, model: Path, codesearch_args: list[str]) -> int:
    """codesearch.py's ``build`` then ``eval`` with the student served as the
    code model under ``name`` (vectors are stamped with it)."""
    import codesearch
    from ctxls.index import embeddings

    if embeddings.is_builtin_model(name):
        raise SystemExit(f"{name} is a built-in model's name; give the student its own")
    # The engine resolves the code model through these module globals at run
    # time (as bench/static_candidate.py serves a static table).
    embeddings.CODE_MODEL_NAME, embeddings.CODE_MODEL_FILE, embeddings.CODE_MODEL_SHA256 = name, model, None
    codesearch.main(["build", "--embed-model", name])
    return codesearch.main(["eval", "--embed-model", name, *codesearch_args])


def speed(model: Path, corpus: str, count: int, log) -> None:
    from dataset import build_dataset

    from ctxls.index import embeddings

    found = chunk_texts(Path(build_dataset(corpus).tree))
    random.Random(7).shuffle(found)
    texts = found[:count]
    shipped = embeddings.load_embedder(embeddings.CODE_MODEL_NAME)
    student = embeddings.OnnxEmbedder(embeddings.ModelFiles(
        model=model, tokenizer=embeddings.TOKENIZER_FILE, model_sha256=None,
        tokenizer_sha256=embeddings.TOKENIZER_SHA256, name="student"))
    for _ in range(3):
        for name, embedder in (("shipped", shipped), ("student", student)):
            started = time.perf_counter()
            for i in range(0, len(texts), embedder.batch_size):
                embedder.embed(texts[i:i + embedder.batch_size])
            seconds = time.perf_counter() - started
            log(f"layer_student: {name} {len(texts) / seconds:.1f} texts/s over {len(texts)} of "
                f"{corpus}'s {len(found)} chunk texts ({embedder.runs_at_once} runs at once)")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("step", choices=("texts", "train", "eval", "speed"))
    parser.add_argument("rest", nargs=argparse.REMAINDER)
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.step == "eval":
        if len(args.rest) < 2:
            parser.error("eval NAME MODEL.onnx [codesearch.py eval args]")
        return evaluate(args.rest[0], Path(args.rest[1]), args.rest[2:])
    options = argparse.ArgumentParser(prog=f"layer_student.py {args.step}")
    if args.step == "speed":
        options.add_argument("model", type=Path)
        options.add_argument("--corpus", default="django")
        options.add_argument("--texts", type=int, default=3000)
        more = options.parse_args(args.rest)
        speed(more.model, more.corpus, more.texts, log)
    elif args.step == "texts":
        options.add_argument("--per-corpus", type=int, default=1200)
        options.add_argument("--queries", type=int, default=25_000)
        more = options.parse_args(args.rest)
        texts(more.per_corpus, more.queries, log)
    else:
        options.add_argument("--layers", default="0,5", help="the teacher's layers kept (0-5)")
        options.add_argument("--out", type=Path, required=True)
        options.add_argument("--epochs", type=float, default=1.0)
        options.add_argument("--lr", type=float, default=1e-4)
        options.add_argument("--init", type=Path, help="continue from this student's folder")
        more = options.parse_args(args.rest)
        train([int(x) for x in more.layers.split(",")], more.out, more.epochs, more.lr, more.init, log)
    return 0


if __name__ == "__main__":
    sys.exit(main())
