"""Does recall find every definition by its name, at its own lines (issue 39)?

    .venv/bin/python bench/symbol_hits.py ROOT [--modes lexical,hybrid] [--json F]

Indexes ROOT into a temporary store (embedded when a mode needs vectors),
then recalls every definition of its symbol table by its qualified name
(`Engine.__init__`, `clamp_ratio`; code) and sorts the outcome:

- own: a hit labelled with that definition, from its first row (leading
  comments and decorators included) to no further than its last (several
  definitions of one symbol in a file, overloads or a getter and its
  setter, are one hit spanning them);
- other lines: labelled with it, but holding lines outside it (module-level
  statements, a section comment, a neighbour);
- absent: no hit is labelled with it, of n = 10 or, for a name that more
  definitions answer (60 `__init__`s, 40 `main`s), n = that many.

Prints the counts per mode and a few examples of each miss. ``--json``
writes a bench/results file.
"""

from __future__ import annotations

import argparse
import json
import subprocess
import tempfile
from collections import Counter
from datetime import date
from pathlib import Path

from ctxls.index.engine import Engine, EngineOptions

OUTCOMES = ("own", "other lines", "absent")


def outcome(engine: Engine, path: str, symbol: str, span: tuple[int, int], n: int,
            mode: str) -> str:
    """``span``: the first row and the last of the definitions of ``symbol``
    in ``path``."""
    hits = engine.recall(symbol, ["code"], n=n, mode=mode).hits_by_kind["code"]
    labelled = [h for h in hits if h.path == path and h.symbol == symbol]
    if not labelled:
        return "absent"
    hit = labelled[0]
    return "own" if span[0] <= hit.start_line and hit.end_line <= span[1] else "other lines"


def answering(symbol: str, names: Counter, symbols: Counter) -> int:
    """How many definitions a query of ``symbol`` names: those of its name
    (`run`: every `run` and `X.run`), or of its qualified tail."""
    if "." not in symbol:
        return names[symbol.lower()]
    return sum(count for other, count in symbols.items()
               if other == symbol or other.endswith("." + symbol))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("root", type=Path)
    parser.add_argument("--modes", default="lexical,hybrid")
    parser.add_argument("--json", type=Path, help="write a bench/results file here")
    args = parser.parse_args()
    modes = args.modes.split(",")
    embeddings = any(mode != "lexical" for mode in modes)
    engine = Engine(args.root, EngineOptions(db_path=tempfile.mkdtemp() + "/index.db",
                                             embeddings=embeddings))
    try:
        engine.index()
        if embeddings:
            engine.embed_pending()
        conn = engine.store.reader()
        definitions = conn.execute(
            "SELECT f.path, s.symbol, s.start_line, s.body_end FROM symbols s "
            "JOIN files f ON f.id = s.file_id ORDER BY f.path, s.start_line").fetchall()
        files = conn.execute("SELECT count(*) FROM files").fetchone()[0]
        spans: dict[tuple[str, str], tuple[int, int]] = {}
        for path, symbol, start, end in definitions:
            first, last = spans.get((path, symbol), (start, end))
            spans[path, symbol] = (min(first, start), max(last, end))
        names = Counter(symbol.rsplit(".", 1)[-1].lower() for _, symbol, _, _ in definitions)
        symbols = Counter(symbol for _, symbol, _, _ in definitions)
        counts: dict[str, Counter] = {}
        for mode in modes:
            counts[mode] = Counter()
            examples: dict[str, list[str]] = {}
            for path, symbol, start, _ in definitions:
                n = min(max(10, answering(symbol, names, symbols)), 200)
                found = outcome(engine, path, symbol, (start, spans[path, symbol][1]), n, mode)
                counts[mode][found] += 1
                examples.setdefault(found, []).append(f"{path}:{start + 1} {symbol}")
            print(f"{mode}: {len(definitions)} definitions in {files} files: "
                  + ", ".join(f"{name} {counts[mode][name]}" for name in OUTCOMES))
            for name in OUTCOMES[1:]:
                if examples.get(name):
                    print(f"  {name}: " + "; ".join(examples[name][:5]))
    finally:
        engine.close()
    if args.json:
        commit = subprocess.run(["git", "rev-parse", "--short", "HEAD"], capture_output=True,
                                text=True, cwd=Path(__file__).parent).stdout.strip()
        rows = [{"target": f"{mode} recall of each definition's qualified name: a hit labelled "
                           f"with it at its own lines ({len(definitions)} definitions)",
                 "value": f"{counts[mode]['own']} ({counts[mode]['other lines']} with other "
                          f"lines, {counts[mode]['absent']} absent)",
                 "goal": f"{len(definitions)}", "met": counts[mode]["own"] == len(definitions)}
                for mode in modes]
        args.json.write_text(json.dumps({
            "section": "Definitions by name in recall", "area": "Recall quality", "issue": 39,
            "date": date.today().isoformat(), "commit": commit,
            "command": f"python bench/symbol_hits.py {args.root} --modes {args.modes}",
            "machine": "not recorded", "rows": rows, "notes": ""}, indent=1) + "\n")


if __name__ == "__main__":
    main()
