"""Locate: from an issue text (a bug report, a stack trace) to the files to change.

One pipeline, each step a module of its own:

1. reading the text (:mod:`ctxls.index.locate_text`): frames, paths, module
   names, identifiers, messages, quoted strings, names registered as strings,
   prose;
2. the evidence (:mod:`ctxls.index.locate_signals`, written paths resolved by
   :mod:`ctxls.index.locate_paths`): every file some evidence points at is a
   candidate, with one signal in 0..1 per kind of evidence and the reasons
   behind them;
3. the repository's git history (:mod:`ctxls.index.locate_history`): how
   often, how often in fixes and how lately each candidate changed, read once
   per HEAD;
4. one fitted scorer over each candidate's feature record, and the selection
   (:mod:`ctxls.index.locate_scorer`): files, not chunks, best first, each with
   its largest feature contributions (``why``).
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from pathlib import Path

from ctxls.index.locate_history import History
from ctxls.index.locate_scorer import Contribution, Scorer, rank, shipped_scorer, text_terms
from ctxls.index.locate_signals import PLACED_CHUNK_SCORE, ChunkRef, FileEvidence, Reason, SignalConfig, Signals
from ctxls.index.model import line_end_character
from ctxls.index.ranking import RankingConfig
from ctxls.index.semantic import SemanticIndex

# A located file's largest feature contributions, at most this many.
WHY_SIZE = 5
# Its reasons (what in the text pointed at it), at most this many.
REASONS_SIZE = 6


@dataclass
class LocatedFile:
    path: str
    score: float
    signals: dict[str, float]
    reasons: list[Reason]
    chunks: list[ChunkRef]
    why: list[Contribution]


class Locator:
    """Ranks the indexed files of one store for an issue text; safe to share
    between threads."""

    def __init__(self, config: SignalConfig | None = None, ranking: RankingConfig | None = None,
                 root: Path | None = None, scorer: Scorer | None = None, history: bool = True):
        self.signals = Signals(config, ranking, root)
        self.scorer = scorer or shipped_scorer()
        # The git history of the repository ``root`` is in (none without a root).
        self.history = History(root if history else None)

    @property
    def config(self) -> SignalConfig:
        return self.signals.config

    def evidence(self, conn, text: str, semantic: SemanticIndex | None = None,
                 terms: frozenset[str] | None = None) -> dict[str, FileEvidence]:
        """Every candidate file with its signals and reasons (the raw part of
        its feature record); with a semantic index, ``semantic`` on the best
        files by the other signals. Each candidate's ``history`` holds its
        git-history features (locate_history.py; all 0 without a repository).
        ``terms``: the text's (``text_terms``), when the caller has them."""
        history = self.history.current()
        terms = text_terms(text) if terms is None else terms
        annotated: dict[str, dict[str, float]] = {}

        def best(files: dict[str, FileEvidence], n: int) -> list[str]:
            # Every candidate is in by now (``semantic`` adds none): annotated once.
            annotated.update(history.annotate(text, files))
            inputs = {p: ev.scorer_inputs() | annotated[p] for p, ev in files.items()}
            return [s.path for s in rank(self.scorer, inputs, n, terms=terms)]

        files = self.signals.evidence(conn, text, semantic, best)
        if annotated.keys() != files.keys():  # no semantic pass asked for the best files
            annotated = history.annotate(text, files)
        for path, features in annotated.items():
            files[path].history = features
        return files

    def locate(self, conn, text: str, n: int = 10, include_tests: bool = False,
               max_chunks: int = 3, semantic: SemanticIndex | None = None) -> list[LocatedFile]:
        terms = text_terms(text)
        files = self.evidence(conn, text, semantic, terms)
        ranked = rank(self.scorer, {p: ev.scorer_inputs() for p, ev in files.items()}, n,
                      include_tests, terms)
        out: list[LocatedFile] = []
        for scored in ranked:
            evidence = files[scored.path]
            why = self.scorer.contributions(scored.record)
            weight = {c.feature: c.contribution for c in why}
            chunks = sorted(evidence.chunks.items(), key=lambda kv: (-kv[1].score, kv[1].start_line))
            # The strongest evidence first (a frame's line names the chunk to show):
            # by the signal's value on the file, then its contribution (a ranking
            # ensemble's trees credit the strongest signal, not each signal).
            reasons = sorted(evidence.reasons, key=lambda r: (-evidence.signals.get(r.signal, 0.0),
                                                              -weight.get(r.signal, 0.0)))
            out.append(LocatedFile(scored.path, round(scored.score, 6),
                                   {s: round(v, 4) for s, v in evidence.signals.items()},
                                   reasons[:REASONS_SIZE], _with_end_characters(conn, chunks[:max_chunks]),
                                   [replace(c, value=round(c.value, 4), contribution=round(c.contribution, 4))
                                    for c in why[:WHY_SIZE]]))
        return out


def _with_end_characters(conn, chunks: list[tuple[int, ChunkRef]]) -> list[ChunkRef]:
    """Chunk refs with the length of their last line (the LSP range's end)."""
    if not chunks:
        return []
    ids = [cid for cid, _ in chunks]
    ends = dict(conn.execute(
        f"SELECT id, text FROM chunks WHERE id IN ({','.join('?' * len(ids))})", ids).fetchall())
    return [replace(ref, end_character=line_end_character(ends.get(cid, "").rsplit("\n", 1)[-1]),
                    score=round(ref.score, 6) if ref.score < PLACED_CHUNK_SCORE / 2 else 0.0)
            for cid, ref in chunks if cid in ends]
