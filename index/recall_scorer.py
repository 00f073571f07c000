"""Recall's scorer and selection: a candidate's score from its feature record.

:meth:`RecallScorer.score` is the whole formula, read top to bottom::

    relevance = dense_weight · cosine + (1 − dense_weight) · bm25
              + import_boost · imports
              + definition_unit · definition · (home_share if home)
              + file_name_unit · file_name / query words
    score     = (relevance + coherence_unit · coherence / top coherence)
              · Π path penalties
              + file_text_unit · file_text

where every ``*_unit`` is a share (``PriorConfig``) of the query's ``scale``:
the best relevance among the text candidates before any boost, so the
boosts weigh the same whatever BM25's scale. :meth:`RecallScorer.contributions`
splits a score into what each feature added, in that order (a penalty's
share is what it took from the score so far), with selection's changes
last; they sum to the score. The selection (:func:`select`) then places
module residue after its file's code, lists a long definition once, and
lowers each further hit of a file already listed (per-file saturation).

The constants were chosen on the multi-language dev set (bench/codesearch.py,
docs/decisions.md, "Chunk packing and ranking priors"); docs/architecture.md lists them.
"""

from __future__ import annotations

import heapq
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from ctxls.index.postings import NO_QUERY_WORDS_BM25
from ctxls.index.query import QueryShape

if TYPE_CHECKING:
    from ctxls.index.ranking import ScoredChunk
    from ctxls.index.recall_features import RecallFeatures


@dataclass(frozen=True)
class PriorConfig:
    # Multiplicative path penalties (1.0 = off).
    # (Compatibility copies' 0.3 and a 1-2-line chunk's 0.5 were retired:
    # turned off, neither lost 0.002 anywhere; docs/architecture.md,
    # "Recall's remaining constants", lists what each constant here is worth.)
    test_penalty: float = 0.3
    # Samples and examples (`samples/MediatR.Examples/`): retired on sets
    # whose trees had none, back when a whole repository's showed what it is
    # worth (codesearch_lang's mediatr 0.731 -> 0.826; docs/decisions.md,
    # "The example penalty restored").
    example_penalty: float = 0.3
    vendored_penalty: float = 0.3
    # Re-export barrels (`__init__.py`, `index.ts`, `mod.rs`): often only
    # re-exports, but Rust's `mod.rs` and many `__init__.py` hold real code,
    # which a header no longer outranks (module_after_code). 0.7 over 0.5:
    # files set 0.830 -> 0.831, set 4 by file test 0.849 -> 0.856 (1.0: the
    # files set loses 0.002, rayon 0.917 -> 0.905; docs/decisions.md, "Barrel files × 0.7").
    barrel_penalty: float = 0.7
    stub_penalty: float = 0.7
    # Localized message tables (zod's `locales/en.ts`, date libraries'
    # `locale/`): every message again in forty languages, a flood for any
    # question about messages or errors.
    locale_penalty: float = 0.5
    # Module residue (imports, a module's doc header, constants) names what
    # the file is about: it counts in full for its file's place, but within
    # the file the best code chunk is shown in its place (select).
    # A 0.7 penalty on it instead lost 0.008 on every file-scored set, held-out
    # projects included, and 0.002-0.005 by chunk (docs/decisions.md, "Module residue places its file").
    module_after_code: bool = True
    # Additive boosts, as shares of the query's scale (the best relevance).
    definition_boost: float = 3.0
    embedded_share: float = 0.5  # identifiers inside a sentence
    word_share: float = 0.5  # a one-word lower-case query: a word, or a name
    # A definition in a file named after the name asked (`session.py` for Session).
    home_share: float = 1.5
    file_name_boost: float = 0.5
    # Sentence queries: the whole file's BM25 (ranking.file_bm25), scaled to
    # the best candidate file's, added to each candidate file's best chunk
    # after the path priors (as a share of the best score then).
    file_text_boost: float = 0.2
    # Per-file saturation: hits of one file beyond the threshold-th are
    # multiplied by decay ** (count - threshold + 1), so the list names more
    # places. On the hand-written, file-scored set (eleven projects) 1 / 0.5
    # scores 0.770 / 0.787 lexical / hybrid against 0.749 / 0.765 for the
    # former 3 / 0.7; the generated set scored by chunk loses 0.044 (its
    # several-target queries often live in one file), by file it gains 0.005.
    # The independent evaluation scores files.
    saturation_threshold: int = 1
    saturation_decay: float = 0.5
    # File coherence: a file with several matching chunks is more likely the
    # place; its best chunk gains this share of the scale, times the file's
    # summed relevance against the top file's.
    coherence_boost: float = 0.5
    # Files named by a sentence query's words whose chunks join the candidates
    # even when the text match ranked none of them high (``BooleanUtils.java``
    # for "boolean conversion helpers"): at most this many files.
    named_files: int = 5
    # How many definitions of a named symbol are fetched from the symbol table.
    max_definitions: int = 20
    # The definition tier's share for a shorter namesake of the same symbol in
    # the same file (a TypeScript overload signature beside its implementation).
    signature_share: float = 0.5
    # A type named inside a sentence ("Returns whether the JoinSet is empty")
    # lends this share of its tier to its members' chunks (`JoinSet.is_empty`),
    # so the sentence's other words choose among the type and its methods; with
    # the type alone boosted, its definition outranked the method described
    # (set 4 by chunk, hybrid: dev 0.588 -> 0.598, test 0.626 -> 0.634).
    member_share: float = 1.0

    def penalties(self) -> dict[str, float]:
        """path class (recall_features' names) -> its factor."""
        return {"test": self.test_penalty, "example": self.example_penalty, "vendored": self.vendored_penalty,
                "stub": self.stub_penalty, "barrel": self.barrel_penalty,
                "locale": self.locale_penalty}


