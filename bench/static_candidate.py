"""Score a candidate static table on set 4 as if it were the static model, without shipping it.

    .venv/bin/python bench/static_distill.py --out /tmp/cand.npy [--kd 1 ...]
    .venv/bin/python bench/static_candidate.py NAME /tmp/cand.npy [--split dev|test]
        [--max-tokens N] [--json FILE]

The table is served under ``NAME`` (its own stores and vector-cache key in
codesearch.py, so candidates never share vectors), its text cut at
``--max-tokens`` (default: embeddings.STATIC_MAX_TOKENS); dense and hybrid
NDCG@10 by chunk and by file, per language, are printed and written to
``--json`` as {"chunk|file/split/mode/language": ndcg}.
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))

import codesearch  # noqa: E402

from ctxls.index import embeddings  # noqa: E402


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("name", help="a name of its own (vectors are stamped with it)")
    parser.add_argument("table", type=Path, help="float16 [vocab, dims] .npy")
    parser.add_argument("--split", choices=("dev", "test"), default="dev")
    parser.add_argument("--max-tokens", type=int, default=embeddings.STATIC_MAX_TOKENS)
    parser.add_argument("--json", type=Path)
    args = parser.parse_args(argv)
    if embeddings.is_builtin_model(args.name):
        parser.error(f"{args.name} is a built-in model's name; give the candidate its own")
    # The engine resolves the static model through these module globals at run time.
    embeddings.STATIC_MODEL_NAME = args.name
    embeddings.STATIC_MODEL_FILE = args.table
    embeddings.STATIC_MODEL_SHA256 = None
    embeddings.STATIC_MAX_TOKENS = args.max_tokens
    scores = {}
    for by_file in (False, True):
        report = codesearch.evaluate(args.split, None, ("dense", "hybrid"), log=lambda m: None,
                                     embed_model=args.name, by_file=by_file)
        for row in report.rows:
            if row.kind == "all":
                scores[f"{'file' if by_file else 'chunk'}/{row.split}/{row.mode}/{row.language}"] = \
                    round(row.ndcg, 4)
    for key, value in scores.items():
        print(f"{key}\t{value:.3f}")
    if args.json:
        args.json.write_text(json.dumps(scores, indent=1) + "\n")
    return 0


if __name__ == "__main__":
    sys.exit(main())
