"""The embedding progress line's ETA: measured on the pass itself, from its
first finished batch on (bench/embedding_eta.py measures it on a real daemon)."""

from __future__ import annotations

from ctxls.index.semantic import EmbeddingEta


class Clock:
    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


def test_estimating_until_a_batch_finished_after_the_first() -> None:
    clock = Clock()
    eta = EmbeddingEta(clock)
    assert eta.text(0, 1000) == "embedding 0/1000 chunks, estimating…"
    clock.now += 30  # the model loads, then the first batch
    assert eta.text(64, 1000) == "embedding 64/1000 chunks, estimating…"
    clock.now += 2
    # 64 chunks in 2 s: 32/s, 872 left. Counting the load (128 in 32 s) would say 3m38s.
    assert eta.text(128, 1000) == "embedding 128/1000 chunks, 32.0/s, ETA 0m27s"
    clock.now += 1  # no new batch yet: the same measurement
    assert eta.text(128, 1000) == "embedding 128/1000 chunks, 32.0/s, ETA 0m27s"


def test_the_rate_follows_the_last_minute() -> None:
    clock = Clock()
    eta = EmbeddingEta(clock)
    done = 0
    for _ in range(60):  # a fast first minute: 10 chunks a second
        clock.now += 1
        done += 10
        eta.text(done, 10_000)
    for _ in range(120):  # then 2 a second (the machine got busy)
        clock.now += 1
        done += 2
        text = eta.text(done, 10_000)
    assert ", 2.0/s, " in text
    left = 10_000 - done
    assert text.endswith(f"ETA {left // 2 // 60}m{left // 2 % 60:02d}s")
