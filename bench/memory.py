"""Written memory (issue 5): recall quality and latency. Not run in CI.

    .venv/bin/python bench/memory.py                   # quality, then latency with 100k facts
    .venv/bin/python bench/memory.py --skip-latency    # quality only (about 30 s)
    .venv/bin/python bench/memory.py --embed-latency   # also hybrid latency at 100k (embeds
                                                       # every fact: ~20 min on 2 cores)

* Quality: :data:`FACTS` (30 facts, 12 episodes) and :data:`QUERIES`, 60
  queries in three groups of 20: ``exact`` (a verbatim phrase of the target),
  ``morph`` (the target's content words, inflected differently) and
  ``paraphrase`` (no content word in common with the target, checked below
  with the store's own stemming). Each query is recalled with
  ``Engine.recall(query, [target kind], 3)`` (memory is ranked only against its
  own kind) in an empty workspace; P@1 / P@3 per group with embeddings off
  (BM25) and on (hybrid, the daemon's default mode; semantic-only for scale).
* Latency: N synthetic facts (template sentences over a 1,200-word vocabulary,
  so terms have realistic document frequencies) plus the quality set, written
  through ``Memory.remember`` into one store with two tenants; then 1,000 more
  remembers, and recalls of facts and episodes (scope = one tenant, n = 10,
  5 rounds) for the 60 quality queries and for 60 three-word queries drawn
  from the synthetic vocabulary (its common words match thousands of rows),
  are timed one by one. With ``--embed-latency`` every fact is embedded and
  hybrid recall is timed too, with distinct query strings so the query-vector
  cache never answers.
"""

from __future__ import annotations

import argparse
import json
import random
import sqlite3
import statistics
import sys
import tempfile
import time
from pathlib import Path

from ctxls.index.engine import Engine, EngineOptions
from ctxls.index.scopes import EVERYTHING, named_scope
from ctxls.index.tokenize import expand, fts_match_expression, query_terms

FACTS: dict[str, tuple[str, str]] = {  # id -> (kind, text)
    "f01": ("fact", "The deploy fails when FOO_URL is unset"),
    "f02": ("fact", "Postgres snapshots are taken every night at 2am"),
    "f03": ("fact", "Pager duty rotates every Monday morning"),
    "f04": ("fact", "Uploads are retried three times with exponential backoff"),
    "f05": ("fact", "Configuration lives in settings.toml next to the binary"),
    "f06": ("fact", "The build cache is flushed when the lockfile changes"),
    "f07": ("fact", "Staging uses a smaller Redis instance than production"),
    "f08": ("fact", "Feature flags are stored in LaunchDarkly, not in the database"),
    "f09": ("fact", "The payments service must never log full card numbers"),
    "f10": ("fact", "Integration tests need Docker running locally"),
    "f11": ("fact", "Release branches are cut every second Thursday"),
    "f12": ("fact", "The search index is rebuilt from scratch each weekend"),
    "f13": ("fact", "API tokens expire after ninety days"),
    "f14": ("fact", "Mobile clients cache images for one week"),
    "f15": ("fact", "The legacy billing module is written in Perl"),
    "f16": ("fact", "Customer emails are sent through SendGrid"),
    "f17": ("fact", "Only the platform team may approve schema migrations"),
    "f18": ("fact", "Load balancer health checks hit the /healthz endpoint"),
    "f19": ("fact", "The frontend is bundled with Vite and served from a CDN"),
    "f20": ("fact", "Logs are retained for thirty days in Elasticsearch"),
    "f21": ("fact", "The nightly ETL job imports orders from the warehouse"),
    "f22": ("fact", "Translations are managed in Crowdin by the localization team"),
    "f23": ("fact", "Rate limiting allows one hundred requests per minute per user"),
    "f24": ("fact", "The admin dashboard requires a VPN connection"),
    "f25": ("fact", "Kubernetes pods are autoscaled on CPU usage"),
    "f26": ("fact", "Passwords are hashed with bcrypt using cost twelve"),
    "f27": ("fact", "Monitoring alerts are routed to the ops Slack channel"),
    "f28": ("fact", "The iOS app is signed with the enterprise certificate"),
    "f29": ("fact", "Database connections are pooled with PgBouncer"),
    "f30": ("fact", "Invoices are generated on the first day of each month"),
    "e01": ("episode", "Rolled back release 4.2 after checkout errors spiked"),
    "e02": ("episode", "Migrated the user table to a new primary key type"),
    "e03": ("episode", "Debugged a memory leak in the image resizing worker"),
    "e04": ("episode", "Upgraded the TLS certificates on the public gateway"),
    "e05": ("episode", "Paired with Sam on flaky end-to-end tests"),
    "e06": ("episode", "Reviewed the pull request that adds dark mode"),
    "e07": ("episode", "Cleaned up unused Terraform modules in the infra repo"),
    "e08": ("episode", "Investigated slow queries on the reporting replica"),
    "e09": ("episode", "Wrote a postmortem for Tuesday's outage"),
    "e10": ("episode", "Tuned garbage collection settings for the JVM services"),
    "e11": ("episode", "Benchmarked the new JSON parser against the old one"),
    "e12": ("episode", "Rotated the leaked AWS access keys"),
}

