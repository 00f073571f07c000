"""BENCHMARKS.md, generated from the result files in bench/results/.

    .venv/bin/python -m ctxls.bench.report            # rewrite BENCHMARKS.md
    .venv/bin/python -m ctxls.bench.report --check    # exit 1 if it is stale

Each result file is one benchmark run (format: bench/results/README.md). The
page groups their rows by area, in AREAS' order (a file whose area is not
listed, or that names none, comes after them under its own section name),
newest run first, so a newcomer finds a target's current figure, and the
command that produced it, in one place. Never edit BENCHMARKS.md by hand: add or replace a result file
and run this.
"""

from __future__ import annotations

import argparse
import json
import re
import sys
from dataclasses import dataclass
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
RESULTS = REPO / "bench" / "results"
BENCHMARKS_MD = REPO / "BENCHMARKS.md"

# The commit whose BENCHMARKS.md still holds the full hand-written history
# (sessions' notes in time order) that these result files were read from.
HISTORY_COMMIT = "98206f9"

# Where a result file's "area" puts it on the page, in this order.
AREAS = (
    "Recall quality", "Recall speed and indexing", "Semantic tier", "Locate", "Impact",
    "Context assembly", "Memory", "Live on disk", "Clients and editors", "Hardening",
    "Test suite",
)

REQUIRED = {"section": str, "date": str, "commit": str, "command": str, "machine": str,
            "rows": list, "notes": str}
ROW_REQUIRED = {"target": str, "value": (str, int, float)}  # a bare number is shown as it is
_DATE = re.compile(r"^\d{4}-\d{2}-\d{2}$")


class ResultError(ValueError):
    """A result file that does not follow bench/results/README.md."""


@dataclass(frozen=True)
class Result:
    name: str        # the file's name, without .json
    area: str
    data: dict


def parse_result(path: Path) -> Result:
    """One result file, checked against the format; ResultError says what is wrong."""
    try:
        data = json.loads(path.read_text(encoding="utf-8"))
    except (OSError, UnicodeDecodeError, json.JSONDecodeError) as exc:
        raise ResultError(f"{path.name}: not readable JSON ({exc})") from exc
    if not isinstance(data, dict):
        raise ResultError(f"{path.name}: not a JSON object")
    for key, kind in REQUIRED.items():
        if not isinstance(data.get(key), kind) or not data[key]:
            raise ResultError(f"{path.name}: '{key}' missing, empty or not a {kind.__name__}")
    if not _DATE.match(data["date"]):
        raise ResultError(f"{path.name}: 'date' is not YYYY-MM-DD: {data['date']!r}")
    if data.get("issue") is not None and not isinstance(data["issue"], int):
        raise ResultError(f"{path.name}: 'issue' is not a number")
    for index, row in enumerate(data["rows"]):
        where = f"{path.name}: row {index + 1}"
        if not isinstance(row, dict):
            raise ResultError(f"{where}: not an object")
        for key, kind in ROW_REQUIRED.items():
            value = row.get(key)
            if not isinstance(value, kind) or isinstance(value, bool) or value == "":
                raise ResultError(f"{where}: '{key}' missing, empty or not text")
        if row.get("goal") is not None and (not isinstance(row["goal"], (str, int, float))
                                            or isinstance(row["goal"], bool)):
            raise ResultError(f"{where}: 'goal' is not text")
        if row.get("met") not in (True, False, None):
            raise ResultError(f"{where}: 'met' is not true, false or null")
        if "superseded_by" in row and (not isinstance(row["superseded_by"], str)
                                       or not row["superseded_by"]):
            raise ResultError(f"{where}: 'superseded_by' is not a result file's name")
    area = data.get("area") if isinstance(data.get("area"), str) and data.get("area") else data["section"]
    return Result(path.stem, area, data)


def load_results(folder: Path | None = None) -> list[Result]:
    results = [parse_result(path) for path in sorted((folder or RESULTS).glob("*.json"))]
    names = {result.name for result in results}
    for result in results:
        for row in result.data["rows"]:
            if not _current(row) and row["superseded_by"] not in names - {result.name}:
                raise ResultError(f"{result.name}.json: {row['target']!r} is superseded by "
                                  f"{row['superseded_by']!r}, which is no other result file")
    return results


def _current(row: dict) -> bool:
    """A row no later run's figure replaced (``superseded_by`` names that run)."""
    return "superseded_by" not in row


def _cell(text: str) -> str:
    return " ".join(str(text).split()).replace("|", "\\|")


def _met(row: dict) -> str:
    return {True: "yes", False: "**no**", None: "–"}[row.get("met")]


def _anchor(title: str) -> str:
    return re.sub(r"[^a-z0-9 -]", "", title.lower()).replace(" ", "-")


def _area_order(results: list[Result]) -> list[str]:
    named = [area for area in AREAS if any(r.area == area for r in results)]
    others = sorted({r.area for r in results} - set(AREAS))
    return named + others


def _replaced(result: Result) -> bool:
    """Every figure of the run replaced by later runs'."""
    return not any(_current(row) for row in result.data["rows"])


