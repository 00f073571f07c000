"""Hybrid fusion as a pure function: what each fusion promises its callers."""

from __future__ import annotations

import pytest

from ctxls.index.ranking import FUSIONS, fused_scores

LEXICAL = {1: 12.0, 2: 6.0}  # 3 and 4 match no query term
DENSE = {1: 0.30, 2: 0.55, 3: 0.60, 4: None}  # 4 has no vector yet


def test_linear_keeps_the_cosine_and_divides_bm25_by_its_best():
    fused = fused_scores(LEXICAL, DENSE, 0.5, fusion="linear")
    assert fused[1] == pytest.approx(0.5 * 0.30 + 0.5 * 1.0)
    assert fused[3] == pytest.approx(0.5 * 0.60)
    assert fused[4] == pytest.approx(0.5 * 0.55)  # the median cosine of the others


def test_min_max_scales_both_sides_over_the_candidates():
    fused = fused_scores(LEXICAL, DENSE, 0.5, fusion="min-max")
    assert fused[1] == pytest.approx(0.5 * 0.0 + 0.5 * 1.0)  # worst cosine, best BM25
    assert fused[3] == pytest.approx(0.5 * 1.0)  # best cosine, no term
    assert fused[2] == pytest.approx(0.5 * (0.25 / 0.30) + 0.5 * 0.5)
    assert all(0.0 <= score <= 1.0 for score in fused.values())


@pytest.mark.parametrize("fusion", FUSIONS)
def test_dense_only_is_the_cosine_and_skips_rows_without_a_vector(fusion):
    assert fused_scores(LEXICAL, DENSE, 0.5, dense_only=True, fusion=fusion) == {
        1: 0.30, 2: 0.55, 3: 0.60}


@pytest.mark.parametrize("fusion", FUSIONS)
def test_coverage_scales_the_lexical_share(fusion):
    full = fused_scores(LEXICAL, DENSE, 0.5, fusion=fusion)
    half = fused_scores(LEXICAL, DENSE, 0.5, coverage={1: 0.5, 2: 1.0}, fusion=fusion)
    assert half[1] < full[1] and half[2] == pytest.approx(full[2])
