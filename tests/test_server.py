"""End to end: the real `ctxls serve` process driven over stdio by pytest-lsp."""

from __future__ import annotations

import asyncio
import functools
import re
import time
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from conftest import serve, write_tree
from rawrpc import StdioDaemon


def symbols_of(hits: list[dict]) -> list[str | None]:
    return [h["chunk"]["symbol"] for h in hits]


async def recall_code(session, query: str, n: int = 10) -> list[dict]:
    result = await session.request("ctxls/recall", {"query": query, "kind": "code", "n": n})
    return result["hits"]


async def test_cold_index_reports_progress_and_recall_finds_function(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        (reports,) = [r for r in s.client.progress_reports.values() if r]
        assert isinstance(reports[0], types.WorkDoneProgressBegin)
        assert any(isinstance(r, types.WorkDoneProgressReport) and r.percentage == 100
                   for r in reports)
        assert isinstance(reports[-1], types.WorkDoneProgressEnd)

        hits = await recall_code(s, "send prepared request")
        top = hits[0]
        assert top["path"] == "pkg/session.py"
        assert top["chunk"] == {"symbol": "send_prepared", "startLine": 15, "endLine": 17}
        assert top["uri"] == s.uri("pkg/session.py")
        assert top["range"] == {"start": {"line": 15, "character": 0},
                                "end": {"line": 17, "character": len("    return (method, url, timeout)")}}
        assert top["format"] == "python" and top["kind"] == "code" and top["score"] > 0

        status = await s.request("ctxls/status")
        assert status["files"] == 5 and status["chunks"] > 5 and status["indexing"] is False
        assert status["root"] == str(repo.resolve())
        assert status["dbPath"] == str(repo.resolve() / ".ctxls" / "index.db")
        # The watcher for files changed outside the editor was registered dynamically.
        assert [r.method for r in s.registrations] == [types.WORKSPACE_DID_CHANGE_WATCHED_FILES]


async def test_recall_groups_by_kind_and_returns_bodies(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        grouped = await s.request("ctxls/recall", {"query": "deploy FOO_URL", "body": True})
        assert set(grouped["groups"]) == {"code", "doc", "config", "fact", "episode"}
        doc_top = grouped["groups"]["doc"][0]
        assert doc_top["path"] == "README.md" and doc_top["chunk"]["symbol"] == "Sample > Deploying"
        assert "FOO_URL" in doc_top["body"]
        assert grouped["partial"] is False
        only_doc = await s.request("ctxls/recall", {"query": "deploy", "kind": ["doc"]})
        assert list(only_doc["groups"]) == ["doc"]


async def test_unsaved_change_is_recallable_and_close_reverts_to_disk(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        original = (repo / "pkg/retry.py").read_text()
        s.open("pkg/retry.py", original)
        edited = original.replace("retry_upload", "resume_transfer")
        s.replace("pkg/retry.py", edited, version=2)

        async def renamed_visible():
            return symbols_of(await recall_code(s, "resume_transfer"))[:1] == ["resume_transfer"]

        assert await s.wait_for(renamed_visible)
        assert "retry_upload" not in symbols_of(await recall_code(s, "retry_upload"))
        assert (repo / "pkg/retry.py").read_text() == original  # nothing was saved

        # get sees the buffer, and says so.
        item = await s.request("ctxls/get", {"id": "pkg/retry.py"})
        assert "resume_transfer" in item["text"] and item["provenance"] == "buffer"

        activity = await s.request("ctxls/recentActivity", {})
        assert {"id": "pkg/retry.py", "symbol": "resume_transfer", "kind": "code"} in [
            {k: a[k] for k in ("id", "symbol", "kind")} for a in activity["items"]]

        s.close("pkg/retry.py")

        async def reverted():
            return symbols_of(await recall_code(s, "retry_upload"))[:1] == ["retry_upload"]

        assert await s.wait_for(reverted)
        assert "resume_transfer" not in symbols_of(await recall_code(s, "resume_transfer"))


async def test_incremental_changes_are_applied(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        text = (repo / "web/app.ts").read_text()
        s.open("web/app.ts", text)
        s.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=s.uri("web/app.ts"), version=2),
            [types.TextDocumentContentChangePartial(
                range=types.Range(types.Position(0, 16), types.Position(0, 28)),
                text="paintGadget")]))

        async def renamed():
            return "paintGadget" in symbols_of(await recall_code(s, "paintGadget"))

        assert await s.wait_for(renamed)


async def test_a_recall_after_a_due_edit_answers_with_it(repo: Path):
    # With no debounce, the edit is due when the recall arrives: the recall
    # waits for its indexing (a large file's takes a while) instead of
    # answering from the index as it was before the edit.
    text = "".join(f"export function part{i}(name: string): string {{\n"
                   f"  return `<li>${{name}} {i}</li>`;\n}}\n\n" for i in range(3000))
    (repo / "web/parts.ts").write_text(text)
    async with serve(repo, options={"debounceMs": 0}) as s:
        await s.wait_indexed()
        s.open("web/parts.ts", text)
        for version, name in enumerate(("paintGadget", "paintGizmo", "paintDoohickey"), 2):
            s.client.text_document_did_change(types.DidChangeTextDocumentParams(
                types.VersionedTextDocumentIdentifier(uri=s.uri("web/parts.ts"), version=version),
                [types.TextDocumentContentChangeWholeDocument(text=text.replace("part1500", name))]))
            assert name in symbols_of(await recall_code(s, name)), name


async def test_get_whole_file_chunk_range_and_stale_range(repo: Path):
    # Not following the disk, so the change below is certainly met by the get
    # (tests/test_live_disk.py has the watcher's side).
    async with serve(repo, options={"watch": "off"}) as s:
        await s.wait_indexed()
        whole = await s.request("ctxls/get", {"id": "pkg/session.py"})
        assert whole["text"] == (repo / "pkg/session.py").read_text()
        assert whole["source"] == "file" and whole["format"] == "python"
        lines = await s.request("ctxls/get", {"id": "pkg/session.py", "startLine": 15, "endLine": 17})
        assert lines["text"].splitlines()[0] == "def send_prepared(method, url, timeout):"

        # Changed on disk behind the daemon's back: line pointers are stale.
        (repo / "pkg/session.py").write_text("# moved\n" + (repo / "pkg/session.py").read_text())
        with pytest.raises(JsonRpcException) as err:
            await s.request("ctxls/get", {"id": "pkg/session.py", "startLine": 15, "endLine": 17})
        assert err.value.code == -32002 and err.value.data == {"path": "pkg/session.py"}
        # The whole file is always served fresh.
        assert (await s.request("ctxls/get", {"id": "pkg/session.py"}))["text"].startswith("# moved")


async def test_bad_params_unknown_ids_and_outside_root(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        cases = [
            ("ctxls/recall", {}, "query"),
            ("ctxls/recall", {"query": 5}, "query"),
            ("ctxls/recall", {"query": "x", "n": "ten"}, "n"),
            ("ctxls/recall", {"query": "x", "n": 0}, "n"),
            ("ctxls/recall", {"query": "x", "kind": "poem"}, "kind"),
            ("ctxls/recall", {"query": "x", "mode": "psychic"}, "mode"),
            ("ctxls/get", {}, "id"),
            ("ctxls/get", {"id": "pkg/session.py", "startLine": -1}, "startLine"),
            ("ctxls/get", {"id": "pkg/session.py", "startLine": 5, "endLine": 2}, "endLine"),
            ("ctxls/index", {"paths": "pkg"}, "paths"),
            ("ctxls/recentActivity", {"limit": 0}, "limit"),
        ]
        for method, params, param in cases:
            with pytest.raises(JsonRpcException) as err:
                await s.request(method, params)
            assert (err.value.code, err.value.data) == (-32602, {"param": param}), (method, params)

        assert await s.request("ctxls/get", {"id": "no/such/file.py"}) is None
        for escape in ("../outside.py", "/etc/passwd"):
            with pytest.raises(JsonRpcException) as err:
                await s.request("ctxls/get", {"id": escape})
            assert err.value.code == -32004 and err.value.data == {"path": escape}
        with pytest.raises(JsonRpcException) as err:
            await s.request("ctxls/noSuchMethod", {})
        assert err.value.code == -32601

        # Still serving after all of that.
        assert (await recall_code(s, "send_prepared"))[0]["chunk"]["symbol"] == "send_prepared"


async def test_binary_and_oversized_files_are_skipped(repo: Path):
    write_tree(repo, {
        "blob.py": b"def looks_like_code():\x00\x01\x02 binary_marker_token\n",
        "huge.py": "def enormous_marker_token():\n" + "    x = 1\n" * 200_000,
        "latin.py": b"def caf\xe9_function():\n    return 'invalid utf8 marker'\n",
    })
    async with serve(repo) as s:
        await s.wait_indexed()
        assert "blob.py" not in [h["path"] for h in await recall_code(s, "binary_marker_token")]
        assert "huge.py" not in [h["path"] for h in await recall_code(s, "enormous_marker_token")]
        hits = await recall_code(s, "invalid utf8 marker")
        assert hits and hits[0]["path"] == "latin.py"  # decoded with replacement, not dropped
        assert (await s.request("ctxls/status"))["files"] == 6


async def test_index_request_is_incremental_and_scoped(repo: Path):
    # Not following the disk: the explicit passes are what is tested here.
    async with serve(repo, options={"watch": "off"}) as s:
        await s.wait_indexed()
        noop = await s.request("ctxls/index", {})
        assert noop == {"files": 5, "added": 0, "updated": 0, "removed": 0, "unchanged": 5,
                        "skipped": 0}
        (repo / "pkg/new_mod.py").write_text("def freshly_added():\n    pass\n")
        (repo / "web/app.ts").unlink()
        scoped = await s.request("ctxls/index", {"paths": ["pkg"]})
        # The scoped pass adds under pkg/ and does not delete web/app.ts's rows.
        assert (scoped["added"], scoped["removed"]) == (1, 0)
        assert (await s.request("ctxls/status"))["files"] == 6
        full = await s.request("ctxls/index", {})
        assert full["removed"] == 1
        assert await recall_code(s, "renderWidget") == []
        forced = await s.request("ctxls/index", {"force": True})
        assert forced["updated"] == 5 and forced["unchanged"] == 0


async def test_watched_file_change_reindexes(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        (repo / "pkg/extra.py").write_text("def watched_addition():\n    return 1\n")
        s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=s.uri("pkg/extra.py"), type=types.FileChangeType.Created)]))

        async def found():
            return await recall_code(s, "watched_addition")

        assert (await s.wait_for(found))[0]["path"] == "pkg/extra.py"


