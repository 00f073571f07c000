"""BENCHMARKS.md is generated from bench/results/ (bench/report.py): nobody
edits it by hand, every result file follows bench/results/README.md, and a
file in that format from anyone lands on the page."""

from __future__ import annotations

import json
import re
import subprocess
import sys
from pathlib import Path

import pytest

from ctxls.bench import report

ROOT = Path(__file__).resolve().parents[1]

MINIMAL = {
    "section": "Startup of a new client",
    "date": "2026-12-03",
    "commit": "abc1234",
    "command": "python -m ctxls.bench.clients --startup",
    "machine": "2 cores, loaded",
    "rows": [{"target": "first answer after start", "value": "41 ms", "goal": "<= 50 ms", "met": True}],
    "notes": "one run",
}


def write(folder: Path, name: str, data: dict) -> Path:
    path = folder / f"{name}.json"
    path.write_text(json.dumps(data), encoding="utf-8")
    return path


def test_every_result_file_has_the_required_fields():
    results = report.load_results()
    assert results, "bench/results/ holds no result file"
    for result in results:
        assert result.data["rows"] and result.data["command"] and result.data["commit"]


def test_benchmarks_md_is_the_generated_page():
    page = (ROOT / "BENCHMARKS.md").read_text(encoding="utf-8")
    assert page == report.render(report.load_results()), \
        "BENCHMARKS.md differs from bench/results/: run python -m ctxls.bench.report"


def test_the_page_stays_under_30_kb():
    assert len((ROOT / "BENCHMARKS.md").read_bytes()) < 30_000


def test_the_check_command_passes_on_the_tree():
    done = subprocess.run([sys.executable, "-m", "ctxls.bench.report", "--check"],
                          capture_output=True, text=True, cwd=ROOT, timeout=60)
    assert done.returncode == 0, done.stderr


def test_a_file_from_another_branch_lands_under_its_section(tmp_path: Path):
    write(tmp_path, "clients-startup", MINIMAL)
    write(tmp_path, "live-native", {**MINIMAL, "section": "Live on disk, native", "area": "Live on disk",
                                     "issue": 34, "rows": [{"target": "write → recall p95", "value": "155 ms",
                                                            "goal": None, "met": None}]})
    page = report.render(report.load_results(tmp_path))
    # A known area comes first; a file naming no area is grouped under its section.
    assert page.index("## Live on disk") < page.index("## Startup of a new client")
    assert "### Live on disk, native (issue 34)" in page
    assert "| first answer after start | 41 ms | <= 50 ms | yes |" in page
    assert "| write → recall p95 | 155 ms | – | – |" in page
    assert "`python -m ctxls.bench.clients --startup` · 2026-12-03 · commit abc1234" in page


def test_a_bare_number_is_shown_as_it_is(tmp_path: Path):
    write(tmp_path, "a", {**MINIMAL, "rows": [{"target": "tests", "value": 707, "goal": None, "met": None}]})
    assert "| tests | 707 | – | – |" in report.render(report.load_results(tmp_path))


def test_a_missed_goal_is_marked_and_counted(tmp_path: Path):
    write(tmp_path, "a", {**MINIMAL, "rows": [{"target": "p50", "value": "13 ms", "goal": "<= 8 ms", "met": False}],
                          "notes": "Loaded machine. Second sentence."})
    write(tmp_path, "b", {**MINIMAL, "notes": "All met, said in the file only."})
    page = report.render(report.load_results(tmp_path))
    assert "| p50 | 13 ms | <= 8 ms | **no** |" in page
    assert "2 rows; 1 miss their goal" in page
    # A miss says why on the page; a run that meets its goals keeps its notes in the file.
    assert "Loaded machine. (more in the file)" in page and "All met" not in page


