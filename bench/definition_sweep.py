"""Definition-like lines the chunker's tables leave undefined: a probe for
parser faults (a grammar's error that hides a class, a shape no rule reads).

For each project of ``locate_commits.PROJECTS`` (train and dev only: faults
are looked for where nothing is measured) and of ``MORE_LANGUAGES`` (one
project per language the fix-commit set lacks) a seeded sample of its first-party
source files at the pinned head is chunked (``definition_chunks``), and every
line matching a language's definition pattern (``PATTERNS``: `def f`,
`class C`, `public void M(`, `defp f`, …) is counted as *missed* when no
definition of that name spans the line. The patterns are line heuristics:
nested functions (by design no definitions), struct fields in Go and type
aliases in Rust count as misses too, so the absolute figure is an upper
bound; what matters is the difference between two builds, which ``compare``
lists line by line (both written by the same version of this file: the
sample is drawn from the files ``PATTERNS`` reads).

Run: PYTHONPATH=OLD .venv/bin/python bench/definition_sweep.py write old.json [--project owner/name ...]
     .venv/bin/python bench/definition_sweep.py write new.json [--project owner/name ...]
     .venv/bin/python bench/definition_sweep.py compare old.json new.json
"""

from __future__ import annotations

import argparse
import collections
import json
import random
import re
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

from ctxls.index.chunker import definition_chunks  # noqa: E402
from ctxls.index.languages import language_for_path  # noqa: E402
from ctxls.index.paths import is_generated_path, is_test_path, is_vendored_path  # noqa: E402

from git_walk import git, snapshot_dir  # noqa: E402
from locate_commits import PROJECTS, Repo, split_of  # noqa: E402

FILES_PER_PROJECT = 200
MAX_CHARS = 400_000

# Languages the fix-commit set has no project in, one project each, and a
# shape it lacks; read only here (bench/projects.md, role dev).
MORE_LANGUAGES = (
    Repo("felangel/bloc", "dart", "61ef3b1d767a808f9f698d67fa9fa7129b32a6e2"),
    Repo("SDWebImage/SDWebImage", "objc", "36e79ba485e9bb4d3cd4e3318908866dac5e7b51"),
    Repo("tidyverse/dplyr", "r", "d5e94e7fa8fd4a5f79c1a707d1842216bb4c691f"),
    Repo("JuliaData/DataFrames.jl", "julia", "3924697ea6c02ac186a95b298a4e06b52e881b53"),
    Repo("koalaman/shellcheck", "haskell", "764802b7c023e9fdc191c12f57c418f186ad76ae"),
    Repo("ocaml/dune", "ocaml", "8deee3bb92dcf42a861aaf3ac35182ca10511210"),
    Repo("ninenines/cowboy", "erlang", "5c8535f409aa2fd49deb355e8ee43d5c06eb1c90"),
    Repo("nvm-sh/nvm", "bash", "b17550a0b9ab691439815dfccc8b73e3a59fa103"),
    Repo("zigtools/zls", "zig", "113f79a1d120cfda4cf758bc41273d8d15b4e46a"),
    Repo("mojolicious/mojo", "perl", "b4de430651b722f560b1577da9018e3f402d96ab"),
    Repo("ring-clojure/ring", "clojure", "75914ca942330ae6f8499b0ab9adda4664ad5f1b"),
    Repo("fsprojects/Paket", "fsharp", "3b63da856fa6d6f441d43b9dc2aa64e6ad10fe62"),
    Repo("PowerShell/PSScriptAnalyzer", "powershell", "4b0117ca7d2887711c9699f467ba7171f8859156"),
    # PHP's polyfills and helpers, defined under `if (! function_exists(…))`.
    Repo("symfony/polyfill", "php", "df4793d8de3390de9bb0aaf02cff7fa67ddc4a2a"),
)

_JS = [r"^\s*(?:export\s+)?(?:default\s+)?(?:async\s+)?function\s*\*?\s*(\w+)",
       r"^\s*(?:export\s+)?(?:default\s+)?class\s+(\w+)",
       r"^\s*(?:export\s+)?(?:const|let|var)\s+(\w+)\s*=\s*(?:async\s+)?(?:function\b|\([^)]*\)\s*=>|\w+\s*=>)",
       r"^  ?(?:static\s+)?(?:async\s+)?(?:get\s+|set\s+)?(\w+)\s*\([^)]*\)\s*\{\s*$"]
