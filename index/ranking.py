"""Ranking: lexical (BM25 over the per-kind FTS5 tables) and hybrid.

Lexical scores are FTS5's bm25 negated, so higher is better. Column weights
favour a match in the symbol name or path over one in the body; the optional
import boost lifts chunks whose file is one import hop from a top-ranked file.

Hybrid ranking takes the union of the BM25 top candidates and the ANN top
candidates, gives every candidate both scores (exact cosine from its stored
vector; BM25 restricted to the candidate rows), scales each side to 0..1 over
the candidates and fuses ``dense_weight * cosine' + (1 - dense_weight) * bm25'``
(``fused_scores``). Hybrid scores are therefore relative to the query's
candidates: the best candidate on both sides scores 1. A query that is one
identifier (``QueryShape.identifier``) gives the cosine a smaller share: the
name is the best evidence there is. A chunk still waiting
for its vector gets the median cosine of the others, so it neither wins nor
vanishes on that account. docs/decisions.md records the fusion and weights chosen
on the retrieval dev set.
"""

from __future__ import annotations

import logging
import math
import threading
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Callable, Sequence

from ctxls.index import postings
from ctxls.index.embed_text import embedding_text
from ctxls.index.embeddings import is_static_model
from ctxls.index.postings import FTS5_BM25_K1, FTS5_IDF_FLOOR
from ctxls.index.query import QueryShape, declared_name, query_shape
from ctxls.index.recall_features import RecallFeatures, add_coherence, add_file_text, named_files, with_features
from ctxls.index.recall_scorer import Contribution, PriorConfig, RecallScorer, fuse, select
from ctxls.index.store import (FTS_TABLE_BY_KIND, Connection, connection_cache, file_term_count,
                               fts_generation, held_terms, paths_generation)
from ctxls.index.tokenize import fts_match_expression
from ctxls.index.vocabulary import MAX_RECALL_N

if TYPE_CHECKING:
    import numpy as np

    from ctxls.index.semantic import SemanticIndex


log = logging.getLogger(__name__)

@dataclass(frozen=True)
class RankingConfig:
    # Column weights and import boost: the best of bench/quality.py's grid on the
    # retrieval dev set (docs/decisions.md, "Lexical column weights and the import boost").
    symbol_weight: float = 32.0
    path_weight: float = 4.0
    body_weight: float = 1.0
    import_boost: float = 0.1
    # How many BM25 candidates the import boost and the priors reorder: the
    # ranking's fixed depth (first_n), so the top k of any n is one list.
    candidate_pool: int = 50
    # Files whose best hits lend a boost to their import neighbours.
    boost_source_files: int = 3
    # Hybrid fusion: how the two scores combine (FUSIONS; see fused_scores),
    # the share of the cosine side and how many candidates each side nominates
    # (hybrid's fixed depth, as candidate_pool is lexical's).
    # The best of bench/semantic.py's grid on the dev set of three corpora
    # (docs/decisions.md, "Hybrid fusion"); it is also the best fusion on test.
    fusion: str = "min-max"
    dense_weight: float = 0.6
    # The cosine share of a sentence query while the static model's tier
    # serves: its cosines are the weaker evidence. Set 4 dev, hybrid NDCG@10
    # by chunk / by file at 0.6, 0.5, 0.4, 0.3, 0.2: 0.570/0.856,
    # 0.580/0.859, 0.582/0.857, 0.587/0.855, 0.585/0.851; 0.5 is the one
    # best on both; test 0.623/0.848 -> 0.626/0.850 (docs/decisions.md,
    # "The static tier's own cosine share").
    static_dense_weight: float = 0.5
    fusion_pool: int = 30
    # How many nearest vectors the ANN nominates per fusion_pool (scaled with
    # a deeper search; 2 x the pool when BM25 finds nothing): 2 x the pool.
    # Fewer helped set 4's dev (8: hybrid NDCG@10 by chunk static +0.015,
    # transformer +0.012) but not its test (+0.004 / -0.002 by file static,
    # +0.001 / 0.000 transformer): kept (docs/decisions.md, "Fewer ANN
    # nominations").
    ann_pool: int = 60
    # The cosine share when the query is one identifier (QueryShape.identifier):
    # the name itself is the best evidence. Best on the dev set's name queries.
    identifier_dense_weight: float = 0.2
    # The scorer's weights over the feature records and the selection's
    # (recall_scorer.py), for both rankings' candidates.
    priors: PriorConfig = PriorConfig()


