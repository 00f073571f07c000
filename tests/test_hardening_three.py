"""Hardening III (issue 38): a malformed ignore file, vendored trees, planted
memory, a damaged index, deterministic impact — through real files, the real
`ctxls` command and the real daemon."""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path

from conftest import SAMPLE_FILES, write_tree

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
