"""Multi-language code-search evaluation (issue 11): NDCG@10, MRR@10, Recall@10.

    .venv/bin/python bench/codesearch.py build  [--lang L ...] [--corpus C ...] [--no-embed]
    .venv/bin/python bench/codesearch.py lexical [--split dev|test|all] [--lang L ...]
    .venv/bin/python bench/codesearch.py eval   [--split ...] [--lang ...] [--modes lexical,dense,hybrid]
                                                [--ranking field=value,...] [--json FILE]
                                                [--max-tokens N] [--embed-model NAME]

Stable entry points (the ranking work tunes on them): this module's name, the
CLI verbs ``build`` / ``lexical`` / ``eval``, and
:func:`evaluate(split, languages, modes, ranking, corpora, log, max_tokens) <evaluate>`
returning an :class:`EvalReport` (``report.markdown()``, ``report.rows``,
``report.summary(split, language, kind, mode)``).

* Corpora: bench/codesearch_corpora.py (7 languages, 2 projects each, split
  dev/test by project). Query set: bench/codesearch_set.py (symbol,
  description, concept queries; doc comments stripped from the indexed copy).
* Ranking is scored through ``Engine.recall(query, kinds=["code"], n=10,
  mode=...)``, the library's public recall entry point: whatever recall does
  (priors, boosts, saturation) is what is measured. Modes: ``lexical`` (BM25),
  ``dense`` (recall mode ``semantic``: cosine only), ``hybrid`` (the default).
* A different :class:`RankingConfig` is evaluated on the same stores
  (``--ranking dense_weight=0.5`` or ``evaluate(ranking=...)``): no re-index.
* Stores: ``bench/.cache/codesearch/stores/ID/index.db``, one per corpus. A
  store is re-indexed (forced) when the indexing code changed: the fingerprint
  of ``index/chunker.py``, ``chunking/``, ``languages.py``, ``discovery.py``, ``indexer.py``,
  ``embed_text.py`` and the store's INDEX_STAMP is kept beside it; otherwise
  an ordinary incremental pass runs (nothing to do).
* Vectors: ``bench/.cache/codesearch/vectors.sqlite`` keeps every vector ever
  embedded, keyed by (model stamp incl. max tokens, embedding-text hash =
  ``chunks.embed_hash``). Before ``embed_pending()`` the store's ``vectors``
  table is seeded from it, and what was embedded is added to it after, so a
  re-chunked or re-indexed corpus only embeds texts never seen before.

Scoring: a hit finds a target when it is in the target's file and its line
range contains the target's row (the definition's name line). Each target is
credited once, at the first hit that finds it. NDCG@10 uses the targets'
grades (gain 2^g - 1, log2 discount, ideal = the grades sorted); MRR@10 is
1/rank of the first hit finding any target; Recall@10 the share of targets
found. "all" rows average over queries of the rows they cover, except the
overall per-split row (language "all"), which is the mean over languages so
that each language counts the same (``macro``).

Chunk sizes: the share of code chunks of 1–2 lines in the index, among all
top-1 hits and all top-10 hits, and top-1 hits of 1–2 lines that find no target.
"""

from __future__ import annotations

import argparse
import contextlib
import hashlib
import json
import math
import os
import sqlite3
import sys
import time
from dataclasses import asdict, dataclass, field, fields, replace
from pathlib import Path

from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.ranking import RankingConfig
from ctxls.index.store import INDEX_STAMP

from codesearch_corpora import CODE_CORPORA, LANGUAGES, CodeCorpus
from codesearch_set import QUERY_KINDS, SET_VERSION, CodeQuery, CodeSet, Target, build_set
from corpora import CACHE_DIR

K = 10
MODES = ("lexical", "dense", "hybrid")
RECALL_MODE = {"lexical": "lexical", "dense": "semantic", "hybrid": "hybrid"}
SPLITS = ("dev", "test")
WORK_DIR = CACHE_DIR / "codesearch"
STORES_DIR = WORK_DIR / f"stores-{SET_VERSION}"
VECTOR_CACHE = WORK_DIR / "vectors.sqlite"
_INDEXING_CODE = ("chunker.py", "chunking/*.py", "languages.py", "discovery.py", "indexer.py", "embed_text.py",
                  "tokenize.py")


