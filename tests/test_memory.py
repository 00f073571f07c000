"""Written memory end to end: every memory, stash, ingest and graph verb through
the real `ctxls serve` process, tenant isolation, persistence and bounds."""

from __future__ import annotations

import base64
import time
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from conftest import serve, write_tree

DAY_MS = 86_400_000


def now_ms() -> int:
    return int(time.time() * 1000)


async def expect_error(s, method: str, params: dict) -> JsonRpcException:
    with pytest.raises(JsonRpcException) as err:
        await s.request(method, params)
    return err.value


def paths(hits: list[dict]) -> list[str]:
    return [h["path"] for h in hits]


async def test_remember_recall_get_and_forget(repo: Path, memory_options: dict):
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        meta = {"source": "incident-42", "tags": ["deploy", 1], "nested": {"ok": True}}
        assert await s.request("ctxls/remember", {
            "id": "deploy-env", "text": "The deploy fails when FOO_URL is unset", "meta": meta}) == {}
        await s.request("ctxls/remember", {"id": "ep-1", "kind": "episode", "by": "human",
                                           "text": "Deployed release 4.2 to staging",
                                           "occurredAt": 1_700_000_000_000})
        await s.request("ctxls/remember", {"id": "runbook", "kind": "doc",
                                           "text": "Deploying: run make deploy with FOO_URL set."})

        grouped = await s.request("ctxls/recall", {"query": "deploying FOO_URL", "body": True})
        fact = grouped["groups"]["fact"][0]
        assert fact["path"] == "deploy-env" and fact["kind"] == "fact" and fact["score"] > 0
        assert fact["meta"] == meta and fact["body"] == "The deploy fails when FOO_URL is unset"
        assert "uri" not in fact and "range" not in fact  # written memory is not a file
        assert paths(grouped["groups"]["episode"]) == ["ep-1"]
        # A remembered doc is recalled under "doc" next to the repository's README.
        assert set(paths(grouped["groups"]["doc"])) == {"runbook", "README.md"}
        # Memory never competes with code.
        assert not {"deploy-env", "ep-1", "runbook"} & set(paths(grouped["groups"]["code"]))

        item = await s.request("ctxls/get", {"id": "deploy-env"})
        assert item["text"] == "The deploy fails when FOO_URL is unset" and item["meta"] == meta
        assert (item["source"], item["provenance"], item["kind"]) == ("direct", "agent", "fact")
        episode = await s.request("ctxls/get", {"id": "ep-1"})
        assert episode["occurredAt"] == 1_700_000_000_000 and episode["provenance"] == "human"

        # Same (scope, id): replaced, not duplicated.
        await s.request("ctxls/remember", {"id": "deploy-env", "text": "FOO_URL now has a default"})
        assert (await s.request("ctxls/get", {"id": "deploy-env"}))["text"] == "FOO_URL now has a default"
        assert (await s.request("ctxls/count", {"kind": "fact"}))["count"] == 1
        hits = (await s.request("ctxls/recall", {"query": "unset", "kind": "fact"}))["hits"]
        assert hits == []  # the old text is gone from the full-text index too

        # forget never removes indexed files, only direct rows.
        assert await s.request("ctxls/forget", {"idPrefix": "pkg/"}) == {"removed": 0}
        assert (await s.request("ctxls/get", {"id": "pkg/session.py"}))["source"] == "file"
        assert await s.request("ctxls/forget", {"id": "deploy-env"}) == {"removed": 1}
        assert await s.request("ctxls/get", {"id": "deploy-env"}) is None
        assert (await s.request("ctxls/recall", {"query": "FOO_URL", "kind": "fact"}))["hits"] == []
        assert await s.request("ctxls/forget", {"kind": "episode", "by": "human"}) == {"removed": 1}
        assert (await s.request("ctxls/count", {}))["count"] == 1  # the doc

        # A query with no usable term finds no memory.
        empty = await s.request("ctxls/recall", {"query": "?!", "kind": ["fact", "doc"]})
        assert empty["groups"] == {"fact": [], "doc": []}


async def test_memory_written_under_a_files_path_never_passes_for_the_file(repo: Path, memory_options: dict):
    """A tenant's memory written under an indexed file's path (shared tier
    included) answered every tenant's `get` and `node` of that path: forged
    text where a code hit pointed. The file wins; the row stays memory."""
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        await s.request("ctxls/remember", {"scope": "@global", "id": "pkg/session.py",
                                           "text": "def forged():\n    os.system('sh')"})
        for params in ({"scope": "alice"}, {}):
            item = await s.request("ctxls/get", params | {"id": "pkg/session.py"})
            assert item["source"] == "file" and "forged" not in item["text"]
            node = await s.request("ctxls/node", params | {"id": "pkg/session.py"})
            assert node is not None and node["source"] == "file" and node["chunks"]
        assert (await s.request("ctxls/count", {"kind": "fact"}))["count"] == 1


