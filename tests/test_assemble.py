"""Context assembly: budgets, citations, honesty, statistics, byte stability."""

from __future__ import annotations

import json
import sqlite3
import time
from pathlib import Path

import pytest
from pygls.exceptions import JsonRpcException

from ctxls.index.assemble import (OFF_TOPIC_THRESHOLDS, ByteEstimate, Candidate, OffTopicThresholds,
                                  TokenizerCounter, Topicality, assemble, candidates_from_hits,
                                  off_topic, pack, render)
from ctxls.index.embeddings import CODE_MODEL_NAME, MINILM_MODEL_NAME, STATIC_MODEL_NAME, load_counting_tokenizer

from conftest import serve, write_tree


def stage(i: int) -> str:
    return f"def step_{i}(value):\n    '''Advance the upload pipeline stage {i}.'''\n    return value + {i}\n"


FUNCS = "".join(stage(i) + "\n\n" for i in range(12))


@pytest.fixture
def pipeline(repo: Path) -> Path:
    # Short functions of one file pack into one chunk: four files give several,
    # each with an unrelated long function the assembled context leaves out.
    unrelated = "def checksum(data):\n" + "".join(
        f"    data = data[::-1] + bytes([{i}])  # mix the bytes once more, round {i}\n" for i in range(8)) \
        + "    return data\n"
    write_tree(repo, {f"pkg/pipeline_{part}.py": "\n\n".join(
        [*(stage(i) for i in range(part * 3, part * 3 + 3)), unrelated]) for part in range(4)})
    return repo


def candidates(text: str, path: str = "pkg/pipeline.py") -> list[Candidate]:
    lines = text.split("\n")
    out = []
    for i in range(12):
        start = i * 5
        out.append(Candidate(path, "code", f"step_{i}", start, start + 2,
                             score=10.0 - i * 0.5, text="\n".join(lines[start:start + 3]),
                             is_file=True))
    return out


@pytest.mark.parametrize("counter", [ByteEstimate(), TokenizerCounter(*load_counting_tokenizer())])
def test_budget_is_never_exceeded_and_more_budget_packs_more(counter):
    chunks_by_budget = []
    for budget in (20, 45, 80, 150, 400, 4000):
        blocks = pack(candidates(FUNCS), budget, counter)
        assert counter.count(render(blocks)) <= budget
        chunks_by_budget.append(sum(1 for b in blocks for _ in [b]))
    assert chunks_by_budget == sorted(chunks_by_budget) and chunks_by_budget[-1] >= 1
    assert chunks_by_budget[0] < chunks_by_budget[-1]


def test_whole_chunks_only_adjacent_merged_duplicates_dropped():
    lines = [f"line {i}" for i in range(30)]
    a = Candidate("f.py", "code", "a", 0, 4, 3.0, "\n".join(lines[0:5]), True)
    b = Candidate("f.py", "code", "b", 5, 9, 2.0, "\n".join(lines[5:10]), True)  # touches a
    dup = Candidate("g.py", "code", "a_copy", 0, 4, 1.5, "\n".join(lines[0:5]), True)
    far = Candidate("f.py", "code", "c", 20, 24, 1.0, "\n".join(lines[20:25]), True)
    result = assemble([a, b, dup, far], 1000, None, ByteEstimate(), lambda c: "\n".join(lines))
    assert [(b.path, b.start_line, b.end_line) for b in result.blocks] == [
        ("f.py", 0, 9), ("f.py", 20, 24)]
    assert result.context.split("\n")[1:11] == lines[0:10]
    assert result.context.startswith("[1] f.py:1-10\n") and "\n\n[2] f.py:21-25 c\n" in result.context