# -- scoring (pure) -----------------------------------------------------------------

def finds(hit: tuple[str, int, int], target: Target, by_file: bool = False) -> bool:
    """Does a hit (path, start_line, end_line) find the target? ``by_file``:
    any hit in the target's file does (how a file-level benchmark scores)."""
    path, start, end = hit
    return path == target.path and (by_file or start <= target.line <= end)


@dataclass(frozen=True)
class QueryScore:
    ndcg: float
    rr: float  # reciprocal rank of the first hit finding a target (0: none in the top K)
    recall: float


def score_hits(hits: list[tuple[str, int, int]], targets: tuple[Target, ...] | list[Target],
               k: int = K, by_file: bool = False) -> QueryScore:
    """NDCG@k, reciprocal rank and Recall@k of one ranked hit list; each
    target is credited once, at the first hit that finds it (``by_file``: the
    first hit in its file; targets sharing a file count as one, at their best grade)."""
    if by_file:
        best: dict[str, Target] = {}
        for t in targets:
            if t.path not in best or t.grade > best[t.path].grade:
                best[t.path] = t
        targets = list(best.values())
    found: set[int] = set()
    dcg = 0.0
    first = 0
    for rank, hit in enumerate(hits[:k], 1):
        gain = 0.0
        for i, t in enumerate(targets):
            if i not in found and finds(hit, t, by_file):
                found.add(i)
                gain = max(gain, 2.0 ** t.grade - 1)
        if gain:
            dcg += gain / math.log2(rank + 1)
            first = first or rank
    ideal = sorted((t.grade for t in targets), reverse=True)[:k]
    idcg = sum((2.0 ** g - 1) / math.log2(r + 1) for r, g in enumerate(ideal, 1))
    return QueryScore(dcg / idcg if idcg else 0.0, 1.0 / first if first else 0.0,
                      len(found) / len(targets) if targets else 0.0)


# -- stores and the vector cache -------------------------------------------------------

def _fingerprint() -> str:
    import ctxls.index as index_package

    folder = Path(index_package.__file__).parent
    digest = hashlib.sha256(INDEX_STAMP.encode())
    for pattern in _INDEXING_CODE:
        for path in sorted(folder.glob(pattern)):
            digest.update(path.read_bytes())
    return digest.hexdigest()[:16]


# Read once, at import: it must describe the code this process runs, even if
# the files change under a long run.
_FINGERPRINT = _fingerprint()


def index_fingerprint() -> str:
    """Changes whenever the indexing code (chunking, discovery, embedding text) does."""
    return _FINGERPRINT


# The embedding model of this run (None: the default); set by embedding_variant().
_embed_model: str | None = None


def _store_dir(corpus: CodeCorpus, variant: str = "") -> Path:
    return STORES_DIR / (corpus.id + (f"+{variant}" if variant else ""))


def open_engine(code_set: CodeSet, embeddings: bool, ranking: RankingConfig | None = None,
                variant: str = "", log=print) -> Engine:
    """An engine over the corpus's store, indexed and up to date with the
    indexing code (a forced pass when its fingerprint changed)."""
    folder = _store_dir(code_set.corpus, variant)
    folder.mkdir(parents=True, exist_ok=True)
    options = EngineOptions(db_path=str(folder / "index.db"), embeddings=embeddings,
                            ranking=ranking or RankingConfig(), embed_model=_embed_model)
    engine = Engine(code_set.tree, options)
    stamp_file = folder / "fingerprint"
    fingerprint = index_fingerprint()
    force = not stamp_file.is_file() or stamp_file.read_text().strip() != fingerprint
    t0 = time.perf_counter()
    stats = engine.index(force=force)
    engine.warm_postings()  # as a daemon after its first pass: BM25 from memory (index/postings.py)
    if force:
        stamp_file.write_text(fingerprint)
        log(f"codesearch: indexed {code_set.corpus.id} ({'forced' if force else 'incremental'}) "
            f"in {time.perf_counter() - t0:.1f}s: {stats}")
    return engine