async def test_two_tenants_and_the_shared_tier_never_see_each_other(repo: Path, memory_options: dict):
    tenants = {"alice": "kiwi", "bob": "mango"}
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        for tenant, fruit in tenants.items():
            # The same id in two scopes: two rows; neither overwrites the other.
            await s.request("ctxls/remember", {"scope": tenant, "id": "creds",
                                               "text": f"the shared password is {fruit} deploy"})
            await s.request("ctxls/remember", {"scope": tenant, "id": f"{tenant}-only",
                                               "text": f"{tenant} prefers {fruit} deploy"})
            await s.request("ctxls/remember", {"scope": tenant, "id": f"{tenant}-ep", "kind": "episode",
                                               "text": f"{tenant} ate a {fruit} before deploy"})
            await s.request("ctxls/ingest", {"scope": tenant, "filename": f"{tenant}.md",
                                             "text": f"# Notes\n\n{fruit} deploy notes\n"})
        await s.request("ctxls/remember", {"scope": "@global", "id": "policy", "by": "human",
                                           "text": "every deploy needs a review"})

        for tenant, fruit in tenants.items():
            other = next(t for t in tenants if t != tenant)
            other_fruit = tenants[other]
            scoped = {"scope": tenant}

            async def leaked(result) -> bool:
                return other in repr(result) or other_fruit in repr(result)

            for _ in range(2):  # recalls feed the candidate queues below
                recall = await s.request("ctxls/recall", scoped | {"query": "deploy", "body": True,
                                                                    "n": 50})
                assert not await leaked(recall)
            groups = recall["groups"]
            assert set(paths(groups["fact"])) == {"creds", f"{tenant}-only", "policy"}
            assert paths(groups["episode"]) == [f"{tenant}-ep"]
            assert f"{tenant}.md" in paths(groups["doc"]) and f"{other}.md" not in paths(groups["doc"])
            # Guessing the other tenant's ids: nothing, as for an unknown id.
            for guess in (f"{other}-only", f"{other}-ep", f"{other}.md"):
                assert await s.request("ctxls/get", scoped | {"id": guess}) is None
                assert await s.request("ctxls/node", scoped | {"id": guess}) is None
            assert fruit in (await s.request("ctxls/get", scoped | {"id": "creds"}))["text"]
            for method, params in [
                ("ctxls/recentMemory", {"n": 50, "body": True}),
                ("ctxls/recentMemory", {"kind": ["fact", "episode", "doc"], "n": 50, "body": True}),
                ("ctxls/enumerate", {"kind": "fact", "body": True}),
                ("ctxls/enumerate", {"kind": "episode", "body": True}),
                ("ctxls/reviewCandidates", {"threshold": 1}),
                ("ctxls/promotionCandidates", {"threshold": 1}),
            ]:
                result = await s.request(method, scoped | params)
                assert result["items"] and not await leaked(result), (tenant, method)
            review = await s.request("ctxls/reviewCandidates", scoped | {"threshold": 2})
            assert {i["path"]: i["hits"] for i in review["items"]} == {"creds": 2, f"{tenant}-only": 2}
            assert (await s.request("ctxls/count", scoped | {"kind": "fact"}))["count"] == 3
            assert (await s.request("ctxls/count", scoped))["count"] == 5

        shared = await s.request("ctxls/recall", {"scope": "@global", "query": "deploy", "n": 50})
        assert {kind: paths(hits) for kind, hits in shared["groups"].items()} == {
            "code": [], "doc": ["README.md"], "config": [], "fact": ["policy"], "episode": []}
        assert (await s.request("ctxls/count", {"scope": "@global"}))["count"] == 1

        # forget by scope: that tenant only, never the shared tier or the other tenant.
        assert await s.request("ctxls/forget", {"scope": "alice", "id": "creds"}) == {"removed": 1}
        assert "mango" in (await s.request("ctxls/get", {"scope": "bob", "id": "creds"}))["text"]
        assert await s.request("ctxls/forget", {"scope": "alice"}) == {"removed": 3}
        assert (await s.request("ctxls/count", {"scope": "alice"}))["count"] == 1  # the shared policy
        assert (await s.request("ctxls/count", {"scope": "bob"}))["count"] == 5
        assert (await s.request("ctxls/count", {}))["count"] == 5  # no owner: everything


async def test_a_tenants_own_row_shadows_the_shared_row_of_its_id_in_every_read(repo: Path, memory_options: dict):
    """A tenant's own row of an id replaced the shared tier's only in get:
    recall, recentMemory, enumerate, count and the knowledge block served
    both, the stale shared text beside the tenant's (memory probe)."""
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        await s.request("ctxls/remember", {"scope": "@global", "id": "deploy-url", "by": "human",
                                           "text": "OLD shared: deploy to https://old.example"})
        await s.request("ctxls/remember", {"scope": "alice", "id": "deploy-url", "by": "human",
                                           "text": "NEW alice: deploy to https://new.example"})
        alice, bob = {"scope": "alice"}, {"scope": "bob"}

        async def seen(scope: dict) -> dict:
            recall = await s.request("ctxls/recall", scope | {"query": "deploy example",
                                                              "kind": "fact", "body": True})
            recent = await s.request("ctxls/recentMemory", scope | {"n": 10, "body": True})
            listed = await s.request("ctxls/enumerate", scope | {"kind": "fact", "body": True})
            knowledge = await s.request("ctxls/knowledge", scope)
            return {"recall": [h["body"] for h in recall["hits"]],
                    "recent": [i["body"] for i in recent["items"]],
                    "enumerate": [i["body"] for i in listed["items"]], "total": listed["total"],
                    "count": (await s.request("ctxls/count", scope))["count"],
                    "knowledge": [line for line in knowledge["block"].split("\n")[1:]],
                    "get": (await s.request("ctxls/get", scope | {"id": "deploy-url"}))["text"]}

        new, old = "NEW alice: deploy to https://new.example", "OLD shared: deploy to https://old.example"
        assert await seen(alice) == {"recall": [new], "recent": [new], "enumerate": [new], "total": 1,
                                     "count": 1, "knowledge": [f"- [deploy-url] {new}"], "get": new}
        # Another tenant, and the shared tier itself, still read the shared row.
        for scope in (bob, {"scope": "@global"}):
            assert await seen(scope) == {"recall": [old], "recent": [old], "enumerate": [old],
                                         "total": 1, "count": 1,
                                         "knowledge": [f"- [deploy-url] {old}"], "get": old}
        # An own row that expired shadows nothing; one forgotten, likewise.
        await s.request("ctxls/remember", alice | {"id": "deploy-url", "text": new,
                                                   "expiresAt": now_ms() - 1})
        assert (await seen(alice))["recall"] == [old] and (await s.request("ctxls/count", alice))["count"] == 1
        await s.request("ctxls/remember", alice | {"id": "deploy-url", "text": new})
        assert (await seen(alice))["recent"] == [new]
        assert await s.request("ctxls/forget", alice | {"id": "deploy-url"}) == {"removed": 1}
        assert (await seen(alice))["recent"] == [old]