def test_abstains_on_nothing_or_a_weak_top_and_flags_a_single_hit():
    assert assemble([], 100, None, ByteEstimate(), lambda c: None).abstained
    one = [Candidate("f.py", "code", "a", 0, 0, 0.4, "x = 1", True)]
    low = assemble(one, 100, 0.5, ByteEstimate(), lambda c: "x = 1")
    assert low.abstained and low.context == "" and "minScore" in low.note
    weak = assemble(one, 100, None, ByteEstimate(), lambda c: "x = 1\ny = 2\n" * 50)
    assert weak.weak and not weak.abstained and weak.context.endswith("x = 1")
    assert weak.stats.saved_tokens == weak.stats.original_tokens - weak.stats.reduced_tokens > 0


def test_a_semantic_min_score_is_a_floor_on_the_cosine_not_the_boosted_score():
    """The protocol says a semantic minScore is an absolute floor (cosine),
    but it was compared with the score, which the recall scorer raises above
    the cosine with its boosts (1.30 for a cosine of 0.72)."""
    from ctxls.index.recall_scorer import Contribution

    hit = type("Hit", (), dict(path="f.py", kind="code", symbol="wrap", start_line=0, end_line=0,
                               score=1.30, body="def wrap(): pass", read_body=None, uri="file:///f.py",
                               calibrated=0.9, why=[Contribution("cosine", 0.72, 0.72),
                                                    Contribution("definition", 1.0, 0.58)]))
    candidates = candidates_from_hits({"code": [hit]})
    assert candidates[0].cosine == 0.72
    refused = assemble(candidates, 100, 0.8, ByteEstimate(), lambda c: None, by_cosine=True)
    assert refused.abstained and "top cosine 0.72" in refused.note
    assert not assemble(candidates, 100, 0.7, ByteEstimate(), lambda c: None, by_cosine=True).abstained
    assert not assemble(candidates, 100, 0.8, ByteEstimate(), lambda c: None).abstained  # hybrid: the score


def test_off_topic_rule_needs_distance_in_meaning_or_words_found_nowhere():
    # Topicality(share of the question's terms found, nearest cosine, model)
    general = OffTopicThresholds(0.2, 0.67, 0.36)
    assert off_topic(Topicality(1.0, 0.15), general).startswith("nothing in this repository is close")
    loose = off_topic(Topicality(0.25, 0.3), general)
    assert loose is not None and "25% do" in loose
    assert off_topic(Topicality(0.8, 0.3), general) is None  # a loose match, but most words occur
    assert off_topic(Topicality(0.25, 0.5), general) is None  # few words occur, but the match is close
    assert off_topic(Topicality(0.0, None)) is not None  # keywords only: no word occurs
    assert off_topic(Topicality(0.5, None)) is None


def test_off_topic_thresholds_are_the_models_own():
    # The same cosine is loose for one model and close for another (scales differ).
    static = OFF_TOPIC_THRESHOLDS[STATIC_MODEL_NAME]
    code = OFF_TOPIC_THRESHOLDS[CODE_MODEL_NAME]
    assert static.coverage_cosine != code.coverage_cosine
    between = (static.coverage_cosine + code.coverage_cosine) / 2
    few_words = min(static.min_coverage, code.min_coverage) / 2
    verdicts = {model: off_topic(Topicality(few_words, between, model))
                for model in (STATIC_MODEL_NAME, CODE_MODEL_NAME)}
    assert sum(verdict is not None for verdict in verdicts.values()) == 1
    # A model nobody calibrated (a user's own) is judged by the words alone.
    assert off_topic(Topicality(0.5, 0.01, "my-model")) is None
    assert off_topic(Topicality(0.0, 0.99, "my-model")) is not None
    assert set(OFF_TOPIC_THRESHOLDS) <= {MINILM_MODEL_NAME, CODE_MODEL_NAME, STATIC_MODEL_NAME}


async def assemble_request(s, **params) -> dict:
    return await s.request("ctxls/assemble", {"query": "upload pipeline stage", "budgetTokens": 200}
                           | params)


