"""Impact end to end: ctxls/impact, call hierarchy and code lenses through
the real `ctxls serve` process, on the fixtures in tests/fixtures/impact/."""

from __future__ import annotations

import os
import shutil
import subprocess
from pathlib import Path

import pytest
from lsprotocol import types
from pygls.exceptions import JsonRpcException
from pytest_lsp import LanguageClient

from conftest import callers, serve
from ctxls.impact import analysis

FIXTURES = Path(__file__).parent / "fixtures" / "impact"


def fixture_repo(tmp_path: Path, name: str) -> Path:
    root = tmp_path / name
    shutil.copytree(FIXTURES / name, root)
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    return root


def callers_of(result: dict) -> set[tuple[str, int, str | None, str, bool]]:
    """(path, line, enclosing symbol, kind, confirmed) of every caller."""
    return {(c["path"], c["range"]["start"]["line"], c["symbol"], c["kind"], c["confirmed"])
            for c in result["callers"]}


async def impact(session, symbol: str) -> dict:
    return await session.request("ctxls/impact", {"symbol": symbol})


async def test_python_callers_and_call_hierarchy(tmp_path: Path):
    """Method calls, aliases, decorators, callbacks; incoming/outgoing calls agree."""
    root = fixture_repo(tmp_path, "python")
    async with serve(root) as s:
        await s.wait_indexed()

        discount = await impact(s, "apply_discount")
        assert [d["path"] for d in discount["definitions"]] == ["shop/pricing.py"]
        assert discount["definitions"][0]["range"]["start"]["line"] == 9
        assert callers_of(discount) == {
            ("shop/pricing.py", 18, "compute_total", "call", True),
            # `apply_discount as discount`, then map(discount, ...): an alias passed as a callback
            ("shop/orders.py", 14, "bulk", "value", True),
        }
        bulk_call = next(c for c in discount["callers"] if c["symbol"] == "bulk")
        assert bulk_call["range"] == {"start": {"line": 14, "character": 20},
                                      "end": {"line": 14, "character": 28}}
        assert bulk_call["uri"] == s.uri("shop/orders.py")
        # The comment, the string and two imports are mentions, not callers; the
        # def itself is neither (it was counted as "other definitions' names").
        assert discount["mentionKinds"] == {"comment": 1, "string": 1, "import": 2}
        assert (discount["refCount"], discount["confirmed"], discount["mentions"]) == (6, 2, 4)
        # The counts in words, as both editors show them.
        assert discount["summary"] == "2 callers · 4 mentions"
        assert discount["complexity"] == 3  # 1 + if + or
        assert discount["risk"] == "med"  # public, called from two files

        total = await impact(s, "compute_total")
        assert callers_of(total) == {
            ("shop/pricing.py", 30, "Cart.checkout", "call", True),
            # re-exported by the package as total_price, called under that name
            ("shop/orders.py", 10, "quote", "call", True),
            ("tests/pricing_checks.py", 8, "test_total", "call", True),
        }
        assert [c["symbol"] for c in total["callees"]] == ["apply_discount"]

        checkout = await impact(s, "Cart.checkout")
        assert callers_of(checkout) == {
            ("shop/orders.py", 6, "place_order", "call", True),  # cart.checkout(): any receiver
            ("shop/pricing.py", 38, "GiftCart.wrap", "call", True),  # self, inherited
            ("tests/pricing_checks.py", 4, "test_checkout", "call", True),
        }

        register = await impact(s, "register")
        assert callers_of(register) == {("shop/orders.py", 4, "place_order", "decorator", True)}

        unused = await impact(s, "_unused_helper")
        assert unused["callers"] == [] and unused["confirmed"] == 0
        assert unused["risk"] == "low"
        assert any(h.startswith("no references found") for h in unused["hedges"])
        assert not any("public" in h for h in unused["hedges"])  # _private

        # By position: the alias `discount` in bulk() leads to apply_discount.
        by_position = await s.request("ctxls/impact", {
            "textDocument": {"uri": s.uri("shop/orders.py")}, "position": {"line": 14, "character": 22}})
        assert by_position["symbol"] == "apply_discount"
        assert callers_of(by_position) == callers_of(discount)

        assert await impact(s, "no_such_function") is None

        # Call hierarchy: incoming and outgoing calls agree with impact.
        pricing = s.uri("shop/pricing.py")
        items = await s.client.text_document_prepare_call_hierarchy_async(types.CallHierarchyPrepareParams(
            text_document=types.TextDocumentIdentifier(uri=pricing), position=types.Position(16, 6)))
        (item,) = items
        assert (item.name, item.kind, item.uri) == ("compute_total", types.SymbolKind.Function, pricing)
        assert item.selection_range == types.Range(types.Position(16, 4), types.Position(16, 17))

        incoming = await s.client.call_hierarchy_incoming_calls_async(
            types.CallHierarchyIncomingCallsParams(item=item))
        total = await impact(s, "compute_total")
        from_hierarchy = {(call.from_.uri, call.from_.data["symbol"] if call.from_.data else None,
                           r.start.line, r.start.character)
                          for call in incoming for r in call.from_ranges}
        from_impact = {(c["uri"], c["symbol"], c["range"]["start"]["line"],
                        c["range"]["start"]["character"]) for c in total["callers"]}
        assert from_hierarchy == from_impact and len(from_impact) == 3

        # Outgoing from a caller lists the definition we started from.
        (checkout_call,) = [c for c in incoming if c.from_.name == "checkout"]
        outgoing = await s.client.call_hierarchy_outgoing_calls_async(
            types.CallHierarchyOutgoingCallsParams(item=checkout_call.from_))
        checkout = await impact(s, "Cart.checkout")
        assert [(o.to.name, o.to.uri, [r.start.line for r in o.from_ranges]) for o in outgoing] == [
            (c["symbol"], c["definitions"][0]["uri"], [r["start"]["line"] for r in c["ranges"]])
            for c in checkout["callees"]] == [("compute_total", pricing, [30])]


async def test_js_ts_callers_through_barrels_namespaces_and_require(tmp_path: Path):
    root = fixture_repo(tmp_path, "ts")
    async with serve(root) as s:
        await s.wait_indexed()
        price = await impact(s, "formatPrice")
        assert callers_of(price) == {
            ("src/util/format.ts", 6, "Formatter.render", "call", True),
            ("src/app.ts", 5, "main", "value", True),  # values.map(formatPrice), via the barrel
            ("src/app.ts", 7, "main", "call", True),  # fmt.formatPrice(2), a namespace import
            ("src/legacy.js", 3, "legacy", "call", True),  # const { formatPrice: fp } = require(...), in `module.exports = function legacy`
        }
        assert price["mentionKinds"] == {"comment": 1, "string": 1, "import": 3}

        # Re-exported by the barrel under another name, constructed under that name.
        formatter = await impact(s, "Formatter")
        assert callers_of(formatter) == {("src/app.ts", 6, "main", "call", True)}
        shout = await impact(s, "shout")  # through `export * from "./strings"`
        assert callers_of(shout) == {("src/app.ts", 7, "main", "call", True)}

        main = await impact(s, "main")
        # `new PriceFormatter()` is a caller of Formatter (above): a callee of main too.
        assert {c["symbol"] for c in main["callees"]} == {"shout", "Formatter", "Formatter.render", "formatPrice"}
        assert main["callers"] == [] and main["risk"] == "low"
        assert any("public or exported" in h for h in main["hedges"])