async def test_owner_is_the_default_scope_and_strict_scope_refuses_unscoped_requests(repo: Path, memory_options: dict):
    async with serve(repo, memory_options | {"owner": "alice"}) as s:
        await s.wait_indexed()
        await s.request("ctxls/remember", {"id": "note", "text": "alice keeps the deploy key"})
        await s.request("ctxls/remember", {"scope": "bob", "id": "note", "text": "bob's deploy key",
                                           "by": "agent"})
        assert (await s.request("ctxls/get", {"id": "note"}))["text"] == "alice keeps the deploy key"
        assert paths((await s.request("ctxls/recall", {"query": "deploy key", "kind": "fact"}))["hits"]) == ["note"]
        # forget {kind, by} is owner-blind: it spans every tenant.
        assert await s.request("ctxls/forget", {"kind": "fact", "by": "agent"}) == {"removed": 2}

    async with serve(repo, memory_options | {"strictScope": True}) as s:
        await s.wait_indexed()
        unscoped = [
            ("ctxls/remember", {"id": "x", "text": "y"}),
            ("ctxls/recall", {"query": "deploy"}),
            ("ctxls/get", {"id": "note"}),
            ("ctxls/recentMemory", {}),
            ("ctxls/enumerate", {"kind": "fact"}),
            ("ctxls/count", {}),
            ("ctxls/forget", {"id": "note"}),
            ("ctxls/forget", {"kind": "fact", "by": "agent"}),
            ("ctxls/reviewCandidates", {}),
            ("ctxls/promotionCandidates", {}),
            ("ctxls/ingest", {"filename": "a.md", "text": "# A\n"}),
            ("ctxls/node", {"id": "note"}),
        ]
        for method, params in unscoped:
            err = await expect_error(s, method, params)
            assert (err.code, err.data) == (-32003, {"verb": method}), method
        await s.request("ctxls/remember", {"scope": "carol", "id": "x", "text": "carol's deploy"})
        hits = (await s.request("ctxls/recall", {"scope": "carol", "query": "deploy", "kind": "fact"}))["hits"]
        assert paths(hits) == ["x"]


async def test_memory_survives_restart_and_forced_reindex_and_sessions_see_theirs_first(repo: Path, memory_options: dict):
    async with serve(repo, memory_options | {"session": "run-1"}) as s:
        await s.wait_indexed()
        await s.request("ctxls/remember", {"id": "cache", "text": "The cache is flushed nightly"})
        await s.request("ctxls/remember", {"id": "ep-run1", "kind": "episode",
                                           "text": "run one rebuilt the cache", "occurredAt": now_ms()})
        await s.request("ctxls/ingest", {"filename": "ops.md", "text": "# Ops\n\nFlush the cache.\n"})
    async with serve(repo, memory_options | {"session": "run-2"}) as s:
        await s.wait_indexed()
        hits = (await s.request("ctxls/recall", {"query": "flushing caches", "kind": "fact"}))["hits"]
        assert paths(hits) == ["cache"]  # stemmed: flushing ~ flushed, caches ~ cache
        await s.request("ctxls/index", {"force": True})
        assert paths((await s.request("ctxls/recall", {"query": "cache", "kind": "fact"}))["hits"]) == ["cache"]
        assert "ops.md" in paths((await s.request("ctxls/recall", {"query": "flush", "kind": "doc"}))["hits"])
        assert (await s.request("ctxls/count", {}))["count"] == 3
        # This session's episode comes first, though another session's is newer.
        await s.request("ctxls/remember", {"id": "ep-run2", "kind": "episode",
                                           "text": "run two looked at the cache",
                                           "occurredAt": now_ms() - 3_600_000})
        recent = await s.request("ctxls/recentMemory", {"kind": "episode"})
        assert paths(recent["items"]) == ["ep-run2", "ep-run1"]
        everything = await s.request("ctxls/recentMemory", {"n": 10})
        assert paths(everything["items"])[0] == "ep-run2" and "createdAt" in everything["items"][0]
        # recentMemory is never demand.
        assert (await s.request("ctxls/promotionCandidates", {"threshold": 1}))["items"] == []


async def test_expiry_hides_rows_and_purge_reclaims_them(repo: Path, memory_options: dict):
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        soon = now_ms() + 60_000
        await s.request("ctxls/remember", {"id": "gone", "text": "temporary deploy token",
                                           "expiresAt": now_ms() - 1})
        await s.request("ctxls/remember", {"id": "later", "text": "deploy token for today",
                                           "expiresAt": soon})
        await s.request("ctxls/ingest", {"filename": "old.bin", "base64": "AAEC",
                                         "expiresAt": now_ms() - 1})
        assert await s.request("ctxls/get", {"id": "gone"}) is None
        assert await s.request("ctxls/get", {"id": "old.bin"}) is None
        assert paths((await s.request("ctxls/recall", {"query": "deploy token", "kind": "fact"}))["hits"]) == ["later"]
        assert paths((await s.request("ctxls/recentMemory", {}))["items"]) == ["later"]
        assert (await s.request("ctxls/enumerate", {"kind": "fact"}))["total"] == 1
        assert (await s.request("ctxls/count", {}))["count"] == 1
        assert await s.request("ctxls/purge", {}) == {"removed": 2}
        # A `now` ahead of the server's clock removes no row still live (purge
        # is unscoped: any tenant's client removed every tenant's rows with it).
        assert await s.request("ctxls/purge", {"now": soon}) == {"removed": 0}
        assert paths((await s.request("ctxls/recentMemory", {}))["items"]) == ["later"]