@dataclass(slots=True)
class ScoredChunk:
    chunk_id: int
    path: str
    kind: str
    language: str
    symbol: str | None
    symbol_kind: str
    start_line: int
    end_line: int
    score: float
    text: str
    embed_hash: str
    # A recall candidate's evidence (recall_features) and the scorer that
    # scored it (None: not scored by recall's scorer).
    features: RecallFeatures = field(default_factory=RecallFeatures)
    scorer: RecallScorer | None = field(default=None, repr=False, compare=False)
    # Scored again with the primary tier's cosines (_rescored): its cosine is
    # that model's, not the serving tier's.
    rescored: bool = False

    @property
    def why(self) -> list[Contribution]:
        """The features that made its score, largest first (asked of the hits
        answered only: the scorer keeps what it needs)."""
        return self.scorer.contributions(self) if self.scorer is not None else []


_CHUNK_COLUMNS = ("c.id, f.path, c.kind, c.language, c.symbol, c.start_line, c.end_line, c.text, "
                  "c.embed_hash, c.symbol_kind")


def _scored(row, score: float) -> ScoredChunk:
    return ScoredChunk(chunk_id=row[0], path=row[1], kind=row[2], language=row[3], symbol=row[4],
                       symbol_kind=row[9], start_line=row[5], end_line=row[6], score=score,
                       text=row[7], embed_hash=row[8])


# FTS5's bm25() (fts5_aux.c): a phrase adds idf * tf * (k1 + 1) / (tf + k1 * (...))
# to a row's score, so never more than idf * (k1 + 1), with idf =
# log((rows - hits + 0.5) / (hits + 0.5)), or 1e-6 when that is not positive
# (FTS5_BM25_K1: index/postings.py, which computes it from memory).
# A query term held by more than this share of a table's rows is common: the
# best rows are looked for among the rows holding a rarer term first (see
# bm25_scores). Chosen by profiling django's sentence queries (docs/decisions.md,
# "Exact pruning of common terms in `bm25_scores`").
COMMON_TERM_SHARE = 0.1
# Smaller tables are scored whole: there is little to skip.
PRUNE_MIN_ROWS = 2000
# file_bm25's length normalisation (BM25's b); without it (0) the files set
# gained nothing: large files hold every word.
FILE_BM25_B = 0.75
# The FTS tables whose tokenizer leaves a query term as it is (unicode61).
_UNSTEMMED_TABLES = frozenset(FTS_TABLE_BY_KIND.values())
# Document frequencies kept per reader connection and FTS table, at most.
MAX_CACHED_TERMS = 100_000


def bm25_scores(conn: Connection, table: str, terms: list[str], config: RankingConfig,
                limit: int | None = None, where: str | None = None,
                where_args: Sequence = ()) -> dict[int, float]:
    """rowid -> BM25 score (higher is better) of the rows matching any term,
    the best ``limit`` of them; ``where`` is an extra SQL condition on
    ``{table}.rowid`` (written memory keeps only the rows a scope may see).

    With a ``limit``, FTS5 computes bm25() for every matching row, and a
    sentence's common words ("return", "value") match most of the table. So
    the rows holding a rarer term are ranked first: when their
    ``limit``-th best score beats the most the common terms together can give
    a row (``_ceiling``), no row holding only common terms can enter, and that
    is the answer (the max-score pruning of top-k search engines); when it does
    not, fewer terms are left out so that it must, and when none can be, every
    match is ranked. Scores are bm25() of all terms, so the answer is the same.

    The in-memory postings (index/postings.py) answer first, the same rows
    and scores bit for bit; FTS5 answers what they do not (``where``, a
    stemming table, an older snapshot, ...)."""
    weights = [config.symbol_weight, config.path_weight, config.body_weight]
    if where is None and table in _UNSTEMMED_TABLES:
        found = postings.bm25(conn, table, terms, weights)
        if found is not None:
            return found.all() if limit is None else found.top(limit)
    select = f"SELECT rowid, -bm25({table}, ?, ?, ?) AS score FROM {table} WHERE {table} MATCH ?"
    args: list = [*weights, fts_match_expression(terms)]
    if where is not None:
        select += f" AND {where}"
        args += where_args
    if limit is None:
        return {row[0]: row[1] for row in conn.execute(select, args)}
    term_idf = _term_idf(conn, table, terms)
    if term_idf is not None:
        common = [t for t in sorted(term_idf, key=lambda t: (term_idf[t], t))
                  if term_idf[t] < term_idf.common_below]  # the most common first
        for _ in range(2):
            if not common or len(common) == len(terms):
                break
            within = f"{table}.rowid + 0 IN (SELECT rowid FROM {table} WHERE {table} MATCH ?)"
            within_args = [fts_match_expression([t for t in terms if t not in common])]
            scores, worst = _top_scores(conn, f"{select} AND {within}", args + within_args, limit)
            if worst is None:
                break
            if _ceiling(term_idf, common) < worst:
                return scores
            # More rows hold a term of the rest: their limit-th best is at least
            # ``worst``, so leaving out only the common terms that add up to less
            # than it is the answer on the second try.
            common = [t for k, t in enumerate(common) if _ceiling(term_idf, common[:k + 1]) < worst]
    return _top_scores(conn, select, args, limit)[0]