async def test_document_and_workspace_symbols(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        symbols = await s.client.text_document_document_symbol_async(types.DocumentSymbolParams(
            text_document=types.TextDocumentIdentifier(uri=s.uri("pkg/session.py"))))
        names = {sym.name: sym for sym in symbols}
        assert set(names) == {"Session", "send_prepared"}
        assert [c.name for c in names["Session"].children] == ["request", "close"]
        assert names["Session"].kind == types.SymbolKind.Class

        found = await s.client.workspace_symbol_async(types.WorkspaceSymbolParams(query="request"))
        assert any(sym.name == "request" and sym.container_name == "Session"
                   and sym.location.uri == s.uri("pkg/session.py") for sym in found)


async def test_the_outline_asked_for_as_a_file_opens_is_the_open_text(repo: Path):
    """Editors ask for the outline right after didOpen and keep the first
    answer for that text (VS Code's quick open `@`): it must come from the
    buffer just opened, not from the rows made before it, for every file."""
    async with serve(repo) as s:
        await s.wait_indexed()
        for round_ in range(5):
            original = (repo / "pkg/session.py").read_text()
            s.open("pkg/session.py", original + f"\n\ndef opened_helper_{round_}():\n    return 1\n")
            symbols = await s.client.text_document_document_symbol_async(types.DocumentSymbolParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("pkg/session.py"))))
            assert f"opened_helper_{round_}" in {sym.name for sym in symbols or []}, round_
            s.close("pkg/session.py")