async def test_go_package_calls_methods_and_bad_params(tmp_path: Path):
    root = fixture_repo(tmp_path, "go")
    async with serve(root) as s:
        await s.wait_indexed()
        total = await impact(s, "Total")
        assert callers_of(total) == {
            ("pricing/pricing.go", 21, "Cart.Checkout", "call", True),  # same package
            ("main.go", 11, "main", "call", True),  # pricing.Total via the import path
        }
        assert total["mentionKinds"] == {"comment": 1, "string": 1}
        assert total["complexity"] == 4  # 1 + for + if + &&
        checkout = await impact(s, "Cart.Checkout")
        assert callers_of(checkout) == {("main.go", 11, "main", "call", True)}
        assert [c["symbol"] for c in checkout["callees"]] == ["Total"]

        # Bad params name the param; the daemon keeps serving.
        cases = [
            ({}, "symbol"),
            ({"symbol": 3}, "symbol"),
            ({"symbol": "  "}, "symbol"),
            ({"textDocument": "main.go", "position": {"line": 0, "character": 0}}, "textDocument"),
            ({"textDocument": {"uri": 5}, "position": {"line": 0, "character": 0}}, "textDocument"),
            ({"textDocument": {"uri": s.uri("main.go")}}, "position"),
            ({"textDocument": {"uri": s.uri("main.go")}, "position": {"line": -1, "character": 0}}, "position"),
            ({"textDocument": {"uri": s.uri("main.go")}, "position": {"line": 0}}, "position"),
        ]
        for params, param in cases:
            with pytest.raises(JsonRpcException) as err:
                await s.request("ctxls/impact", params)
            assert (err.value.code, err.value.data) == (-32602, {"param": param}), params
        # A position past the end, or on no name, is simply nothing.
        far = {"textDocument": {"uri": s.uri("main.go")}, "position": {"line": 500, "character": 0}}
        assert await s.request("ctxls/impact", far) is None
        assert (await impact(s, "Total"))["symbol"] == "Total"  # still serving


async def test_unsaved_buffer_calls_count_and_code_lenses_refresh(tmp_path: Path):
    root = fixture_repo(tmp_path, "python")
    async with serve(root) as s:
        refreshes: list[None] = []

        @s.client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def on_refresh(_client: LanguageClient, _params: None) -> None:
            refreshes.append(None)

        await s.wait_indexed()
        pricing = s.uri("shop/pricing.py")
        lenses = await s.client.text_document_code_lens_async(
            types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=pricing)))
        by_symbol = {lens.data["symbol"]: lens for lens in lenses}
        assert {"register", "apply_discount", "compute_total", "Cart", "Cart.checkout",
                "GiftCart.wrap"} <= set(by_symbol)
        assert all(lens.command is None for lens in lenses)  # resolved lazily
        lens = by_symbol["apply_discount"]
        assert lens.range.start == types.Position(9, 4)  # on the name
        resolved = await s.client.code_lens_resolve_async(lens)
        assert resolved.command.title == "2 callers · risk med"
        assert list(resolved.command.arguments) == [{"uri": pricing, "symbol": "apply_discount"}]

        original = (root / "shop/orders.py").read_text()
        edited = original + ("\n\ndef rebate(amount):\n    from shop.pricing import apply_discount\n"
                             "    return apply_discount(amount, 0.5)\n")
        s.open("shop/orders.py", original)
        s.replace("shop/orders.py", edited, version=2)

        async def new_caller_seen():
            found = await impact(s, "apply_discount")
            return ("shop/orders.py", 23, "rebate", "call", True) in callers_of(found)

        assert await s.wait_for(new_caller_seen, timeout=15)
        assert (root / "shop/orders.py").read_text() == original  # never saved

        async def refreshed():
            return bool(refreshes)

        assert await s.wait_for(refreshed, timeout=15)  # the client was asked to re-request lenses
        resolved = await s.client.code_lens_resolve_async(lens)
        assert resolved.command.title == "3 callers · risk med"


async def test_ripgrep_missing_is_an_error_never_zero_callers(tmp_path: Path, monkeypatch):
    root = fixture_repo(tmp_path, "python")
    monkeypatch.setenv("CTXLS_RG", str(tmp_path / "no-such-rg"))
    monkeypatch.setenv("PATH", "")
    async with serve(root) as s:
        await s.wait_indexed()
        with pytest.raises(JsonRpcException) as err:
            await impact(s, "apply_discount")
        assert err.value.code == -32001 and err.value.data == {}
        assert "install ripgrep" in err.value.message
        assert (await s.request("ctxls/status"))["files"] > 0  # still serving


async def test_several_definitions_answer_each_the_asking_file_s_first(tmp_path: Path):
    """A class and its compatibility copy: one answer per definition, the one
    the asking file imports first; the CLI shows the choice."""
    from ctxls.daemon.formatting import Style, impact_lines

    root = fixture_repo(tmp_path, "copies")
    async with serve(root) as s:
        await s.wait_indexed()
        asked = await s.request("ctxls/impact", {"symbol": "Store.get",
                                                 "textDocument": {"uri": s.uri("legacy/main.py")}})
        assert asked["definitionsMatched"] == 2
        assert [d["path"] for d in asked["definitions"]] == ["legacy/store.py"]
        # config.get() may be either's (an untyped receiver): unconfirmed in both answers.
        assert callers_of(asked) == {("legacy/main.py", 4, "run", "call", True),
                                     ("shop/view.py", 4, "show", "call", False)}
        per = {a["definition"]["path"]: a for a in asked["perDefinition"]}
        assert [a["definition"]["path"] for a in asked["perDefinition"]] == ["legacy/store.py", "shop/store.py"]
        shop = per["shop/store.py"]
        # config.get(): a builtin method name on an untyped receiver, unconfirmed and last.
        assert [(c["path"], c["range"]["start"]["line"], c["confirmed"], c.get("reason"))
                for c in shop["callers"]] == [
            ("shop/store.py", 7, True, None), ("shop/view.py", 4, True, None),
            ("shop/view.py", 4, False, "builtin-name")]
        assert (shop["confirmed"], shop["unconfirmed"], shop["unconfirmedReasons"]) == (2, 1, {"builtin-name": 1})
        assert asked["hedges"][0].startswith("2 definitions match 'Store.get'")

        from_shop = await s.request("ctxls/impact", {"symbol": "Store.get",
                                                     "textDocument": {"uri": s.uri("shop/view.py")}})
        assert [d["path"] for d in from_shop["definitions"]] == ["shop/store.py"]
        assert from_shop["callers"] == shop["callers"] and from_shop["risk"] == shop["risk"]

        text = "\n".join(impact_lines(asked, 100, Style(False)))
        assert "definition  legacy/store.py:3  Store.get  (best of 2 definitions)" in text
        assert "other       shop/store.py:2  Store.get  2 confirmed, 1 unconfirmed" in text
        with pytest.raises(JsonRpcException) as err:
            await s.request("ctxls/impact", {"symbol": "Store.get", "textDocument": {"uri": 3}})
        assert err.value.data == {"param": "textDocument"}