async def test_enumerate_pages_without_gaps_or_duplicates_while_others_write(repo: Path, memory_options: dict):
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        for i in range(25):
            await s.request("ctxls/remember", {"id": f"f{i:02}", "text": f"fact number {i}"})
        await s.request("ctxls/remember", {"id": "e0", "kind": "episode", "text": "not a fact"})
        seen: list[str] = []
        offset, pages = 0, 0
        while offset is not None:
            page = await s.request("ctxls/enumerate", {"kind": "fact", "offset": offset, "limit": 10})
            seen += paths(page["items"])
            if pages == 0:
                assert page["total"] == 25 and page["nextOffset"] == 10
                # Writes between pages: an upsert keeps its place, a new row appends.
                await s.request("ctxls/remember", {"id": "f03", "text": "fact three, revised"})
                await s.request("ctxls/remember", {"id": "f99", "text": "a late fact"})
            offset, pages = page["nextOffset"], pages + 1
        assert sorted(seen) == sorted([f"f{i:02}" for i in range(25)] + ["f99"])
        assert len(seen) == len(set(seen)) and pages == 3
        body = await s.request("ctxls/enumerate", {"kind": "fact", "offset": 3, "limit": 1, "body": True})
        assert body["items"][0]["body"] == "fact three, revised" and body["offset"] == 3
        assert (await s.request("ctxls/enumerate", {"kind": "fact", "offset": 100}))["items"] == []


async def test_demand_log_feeds_review_and_promotion_candidates(repo: Path, memory_options: dict):
    async with serve(repo, memory_options | {"episodeWindowDays": 1}) as s:
        await s.wait_indexed()
        await s.request("ctxls/remember", {"id": "agent-fact", "text": "retries use exponential backoff"})
        await s.request("ctxls/remember", {"id": "human-fact", "by": "human",
                                           "text": "retries are capped at five backoff attempts"})
        await s.request("ctxls/remember", {"id": "ep", "kind": "episode",
                                           "text": "tuned the backoff for uploads"})
        for _ in range(4):
            await s.request("ctxls/recall", {"query": "backoff"})
        await s.request("ctxls/recall", {"query": "backoff", "log": False})  # not demand
        await s.request("ctxls/get", {"id": "agent-fact"})  # a fetch, weaker than a recall
        assert (await s.request("ctxls/reviewCandidates", {}))["items"] == []  # threshold 5
        await s.request("ctxls/recall", {"query": "backoff", "kind": "fact"})
        review = await s.request("ctxls/reviewCandidates", {})
        assert review["items"] == [{"path": "agent-fact", "hits": 5}]  # never the human's
        assert (await s.request("ctxls/promotionCandidates", {}))["items"] == []  # threshold 10
        promotion = await s.request("ctxls/promotionCandidates", {"threshold": 4})
        assert promotion["items"] == [{"path": "ep", "hits": 4}]
        # Confirmed by a person: no longer a review candidate.
        await s.request("ctxls/remember", {"id": "agent-fact", "by": "human",
                                           "text": "retries use exponential backoff"})
        assert (await s.request("ctxls/reviewCandidates", {}))["items"] == []

        # Episodes older than the window (1 day here) go on the next episode write.
        await s.request("ctxls/remember", {"id": "ancient", "kind": "episode", "text": "long ago",
                                           "occurredAt": now_ms() - 2 * DAY_MS})
        assert await s.request("ctxls/get", {"id": "ancient"}) is not None
        await s.request("ctxls/remember", {"id": "fresh", "kind": "episode", "text": "just now"})
        assert await s.request("ctxls/get", {"id": "ancient"}) is None
        assert await s.request("ctxls/get", {"id": "fresh"}) is not None


async def test_an_episode_write_of_a_daemon_without_owner_prunes_only_its_own_scopes_old_episodes(
        repo: Path, memory_options: dict):
    """An editor without owner (writing to @global) with `episodeWindowDays: 1`
    deleted every tenant's episodes older than a day, team-wide on
    PostgreSQL: one user's local option destroyed the others' episodes, which
    their own 30-day windows kept (memory probe). It prunes @global's alone."""
    async with serve(repo, memory_options | {"episodeWindowDays": 1}) as s:
        await s.wait_indexed()
        for scope in ("bob", "@global"):
            await s.request("ctxls/remember", {"scope": scope, "id": "ancient", "kind": "episode",
                                               "text": "long ago", "occurredAt": now_ms() - 2 * DAY_MS})
        await s.request("ctxls/remember", {"id": "fresh", "kind": "episode", "text": "just now"})
        kept = await s.request("ctxls/get", {"scope": "bob", "id": "ancient"})
        assert kept is not None and kept["text"] == "long ago"
        assert (await s.request("ctxls/count", {}))["count"] == 2  # bob's ancient and fresh
        assert (await s.request("ctxls/get", {"id": "fresh"}))["text"] == "just now"


async def test_a_forgotten_rows_demand_goes_with_it(repo: Path, memory_options: dict):
    """Forget left a row's recalls in the demand log for good: a fact written
    again under the forgotten id was at once a review candidate with the old
    row's recalls, and the log grew with every row ever recalled."""
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        for key in ("gone-fact", "kept-fact"):
            await s.request("ctxls/remember", {"id": key, "text": f"{key}: uploads use backoff"})
        for _ in range(5):
            await s.request("ctxls/recall", {"query": "backoff", "kind": "fact"})
        review = await s.request("ctxls/reviewCandidates", {})
        assert review["items"] == [{"path": "gone-fact", "hits": 5}, {"path": "kept-fact", "hits": 5}]
        assert (await s.request("ctxls/forget", {"id": "gone-fact"}))["removed"] == 1
        await s.request("ctxls/remember", {"id": "gone-fact", "text": "a new fact about queues"})
        review = await s.request("ctxls/reviewCandidates", {})
        assert review["items"] == [{"path": "kept-fact", "hits": 5}]