async def test_a_file_reopened_while_its_close_is_indexing_keeps_the_open_text(repo: Path):
    """A close sends the file back to disk (a large one: seconds of indexing);
    the open right after it must win, whichever lane thread finishes first."""
    big = "".join(f"def part{i}(x):\n    return x + {i}\n\n\n" for i in range(3000))
    (repo / "pkg/big.py").write_text(big)
    async with serve(repo) as s:
        await s.wait_indexed()
        s.open("pkg/big.py", big + "# edited\n")
        s.close("pkg/big.py")
        s.open("pkg/big.py", "def reopened_helper():\n    return 1\n")

        async def outline() -> set[str]:
            symbols = await s.client.text_document_document_symbol_async(types.DocumentSymbolParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri("pkg/big.py"))))
            return {sym.name for sym in symbols or []}

        assert await outline() == {"reopened_helper"}
        await asyncio.sleep(3)  # the close's indexing of 3,000 functions is long over
        assert await outline() == {"reopened_helper"}
        assert symbols_of(await recall_code(s, "reopened_helper"))[0] == "reopened_helper"


async def test_file_outside_every_folder_is_served_from_its_buffer(repo: Path, tmp_path: Path):
    loose = tmp_path / "elsewhere" / "scratch.py"
    loose.parent.mkdir()
    loose.write_text("def scratch_pad_helper():\n    return 0\n")
    async with serve(repo) as s:
        await s.wait_indexed()
        s.client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            uri=loose.as_uri(), language_id="python", version=1, text=loose.read_text())))

        async def found():
            return await recall_code(s, "scratch_pad_helper")

        hits = await s.wait_for(found)
        assert hits and hits[0]["uri"] == loose.as_uri()
        assert not (loose.parent / ".ctxls").exists()  # nothing written next to it


