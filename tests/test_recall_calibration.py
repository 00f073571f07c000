"""Recall's calibrated scores: hits of files and written memory (and of several
folders) are merged on P(relevant), not on their sources' raw scores."""

from __future__ import annotations

from pathlib import Path
from types import SimpleNamespace

from ctxls.daemon.app import CtxlsServer
from ctxls.index.assemble import ByteEstimate, Candidate, pack
from ctxls.index.engine import Engine, EngineOptions, Hit, RecallResult, merged_hits
from ctxls.index.recall_calibration import (Calibration, Evidence, QueryEvidence, feature_names,
                                            model_key, shipped_calibration)
from ctxls.index.scopes import EVERYTHING

from conftest import write_tree

README = (
    "# Widget toolkit\n\n"
    "## Installation\n\n"
    "Install the widget toolkit with pip. The toolkit renders widgets, layouts and themes\n"
    "for terminal applications, and it keeps a cache of rendered frames.\n\n"
    "## Rendering\n\n"
    "Frames are rendered by the layout engine, which measures every widget first.\n\n"
    "## Releases\n\n"
    "A release is published to the package index when its tag is pushed; no deploy step.\n"
)
RUNBOOK = ("When the staging database certificate expires, the deploy pipeline stops: "
           "renew the staging database certificate with the vault command, then restart "
           "the deploy pipeline.")


def engine_with_both(root: Path) -> Engine:
    write_tree(root, {"README.md": README,
                      "widgets/layout.py": "def measure(widget):\n    return widget.size\n"})
    engine = Engine(root, EngineOptions(embeddings=False))
    engine.index()
    engine.memory.remember(EVERYTHING, "runbook-certificates", RUNBOOK, kind="doc")
    return engine


def test_a_strongly_matching_memory_document_outranks_a_weak_top_file_doc(tmp_path: Path):
    engine = engine_with_both(tmp_path / "repo")
    # One of the question's words ("deploy") occurs in the README, all of them in the runbook.
    hits = engine.recall("renew the staging database certificate for the deploy pipeline",
                         ["doc"], 5, mode="lexical").hits_by_kind["doc"]
    file_hit = next(h for h in hits if h.uri is not None)
    memory = next(h for h in hits if h.uri is None)
    # Raw scores would put the file first (BM25 over its own table, unbounded):
    # the merge must not be by them.
    assert file_hit.score > memory.score
    assert hits[0] is memory and memory.calibrated > file_hit.calibrated
    engine.close()


def test_a_strongly_matching_file_doc_outranks_a_weak_memory_document(tmp_path: Path):
    engine = engine_with_both(tmp_path / "repo")
    # All the question's words but one occur in a README section; one ("restart") in the runbook.
    hits = engine.recall("how does the layout engine measure every widget before frames are "
                         "rendered again after a restart", ["doc"], 5, mode="lexical").hits_by_kind["doc"]
    memory = next(h for h in hits if h.uri is None)
    assert hits[0].path == "README.md" and hits[0].calibrated > memory.calibrated
    engine.close()


def test_every_recall_hit_carries_a_probability(tmp_path: Path):
    engine = engine_with_both(tmp_path / "repo")
    result = engine.recall("widget layout rendering", None, 10, mode="lexical")
    hits = [h for listed in result.hits_by_kind.values() for h in listed]
    assert hits and all(0.0 <= h.calibrated <= 1.0 for h in hits)
    for listed in result.hits_by_kind.values():  # one source's order is never changed
        assert [h.calibrated for h in listed] == sorted((h.calibrated for h in listed), reverse=True)
    engine.close()


def _model(key: str, weights: dict[str, float], bias: float) -> dict:
    names = feature_names(key)
    return {"features": list(names), "weights": [weights.get(n, 0.0) for n in names], "bias": bias}


def _calibration() -> Calibration:
    models = {}
    for source, mode in (("file", "hybrid"), ("memory", "hybrid")):
        for model in (None, "m"):
            key = model_key(source, mode, model)
            models[key] = _model(key, {"cosine": 10.0, "score": 1.0, "coverage": 1.0}, -5.0)
    return Calibration({"version": 1, "models": models})


def test_calibration_never_rises_down_a_list_and_reads_the_cosine_model_it_was_fitted_for():
    calibration = _calibration()
    listed = [Evidence("file", "hybrid", 1.0, 0.2, None, "m"), Evidence("file", "hybrid", 0.9, 0.6, None, "m")]
    first, second = calibration.calibrate(listed, QueryEvidence(1.0, 3))
    assert second == first  # its higher cosine would put it above the first: capped
    # Another embedding model's cosines are not read: the model without cosines answers.
    other = [Evidence("file", "hybrid", 1.0, 0.9, None, "other")]
    assert calibration.calibrate(other, QueryEvidence(1.0, 3)) == calibration.calibrate(
        [Evidence("file", "hybrid", 1.0, 0.1, None, "other")], QueryEvidence(1.0, 3))


def _hit(path: str, score: float, calibrated: float, uri: str | None) -> Hit:
    return Hit(path=path, uri=uri, kind="doc", format="markdown", score=score, symbol=None,
               start_line=0, end_line=1, end_character=0, body=None, calibrated=calibrated)


def test_hits_of_several_sources_are_merged_on_calibrated_scores():
    file_hits = [_hit("README.md", 1.0, 0.2, "file:///a/README.md"),
                 _hit("docs/b.md", 0.8, 0.2, "file:///a/docs/b.md")]
    memory_hits = [_hit("runbook", 0.3, 0.9, None)]
    assert [h.path for h in merged_hits(file_hits + memory_hits)] == ["runbook", "README.md", "docs/b.md"]


def test_assemble_packs_in_calibrated_order():
    lines = "x = 1\n" * 3
    weak_file = Candidate("a.py", "code", None, 0, 2, 1.0, lines, True, 0.1)
    strong_memory = Candidate("runbook", "fact", None, 0, 0, 0.3, "renew the certificate", False, 0.9)
    blocks = pack([weak_file, strong_memory], 10_000, ByteEstimate())
    assert [b.path for b in blocks] == ["runbook", "a.py"]


def test_the_shipped_calibration_loads():
    calibration = shipped_calibration()
    assert calibration.model_for("file", "lexical", None).features == feature_names("file/lexical")


class _Folder:
    """An engine stand-in answering one recall with fixed hits."""

    def __init__(self, hits: list[Hit]) -> None:
        self.hits = hits

    def recall(self, query, kinds, n, body, mode, scope):
        return RecallResult({"code": list(self.hits)}, False, None, "hybrid")


def test_the_daemon_merges_folders_on_calibrated_scores():
    # Folder a's top hit is only loosely related (relative hybrid score 1.0);
    # folder b's answers the question (a lower raw score in its own scale).
    loose = _hit("a/util.py", 1.0, 0.05, "file:///a/util.py")
    answer = _hit("b/core.py", 0.7, 0.8, "file:///b/core.py")
    folders = [_Folder([loose]), _Folder([answer])]
    server = SimpleNamespace(workspaces=SimpleNamespace(all=lambda include_loose=False: folders))
    result = CtxlsServer.recall(server, "q", ["code"], 10, False, "hybrid", EVERYTHING, False)
    assert [h.path for h in result.hits_by_kind["code"]] == ["b/core.py", "a/util.py"]