async def test_lenses_say_indexing_during_the_first_index_then_are_refreshed(tmp_path: Path,
                                                                           monkeypatch):
    """A count resolved while the first index runs would be of the files indexed
    so far (and stay on screen): the lens says "indexing…" and costs no sweep;
    when the index ends the client is asked to re-request lenses."""
    root = fixture_repo(tmp_path, "python")
    # The first index waits in discovery (`git ls-files`) until the gate opens.
    gate, bin_dir = tmp_path / "gate", tmp_path / "bin"
    bin_dir.mkdir()
    (bin_dir / "git").write_text(f'#!/bin/sh\nwhile [ ! -e "{gate}" ]; do sleep 0.05; done\n'
                                 f'exec "{shutil.which("git")}" "$@"\n')
    (bin_dir / "git").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bin_dir}{os.pathsep}{os.environ['PATH']}")
    async with serve(root) as s:
        refreshes: list[None] = []

        @s.client.feature(types.WORKSPACE_CODE_LENS_REFRESH)
        def on_refresh(_client: LanguageClient, _params: None) -> None:
            refreshes.append(None)

        s.open("shop/pricing.py")  # an open buffer is indexed at once, first index or not
        params = types.CodeLensParams(text_document=types.TextDocumentIdentifier(uri=s.uri("shop/pricing.py")))

        async def lenses():
            return await s.client.text_document_code_lens_async(params)

        lens = next(lens for lens in await s.wait_for(lenses, timeout=15)
                    if lens.data["symbol"] == "apply_discount")
        resolved = await s.client.code_lens_resolve_async(lens)
        assert resolved.command.title == "indexing…"
        assert list(resolved.command.arguments) == [{"uri": s.uri("shop/pricing.py"),
                                                     "symbol": "apply_discount"}]
        assert (await s.request("ctxls/status"))["state"] == "indexing"
        refreshes.clear()  # the one asked for when the opened buffer was indexed

        gate.touch()

        async def refreshed():
            return bool(refreshes)

        assert await s.wait_for(refreshed, timeout=30)
        resolved = await s.client.code_lens_resolve_async(lens)
        assert resolved.command.title == "2 callers · risk med"


async def test_a_lens_title_holds_until_a_file_of_the_index_changes(tmp_path: Path):
    """Editors sharing the daemon get one title per definition (an analysis is
    time-bounded: two could differ under load), and resolving again costs no
    sweep: the title is kept until the index changes, then computed anew."""
    root = fixture_repo(tmp_path, "python")
    async with serve(root) as s:
        await s.wait_indexed()
        lenses = await s.client.text_document_code_lens_async(types.CodeLensParams(
            text_document=types.TextDocumentIdentifier(uri=s.uri("shop/pricing.py"))))
        lens = next(lens for lens in lenses if lens.data["symbol"] == "apply_discount")

        async def title() -> str:
            return (await s.client.code_lens_resolve_async(lens)).command.title

        assert await title() == "2 callers · risk med"
        # A new caller on disk that no event has reported: the index still has the old file.
        orders = root / "shop/orders.py"
        orders.write_text(orders.read_text() + (
            "\n\ndef rebate(amount):\n    from shop.pricing import apply_discount\n"
            "    return apply_discount(amount, 0.5)\n"))
        assert await title() == "2 callers · risk med"
        s.client.workspace_did_change_watched_files(types.DidChangeWatchedFilesParams(changes=[
            types.FileEvent(uri=s.uri("shop/orders.py"), type=types.FileChangeType.Changed)]))

        async def recounted() -> bool:
            return await title() == "3 callers · risk med"

        assert await s.wait_for(recounted, timeout=15)


def test_impact_text_counts_add_up_and_n_bounds_every_list(tmp_path: Path):
    """Every count in `ctxls impact`'s text follows from the others (the
    JSON answer's): callers shown + "more callers" = confirmed + unconfirmed,
    its parts add up, the mentions line sums to the mentions; -n bounds the
    other definitions, callers and callees; a definition's line is its `def`,
    not the decorator or comment its lines start with."""
    import json
    import re
    import sys

    from conftest import write_tree

    files = {"pkg/__init__.py": "",
             # Decorated, with a comment above: its lines start before `def`.
             "pkg/core.py": ("import functools\n\n\nclass Core:\n    # the one to ask about\n"
                             "    @functools.cache\n    def ping(self, x):\n"
                             "        return helper(x) + other(x) + third(x)\n\n\n"
                             "def helper(x):\n    return x\n\n\ndef other(x):\n    return x\n\n\n"
                             "def third(x):\n    return x\n"),
             "pkg/main.py": ("from pkg.core import Core\n\n\n"
                             "def run():\n    return Core().ping(1) + Core().ping(2) + Core().ping(3)\n"),
             "README.md": "Call ping to ping.\n"}
    for n in range(4):  # other definitions of the same name
        files[f"alt/copy{n}.py"] = f"class Copy{n}:\n    def ping(self):\n        return {n}\n"
    for n in range(12):  # 120 untyped receivers: unconfirmed, more than the 100 listed
        files[f"use/u{n}.py"] = "def go(thing):\n" + "".join(
            f"    thing.ping()  # ping {i}\n" for i in range(10)) + "    return 'ping'\n"
    write_tree(tmp_path, files)
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    ctxls = [sys.executable, "-m", "ctxls.daemon.cli"]
    subprocess.run([*ctxls, "index", "--root", str(tmp_path)], check=True, capture_output=True)

    def impact(*args: str) -> str:
        done = subprocess.run([*ctxls, "impact", "--no-daemon", "--root", str(tmp_path), "ping",
                               *args], capture_output=True, text=True, timeout=120)
        assert done.returncode == 0, done.stderr
        return done.stdout

    answer = json.loads(impact("--json"))
    text = impact("-n", "2")
    lines = text.splitlines()
    confirmed, unconfirmed, mentions = answer["confirmed"], answer["unconfirmed"], answer["mentions"]
    assert (confirmed, answer["definitionsMatched"]) == (3, 5) and unconfirmed > 100
    assert lines[0].startswith(f"ping: risk {answer['risk']}, {confirmed} confirmed callers, "
                               f"{unconfirmed} unconfirmed, {mentions} other mentions (not calls), ")
    # The `def` line (7), not the comment (5) or the decorator (6) its lines start with.
    assert answer["definitions"][0]["range"]["start"]["line"] + 1 in (5, 6)
    assert answer["definitions"][0]["selectionRange"]["start"] == {"line": 6, "character": 8}
    assert lines[1] == "  definition  pkg/core.py:7  Core.ping  (best of 5 definitions)"

    def section(prefix: str) -> list[str]:
        return [line for line in lines if line.startswith(f"  {prefix} ")]

    def more(noun: str) -> tuple[int, dict[str, int]]:
        found = [re.fullmatch(rf"  … (\d+) more {noun}: (.*)", line) for line in lines]
        (match,) = [m for m in found if m]
        parts = {why: int(n) for n, why in re.findall(r"(\d+) (past -n|counted only)", match.group(2))}
        assert sum(parts.values()) == int(match.group(1)), match.group(0)
        return int(match.group(1)), parts

    assert len(section("other")) == 2  # -n 2 bounds the other definitions too
    assert more("definitions")[0] == answer["definitionsMatched"] - 1 - 2
    assert len(section("caller")) == 2
    hidden, parts = more("callers")
    assert 2 + hidden == confirmed + unconfirmed
    assert parts["counted only"] == answer["unconfirmedOmitted"] == unconfirmed - 100
    assert len(section("callee")) == 2 and more("callees")[0] == len(answer["callees"]) - 2
    (mentions_line,) = section("mentions")
    head, _, kinds = mentions_line.partition(": ")
    assert head == f"  mentions  {mentions}"
    assert sum(int(part.split(" ")[0]) for part in kinds.split(", ")) == mentions
    assert "in comments" in kinds and "in files without a parser" in kinds