async def test_stash_peek_evict_and_the_size_bound(repo: Path, memory_options: dict):
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        long_text = "HEAD" + "x" * 10_000 + "TAIL"
        assert await s.request("ctxls/stash", {"id": "build-log", "text": long_text}) == {}
        await s.request("ctxls/stash", {"id": "short", "text": "tiny stashmarker"})
        peek = await s.request("ctxls/peek", {"id": "build-log"})
        assert peek["bytes"] == len(long_text) and peek["truncated"] is True
        assert peek["head"].startswith("HEAD") and peek["tail"].endswith("TAIL")
        assert len(peek["head"]) + len(peek["tail"]) < len(long_text) and peek["createdAt"] > 0
        short = await s.request("ctxls/peek", {"id": "short"})
        assert (short["head"], short["tail"], short["truncated"]) == ("tiny stashmarker", "", False)
        # Never indexed or recalled.
        result = await s.request("ctxls/recall", {"query": "stashmarker"})
        assert all(hits == [] for hits in result["groups"].values())
        assert await s.request("ctxls/get", {"id": "short"}) is None

        err = await expect_error(s, "ctxls/stash", {"id": "huge", "text": "z" * (16 * 1024 * 1024 + 1)})
        assert (err.code, err.data) == (-32005, {"limit": 16 * 1024 * 1024})
        assert await s.request("ctxls/peek", {"id": "huge"}) is None  # nothing written

        for i in range(3):
            await s.request("ctxls/stash", {"id": f"n{i}", "text": str(i)})
        assert await s.request("ctxls/evict", {"id": "short"}) == {"removed": 1}
        assert await s.request("ctxls/evict", {"maxCount": 2}) == {"removed": 2}  # build-log, n0
        assert await s.request("ctxls/peek", {"id": "n2"}) is not None
        assert await s.request("ctxls/evict", {"olderThan": now_ms() + 1000}) == {"removed": 2}
        assert await s.request("ctxls/peek", {"id": "n2"}) is None


async def test_a_text_of_megabytes_within_the_bound_is_stored_and_recalled(repo: Path, memory_options: dict):
    """PostgreSQL refused a 4 MB log (within the 10 MiB bound) with -32010
    "unavailable: string is too long for tsvector": its full text was fed to
    to_tsvector whole, and a tsvector holds 1 MB (memory probe)."""
    import random
    import uuid

    rng = random.Random(2)
    log = "deployhead started\n" + "\n".join(
        f"2026-12-06T20:{i // 60 % 60:02d}:{i % 60:02d}Z INFO request_id={uuid.UUID(int=rng.getrandbits(128))} "
        f"GET /api/v1/items/{rng.randrange(10**6)} 200 {rng.randrange(500)}ms" for i in range(20000))
    assert 2**20 < len(log) < 10 * 2**20
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        assert await s.request("ctxls/remember", {"id": "incident-log", "kind": "episode",
                                                  "text": log}) == {}
        assert (await s.request("ctxls/get", {"id": "incident-log"}))["text"] == log
        hits = await s.request("ctxls/recall", {"query": "deployhead", "kind": "episode"})
        assert paths(hits["hits"]) == ["incident-log"]


async def test_ingest_segments_text_keeps_blobs_byte_exact_and_bounds_size(repo: Path, memory_options: dict):
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        runbook = "# Runbook\n\nIntro.\n\n## Rollback\n\nRevert the canary first.\n\n## Paging\n\nCall ops.\n"
        result = await s.request("ctxls/ingest", {"filename": "runbook.md", "text": runbook})
        assert result == {"id": "runbook.md", "kind": "doc", "format": "markdown", "mode": "chunked",
                          "chunks": 3}
        hits = (await s.request("ctxls/recall", {"query": "canary", "kind": "doc"}))["hits"]
        assert hits[0]["path"] == "runbook.md"
        assert hits[0]["chunk"] == {"symbol": "Runbook > Rollback", "startLine": 4, "endLine": 6}
        lines = await s.request("ctxls/get", {"id": "runbook.md", "startLine": 4, "endLine": 4})
        assert lines["text"] == "## Rollback"
        assert (await s.request("ctxls/get", {"id": "runbook.md"}))["text"] == runbook
        node = await s.request("ctxls/node", {"id": "runbook.md"})
        assert node["source"] == "direct" and [c["symbol"] for c in node["chunks"]] == [
            "Runbook", "Runbook > Rollback", "Runbook > Paging"]

        # Re-ingesting an id replaces all of its segments.
        again = await s.request("ctxls/ingest", {"filename": "runbook.md", "text": "# Runbook\n\nNew.\n"})
        assert again["chunks"] == 1
        assert (await s.request("ctxls/recall", {"query": "canary", "kind": "doc"}))["hits"] == []

        log = await s.request("ctxls/ingest", {"filename": "deploy.log", "id": "log-1",
                                               "base64": base64.b64encode(b"ERROR disk full\n").decode()})
        assert (log["mode"], log["format"], log["id"]) == ("chunked", "log", "log-1")
        assert paths((await s.request("ctxls/recall", {"query": "disk full", "kind": "doc"}))["hits"]) == ["log-1"]

        blob = bytes(range(256)) * 4
        encoded = base64.b64encode(blob).decode()
        result = await s.request("ctxls/ingest", {"filename": "diagram_export.png", "base64": encoded,
                                                  "meta": {"w": 640}})
        assert (result["mode"], result["format"], result["chunks"]) == ("blob", "png", 1)
        hits = (await s.request("ctxls/recall", {"query": "diagram export", "kind": "doc"}))["hits"]
        assert paths(hits) == ["diagram_export.png"]  # found by its filename
        item = await s.request("ctxls/get", {"id": "diagram_export.png"})
        assert item["encoding"] == "base64" and base64.b64decode(item["text"]) == blob
        assert item["meta"] == {"w": 640}

        limit = 10 * 1024 * 1024
        for params in ({"filename": "big.txt", "text": "a" * (limit + 1)},
                       {"filename": "big.bin", "base64": base64.b64encode(b"\0" * (limit + 1)).decode()}):
            err = await expect_error(s, "ctxls/ingest", params)
            assert (err.code, err.data) == (-32005, {"limit": limit})
            assert await s.request("ctxls/get", {"id": params["filename"]}) is None
        assert (await s.request("ctxls/count", {"kind": "doc"}))["count"] == 3