NO_PRIORS = PriorConfig(test_penalty=1.0, example_penalty=1.0, locale_penalty=1.0,
                        vendored_penalty=1.0, barrel_penalty=1.0, stub_penalty=1.0,
                        module_after_code=False, definition_boost=0.0,
                        file_name_boost=0.0, file_text_boost=0.0, coherence_boost=0.0, named_files=0,
                        saturation_decay=1.0)


class Contribution(NamedTuple):
    feature: str
    value: float  # the feature's value in the record
    contribution: float  # what it added to the score (negative: what it took)


def fuse(cosine: float, bm25: float, dense_weight: float) -> float:
    """The hybrid text score: the cosine's share and BM25's (both scaled by ranking.fusion_sides)."""
    return dense_weight * cosine + (1.0 - dense_weight) * bm25


# How many contributions a hit carries (`why`).
MAX_CONTRIBUTIONS = 5


class RecallScorer:
    """The score of a candidate from its RecallFeatures, for one query.

    ``dense_weight`` is the cosine's share (0: lexical, 1: cosine only). The
    boosts' scale is set once the text candidates are known (set_scale: their
    best relevance), the two place features' once their values are
    (recall_features.add_coherence, add_file_text). Each stage is asked once
    per candidate, the next given the last's value (ranking.rank_candidates)."""

    def __init__(self, config: PriorConfig, shape: QueryShape, dense_weight: float,
                 import_boost: float) -> None:
        self.config = config
        self.penalty = config.penalties()
        self.dense_weight = dense_weight
        self.import_boost = import_boost
        self.name_share = 1.0 if shape.symbol else config.word_share if shape.word else config.embedded_share
        self.query_words = len(shape.words) or 1
        # The units of the boosts, 0 until set_scale.
        self.definition_unit = self.file_name_unit = self.coherence_unit = 0.0
        self.coherence_top = 1.0
        self.file_text_top = self.file_text_unit = 0.0

    def set_scale(self, scale: float) -> None:
        """The boosts' unit: the best text relevance among the candidates."""
        self.definition_unit = scale * self.config.definition_boost * self.name_share
        self.file_name_unit = scale * self.config.file_name_boost
        self.coherence_unit = scale * self.config.coherence_boost

    def set_file_text_scale(self, top: float, best_score: float) -> None:
        """``top``: the best file_text value; ``best_score``: the best score before it."""
        self.file_text_top = top
        self.file_text_unit = self.config.file_text_boost * best_score / top if top > 0 else 0.0

    def _terms(self, f: "RecallFeatures") -> list[tuple[str, float, float]]:
        """(feature, value, term) of relevance and coherence, in the order
        relevance() and penalised() add them (the contributions' split
        of the same formula; tests/test_priors.py checks that they add up)."""
        w = self.dense_weight
        return [("cosine", f.cosine, w * f.cosine),
                ("bm25", f.bm25, (1.0 - w) * f.bm25),
                ("imports", f.imports, self.import_boost * f.imports),
                ("definition", f.definition,
                 self.definition_unit * f.definition * (self.config.home_share if f.home else 1.0)),
                ("file_name", f.file_name / self.query_words,
                 self.file_name_unit * f.file_name / self.query_words),
                ("coherence", f.coherence / self.coherence_top,
                 self.coherence_unit * f.coherence / self.coherence_top)]

    def relevance(self, f: "RecallFeatures") -> float:
        """The text match and the boosts of what the chunk is and where it lives."""
        return (fuse(f.cosine, f.bm25, self.dense_weight) + self.import_boost * f.imports
                + self.definition_unit * f.definition * (self.config.home_share if f.home else 1.0)
                + self.file_name_unit * f.file_name / self.query_words)

    def path_prior(self, f: "RecallFeatures") -> float:
        prior = 1.0
        for name in f.path_classes:
            prior *= self.penalty[name]
        return prior

    def penalised(self, f: "RecallFeatures", relevance: float) -> float:
        """``relevance`` (``relevance(f)``) with its file's coherence, times the
        path penalties."""
        return (relevance + self.coherence_unit * f.coherence / self.coherence_top) * self.path_prior(f)

    def score(self, f: "RecallFeatures", penalised: float) -> float:
        """The score: ``penalised`` (``penalised(f, relevance(f))``) and the whole file's text."""
        return penalised + self.file_text_unit * f.file_text

    def contributions(self, hit: "ScoredChunk") -> list[Contribution]:
        """What each feature added to ``hit.score`` (after selection), the
        largest MAX_CONTRIBUTIONS by magnitude; they sum to the score."""
        f = hit.features
        parts: list[Contribution] = []
        running = 0.0
        for name, value, term in self._terms(f):
            parts.append(Contribution(name, value, term))
            running += term
        for name, factor in [(name, self.penalty[name]) for name in f.path_classes]:
            parts.append(Contribution(name, 1.0, running * (factor - 1.0)))
            running *= factor
        text = self.file_text_unit * f.file_text
        parts.append(Contribution("file_text", f.file_text / self.file_text_top if self.file_text_top
                                  else 0.0, text))
        parts.append(Contribution("module_after_code", float(f.module), f.placed))
        placed = running + text + f.placed
        parts.append(Contribution("saturation", float(f.earlier_in_file),
                                  placed * (saturation(self.config, f.earlier_in_file) - 1.0)))
        return sorted((part for part in parts if part.contribution != 0.0),
                      key=lambda part: -abs(part.contribution))[:MAX_CONTRIBUTIONS]