async def test_citations_map_to_real_ranges_and_stats_are_recorded(pipeline: Path):
    async with serve(pipeline) as s:
        await s.wait_indexed()
        result = await assemble_request(s)
        assert not result["abstained"] and not result["weak"]
        assert result["stats"]["tokenizer"].startswith("estimate")  # embeddings are off here
        blocks = result["context"].split("\n\n[")
        assert len(blocks) == len(result["citations"]) == result["stats"]["chunks"] > 1
        for n, (citation, block) in enumerate(zip(result["citations"], blocks), 1):
            assert citation["n"] == n
            chunk = citation["chunk"]
            file_lines = (pipeline / citation["path"]).read_text().split("\n")
            body = block.split("\n", 1)[1]
            assert body.split("\n") == file_lines[chunk["startLine"]:chunk["endLine"] + 1]
        assert result["stats"]["reducedTokens"] <= 200
        assert result["stats"]["savedTokens"] > 0 and 0 < result["stats"]["pctReduced"] < 100

        status = await s.request("ctxls/status")
        assert status["assemble"]["calls"] == 1 and status["assemble"]["recent"][0]["chunks"] > 1
        assert status["assemble"]["savedTokens"] == result["stats"]["savedTokens"]  # the protocol's spelling
        assert status["assemble"]["recent"][0]["budgetTokens"] == 200

        with pytest.raises(JsonRpcException) as err:
            await s.request("ctxls/assemble", {"query": "x"})
        assert (err.value.code, err.value.data) == (-32602, {"param": "budgetTokens"})


async def test_byte_identical_across_calls_and_a_restart(pipeline: Path):
    async with serve(pipeline) as s:
        await s.wait_indexed()
        first = await assemble_request(s)
        again = await assemble_request(s)
    async with serve(pipeline) as s:
        await s.wait_indexed()
        after_restart = await assemble_request(s)
        status = await s.request("ctxls/status")
    assert first["context"] == again["context"] == after_restart["context"]
    assert first["citations"] == after_restart["citations"]
    assert status["assemble"]["calls"] == 3  # the aggregate survived the restart


def stored_aggregate(root: Path) -> dict:
    conn = sqlite3.connect(root / ".ctxls" / "index.db")
    try:
        return json.loads(conn.execute("SELECT value FROM meta WHERE key = 'assemble.aggregate'").fetchone()[0])
    finally:
        conn.close()


async def test_the_stored_aggregate_keeps_its_on_disk_names(pipeline: Path):
    """The aggregate in the store's meta row is data at rest: a row as
    today's (and older) ctxls writes it is read and added to, and it is
    written back in the same names."""
    async with serve(pipeline) as s:
        await s.wait_indexed()
    # Exactly what a ctxls before the names left index/ stored.
    earlier = ('{"calls": 41, "abstentions": 3, "failovers": 1, "savedTokens": 5000, "recent": '
               '[{"at": 1, "budgetTokens": 300, "reducedTokens": 120, "savedTokens": 80, "chunks": 2, '
               '"weak": false, "abstained": false, "failover": false}]}')
    conn = sqlite3.connect(pipeline / ".ctxls" / "index.db")
    conn.execute("INSERT INTO meta(key, value) VALUES ('assemble.aggregate', ?) "
                 "ON CONFLICT(key) DO UPDATE SET value = excluded.value", (earlier,))
    conn.commit()
    conn.close()
    async with serve(pipeline) as s:
        await s.wait_indexed()
        result = await assemble_request(s)
        status = (await s.request("ctxls/status"))["assemble"]
    saved = result["stats"]["savedTokens"]
    assert (status["calls"], status["abstentions"], status["savedTokens"]) == (42, 3, 5000 + saved)
    assert [call["budgetTokens"] for call in status["recent"]] == [200, 300]
    stored = stored_aggregate(pipeline)
    assert stored["savedTokens"] == 5000 + saved and "saved_tokens" not in stored
    assert stored["recent"][0] == {"at": stored["recent"][0]["at"], "budgetTokens": 200,
                                   "reducedTokens": result["stats"]["reducedTokens"], "savedTokens": saved,
                                   "chunks": result["stats"]["chunks"], "weak": result["weak"],
                                   "abstained": False, "failover": False}
    assert stored["recent"][1] == json.loads(earlier)["recent"][0]


