"""Paired wins count each arm's runs against the anchor's run of the same rate, seed, repeat."""

from __future__ import annotations

from hypothesis import given
from hypothesis import strategies as st

from slidingpolicy.replay.paired import paired_wins

KEYS = st.tuples(st.sampled_from([1.5, 2.0]), st.integers(0, 1), st.integers(0, 2))


def _row(arm: str, key: tuple[float, int, int], attainment: float) -> dict[str, object]:
    return {"policy": arm, "rate": key[0], "seed": key[1], "repeat": key[2],
            "attainment": attainment}  # fmt: skip


def test_a_small_matrix_counts_by_hand() -> None:
    rows = [
        _row("sarathi-edf", (1.5, 0, 0), 0.9),
        _row("sarathi-edf", (1.5, 0, 1), 0.8),
        _row("sarathi-edf", (2.0, 0, 0), 0.5),
        _row("slidingserve+", (1.5, 0, 0), 0.95),
        _row("slidingserve+", (1.5, 0, 1), 0.8),
        _row("slidingserve+", (2.0, 0, 0), 0.4),
        _row("slidingserve+", (2.0, 1, 0), 0.9),
    ]
    (count,) = paired_wins(rows, "sarathi-edf")
    assert (count.arm, count.text) == ("slidingserve+", "1–1–1")


@given(st.dictionaries(KEYS, st.tuples(st.floats(0, 1), st.floats(0, 1)), min_size=1, max_size=12))
def test_every_common_run_is_a_win_a_tie_or_a_loss_and_swapping_swaps_them(
    runs: dict[tuple[float, int, int], tuple[float, float]],
) -> None:
    rows = [_row("a", k, v[0]) for k, v in runs.items()]
    rows += [_row("b", k, v[1]) for k, v in runs.items()]
    (ab,) = paired_wins(rows, "a")
    (ba,) = paired_wins(rows, "b")
    assert ab.wins + ab.ties + ab.losses == len(runs)
    assert (ab.wins, ab.ties, ab.losses) == (ba.losses, ba.ties, ba.wins)