def _replaced_line(replaced: list[Result]) -> str:
    """An area's runs whose every figure was replaced, in one line: each run
    and its successors (the run's own figures stay in its file)."""
    named = [f"`{r.name}.json` ({r.data['date']}; by "
             + ", ".join(f"`{name}`" for name in sorted({row["superseded_by"] for row in r.data["rows"]}))
             + ")" for r in replaced]
    return "Every figure superseded: " + "; ".join(named) + ".\n"


def _result_block(result: Result) -> str:
    data = result.data
    issue = f" (issue {data['issue']})" if data.get("issue") is not None else ""
    lines = [
        f"### {_cell(data['section'])}{issue}",
        "",
        f"`{_clipped(_cell(data['command']), COMMAND_ON_PAGE)}` · {data['date']} · commit {_cell(data['commit'])} · "
        f"{_clipped(_cell(data['machine']), MACHINE_ON_PAGE)} · `{result.name}.json`",
        "",
    ]
    # A run with targets shows the current rows that have one; its other
    # figures stay in the file (the page is every target's current figure,
    # in one page), and a superseded one is named by the run replacing it.
    current = [row for row in data["rows"] if _current(row)]
    shown = [row for row in current if row.get("goal")] or current
    lines += ["| target | value | goal | met |", "|---|---|---|---|"]
    lines += [f"| {_clipped(_cell(row['target']), CELL_ON_PAGE)} "
              f"| {_clipped(_cell(row['value']), CELL_ON_PAGE)} | {_cell(row.get('goal') or '–')} "
              f"| {_met(row)} |" for row in shown]
    later = sorted({row["superseded_by"] for row in data["rows"] if not _current(row)})
    # A run that misses a goal says why (its notes' first sentence); the
    # others' notes stay in the file.
    said = [_first_sentence(data["notes"])] if any(r.get("met") is False for r in shown) else []
    if later:
        gone = len(data["rows"]) - len(current)
        said.append(f"+{gone} superseded by " + ", ".join(f"`{name}.json`" for name in later) + ".")
    lines += ["", _cell(" ".join(said)), ""] if said else [""]
    return "\n".join(lines)


# The page keeps a run's notes to their first sentence, its machine to a
# line's start and each cell to a few lines (the file has them whole), so that one page holds every
# target's current figure.
NOTES_ON_PAGE = 60
MACHINE_ON_PAGE = 24
COMMAND_ON_PAGE = 40
CELL_ON_PAGE = 42


def _clipped(text: str, limit: int) -> str:
    return text if len(text) <= limit else text[:limit].rsplit(" ", 1)[0] + " …"


def _first_sentence(notes: str) -> str:
    end = notes.find(". ")
    first = _clipped(notes if end < 0 else notes[:end + 1], NOTES_ON_PAGE)
    return first + (" (more in the file)" if first != notes else "")


def render(results: list[Result]) -> str:
    """The whole page: a header, the areas' index, then each area's runs."""
    rows = sum(len(r.data["rows"]) for r in results)
    missed = sum(1 for r in results for row in r.data["rows"]
                 if row.get("met") is False and _current(row))
    areas = _area_order(results)
    out = [
        "# Benchmarks",
        "",
        "Generated by `python -m ctxls.bench.report` (or `make benchmarks`) from the "
        f"{len(results)} result files in `bench/results/` (format: its README); do not edit by hand. "
        "A run's line: command · date · commit · machine · result file, which holds its figures without a goal. "
        "Why the code is as it is: `docs/decisions.md`. Older history: "
        f"`git show {HISTORY_COMMIT}:BENCHMARKS.md`.",
        "",
        f"{rows} rows; {missed} miss their goal (marked **no**). Unless a run says otherwise "
        "the machine is a shared 2-core VM, loaded by other work.",
        "",
        "| area | runs |",
        "|---|---|",
    ]
    for area in areas:
        sections = [r.data["section"] for r in results if r.area == area]
        out.append(f"| [{area}](#{_anchor(area)}) | {len(sections)} |")
    out.append("")
    for area in areas:
        out += [f"## {area}", ""]
        # Newest run first: the top of an area is its latest figure.
        members = sorted((r for r in results if r.area == area), key=lambda r: r.name)
        members.sort(key=lambda r: r.data["date"], reverse=True)
        out += [_result_block(r) for r in members if not _replaced(r)]
        replaced = [r for r in members if _replaced(r)]
        out += [_replaced_line(replaced)] if replaced else []
    return "\n".join(out).rstrip("\n") + "\n"


def write_result(name: str, data: dict) -> Path:
    """Save one run's result file (checked against the format), for a bench to call."""
    path = RESULTS / f"{name}.json"
    path.write_text(json.dumps(data, indent=2, ensure_ascii=False) + "\n", encoding="utf-8")
    parse_result(path)
    return path


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--check", action="store_true",
                        help="write nothing; exit 1 if BENCHMARKS.md is not the generated page")
    args = parser.parse_args(argv)
    try:
        page = render(load_results())
    except ResultError as exc:
        print(f"bench/results: {exc}", file=sys.stderr)
        return 2
    if args.check:
        current = BENCHMARKS_MD.read_text(encoding="utf-8") if BENCHMARKS_MD.exists() else ""
        if current != page:
            print("BENCHMARKS.md is stale: run python -m ctxls.bench.report", file=sys.stderr)
            return 1
        return 0
    BENCHMARKS_MD.write_text(page, encoding="utf-8")
    print(f"BENCHMARKS.md: {len(page.encode())} bytes", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