def change_folders(s, added: Path | None = None, removed=None):
    """Tell the server a folder was added (returned) or one removed."""
    folder = types.WorkspaceFolder(uri=added.resolve().as_uri(), name=added.name) if added else None
    s.client.workspace_did_change_workspace_folders(types.DidChangeWorkspaceFoldersParams(
        types.WorkspaceFoldersChangeEvent(added=[folder] if folder else [], removed=[removed] if removed else [])))
    return folder


async def indexed_in(s, name: str) -> list:
    """The code hits of ``name`` once some folder has it indexed."""
    async def found():
        return await recall_code(s, name)

    return await s.wait_for(found)


async def test_workspace_folders_can_be_added_and_removed(repo: Path, tmp_path: Path):
    other = tmp_path / "other"
    write_tree(other, {"lib/tool.py": "def second_folder_tool():\n    return 2\n"})
    async with serve(repo) as s:
        await s.wait_indexed()
        folder = change_folders(s, added=other)
        hits = await indexed_in(s, "second_folder_tool")
        assert hits[0]["uri"] == (other / "lib/tool.py").resolve().as_uri()
        assert (other / ".ctxls" / "index.db").exists()  # each folder has its own index

        change_folders(s, removed=folder)

        async def gone():
            return not await recall_code(s, "second_folder_tool")

        assert await s.wait_for(gone)


async def test_recent_activity_names_each_folders_file_by_its_uri(repo: Path, tmp_path: Path):
    """The same repo-relative path edited in two workspace folders came back
    as two items of one `id` and nothing else: an editor opened the first
    folder's file for both (VS Code's Recent Activity did)."""
    other = tmp_path / "other"
    write_tree(other, {"pkg/session.py": "def other_folder_fn():\n    return 2\n"})
    async with serve(repo) as s:
        await s.wait_indexed()
        change_folders(s, added=other)
        assert await indexed_in(s, "other_folder_fn")
        s.open("pkg/session.py")
        s.replace("pkg/session.py", (repo / "pkg/session.py").read_text() + "\n\ndef edited_here():\n    pass\n",
                  version=2)
        with open(other / "pkg/session.py", "a") as fh:
            fh.write("\n\ndef edited_there():\n    pass\n")

        async def both():
            items = (await s.request("ctxls/recentActivity", {"days": 1}))["items"]
            found = {a["symbol"]: a for a in items if a["symbol"] in ("edited_here", "edited_there")}
            return found if len(found) == 2 else None

        items = await s.wait_for(both, timeout=20)
        assert items["edited_here"]["uri"] == (repo / "pkg/session.py").resolve().as_uri()
        assert items["edited_there"]["uri"] == (other / "pkg/session.py").resolve().as_uri()
        assert items["edited_here"]["id"] == items["edited_there"]["id"] == "pkg/session.py"


async def test_a_folder_inside_another_folder_answers_each_place_once(repo: Path):
    """A workspace folder inside another one (a monorepo and one of its
    packages, opened side by side) is indexed by both: every answer merged
    across folders listed each of its files twice, under each folder."""
    async with serve(repo) as s:
        await s.wait_indexed()
        change_folders(s, added=repo / "pkg")

        async def both_indexed():
            status = await s.request("ctxls/status")
            return len(status.get("folders", [])) == 2 and all(f["complete"] for f in status["folders"])

        assert await s.wait_for(both_indexed, timeout=30)
        (repo / "pkg" / "session.py").write_text(
            (repo / "pkg" / "session.py").read_text() + "\n\ndef edited_in_both():\n    return 1\n")
        s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=(repo / "pkg" / "session.py").resolve().as_uri(),
                            type=types.FileChangeType.Changed)]))

        def places(items, *keys):
            return [tuple(item[k] if k != "range" else item[k]["start"]["line"] for k in keys) for item in items]

        hits = await recall_code(s, "send_prepared")
        assert hits and len(places(hits, "uri", "range")) == len(set(places(hits, "uri", "range")))
        located = (await s.request("ctxls/locate", {"text": "send_prepared retries the session"}))["files"]
        assert located and len({f["uri"] for f in located}) == len(located)
        found = (await s.request("ctxls/symbols", {"query": "send_prepared", "match": "exact"}))["symbols"]
        assert len(found) == 1
        workspace = await s.client.workspace_symbol_async(types.WorkspaceSymbolParams(query="send_prepared"))
        assert len({(w.location.uri, w.location.range.start.line) for w in workspace}) == len(workspace) >= 1

        async def edited():
            items = (await s.request("ctxls/recentActivity", {"days": 1}))["items"]
            return [a for a in items if a["symbol"] == "edited_in_both"]

        assert len(await s.wait_for(edited, timeout=10)) == 1