QUERIES: dict[str, list[tuple[str, str]]] = {  # group -> [(query, target id)]
    "exact": [
        ("deploy fails when FOO_URL is unset", "f01"),
        ("Postgres snapshots are taken every night", "f02"),
        ("uploads are retried three times", "f04"),
        ("build cache is flushed when the lockfile changes", "f06"),
        ("Redis instance", "f07"),
        ("feature flags are stored in LaunchDarkly", "f08"),
        ("integration tests need Docker", "f10"),
        ("search index is rebuilt from scratch", "f12"),
        ("mobile clients cache images", "f14"),
        ("legacy billing module", "f15"),
        ("approve schema migrations", "f17"),
        ("health checks hit the /healthz endpoint", "f18"),
        ("nightly ETL job imports orders", "f21"),
        ("admin dashboard requires a VPN", "f24"),
        ("passwords are hashed with bcrypt", "f26"),
        ("signed with the enterprise certificate", "f28"),
        ("database connections are pooled with PgBouncer", "f29"),
        ("memory leak in the image resizing worker", "e03"),
        ("unused Terraform modules", "e07"),
        ("garbage collection settings for the JVM", "e10"),
    ],
    "morph": [
        ("deploys failing when FOO_URL unset", "f01"),
        ("postgres snapshotting every night", "f02"),
        ("retrying upload", "f04"),
        ("configured setting", "f05"),
        ("flushing build caches", "f06"),
        ("feature flag storing", "f08"),
        ("payment services logging card number", "f09"),
        ("integration testing", "f10"),
        ("releasing branch cutting", "f11"),
        ("rebuilding search indexes", "f12"),
        ("expiring api token", "f13"),
        ("emailing customers through sendgrid", "f16"),
        ("approving schema migration", "f17"),
        ("load balancing health checking", "f18"),
        ("retaining log", "f20"),
        ("translating with crowdin", "f22"),
        ("limiting request rates", "f23"),
        ("rolling back releases after checkout error spikes", "e01"),
        ("migrating user tables", "e02"),
        ("investigating slow query", "e08"),
    ],
    "paraphrase": [
        ("release breaks without that environment variable", "f01"),
        ("database copies overnight", "f02"),
        ("the person handling emergencies switches weekly", "f03"),
        ("failed file transfers get attempted again with growing delays", "f04"),
        ("where are the app's options kept", "f05"),
        ("the test environment gets a tinier in-memory cache server", "f07"),
        ("toggles for unreleased functionality live in a third-party tool", "f08"),
        ("the billing backend should keep credit details out of its diagnostics", "f09"),
        ("end to end suites require containers on your machine", "f10"),
        ("the lookup catalog is regenerated completely on saturdays", "f12"),
        ("credentials for the programming interface lapse within three months", "f13"),
        ("outbound mail to buyers goes via a third-party provider", "f16"),
        ("the browser code is compiled by a fast build tool and delivered from edge caches", "f19"),
        ("the back-office console is only reachable over a private tunnel", "f24"),
        ("user secrets are stored with a slow salted algorithm", "f26"),
        ("pages from the observability stack go to a chat room for operators", "f27"),
        ("we undid the latest version because purchases started failing", "e01"),
        ("worked together with a colleague on unreliable browser automation", "e05"),
        ("authored an incident review for the downtime", "e09"),
        ("replaced the exposed cloud credentials", "e12"),
    ],
}