def _vector_cache() -> sqlite3.Connection:
    WORK_DIR.mkdir(parents=True, exist_ok=True)
    conn = sqlite3.connect(VECTOR_CACHE, timeout=60)
    conn.execute("CREATE TABLE IF NOT EXISTS vectors (model TEXT NOT NULL, text_hash TEXT NOT NULL, "
                 "vec BLOB NOT NULL, PRIMARY KEY (model, text_hash))")
    return conn


def _model_key(engine: Engine) -> str:
    from ctxls.index import embeddings

    stamp = engine.store.meta().get("vector_model", "")
    if embeddings.is_static_model(_embed_model):
        return f"{stamp}/tokens-{embeddings.STATIC_MAX_TOKENS}"
    # A transformer's vectors depend on the texts run beside them (int8): the
    # texts per run are part of the key.
    return f"{stamp}/tokens-{embeddings.MAX_TOKENS}/batch-{embeddings.BATCH_SIZE}"


def embed_store(code_set: CodeSet, variant: str = "", log=print) -> dict:
    """Embed every chunk of the corpus's store, reusing the vector cache."""
    engine = open_engine(code_set, True, variant=variant, log=log)
    try:
        if engine.semantic is None or not engine.semantic.ensure_loaded():
            raise RuntimeError(f"embeddings unavailable: {engine.semantic and engine.semantic.failed}")
        model = _model_key(engine)
        # The product keeps vectors across an input-length change (they are of
        # one model); this cache must not: a store's vectors are of one key.
        marker = _store_dir(code_set.corpus, variant) / "vector-key"
        if not marker.is_file() or marker.read_text() != model:
            with engine.store.write() as w:
                w.execute("DELETE FROM vectors")
            marker.write_text(model)
        conn = engine.store.reader()
        missing = [r[0] for r in conn.execute(
            "SELECT DISTINCT embed_hash FROM chunks c WHERE NOT EXISTS "
            "(SELECT 1 FROM vectors v WHERE v.text_hash = c.embed_hash)")]
        cache = _vector_cache()
        seeded = 0
        for start in range(0, len(missing), 500):
            part = missing[start:start + 500]
            rows = cache.execute(
                f"SELECT text_hash, vec FROM vectors WHERE model = ? AND text_hash IN "
                f"({','.join('?' * len(part))})", [model, *part]).fetchall()
            if rows:
                with engine.store.write() as w:
                    w.executemany("INSERT INTO vectors(text_hash, vec) VALUES (?, ?) "
                                  "ON CONFLICT(text_hash) DO NOTHING", rows)
                seeded += len(rows)
    finally:
        engine.close()
    # Re-opened so the ANN file is reconciled with the seeded table.
    engine = open_engine(code_set, True, variant=variant, log=log)
    try:
        engine.embed_fast_tier()  # beside a transformer: the time below is the model's own
        t0 = time.perf_counter()
        embedded = engine.embed_pending()
        seconds = time.perf_counter() - t0
        rows = engine.store.reader().execute("SELECT text_hash, vec FROM vectors").fetchall()
        with cache:
            cache.executemany("INSERT OR IGNORE INTO vectors(model, text_hash, vec) VALUES (?, ?, ?)",
                              [(model, h, v) for h, v in rows])
        status = engine.status()
    finally:
        engine.close()
        cache.close()
    info = {"corpus": code_set.corpus.id, "chunks": status["chunks"], "vectors": status["vectors"],
            "seeded": seeded, "embedded": embedded, "embed_seconds": round(seconds, 1)}
    log(f"codesearch: vectors of {code_set.corpus.id}: {seeded} from the cache, {embedded} embedded "
        f"in {seconds:.0f}s" + (f" ({embedded / seconds:.1f}/s)" if embedded and seconds else ""))
    return info