def test_impact_says_when_the_full_disk_refused_the_index_its_definitions(tmp_path: Path, monkeypatch):
    """Crash probe (t_full_outline): a file changed on disk while the disk was
    full could not be re-indexed, its older rows were left out, and `impact`
    of a function defined there said "not defined in the index"; other
    answers were not partial and said nothing of the refused write. Now
    "not defined" is no answer then: the request fails with the refusal's
    code and recall's partialReason; an answer is partial and says why; the
    file's lenses say it is not indexed (not "definition gone")."""
    from ctxls.daemon import impact_handlers
    from ctxls.daemon.server import server
    from ctxls.index import engine as engine_module
    from ctxls.index.engine import Engine, EngineOptions
    from ctxls.index.errors import EngineError
    from test_store import fill_the_disk, free_the_disk
    from test_symbols import request_in_process

    monkeypatch.setattr(engine_module, "STORE_RETRY_S", 3600.0)  # no retry until space is freed
    root = fixture_repo(tmp_path, "python")
    engine = Engine(root, EngineOptions(embeddings=False))
    try:
        engine.index()
        fill_the_disk(engine)
        pricing = root / "shop" / "pricing.py"
        pricing.write_text(pricing.read_text() + "\n\ndef quokka_helper(cls):\n    return cls\n"
                           + "# padding\n" * 30_000)
        with pytest.raises(EngineError) as err:
            request_in_process(engine, "ctxls/impact", {"symbol": "apply_discount"})
        assert (err.value.code, err.value.data["reason"]) == (-32007, "full")
        assert err.value.message.startswith("apply_discount is not defined in what the index holds")
        reason = engine.recall("discount", ["code"], mode="lexical").partial_reason
        assert "could not take the latest text of 1 file" in err.value.message \
            and err.value.message.split(": ", 1)[1] in reason

        bulk = request_in_process(engine, "ctxls/impact", {"symbol": "bulk"})
        assert [d["path"] for d in bulk["definitions"]] == ["shop/orders.py"]
        assert bulk["partial"] is True and bulk["partialReason"] in reason
        assert any(h.startswith("partial: the index could not take the latest text") for h in bulk["hedges"])

        lens = types.CodeLens(range=types.Range(types.Position(9, 4), types.Position(9, 18)),
                              data={"uri": engine.uri_for("shop/pricing.py"), "symbol": "apply_discount"})
        server.workspaces.engines[engine.root] = engine
        try:
            resolved = impact_handlers.resolve_code_lens.__wrapped__(server, lens)
        finally:
            server.workspaces.engines.pop(engine.root, None)
        assert resolved.command.title == "not indexed: the index could not take this file's text · partial"

        free_the_disk(engine)
        monkeypatch.setattr(engine_module, "STORE_RETRY_S", 0.0)
        discount = request_in_process(engine, "ctxls/impact", {"symbol": "apply_discount"})
        assert [d["path"] for d in discount["definitions"]] == ["shop/pricing.py"]
        assert discount["partial"] is False and "partialReason" not in discount
        assert not any(h.startswith("partial:") for h in discount["hedges"])
    finally:
        engine.close()


def test_impact_on_a_first_pass_the_full_disk_refused_names_the_refusal(tmp_path: Path):
    """Crash probe (t_full_cold_impact): the first pass refused by a full
    disk, `impact` of a function the folder defines said "not defined in the
    index" while recall said why it was partial. It now fails with the
    refusal's code and names it."""
    from ctxls.index.engine import Engine, EngineOptions
    from ctxls.index.errors import EngineError, WriteFailed
    from test_store import fill_the_disk
    from test_symbols import request_in_process

    root = fixture_repo(tmp_path, "python")
    # More than the store's free pages hold: the pass must grow the file.
    for n in range(100):
        (root / "shop" / f"gen_{n}.py").write_text(f"def generated_{n}():\n    return {n}\n" * 20)
    engine = Engine(root, EngineOptions(embeddings=False))
    try:
        fill_the_disk(engine)
        with pytest.raises(WriteFailed):
            engine.index()
        with pytest.raises(EngineError) as err:
            request_in_process(engine, "ctxls/impact", {"symbol": "apply_discount"})
        assert err.value.code == engine.index_error.code and err.value.data["reason"] == "full"
        assert err.value.message.startswith("apply_discount is not defined in what the index holds, "
                                            "which may lack it: the index could not be updated (")
    finally:
        engine.close()


def test_go_function_and_method_named_by_their_package_whatever_the_file(make_engine):
    """Impact probe (repro_go_package_qualified, checked against `symbols`):
    `impact api.UseLocal` said "not defined in the index" when UseLocal's
    file, api/local.go, was not named after its package (`api.E` of
    api/api.go worked). A Go package is its folder, or the name its
    `package` clause declares (a package at the repository's root, a folder
    spelt otherwise): a qualified query names its functions and methods in
    any of its files."""
    engine = make_engine({
        "go.mod": "module example.com/app\n\ngo 1.21\n",
        "api/api.go": "package api\n\nfunc E() int { return UseLocal() }\n",
        "api/local.go": ("package api\n\ntype Client struct{}\n\n"
                         "func (c *Client) Send() error { return nil }\n\n"
                         "func UseLocal() int { return 2 }\n"),
        "go-yaml/decode.go": "package yaml\n\nfunc Unmarshal(b []byte) error { return nil }\n",
        "root.go": "package app\n\nfunc Version() string { return \"1\" }\n",
        "cmd/main.go": ('package main\n\nimport (\n\t"example.com/app/api"\n\tyaml "example.com/app/go-yaml"\n)\n\n'
                        "func main() {\n\t_ = api.UseLocal()\n\tc := &api.Client{}\n\t_ = c.Send()\n"
                        "\t_ = yaml.Unmarshal(nil)\n}\n"),
    })
    use_local = analysis.analyze(engine, "api.UseLocal")
    assert [d.path for d in use_local.definitions] == ["api/local.go"]
    assert callers(use_local) == {("api/api.go", 2, "E", True), ("cmd/main.go", 8, "main", True)}
    send = analysis.analyze(engine, "api.Client.Send")
    assert [d.symbol for d in send.definitions] == ["Client.Send"]
    assert callers(send) == {("cmd/main.go", 10, "main", True)}
    # Its `package` clause names the package, not its folder or file.
    assert [d.path for d in analysis.analyze(engine, "yaml.Unmarshal").definitions] == ["go-yaml/decode.go"]
    assert [d.path for d in analysis.analyze(engine, "app.Version").definitions] == ["root.go"]
    assert analysis.analyze(engine, "other.UseLocal") is None