async def test_requests_are_answered_while_a_cold_index_runs(tmp_path: Path):
    big = tmp_path / "big"
    write_tree(big, {f"mod{i:04}/m.py": f"def function_{i}(x):\n    return x + {i}\n"
                     for i in range(4000)})
    # No wait for the first index: not ready is said at once, never "no hits".
    async with serve(big, options={"readyWaitMs": 0}) as s:
        with pytest.raises(JsonRpcException) as err:
            await s.request("ctxls/recall", {"query": "function_3999", "kind": "code"})
        assert err.value.code == -32011
        assert re.fullmatch(r"index not ready: (\d+ of \d+ files|listing files), retry in ~\d+ s",
                            err.value.message), err.value.message
        assert err.value.data["retryAfterS"] >= 1 and err.value.data["total"] in (0, 4000)
        assert (await s.request("ctxls/status"))["indexing"] is True
        await s.wait_indexed(timeout=120)
        done = await s.request("ctxls/recall", {"query": "function_3999", "kind": "code"})
        assert done["partial"] is False
        assert done["hits"][0]["chunk"]["symbol"] == "function_3999"


async def test_bad_initialization_options_warn_and_fall_back(repo: Path):
    async with serve(repo, options={"debounceMs": "soon", "include": "py"}) as s:
        await s.wait_indexed()
        texts = [m.message for m in s.client.messages]
        assert any("debounceMs" in t for t in texts) and any("include" in t for t in texts)
        assert (await s.request("ctxls/status"))["files"] == 5  # defaults in force


async def test_document_symbols_of_other_languages_have_their_own_kinds(tmp_path: Path):
    """A Swift protocol and extension, a Kotlin object: the kinds the
    definitions tables give, not the default Variable."""
    fixtures = Path(__file__).parent / "fixtures" / "languages"
    root = tmp_path / "mobile"
    write_tree(root, {"Cache.swift": (fixtures / "Cache.swift").read_text(),
                      "Inventory.kt": (fixtures / "Inventory.kt").read_text()})
    async with serve(root) as s:
        await s.wait_indexed()

        async def kinds(name: str) -> dict[str, types.SymbolKind]:
            symbols = await s.client.text_document_document_symbol_async(types.DocumentSymbolParams(
                text_document=types.TextDocumentIdentifier(uri=s.uri(name))))
            return {sym.name: sym.kind for sym in symbols}

        swift = await kinds("Cache.swift")
        assert swift["Cacheable"] == types.SymbolKind.Interface
        assert swift["Entry"] == types.SymbolKind.Struct
        assert types.SymbolKind.Class in {kind for name, kind in swift.items() if "Cache" in name}
        assert (await kinds("Inventory.kt"))["Clock"] == types.SymbolKind.Object


# -- the request router (daemon/router.py) ------------------------------------------------

def many_files(root: Path, count: int) -> Path:
    root.mkdir()
    write_tree(root, {f"pkg/mod_{n}.py": f"def function_{n}(x):\n    return x + {n}\n"
                      for n in range(count)})
    return root


def test_every_method_the_daemon_serves_has_a_row_in_the_router_table():
    """The table is the one place that says how a method runs: a handler
    registered without a row fails at import (route_of), and every method
    pygls or the shared socket can reach has one."""
    from ctxls.daemon.router import ROUTES, Lane, route_of
    from ctxls.daemon.server import server

    served = set(server.protocol.fm.features) | set(server.custom_methods)
    assert served - set(ROUTES) == set()
    assert {method for method in served if ROUTES[method].lane is Lane.EXCLUSIVE} >= {
        "ctxls/remember", "ctxls/forget", "ctxls/index", "ctxls/ingest", "ctxls/stash"}
    assert ROUTES["ctxls/recall"].settles and ROUTES["ctxls/recall"].lane is Lane.BACKGROUND
    assert ROUTES["textDocument/documentSymbol"].settles
    with pytest.raises(LookupError, match="ROUTES"):
        route_of("ctxls/noSuchMethod")


async def test_a_read_is_answered_while_heavy_analyses_fill_their_lane():
    """Four slow impacts (or code-lens resolves) held all the read pool's
    threads, and a recall from another client got no answer until one ended.
    Analyses run in a lane of their own: while it is full, a recall runs."""
    import threading

    from ctxls.daemon.router import READ_WORKERS, ROUTES, Lane, Router

    heavy = ["ctxls/impact", "codeLens/resolve", "callHierarchy/incomingCalls"]
    assert {ROUTES[method].lane for method in heavy} == {Lane.ANALYSIS}
    router = Router()
    recall_ran, started = threading.Event(), threading.Semaphore(0)

    def analysis() -> bool:
        """Holds its thread until a recall has run: whether one ran meanwhile."""
        started.release()
        return recall_ran.wait(timeout=60)

    analyses = [asyncio.create_task(router.run(heavy[n % len(heavy)], analysis))
                for n in range(READ_WORKERS + 2)]
    await asyncio.to_thread(started.acquire)  # the lane is busy before the recall comes
    await router.run("ctxls/recall", recall_ran.set)
    assert await asyncio.gather(*analyses) == [True] * len(analyses)