def serve_the_window(engine: Engine) -> None:
    """Make ``engine`` answer as in the fast tier's window: the static tier
    serving, the transformer scoring its first hits again."""
    if engine.fast_semantic is None:
        raise RuntimeError("--window: the engine has no fast tier (a static primary model?)")
    engine.serving_tier = lambda: engine.fast_semantic


def pending_vectors(engine: Engine) -> int:
    return engine.store.reader().execute(
        "SELECT count(*) FROM chunks c WHERE NOT EXISTS "
        "(SELECT 1 FROM vectors v WHERE v.text_hash = c.embed_hash)").fetchone()[0]


# -- evaluation ----------------------------------------------------------------------

@dataclass
class QueryResult:
    query: CodeQuery
    mode: str
    score: QueryScore
    hits: list[tuple[str, int, int]]


@dataclass
class ChunkStats:
    code_chunks: int = 0
    tiny_chunks: int = 0  # code chunks of 1-2 lines
    top1: int = 0
    top1_tiny: int = 0
    top1_tiny_miss: int = 0  # a 1-2-line top-1 hit that finds no target
    top10: int = 0
    top10_tiny: int = 0


@dataclass
class Row:
    split: str
    language: str  # or "all"
    kind: str  # or "all"
    mode: str
    n: int
    ndcg: float
    mrr: float
    recall: float


@dataclass
class EvalReport:
    results: list[QueryResult]
    chunk_stats: dict[str, ChunkStats]  # corpus id -> its index's and its hits' sizes (per mode)
    corpora: list[CodeSet]
    ranking: RankingConfig
    modes: tuple[str, ...]
    seconds: float
    rows: list[Row] = field(default_factory=list)

    def __post_init__(self) -> None:
        self.rows = _aggregate(self.results, self.modes)

    def summary(self, split: str, language: str = "all", kind: str = "all",
                mode: str = "hybrid") -> Row | None:
        for row in self.rows:
            if (row.split, row.language, row.kind, row.mode) == (split, language, kind, mode):
                return row
        return None

    def markdown(self) -> str:
        return markdown(self)


def _mean(scores: list[QueryScore]) -> tuple[float, float, float]:
    n = len(scores) or 1
    return (sum(s.ndcg for s in scores) / n, sum(s.rr for s in scores) / n,
            sum(s.recall for s in scores) / n)


def _aggregate(results: list[QueryResult], modes: tuple[str, ...]) -> list[Row]:
    rows: list[Row] = []
    splits = [s for s in SPLITS if any(r.query.split == s for r in results)]
    for split in splits:
        for mode in modes:
            mine = [r for r in results if r.query.split == split and r.mode == mode]
            languages = [lang for lang in LANGUAGES if any(r.query.language == lang for r in mine)]
            for language in languages:
                for kind in (*QUERY_KINDS, "all"):
                    sel = [r.score for r in mine if r.query.language == language
                           and (kind == "all" or r.query.kind == kind)]
                    if sel:
                        rows.append(Row(split, language, kind, mode, len(sel), *_mean(sel)))
            for kind in QUERY_KINDS:
                sel = [r.score for r in mine if r.query.kind == kind]
                if sel:
                    rows.append(Row(split, "all", kind, mode, len(sel), *_mean(sel)))
            # The overall row: the mean over languages (each language counts the same).
            per_language = [r for r in rows if r.split == split and r.mode == mode
                            and r.kind == "all" and r.language != "all"]
            if per_language:
                rows.append(Row(split, "all", "all", mode, sum(r.n for r in per_language),
                                *(sum(getattr(r, m) for r in per_language) / len(per_language)
                                  for m in ("ndcg", "mrr", "recall"))))
    return rows


def selected_corpora(split: str = "all", languages: list[str] | None = None,
                     names: list[str] | None = None) -> list[CodeCorpus]:
    chosen = [c for c in CODE_CORPORA if (split == "all" or c.split == split)
              and (not languages or c.language in languages) and (not names or c.name in names)]
    # In the order named (build: the corpora to embed first).
    return sorted(chosen, key=lambda c: names.index(c.name)) if names else chosen


