"""The sampling corruption sentinel (paper section 2.4): the operator and its detection latency.

**Latency, exactly.** Each round draws ``r`` of ``M`` blocks uniformly *with replacement*; ``B``
are corrupted. A round misses every corrupted block with probability ``q = (1 - B/M)^r``, so
``n`` rounds miss with probability ``q^n``, and detection with confidence ``1 - delta`` needs
``n(delta) = ceil(log delta / log q)`` rounds (Lean ``sentinel_rounds``, decided there as
``q^n <= delta`` in cross-multiplied integers). The latency ``L`` (rounds until the first alarm)
is geometric: ``P(L > n) = q^n``.

**The operator.** :class:`BlockRecord` is the certified writer's record: a BLAKE2b-128 digest
of every block (one page of one pool family, over all its namespaces) taken when the writer
stores bytes into it (:meth:`BlockRecord.commit`). :class:`SamplingSentinel` runs rounds: draw
``r`` block indices with replacement, re-digest the pool's bytes of each and compare with the
record; any difference raises an :class:`Alarm` naming the round and blocks. Bytes the writer did
not store (a bit flip, a stray write) are what it catches.

**Agreement** (:func:`latency_agreement`). Over ``T`` trials with ``B`` of ``M`` blocks
corrupted, ``X_m = #{trials with L > m}`` is ``Binomial(T, q^m)``. For each checked ``m`` the
observed ``X_m`` must lie in the two-sided exact binomial acceptance interval of level
``alpha / (number of checks)`` (Bonferroni), and in particular at ``m = n(delta)`` the fraction
detected within ``n(delta)`` rounds must be ``>= 1 - delta - slack`` with ``slack`` the one-sided
binomial slack of ``Binomial(T, delta)`` (sound because ``q^n(delta) <= delta``). A correct sentinel
fails this with probability at most ``alpha``.
"""

from __future__ import annotations

import hashlib
import math
import threading
from collections.abc import Callable, Sequence
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np


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
    n = max(1, math.ceil(math.log(float(d)) / math.log(float(q))) - 2)
    while q**n > d:
        n += 1
    while n > 1 and q ** (n - 1) <= d:
        n -= 1
    return n


# --- the operator ---------------------------------------------------------------------------------

BlockId = tuple[str, int]  # (pool family, page)


def block_digest(data: np.ndarray) -> bytes:
    """BLAKE2b-128 of a block's bytes (C order)."""
    return hashlib.blake2b(np.ascontiguousarray(data).tobytes(), digest_size=16).digest()


class BlockRecord:
    """The certified writer's record: one digest per block, updated when the writer stores bytes.

    ``read(block)`` returns the block's current bytes in the pool (the same view the model reads).
    Thread-safe.
    """

    def __init__(self, blocks: Sequence[BlockId], read: Callable[[BlockId], np.ndarray]) -> None:
        if not blocks:
            raise ValueError("a block record needs at least one block")
        self.blocks: tuple[BlockId, ...] = tuple(blocks)
        self.read = read
        self._lock = threading.Lock()
        self._digest: dict[BlockId, bytes] = {b: block_digest(read(b)) for b in self.blocks}

    def commit(self, block: BlockId) -> None:
        """The writer stored bytes into ``block``: record what the block now holds."""
        d = block_digest(self.read(block))
        with self._lock:
            if block not in self._digest:
                raise KeyError(f"block {block} is not in the record")
            self._digest[block] = d

    def matches(self, block: BlockId) -> bool:
        """Whether the pool's bytes of ``block`` equal what the writer recorded."""
        with self._lock:
            want = self._digest[block]
        return block_digest(self.read(block)) == want


@dataclass(frozen=True)
class Alarm:
    """A sentinel round found blocks whose bytes differ from the writer's record."""

    round: int
    blocks: tuple[BlockId, ...]


@dataclass
class SamplingSentinel:
    """Rounds of ``r`` uniform draws with replacement over the record's blocks (see the module docstring)."""

    record: BlockRecord
    r: int
    rng: np.random.Generator
    rounds: int = 0
    alarms: list[Alarm] = field(default_factory=list)

    def __post_init__(self) -> None:
        if isinstance(self.r, bool) or not isinstance(self.r, int) or self.r < 1:
            raise ValueError(f"draws per round must be a positive integer, got {self.r!r}")

    def round(self) -> Alarm | None:
        """One round: ``r`` draws, each block compared with the record; an alarm on any mismatch."""
        self.rounds += 1
        idx = self.rng.integers(0, len(self.record.blocks), self.r)
        bad = tuple(dict.fromkeys(self.record.blocks[i] for i in idx if not self.record.matches(self.record.blocks[i])))
        if not bad:
            return None
        alarm = Alarm(self.rounds, bad)
        self.alarms.append(alarm)
        return alarm

    def until_alarm(self, max_rounds: int) -> int | None:
        """Rounds until the first alarm (the latency, counted from this call), or ``None``."""
        for k in range(1, max_rounds + 1):
            if self.round() is not None:
                return k
        return None


# --- latency trials and their agreement with n(delta) ------------------------------------------------


def _binom_log_pmf(T: int, p: float) -> np.ndarray:
    k = np.arange(T + 1)
    if p <= 0.0 or p >= 1.0:
        out = np.full(T + 1, -np.inf)
        out[0 if p <= 0.0 else T] = 0.0
        return out
    lg = np.array([math.lgamma(i + 1) for i in range(T + 1)])
    return lg[T] - lg - lg[::-1] + k * math.log(p) + (T - k) * math.log1p(-p)


