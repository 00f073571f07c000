"""Lexical (BM25) ranking over the per-kind FTS5 tables.

Scores are FTS5's bm25 negated, so higher is better. Column weights favour a
match in the symbol name or path over one in the body; the optional import
boost lifts chunks whose file is one import hop from a top-ranked file.
BENCHMARKS.md records which of these helped on the retrieval set.
"""

from __future__ import annotations

import sqlite3
from dataclasses import dataclass

from ctxls.index.store import FTS_TABLE_BY_KIND
from ctxls.index.tokenize import fts_match_expression, query_terms


@dataclass(frozen=True)
class RankingConfig:
    symbol_weight: float = 1.0
    path_weight: float = 1.0
    body_weight: float = 1.0
    import_boost: float = 0.0
    # How many BM25 candidates the import boost may reorder.
    candidate_pool: int = 50
    # Files whose best hits lend a boost to their import neighbours.
    boost_source_files: int = 3


@dataclass
class ScoredChunk:
    chunk_id: int
    path: str
    kind: str
    language: str
    symbol: str | None
    start_line: int
    end_line: int
    score: float
    text: str


_CHUNK_COLUMNS = ("c.id, f.path, c.kind, c.language, c.symbol, c.start_line, c.end_line, c.text")


def lexical_search(conn: sqlite3.Connection, kind: str, query: str, n: int,
                   config: RankingConfig) -> list[ScoredChunk]:
    table = FTS_TABLE_BY_KIND.get(kind)
    terms = query_terms(query)
    if table is None or not terms or n <= 0:
        return []
    pool = max(n, config.candidate_pool) if config.import_boost else n
    ranked = conn.execute(
        f"SELECT rowid, -bm25({table}, ?, ?, ?) AS score FROM {table} "
        f"WHERE {table} MATCH ? ORDER BY score DESC LIMIT ?",
        (config.symbol_weight, config.path_weight, config.body_weight,
         fts_match_expression(terms), pool)).fetchall()
    if not ranked:
        return []
    scores = {row[0]: row[1] for row in ranked}
    placeholders = ",".join("?" * len(scores))
    rows = conn.execute(
        f"SELECT {_CHUNK_COLUMNS} FROM chunks c JOIN files f ON f.id = c.file_id "
        f"WHERE c.id IN ({placeholders})", list(scores)).fetchall()
    hits = [ScoredChunk(chunk_id=r[0], path=r[1], kind=r[2], language=r[3], symbol=r[4],
                        start_line=r[5], end_line=r[6], score=scores[r[0]], text=r[7])
            for r in rows]
    if config.import_boost:
        _apply_import_boost(conn, hits, config)
    # Ties break on path then line so equal scores always come back in one order.
    hits.sort(key=lambda h: (-h.score, h.path, h.start_line))
    return hits[:n]


def _apply_import_boost(conn: sqlite3.Connection, hits: list[ScoredChunk],
                        config: RankingConfig) -> None:
    best_by_file: dict[str, float] = {}
    for hit in hits:
        best_by_file[hit.path] = max(best_by_file.get(hit.path, 0.0), hit.score)
    sources = sorted(best_by_file, key=lambda p: -best_by_file[p])[:config.boost_source_files]
    if not sources:
        return
    placeholders = ",".join("?" * len(sources))
    neighbours: dict[str, float] = {}
    for src, dst in conn.execute(
            f"SELECT f.path, i.target FROM imports i JOIN files f ON f.id = i.file_id "
            f"WHERE i.target IS NOT NULL AND (f.path IN ({placeholders}) "
            f"OR i.target IN ({placeholders}))", sources + sources):
        for near, far in ((src, dst), (dst, src)):
            if far in best_by_file and far in sources and near != far:
                neighbours[near] = max(neighbours.get(near, 0.0), best_by_file[far])
    for hit in hits:
        if hit.path in neighbours:
            hit.score += config.import_boost * neighbours[hit.path]