def evaluate(split: str = "dev", languages: list[str] | None = None,
             modes: tuple[str, ...] | list[str] = MODES, ranking: RankingConfig | None = None,
             corpora: list[str] | None = None, log=print, max_tokens: int | None = None,
             embed_model: str | None = None, by_file: bool = False, window: bool = False) -> EvalReport:
    """Score the selected corpora's queries through ``Engine.recall`` in each mode.

    ``split``: dev, test or all; ``languages``/``corpora``: filters (None: all);
    ``ranking``: the RankingConfig recall runs with (None: the defaults). Dense
    and hybrid modes first embed what the vector cache lacks. ``max_tokens``:
    embed with inputs cut at this many tokens instead of the model's default
    (its own stores, ``ID+tokens-N``; vectors cached under their own key);
    ``embed_model``: the engine's ``embed_model`` option (its own stores, ``ID+model-NAME``);
    ``by_file``: score files, not chunks (see score_hits); ``window``: answer as
    in the fast tier's window (the static tier serving, the transformer
    scoring its first hits again: Engine._rescoring_tier), from stores where
    both tiers are complete (a text's vector does not depend on when it was
    embedded)."""
    with embedding_variant(max_tokens, embed_model) as variant:
        return _evaluate(split, languages, tuple(modes), ranking, corpora, log, variant, by_file, window)


@contextlib.contextmanager
def embedding_variant(max_tokens: int | None, model: str | None):
    """Run with embeddings.MAX_TOKENS = max_tokens and the engine option
    embed_model = model (None: the defaults); yields the store variant name
    (``tokens-N``, ``model-NAME``, both joined by ``+``, or "")."""
    global _embed_model
    from ctxls.index import embeddings

    default = embeddings.MAX_TOKENS
    tokens = max_tokens if max_tokens and max_tokens != default else None
    embeddings.MAX_TOKENS, _embed_model = tokens or default, model or None
    try:
        yield "+".join(part for part in (tokens and f"tokens-{tokens}", model and f"model-{model}")
                       if part)
    finally:
        embeddings.MAX_TOKENS, _embed_model = default, None


def _evaluate(split, languages, modes, ranking, corpora, log, variant, by_file, window) -> EvalReport:
    unknown = set(modes) - set(MODES)
    if unknown:
        raise ValueError(f"unknown modes {sorted(unknown)}; known: {', '.join(MODES)}")
    ranking = ranking or RankingConfig()
    started = time.perf_counter()
    results: list[QueryResult] = []
    chunk_stats: dict[str, ChunkStats] = {}
    sets: list[CodeSet] = []
    for corpus in selected_corpora(split, languages, corpora):
        code_set = build_set(corpus)
        sets.append(code_set)
        dense = any(m != "lexical" for m in modes)
        if dense:
            # Always through the embedding engine: only it sees that the model or
            # the embedding text changed (which drops every stored vector).
            embed_store(code_set, variant=variant, log=log)
        engine = open_engine(code_set, dense, ranking, variant=variant, log=log)
        if window:
            serve_the_window(engine)
        try:
            # Recall falls back to BM25 without vectors: dense numbers must not be BM25's.
            if dense and (engine.semantic is None or not engine.semantic.ensure_loaded()
                          or pending_vectors(engine)):
                raise RuntimeError(f"{corpus.id}: the store is not fully embedded")
            conn = engine.store.reader()
            for mode in modes:
                stats = chunk_stats.setdefault(f"{corpus.id}/{mode}", ChunkStats())
                stats.code_chunks, stats.tiny_chunks = conn.execute(
                    "SELECT count(*), coalesce(sum(end_line - start_line <= 1), 0) FROM chunks "
                    "WHERE kind = 'code'").fetchone()
                for q in code_set.queries:
                    hits = engine.recall(q.query, kinds=["code"], n=K,
                                         mode=RECALL_MODE[mode]).hits_by_kind["code"]
                    spans = [(h.path, h.start_line, h.end_line) for h in hits]
                    score = score_hits(spans, q.targets, by_file=by_file)
                    results.append(QueryResult(q, mode, score, spans))
                    for rank, (_, start, end) in enumerate(spans, 1):
                        tiny = end - start <= 1
                        stats.top10 += 1
                        stats.top10_tiny += tiny
                        if rank == 1:
                            stats.top1 += 1
                            stats.top1_tiny += tiny
                            stats.top1_tiny_miss += tiny and not any(
                                finds(spans[0], t) for t in q.targets)
        finally:
            engine.close()
        log(f"codesearch: scored {corpus.id} ({len(code_set.queries)} queries x {len(modes)} modes)")
    return EvalReport(results, chunk_stats, sets, ranking, modes, time.perf_counter() - started)