# Group 1 of each pattern is the name the definition must have.
PATTERNS: dict[str, list[str]] = {
    "python": [r"^\s*(?:async\s+)?def\s+(\w+)", r"^\s*class\s+(\w+)"],
    "go": [r"^func\s+(?:\([^)]*\)\s*)?(\w+)", r"^type\s+(\w+)"],
    "rust": [r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:(?:async|const|unsafe|default)\s+)*(?:extern\s+\"\w+\"\s+)?fn\s+(\w+)",
             r"^\s*(?:pub(?:\([^)]*\))?\s+)?(?:struct|enum|trait|union|mod)\s+(\w+)"],
    "java": [r"^\s*(?:(?:public|private|protected|static|final|abstract|sealed)\s+)*(?:class|interface|enum|record)\s+(\w+)",
             r"^\s+(?:(?:public|private|protected|static|final|abstract|synchronized)\s+)+(?:<[^>]+>\s+)?"
             r"[\w<>\[\],.? ]+\s+(\w+)\s*\("],
    "csharp": [r"^\s*(?:(?:public|private|protected|internal|static|sealed|abstract|partial|readonly|file)\s+)*"
               r"(?:class|interface|enum|struct)\s+(\w+)",
               r"^\s+(?:(?:public|private|protected|internal|static|virtual|override|abstract|async|sealed)\s+)+"
               r"[\w<>\[\],.? ]+\s+(\w+)\s*[(<]"],
    "kotlin": [r"^\s*(?:[a-z]+\s+)*fun\s+(?:<[^>]+>\s*)?(?:[\w.<>?]+\.)?(\w+)\s*\(",
               r"^\s*(?:[a-z]+\s+)*(?:class|interface|object)\s+(\w+)"],
    "scala": [r"^\s*(?:[a-z]+\s+)*def\s+(\w+)", r"^\s*(?:[a-z]+\s+)*(?:class|trait|object|enum)\s+(\w+)"],
    "swift": [r"^\s*(?:@\w+\s+)*(?:[a-z]+\s+)*func\s+(\w+)",
              r"^\s*(?:@\w+\s+)*(?:[a-z]+\s+)*(?:class|struct|enum|protocol|actor)\s+(\w+)"],
    "ruby": [r"^\s*def\s+(?:self\.)?([\w?!=]+)", r"^\s*(?:class|module)\s+(?:\w+::)*(\w+)"],
    "php": [r"^\s*(?:(?:public|private|protected|static|final|abstract)\s+)*function\s+&?(\w+)",
            r"^\s*(?:(?:final|abstract|readonly)\s+)*(?:class|interface|trait|enum)\s+(\w+)"],
    "javascript": _JS,
    "typescript": [*_JS, r"^\s*(?:export\s+)?(?:declare\s+)?(?:interface|enum|namespace)\s+(\w+)"],
    "lua": [r"^\s*(?:local\s+)?function\s+(?:[\w.]+[.:])?(\w+)"],
    "elixir": [r"^\s*(?:def|defp|defmacro|defmacrop|defguard|defdelegate)\s+(\w+[?!]?)",
               r"^\s*(?:defmodule|defprotocol)\s+(?:[\w]+\.)*(\w+)"],
    "c": [r"^(?:static\s+|inline\s+|extern\s+|const\s+|unsigned\s+|struct\s+)*[A-Za-z_]\w*[\s*]+\**(\w+)\s*\([^;]*$"],
    "cpp": [r"^(?:static\s+|inline\s+|constexpr\s+|virtual\s+)*[A-Za-z_][\w:<>,]*[\s*&]+\**(?:\w+::)*(~?\w+)\s*\([^;]*$",
            r"^\s*(?:class|struct|union)\s+(\w+)\s*(?:final\s*)?(?::[^{;]*)?\{?\s*$"],
    "dart": [r"^\s*(?:abstract\s+|sealed\s+|final\s+|base\s+|interface\s+)*(?:class|mixin|enum|extension)\s+(\w+)",
             r"^\s*(?:static\s+|external\s+)*[\w<>?,\[\]]+\s+(\w+)\s*(?:<[^>]*>)?\([^;]*\)\s*(?:async\*?\s*)?(?:\{|=>)"],
    "objc": [r"^[-+]\s*\([^)]*\)\s*(\w+)", r"^@(?:interface|implementation|protocol)\s+(\w+)"],
    "r": [r"^\s*`?([\w.]+)`?\s*(?:<-|=)\s*function\b"],
    "julia": [r"^\s*function\s+(?:[\w.]+\.)?(\w+!?)", r"^\s*(?:mutable\s+)?struct\s+(\w+)",
              r"^\s*(?:abstract\s+type|module|macro)\s+(\w+)"],
    "haskell": [r"^([a-z_]\w*'*)\s*::", r"^(?:data|newtype|type)\s+(?:family\s+)?(\w+)"],
    "ocaml": [r"^\s*let\s+(?:rec\s+)?([a-z_]\w*'*)\s+[^=]*=", r"^\s*module\s+(?:type\s+)?(\w+)\s*[:=]"],
    "erlang": [r"^([a-z]\w*)\(.*->\s*$"],
    "bash": [r"^\s*(?:function\s+)?([\w:-]+)\s*\(\)\s*\{?\s*$", r"^\s*function\s+([\w:-]+)"],
    "zig": [r"^\s*(?:pub\s+)?(?:inline\s+|export\s+|extern\s+)?fn\s+(\w+)",
            r"^\s*(?:pub\s+)?const\s+(\w+)\s*=\s*(?:extern\s+|packed\s+)?(?:struct|enum|union)\b"],
    "perl": [r"^\s*sub\s+(\w+)", r"^\s*package\s+(?:\w+::)*(\w+)"],
    "clojure": [r"^\((?:defn-?|defmacro|defmulti|defprotocol|defrecord|deftype)\s+(?:\^\S+\s+)?([\w*!?<>=+-]+)"],
    "fsharp": [r"^\s*let\s+(?:rec\s+|inline\s+|private\s+|internal\s+)*([a-z_]\w*)\b[^=]*=",
               r"^\s*(?:static\s+)?(?:member|override|abstract)\s+(?:\w+\.)?(\w+)", r"^\s*type\s+(\w+)"],
    "powershell": [r"^\s*function\s+([\w-]+)"],
}
PATTERNS["tsx"] = PATTERNS["typescript"]
# Control keywords a C-like function pattern also matches.
NOT_NAMES = frozenset({"if", "for", "while", "switch", "return", "catch", "sizeof", "else", "new", "function"})


