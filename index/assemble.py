"""Token-budgeted context assembly with citations.

Given ranked hits (with bodies), pack whole chunks best-first under numbered
headers until the budget is full. A chunk is never cut: one that does not fit
is skipped and a smaller, lower-ranked one may still fit. Chunks of one file
that touch or overlap are merged into one block (one citation), duplicates
are dropped. The same hits and budget always give the same bytes: ordering
breaks ties on path and line, and nothing time-dependent enters the context.
"""

from __future__ import annotations

import json
import math
from dataclasses import dataclass, field, replace
from typing import Callable, Iterable, Protocol

from ctxls.index.cancel import check_cancelled
from ctxls.index.model import MAX_ANSWER_BODY_BYTES, content_hash

# Without the embedding tokenizer: about four bytes of UTF-8 per token, rounded up.
ESTIMATE_BYTES_PER_TOKEN = 4
ESTIMATE_NAME = "estimate:utf8-bytes/4"


class TokenCounter(Protocol):
    name: str

    def count(self, text: str) -> int: ...

    def count_many(self, texts: list[str]) -> list[int]: ...


class ByteEstimate:
    name = ESTIMATE_NAME

    def count(self, text: str) -> int:
        return math.ceil(len(text.encode("utf-8")) / ESTIMATE_BYTES_PER_TOKEN)

    def count_many(self, texts: list[str]) -> list[int]:
        return [self.count(t) for t in texts]


class TokenizerCounter:
    """Counts with a tokenizers.Tokenizer (no truncation, no special tokens).
    Whole files are counted on every call for the savings figure: large texts'
    counts are cached by content hash, and misses are encoded in one batch
    (the tokenizer spreads a batch over the cores, without the GIL)."""

    CACHED_ABOVE_CHARS = 4096
    CACHE_SIZE = 4096  # counts of large texts (django has ~3.5k files)

    def __init__(self, tokenizer, name: str):
        self._tokenizer = tokenizer
        self.name = name
        self._cache: dict[str, int] = {}

    def count_many(self, texts: list[str]) -> list[int]:
        counts: list[int | None] = [None] * len(texts)
        keys: dict[int, str] = {}
        for i, text in enumerate(texts):
            if len(text) >= self.CACHED_ABOVE_CHARS:
                keys[i] = content_hash(text)
                counts[i] = self._cache.get(keys[i])
        misses = [i for i, count in enumerate(counts) if count is None]
        if misses:
            encodings = self._tokenizer.encode_batch([texts[i] for i in misses],
                                                     add_special_tokens=False)
            for i, encoding in zip(misses, encodings):
                counts[i] = len(encoding.ids)
                if i in keys:
                    if len(self._cache) >= self.CACHE_SIZE:
                        self._cache.pop(next(iter(self._cache)))
                    self._cache[keys[i]] = counts[i]
        return counts

    def count(self, text: str) -> int:
        return self.count_many([text])[0]


@dataclass(frozen=True)
class Topicality:
    """Whether a repository is about a question at all (``Engine.topicality``)."""

    # Share of the query's terms found anywhere in code and docs (or in one
    # written memory recalled, where higher: ``with_written``).
    term_coverage: float
    nearest_cosine: float | None  # the nearest vector's cosine; None without vectors
    model: str | None = None  # the embedding model the cosine is in


@dataclass(frozen=True)
class OffTopicThresholds:
    """A question is off-topic when nothing in the repository is near it in
    meaning (``min_cosine``), or when under ``min_coverage`` of its words occur
    anywhere and what is nearest is only loosely related (``coverage_cosine``)."""

    min_cosine: float
    min_coverage: float
    coverage_cosine: float


# Per embedding model, since cosine scales differ between models; calibrated by
# bench/abstain.py (docs/decisions.md, "Off-topic thresholds per model"). A
# model without an entry (a user's own ONNX model) is judged by the words alone.
OFF_TOPIC_THRESHOLDS: dict[str, OffTopicThresholds] = {
    # requests and flask docstring dev queries only (on-topic cosine p5 0.36,
    # median 0.54; off-topic median 0.18, p95 0.29): the opt-in general model.
    "all-MiniLM-L6-v2-int8": OffTopicThresholds(0.2, 0.67, 0.36),
    # docstring and multi-language dev sets: held out 1.0% on-topic abstained,
    # 94% off-topic (on-topic cosine p5 0.38, median 0.57; off-topic median 0.27).
    "ctxls-code-static-256": OffTopicThresholds(0.3, 0.67, 0.64),
    # The same sets: held out 0.0% on-topic abstained, 98.6% off-topic (on-topic
    # cosine p5 0.42, median 0.60; off-topic median 0.22).
    "ctxls-code-minilm-int8": OffTopicThresholds(0.3, 0.67, 0.6),
}