def check_query_set() -> None:
    """Each group is what it claims: exact queries are verbatim, morphological
    ones are not but share stems, paraphrases share no stemmed content word
    with their target (checked with the memory FTS tokenizer itself)."""
    assert len(FACTS) >= 40 and all(len(qs) == 20 for qs in QUERIES.values())
    conn = sqlite3.connect(":memory:")
    conn.execute("CREATE VIRTUAL TABLE t USING fts5(body, "
                 "tokenize = \"porter unicode61 tokenchars '_'\")")

    def shares_stem(query: str, text: str) -> bool:
        conn.execute("DELETE FROM t")
        conn.execute("INSERT INTO t(body) VALUES (?)", (expand(text),))
        terms = query_terms(query)
        return bool(terms) and conn.execute("SELECT count(*) FROM t WHERE t MATCH ?",
                                            (fts_match_expression(terms),)).fetchone()[0] > 0

    for group, queries in QUERIES.items():
        for query, target in queries:
            text = FACTS[target][1]
            verbatim = query.lower() in text.lower()
            assert verbatim == (group == "exact"), (group, query)
            assert shares_stem(query, text) == (group != "paraphrase"), (group, query)


def quality(embeddings: bool) -> dict[str, dict[str, dict[str, float]]]:
    """group -> mode -> {"p1", "p3"}."""
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Path(tmp), EngineOptions(embeddings=embeddings))
        for key, (kind, text) in FACTS.items():
            engine.memory.remember(EVERYTHING, key, text, kind=kind)
        engine.embed_pending()
        modes = ("hybrid", "semantic") if embeddings else ("lexical",)
        results: dict[str, dict[str, dict[str, float]]] = {}
        misses: list[str] = []
        for group, queries in QUERIES.items():
            for mode in modes:
                p1 = p3 = 0
                for query, target in queries:
                    kind = FACTS[target][0]
                    hits = engine.recall(query, [kind], 3, mode=mode).hits_by_kind[kind]
                    top = [h.path for h in hits]
                    p1 += top[:1] == [target]
                    p3 += target in top
                    if target not in top and mode != "semantic":
                        misses.append(f"{mode}/{group}: {query!r} -> {top} (want {target})")
                results.setdefault(group, {})[mode] = {"p1": p1 / len(queries), "p3": p3 / len(queries)}
        engine.close()
    for miss in misses:
        print("  miss", miss, file=sys.stderr)
    return results


# -- latency ---------------------------------------------------------------------

def _vocabulary(size: int = 5000) -> tuple[list[str], list[float]]:
    """Pronounceable words (syllables joined, so the stemmer sees word-like
    tokens) with the Zipf weights of content words, 1 / (rank + 50): the head
    that stopwords take in real text is left out, so the commonest word is in
    about 2 % of the facts, as a word like "deploy" might be in real notes."""
    rng = random.Random(1)
    onsets, vowels, codas = "b c d f g h k l m n p r s t v w z".split(), "a e i o u".split(), [
        "", "n", "r", "s", "t", "l"]
    words: set[str] = set()
    while len(words) < size:
        words.add("".join(rng.choice(onsets) + rng.choice(vowels) + rng.choice(codas)
                          for _ in range(rng.randint(2, 3))))
    return sorted(words), [1.0 / (rank + 50) for rank in range(size)]