async def test_node_and_related_follow_import_edges(tmp_path: Path, memory_options: dict):
    root = tmp_path / "chain"
    write_tree(root, {
        "a.py": "import b\n\n\ndef start():\n    return b.step()\n",
        "b.py": "import c\n\n\ndef step():\n    return c.step()\n",
        "c.py": "import d\n\n\ndef step():\n    return d.step()\n",
        "d.py": "import e\n\n\ndef step():\n    return e.step()\n",
        "e.py": "def step():\n    return 1\n",
        "side.py": "import b\n",
    })
    async with serve(root, memory_options) as s:
        await s.wait_indexed()
        node = await s.request("ctxls/node", {"id": "b.py"})
        assert (node["path"], node["kind"], node["format"], node["source"]) == ("b.py", "code", "python", "file")
        assert (node["importsOut"], node["importsIn"]) == (1, 2)
        # One chunk: the import line is packed with the function it precedes.
        assert node["chunks"] == [{"symbol": "step", "symbolKind": "function", "startLine": 0, "endLine": 4}]

        out = await s.request("ctxls/related", {"id": "a.py", "dir": "out", "hops": 2})
        assert out == {"items": [{"path": "b.py", "hops": 1, "dir": "out"},
                                 {"path": "c.py", "hops": 2, "dir": "out"}], "truncated": False}
        incoming = await s.request("ctxls/related", {"id": "b.py", "dir": "in"})
        assert incoming["items"] == [{"path": "a.py", "hops": 1, "dir": "in"},
                                     {"path": "side.py", "hops": 1, "dir": "in"}]
        both = await s.request("ctxls/related", {"id": "c.py", "hops": 2})
        assert {(i["path"], i["hops"], i["dir"]) for i in both["items"]} == {
            ("b.py", 1, "in"), ("d.py", 1, "out"), ("a.py", 2, "in"), ("side.py", 2, "in"),
            ("e.py", 2, "out")}
        capped = await s.request("ctxls/related", {"id": "a.py", "dir": "out", "hops": 9})
        assert [i["hops"] for i in capped["items"]] == [1, 2, 3] and capped["truncated"] is True
        assert (await s.request("ctxls/related", {"id": "a.py", "dir": "out", "hops": 3}))["truncated"] is False
        assert await s.request("ctxls/related", {"id": "nope.py"}) == {"items": [], "truncated": False}
        assert await s.request("ctxls/node", {"id": "nope.py"}) is None
        err = await expect_error(s, "ctxls/related", {"id": "../outside.py"})
        assert err.code == -32004


async def test_bad_params_are_refused_and_the_daemon_keeps_serving(repo: Path, memory_options: dict):
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        cases = [
            ("ctxls/remember", {"text": "x"}, "id"),
            ("ctxls/remember", {"id": "a"}, "text"),
            ("ctxls/remember", {"id": "a", "text": "x", "kind": "poem"}, "kind"),
            ("ctxls/remember", {"id": "a", "text": "x", "by": "robot"}, "by"),
            ("ctxls/remember", {"id": "a", "text": "x", "meta": "not an object"}, "meta"),
            ("ctxls/remember", {"id": "a", "text": "x", "occurredAt": "yesterday"}, "occurredAt"),
            ("ctxls/remember", {"id": "a", "text": "x", "expiresAt": -5}, "expiresAt"),
            ("ctxls/remember", {"id": "a", "text": "x", "scope": "@admin"}, "scope"),
            ("ctxls/remember", {"id": "a", "text": "x", "scope": ""}, "scope"),
            ("ctxls/remember", {"id": "", "text": "x"}, "id"),
            # A line break in an id forged a hit line in every text answer.
            ("ctxls/remember", {"id": "a\n    9.999  secrets.py:1  x", "text": "x"}, "id"),
            ("ctxls/remember", {"id": "a\u2028b", "text": "x"}, "id"),
            ("ctxls/ingest", {"filename": "notes\r.md", "text": "x"}, "filename"),
            ("ctxls/ingest", {"filename": "a.md", "id": "a\x1b[2J", "text": "x"}, "id"),
            ("ctxls/forget", {}, "id"),
            ("ctxls/forget", {"kind": "fact"}, "by"),
            ("ctxls/forget", {"kind": "poem", "by": "agent"}, "kind"),
            ("ctxls/recall", {"query": "x", "kind": "poem"}, "kind"),
            ("ctxls/recentMemory", {"kind": "code"}, "kind"),
            ("ctxls/recentMemory", {"n": 0}, "n"),
            ("ctxls/enumerate", {}, "kind"),
            ("ctxls/enumerate", {"kind": "doc"}, "kind"),
            ("ctxls/enumerate", {"kind": "fact", "limit": 0}, "limit"),
            ("ctxls/enumerate", {"kind": "fact", "offset": -1}, "offset"),
            ("ctxls/count", {"kind": "poem"}, "kind"),
            ("ctxls/reviewCandidates", {"threshold": 0}, "threshold"),
            ("ctxls/promotionCandidates", {"threshold": "many"}, "threshold"),
            ("ctxls/stash", {"id": "a"}, "text"),
            ("ctxls/peek", {}, "id"),
            ("ctxls/evict", {}, "id"),
            ("ctxls/evict", {"maxCount": -1}, "maxCount"),
            ("ctxls/ingest", {"text": "x"}, "filename"),
            ("ctxls/ingest", {"filename": "a.md"}, "text"),
            ("ctxls/ingest", {"filename": "a.md", "text": "x", "base64": "eA=="}, "text"),
            ("ctxls/ingest", {"filename": "a.bin", "base64": "not base64!"}, "base64"),
            ("ctxls/purge", {"now": "later"}, "now"),
            ("ctxls/node", {}, "id"),
            ("ctxls/related", {"id": "pkg/retry.py", "dir": "sideways"}, "dir"),
            ("ctxls/related", {"id": "pkg/retry.py", "hops": 0}, "hops"),
            ("ctxls/get", {"id": "pkg/retry.py", "scope": 7}, "scope"),
        ]
        for method, params, param in cases:
            err = await expect_error(s, method, params)
            assert (err.code, err.data) == (-32602, {"param": param}), (method, params)
        assert (await s.request("ctxls/count", {}))["count"] == 0  # nothing was written
        await s.request("ctxls/remember", {"id": "ok", "text": "still serving"})
        assert paths((await s.request("ctxls/recall", {"query": "serving", "kind": "fact"}))["hits"]) == ["ok"]