async def test_a_word_only_in_the_config_files_searched_is_not_off_topic(repo: Path):
    """assemble searches config files (by default, or when asked): a word
    they alone hold is on topic there, and so is it cited."""
    write_tree(repo, {"conf.toml": "".join(f"[section{i}]\njitter = {i}\n\n" for i in range(20))})
    async with serve(repo) as s:
        await s.wait_indexed()
        for kind in (None, ["config", "doc"], "config"):
            answer = await s.request("ctxls/assemble", {"query": "jitter", "budgetTokens": 500}
                                     | ({"kind": kind} if kind else {}))
            assert not answer["abstained"], (kind, answer["stats"].get("note"))
            assert "conf.toml" in [c["path"] for c in answer["citations"]], kind
        # A question whose words occur nowhere is still off-topic.
        docs_only = await s.request("ctxls/assemble", {"query": "zzqx wholly unmatched",
                                                       "budgetTokens": 500})
        assert docs_only["abstained"]


async def test_abstains_over_lsp_and_fails_over_when_the_store_breaks(pipeline: Path):
    async with serve(pipeline) as s:
        await s.wait_indexed()
        nothing = await assemble_request(s, query="zzqx wholly unmatched")
        assert nothing["abstained"] and nothing["context"] == "" and nothing["citations"] == []
        lexical = await assemble_request(s, mode="lexical")
        assert lexical["citations"] and not lexical["abstained"]
        with pytest.raises(JsonRpcException, match="mode"):
            await assemble_request(s, mode="telepathic")
        assert (await s.request("ctxls/status"))["assemble"]["failovers"] == 0  # a caller's mistake

        conn = sqlite3.connect(pipeline / ".ctxls" / "index.db")
        conn.execute("DROP TABLE fts_code")  # the index becomes unreadable mid-run
        conn.commit()
        conn.close()
        broken = await assemble_request(s)
        assert broken["stats"]["failover"] is True and "fts_code" in broken["stats"]["error"]
        assert broken["abstained"] and broken["context"] == ""
        assert (await s.request("ctxls/status"))["assemble"]["failovers"] == 1