def test_python_star_imports_the_last_one_exporting_a_name_binds_it(make_engine):
    """Impact probe (repro_star_import_order, checked against the Python
    runtime): with `from .base import *` then `from .local import *`, both
    defining helper, `from pkg import helper; helper()` was confirmed as a
    caller of base.helper and local.helper had none; a star-imported
    module's `__all__` was ignored. The last star import that exports a name
    binds it: the names a literal `__all__` lists, else those not starting
    with `_`; an `__all__` built some other way may list any name."""
    engine = make_engine({
        "pkg/__init__.py": "from .base import *\nfrom .local import *\nfrom .extra import *\n",
        "pkg/base.py": ('__all__ = ["helper", "tool", "_quiet"]\n\n\ndef helper():\n    return "base"\n\n\n'
                        'def tool():\n    return "base"\n\n\ndef _quiet():\n    return "base"\n'),
        "pkg/local.py": ('__all__ = ["helper"]\n\n\ndef helper():\n    return "local"\n\n\n'
                         'def tool():\n    return "local"\n'),
        "pkg/extra.py": 'def _quiet():\n    return "extra"\n',
        "pkg2/__init__.py": "from .first import *\nfrom .second import *\n",
        "pkg2/first.py": 'def dyn():\n    return "first"\n',
        "pkg2/second.py": ('__all__ = ["other"] + ["dyn"]\n\n\ndef other():\n    return 0\n\n\n'
                           'def dyn():\n    return "second"\n'),
        "use.py": ("from pkg import helper, tool, _quiet\nfrom pkg2 import dyn\n\n\n"
                   "def run():\n    return helper() + tool() + _quiet() + dyn()\n"),
    })
    # What the runtime gives: local, base, base, second.
    site = {("use.py", 5, "run", True)}
    assert callers(analysis.analyze(engine, "pkg.local.helper")) == site
    assert callers(analysis.analyze(engine, "pkg.base.helper")) == set()
    assert callers(analysis.analyze(engine, "pkg.base.tool")) == site  # local's __all__ leaves it out
    assert callers(analysis.analyze(engine, "pkg.local.tool")) == set()
    assert callers(analysis.analyze(engine, "pkg.base._quiet")) == site  # extra's is private
    assert callers(analysis.analyze(engine, "pkg.extra._quiet")) == set()
    assert callers(analysis.analyze(engine, "pkg2.second.dyn")) == site
    assert callers(analysis.analyze(engine, "pkg2.first.dyn")) == set()


def test_python_names_a_case_pattern_captures_are_locals_not_the_import(make_engine):
    """Impact probe (repro_match_capture, checked against basedpyright): in
    `case {"callback": double}: double(1)` and `case [double, *_]:` the
    capture binds a new local (basedpyright: Unknown), yet the patterns and
    the calls were confirmed callers of the imported double, and `apply(3)`
    under `case [apply]:` a callee of its function. Every capture binds:
    a mapping value, a sequence item, `*rest`, `**rest`, a keyword
    pattern's value, `as x`. A class pattern's class and a dotted value
    pattern (`Color.RED`) stay uses of what they name."""
    engine = make_engine({
        "pkg/__init__.py": "",
        "pkg/helpers.py": ("def double(v):\n    return v * 2\n\n\ndef apply(v):\n    return v\n\n\n"
                           "class Point:\n    __match_args__ = ('x',)\n\n    def __init__(self, x):\n"
                           "        self.x = x\n\n\nclass Color:\n    RED = 1\n"),
        "pkg/use.py": ("from pkg.helpers import Color, Point, apply, double\n\n\n"
                       "def real():\n    return double(3)\n\n\n"
                       "def handle(event):\n"
                       "    match event:\n"
                       "        case {\"callback\": double, **rest}:\n"  # line 9
                       "            double(1)\n"
                       "        case [double, *others]:\n"
                       "            print(double, others, rest)\n"
                       "        case Point(x=double) as double:\n"  # line 13
                       "            double()\n"
                       "        case Color.RED:\n"  # line 15
                       "            pass\n\n\n"
                       "def apply_all(event):\n"
                       "    match event:\n"
                       "        case [apply]:\n"
                       "            return apply(3)\n"
                       "    return double(0)\n"),  # line 23
    })
    assert callers(analysis.analyze(engine, "double")) == {
        ("pkg/use.py", 4, "real", True), ("pkg/use.py", 23, "apply_all", True)}
    assert callers(analysis.analyze(engine, "apply")) == set()
    assert [c.symbol for c in analysis.analyze(engine, "apply_all").callees] == ["double"]
    assert analysis.analyze(engine, "handle").callees == []
    assert callers(analysis.analyze(engine, "Point")) == {("pkg/use.py", 13, "handle", True)}
    assert callers(analysis.analyze(engine, "Color")) == {("pkg/use.py", 15, "handle", True)}


def test_python_a_name_a_class_body_bound_earlier_is_the_class_s_in_that_body(make_engine):
    """Impact probe (repro_class_body_scope, checked against basedpyright and
    the Python runtime): `class K: double = staticmethod(…)` then
    `x = double(3)` in the body calls the class's double, yet it was
    confirmed as a caller of the imported helpers.double. In a class body a
    name bound by an earlier statement of that body is the class's; before
    that binding, in a comprehension and in a method, the module's import
    is what the name reaches (the runtime gives 2, 4, [2, 4], 8, 0, 6)."""
    engine = make_engine({
        "pkg/__init__.py": "",
        "pkg/helpers.py": "def double(v):\n    return v * 2\n",
        "pkg/use.py": ("from pkg.helpers import double\n\n\n"
                       "class K:\n"
                       "    first = double(1)\n"  # line 4: the import, not bound yet
                       "    double = staticmethod(lambda v: v + 1)\n"
                       "    x = double(3)\n"  # line 6: the class's
                       "    ys = [double(v) for v in (1, 2)]\n"  # line 7: a comprehension sees the module's
                       "\n"
                       "    def m(self):\n"
                       "        return double(4)\n"  # line 10: a method sees the module's
                       "\n\n"
                       "class L:\n"
                       "    def double(self):\n"
                       "        return 0\n"
                       "\n"
                       "    y = double(None)\n"  # line 17: L's own def
                       "\n\n"
                       "class M:\n"
                       "    def n(self):\n"
                       "        double = 1\n"
                       "        return double\n"
                       "\n"
                       "    z = double(3)\n"),  # line 25: n's local is not M's
    })
    found = analysis.analyze(engine, "pkg.helpers.double")
    assert {(c.path, c.span.start_line, c.confirmed) for c in found.callers} == {
        ("pkg/use.py", 4, True), ("pkg/use.py", 7, True), ("pkg/use.py", 10, True), ("pkg/use.py", 25, True)}


