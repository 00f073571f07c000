"""Hardening III (issue 38): a malformed ignore file, vendored trees, planted
memory, a damaged index, deterministic impact — through real files, the real
`ctxls` command and the real daemon."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import SAMPLE_FILES, serve, write_tree

CTXLS = [sys.executable, "-m", "ctxls.daemon.cli"]


def ctxls(*args: str, cwd: Path | None = None) -> subprocess.CompletedProcess:
    return subprocess.run([*CTXLS, *args], capture_output=True, text=True, cwd=cwd, timeout=300)


# -- 5. a malformed ignore file costs only its own rules --------------------------

def test_a_malformed_nested_gitignore_costs_only_its_own_rules(tmp_path: Path):
    """A nested .gitignore holding just `!` (kept among a project's test
    fixtures) made every pass of a folder outside git fail with
    GitIgnorePatternError: nothing was indexed."""
    root = tmp_path / "plain"
    write_tree(root, SAMPLE_FILES | {
        ".gitignore": "build/\n",
        "build/out.py": "def generated():\n    return 1\n",
        "fixtures/.gitignore": "!\nsecret.py\n",
        "fixtures/secret.py": "def hidden():\n    return 2\n",
        "fixtures/kept.py": "def kept_fixture():\n    return 3\n",
    })
    indexed = ctxls("index", str(root), "--json")
    assert indexed.returncode == 0, indexed.stderr
    assert json.loads(indexed.stdout)["added"] == len(SAMPLE_FILES) + 1
    # the warning names the file; its readable rule still holds
    bad = str(root.resolve() / "fixtures" / ".gitignore")
    assert bad in indexed.stderr and "'!'" in indexed.stderr, indexed.stderr
    assert code_paths(root, "kept_fixture")[0] == "fixtures/kept.py"
    for hidden in ("hidden", "generated"):
        assert not {"fixtures/secret.py", "build/out.py"} & set(code_paths(root, hidden))


def code_paths(root: Path, query: str) -> list[str]:
    recalled = ctxls("recall", query, "--root", str(root), "--json")
    return [hit["path"] for hit in json.loads(recalled.stdout)["groups"]["code"]]


# -- 7. vendored trees are not first-party code ------------------------------------

VENDORED_NAMES = ("vendor", "_vendor", "third_party", "extern", "vendored", "3rdparty")


def test_vendored_trees_rank_below_first_party_code_everywhere(tmp_path: Path):
    """A copy under `_vendor/` or `extern/` ranked as first-party code: locate
    led to the copy, impact counted it as the maintained definition."""
    from ctxls.impact.risk import is_peripheral_path
    from ctxls.index.locate import is_test_or_doc
    from ctxls.index.paths import is_vendored_path
    from ctxls.index.priors import _path_class

    for name in VENDORED_NAMES:
        copy = f"src/pkg/{name}/retry/core.py"
        assert is_vendored_path(copy) and is_test_or_doc(copy) and is_peripheral_path(copy)
        assert _path_class(copy).vendored, copy
    assert not is_vendored_path("src/pkg/vendors.py") and not is_vendored_path("extern.c")

    root = tmp_path / "proj"
    body = ("def backoff_delay(attempt, base):\n"
            "    \"\"\"Seconds to wait before retry number attempt.\"\"\"\n"
            "    return base * 2 ** attempt\n")
    write_tree(root, {"src/pkg/_vendor/urllib3/retry.py": body,
                      "src/pkg/extern/retrying.py": body,
                      "src/pkg/retry.py": body,
                      "src/pkg/client.py": "from pkg.retry import backoff_delay\n\n"
                                           "def fetch(n):\n    return backoff_delay(n, 0.5)\n"})
    subprocess.run(["git", "init", "-q", str(root)], check=True)
    assert ctxls("index", str(root), "--json").returncode == 0
    located = json.loads(ctxls("locate", "backoff_delay() waits far too long between retries",
                               "--root", str(root), "--json").stdout)
    assert located["files"][0]["path"] == "src/pkg/retry.py", located
    assert code_paths(root, "backoff_delay")[0] == "src/pkg/retry.py"
    impact = json.loads(ctxls("impact", "backoff_delay", "--root", str(root), "--json").stdout)
    assert impact["definitions"][0]["path"] == "src/pkg/retry.py", impact


async def test_status_says_team_memory_is_unreachable_instead_of_ready(repo: Path):
    """status said `ready` through a PostgreSQL outage: only a memory verb's
    -32010 told."""
    from pg_server import PgServer, server_folder

    with server_folder() as folder:
        server = PgServer(folder)
        server.start()
        server.prepare()
        try:
            async with serve(repo, {"memoryUrl": server.fresh_database()}) as s:
                await s.wait_indexed()

                async def in_state(state: str):
                    status = await s.request("ctxls/status")
                    return status if status["state"] == state else None
                up = await s.wait_for(lambda: in_state("ready"), timeout=30)
                assert up and up["memory"] == {"backend": "postgresql", "schemaVersion": 3,
                                               "reachable": True}
                server.stop()
                down = await s.wait_for(lambda: in_state("degraded"), timeout=30)
                assert down and down["ready"] is False and down["memory"]["reachable"] is False
                assert down["memoryError"]["code"] == -32010
                code = await s.request("ctxls/recall", {"query": "send prepared request"})
                assert "pkg/session.py" in [h["path"] for h in code["groups"]["code"]]
                server.start()
                again = await s.wait_for(lambda: in_state("ready"), timeout=60, interval=0.5)
                assert again and "memoryError" not in again
        finally:
            server.stop()
