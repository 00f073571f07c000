"""Train static tables on the teacher's vectors (issue 35; tokenlearn's recipe at scale).

    python bench/static_tokenlearn_train.py --data DIR --out DIR [--variants a,b,...]
        [--limit N] [--device cuda|cpu] [--int8] [--full NAMES] [--budget S] [--verify N]

Needs numpy, torch, onnx and tokenizers (no project import), so a copy of this
file and ``bench/static_tokenlearn.py prepare``'s folder (``--data``) train
anywhere beside the repository's ``index/models``: on one H200 the teacher
takes 24 s for 210,812 texts and six variants ~1 min (CPU: hours).
Measured and not kept: docs/decisions.md, "Tokenlearn at scale".

1. The teacher: the shipped int8 ONNX model (``index/models/code-minilm-int8.onnx``)
   rebuilt as a float BERT in torch, each weight dequantized ((q - zero point) x
   scale), each MatMul's input quantized to uint8 and back as onnxruntime's
   DynamicQuantizeLinear does (per text here; ``--verify N`` logs the cosine
   to onnxruntime on N texts: 0.998 mean). Every text goes through it as the
   product embeds a chunk: ``[CLS]`` + its first 126 tokens + ``[SEP]``,
   mean-pooled over the mask, normalised.
2. The distilled table (static_distill.py's steps 1-3 with this teacher:
   every token alone, PCA to 256 dimensions, SIF weights of ``counts.npy``).
3. The targets: the teacher's vectors, less their mean over the training
   texts (not in the ``raw`` variants), projected on the table's PCA basis, normalised.
4. Each variant trains the table as the runtime uses it (a text's vector is
   the normalised mean of its token rows; a text is the teacher's 126
   tokens), initialised from the distilled table (SIF-weighted, or without
   the weights in ``nosif`` variants):

   * ``reg``: cosine loss to the targets, sparse Adam, REG_EPOCHS epochs at
     most, keeping the epoch of the best mean cosine on 2 % of the texts held out;
   * ``reg_con``: ``reg``, then the contrastive step of ``static_distill.py``
     (the pairs, in-batch negatives of one corpus, scale 20, 3 epochs, lr 3e-3;
     passages cut at 256 tokens);
   * ``joint``: each step a regression batch and a contrastive batch, the
     losses summed;
   * ``+key=value`` parts of a name change a setting (``settings``).

Writes ``OUT/VARIANT.npy`` (float16 [vocab, 256]; ``--int8``: ``VARIANT.npz``,
rows quantized to int8 with a float scale each, for a transfer limit; not the
variants ``--full`` names) and ``OUT/summary.json`` (held-out cosines, times).
"""

from __future__ import annotations

import argparse
import json
import lzma
import math
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parent.parent
ONNX_MODEL = REPO / "index" / "models" / "code-minilm-int8.onnx"
TOKENIZER = REPO / "index" / "models" / "minilm-tokenizer.json"
DIMS = 256
SIF_COEFFICIENT = 1e-3  # static_distill.SIF_COEFFICIENT
QUERY_TOKENS = 48
CLS, SEP, PAD = 101, 102, 0
TEACHER_TOKENS = 126
REG_EPOCHS = 8
REG_BATCH = 512
REG_LR = 3e-3
CON_EPOCHS = 3
CON_BATCH = 128
CON_LR = 3e-3
CON_SCALE = 20.0
HELD_OUT = 0.02
VARIANTS = ("reg", "reg_con", "joint", "reg_nosif", "reg_con_nosif", "reg_raw")