def test_what_a_typed_receiver_may_hold_keeps_every_caller(make_engine):
    """Regression probe of stop 65 (each caller listed before this stop's
    receiver typing and lost by it): a Go constructor returning an interface
    (Go never names what implements it); a Python receiver typed as a base
    class, by a closure's annotated parameter, `isinstance` or an annotation
    through a module, which may hold a subclass overriding the method; a
    closure's variable another closure rebinds (`nonlocal`); and a class
    body's annotation without a value, which binds nothing."""
    engine = make_engine({
        "go.mod": "module example.com/app\n\ngo 1.21\n",
        "store/store.go": ("package store\n\ntype Storer interface {\n\tSave()\n}\n\n"
                           "type Store struct{}\n\nfunc (s *Store) Save() {}\n\n"
                           "func New() Storer { return &Store{} }\n"),
        "main.go": ("package main\n\nimport \"example.com/app/store\"\n\n"
                    "func main() {\n\ts := store.New()\n\ts.Save()\n}\n"),  # line 6
        "app/__init__.py": "",
        "app/nodes.py": ("class Collector:\n    def collect(self):\n        return []\n\n\n"
                         "class Session(Collector):\n    def collect(self):\n        return [1]\n"),
        "app/runner.py": ("from app import nodes\nfrom app.nodes import Collector\n\n\n"
                          "def outer(collector: Collector):\n"
                          "    def inner():\n"
                          "        return collector.collect()\n"  # line 6
                          "    return inner\n\n\n"
                          "def check(obj):\n"
                          "    if isinstance(obj, Collector):\n"
                          "        return obj.collect()\n"  # line 12
                          "\n\n"
                          "class Runner:\n"
                          "    def __init__(self, c: nodes.Collector):\n"
                          "        self.c = c\n\n"
                          "    def run(self):\n"
                          "        return self.c.collect()\n"),  # line 20
        "app/handlers.py": ("class Default:\n    def handle(self):\n        return 0\n\n\n"
                            "class Custom:\n    def handle(self):\n        return 1\n\n\n"
                            "def make():\n"
                            "    handler = Default()\n\n"
                            "    def swap():\n"
                            "        nonlocal handler\n"
                            "        handler = Custom()\n\n"
                            "    def run():\n"
                            "        return handler.handle()\n"  # line 18
                            "    return swap, run\n"),
        "app/util.py": "def env(name):\n    return name\n",
        "app/conf.py": ("from app.util import env\n\n\n"
                        "class Settings:\n    env: str\n"
                        "    log_level = env(\"LOG_LEVEL\")\n"),  # line 5
    })
    callers = {(c.path, c.span.start_line) for c in analysis.analyze(engine, "Store.Save").callers}
    assert ("main.go", 6) in callers
    callers = {(c.path, c.span.start_line) for c in analysis.analyze(engine, "Session.collect").callers}
    assert {("app/runner.py", 6), ("app/runner.py", 12), ("app/runner.py", 20)} <= callers
    callers = {(c.path, c.span.start_line) for c in analysis.analyze(engine, "Custom.handle").callers}
    assert ("app/handlers.py", 18) in callers
    found = analysis.analyze(engine, "app.util.env")
    assert {(c.path, c.span.start_line, c.confirmed) for c in found.callers} == {("app/conf.py", 5, True)}


def test_a_call_of_overloads_returning_different_classes_is_typed_only_by_the_one_its_literals_pick(make_engine):
    """Impact probe of stop 66 (r1_overload_return, r3_ts_overload_return,
    checked against basedpyright and tsserver): with `@overload def
    make(v: int) -> A` and `@overload def make(v: str) -> B` (TypeScript:
    two signatures before the implementation), `b = make(value); b.bar()`
    was typed by the first overload only: a confirmed caller of A.bar, none
    of B.bar. Overloads returning different classes leave the result's
    class unknown (an unconfirmed caller of each class's method), unless
    the call's literal arguments tell the overload a type checker picks
    (the first taking them: `make("x")` the str one, `make(True)` the int
    one); overloads that all return one class still type it."""
    engine = make_engine({
        "pkg/__init__.py": "",
        "pkg/items.py": ("class A:\n    def bar(self):\n        return 1\n\n\n"
                         "class B:\n    def bar(self):\n        return 2\n"),
        "pkg/api.py": ("import typing\nfrom typing import overload\n\nfrom pkg.items import A, B\n\n\n"
                       "@overload\ndef make(v: int) -> A: ...\n"
                       "@typing.overload\ndef make(v: str) -> B: ...\n"
                       "def make(v):\n    return A() if isinstance(v, int) else B()\n\n\n"
                       "@overload\ndef only_a(v: int) -> A: ...\n"
                       "@overload\ndef only_a(v: str) -> A: ...\n"
                       "def only_a(v):\n    return A()\n"),
        "use.py": ("from pkg.api import make, only_a\n\n\n"
                   "def run(value):\n"
                   "    b = make(value)\n"
                   "    return b.bar()\n\n\n"  # line 5
                   "def same(value):\n"
                   "    a = only_a(value)\n"
                   "    return a.bar()\n\n\n"  # line 10
                   "def literal():\n"
                   "    s = make(\"x\").bar()\n"  # line 14: the str overload
                   "    return make(True).bar() + s\n"),  # line 15: a bool is an int
        "src/items.ts": ("export class TA {\n  tbar(): number { return 1; }\n}\n"
                         "export class TB {\n  tbar(): number { return 2; }\n}\n"),
        "src/api.ts": ('import { TA, TB } from "./items";\n\n'
                       "export function tmake(v: number): TA;\n"
                       "// the string overload\n"
                       "export function tmake(v: string): TB;\n"
                       "export function tmake(v: any): any {\n"
                       '  return typeof v === "number" ? new TA() : new TB();\n}\n'),
        "src/use.ts": ('import { tmake } from "./api";\n\n'
                       "export function trun(value: any): number {\n"
                       "  const b = tmake(value);\n"
                       "  return b.tbar();\n}\n\n"  # line 4
                       "export function tlit(): number {\n"
                       '  return tmake("x").tbar();\n}\n'),  # line 8
    })
    assert callers(analysis.analyze(engine, "B.bar")) == {("use.py", 5, "run", False), ("use.py", 14, "literal", True)}
    assert callers(analysis.analyze(engine, "A.bar")) == {
        ("use.py", 5, "run", False), ("use.py", 10, "same", True), ("use.py", 15, "literal", True)}
    assert [c.symbol for c in analysis.analyze(engine, "literal").callees] == ["make", "B.bar", "A.bar"]
    assert callers(analysis.analyze(engine, "TB.tbar")) == {("src/use.ts", 4, "trun", False),
                                                           ("src/use.ts", 8, "tlit", True)}
    assert callers(analysis.analyze(engine, "TA.tbar")) == {("src/use.ts", 4, "trun", False)}