def _ceiling(term_idf: dict[str, float], terms: list[str]) -> float:
    """The most ``terms`` can add to a row's bm25() (a hair more: float sums)."""
    return (FTS5_BM25_K1 + 1) * sum(term_idf[t] for t in terms) * (1 + 1e-9)


def _top_scores(conn: Connection, select: str, args: list,
                limit: int) -> tuple[dict[int, float], float | None]:
    """The best ``limit`` rows of ``select`` (rowid, score), and the
    ``limit``-th best score (None: fewer rows)."""
    rows = conn.execute(f"{select} ORDER BY score DESC LIMIT ?", [*args, limit]).fetchall()
    worst = rows[-1][1] if len(rows) >= limit else None
    return {row[0]: row[1] for row in rows}, worst


def _postings_bm25(conn: Connection, table: str, terms: list[str],
                   config: RankingConfig) -> postings.Bm25 | None:
    """bm25() from the in-memory postings (index/postings.py), or None: FTS5 answers."""
    if table not in _UNSTEMMED_TABLES:
        return None
    return postings.bm25(conn, table, terms, [config.symbol_weight, config.path_weight,
                                              config.body_weight])


def bm25_of_ids(conn: Connection, table: str, terms: list[str], config: RankingConfig,
                ids: Sequence[int]) -> dict[int, float]:
    """rowid -> BM25 score of those of ``ids`` that match a term: a filter on
    one scan of the matches, bm25() computed for ``ids`` only."""
    if not ids or not terms:
        return {}
    found = _postings_bm25(conn, table, terms, config)
    if found is not None:
        return found.of(ids)
    return bm25_scores(conn, table, terms, config,
                       where=f"{table}.rowid + 0 IN ({','.join('?' * len(ids))})", where_args=ids)


class _TermCounts:
    """How many rows an FTS table has and how many hold each term, as one
    reader connection sees them (kept while the table is unchanged:
    ``store.fts_generation``)."""

    def __init__(self, conn: Connection, table: str) -> None:
        # One docsize row per FTS row: FTS5's own row count, which bm25() uses.
        self.rows: int = conn.execute(f"SELECT count(*) FROM {table}_docsize").fetchone()[0]
        self.docs: dict[str, int] = {}
        self.lock = threading.Lock()

    def of(self, conn: Connection, table: str, terms: list[str]) -> dict[str, int]:
        with self.lock:
            known = {t: self.docs[t] for t in terms if t in self.docs}
        missing = [t for t in terms if t not in known]
        if missing:
            found = document_frequency(conn, table, missing)
            known.update({t: found.get(t, 0) for t in missing})
            with self.lock:
                if len(self.docs) > MAX_CACHED_TERMS:
                    self.docs.clear()
                self.docs.update((t, known[t]) for t in missing)
        return known


def term_counts(conn: Connection, table: str) -> _TermCounts:
    """The FTS ``table``'s row count and its terms' document counts as this
    connection sees them, kept while the table is unchanged."""
    return connection_cache(conn, f"term counts {table}", lambda c: fts_generation(c, table),
                            lambda c: _TermCounts(c, table))


class _TermIdf(dict):
    """term -> its idf as FTS5's bm25() computes it; ``common_below``: the
    idf of a term held by COMMON_TERM_SHARE of the rows."""

    common_below: float


def _idf(rows: int, hits: int) -> float:
    return max(math.log((rows - hits + 0.5) / (hits + 0.5)), FTS5_IDF_FLOOR)


def _term_idf(conn: Connection, table: str, terms: list[str]) -> _TermIdf | None:
    """Each term's idf, or None for a one-term query, a small table or one
    that stems the query's terms again. A term the vocabulary does not know
    (df 0: the highest idf) is never common, so a row outside the rarer
    terms' rows holds common terms only."""
    # Only where the MATCH reads a term as the vocabulary lists it: written
    # memory's tables stem again (porter), and a query term found in their
    # vocabulary may match as another, rarer stem, worth more than its count says.
    if len(terms) < 2 or table not in _UNSTEMMED_TABLES:
        return None
    counts = term_counts(conn, table)
    rows = counts.rows
    if rows < PRUNE_MIN_ROWS:
        return None
    docs = counts.of(conn, table, terms)
    idf = _TermIdf((t, _idf(rows, docs[t])) for t in terms)
    idf.common_below = _idf(rows, int(COMMON_TERM_SHARE * rows))
    return idf