# --- selection ---------------------------------------------------------------------------

def saturation(config: PriorConfig, earlier_in_file: int) -> float:
    """The factor of a hit with ``earlier_in_file`` hits of its file listed before it."""
    over = earlier_in_file - config.saturation_threshold + 1
    return config.saturation_decay ** over if over > 0 else 1.0


def select(hits: list["ScoredChunk"], n: int, config: PriorConfig) -> list["ScoredChunk"]:
    """The best ``n`` of scored ``hits``: module residue after its file's code,
    then the greedy top with per-file saturation."""
    if config.module_after_code:
        _module_after_code(hits)
    return _saturated_top(hits, n, config)


def _module_after_code(hits: list["ScoredChunk"]) -> None:
    """Within each file, its best code chunk takes the place of module residue
    that scored above it (the two swap scores): the header is evidence for
    the file, the code is what to show first."""
    best_module: dict[str, "ScoredChunk"] = {}
    best_code: dict[str, "ScoredChunk"] = {}
    for hit in hits:
        best = best_module if hit.features.module else best_code
        if hit.path not in best or hit.score > best[hit.path].score:
            best[hit.path] = hit
    for path, module in best_module.items():
        code = best_code.get(path)
        # A code chunk without the query's words never stands in for residue
        # that has them. Without: no BM25, or one of floored idfs only (the
        # words of half the file's chunks, `ranking._idf`), never exactly 0.
        if code is not None and code.features.bm25 < NO_QUERY_WORDS_BM25 <= module.features.bm25:
            continue
        if code is not None and module.score > code.score:
            module.features.placed = code.score - module.score
            code.features.placed = module.score - code.score
            module.score, code.score = code.score, module.score


def _long_definitions(hits: list["ScoredChunk"]) -> dict[int, int]:
    """id(hit) -> the first line of the run of overlapping hits of its file it
    belongs to. Chunks of one file overlap only when they are windows of one
    long definition (chunker.MAX_CHUNK_LINES), so a run is one definition."""
    run_of: dict[int, int] = {}
    run_start = run_end = -1
    path = None
    for hit in sorted(hits, key=lambda h: (h.path, h.start_line)):
        if hit.path != path or hit.start_line > run_end:
            path, run_start, run_end = hit.path, hit.start_line, hit.end_line
        run_end = max(run_end, hit.end_line)
        run_of[id(hit)] = run_start
    return run_of


def _saturated_top(hits: list["ScoredChunk"], n: int, config: PriorConfig) -> list["ScoredChunk"]:
    """Greedy top ``n`` with per-file saturation. Decay only lowers scores and
    candidates come in descending order, so once ``n`` are held a candidate
    that cannot beat the weakest ends the scan."""
    if n <= 0:
        return []
    definition = _long_definitions(hits)
    hits.sort(key=lambda h: (-h.score, h.path, h.start_line))
    taken: list["ScoredChunk"] = []
    listed: set[tuple[str, int]] = set()
    per_file: dict[str, int] = {}
    floor = float("-inf")
    # The best n scores taken (a min-heap): a taken score never changes, so
    # its least is the n-th best, the floor, without sorting all taken again.
    best_n: list[float] = []
    for hit in hits:
        if len(taken) >= n and hit.score < floor:
            break
        # A long definition's best window stands for it.
        if (hit.path, definition[id(hit)]) in listed:
            continue
        listed.add((hit.path, definition[id(hit)]))
        seen = per_file.get(hit.path, 0)
        if seen >= config.saturation_threshold:
            hit.score *= saturation(config, seen)
        hit.features.earlier_in_file = seen
        per_file[hit.path] = seen + 1
        taken.append(hit)
        if len(best_n) < n:
            heapq.heappush(best_n, hit.score)
        else:
            heapq.heappushpop(best_n, hit.score)
        if len(best_n) >= n:
            floor = best_n[0]
    taken.sort(key=lambda h: (-h.score, h.path, h.start_line))
    return taken[:n]