def test_a_class_declared_in_a_function_shadows_the_module_s_class_of_its_name(make_engine):
    """Impact probe of stop 66 (r8_local_class_shadowed_by_module_class,
    checked against basedpyright and tsserver): `def test(): class
    Child(Base): ...; c = Child(); c.method()` beside a later module-level
    `class Child` typed `c` as the module's Child: Base.method had no
    caller. A class declared in the function (Python, TypeScript) is what
    its name means there: its bases and its own body say which method a
    call runs (its own override: neither Base's nor the module Child's)."""
    engine = make_engine({
        "m.py": ("class Base:\n    def method(self):\n        return 1\n\n\n"
                 "def test():\n    class Child(Base):\n        pass\n\n"
                 "    c = Child()\n    return c.method()\n\n\n"  # line 10
                 "def other():\n    class Kid(Base):\n        def method(self):\n            return 2\n\n"
                 "    k = Kid()\n    return k.method()\n\n\n"  # line 18
                 "class Child:\n    def method(self):\n        return 3\n\n\n"
                 "class Kid:\n    def method(self):\n        return 4\n"),
        "t.ts": ("export class TBase {\n  tmethod(): number {\n    return 1;\n  }\n}\n\n"
                 "export function ttest(): number {\n"
                 "  class TChild extends TBase {}\n  const c = new TChild();\n"
                 "  return c.tmethod();\n}\n\n"  # line 9
                 "export class TChild {\n  tmethod(): number {\n    return 2;\n  }\n}\n"),
        # A class merged with a namespace of its name, which the index lists as the namespace: not nested.
        "sock.ts": ("export class Sock {\n  open(): void {}\n\n  connect(): void {\n    this.open();\n  }\n}\n\n"
                    "export namespace Sock {\n  export type Options = number;\n}\n"),  # line 4
    })
    assert callers(analysis.analyze(engine, "Sock.open")) == {("sock.ts", 4, "Sock.connect", True)}
    assert callers(analysis.analyze(engine, "Base.method")) == {("m.py", 10, "test", True)}
    assert callers(analysis.analyze(engine, "m.Child.method")) == set()
    assert callers(analysis.analyze(engine, "m.Kid.method")) == set()
    assert callers(analysis.analyze(engine, "TBase.tmethod")) == {("t.ts", 9, "ttest", True)}
    assert callers(analysis.analyze(engine, "TChild.tmethod")) == set()


def test_js_names_destructured_from_a_module_object_are_its_names(make_engine):
    """Impact probe of stop 66 (r5_ts_destructured_namespace, checked against
    tsserver): `import * as U from "./util"; const { add } = U; add(1)` in a
    function had no caller of add. Destructuring a module object (a
    namespace import, `import U = require()`, `const U = require()`) binds
    the module's names, renamed ones too, in a function as at the top
    level, as `const { add } = require()` does; destructuring a default
    import binds the properties of the object its module exports by
    default (`export default { one, two: twoImpl }`); destructuring any
    other object binds a local."""
    engine = make_engine({
        "src/util.ts": ("export function add(a: number): number {\n  return a;\n}\n\n"
                        "export function sub(a: number): number {\n  return -a;\n}\n"),
        "src/use.ts": ('import * as U from "./util";\n\n'
                       "export function run(): number {\n"
                       "  const { add, sub: minus } = U;\n"
                       "  return add(1) + minus(2);\n}\n\n"  # line 4
                       "export function local(): number {\n"
                       "  const { add } = { add: (a: number) => a };\n"
                       "  return add(3);\n}\n"),  # line 10
        "src/legacy.js": ('const util = require("./util");\n'
                          "const { sub } = util;\n\n"
                          "function legacy() {\n"
                          '  const { add } = require("./util");\n'
                          "  return add(4) + sub(5);\n}\n"),  # line 5
        "src/helpers.ts": ("export function one(): number {\n  return 1;\n}\n\n"
                           "function twoImpl(): number {\n  return 2;\n}\n\n"
                           "const helpers = { one, two: twoImpl };\nexport default helpers;\n"),
        "src/defaults.ts": ('import helpers from "./helpers";\n\n'
                            "export function both(): number {\n"
                            "  const { one, two } = helpers;\n"
                            "  return one() + two();\n}\n"),  # line 4
    })
    assert callers(analysis.analyze(engine, "add")) == {("src/use.ts", 4, "run", True),
                                                        ("src/legacy.js", 5, "legacy", True)}
    assert callers(analysis.analyze(engine, "sub")) == {("src/use.ts", 4, "run", True),
                                                        ("src/legacy.js", 5, "legacy", True)}
    # A default import: its default export's properties, under their names there.
    assert callers(analysis.analyze(engine, "one")) == {("src/helpers.ts", 8, None, True),  # the object's value
                                                        ("src/defaults.ts", 4, "both", True)}


def test_a_call_of_a_local_whose_value_is_made_through_itself_or_a_long_chain_ends(make_engine):
    """What a call of a local gives is what the local holds (a class declared
    in the function shadows the module's): `x = x()` and `a = b(); b = a()`
    make a value through itself, and 600 locals each made by calling the
    next overran the recursion limit. A cycle is unknown, and a chain deeper
    than the receivers worked out at once is unknown past that depth."""
    chain = "".join(f"    v{i} = v{i + 1}()\n" for i in range(600))
    engine = make_engine({
        "m.py": ("class A:\n    def bar(self):\n        return 1\n\n\n"
                 "def f():\n    x = x()\n    return x.bar()\n\n\n"  # line 7
                 "def g():\n    a = b()\n    b = a()\n    return a.bar()\n\n\n"  # line 13
                 "def h():\n" + chain + "    return v0.bar()\n"),  # line 617
        "n.py": "class B:\n    def bar(self):\n        return 2\n",
    })
    assert callers(analysis.analyze(engine, "A.bar")) == {
        ("m.py", 7, "f", False), ("m.py", 13, "g", False), ("m.py", 617, "h", False)}


def test_a_name_a_class_body_binds_is_no_variable_of_the_module_or_the_function(make_engine):
    """With a call of a local now typed by what the local holds (a class
    declared in a function shadows the module's), a method name was taken
    for a module variable: kombu's `def set` in one class made `bag = set()`
    in another an unknown value, and `self.bag.add(1)` a caller of every
    `add`. What a class body binds (`def set`, `engine = Engine()`) is the
    class's attribute: its own statements see it, no other scope does."""
    engine = make_engine({
        "m.py": ("class Engine:\n    def run(self):\n        return 1\n\n\n"
                 "class Other:\n    def run(self):\n        return 2\n\n\n"
                 "class K:\n    engine = Engine()\n    x = engine.run()\n\n\n"  # line 12
                 "class Q:\n    def set(self):\n        return 0\n\n\n"
                 "class M:\n    bag = set()\n\n    def put(self):\n        return self.bag.add(1)\n"),  # line 24
        "n.py": "class Bag:\n    def add(self, v):\n        return v\n",
    })
    assert callers(analysis.analyze(engine, "Engine.run")) == {("m.py", 12, "K", True)}
    assert callers(analysis.analyze(engine, "Other.run")) == set()
    assert callers(analysis.analyze(engine, "Bag.add")) == set()


def test_import_of_a_submodule_binds_the_package_whatever_the_order(make_engine):
    """Impact probe of stop 67 (repro_6, checked against basedpyright):
    `import cachelib` then `import cachelib.keys` made `cachelib.cached(1)`
    an unconfirmed (unresolved-import) caller, as did `import cachelib.keys`
    alone, while the other order confirmed it: the name was looked up in
    cachelib/keys.py. `import a.b` binds `a` to the package a."""
    engine = make_engine({
        "src/cachelib/__init__.py": "def cached(cache):\n    return cache\n",
        "src/cachelib/keys.py": "def hashkey():\n    return 1\n",
        "tests/test_a.py": ("import cachelib\nimport cachelib.keys\n\n\n"
                            "def test_a():\n    cachelib.cached(1)\n    cachelib.keys.hashkey()\n"),  # line 5
        "tests/test_b.py": "import cachelib.keys\n\n\ndef test_b():\n    cachelib.cached(2)\n",  # line 4
        "tests/test_c.py": "import cachelib.keys\nimport cachelib\n\n\ndef test_c():\n    cachelib.cached(3)\n",
    })
    assert callers(analysis.analyze(engine, "cachelib.cached")) == {
        ("tests/test_a.py", 5, "test_a", True), ("tests/test_b.py", 4, "test_b", True),
        ("tests/test_c.py", 5, "test_c", True)}
    assert callers(analysis.analyze(engine, "hashkey")) == {("tests/test_a.py", 6, "test_a", True)}