def document_frequency(conn: Connection, table: str, terms: list[str]) -> dict[str, int]:
    """term -> how many rows of the FTS ``table`` hold it, from an fts5vocab
    table over it (a temp table of this connection, made on first use); a
    term is looked up as the table holds it (``held_term``: `café` as `cafe`)."""
    vocab = postings.vocab_table(conn, table, "row")
    held = held_terms(terms)
    asked = list(dict.fromkeys(held.values()))
    counts: dict[str, int] = {}
    for start in range(0, len(asked), 500):
        batch = asked[start:start + 500]
        counts.update(conn.execute(
            f"SELECT term, doc FROM temp.{vocab} WHERE term IN ({','.join('?' * len(batch))})",
            batch).fetchall())
    return {term: counts[form] for term, form in held.items() if form in counts}


def bm25_of_files(conn: Connection, kind: str, terms: list[str], config: RankingConfig,
                  file_ids: Sequence[int]) -> dict[int, float]:
    """chunk id -> BM25 score of the chunks of ``file_ids`` that match a term.
    A file's chunks hold a few runs of ids (one when indexed whole, more after
    edits reused some rows), and FTS5 seeks a rowid range in its posting
    lists: a range query per run costs well under a millisecond, where a
    ``rowid IN`` filter would score every match of the whole index again."""
    if not file_ids or not terms:
        return {}
    ids: set[int] = {row[0] for row in conn.execute(
        f"SELECT id FROM chunks WHERE kind = ? AND file_id IN ({','.join('?' * len(file_ids))})",
        [kind, *file_ids])}
    table = FTS_TABLE_BY_KIND[kind]
    found = _postings_bm25(conn, table, terms, config)
    if found is not None:
        return found.of(ids)
    scores: dict[int, float] = {}
    for low, high in _id_runs(ids):
        scores.update((chunk_id, score) for chunk_id, score in bm25_scores(
            conn, table, terms, config, where=f"{table}.rowid BETWEEN ? AND ?",
            where_args=(low, high)).items() if chunk_id in ids)
    return scores


def _id_runs(ids: set[int], gap: int = 256) -> list[tuple[int, int]]:
    """(low, high) spans covering ``ids``, split where two neighbours are
    more than ``gap`` apart (a range over other files' rows costs their matches)."""
    runs: list[tuple[int, int]] = []
    for chunk_id in sorted(ids):
        if runs and chunk_id - runs[-1][1] <= gap:
            runs[-1] = (runs[-1][0], chunk_id)
        else:
            runs.append((chunk_id, chunk_id))
    return runs


def _chunks_by_id(conn: Connection, ids) -> dict[int, tuple]:
    ids = list(ids)
    if not ids:
        return {}
    rows = conn.execute(f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id "
                        f"WHERE c.id IN ({','.join('?' * len(ids))})", ids).fetchall()
    return {row[0]: row for row in rows}


def rank_candidates(conn: Connection, kind: str, shape: QueryShape, hits: list[ScoredChunk], n: int,
                    config: RankingConfig, dense_weight: float, fetch_rows,
                    file_scores=None) -> list[ScoredChunk]:
    """The best ``n`` of the candidates ``hits`` (text features filled):
    feature records (with_features), then score_candidates. ``fetch_rows(ids)``
    turns chunk ids into ScoredChunks; ``file_scores(paths)`` gives whole
    files' text scores (path -> score); ``dense_weight`` is the cosine's share."""
    if not hits and config.priors.definition_boost <= 0:
        return []
    hits = with_features(conn, kind, shape, hits, config.priors, fetch_rows)
    return score_candidates(shape, hits, n, config, dense_weight, file_scores)


def score_candidates(shape: QueryShape, hits: list[ScoredChunk], n: int, config: RankingConfig,
                     dense_weight: float, file_scores=None) -> list[ScoredChunk]:
    """One scorer and the selection over candidates whose feature records are
    filled (ties break on path then line, so equal scores always come back in
    one order). Reads no store: bench/train_recall_scorer.py scores dumped
    records through it."""
    priors = config.priors
    scorer = RecallScorer(priors, shape, dense_weight, config.import_boost)
    # Before set_scale the boosts' units are 0: relevance is the text match
    # alone (a chunk fetched for its definition has none), whose best is the unit.
    scorer.set_scale(max((scorer.relevance(hit.features) for hit in hits), default=0.0) or 1.0)
    relevance = [scorer.relevance(hit.features) for hit in hits]
    if priors.coherence_boost > 0 and hits:
        add_coherence(hits, relevance, scorer)
    penalised = [scorer.penalised(hit.features, value) for hit, value in zip(hits, relevance)]
    if priors.file_text_boost > 0 and file_scores is not None and hits and shape.identifier is None:
        add_file_text(hits, penalised, scorer, file_scores)
    for hit, value in zip(hits, penalised):
        hit.score = scorer.score(hit.features, value)
    top = select(hits, n, priors)
    for hit in top:
        hit.scorer = scorer
    return top