def binomial_interval(T: int, p: float, alpha: float) -> tuple[int, int]:
    """Two-sided acceptance interval ``[lo, hi]`` of ``Binomial(T, p)``: each tail outside has mass <= alpha/2."""
    pmf = np.exp(_binom_log_pmf(T, p))
    lower = np.cumsum(pmf)  # P(X <= k)
    upper = np.cumsum(pmf[::-1])[::-1]  # P(X >= k)
    lo = int(np.nonzero(lower > alpha / 2)[0][0])  # P(X < lo) <= alpha/2
    hi = int(np.nonzero(upper <= alpha / 2)[0][0]) - 1 if (upper <= alpha / 2).any() else T  # P(X > hi) <= alpha/2
    return lo, hi


def binomial_upper(T: int, p: float, alpha: float) -> int:
    """Least ``k`` with ``P(Binomial(T, p) > k) <= alpha`` (one-sided)."""
    pmf = np.exp(_binom_log_pmf(T, p))
    tail = 1.0 - np.cumsum(pmf)  # P(X > k)
    return int(np.nonzero(tail <= alpha)[0][0])


@dataclass(frozen=True)
class LatencyAgreement:
    """Observed latencies against the geometric law ``P(L > m) = q^m`` (see the module docstring)."""

    M: int
    B: int
    r: int
    delta: Fraction
    alpha: float
    trials: int
    q: Fraction
    n_delta: int
    detected_within_n: float
    min_detected_within_n: float
    checks: tuple[dict[str, Any], ...]
    mean_latency: float
    expected_mean_latency: float
    undetected: int

    @property
    def agrees(self) -> bool:
        return self.undetected == 0 and self.detected_within_n >= self.min_detected_within_n and all(c["ok"] for c in self.checks)

    def as_dict(self) -> dict[str, Any]:
        return {"agrees": self.agrees, "M": self.M, "B": self.B, "r": self.r,
                "delta": f"{self.delta.numerator}/{self.delta.denominator}", "alpha": self.alpha, "trials": self.trials,
                "q": float(self.q), "n_delta": self.n_delta, "detected_within_n_delta": self.detected_within_n,
                "min_detected_within_n_delta": self.min_detected_within_n,
                "slack": 1 - float(self.delta) - self.min_detected_within_n, "checks": list(self.checks),
                "mean_latency": self.mean_latency, "expected_mean_latency": self.expected_mean_latency,
                "undetected_trials": self.undetected, "tier": "empirical"}


def latency_agreement(latencies: Sequence[int | None], M: int, B: int, r: int, delta: Fraction,
                      alpha: float = 1e-3) -> LatencyAgreement:
    """Compare observed latencies (``None``: never detected) with ``q`` and ``n(delta)``."""
    T = len(latencies)
    if T < 1:
        raise ValueError("no trials")
    n = detection_rounds(M, B, r, delta)
    q = miss_probability(M, B, r)
    L = np.array([x if x is not None else np.iinfo(np.int64).max for x in latencies], np.int64)
    ms = sorted({1, max(1, n // 2), max(1, n - 1), n})
    a_each = alpha / (len(ms) + 1)
    checks = []
    for m in ms:
        p = float(q) ** m
        lo, hi = binomial_interval(T, p, a_each)
        x = int((L > m).sum())
        checks.append({"rounds": m, "missed": x, "expected": T * p, "accept": [lo, hi], "ok": lo <= x <= hi})
    k_max = binomial_upper(T, float(delta), a_each)
    detected = float((L <= n).mean())
    finite = L[L != np.iinfo(np.int64).max]
    return LatencyAgreement(M, B, r, Fraction(delta), alpha, T, q, n, detected, 1 - k_max / T, tuple(checks),
                            float(finite.mean()) if finite.size else float("nan"), 1 / (1 - float(q)),
                            int(T - finite.size))


def corruption_trials(record: BlockRecord, write: Callable[[BlockId, np.ndarray], None], B: int, r: int,
                      trials: int, seed: int, max_rounds: int) -> list[int | None]:
    """Latency of a fresh sentinel in each trial with ``B`` distinct blocks corrupted, then restored.

    A corruption flips one random byte of a block (XOR with a nonzero byte) behind the writer's
    back (``write`` stores raw bytes without committing them to the record).
    """
    M = len(record.blocks)
    if not 1 <= B <= M:
        raise ValueError(f"corrupted blocks must lie in 1..{M}, got {B}")
    rng = np.random.default_rng(seed)
    out: list[int | None] = []
    for _ in range(trials):
        chosen = [record.blocks[i] for i in rng.choice(M, B, replace=False)]
        saved = {b: record.read(b).copy() for b in chosen}
        for b in chosen:
            data = saved[b].copy()
            flat = data.reshape(-1)
            flat[rng.integers(flat.size)] ^= np.uint8(rng.integers(1, 256))
            write(b, data)
        sentinel = SamplingSentinel(record, r, np.random.default_rng(rng.integers(2**63)))
        out.append(sentinel.until_alarm(max_rounds))
        for b, data in saved.items():
            write(b, data)
        if not all(record.matches(b) for b in chosen):
            raise RuntimeError("restoring the corrupted blocks failed")
    return out
