"""Argument checks shared by the tuner's modules: errors are ValueErrors naming the value."""

from __future__ import annotations

MAX_COUNT = 2**40  # the core's bound on counts (a batch, a window): int64 arithmetic stays exact


def positive_int(name: str, value, minimum: int) -> int:
    """`value` if it is an int (not a bool) in [minimum, 2^40], else a ValueError naming it."""
    if isinstance(value, bool) or not isinstance(value, int) or value < minimum:
        raise ValueError(f"hetrun.Tuner: {name}={value!r} must be an integer >= {minimum}")
    if value > MAX_COUNT:
        raise ValueError(f"hetrun.Tuner: {name}={value!r} must be an integer <= 2^40")
    return value