def store_rows(conn: Connection):
    """``fetch_rows`` of rank_candidates over the store: chunk ids -> ScoredChunks."""
    def fetch_rows(ids):
        return [_scored(row, 0.0) for row in _chunks_by_id(conn, ids).values()]
    return fetch_rows


def _ranked(conn: Connection, kind: str, shape: QueryShape, hits: list[ScoredChunk], n: int,
            config: RankingConfig, dense_weight: float) -> list[ScoredChunk]:
    """rank_candidates with the store's rows and files' text scores."""
    def file_scores(paths):
        return file_bm25(conn, kind, shape.terms, paths)
    return rank_candidates(conn, kind, shape, hits, n, config, dense_weight, store_rows(conn), file_scores)


def file_bm25(conn: Connection, kind: str, terms: list[str], paths: set[str]) -> dict[str, float]:
    """path -> BM25 of the query ``terms`` over each whole file of ``paths``,
    from ``file_terms``: a term's frequency is how many of the file's chunks
    of ``kind`` hold it, a file's length its number of such chunks, a term's
    idf the chunk table's (a file-level idf ranked the same on the files set).
    A chunk scores one function; this scores the file that keeps returning to
    the question's words, what a "how does X work" question is after."""
    table = FTS_TABLE_BY_KIND.get(kind)
    if table is None or not terms or not paths:
        return {}
    counts = term_counts(conn, table)
    docs = counts.of(conn, table, terms)
    idf = {t: math.log(1.0 + (counts.rows - docs[t] + 0.5) / (docs[t] + 0.5)) for t in terms}
    mean_chunks = counts.rows / max(1, _files_of_kind(conn, kind))
    k1, b = FTS5_BM25_K1, FILE_BM25_B
    out = {}
    path_list = sorted(paths)
    for path, chunks, held in conn.execute(
            f"SELECT f.path, t.chunks, t.terms FROM files f JOIN file_terms t "
            f"ON t.file_id = f.id AND t.kind = ? WHERE f.path IN ({','.join('?' * len(path_list))})",
            [kind, *path_list]):
        norm = k1 * (1.0 - b + b * chunks / mean_chunks)
        score = 0.0
        for term in terms:
            n = file_term_count(held, term)
            if n:
                score += idf[term] * n * (k1 + 1.0) / (n + norm)
        out[path] = score
    return out


def _files_of_kind(conn: Connection, kind: str) -> int:
    """How many files have chunks of ``kind`` (kept while no file comes or goes)."""
    return connection_cache(conn, f"files of kind {kind}", paths_generation, lambda c: c.execute(
        "SELECT count(DISTINCT file_id) FROM chunks WHERE kind = ?", (kind,)).fetchone()[0])


def first_n(search: Callable[[int], list[ScoredChunk]], n: int, depth: int,
            chunks: int) -> list[ScoredChunk]:
    """The best ``n`` of ``search(depth)``, the ranking of a fixed candidate
    depth: the top k of any n is the same list (k <= n). A list shorter than
    ``n`` goes on with the next hits of one deeper search, as deep as any
    request may ask (MAX_RECALL_N): searched to ``n``, its order past
    ``depth`` changed with ``n``. Those score no higher than the last of the
    first list. Short lists are not only long ones cut: windows of one long
    definition count once, and the ANN's nearest vectors are of every kind,
    so a kind that is rare in the repository (docs among code) can have
    few candidates at ``depth`` (n=10 listed 1 doc section, n=31 three).
    ``chunks``: how many chunks of the kind there are; a list of them all
    has nothing to go on with."""
    first = search(depth) if chunks else []
    if min(n, chunks) <= len(first):
        return first[:n]
    # Chunks of a file overlap only as windows of one definition: one listed
    # keeps the others out.
    spans: dict[str, list[tuple[int, int]]] = {}
    for hit in first:
        spans.setdefault(hit.path, []).append((hit.start_line, hit.end_line))
    more = [hit for hit in search(max(n, MAX_RECALL_N)) if not any(
        start <= hit.end_line and hit.start_line <= end for start, end in spans.get(hit.path, ()))]
    more = more[:n - len(first)]
    if first:
        for hit in more:
            hit.score = min(hit.score, first[-1].score)
    return first + more


def lexical_search(conn: Connection, kind: str, query: str, n: int,
                   config: RankingConfig) -> list[ScoredChunk]:
    table = FTS_TABLE_BY_KIND.get(kind)
    shape = query_shape(query)
    terms = shape.terms
    if table is None or not terms or n <= 0:
        return []

    def search(depth: int) -> list[ScoredChunk]:
        return _ranked(conn, kind, shape, lexical_candidates(conn, kind, shape, depth, config),
                       depth, config, 0.0)
    return first_n(search, n, config.candidate_pool, term_counts(conn, table).rows)