async def test_paraphrase_recall_over_lsp_with_embeddings(repo: Path, memory_options: dict):
    facts = {
        "deploy-env": "The deploy fails when FOO_URL is unset",
        "db-backup": "Postgres snapshots are taken every night at 2am",
        "oncall": "Pager duty rotates every Monday morning",
    }
    async with serve(repo, memory_options | {"embeddings": True}) as s:
        await s.wait_indexed()
        for key, text in facts.items():
            await s.request("ctxls/remember", {"id": key, "text": text})

        async def embedded():
            return (await s.request("ctxls/status"))["pending"] == 0

        assert await s.wait_for(embedded, timeout=120, interval=0.2)
        # No content word in common with the fact it should find.
        hits = (await s.request("ctxls/recall", {"query": "release breaks without that environment variable",
                                                 "kind": "fact"}))["hits"]
        assert hits[0]["path"] == "deploy-env"
        lexical = await s.request("ctxls/recall", {"query": "database copies overnight", "kind": "fact",
                                                   "mode": "lexical"})
        assert lexical["hits"] == []
        hits = (await s.request("ctxls/recall", {"query": "database copies overnight", "kind": "fact"}))["hits"]
        assert hits[0]["path"] == "db-backup"
        # Another tenant's nearest row is never nominated: mallory sees the shared tier only.
        await s.request("ctxls/remember", {"scope": "eve", "id": "eve-db", "text": "Postgres snapshots nightly"})
        assert await s.wait_for(embedded, timeout=60, interval=0.2)
        hits = (await s.request("ctxls/recall", {"scope": "mallory", "query": "database copies overnight",
                                                 "kind": "fact", "mode": "semantic"}))["hits"]
        assert sorted(paths(hits)) == sorted(facts)
        hits = (await s.request("ctxls/recall", {"scope": "eve", "query": "database copies overnight",
                                                 "kind": "fact", "mode": "semantic"}))["hits"]
        assert "eve-db" in paths(hits)


async def test_a_tenants_episode_write_prunes_only_its_own_old_episodes(repo: Path,
                                                                         memory_options: dict):
    """On SQLite one tenant's episode write deleted every tenant's and the
    shared tier's old episodes (its prune had no scope condition), where
    PostgreSQL pruned only the writer's own (memory probe): both prune the
    writing scope's own now."""
    async with serve(repo, memory_options | {"episodeWindowDays": 1}) as s:
        await s.wait_indexed()
        for scope in ("alice", "bob", "@global"):
            await s.request("ctxls/remember", {"scope": scope, "id": f"{scope}-old", "kind": "episode",
                                               "text": "long ago", "occurredAt": now_ms() - 2 * DAY_MS})
        await s.request("ctxls/remember", {"scope": "alice", "id": "fresh", "kind": "episode",
                                           "text": "just now"})
        assert await s.request("ctxls/get", {"scope": "alice", "id": "alice-old"}) is None
        assert await s.request("ctxls/get", {"scope": "bob", "id": "bob-old"}) is not None
        assert await s.request("ctxls/get", {"scope": "bob", "id": "@global-old"}) is not None
        assert (await s.request("ctxls/count", {"scope": "bob", "kind": "episode"}))["count"] == 2


async def test_lexical_recall_finds_the_same_rows_on_both_backends(repo: Path, memory_options: dict):
    """PostgreSQL's `english` configuration dropped stop words and kept
    accents: 'who', 'IT' and 'cafe' found a fact on SQLite and nothing on
    PostgreSQL (memory probe). Both match the SQLite backend's terms now."""
    facts = {"oncall": "Who is on call this week: Dana",
             "laptops": "IT replaces broken laptops",
             "menu": "The café on the corner closes at noon",
             "taxonomy": "The terminology of the ontology is reviewed yearly"}
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        for key, text in facts.items():
            await s.request("ctxls/remember", {"scope": "t", "id": key, "text": text})
        for query, expected in (("who", ["oncall"]), ("IT", ["laptops"]), ("cafe", ["menu"]),
                                ("CAFÉ", ["menu"]), ("closing", ["menu"]), ("ontologies", ["taxonomy"]),
                                ("terminologies", ["taxonomy"]), ("the", ["menu", "taxonomy"])):
            found = await s.request("ctxls/recall", {"query": query, "kind": "fact", "scope": "t",
                                                     "mode": "lexical"})
            assert sorted(paths(found["hits"])) == expected, query


