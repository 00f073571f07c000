"""The chunker's tables of many files, to compare two builds of ctxls.

``write``: for every file named on stdin (one path a line), its language,
packed chunks (symbol, lines) and definitions (symbol, kind, lines), as
JSON. Run it once per build, each first on ``PYTHONPATH``, then
``compare`` the two files: per extension, how many files changed, how many
changed language, and the definitions by kind.

Run: find /usr/include -name '*.h' | PYTHONPATH=OLD .venv/bin/python bench/chunker_tables.py write old.json
     find /usr/include -name '*.h' | .venv/bin/python bench/chunker_tables.py write new.json
     .venv/bin/python bench/chunker_tables.py compare old.json new.json
"""

from __future__ import annotations

import json
import sys
from collections import Counter

MAX_BYTES = 1 << 20


def write(paths: list[str], out: str) -> None:
    from ctxls.index.chunker import chunk_file, definition_chunks

    tables = {}
    for path in paths:
        try:
            with open(path, encoding="utf-8", errors="replace") as handle:
                text = handle.read(MAX_BYTES + 1)
        except OSError:
            continue
        if len(text) > MAX_BYTES or "\0" in text[:8192]:
            continue
        packed = chunk_file(path, text)
        tables[path] = {"language": packed.language,
                        "chunks": [(c.symbol, c.start_line, c.end_line) for c in packed.chunks],
                        "symbols": [(s.symbol, s.symbol_kind, s.start_line, s.end_line)
                                    for s in definition_chunks(path, text).symbols]}
    with open(out, "w", encoding="utf-8") as handle:
        json.dump(tables, handle)


def compare(old_file: str, new_file: str) -> None:
    with open(old_file, encoding="utf-8") as handle:
        old = json.load(handle)
    with open(new_file, encoding="utf-8") as handle:
        new = json.load(handle)
    files, changed, relabelled, fewer = Counter(), Counter(), Counter(), Counter()
    kinds = {"old": Counter(), "new": Counter()}
    for path in old.keys() & new.keys():
        extension = path.rsplit(".", 1)[-1]
        files[extension] += 1
        before, after = old[path], new[path]
        if before["language"] != after["language"]:
            relabelled[(extension, before["language"], after["language"])] += 1
        if before["chunks"] != after["chunks"] or before["symbols"] != after["symbols"]:
            changed[extension] += 1
            fewer[extension] += len(after["symbols"]) < len(before["symbols"])
        for side, table in (("old", before), ("new", after)):
            kinds[side].update(symbol[1] for symbol in table["symbols"])
    print("files:", dict(files))
    print("changed:", dict(changed), "of which with fewer definitions:", dict(fewer))
    print("language changed:", {" ".join(key): count for key, count in relabelled.items()})
    for side in ("old", "new"):
        print(f"definitions {side}:", sum(kinds[side].values()), dict(kinds[side].most_common(12)))


def main(argv: list[str]) -> int:
    if len(argv) == 2 and argv[0] == "write":
        write([line for line in sys.stdin.read().split("\n") if line], argv[1])
    elif len(argv) == 3 and argv[0] == "compare":
        compare(argv[1], argv[2])
    else:
        print(__doc__, file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
