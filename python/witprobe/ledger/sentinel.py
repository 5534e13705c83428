"""The sampling corruption sentinel (paper section 2.4): detection latency, exactly.

Each round draws ``r`` of ``M`` slots uniformly *with replacement*; ``B`` are corrupted. A round
misses every corrupted slot with probability ``q = (1 - B/M)^r``, so ``n`` rounds miss with
probability ``q^n``, and detection with confidence ``1 - delta`` needs
``n(delta) = ceil(log delta / log q)`` rounds (Lean ``sentinel_rounds``, decided there as
``q^n <= delta`` in cross-multiplied integers).
"""

from __future__ import annotations

from fractions import Fraction


def miss_probability(M: int, B: int, r: int) -> Fraction:
    """``q = (1 - B/M)^r``, exact."""
    if not (isinstance(M, int) and isinstance(B, int) and isinstance(r, int)) or M <= 0 or not 0 <= B <= M or r < 0:
        raise ValueError(f"need integers M > 0, 0 <= B <= M, r >= 0; got M={M!r}, B={B!r}, r={r!r}")
    return Fraction(M - B, M) ** r


def misses_within(M: int, B: int, r: int, n: int, delta: Fraction) -> bool:
    """Whether ``q^n <= delta`` (decided exactly; mirrors the Lean check)."""
    return miss_probability(M, B, r) ** n <= Fraction(delta)


def detection_rounds(M: int, B: int, r: int, delta: Fraction) -> int:
    """Least ``n`` with ``q^n <= delta``: the detection latency at confidence ``1 - delta``."""
    d = Fraction(delta)
    if not 0 < d < 1:
        raise ValueError(f"delta must lie in (0, 1), got {d}")
    q = miss_probability(M, B, r)
    if q >= 1:
        raise ValueError("the sentinel never detects: q = 1 (no corrupted slot or r = 0)")
    if q == 0:
        return 1
    # start from the float estimate, then settle exactly
    import math

    n = max(1, math.ceil(math.log(float(d)) / math.log(float(q))) - 2)
    while q**n > d:
        n += 1
    while n > 1 and q ** (n - 1) <= d:
        n -= 1
    return n