def log(message: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {message}", flush=True)


# ---------------------------------------------------------------- the teacher

def teacher_weights(model: Path) -> tuple[dict[str, np.ndarray], float]:
    """The int8 ONNX teacher's weights, dequantized, under BERT's names, and its LayerNorm epsilon."""
    import onnx
    from onnx import numpy_helper

    graph = onnx.load(str(model)).graph
    inits = {i.name: numpy_helper.to_array(i) for i in graph.initializer}
    weights, eps = {}, None
    for name, value in inits.items():
        if name.startswith("inner.") and value.dtype == np.float32:
            weights[name[len("inner."):]] = value
    for node in graph.node:
        if node.op_type == "DequantizeLinear":
            # A Gather of the quantized table, then this: inner.embeddings.X.weight_scale
            base = node.input[1][: -len("_scale")]
            q, scale, zero = inits[base + "_quantized"], inits[node.input[1]], inits[node.input[2]]
            weights[base[len("inner."):]] = (q.astype(np.float32) - zero.astype(np.float32)) * scale
        elif node.op_type == "MatMulInteger":
            q, zero = inits[node.input[1]], inits[node.input[3]]
            scale = inits[node.input[1][: -len("_quantized")] + "_scale"]
            # /inner/encoder/layer.0/attention/self/query/MatMul_quant -> encoder.layer.0.attention.self.query.weight
            path = node.name.split("/")[2:-1]
            weights[".".join(path) + ".weight"] = (q.astype(np.float32) - zero.astype(np.float32)) * scale
        elif node.op_type == "LayerNormalization":
            eps = next(a.f for a in node.attribute if a.name == "epsilon")
    return weights, eps


def fake_quant(x, valid):
    """What onnxruntime's DynamicQuantizeLinear does to a MatMulInteger's input
    (uint8, one scale and zero point a tensor, from its min and max with 0),
    here per text (the product embeds texts in small batches; padding is 0)."""
    import torch

    x = torch.where(valid, x, torch.zeros_like(x))
    low = x.amin(dim=(1, 2), keepdim=True).clamp_max(0)
    high = x.amax(dim=(1, 2), keepdim=True).clamp_min(0)
    scale = ((high - low) / 255).clamp_min(1e-12)
    zero = torch.round(-low / scale).clamp(0, 255)
    return (torch.clamp(torch.round(x / scale) + zero, 0, 255) - zero) * scale


class Teacher:
    """BERT (MiniLM-L6: 6 layers, 12 heads, 384 dims) from the dequantized weights."""

    def __init__(self, model: Path, device):
        import torch

        weights, self.eps = teacher_weights(model)
        self.w = {k: torch.tensor(v, device=device) for k, v in weights.items()}
        self.layers = sum(1 for k in weights if k.endswith("attention.self.query.weight"))
        self.heads = 12
        self.device = device

    def _ln(self, x, prefix):
        import torch
        return torch.nn.functional.layer_norm(x, x.shape[-1:], self.w[prefix + ".weight"],
                                              self.w[prefix + ".bias"], self.eps)

    def __call__(self, ids, mask):
        import torch

        w = self.w
        n, length = ids.shape
        x = (w["embeddings.word_embeddings.weight"][ids]
             + w["embeddings.position_embeddings.weight"][torch.arange(length, device=self.device)][None]
             + w["embeddings.token_type_embeddings.weight"][0][None, None])
        x = self._ln(x, "embeddings.LayerNorm")
        bias = (1.0 - mask[:, None, None, :].float()) * torch.finfo(torch.float32).min
        d = x.shape[-1] // self.heads
        valid = mask[:, :, None].bool()
        for i in range(self.layers):
            p = f"encoder.layer.{i}."

            def lin(h, name):
                return fake_quant(h, valid) @ w[p + name + ".weight"] + w[p + name + ".bias"]

            def split(h):
                return h.view(n, length, self.heads, d).transpose(1, 2)

            q, k, v = (split(lin(x, f"attention.self.{m}")) for m in ("query", "key", "value"))
            scores = q @ k.transpose(-1, -2) / math.sqrt(d) + bias
            context = (scores.softmax(-1) @ v).transpose(1, 2).reshape(n, length, -1)
            x = self._ln(lin(context, "attention.output.dense") + x, p + "attention.output.LayerNorm")
            h = torch.nn.functional.gelu(lin(x, "intermediate.dense"))
            x = self._ln(lin(h, "output.dense") + x, p + "output.LayerNorm")
        return x

    def embed(self, id_lists: list[np.ndarray], batch: int = 512) -> np.ndarray:
        """Mean-pooled, normalised vectors of ``[CLS] ids[:126] [SEP]``, as the product pools."""
        import torch

        order = np.argsort([len(i) for i in id_lists], kind="stable")
        out = np.zeros((len(id_lists), self.w["embeddings.LayerNorm.weight"].shape[0]), dtype=np.float32)
        with torch.no_grad():
            for start in range(0, len(order), batch):
                rows = order[start:start + batch]
                length = max(min(len(id_lists[r]), TEACHER_TOKENS) for r in rows) + 2
                ids = np.zeros((len(rows), length), dtype=np.int64)
                mask = np.zeros((len(rows), length), dtype=np.int64)
                for j, r in enumerate(rows):
                    t = id_lists[r][:TEACHER_TOKENS]
                    ids[j, 0], ids[j, 1:len(t) + 1], ids[j, len(t) + 1] = CLS, t, SEP
                    mask[j, :len(t) + 2] = 1
                ids, mask = torch.tensor(ids, device=self.device), torch.tensor(mask, device=self.device)
                hidden = self(ids, mask)
                m = mask[:, :, None].float()
                pooled = (hidden * m).sum(1) / m.sum(1).clamp_min(1e-9)
                out[rows] = torch.nn.functional.normalize(pooled, dim=1).cpu().numpy()
        return out


# ------------------------------------------------------------------- the data

def load_tokenizer(path: Path):
    from tokenizers import Tokenizer

    tokenizer = Tokenizer.from_file(str(path))
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def tokenize(tokenizer, texts: list[str], cut: int) -> list[np.ndarray]:
    """Each text's first ``cut`` token ids, no special tokens ([UNK] for an empty text)."""
    unknown = tokenizer.token_to_id("[UNK]")
    return [np.array(e.ids[:cut] or [unknown], dtype=np.int64)
            for e in tokenizer.encode_batch(texts, add_special_tokens=False)]


def distilled_table(teacher: "Teacher", counts: np.ndarray, device) -> dict[str, np.ndarray]:
    """static_distill.py's steps 1-3 with this teacher: every token alone
    through it as ``[CLS] token [SEP]``, mean-pooled over the three; PCA to
    DIMS; the SIF weights of ``counts``."""
    import torch

    vocab = len(counts)
    with torch.no_grad():
        out = []
        for start in range(0, vocab, 4096):
            ids = torch.arange(start, min(start + 4096, vocab), device=device)
            seq = torch.stack([torch.full_like(ids, CLS), ids, torch.full_like(ids, SEP)], dim=1)
            out.append(teacher(seq, torch.ones_like(seq)).mean(1))
        vectors = torch.cat(out).double()
        mean = vectors.mean(0)
        _, singular, v = torch.linalg.svd(vectors - mean, full_matrices=False)
        components = v[:DIMS]
        kept = float((singular[:DIMS] ** 2).sum() / (singular ** 2).sum())
        reduced = ((vectors - mean) @ components.T).float().cpu().numpy()
    log(f"distilled: {vocab} tokens, PCA to {DIMS} keeps {kept:.1%} of the variance")
    share = np.maximum(counts, 1) / counts.sum()
    return {"plain": reduced, "sif": (SIF_COEFFICIENT / (SIF_COEFFICIENT + share)).astype(np.float32),
            "components": components.float().cpu().numpy()}


class Bag:
    """The runtime's function: normalised mean of a text's token rows."""

    def __init__(self, table: np.ndarray, device):
        import torch

        self.bag = torch.nn.EmbeddingBag.from_pretrained(torch.tensor(table, dtype=torch.float32),
                                                         freeze=False, mode="mean", sparse=True).to(device)
        self.optimizer = None
        self.device = device

    def __call__(self, id_lists: list[np.ndarray], window: int):
        import torch

        cut = [i[:window] for i in id_lists]
        offsets = torch.tensor(np.concatenate([[0], np.cumsum([len(i) for i in cut[:-1]], dtype=np.int64)]),
                               dtype=torch.int64, device=self.device)
        flat = torch.tensor(np.concatenate(cut).astype(np.int64), device=self.device)
        return torch.nn.functional.normalize(self.bag(flat, offsets), dim=1)


def con_batches(corpus: np.ndarray, passage: np.ndarray, seed: int) -> list[np.ndarray]:
    """Batches of CON_BATCH pairs of one corpus, no passage twice in a batch, in random order."""
    rng = np.random.default_rng(seed)
    batches = []
    for c in np.unique(corpus):
        group = list(rng.permutation(np.flatnonzero(corpus == c)))
        while len(group) >= CON_BATCH:
            batch, rest, seen = [], [], set()
            for i in group:
                if len(batch) < CON_BATCH and passage[i] not in seen:
                    batch.append(i)
                    seen.add(passage[i])
                else:
                    rest.append(i)
            if len(batch) < CON_BATCH:
                break
            batches.append(np.array(batch))
            group = rest
    return [batches[i] for i in rng.permutation(len(batches))]


def settings(name: str) -> dict:
    """A variant's settings: the defaults, overridden by ``+key=value`` parts of
    its name (``reg_con+con_epochs=1+con_lr=0.001``; keys: reg_epochs, reg_lr,
    con_epochs, con_lr, joint_con: the contrastive loss's weight in ``joint``,
    con_reg: the regression loss's weight beside the contrastive step's, a
    regression batch each step)."""
    out = {"reg_epochs": REG_EPOCHS, "reg_lr": REG_LR, "con_epochs": CON_EPOCHS, "con_lr": CON_LR,
           "joint_con": 1.0, "con_reg": 0.0}
    for part in name.split("+")[1:]:
        key, value = part.split("=")
        out[key] = type(out[key])(float(value))
    return out


def train_variant(name: str, init: dict, texts: list[np.ndarray], targets: dict, train_idx, held_idx,
                  pairs, device) -> tuple[np.ndarray, dict]:
    import torch

    torch.manual_seed(0)
    table = init["plain"] * (init["sif"][:, None] if "nosif" not in name else 1.0)
    model = Bag(table.astype(np.float32), device)
    conf = settings(name)
    optimizer = torch.optim.SparseAdam(model.bag.parameters(), lr=conf["reg_lr"])
    window = TEACHER_TOKENS if "win126" in name else 256
    target = targets["raw" if "raw" in name else "centre"]
    q_ids, v_ids, corpus, passage = pairs
    info = {"variant": name, "window": window, "settings": conf}

    def held_cos():
        with torch.no_grad():
            cos = []
            for s in range(0, len(held_idx), 4096):
                rows = held_idx[s:s + 4096]
                out = model([texts[r] for r in rows], window)
                cos.append((out * target[rows]).sum(1))
            return float(torch.cat(cos).mean())

    def reg_loss(rows):
        out = model([texts[r] for r in rows], window)
        return 1.0 - (out * target[rows]).sum(1).mean()

    def con_loss(batch):
        q = model([q_ids[i] for i in batch], 48)
        v = model([v_ids[i] for i in batch], 256)
        logits = q @ v.T * CON_SCALE
        return torch.nn.functional.cross_entropy(logits, torch.arange(len(batch), device=device))

    batch_rng = np.random.default_rng(1)

    def reg_batch():
        return reg_loss(batch_rng.choice(train_idx, min(REG_BATCH, len(train_idx)), replace=False))

    def step(loss):
        optimizer.zero_grad()
        loss.backward()
        optimizer.step()

    key = ("nosif" in name, "raw" in name, conf["reg_epochs"], conf["reg_lr"])
    if not name.startswith("joint") and key in REGRESSED:  # reg_con after reg: the same regression
        best, reg_info = REGRESSED[key]
        info.update({k: v for k, v in reg_info.items() if k != "variant"}, regression_of=reg_info["variant"])
        with torch.no_grad():
            model.bag.weight.copy_(best)
        log(f"{name}: the regression of {reg_info['variant']} reused")
        return finish(name, model, info, held_cos, con_loss, reg_batch, corpus, passage, time.perf_counter())
    info["held_cos_init"] = held_cos()
    log(f"{name}: held-out cosine at init {info['held_cos_init']:.4f}")
    rng = np.random.default_rng(0)
    best, best_cos, history = None, -1.0, []
    con_stream = []
    t0 = time.perf_counter()
    for epoch in range(conf["reg_epochs"]):
        order = rng.permutation(train_idx)
        total = 0.0
        nb = 0
        for s in range(0, len(order), REG_BATCH):
            loss = reg_loss(order[s:s + REG_BATCH])
            if name.startswith("joint"):
                if not con_stream:
                    con_stream = con_batches(corpus, passage, seed=len(history) * 1000 + s)
                loss = loss + conf["joint_con"] * con_loss(con_stream.pop())
            step(loss)
            total += float(loss.detach())
            nb += 1
        cos = held_cos()
        history.append(round(cos, 5))
        log(f"{name}: epoch {epoch + 1} loss {total / nb:.4f} held-out cosine {cos:.4f} "
            f"({time.perf_counter() - t0:.0f}s)")
        if cos > best_cos:
            best_cos, best = cos, model.bag.weight.detach().clone()
        elif epoch >= 2 and cos < best_cos - 0.002:
            break
    info["held_cos"] = history
    with torch.no_grad():
        model.bag.weight.copy_(best)
    info["held_cos_best"] = best_cos
    if not name.startswith("joint"):
        REGRESSED[key] = (best, {k: v for k, v in info.items() if k.startswith("held")} | {"variant": name})
    return finish(name, model, info, held_cos, con_loss, reg_batch, corpus, passage, t0)


REGRESSED: dict = {}  # (nosif, raw) -> the regression's best table, its held-out cosines


def finish(name, model, info, held_cos, con_loss, reg_batch, corpus, passage, t0):
    """The contrastive step after the regression (``reg_con`` variants)."""
    import torch

    if "reg_con" in name:
        conf = settings(name)
        optimizer = torch.optim.SparseAdam(model.bag.parameters(), lr=conf["con_lr"])

        def con_step(loss):
            optimizer.zero_grad()
            loss.backward()
            optimizer.step()

        for epoch in range(conf["con_epochs"]):
            batches = con_batches(corpus, passage, seed=epoch)
            total = 0.0
            for batch in batches:
                loss = con_loss(batch)
                if conf["con_reg"]:
                    loss = loss + conf["con_reg"] * reg_batch()
                con_step(loss)
                total += float(loss.detach())
            log(f"{name}: contrastive epoch {epoch + 1} loss {total / len(batches):.3f} "
                f"held-out cosine {held_cos():.4f}")
        info["held_cos_after_con"] = held_cos()
    info["seconds"] = round(time.perf_counter() - t0, 1)
    return model.bag.weight.detach().cpu().numpy(), info


def main(argv: list[str] | None = None) -> int:
    import torch

    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--data", type=Path, required=True)
    parser.add_argument("--out", type=Path)
    parser.add_argument("--variants", default=",".join(VARIANTS))
    parser.add_argument("--limit", type=int, help="the first N texts only (a smoke test)")
    parser.add_argument("--device", default="cuda" if torch.cuda.is_available() else "cpu")
    parser.add_argument("--int8", action="store_true", help="write tables as int8 rows + scales (.npz)")
    parser.add_argument("--full", default="", help="variants written as float16 .npy even with --int8")
    parser.add_argument("--budget", type=float, default=1e9,
                        help="seconds: start no variant after this (the teacher's time counted)")
    parser.add_argument("--verify", type=int, help="compare the torch teacher with onnxruntime on N texts")
    parser.add_argument("--model", type=Path, default=ONNX_MODEL)
    parser.add_argument("--tokenizer", type=Path, default=TOKENIZER)
    args = parser.parse_args(argv)
    device = torch.device(args.device)
    torch.backends.cuda.matmul.allow_tf32 = False

    tokenizer = load_tokenizer(args.tokenizer)
    with lzma.open(args.data / "texts.json.xz", "rt", encoding="utf-8") as f:
        rows = json.load(f)["texts"]
    if args.limit:
        rows = rows[:args.limit]
    texts = tokenize(tokenizer, [r[2] for r in rows], TEACHER_TOKENS)
    log(f"{len(texts)} texts ({sum(1 for r in rows if r[1])} queries), {sum(len(t) for t in texts)} tokens, "
        f"device {device}")
    teacher = Teacher(args.model, device)

    if args.verify:
        import onnxruntime as ort
        session = ort.InferenceSession(str(args.model), providers=["CPUExecutionProvider"])
        picked = [texts[i] for i in np.random.default_rng(1).choice(len(texts), args.verify, replace=False)]
        ours = teacher.embed(picked, batch=64)
        cos = []
        for i, t in zip(range(len(picked)), picked):
            ids = np.array([[CLS] + [int(x) for x in t[:TEACHER_TOKENS]] + [SEP]], dtype=np.int64)
            hidden = session.run(["last_hidden_state"], {"input_ids": ids, "attention_mask": np.ones_like(ids),
                                                         "token_type_ids": np.zeros_like(ids)})[0][0]
            v = hidden.mean(0)
            cos.append(float(ours[i] @ (v / np.linalg.norm(v))))
        log(f"torch teacher vs onnxruntime on {len(cos)} texts: mean cosine {np.mean(cos):.5f}, "
            f"min {np.min(cos):.5f}")
        if args.out is None:
            return 0

    t0 = time.perf_counter()
    vectors = teacher.embed(texts, batch=1024 if device.type == "cuda" else 64)
    log(f"teacher: {len(texts)} texts in {time.perf_counter() - t0:.1f}s")
    args.out.mkdir(parents=True, exist_ok=True)

    init = distilled_table(teacher, np.load(args.data / "counts.npy"), device)
    components = torch.tensor(init["components"], device=device)  # [256, 384]
    t = torch.tensor(vectors, device=device)
    rng = np.random.default_rng(0)
    order = rng.permutation(len(texts))
    held = int(len(texts) * HELD_OUT)
    held_idx, train_idx = np.sort(order[:held]), np.sort(order[held:])
    centre = t[train_idx].mean(0)
    targets = {"centre": torch.nn.functional.normalize((t - centre) @ components.T, dim=1),
               "raw": torch.nn.functional.normalize(t @ components.T, dim=1)}
    with lzma.open(args.data / "pairs.json.xz", "rt", encoding="utf-8") as f:
        p = json.load(f)
    pairs = (tokenize(tokenizer, [r[2] for r in p], QUERY_TOKENS), tokenize(tokenizer, [r[3] for r in p], 256),
             np.array([r[0] for r in p]), np.array([r[1] for r in p]))
    summary = {"texts": len(texts), "held_out": held, "teacher_seconds": round(time.perf_counter() - t0, 1),
               "variants": []}
    started = time.perf_counter()
    for name in args.variants.split(","):
        if time.perf_counter() - t0 > args.budget:
            log(f"{name}: skipped, over the budget of {args.budget:.0f}s")
            continue
        try:
            table, info = train_variant(name, init, texts, targets, train_idx, held_idx, pairs, device)
        except Exception:  # one variant's failure costs the others nothing
            import traceback
            log(f"{name}: failed\n{traceback.format_exc()}")
            continue
        stem = name.replace("+", "__").replace("=", "-")  # a file name of letters, digits, _ - .
        if args.int8 and name not in args.full.split(","):
            scale = np.abs(table).max(axis=1, keepdims=True) / 127.0
            q = np.round(table / np.maximum(scale, 1e-12)).astype(np.int8)
            np.savez(args.out / f"{stem}.npz", q=q, scale=scale.astype(np.float32))
        else:
            np.save(args.out / f"{stem}.npy", table.astype(np.float16))
        summary["variants"].append(info)
        (args.out / "summary.json").write_text(json.dumps(summary, indent=1) + "\n")
    log(f"done in {time.perf_counter() - started:.0f}s of training")
    return 0


if __name__ == "__main__":
    sys.exit(main())