def missed_lines(path: str, text: str) -> tuple[int, list[str]]:
    """(definition-like lines, those no definition of their name spans)."""
    patterns = [re.compile(p) for p in PATTERNS[language_for_path(path)]]
    names_at: dict[int, set[str]] = collections.defaultdict(set)
    for symbol in definition_chunks(path, text).symbols:
        last = re.split(r"[.:#]", symbol.symbol)[-1]
        for row in range(symbol.start_line, max(symbol.end_line, symbol.line) + 1):
            names_at[row].add(last)
    seen, missed = 0, []
    for row, line in enumerate(text.split("\n")):
        match = next((m for m in (p.match(line) for p in patterns) if m), None)
        if match is None or match.group(1) in NOT_NAMES:
            continue
        seen += 1
        if re.split(r"[.:]", match.group(1))[-1] not in names_at.get(row, ()):  # R's `print.foo`
            missed.append(f"{path}:{row + 1}: {line.strip()[:100]}")
    return seen, missed


def sweep(repo: Repo) -> dict:
    git_dir = snapshot_dir(repo.name)
    paths = [p for p in git(git_dir, "ls-tree", "-r", "-z", "--name-only", repo.head).split("\0")
             if p and language_for_path(p) in PATTERNS
             and not (is_test_path(p) or is_vendored_path(p) or is_generated_path(p))]
    random.Random(0).shuffle(paths)
    seen, missed = 0, []
    for path in paths[:FILES_PER_PROJECT]:
        text = git(git_dir, "show", f"{repo.head}:{path}").removeprefix("\ufeff")  # as discovery reads it
        if len(text) <= MAX_CHARS:
            file_seen, file_missed = missed_lines(path, text)
            seen += file_seen
            missed += file_missed
    return {"language": repo.language, "lines": seen, "missed": missed}


def compare(old_file: str, new_file: str) -> None:
    old, new = (json.loads(Path(f).read_text()) for f in (old_file, new_file))
    print("| project | language | definition-like lines | missed before | missed after | found | lost |")
    print("|---|---|---:|---:|---:|---:|---:|")
    for name in sorted(set(old) & set(new)):
        before, after = set(old[name]["missed"]), set(new[name]["missed"])
        if before != after:
            print(f"| {name} | {new[name]['language']} | {new[name]['lines']} | {len(before)} | {len(after)} "
                  f"| {len(before - after)} | {len(after - before)} |")
    print()
    for name in sorted(set(old) & set(new)):
        for line in sorted(set(new[name]["missed"]) - set(old[name]["missed"]))[:10]:
            print(f"lost, {name}: {line}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    sub = parser.add_subparsers(dest="verb", required=True)
    write = sub.add_parser("write")
    write.add_argument("out")
    write.add_argument("--project", action="append", help="owner/name (repeatable; default: all)")
    both = sub.add_parser("compare")
    both.add_argument("old")
    both.add_argument("new")
    args = parser.parse_args()
    if args.verb == "compare":
        compare(args.old, args.new)
        return
    repos = [*(r for r in PROJECTS if split_of(r.name) != "test"), *MORE_LANGUAGES]
    chosen = [r for r in repos if not args.project or r.name in args.project]
    found = {}
    for repo in chosen:
        if snapshot_dir(repo.name).exists():
            found[repo.name] = sweep(repo)
            print(f"{repo.name}: {len(found[repo.name]['missed'])} of {found[repo.name]['lines']} missed",
                  file=sys.stderr, flush=True)
    Path(args.out).write_text(json.dumps(found, indent=1) + "\n")


if __name__ == "__main__":
    main()