def lexical_candidates(conn: Connection, kind: str, shape: QueryShape, depth: int,
                       config: RankingConfig) -> list[ScoredChunk]:
    """Lexical recall's candidates, their text features filled: the BM25 top
    ``depth`` (a pool deeper than the list: the scorer and the import feature
    reorder it) and the chunks of the files the query names."""
    table = FTS_TABLE_BY_KIND[kind]
    terms = shape.terms
    scores = bm25_scores(conn, table, terms, config, limit=depth)
    scores.update(bm25_of_files(conn, kind, terms, config, named_files(conn, shape, config.priors)))
    rows = _chunks_by_id(conn, scores)
    hits = [_scored(row, 0.0) for row in rows.values()]
    for hit in hits:
        hit.features.bm25 = scores[hit.chunk_id]
    if config.import_boost:
        _add_import_features(conn, hits, config)
    return hits


def hybrid_search(conn: Connection, kind: str, query: str, n: int,
                  config: RankingConfig, semantic: "SemanticIndex", dense_only: bool = False,
                  rescoring: "SemanticIndex | None" = None) -> list[ScoredChunk]:
    """Fused BM25 + cosine ranking (``dense_only``: cosine alone). The caller
    checks that the semantic index is ready and has vectors. ``rescoring``:
    the primary tier while the fast one (``semantic``) serves; it scores the
    fast tier's first ``fusion_pool`` hits again (``_rescored``)."""
    table = FTS_TABLE_BY_KIND.get(kind)
    if table is None or n <= 0:
        return []
    # Embedded on the embedding thread while the query is analysed (its
    # words' stems) and BM25 scans here: the text is query_shape's ``text``.
    # The files a sentence names (lexical_search) are not added: the cosine
    # side brings the candidates BM25 lacks, and they only added noise to it
    # (hand-written files set, hybrid NDCG@10 0.790 -> 0.798; set 4 dev by
    # file 0.852 -> 0.860).
    vector = semantic.query_vector_soon(declared_name(query))
    rescoring_vector = rescoring.query_vector_soon(declared_name(query)) if rescoring else None
    shape = query_shape(query)
    terms = shape.terms

    chunks = term_counts(conn, table).rows  # of the kind: read once per recall

    def search(depth: int) -> list[ScoredChunk]:
        candidates = hybrid_candidates(conn, kind, vector.result, [] if dense_only else terms,
                                       depth, config, semantic, chunks)
        if candidates is None:
            return []
        hits = _fused_hits(candidates, dense_only, config)
        ranked = _ranked(conn, kind, shape, hits, depth, config,
                         _cosine_share(shape, config, semantic, dense_only))
        if rescoring is None or rescoring_vector is None:
            return ranked
        return _rescored(conn, kind, shape, ranked, config, dense_only, rescoring,
                         rescoring_vector.result)
    return first_n(search, n, config.fusion_pool, chunks)


def _cosine_share(shape: QueryShape, config: RankingConfig, semantic: "SemanticIndex",
                  dense_only: bool) -> float:
    if dense_only:
        return 1.0
    if shape.identifier:
        return config.identifier_dense_weight
    return config.static_dense_weight if is_static_model(semantic.embedder.name) else config.dense_weight


def _fused_hits(candidates: "HybridCandidates", dense_only: bool, config: RankingConfig
                ) -> list[ScoredChunk]:
    """The candidates as ScoredChunks with their two fusion sides filled."""
    hits = []
    for cid, (bm25, cosine) in fusion_sides(candidates.lexical, candidates.dense, dense_only,
                                            fusion=config.fusion).items():
        hit = _scored(candidates.rows[cid], 0.0)
        hit.features.bm25, hit.features.cosine = bm25, cosine
        hit.features.similarity = candidates.dense.get(cid)
        hits.append(hit)
    return hits


