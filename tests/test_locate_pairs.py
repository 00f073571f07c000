"""bench/locate_pairs.py: a change's pair is its description and the code
chunks its diff touched, as the index embeds them; the contrastive step's
gradient is the loss's (checked against finite differences), in both modes."""

from __future__ import annotations

import sys
from pathlib import Path

import numpy as np
import pytest

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT / "bench"))  # the bench modules import each other by plain name

import locate_pairs  # noqa: E402

from conftest import commit_files, git  # noqa: E402

SOURCE = '''def parse_header(line):
    """Split a header line into its name and value."""
    name, _, value = line.partition(":")
    return name.strip(), value.strip()


def render_footer(total):
    """The page's last line."""
''' + "".join(f"    line_{k} = total + {k}  # each its own line, so the packer keeps this apart\n"
          for k in range(60)) + "    return line_0\n"


def test_a_pair_is_the_description_and_the_chunks_the_diff_touched(tmp_path, monkeypatch):
    repo = tmp_path / "project"
    repo.mkdir()
    git(repo, "init", "-q", "-b", "main")
    commit_files(repo, "Initial import", {"mailer/headers.py": SOURCE})
    fixed = SOURCE.replace('line.partition(":")', 'line.partition(":") if ":" in line else (line, "", "")')
    commit_files(repo, "Keep a header line without a colon as a name with no value instead of failing",
                 {"mailer/headers.py": fixed, "tests/test_headers.py": "def test_no_colon():\n    pass\n"})
    commit_files(repo, "Bump version", {"mailer/headers.py": fixed + "\nVERSION = '2'\n"})
    commit_files(repo, "Too short", {"mailer/headers.py": fixed})
    monkeypatch.setattr(locate_pairs, "snapshot_dir", lambda name: repo / ".git")
    head = git(repo, "rev-parse", "HEAD")

    pairs = locate_pairs.mine_project("example/mailer", head, scan=10, per_project=10)

    # Only the described change: not the release bump, not the two-word message,
    # not the initial import (no parent).
    assert len(pairs) == 1
    pair = pairs[0]
    assert pair["query"].startswith("Keep a header line without a colon")
    # The chunk the diff fell in, as the index embeds it (path and symbol first);
    # the test file is no source and the untouched function is not a passage.
    assert len(pair["passages"]) == 1
    assert pair["passages"][0].startswith("mailer/headers.py parse_header\n")
    assert 'if ":" in line' in pair["passages"][0]
    assert "render_footer" not in pair["passages"][0]
    assert locate_pairs.changed_lines(repo / ".git", git(repo, "rev-parse", "HEAD~2"),
                                      "mailer/headers.py") == {3}


@pytest.mark.parametrize("fixed_passages", [False, True])
def test_the_contrastive_gradient_is_the_loss_gradient(monkeypatch, fixed_passages):
    monkeypatch.setattr(locate_pairs, "SCALE", 5.0)
    rng = np.random.default_rng(0)
    table = rng.normal(size=(40, 6))
    queries = [rng.integers(0, 40, size=4) for _ in range(5)]
    passages = [rng.integers(0, 40, size=7) for _ in range(5)]
    if fixed_passages:
        passages = locate_pairs._forward(table, passages)[0]
    loss, ids, grad = locate_pairs.batch_gradient(table, queries, passages)
    if fixed_passages:  # only the queries' rows learn
        assert set(ids) == set(np.concatenate(queries))
    for k in range(0, len(ids), 3):
        for column in (0, 5):
            nudged = table.copy()
            nudged[ids[k], column] += 1e-6
            numeric = (locate_pairs.batch_gradient(nudged, queries, passages)[0] - loss) / 1e-6
            assert numeric == pytest.approx(grad[k, column], abs=1e-4)