async def test_a_fact_is_recalled_by_a_word_over_the_token_bound(repo: Path, memory_options: dict):
    """Words over 48 characters (a SHA-256 digest, a long class name) are
    left out of the index as noise, so no recall found the fact holding them
    (memory probe). Memory indexes a stand-in for each, and so does its query."""
    digest = "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
    name = "AbstractSingletonProxyFactoryBeanConfigurationHelper"  # 52 characters
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        await s.request("ctxls/remember", {"scope": "t", "id": "release-digest",
                                           "text": f"The 2.3 release tarball has sha256 {digest}"})
        await s.request("ctxls/remember", {"scope": "t", "id": "proxy-helper",
                                           "text": f"{name} builds the proxies at startup"})
        await s.request("ctxls/ingest", {"scope": "t", "filename": "notes.md",
                                         "text": f"# Build\n\nThe helper is {name}.\n"})
        for query, kind, expected in ((digest, "fact", ["release-digest"]),
                                      (digest.upper(), "fact", ["release-digest"]),
                                      (name, "fact", ["proxy-helper"]),
                                      (f"who builds {name}?", "fact", ["proxy-helper"]),
                                      (name, "doc", ["notes.md"]),
                                      (digest[:-1] + "0", "fact", [])):
            found = await s.request("ctxls/recall", {"query": query, "kind": kind, "scope": "t",
                                                     "mode": "lexical"})
            assert paths(found["hits"]) == expected, query


async def test_enumerate_keeps_the_place_of_a_shared_id_a_tenant_then_writes(repo: Path, memory_options: dict):
    """The tenant's own row of an id it listed from the shared tier hides that
    row: appended at the end, it shifted every later row back one, so the
    next page skipped a row and listed the id again."""
    async with serve(repo, memory_options) as s:
        await s.wait_indexed()
        alice = {"scope": "alice", "kind": "fact", "limit": 2}
        await s.request("ctxls/remember", {"scope": "@global", "id": "g0", "text": "shared zero"})
        for i in range(1, 5):
            await s.request("ctxls/remember", {"scope": "alice", "id": f"a{i}", "text": f"tenant row {i}"})
        page = await s.request("ctxls/enumerate", alice)
        seen = paths(page["items"])
        assert seen == ["g0", "a1"]
        await s.request("ctxls/remember", {"scope": "alice", "id": "g0", "text": "alice's own zero"})
        while page["nextOffset"] is not None:
            page = await s.request("ctxls/enumerate", alice | {"offset": page["nextOffset"]})
            seen += paths(page["items"])
        assert seen == ["g0", "a1", "a2", "a3", "a4"]
        whole = await s.request("ctxls/enumerate", alice | {"limit": 10, "body": True})
        assert [(i["path"], i["body"]) for i in whole["items"][:2]] == [("g0", "alice's own zero"),
                                                                       ("a1", "tenant row 1")]
        # Forgotten, her row gives the shared one back its place: still no shift.
        await s.request("ctxls/forget", {"scope": "alice", "id": "g0"})
        whole = await s.request("ctxls/enumerate", alice | {"limit": 10, "body": True})
        assert [(i["path"], i["body"]) for i in whole["items"][:2]] == [("g0", "shared zero"),
                                                                       ("a1", "tenant row 1")]


async def test_ingest_refuses_text_holding_nul_and_names_the_file(repo: Path, memory_options: dict):
    """Bytes read as text (a .md upload) holding NUL were stored on SQLite,
    and then every `memory import` of the store's export refused the whole
    file; PostgreSQL answered "internal error: DataError"."""
    async with serve(repo, memory_options | {"owner": "t1"}) as s:
        await s.wait_indexed()
        encoded = base64.b64encode(b"# Notes\nline one\x00 two\n").decode()
        err = await expect_error(s, "ctxls/ingest", {"filename": "notes.md", "base64": encoded})
        assert err.code == -32602 and err.data == {"param": "base64"}
        assert "'notes.md'" in err.message and "NUL" in err.message
        assert await s.request("ctxls/get", {"id": "notes.md"}) is None
        # A blob is kept byte-exact, NUL and all.
        await s.request("ctxls/ingest", {"filename": "notes.bin", "base64": encoded})
        assert (await s.request("ctxls/get", {"id": "notes.bin"}))["text"] == encoded


async def test_an_owner_longer_than_a_scope_may_be_is_reported_and_defaulted(repo: Path):
    """Accepted silently, such an owner failed every request without a
    scope with -32602 about a param 'scope' the client never sent."""
    from ctxls.daemon.options import parse_init_options

    options, problems = parse_init_options({"owner": "o" * 257})
    assert options.owner is None
    assert problems == ["initializationOptions.owner must be at most 256 characters (a scope's "
                        "bound); using the default"]
    assert parse_init_options({"owner": "o" * 256})[0].owner == "o" * 256
    async with serve(repo, {"owner": "o" * 300}) as s:
        await s.wait_indexed()
        assert await s.request("ctxls/remember", {"id": "k", "text": "some fact"}) == {}
        assert (await s.request("ctxls/get", {"id": "k"}))["text"] == "some fact"


def test_mcp_remember_under_a_files_path_reports_the_memory_written_not_the_file(repo: Path):
    """MCP remember read its row back with ctxls/get, which answers an indexed
    file's path with the file: "remembered code pkg/session.py" and, as JSON,
    the file's source, while the fact written was never shown."""
    from ctxls.daemon.mcp_bridge import Bridge, call_tool

    bridge = Bridge(repo, use_daemon=False)
    try:
        assert bridge.call("ctxls/get", {"id": "pkg/session.py"})["source"] == "file"  # indexed
        note = "note: the CDN caches sessions for a day"
        said = call_tool(bridge, "remember", {"id": "pkg/session.py", "text": note})
        assert said["content"][0]["text"] == f"remembered fact pkg/session.py: {note}"
        as_json = call_tool(bridge, "remember", {"id": "pkg/session.py", "text": note,
                                                 "format": "json"})["structuredContent"]
        assert (as_json["kind"], as_json["source"], as_json["text"]) == ("fact", "direct", note)
    finally:
        bridge.close()