async def test_a_cancelled_pass_stops_at_its_next_file(tmp_path: Path):
    """$/cancelRequest cancels the task awaiting the work; the router sets the
    request's token and the pass stops between files instead of running to
    the end (and is no index error: the next pass resumes)."""
    from ctxls.daemon.router import ROUTER
    from ctxls.index.engine import Engine, EngineOptions

    root = many_files(tmp_path / "many", 1500)
    engine = Engine(root, EngineOptions(db_path=str(tmp_path / "index.db"), embeddings=False))
    task = asyncio.create_task(ROUTER.run("ctxls/index", functools.partial(engine.index, None, True)))
    deadline = time.monotonic() + 60
    while engine.progress.done == 0 and time.monotonic() < deadline:
        await asyncio.sleep(0.005)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    while engine.indexing and time.monotonic() < deadline:
        await asyncio.sleep(0.01)
    assert not engine.indexing and engine.index_error is None
    assert 0 < engine.progress.done < engine.progress.total == 1500
    assert engine.status()["files"] < 1500
    engine.close()


def test_a_cancelled_request_is_answered_request_cancelled_and_the_daemon_goes_on(tmp_path: Path):
    root = many_files(tmp_path / "many", 1500)
    daemon = StdioDaemon(root)
    try:
        assert daemon.wait_indexed(timeout=120)["complete"]
        conn = daemon.conn
        conn.send({"jsonrpc": "2.0", "id": "pass", "method": "ctxls/index", "params": {"force": True}})
        conn.send({"jsonrpc": "2.0", "method": "$/cancelRequest", "params": {"id": "pass"}})
        reply = conn.reply_to("pass", timeout=60)
        assert reply["error"]["code"] == -32800, reply
        status = conn.request("ctxls/status", {}, "after")["result"]
        assert "indexError" not in status and daemon.alive()
    finally:
        daemon.close()


def test_positions_are_utf16_whatever_encoding_the_client_offers_first(tmp_path: Path):
    """Neovim offers UTF-8 first; every column the server computes is UTF-16,
    so that is what it announces (it took the client's first choice, and
    impact's caller ranges were off by the UTF-8 bytes of `é😀`). A hit's
    range ends at its last line's UTF-16 length (code points before), a CRLF
    line's `\\r` not counted; `get` of a CRLF range ends without it."""
    write_tree(tmp_path, {
        "m.py": 'def helper_function(x):\n    return x\n\n\ndef rocket_caller():\n'
                '    s = "é😀"; helper_function(1)\n    return "go 🚀🚀🚀"\n',
        "crlf.py": b"def crlf_only_function():\r\n    return 1\r\n"})
    daemon = StdioDaemon(tmp_path, capabilities={
        "general": {"positionEncodings": ["utf-8", "utf-16", "utf-32"]}})
    try:
        assert daemon.initialize_result["capabilities"]["positionEncoding"] == "utf-16"
        daemon.wait_indexed()
        impact = daemon.conn.request("ctxls/impact", {"symbol": "helper_function"}, 1)["result"]
        call = next(c for c in impact["callers"] if c["uri"].endswith("/m.py"))
        line = '    s = "é😀"; helper_function(1)'
        before = len(line[:line.index("helper_function")].encode("utf-16-le")) // 2
        assert call["range"]["start"]["character"] == before == 15  # UTF-8 would say 18

        def hit_of(query: str) -> dict:
            answer = daemon.conn.request("ctxls/recall", {"query": query, "kind": "code"}, query)
            return answer["result"]["hits"][0]

        assert hit_of("rocket_caller")["range"]["end"] == {"line": 6, "character": 22}  # not 19
        assert hit_of("crlf_only_function")["range"]["end"] == {"line": 1, "character": 12}
        got = daemon.conn.request("ctxls/get", {"id": "crlf.py", "startLine": 0, "endLine": 1},
                                  "get")["result"]
        assert got["text"] == "def crlf_only_function():\n    return 1"  # a range's lines, as an LF file's
    finally:
        daemon.close()