def synthetic_facts(n: int, seed: int = 5) -> list[str]:
    """Sentences of 6 to 10 vocabulary words."""
    rng = random.Random(seed)
    words, weights = _vocabulary()
    return [" ".join(rng.choices(words, weights, k=rng.randint(6, 10))).capitalize()
            for _ in range(n)]


def synthetic_queries(n: int, seed: int = 7) -> list[str]:
    """Three words of the synthetic vocabulary: common ones match thousands of rows."""
    rng = random.Random(seed)
    words, weights = _vocabulary()
    return [" ".join(rng.choices(words, weights, k=3)) for _ in range(n)]


def _percentiles(samples_ms: list[float]) -> dict[str, float]:
    ordered = sorted(samples_ms)
    return {"p50": round(statistics.median(ordered), 2),
            "p95": round(ordered[int(len(ordered) * 0.95) - 1], 2),
            "max": round(ordered[-1], 2), "n": len(ordered)}


def latency(n_facts: int, embed: bool) -> dict:
    with tempfile.TemporaryDirectory() as tmp:
        engine = Engine(Path(tmp), EngineOptions(embeddings=embed))
        alice, bob = named_scope("alice"), named_scope("bob")
        started = time.perf_counter()
        for i, text in enumerate(synthetic_facts(n_facts)):
            engine.memory.remember(alice if i % 2 else bob, f"s{i:06}", text)
        for key, (kind, text) in FACTS.items():
            engine.memory.remember(alice, key, text, kind=kind)
        load_s = time.perf_counter() - started
        out: dict = {"facts": engine.memory.count(EVERYTHING), "load_seconds": round(load_s, 1)}
        if embed:
            started = time.perf_counter()
            engine.embed_pending()
            out["embed_seconds"] = round(time.perf_counter() - started, 1)

        remember_ms = []
        for i, text in enumerate(synthetic_facts(1000, seed=9)):
            t = time.perf_counter()
            engine.memory.remember(alice, f"late{i:04}", text)
            remember_ms.append((time.perf_counter() - t) * 1000)
        out["remember"] = _percentiles(remember_ms)

        words, weights = _vocabulary()
        commonest = words[max(range(len(words)), key=weights.__getitem__)]
        out["commonest_word_in_facts"] = engine.store.reader().execute(
            "SELECT count(*) FROM fts_memory_fact WHERE fts_memory_fact MATCH ?",
            (f'"{commonest}"',)).fetchone()[0]
        query_sets = {"benchmark": [q for group in QUERIES.values() for q, _ in group],
                      "synthetic": synthetic_queries(60), "commonest word": [commonest]}
        for mode in ["lexical"] + (["hybrid"] if embed else []):
            for name, queries in query_sets.items():
                recall_ms = []
                for round_ in range(5 if len(queries) > 1 else 50):
                    for query in queries:
                        # A distinct string per round: the query-vector cache never answers.
                        text = query if mode == "lexical" else f"{query} {'!' * (round_ + 1)}"
                        t = time.perf_counter()
                        engine.recall(text, ["fact", "episode"], 10, mode=mode, scope=alice)
                        recall_ms.append((time.perf_counter() - t) * 1000)
                out[f"recall_{mode}_{name}"] = _percentiles(recall_ms)
        if embed:
            query_ms = []
            for i, query in enumerate(query_sets["benchmark"]):
                t = time.perf_counter()
                engine.semantic.query_vector(f"{query} ?{i}")
                query_ms.append((time.perf_counter() - t) * 1000)
            out["query_embedding"] = _percentiles(query_ms)
        engine.close()
    return out


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--facts", type=int, default=100_000)
    parser.add_argument("--skip-latency", action="store_true")
    parser.add_argument("--embed-latency", action="store_true",
                        help="embed every fact and time hybrid recall too (slow)")
    args = parser.parse_args()
    check_query_set()
    report: dict = {"quality": {"off": quality(False), "on": quality(True)}}
    if not args.skip_latency:
        report["latency"] = latency(args.facts, args.embed_latency)
    json.dump(report, sys.stdout, indent=2)
    print()
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