def with_written(topicality: Topicality, hits: Iterable) -> Topicality:
    """``topicality`` counting the written memory among ``hits`` (recall's
    ``engine.Hit``s: facts, episodes, documents) as the repository's own: a
    fact that answers the question makes it on topic (2026-12-07: only code
    and docs were measured, so assemble abstained "off-topic" beside the
    fact). The share of the query's words is the best row's where that is
    higher; its cosine counts where it is in the same model as the files'."""
    evidence = [h.evidence for h in hits
                if h.uri is None and h.evidence is not None and h.evidence.source == "memory"]
    coverage = max([topicality.term_coverage, *(e.coverage for e in evidence if e.coverage is not None)])
    cosine = topicality.nearest_cosine
    if cosine is not None:
        cosine = max([cosine, *(e.cosine for e in evidence
                                if e.cosine is not None and e.model == topicality.model)])
    return replace(topicality, term_coverage=coverage, nearest_cosine=cosine)


def off_topic(topicality: Topicality, thresholds: OffTopicThresholds | None = None) -> str | None:
    """Why the repository looks unrelated to the question, or None; the
    thresholds are the topicality's model's unless given (calibration)."""
    cosine, coverage = topicality.nearest_cosine, topicality.term_coverage
    if thresholds is None and topicality.model is not None:
        thresholds = OFF_TOPIC_THRESHOLDS.get(topicality.model)
    if cosine is None or thresholds is None:  # keywords only: abstain when none of the words occur
        return "none of the question's words occur in this repository" if coverage == 0 else None
    if cosine < thresholds.min_cosine:
        return f"nothing in this repository is close in meaning (best cosine {cosine:.2f})"
    if coverage < thresholds.min_coverage and cosine < thresholds.coverage_cosine:
        return (f"most of the question's words occur nowhere here ({coverage:.0%} do) and the "
                f"closest match is loose (cosine {cosine:.2f})")
    return None


@dataclass(frozen=True)
class Candidate:
    """One ranked hit with its text (a file chunk or a written memory)."""

    path: str
    kind: str
    symbol: str | None
    start_line: int
    end_line: int
    score: float
    text: str
    is_file: bool
    # P(relevant) (recall_calibration): the packing order, comparable across
    # kinds, sources and folders where ``score`` is not.
    calibrated: float = 0.0
    # The hit's cosine (its `why`), else its score: what a semantic minScore
    # compares, since the scorer adds its boosts to the cosine.
    cosine: float | None = None


def candidates_from_hits(hits_by_kind: dict) -> list[Candidate]:
    """Recall hits (``engine.Hit``, recalled with bodies) as packing
    candidates. A written row's text is read only while the texts read stay
    within MAX_ANSWER_BODY_BYTES; a row too long for what is left is left out
    unread (no budget packs that much)."""
    left = MAX_ANSWER_BODY_BYTES
    out = []
    for hits in hits_by_kind.values():
        for h in hits:
            body = h.body
            if body is None and h.read_body is not None:
                body = h.read_body(left)
                if body is None:
                    continue
                left -= len(body.encode("utf-8", "surrogatepass"))
            cosine = next((c.value for c in h.why or () if c.feature == "cosine"), None)
            out.append(Candidate(h.path, h.kind, h.symbol, h.start_line, h.end_line, h.score,
                                 body or "", h.uri is not None, h.calibrated, cosine))
    return out


@dataclass
class Block:
    path: str
    kind: str
    symbol: str | None
    start_line: int
    end_line: int
    score: float
    lines: dict[int, str]
    is_file: bool
    calibrated: float = 0.0

    @property
    def text(self) -> str:
        return "\n".join(self.lines[i] for i in sorted(self.lines))

    def header(self, n: int) -> str:
        if not self.is_file:
            return f"[{n}] {self.kind} {self.path}"
        # 1-based and inclusive, like `path:line` in compilers and grep.
        where = f"{self.path}:{self.start_line + 1}-{self.end_line + 1}"
        return f"[{n}] {where} {self.symbol}" if self.symbol else f"[{n}] {where}"


@dataclass(frozen=True)
class AssembleStats:
    """What an assembly cost and saved, in tokens of ``tokenizer``: the
    context (``reduced_tokens``) against the whole files and memories its
    blocks came from (``original_tokens``)."""

    tokenizer: str
    original_tokens: int = 0
    reduced_tokens: int = 0
    chunks: int = 0
    failover: bool = False  # the retrieval path failed (``error`` says how)
    error: str | None = None

    @property
    def saved_tokens(self) -> int:
        return max(self.original_tokens - self.reduced_tokens, 0)

    @property
    def pct_reduced(self) -> float:
        return round(100.0 * self.saved_tokens / self.original_tokens, 2) if self.original_tokens else 0.0