# -- reporting -------------------------------------------------------------------------

def _pct(part: int, whole: int) -> str:
    return f"{100 * part / whole:.1f}%" if whole else "-"


def markdown(report: EvalReport) -> str:
    out = []
    splits = [s for s in SPLITS if any(r.split == s for r in report.rows)]
    modes = report.modes
    head = "| split | language | " + " | ".join(
        f"{m} NDCG@10 | MRR@10 | R@10" for m in modes) + " | queries |"
    rule = "|---|---|" + "---:|---:|---:|" * len(modes) + "---:|"
    for title, kinds, by_language in (("By language (all query kinds)", ("all",), True),
                                      ("By query kind (all languages)", QUERY_KINDS, False)):
        out += [f"#### {title}", "", head.replace("language", "language" if by_language else "kind"), rule]
        for split in splits:
            keys = ([*[lang for lang in LANGUAGES if report.summary(split, lang, "all", modes[0])], "all"]
                    if by_language else [*kinds, "all"])
            for key in keys:
                language, kind = (key, "all") if by_language else ("all", key)
                cells = []
                n = 0
                for mode in modes:
                    row = report.summary(split, language, kind, mode)
                    if row is None:
                        cells.append("- | - | -")
                        continue
                    n = row.n
                    cells.append(f"{row.ndcg:.3f} | {row.mrr:.3f} | {row.recall:.3f}")
                label = f"**{key}**" if key == "all" else key
                out.append(f"| {split} | {label} | " + " | ".join(cells) + f" | {n} |")
        out.append("")
    out += ["#### NDCG@10 by language and kind", "",
            "| split | language | " + " | ".join(f"{m} {k}" for m in modes for k in QUERY_KINDS) + " |",
            "|---|---|" + "---:|" * (len(modes) * len(QUERY_KINDS))]
    for split in splits:
        for language in LANGUAGES:
            cells = []
            for mode in modes:
                for kind in QUERY_KINDS:
                    row = report.summary(split, language, kind, mode)
                    cells.append(f"{row.ndcg:.3f}" if row else "-")
            if any(c != "-" for c in cells):
                out.append(f"| {split} | {language} | " + " | ".join(cells) + " |")
    out += ["", "#### Chunk sizes: 1–2-line code chunks", "",
            "| mode | in the index | among top-1 hits | top-1, 1–2 lines, not a target | among top-10 hits |",
            "|---|---:|---:|---:|---:|"]
    for mode in modes:
        total = ChunkStats()
        for key, s in report.chunk_stats.items():
            if key.endswith("/" + mode):
                for f in fields(ChunkStats):
                    setattr(total, f.name, getattr(total, f.name) + getattr(s, f.name))
        out.append(f"| {mode} | {_pct(total.tiny_chunks, total.code_chunks)} of {total.code_chunks} | "
                   f"{_pct(total.top1_tiny, total.top1)} | {_pct(total.top1_tiny_miss, total.top1)} | "
                   f"{_pct(total.top10_tiny, total.top10)} |")
    out += ["", "#### Corpora", "",
            "| language | split | corpus | code chunks | symbol | description | concept |",
            "|---|---|---|---:|---:|---:|---:|"]
    for s in report.corpora:
        stats = report.chunk_stats.get(f"{s.corpus.id}/{modes[0]}", ChunkStats())
        counts = {k: sum(q.kind == k for q in s.queries) for k in QUERY_KINDS}
        out.append(f"| {s.corpus.language} | {s.corpus.split} | {s.corpus.id} ({s.corpus.source}) | "
                   f"{stats.code_chunks} | " + " | ".join(str(counts[k]) for k in QUERY_KINDS) + " |")
    out += ["", f"Scored in {report.seconds:.0f} s; load average {os.getloadavg()[0]:.1f}."]
    return "\n".join(out)


