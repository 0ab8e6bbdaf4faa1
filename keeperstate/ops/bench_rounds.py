"""The verdict of a benchmark measured in rounds (ADR 0060).

A round runs the members of a comparison interleaved, so the two sides of a ratio share that
round's machine, and the ratio is the round's own (bench_state: a pass, each member's figure its
typical operation). The verdict is the median of the rounds' ratios, so one round that a load
spike reached on one side cannot move it. The spread (quartiles, lowest and highest) is printed
with it, so a wide one shows.
"""

from __future__ import annotations

import statistics
from collections.abc import Sequence
from dataclasses import dataclass


@dataclass(frozen=True)
class RoundRatio:
    """A ratio measured once per round: its median (the verdict), quartiles and range."""

    values: tuple[float, ...]

    @classmethod
    def of(cls, rounds: Sequence[dict[str, float]], numerator: str, denominator: str) -> RoundRatio:
        if not rounds:
            raise ValueError("a ratio needs at least one round")
        return cls(tuple(r[numerator] / r[denominator] for r in rounds))

    @property
    def median(self) -> float:
        return statistics.median(self.values)

    @property
    def quartiles(self) -> tuple[float, float]:
        if len(self.values) < 2:
            return self.values[0], self.values[0]
        low, _, high = statistics.quantiles(self.values, n=4, method="inclusive")
        return low, high

    def spread(self) -> str:
        """'p25–p75 (min–max)', or '' for a single round."""
        if len(self.values) < 2:
            return ""
        low, high = self.quartiles
        return f"{low:.2f}–{high:.2f} ({min(self.values):.2f}–{max(self.values):.2f})"

    def summary(self) -> dict[str, object]:
        low, high = self.quartiles
        return {"ratio": round(self.median, 3), "quartiles": [round(low, 3), round(high, 3)],
                "range": [round(min(self.values), 3), round(max(self.values), 3)],
                "ratios": [round(v, 3) for v in self.values]}