@dataclass
class Assembled:
    """The context and its blocks (block n is cited as [n])."""

    context: str
    stats: AssembleStats
    weak: bool
    abstained: bool
    note: str | None = None
    blocks: list[Block] = field(default_factory=list)


def _block(candidate: Candidate) -> Block:
    lines = candidate.text.split("\n")
    return Block(candidate.path, candidate.kind, candidate.symbol, candidate.start_line,
                 candidate.start_line + len(lines) - 1, candidate.score,
                 {candidate.start_line + i: line for i, line in enumerate(lines)}, candidate.is_file,
                 candidate.calibrated)


def _merge_into(blocks: list[Block], candidate: Candidate) -> list[Block]:
    """Blocks with ``candidate`` added: merged into a block of the same file
    it touches or overlaps, else appended."""
    new = _block(candidate)
    out: list[Block] = []
    for block in blocks:
        touches = (block.is_file and new.is_file and block.path == new.path
                   and block.start_line <= new.end_line + 1 and new.start_line <= block.end_line + 1)
        if touches:
            merged_lines = dict(new.lines)
            merged_lines.update(block.lines)
            symbol = block.symbol if block.symbol == new.symbol else None
            new = Block(block.path, block.kind, symbol, min(block.start_line, new.start_line),
                        max(block.end_line, new.end_line), max(block.score, new.score),
                        merged_lines, True, max(block.calibrated, new.calibrated))
        else:
            out.append(block)
    out.append(new)
    out.sort(key=lambda b: (-b.calibrated, -b.score, b.path, b.start_line))
    return out


def render(blocks: list[Block]) -> str:
    return "\n\n".join(f"{block.header(n)}\n{block.text}" for n, block in enumerate(blocks, 1))


def _cost_text(block: Block) -> str:
    """Counted for an upper bound of what ``block`` adds to the rendered
    context: its header (with the widest citation number) and lines, plus a
    separator."""
    return f"{block.header(999)}\n{block.text}\n\n"


def pack(candidates: list[Candidate], budget_tokens: int, counter: TokenCounter) -> list[Block]:
    """Whole chunks best-first while the rendered context fits the budget.

    Each block is counted once (blocks are costed separately and the sum is
    an upper bound, since the separators are whitespace), so packing costs
    one count per candidate, not one per candidate per block."""
    ordered = sorted(candidates, key=lambda c: (-c.calibrated, -c.score, c.path, c.start_line))
    standalone = dict(zip((id(c) for c in ordered), counter.count_many(
        [_cost_text(_block(c)) for c in ordered])))
    blocks: list[Block] = []
    costs: dict[int, int] = {}
    seen_spans: set[tuple] = set()
    seen_texts: set[str] = set()
    for candidate in ordered:
        check_cancelled()
        span = (candidate.path, candidate.start_line, candidate.end_line)
        digest = content_hash(candidate.text)
        if span in seen_spans or digest in seen_texts:
            continue
        if standalone[id(candidate)] > budget_tokens:
            continue  # merging only adds lines: it cannot fit either
        trial = _merge_into(blocks, candidate)
        trial_costs = {}
        for block in trial:
            if id(block) in costs:
                trial_costs[id(block)] = costs[id(block)]
            elif block.start_line == candidate.start_line and block.end_line == candidate.end_line:
                trial_costs[id(block)] = standalone[id(candidate)]  # not merged: counted already
            else:
                trial_costs[id(block)] = counter.count(_cost_text(block))
        if sum(trial_costs.values()) <= budget_tokens:
            blocks, costs = trial, trial_costs
            seen_spans.add(span)
            seen_texts.add(digest)
    # The bound holds for whitespace-splitting tokenizers; check the real text anyway.
    while blocks and counter.count(render(blocks)) > budget_tokens:
        blocks = blocks[:-1]
    return blocks