def test_a_superseded_figure_leaves_the_page_and_the_count_for_the_run_replacing_it(tmp_path: Path):
    old_p50 = {"target": "p50", "value": "13 ms", "goal": "<= 8 ms", "met": False, "superseded_by": "new"}
    write(tmp_path, "old", {**MINIMAL, "rows": [old_p50, {"target": "rss", "value": "300 MiB",
                                                          "goal": "<= 400 MiB", "met": True}]})
    write(tmp_path, "all-old", {**MINIMAL, "section": "Gone", "rows": [old_p50]})
    write(tmp_path, "new", {**MINIMAL, "rows": [{"target": "p50", "value": "7 ms", "goal": "<= 8 ms", "met": True}]})
    page = report.render(report.load_results(tmp_path))
    assert "13 ms" not in page and "| p50 | 7 ms | <= 8 ms | yes |" in page
    assert "| rss | 300 MiB |" in page and "+1 superseded by `new.json`." in page
    assert "4 rows; 0 miss their goal" in page
    # A run whose every figure was replaced has no section: one line of its area names it.
    assert "### Gone" not in page and "Every figure superseded: `all-old.json` (2026-12-03; by `new`)." in page
    # It must name another run that exists.
    write(tmp_path, "all-old", {**MINIMAL, "rows": [{**old_p50, "superseded_by": "nowhere"}]})
    with pytest.raises(report.ResultError, match="nowhere"):
        report.load_results(tmp_path)
    write(tmp_path, "all-old", {**MINIMAL, "rows": [{**old_p50, "superseded_by": "all-old"}]})
    with pytest.raises(report.ResultError, match="no other result file"):
        report.load_results(tmp_path)


@pytest.mark.parametrize("broken, message", [
    ({k: v for k, v in MINIMAL.items() if k != "commit"}, "'commit'"),
    ({**MINIMAL, "date": "Thu Dec 3"}, "'date'"),
    ({**MINIMAL, "rows": []}, "'rows'"),
    ({**MINIMAL, "rows": [{"target": "x", "value": True}]}, "'value'"),
    ({**MINIMAL, "rows": [{"target": "x", "value": ""}]}, "'value'"),
    ({**MINIMAL, "rows": [{"target": "x", "value": "7", "met": "yes"}]}, "'met'"),
    ({**MINIMAL, "issue": "35"}, "'issue'"),
])
def test_a_file_outside_the_format_is_refused_with_its_name(tmp_path: Path, broken: dict, message: str):
    path = write(tmp_path, "broken", broken)
    with pytest.raises(report.ResultError, match=message) as caught:
        report.parse_result(path)
    assert "broken.json" in str(caught.value)


def test_the_command_reports_a_broken_file_and_writes_nothing(tmp_path: Path):
    (tmp_path / "bench" / "results").mkdir(parents=True)
    (tmp_path / "bench" / "results" / "bad.json").write_text("{not json", encoding="utf-8")
    script = (f"import sys; from pathlib import Path; from ctxls.bench import report; "
              f"report.RESULTS = Path({str(tmp_path / 'bench' / 'results')!r}); "
              f"report.BENCHMARKS_MD = Path({str(tmp_path / 'BENCHMARKS.md')!r}); sys.exit(report.main([]))")
    done = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60)
    assert done.returncode == 2 and "bad.json" in done.stderr
    assert not (tmp_path / "BENCHMARKS.md").exists()


def _cited_decisions() -> list[tuple[str, str]]:
    """(file, title) of every citation of a docs/decisions.md entry in the code and docs."""
    cite = re.compile(r'docs/decisions\.md,\s*(?:#\s*)?"([^"]+)"')
    found = []
    for path in [*ROOT.glob("*/**/*.py"), *ROOT.glob("**/*.md")]:
        # bench/.cache holds fetched third-party trees (any encoding), not the tree's text.
        if ".venv" in path.parts or ".e2e" in path.parts or ".cache" in path.parts:
            continue
        for match in cite.finditer(path.read_text(encoding="utf-8")):
            # A title broken over comment lines: drop the line ends and comment marks.
            title = re.sub(r"\s*\n\s*#?\s*", " ", match.group(1)).removesuffix(" ...")
            found.append((str(path.relative_to(ROOT)), title))
    return found


def test_every_cited_decision_names_an_entry():
    entries = [line[3:] for line in (ROOT / "docs" / "decisions.md").read_text(encoding="utf-8").splitlines()
               if line.startswith("## ")]
    cited = _cited_decisions()
    assert len(cited) >= 20, "the tree's citations of docs/decisions.md were not found"
    unknown = [(path, title) for path, title in cited if not any(e.startswith(title) for e in entries)]
    assert not unknown, f"cited, but no docs/decisions.md entry starts so: {unknown}"