def _rescored(conn: Connection, kind: str, shape: QueryShape, ranked: list[ScoredChunk],
              config: RankingConfig, dense_only: bool, rescoring: "SemanticIndex",
              query_vector: "Callable[[], np.ndarray | None]") -> list[ScoredChunk]:
    """The fast tier's first ``fusion_pool`` hits ranked again as candidates
    of their own with the primary tier's cosines: stored, or embedded now for
    those its backlog has not reached (``similarities_embedding_missing``),
    at most ``fusion_pool`` texts a ranking. Set 4, hybrid NDCG@10 by chunk /
    by file against the transformer's own ranking: dev +0.009 / +0.006, test
    +0.002 / +0.001; the static tier alone -0.019 / -0.005 and -0.014 /
    -0.008 (docs/decisions.md, "The fast tier's first hits scored again by
    the transformer"). The first hits the selection left out and the hits
    below them follow in their order, scored no higher and carrying no
    cosine (theirs is the other model's). Without the query's vector or a
    first hit's vector in that model (it failed), ``ranked`` as it is: the
    serving tier's answer."""
    head, tail = ranked[:config.fusion_pool], ranked[config.fusion_pool:]
    if not head:
        return ranked
    try:
        vector = query_vector()
    except Exception:  # the model failed on the query: the serving tier answers alone
        log.exception("embedding a query for the primary tier failed")
        return ranked
    texts = {hit.embed_hash: embedding_text(hit.path, hit.symbol, hit.text) for hit in head}
    cosines = rescoring.similarities_embedding_missing(vector, texts) if vector is not None else {}
    if len(cosines) < len(texts):
        return ranked
    rows = _chunks_by_id(conn, [hit.chunk_id for hit in head])  # a chunk gone meanwhile is left out
    ids = [hit.chunk_id for hit in head if hit.chunk_id in rows]
    lexical = {} if dense_only else bm25_of_ids(conn, FTS_TABLE_BY_KIND[kind], shape.terms, config, ids)
    candidates = HybridCandidates(lexical, {cid: cosines.get(rows[cid][8]) for cid in ids}, rows)
    rescored = _ranked(conn, kind, shape, _fused_hits(candidates, dense_only, config), len(head), config,
                       _cosine_share(shape, config, rescoring, dense_only))
    if not rescored:
        return ranked
    spans: dict[str, list[tuple[int, int]]] = {}
    for hit in rescored:
        hit.rescored = True
        spans.setdefault(hit.path, []).append((hit.start_line, hit.end_line))
    # Windows of one definition overlap: one listed keeps the others out (as in first_n).
    rest = [hit for hit in head + tail if not any(
        start <= hit.end_line and hit.start_line <= end for start, end in spans.get(hit.path, ()))]
    for hit in rest:
        hit.score = min(hit.score, rescored[-1].score)
        hit.features.similarity = None
        hit.features.cosine = 0.0  # nor in its `why`: one list never shows two models' cosines
    return rescored + rest


@dataclass
class HybridCandidates:
    lexical: dict[int, float]  # chunk id -> BM25 score; absent: no query term
    dense: dict[int, float | None]  # chunk id -> cosine; None: no vector yet
    rows: dict[int, tuple]  # chunk id -> its _CHUNK_COLUMNS row


