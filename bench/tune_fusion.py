"""Hybrid fusion on the code-search dev set with the priors on: the cosine
share for sentence queries (``dense_weight``) and for one-identifier queries
(``identifier_dense_weight``), and each side's pool (``fusion_pool``).

    .venv/bin/python bench/tune_fusion.py [--split dev]

Query-time only: every variant runs on the same embedded stores.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from ctxls.index.ranking import RankingConfig

from tune_priors import print_grid

BASE = RankingConfig()
VARIANTS: dict[str, RankingConfig] = {
    "default": BASE,
    "dense-0.4": replace(BASE, dense_weight=0.4),
    "dense-0.5": replace(BASE, dense_weight=0.5),
    "dense-0.7": replace(BASE, dense_weight=0.7),
    "identifier-0.4": replace(BASE, identifier_dense_weight=0.4),
    "pool-50": replace(BASE, fusion_pool=50),
}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    args = parser.parse_args(argv)
    print_grid(args.split, ("hybrid",), {name: VARIANTS[name] for name in args.variants})
    return 0


if __name__ == "__main__":
    sys.exit(main())
