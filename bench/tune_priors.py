"""Ablation and grid of the ranking priors (index/recall_scorer.py) on the code-search
dev set (bench/codesearch.py): each prior switched off alone, and a small grid
of the main constants, scored by NDCG@10 (mean over languages) per query kind.

    .venv/bin/python bench/tune_priors.py [--split dev] [--modes lexical] [--variants NAME ...]

Only query-time settings vary, so every variant runs on the same stores.
"""

from __future__ import annotations

import argparse
import sys
from dataclasses import replace

from ctxls.index.recall_scorer import NO_PRIORS, PriorConfig
from ctxls.index.ranking import RankingConfig

from codesearch import evaluate

BASE = PriorConfig()
VARIANTS: dict[str, PriorConfig] = {
    "default": BASE,
    "none": NO_PRIORS,
    "no-path": replace(BASE, test_penalty=1.0, vendored_penalty=1.0, barrel_penalty=1.0, stub_penalty=1.0,
                       locale_penalty=1.0),
    "no-definition": replace(BASE, definition_boost=0.0),
    "no-embedded": replace(BASE, embedded_share=0.0),
    "no-file-name": replace(BASE, file_name_boost=0.0),
    "no-saturation": replace(BASE, saturation_decay=1.0),
    "saturation-2": replace(BASE, saturation_threshold=2),
    "saturation-0.7": replace(BASE, saturation_decay=0.7),
    "file-name-0.25": replace(BASE, file_name_boost=0.25),
    "file-name-1": replace(BASE, file_name_boost=1.0),
    "definition-1": replace(BASE, definition_boost=1.0),
    "embedded-0.25": replace(BASE, embedded_share=0.25),
    "test-0.5": replace(BASE, test_penalty=0.5),
    "barrel-0.8": replace(BASE, barrel_penalty=0.8),
    "saturation-2-0.7": replace(BASE, saturation_threshold=2, saturation_decay=0.7),
    "saturation-3": replace(BASE, saturation_threshold=3),
    "saturation-3-0.7": replace(BASE, saturation_threshold=3, saturation_decay=0.7),
    "word-1": replace(BASE, word_share=1.0),
    "word-0.25": replace(BASE, word_share=0.25),
    "embedded-1": replace(BASE, embedded_share=1.0),
    "no-module-after-code": replace(BASE, module_after_code=False),
}
KINDS = ("symbol", "description", "concept", "all")


def print_grid(split: str, modes: tuple[str, ...], rankings: dict[str, RankingConfig]) -> None:
    """One markdown row per (variant, mode): NDCG@10 per query kind, mean over languages."""
    print("| variant | mode | " + " | ".join(KINDS) + " |")
    print("|---|---|" + "---:|" * len(KINDS))
    for name, ranking in rankings.items():
        report = evaluate(split, modes=modes, ranking=ranking, log=lambda message: None)
        for mode in modes:
            cells = []
            for kind in KINDS:
                row = report.summary(split, "all", kind, mode)
                cells.append(f"{row.ndcg:.3f}" if row else "-")
            print(f"| {name} | {mode} | " + " | ".join(cells) + " |", flush=True)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--split", default="dev", choices=("dev", "test"))
    parser.add_argument("--modes", default="lexical")
    parser.add_argument("--variants", nargs="*", default=list(VARIANTS))
    args = parser.parse_args(argv)
    print_grid(args.split, tuple(args.modes.split(",")),
               {name: RankingConfig(priors=VARIANTS[name]) for name in args.variants})
    return 0


if __name__ == "__main__":
    sys.exit(main())