def hybrid_candidates(conn: Connection, kind: str,
                      query_vector: "Callable[[], np.ndarray | None]", terms: list[str], pool: int,
                      config: RankingConfig, semantic: "SemanticIndex",
                      chunks: int | None = None) -> HybridCandidates | None:
    """The BM25 top ``pool`` ∪ the ANN top ``pool`` (of ``config.ann_pool``
    nearest vectors per ``fusion_pool``; ``2 * pool`` when BM25 finds
    nothing), of one kind, each with both scores (no terms: BM25 is
    skipped); a kind of at most ``pool`` chunks: all of them. ``query_vector()`` gives the query's vector (None: no model),
    asked for after the BM25 scan. ``chunks``: how many the kind has (read
    here when not given)."""
    table = FTS_TABLE_BY_KIND[kind]
    lexical = bm25_scores(conn, table, terms, config, limit=pool) if terms else {}
    # Read while the query's vector may still be computing on the query pool.
    rows = _chunks_by_id(conn, lexical)
    vector = query_vector()
    if vector is None:
        return None
    nominated: dict[int, float] = {}  # chunk id -> its cosine, as the ANN gives it
    if (term_counts(conn, table).rows if chunks is None else chunks) <= pool:
        # A kind this rare (docs among code) is a candidate whole, each chunk
        # by its exact cosine: the ANN's nearest vectors are of every kind,
        # and few of a rare kind's were among them.
        added = [cid for (cid,) in conn.execute("SELECT id FROM chunks WHERE kind = ?", (kind,))]
    else:
        nearest = -(-pool * config.ann_pool // config.fusion_pool) if lexical else pool * 2
        dense_by_vector_id = dict(semantic.nearest(vector, nearest))
        if dense_by_vector_id:
            ids = list(dense_by_vector_id)
            for chunk_id, vector_id in conn.execute(
                    f"SELECT c.id, v.id FROM {semantic.table} v JOIN chunks c ON c.embed_hash = v.text_hash "
                    f"WHERE c.kind = ? AND v.id IN ({','.join('?' * len(ids))})", [kind, *ids]):
                nominated[chunk_id] = dense_by_vector_id[vector_id]
        nominated = dict(sorted(nominated.items(), key=lambda kv: -kv[1])[:pool])
        added = list(nominated)
    lexical.update(bm25_of_ids(conn, table, terms, config,
                               [cid for cid in added if cid not in lexical]))
    rows.update(_chunks_by_id(conn, [cid for cid in added if cid not in rows]))
    rows = dict(sorted(rows.items()))  # chunk id order, as one read of them all gives
    need_dense = {rows[cid][8] for cid in rows if cid not in nominated}
    dense_by_hash = semantic.similarities(vector, sorted(need_dense))
    dense = {cid: nominated.get(cid, dense_by_hash.get(rows[cid][8])) for cid in rows}
    return HybridCandidates(lexical, dense, rows)


FUSIONS = ("linear", "min-max")


def fusion_sides(lexical: dict[int, float], dense: dict[int, float | None], dense_only: bool = False,
                 coverage: dict[int, float] | None = None,
                 fusion: str = "linear") -> dict[int, tuple[float, float]]:
    """(BM25 side, cosine side) of every candidate in ``dense`` (None: no
    vector yet, which gets the median cosine; dropped when ``dense_only``,
    whose cosine side is the cosine itself and BM25 side 0). ``coverage``
    (0..1 per candidate) scales its share of BM25 after normalisation.

    ``fusion`` "linear": the cosine, and BM25 over the best BM25; "min-max":
    both sides scaled to 0..1 over the candidates first, so the dense side's
    narrow cosine range (~0.2-0.7 for MiniLM) weighs as much as BM25's.
    The hybrid score is recall_scorer.fuse of the two."""
    if dense_only:
        return {cid: (0.0, cosine) for cid, cosine in dense.items() if cosine is not None}
    known = sorted(v for v in dense.values() if v is not None)
    fill = known[len(known) // 2] if known else 0.0
    cosines = {cid: fill if cosine is None else cosine for cid, cosine in dense.items()}
    shares = {cid: lexical.get(cid, 0.0) for cid in cosines}
    if fusion == "min-max":
        cosines, shares = _min_max(cosines), _min_max(shares)
    else:
        top = max(lexical.values(), default=0.0) or 1.0
        shares = {cid: share / top for cid, share in shares.items()}
    if coverage is not None:
        shares = {cid: share * coverage.get(cid, 0.0) for cid, share in shares.items()}
    return {cid: (shares[cid], cosines[cid]) for cid in cosines}


def fused_scores(lexical: dict[int, float], dense: dict[int, float | None], dense_weight: float,
                 dense_only: bool = False, coverage: dict[int, float] | None = None,
                 fusion: str = "linear") -> dict[int, float]:
    """The hybrid score of every candidate (fusion_sides fused; ``dense_only``:
    the cosine itself)."""
    weight = 1.0 if dense_only else dense_weight
    return {cid: fuse(cosine, bm25, weight)
            for cid, (bm25, cosine) in fusion_sides(lexical, dense, dense_only, coverage, fusion).items()}


def _min_max(values: dict[int, float]) -> dict[int, float]:
    low, high = min(values.values(), default=0.0), max(values.values(), default=0.0)
    if high == low:
        # One candidate, or all alike: each is the best there is (1), unless
        # there is nothing at all on that side (0).
        return {key: 1.0 if high > 0 else 0.0 for key in values}
    return {key: (value - low) / (high - low) for key, value in values.items()}


def _add_import_features(conn: Connection, hits: list[ScoredChunk], config: RankingConfig) -> None:
    """Each hit's ``imports`` feature: the best BM25 of one of the leading
    files (boost_source_files) one import hop away, either way."""
    best_by_file: dict[str, float] = {}
    for hit in hits:
        best_by_file[hit.path] = max(best_by_file.get(hit.path, 0.0), hit.features.bm25)
    sources = sorted(best_by_file, key=lambda p: -best_by_file[p])[:config.boost_source_files]
    if not sources:
        return
    placeholders = ",".join("?" * len(sources))
    neighbours: dict[str, float] = {}
    # Two indexed lookups (files.path, imports.target): an OR of the two would
    # scan every import row (18k on django, ~6 ms a query).
    for src, dst in conn.execute(
            f"SELECT f.path, i.target FROM files f JOIN imports i ON i.file_id = f.id "
            f"WHERE f.path IN ({placeholders}) AND i.target IS NOT NULL UNION ALL "
            f"SELECT f.path, i.target FROM imports i JOIN files f ON f.id = i.file_id "
            f"WHERE i.target IN ({placeholders})", sources + sources):
        for near, far in ((src, dst), (dst, src)):
            if far in best_by_file and far in sources and near != far:
                neighbours[near] = max(neighbours.get(near, 0.0), best_by_file[far])
    for hit in hits:
        hit.features.imports = neighbours.get(hit.path, 0.0)
