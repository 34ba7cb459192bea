"""A router's random draws as pure functions of (seed, decision): SplitMix64 (Steele, Lea and
Flood, "Fast splittable pseudorandom number generators", OOPSLA 2014), so that a router keeps
no generator and the same ledger always draws the same replicas."""

from __future__ import annotations

MASK = (1 << 64) - 1
GOLDEN = 0x9E3779B97F4A7C15


def mix(value: int) -> int:
    """SplitMix64's finalizer: a 64-bit value whose bits each depend on all of `value`'s."""
    z = value & MASK
    z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & MASK
    z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & MASK
    return z ^ (z >> 31)


def draw(seed: int, decision: int, k: int) -> int:
    """The `k`-th 64-bit draw of decision `decision` under `seed`."""
    return mix(mix(seed * GOLDEN + decision) + (k + 1) * GOLDEN)


def two_of(seed: int, decision: int, n: int) -> tuple[int, int]:
    """Two distinct indices in [0, n), n ≥ 2, every ordered pair equally likely (up to the
    2⁻⁶⁴ bias of reducing a 64-bit draw): the first uniform, the second uniform among the
    others."""
    first = draw(seed, decision, 0) % n
    second = draw(seed, decision, 1) % (n - 1)
    return first, second + (second >= first)