def test_a_base_class_is_the_one_the_scope_around_the_subclass_names(make_engine):
    """Impact probe of stop 67 (repro_1, checked against basedpyright):
    `def shadowing(): class Base: ...; class Child(Base): pass` beside a
    module-level `class Base` resolved Child's base to the module's Base:
    `Child().run()` and `super().run()` in the function were confirmed
    callers of the module's Base.run. A base is named as the scope around
    the subclass sees it: a class of the function around it shadows the
    module's, and a local value of that name never confirms."""
    engine = make_engine({
        "pkg/__init__.py": "",
        "pkg/mod.py": ("class Base:\n    def run(self):\n        return 1\n\n\n"
                       "def shadowing():\n    class Base:\n        def run(self):\n            return 2\n\n"
                       "    class Child(Base):\n        pass\n\n"
                       "    class Child2(Base):\n        def run(self):\n            return super().run()\n\n"  # line 15
                       "    Child().run()\n    Child2().run()\n\n\n"  # line 17
                       "def inherited():\n    class Kid(Base):\n        pass\n\n    return Kid().run()\n\n\n"  # 25
                       "def real_use():\n    return Base().run()\n"),  # line 29
        "t.ts": ("export class TBase {\n  trun(): number {\n    return 1;\n  }\n}\n\n"
                 "export function tshadow(): number {\n"
                 "  class TBase {\n    trun(): number {\n      return 2;\n    }\n  }\n"
                 "  class TKid extends TBase {}\n  const k = new TKid();\n"
                 "  return k.trun();\n}\n"),  # line 14
    })
    assert callers(analysis.analyze(engine, "TBase.trun")) == set()
    assert callers(analysis.analyze(engine, "pkg.mod.Base.run")) == {
        ("pkg/mod.py", 25, "inherited", True), ("pkg/mod.py", 29, "real_use", True)}


def test_a_js_private_member_is_no_use_of_the_public_member_of_its_word(make_engine):
    """Impact probe of stop 67 (repro_4, checked against tsserver): every
    `this.#state` was a confirmed caller of the getter `state`, and
    `this.#validate()` of the public `validate()`: the sweep finds the word
    `state` in `#state`, and the node there was taken for it. A private
    member `#name` (or `$name`) is another name."""
    engine = make_engine({
        "src/task.ts": ("export class Task {\n  #state: number = 0;\n\n"
                        "  get state(): number {\n    return this.#state;\n  }\n\n"
                        "  validate(): boolean {\n    return false;\n  }\n\n"
                        "  #validate(): boolean {\n    return true;\n  }\n\n"
                        "  run(): boolean {\n    const $state = 1;\n"
                        "    return this.#validate() && this.#state === $state;\n  }\n}\n"),  # line 17
        "src/use.ts": ('import { Task } from "./task";\n\n'
                       "export function show(t: Task): boolean {\n  return t.state > 0 && t.validate();\n}\n"),
    })
    assert callers(analysis.analyze(engine, "Task.state")) == {("src/use.ts", 3, "show", True)}
    assert callers(analysis.analyze(engine, "Task.validate")) == {("src/use.ts", 3, "show", True)}


def test_an_assignment_to_a_property_with_a_setter_is_a_caller(make_engine):
    """Impact probe of stop 67 (repro_7, checked against basedpyright and
    tsserver): `t.celsius = 5` and `t.celsius += 1` run the setter of
    `@celsius.setter` (TypeScript: `set level(v)`), yet they were
    `binding` mentions: changing the setter breaks them. An assignment to
    a member with a setter calls it; to a plain attribute it binds."""
    engine = make_engine({
        "pkg/__init__.py": "",
        "pkg/m.py": ("class Temp:\n    def __init__(self):\n        self._c = 0\n        self.plain = 1\n\n"
                     "    @property\n    def celsius(self):\n        return self._c\n\n"
                     "    @celsius.setter\n    def celsius(self, value):\n        self._c = value\n\n"  # line 9
                     "    @property\n    def reading(self):\n        return self._c\n\n\n"
                     "def use(t: Temp):\n    t.celsius = 5\n    t.celsius += 1\n"  # lines 19, 20
                     "    t.reading = 2\n    return t.celsius\n"),  # line 22
        "src/t.ts": ("export class Gauge {\n  private c = 0;\n\n"
                     "  get level(): number {\n    return this.c;\n  }\n\n"
                     "  set level(v: number) {\n    this.c = v;\n  }\n}\n\n"
                     "export function use(g: Gauge): number {\n"
                     "  g.level = 5;\n  g.level += 1;\n  return g.level;\n}\n"),  # lines 13-15
    })
    assert callers(analysis.analyze(engine, "Temp.celsius")) == {
        ("pkg/m.py", 9, "Temp.celsius", True),  # `@celsius.setter`
        ("pkg/m.py", 19, "use", True), ("pkg/m.py", 20, "use", True), ("pkg/m.py", 22, "use", True)}
    # A property without a setter: the assignment fails at run time, no call of it.
    reading = analysis.analyze(engine, "Temp.reading")
    assert callers(reading) == set() and reading.mention_kinds["binding"] == 1
    assert callers(analysis.analyze(engine, "Gauge.level")) == {
        ("src/t.ts", 13, "use", True), ("src/t.ts", 14, "use", True), ("src/t.ts", 15, "use", True)}


def test_a_default_export_a_barrel_re_exports_as_its_own_is_called_under_any_name(make_engine):
    """Impact probe of stop 67 (repro_9, by the language's export rules):
    with `export { default } from "./core"` in `lib/index.ts`, `import Eng
    from "./lib"; new Eng()` was no caller of core's `export default class
    Engine`, nor `fmt(…)` of a default function re-exported so: they
    answered "0 callers". A barrel whose default export is the target's
    (through barrels of barrels) passes it to its default importers."""
    engine = make_engine({
        "src/lib/core.ts": "export default class Engine {\n  start(): number {\n    return 1;\n  }\n}\n",
        "src/lib/fmt.ts": "export default function format(x: number): string {\n  return String(x);\n}\n",
        "src/lib/index.ts": 'export { default } from "./core";\n',
        "src/util/inner.ts": 'export { default } from "../lib/fmt";\n',
        "src/util/index.ts": 'export { default } from "./inner";\n',
        "src/use.ts": ('import Eng from "./lib";\nimport fmt from "./util";\n\n'
                       "export function go(): string {\n  const e = new Eng();\n"
                       "  return fmt(e.start());\n}\n"),  # lines 4, 5
    })
    assert callers(analysis.analyze(engine, "Engine")) == {("src/use.ts", 4, "go", True)}
    assert callers(analysis.analyze(engine, "format")) == {("src/use.ts", 5, "go", True)}