def assemble(candidates: list[Candidate], budget_tokens: int, min_score: float | None,
             counter: TokenCounter, whole_text: Callable[[Candidate], str | None],
             off_topic_note: str | None = None, by_cosine: bool = False) -> Assembled:
    """``whole_text`` gives the full file (or memory) a candidate came from,
    for the savings figure; ``off_topic_note`` (from :func:`off_topic`) makes
    it abstain; ``by_cosine`` (semantic mode): ``min_score`` is a floor on the
    best hit's cosine, as documented, not on its score."""
    top = max(((c.cosine if by_cosine and c.cosine is not None else c.score) for c in candidates),
              default=None)
    if top is None or (min_score is not None and top < min_score) or off_topic_note:
        if top is None:
            note = "no hits"
        elif off_topic_note:
            note = f"off-topic: {off_topic_note}"
        else:
            note = f"top {'cosine' if by_cosine else 'score'} {top:.4g} is under minScore {min_score}"
        return Assembled("", AssembleStats(counter.name), weak=True, abstained=True, note=note)
    blocks = pack(candidates, budget_tokens, counter)
    context = render(blocks)
    sources: dict[tuple[str, bool], Candidate] = {}
    for block in blocks:
        source = next(c for c in candidates if c.path == block.path and c.is_file == block.is_file)
        sources.setdefault((block.path, block.is_file), source)
    whole = [whole_text(source) for source in sources.values()]
    original = sum(counter.count_many([text if text is not None else source.text
                                       for text, source in zip(whole, sources.values())]))
    reduced = counter.count(context) if context else 0
    weak = len(candidates) < 2
    note = "only one relevant chunk was found: coverage may be thin" if weak else None
    if not blocks:
        note = f"no hit fits in {budget_tokens} tokens"
    return Assembled(context, AssembleStats(counter.name, original, reduced, len(blocks)),
                     weak=weak or not blocks, abstained=False, note=note, blocks=blocks)


def failed(counter_name: str, error: Exception) -> Assembled:
    """The retrieval path itself failed: say so, answer nothing, never crash."""
    return Assembled("", AssembleStats(counter_name, failover=True, error=f"{type(error).__name__}: {error}"),
                     weak=True, abstained=True, note="retrieval failed")


# -- per-daemon aggregate, persisted in the store's meta table ---------------------

RECENT_CALLS_KEPT = 20
_AGGREGATE_KEY = "assemble.aggregate"
# The aggregate's names as the store's meta row spells them. It is data at
# rest: a store is opened by older and newer ctxls alike, so the stored names
# never change (tests/test_layers.py permits them here, and only here).
STORED_AGGREGATE_NAMES = {"saved_tokens": "savedTokens", "budget_tokens": "budgetTokens",
                          "reduced_tokens": "reducedTokens"}
_PYTHON_AGGREGATE_NAMES = {stored: name for name, stored in STORED_AGGREGATE_NAMES.items()}


def record_call(store, result: Assembled, budget_tokens: int, now_ms: int) -> None:
    """Add one call to the aggregate (it survives restarts)."""
    with store.write() as conn:
        row = conn.execute("SELECT value FROM meta WHERE key = ?", (_AGGREGATE_KEY,)).fetchone()
        aggregate = _renamed(json.loads(row[0]), _PYTHON_AGGREGATE_NAMES) if row else _empty_aggregate()
        aggregate["calls"] += 1
        aggregate["abstentions"] += int(result.abstained)
        aggregate["failovers"] += int(result.stats.failover)
        aggregate["saved_tokens"] += result.stats.saved_tokens
        aggregate["recent"] = ([{"at": now_ms, "budget_tokens": budget_tokens,
                                 "reduced_tokens": result.stats.reduced_tokens,
                                 "saved_tokens": result.stats.saved_tokens,
                                 "chunks": result.stats.chunks, "weak": result.weak,
                                 "abstained": result.abstained,
                                 "failover": result.stats.failover}]
                               + aggregate["recent"])[:RECENT_CALLS_KEPT]
        conn.execute("INSERT INTO meta(key, value) VALUES (?, ?) "
                     "ON CONFLICT(key) DO UPDATE SET value = excluded.value",
                     (_AGGREGATE_KEY, json.dumps(_renamed(aggregate, STORED_AGGREGATE_NAMES))))


def aggregate(store) -> dict:
    """Calls, abstentions, failovers and tokens saved since the store was
    made, and the last RECENT_CALLS_KEPT calls (Python names)."""
    row = store.reader().execute("SELECT value FROM meta WHERE key = ?",
                                 (_AGGREGATE_KEY,)).fetchone()
    return _renamed(json.loads(row[0]), _PYTHON_AGGREGATE_NAMES) if row else _empty_aggregate()


def _renamed(value, names: dict[str, str]):
    """``value`` with every dict key in ``names`` renamed, at any depth."""
    if isinstance(value, dict):
        return {names.get(key, key): _renamed(item, names) for key, item in value.items()}
    if isinstance(value, list):
        return [_renamed(item, names) for item in value]
    return value


def _empty_aggregate() -> dict:
    return {"calls": 0, "abstentions": 0, "failovers": 0, "saved_tokens": 0, "recent": []}