def test_definition_ranges_end_inside_the_document(tmp_path: Path):
    """A definition's range (documentSymbol, workspace/symbol, call hierarchy
    items, impact's definitions) is its whole lines, ending at the end of
    its last line (UTF-16, a CRLF's `\\r` not counted), as a hit's does. It
    ended at the start of the next line, which a file without a final line
    break does not have: {line: <line count>, character: 0}, outside the
    document."""
    last = '    return "😀"'
    write_tree(tmp_path, {
        "tail.py": f"def first():\n    return last()\n\ndef last():\n{last}",  # no final break
        "crlf.py": b"def crlf_last():\r\n    return 1\r\n"})
    daemon = StdioDaemon(tmp_path)
    try:
        daemon.wait_indexed()
        conn = daemon.conn
        uri = (tmp_path / "tail.py").resolve().as_uri()
        end = {"line": 4, "character": len(last.encode("utf-16-le")) // 2}
        outline = conn.request("textDocument/documentSymbol", {"textDocument": {"uri": uri}},
                               "outline")["result"]
        assert [(s["name"], s["range"]["end"]) for s in outline] == [
            ("first", {"line": 1, "character": len("    return last()")}), ("last", end)]
        found = conn.request("workspace/symbol", {"query": "last"}, "symbols")["result"]
        assert {(s["name"], s["location"]["range"]["end"]["line"],
                 s["location"]["range"]["end"]["character"]) for s in found} == {
            ("last", 4, end["character"]), ("crlf_last", 1, len("    return 1"))}
        items = conn.request("textDocument/prepareCallHierarchy", {
            "textDocument": {"uri": uri}, "position": {"line": 3, "character": 5}}, "items")["result"]
        assert [item["range"]["end"] for item in items] == [end]
        callers = conn.request("callHierarchy/incomingCalls", {"item": items[0]}, "in")["result"]
        assert [c["from"]["range"]["end"] for c in callers] == [outline[0]["range"]["end"]]
        impact = conn.request("ctxls/impact", {"symbol": "last"}, "impact")["result"]
        assert [d["range"]["end"] for d in impact["definitions"]] == [end]
    finally:
        daemon.close()


@pytest.mark.parametrize("shut_down_first", [True, False])
def test_exit_status_says_whether_shutdown_came_first(tmp_path: Path, shut_down_first: bool):
    """LSP's `exit`: status 0 after `shutdown`, else 1 (it was 0 either way)."""
    write_tree(tmp_path, {"a.py": "def a():\n    return 1\n"})
    daemon = StdioDaemon(tmp_path)
    if shut_down_first:
        assert "result" in daemon.conn.request("shutdown", None, "bye")
    daemon.conn.send({"jsonrpc": "2.0", "method": "exit"})
    assert daemon.process.wait(timeout=30) == (0 if shut_down_first else 1)


async def test_a_change_to_a_document_never_opened_is_ignored_without_an_error(repo: Path):
    async with serve(repo) as s:
        await s.wait_indexed()
        never = s.uri("pkg/never_opened.py")
        s.client.text_document_did_change(types.DidChangeTextDocumentParams(
            types.VersionedTextDocumentIdentifier(uri=never, version=2),
            [types.TextDocumentContentChangeWholeDocument(text="def ghost_text_fn():\n    pass\n")]))
        assert await recall_code(s, "send_prepared")  # still answering, after the change
        assert not await recall_code(s, "ghost_text_fn")
        assert not [m for m in s.client.messages if m.type == types.MessageType.Error], \
            s.client.messages


async def test_open_buffers_move_with_the_folders_that_take_or_leave_them(repo: Path, tmp_path: Path):
    """A buffer open in a folder added later is served from the buffer, not
    the disk; when its folder is removed it is served from the buffer again
    (as a file outside every folder), not dropped."""
    late = tmp_path / "late"
    write_tree(late, {"mod.py": "def disk_text_function():\n    return 1\n"})
    uri = (late / "mod.py").resolve().as_uri()
    folder = types.WorkspaceFolder(uri=late.resolve().as_uri(), name="late")
    async with serve(repo) as s:
        await s.wait_indexed()
        s.client.text_document_did_open(types.DidOpenTextDocumentParams(types.TextDocumentItem(
            uri=uri, language_id="python", version=1,
            text="def unsaved_buffer_function():\n    return 2\n")))

        async def symbols(name: str) -> list[str]:
            found = await s.request("ctxls/symbols", {"query": name})
            return [d["uri"] for d in found["symbols"]]

        async def outline() -> list[str]:
            found = await s.client.text_document_document_symbol_async(
                types.DocumentSymbolParams(types.TextDocumentIdentifier(uri)))
            return [d.name for d in found or []]

        assert await s.wait_for(lambda: outline()) == ["unsaved_buffer_function"]
        change_folders(s, added=late)
        assert await s.wait_for(lambda: symbols("unsaved_buffer_function"), timeout=30) == [uri]
        assert await symbols("disk_text_function") == []
        assert await outline() == ["unsaved_buffer_function"]

        change_folders(s, removed=folder)

        async def served_loose() -> bool:
            return await outline() == ["unsaved_buffer_function"] and \
                (late / ".ctxls").exists()  # the folder's store stays; the buffer is served

        assert await s.wait_for(served_loose, timeout=10)


def test_lsp_fields_take_their_own_json_type_and_null_where_lsp_allows_it():
    """cattrs's default conversion is str()/int()/bool(): initialize with
    `"rootUri": 5` served the root "5", `"line": "4"` was line 4. Each string,
    integer, float and boolean field now takes its JSON type alone (a whole
    float in the 64-bit range is an integer, an integer a float, a boolean
    neither), and the fields LSP lets be null still take null."""
    from cattrs.errors import ClassValidationError

    from ctxls.daemon.app import lsp_converter

    converter = lsp_converter()
    initialize = {"processId": None, "rootUri": None, "rootPath": None, "workspaceFolders": None,
                  "capabilities": {}, "clientInfo": {"name": "editor", "version": None},
                  "initializationOptions": None, "trace": "off"}
    params = converter.structure(initialize, types.InitializeParams)
    assert (params.process_id, params.root_uri, params.trace) == (None, None, types.TraceValue.Off)
    assert converter.structure({"line": 4.0, "character": 2}, types.Position) == types.Position(4, 2)
    assert converter.structure({"red": 1, "green": 0.5, "blue": 0, "alpha": 1}, types.Color).red == 1.0
    assert converter.structure(5, types.SymbolKind) is types.SymbolKind.Class
    for value, cls in [(initialize | {"rootUri": 5}, types.InitializeParams),
                       (initialize | {"processId": "12"}, types.InitializeParams),
                       ({"line": "4", "character": 2}, types.Position),
                       ({"line": True, "character": 2}, types.Position),
                       ({"line": 4.5, "character": 2}, types.Position),
                       ({"line": 1e300, "character": 2}, types.Position),
                       ({"red": True, "green": 0, "blue": 0, "alpha": 1}, types.Color),
                       ({"query": None}, types.WorkspaceSymbolParams),
                       ({"textDocument": {"uri": "file:///a", "languageId": "python", "version": 1,
                                          "text": None}}, types.DidOpenTextDocumentParams),
                       ({"includeText": 1}, types.SaveOptions)]:
        with pytest.raises(ClassValidationError):
            converter.structure(value, cls)


async def test_unsaved_edits_are_indexed_where_the_path_holds_a_space_or_a_non_ascii_letter(
        tmp_path: Path):
    """pygls files an open buffer under its URI unquoted, and the server
    looked its edits up by the URI as sent (`%20`, `%C3%BC`): every
    didChange there was "not open: ignored", so the index kept the text
    before the edit."""
    import subprocess

    from conftest import SAMPLE_FILES

    root = tmp_path / "space repo ü"
    root.mkdir()
    write_tree(root, {**SAMPLE_FILES, "pkg/café.py": "def total():\n    return 1\n"})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    async with serve(root, {"debounceMs": 20}) as s:
        await s.wait_indexed()
        for rel in ("pkg/retry.py", "pkg/café.py"):
            text = (root / rel).read_text()
            s.open(rel, text)
            name = f"typed_in_{rel.split('/')[1].split('.')[0]}".replace("é", "e")
            s.replace(rel, text + f"\n\ndef {name}():\n    pass\n", version=2)

            async def found(name=name) -> bool:
                hits = (await s.client.protocol.send_request_async(
                    "ctxls/recall", {"query": name, "kind": "code", "n": 1}))["hits"]
                return bool(hits) and hits[0]["chunk"]["symbol"] == name

            assert await s.wait_for(found, timeout=20, interval=0.1), rel


async def test_folders_of_one_name_each_get_a_store_of_their_own_under_a_shared_db_path(
        tmp_path: Path):
    """With `dbPath` set, each folder's store was `<dbPath>.<folder name>`:
    two folders named `app` wrote one store, and the second's code was not
    found. The first keeps the plain name (its memory never moves)."""
    first, second = tmp_path / "one" / "app", tmp_path / "two" / "app"
    write_tree(first, {"src/alpha.py": "def alpha_only_fn():\n    return 1\n"})
    write_tree(second, {"src/beta.py": "def beta_only_fn():\n    return 2\n"})
    shared = tmp_path / "shared.db"
    async with serve(first, {"dbPath": str(shared)}, more_folders=(second,)) as s:
        await s.wait_indexed()
        beta = await indexed_in(s, "beta_only_fn")
        assert beta[0]["uri"] == (second / "src/beta.py").resolve().as_uri()
        alpha = await recall_code(s, "alpha_only_fn")
        assert alpha and alpha[0]["uri"] == (first / "src/alpha.py").resolve().as_uri()
        stores = sorted(p.name for p in tmp_path.glob("shared.db.app*") if p.suffix not in (".wal", ".shm")
                        and not p.name.endswith(("-wal", "-shm", "-journal")))
        assert len(stores) == 2 and "shared.db.app" in stores, stores