async def test_knowledge_block_order_budget_expiry_and_stale_anchor(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()

        async def remember(key, text, **extra):
            await s.request("ctxls/remember", {"id": key, "text": text} | extra)

        await remember("agent-often", "Uploads retry three times.", by="agent")
        await remember("agent-rare", "The cache is warmed at boot.", by="agent")
        await remember("human-note", "Never log FOO_URL.", by="human")
        await remember("pinned", "Run make test before pushing.", by="agent", meta={"pinned": True})
        await remember("anchored", "Session.request sends with the session timeout.", by="human",
                       meta={"anchor": {"path": "pkg/session.py", "symbol": "Session.request"}})
        await remember("expired", "Obsolete.", expiresAt=1)
        await remember("forgotten", "Gone soon.")
        await s.request("ctxls/forget", {"id": "forgotten"})
        for _ in range(3):
            await s.request("ctxls/recall", {"query": "uploads retry", "kind": "fact"})

        block = await s.request("ctxls/knowledge", {})
        keys = [line.split("]")[0][3:] for line in block["block"].split("\n")[1:]]
        assert keys == ["pinned", "anchored", "human-note", "agent-often", "agent-rare"]
        assert block["facts"] == 5 and "stale" not in block["block"]
        assert await s.request("ctxls/knowledge", {}) == block  # same state, same bytes

        small = await s.request("ctxls/knowledge", {"budgetChars": 80})
        assert len(small["block"]) <= 80 and small["facts"] == 1

        text = (repo / "pkg/session.py").read_text()
        s.open("pkg/session.py", text)
        s.replace("pkg/session.py", text.replace("self.timeout)", "self.timeout * 2)"), version=2)

        async def stale():
            block = (await s.request("ctxls/knowledge", {}))["block"]
            return block if "(stale: pkg/session.py Session.request changed" in block else None

        stale_block = await s.wait_for(stale)
        assert stale_block and stale_block.count("stale") == 1


async def test_a_fact_anchored_by_an_absolute_path_or_a_uri_reads_stale_too(repo: Path):
    """The edit log holds repo-relative paths, and an anchor was compared as
    written: a fact anchored by `/abs/…/billing.py`, `./billing.py` or a
    `file://` URI never read as stale (agents.md: wherever ctxls takes a
    path, the absolute form and the uri work)."""
    path = repo / "pkg/session.py"
    async with serve(repo) as s:
        await s.wait_indexed()
        anchors = {"rel": "pkg/session.py", "abs": str(path), "dot": "./pkg/session.py",
                   "uri": path.as_uri(), "outside": "/nonexistent/pkg/session.py"}
        for key, anchor in anchors.items():
            await s.request("ctxls/remember", {"id": key, "text": f"sessions time out ({key})",
                                               "meta": {"anchor": anchor}})
        text = path.read_text()
        s.open("pkg/session.py", text)
        s.replace("pkg/session.py", text.replace("self.timeout)", "self.timeout * 2)"), version=2)

        async def stale_keys():
            block = (await s.request("ctxls/knowledge", {}))["block"]
            keys = {line.split("]")[0][3:] for line in block.split("\n")[1:] if "(stale:" in line}
            return keys if "rel" in keys else None

        assert await s.wait_for(stale_keys) == {"rel", "abs", "dot", "uri"}


async def test_a_written_fact_that_answers_the_question_is_on_topic(pipeline: Path):
    """The question's words occur in no file, only in a fact written for it:
    assemble abstained "off-topic" (topicality measured code and docs
    alone) and recall called the answer holding the fact weak."""
    question = "why does zzqx frobnication stall on qwvk"
    async with serve(pipeline) as s:
        await s.wait_indexed()
        assert (await assemble_request(s, query=question))["abstained"]  # nothing answers yet
        await s.request("ctxls/remember", {"id": "deploy-env", "text": "zzqx frobnication "
                                           "stalls unless the qwvk variable is set"})
        answer = await assemble_request(s, query=question)
        assert not answer["abstained"], answer["stats"].get("note")
        assert "deploy-env" in [c["path"] for c in answer["citations"]]
        recalled = await s.request("ctxls/recall", {"query": question})
        assert not recalled.get("weak"), recalled.get("weakReason")


async def test_a_fact_reads_stale_as_soon_as_its_anchored_file_changed_on_disk(repo: Path):
    """The mark read the edit log alone, so it came only once the watcher
    had logged the edit (about 2 s later; never with the watcher off): the
    anchored files are checked against the disk first. An anchor outside
    the folder is never read."""
    path = repo / "pkg/session.py"
    async with serve(repo, options={"watch": "off"}) as s:
        await s.wait_indexed()
        for key, anchor in {"inside": "pkg/session.py", "outside": "/etc/hostname"}.items():
            await s.request("ctxls/remember", {"id": key, "text": f"sessions time out ({key})",
                                               "meta": {"anchor": anchor}})
        assert "stale" not in (await s.request("ctxls/knowledge", {}))["block"]
        time.sleep(0.01)  # the write's mtime (the edit's date) after the facts'
        path.write_text(path.read_text().replace("self.timeout)", "self.timeout * 2)"))
        block = (await s.request("ctxls/knowledge", {}))["block"]
        assert "[inside] sessions time out (inside) (stale: pkg/session.py changed" in block
        assert "(outside) (stale" not in block
