"""Hostile files against every grammar the chunker reads, through the chunk
worker the daemon uses (``index/chunk_worker.py``).

Each language with a definitions table gets six generated files, each
under the 1 MiB file bound: 20,000-deep brackets, 60,000 random tokens, a
400 KB one-line expression, 20,000 lines of mixed keywords, a class name and
100,000 annotation lines (tree-sitter-kotlin's crash), and 20,000 unclosed
string lines. Reported per shape: the slowest languages, how many files
took the parse deadline (``PARSE_DEADLINE_S``: then read as line windows) and
how many cost the worker a restart (hung or crashed inside a parse step: killed at
``WORKER_DEADLINE_S``); and whether this process survived (it parses
nothing itself).

With ``--many N --shape S --language L``: a repository's worth of one
attack instead, N distinct files of shape S in language L, then an ordinary
file of L: the time for all, and how the ordinary file was read (a language
whose grammar gave up GIVE_UPS_TO_SUSPEND times is suspended;
``--no-suspension`` measures without that bound).

Usage: .venv/bin/python bench/parse_deadline.py [--language kotlin ...] [--json]
       .venv/bin/python bench/parse_deadline.py --many 40 --shape annotations --language kotlin [--no-suspension]
"""

from __future__ import annotations

import argparse
import json
import random
import sys
import time

from ctxls.index.chunk_worker import ChunkWorker
from ctxls.index.chunking.grammars import GRAMMARS
from ctxls.index.languages import _LANGUAGE_BY_EXTENSION, PARSE_DEADLINE_S, language_for_path

_TOKENS = ["if", "else", "for", "while", "fun", "def", "let", "in", "match", "with", "end", "do",
           "class", "type", "module", "import", "return", "case", "of", "begin", "then", "(", ")",
           "{", "}", "[", "]", "=", "->", "|", ";", ",", ".", ":", "<", ">"]


def shapes() -> dict[str, str]:
    rnd = random.Random(7)
    return {
        "brackets": "x = " + "(" * 20_000 + "1" + ")" * 20_000 + "\n",
        "random tokens": " ".join(rnd.choice(_TOKENS + ["a", "b", "1", '"s"']) for _ in range(60_000)),
        "long line": "x = " + "a + " * 100_000 + "b\n",
        "keyword lines": "\n".join(" ".join(rnd.choice(_TOKENS) for _ in range(rnd.randint(1, 6)))
                                   for _ in range(20_000)),
        "annotations": "class A\n" + "@A\n" * 100_000 + "constructor(\n fun f( {\n",
        "unclosed strings": '"open\n' * 20_000,
    }


def file_name(language: str) -> str | None:
    """A path the chunker reads as ``language`` (None: only by its text)."""
    for extension, named in sorted(_LANGUAGE_BY_EXTENSION.items()):
        path = f"hostile.{extension}"
        if named == language and language_for_path(path, "") == language:
            return path
    return None


def many(count: int, shape: str, language: str, suspension: bool) -> dict:
    from ctxls.index import languages as grammar_state

    if not suspension:
        grammar_state.GIVE_UPS_TO_SUSPEND = count + 1
    path = file_name(language)
    assert path is not None, language
    worker = ChunkWorker()
    started = time.monotonic()
    # Give-ups count by path: each hostile text a file of its own.
    reasons = [worker.chunk(path.replace("hostile.", f"hostile{n}."), f"{shapes()[shape]}\n{n}\n").unparsed
               for n in range(count)]
    hostile_s = time.monotonic() - started
    ordinary = worker.chunk(path, "x\n")
    worker.close()
    return {"files": count, "shape": shape, "language": language, "suspension": suspension,
            "seconds": round(hostile_s, 1), "reasons": {r: reasons.count(r) for r in set(reasons)},
            "worker_restarts": worker.restarts, "ordinary_file": ordinary.unparsed or "parsed"}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--language", nargs="*", help="only these languages")
    parser.add_argument("--many", type=int, help="N distinct files of one shape in one language")
    parser.add_argument("--shape", choices=sorted(shapes()))
    parser.add_argument("--no-suspension", action="store_true")
    parser.add_argument("--json", action="store_true")
    args = parser.parse_args()
    if args.many:
        print(json.dumps(many(args.many, args.shape, args.language[0], not args.no_suspension)))
        return
    languages = sorted(args.language or GRAMMARS)
    worker = ChunkWorker()
    rows = []
    for shape, text in shapes().items():
        times, restarts = [], 0
        for language in languages:
            path = file_name(language)
            if path is None:
                continue
            before = worker.restarts
            started = time.monotonic()
            # A text is its own per language: one a grammar gave up on is marked
            # hazardous, and the next language would not parse it at all.
            worker.chunk(path, f"{text}\n{language}\n")
            times.append((time.monotonic() - started, language))
            restarts += worker.restarts - before
        times.sort(reverse=True)
        rows.append({"shape": shape, "bytes": len(text.encode()), "languages": len(times),
                     "slowest": [f"{name} {seconds:.1f} s" for seconds, name in times[:4]],
                     "total_s": round(sum(seconds for seconds, _ in times), 1),
                     "at_deadline": sum(seconds >= PARSE_DEADLINE_S for seconds, _ in times),
                     "worker_restarts": restarts})
        print(json.dumps(rows[-1]), file=sys.stderr, flush=True)
    worker.close()
    report = {"rows": rows, "this_process_survived": True}
    print(json.dumps(report, indent=2) if args.json else report)


if __name__ == "__main__":
    main()