def results_json(report: EvalReport) -> dict:
    """Every query's score and hits, for reading failures by hand."""
    return {"ranking": asdict(report.ranking),
            "rows": [r.__dict__ for r in report.rows],
            "queries": [{"id": r.query.id, "mode": r.mode, "query": r.query.query,
                         "kind": r.query.kind, "ndcg": round(r.score.ndcg, 4),
                         "rr": round(r.score.rr, 4), "recall": round(r.score.recall, 4),
                         "targets": [t.__dict__ for t in r.query.targets], "hits": r.hits}
                        for r in report.results]}


def parse_ranking(text: str | None) -> RankingConfig:
    """``field=value,field=value`` over the default RankingConfig; a field of
    PriorConfig (``saturation_decay=0.5``) changes the priors."""
    config = RankingConfig()
    if not text:
        return config
    changes: dict[str, dict] = {"ranking": {}, "priors": {}}
    for item in text.split(","):
        name, _, value = item.partition("=")
        name = name.strip()
        for target, owner in (("ranking", config), ("priors", config.priors)):
            if name in {f.name for f in fields(owner)} and name != "priors":
                default = getattr(owner, name)
                changes[target][name] = (value == "true" if isinstance(default, bool)
                                         else type(default)(value))
                break
        else:
            known = [f.name for f in fields(RankingConfig) if f.name != "priors"]
            known += [f.name for f in fields(config.priors)]
            raise SystemExit(f"--ranking: unknown field {name!r}; known: {', '.join(known)}")
    return replace(config, priors=replace(config.priors, **changes["priors"]), **changes["ranking"])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("verb", choices=("build", "lexical", "eval"))
    parser.add_argument("--split", choices=("dev", "test", "all"),
                        help="default: dev (build: all)")
    parser.add_argument("--lang", nargs="*", choices=LANGUAGES, help="default: all languages")
    parser.add_argument("--corpus", nargs="*", help="only these corpora (by name)")
    parser.add_argument("--modes", default=",".join(MODES), help="comma-separated of " + ", ".join(MODES))
    parser.add_argument("--ranking", help="RankingConfig overrides: field=value,...")
    parser.add_argument("--no-embed", action="store_true", help="build: index only")
    parser.add_argument("--by-file", action="store_true",
                        help="score files, not chunks: a target is found by any hit in its file")
    parser.add_argument("--json", help="write every query's hits and scores to this file")
    parser.add_argument("--max-tokens", type=int,
                        help="embedding input length (default: the model's, index/embeddings.py)")
    parser.add_argument("--window", action="store_true",
                        help="answer as in the fast tier's window: the static tier serving, the "
                             "transformer scoring its first hits again")
    parser.add_argument("--embed-model",
                        help="the engine's embedModel option (e.g. multilingual-e5-small)")
    args = parser.parse_args(argv)

    def log(message: str) -> None:
        print(message, file=sys.stderr, flush=True)

    if args.verb == "build":
        with embedding_variant(args.max_tokens, args.embed_model) as variant:
            for corpus in selected_corpora(args.split or "all", args.lang, args.corpus):
                code_set = build_set(corpus)
                if args.no_embed:
                    open_engine(code_set, False, variant=variant, log=log).close()
                else:
                    embed_store(code_set, variant=variant, log=log)
        return 0
    modes = ("lexical",) if args.verb == "lexical" else tuple(m for m in args.modes.split(",") if m)
    report = evaluate(args.split or "dev", args.lang, modes, parse_ranking(args.ranking), args.corpus,
                      log, args.max_tokens, args.embed_model, args.by_file, args.window)
    print(report.markdown())
    if args.json:
        Path(args.json).write_text(json.dumps(results_json(report)), encoding="utf-8")
    return 0


if __name__ == "__main__":
    sys.exit(main())
