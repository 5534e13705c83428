"""The certified writer: pre-authorize, draw, audit, restore (paper 5.3-5.4; anchor notes 3.3).

One *write event* is one hook call's entries for one account (one layer of one pool family).
For an event of ``n`` entries of account ``a`` whose next budget is ``delta_i``:

1. **Pre-authorization, before any draw**, from the exact codes alone: per entry the radius
   ``u = mean + det + sqrt(2 (C/4) ln(n / delta_i))`` (variance-aware two-point bounded difference;
   :mod:`witprobe.memory.stochastic_rounding`), rounded outward. The entry is authorized iff
   ``u <= W_thr``. Unauthorized entries are written exact (state ``kept_exact``) and draw nothing.
2. If no entry is authorized the event is deterministic: it spends 0 and the counter stays.
   Otherwise it is probabilistic: it spends ``delta_i`` once (``Budget.spend``), and ``i`` is the
   event counter of the RNG key ``(nonce, uid, layer, i)``.
3. **Draw**: stochastic rounding of the authorized entries (uniform index ``j * D + c`` for the
   ``j``-th entry of the event).
4. **Audit** in the same call: realized ``W = sum_b ||d_b||``. ``W > u`` is an authorization
   violation: the exact bytes are restored in place (``restored_exact``), so no served value ever
   exceeds its radius. ``delta_i`` bounds the probability that any entry of the event is restored
   (union over the ``n`` entries at ``delta_i / n`` each).
5. **E-process** factors ``log g = 2 z - 0.5`` (``z = (W - m)/sqrt(C)``, ``m = mean + det``) for
   authorized entries with ``C > 0``, folded into the account's process and (unless the caller
   folds it itself, ``fold_global=False``, to keep the global process in journal order) the
   global one. The outcome carries the event's :class:`~witprobe.ledger.eprocess.FactorSummary`,
   which is what the journal records.

:meth:`CertifiedWriter.write_events` certifies the events of several accounts of one hook call
with one vectorized draw (the serving path, one event per account and layer); each event's
steps 1-5 are exactly those above.

``kernel_extra_drop`` is a fault switch for tests: a kernel that masks more mantissa bits than
the radius was computed for (a misconfigured kernel; its draws are still unbiased on its own,
coarser grid). The realized witness then drifts above the certified mean and the e-process must
raise the alarm.
"""

from __future__ import annotations

import contextlib
import math
import struct
from dataclasses import dataclass
from fractions import Fraction

import numpy as np
import torch

from witprobe.ledger.accounts import Account, AccountBook
from witprobe.ledger.certificates import Kind, admit, radius_up
from witprobe.ledger.eprocess import FactorSummary, log_factors
from witprobe.ledger.slots import KEPT_EXACT, MASKED, RESTORED_EXACT
from witprobe.memory.counter_rng import stream_key
from witprobe.memory.stochastic_rounding import (
    SRGrid,
    coarse_grid,
    code_values,
    keyed_uniforms,
    radius_parts,
    realized_witness,
    round_with,
    values_to_codes,
)

ASSUMPTION_TAG = "SR-two-point: independent coordinate draws, E[d]=0, |d_c| range <= step_c"


class WriterError(ValueError):
    """Bad writer configuration or input."""


@dataclass(frozen=True)
class WriterConfig:
    """Parameters of the certified writer. ``w_thr`` is in the entries' real units."""

    nonce: int
    w_thr: float
    drop_bits: int = 2
    bands: int = 1
    kernel_extra_drop: int = 0

    def __post_init__(self) -> None:
        if not (isinstance(self.w_thr, (int, float)) and math.isfinite(self.w_thr) and self.w_thr >= 0):
            raise WriterError(f"w_thr must be a finite nonnegative number, got {self.w_thr!r}")
        if not 0 <= self.nonce < 2**32:
            raise WriterError(f"nonce must fit 32 bits, got {self.nonce!r}")
        if self.kernel_extra_drop < 0 or self.drop_bits + self.kernel_extra_drop > 3:
            raise WriterError(f"kernel_extra_drop {self.kernel_extra_drop!r} leaves no valid e4m3 coarsening")


@dataclass(frozen=True)
class Prepared:
    """Pre-draw quantities of one hook call's entries ``(N, D)`` (float64 / numpy)."""

    codes: torch.Tensor
    scale_exp: torch.Tensor
    grid: SRGrid
    mean: np.ndarray
    det: np.ndarray
    c_sum: np.ndarray

    def rows(self, part: slice) -> "Prepared":
        """The entries ``part`` of these (every quantity is per entry, so preparing the entries
        together and splitting equals preparing each part alone)."""
        return Prepared(self.codes[part], self.scale_exp[part], _take(self.grid, part), self.mean[part], self.det[part],
                        self.c_sum[part])


@dataclass
class EventOutcome:
    """Result of one write event (arrays over the event's entries)."""

    uid: int
    counter: int | None
    delta: Fraction
    served: torch.Tensor
    state: np.ndarray
    witness: np.ndarray
    radius: np.ndarray
    n_authorized: int
    n_violations: int
    factors: FactorSummary = FactorSummary(0, None, None)
    n_no_randomness: int = 0
    log_g: np.ndarray | None = None  # the event's e-process factors (logs), in order (None: deterministic)


class CertifiedWriter:
    """Stateless policy over the accounts it is given (accounts carry the budgets and e-processes)."""

    def __init__(self, cfg: WriterConfig) -> None:
        self.cfg = cfg

    def prepare(self, codes: torch.Tensor, scale_exp: torch.Tensor) -> Prepared:
        if codes.dim() != 2 or scale_exp.shape != codes.shape[:1]:
            raise WriterError(f"expected codes (N, D) and scale_exp (N,), got {tuple(codes.shape)} and {tuple(scale_exp.shape)}")
        grid = coarse_grid(code_values(codes), self.cfg.drop_bits)
        parts = radius_parts(grid, scale_exp, self.cfg.bands)
        return Prepared(codes, scale_exp, grid, parts.mean.numpy(), parts.det.numpy(), parts.c_sum.numpy())

    def write_event(self, book: AccountBook, acc: Account, layer: int, prep: Prepared, idx: np.ndarray,
                    fold_global: bool = True) -> EventOutcome:
        """Certify the entries ``idx`` of ``prep`` for account ``acc`` (see the module docstring)."""
        return self.write_events(book, [(acc, idx)], layer, prep, fold_global)[0]

    def write_events(self, book: AccountBook, events: list[tuple[Account, np.ndarray]], layer: int, prep: Prepared,
                     fold_global: bool = True) -> list[EventOutcome]:
        """:meth:`write_event` for several accounts' events of one hook call, with one vectorized draw.

        ``events``: ``(account, entry indices)`` pairs, one per account. Each event is pre-authorized
        and spends (or not) on its own account exactly as alone; then the draws of every authorized
        entry are made together (each uniform depends only on its event's key ``(nonce, uid, layer,
        counter)`` and its position ``j * D + c``, so they are the event's own), audited, and folded
        into each account in order. Outcomes, account states and the global process (folded in event
        order) equal calling :meth:`write_event` on the events one after the other.
        """
        if len({id(acc) for acc, _ in events}) != len(events):
            raise WriterError("write_events takes one event per account")
        if any(int(np.size(idx)) == 0 for _, idx in events):
            raise WriterError("empty write event")
        d = prep.codes.shape[1]
        codes_np = prep.codes.numpy()
        outs: list[EventOutcome] = []
        with contextlib.ExitStack() as locks:
            for acc, _ in events:
                locks.enter_context(acc.lock)
            # 1. pre-authorization and the spend, event by event, before any draw
            pre = []
            drawn_idx, drawn_pos, drawn_key = [], [], []
            for acc, idx in events:
                n = int(idx.size)
                mean, det, c_sum = prep.mean[idx], prep.det[idx], prep.c_sum[idx]
                delta_next = acc.budget.next_delta()
                log_inv = math.log(n) + math.log(delta_next.denominator) - math.log(delta_next.numerator)
                radius = radius_up(mean + det + np.sqrt(0.5 * c_sum * log_inv))
                auth = radius <= self.cfg.w_thr
                n_auth = int(auth.sum())
                acc.n_write_events += 1
                acc.n_entries_written += n
                if n_auth == 0:
                    admit(Kind.DETERMINISTIC, "write event with no authorized entry")
                    acc.budget.deterministic()
                    acc.n_fallback_exact += n
                    pre.append((acc, idx, mean, det, c_sum, radius, auth, 0, None, None, Fraction(0)))
                    continue
                admit(Kind.PROBABILISTIC, "stochastic-rounding write event")
                counter, delta = acc.budget.spend()
                acc.assumptions[ASSUMPTION_TAG] += 1
                j = np.nonzero(auth)[0]
                drawn_idx.append(idx[auth])
                drawn_pos.append(j)
                drawn_key.append(np.full(j.size, stream_key(self.cfg.nonce, acc.uid, layer, counter), np.int64))
                pre.append((acc, idx, mean, det, c_sum, radius, auth, n_auth, j, counter, delta))
            # 2. the draws and the realized witnesses of every authorized entry at once
            if drawn_idx:
                a_idx = torch.from_numpy(np.concatenate(drawn_idx))
                pos = torch.from_numpy(np.concatenate(drawn_pos))
                keys = torch.from_numpy(np.concatenate(drawn_key)).unsqueeze(1)
                u = keyed_uniforms(keys, pos.unsqueeze(1) * d + torch.arange(d))
                g = _take(prep.grid, a_idx)
                kg = coarse_grid(g.value, self.cfg.drop_bits + self.cfg.kernel_extra_drop) if self.cfg.kernel_extra_drop else g
                served_vals = round_with(kg, u)
                w_all = realized_witness(g, served_vals, prep.scale_exp[a_idx], self.cfg.bands).numpy()
                codes_all = values_to_codes(served_vals).numpy()
            # 3. audit, restore and fold, event by event
            off = 0
            for acc, idx, mean, det, c_sum, radius, auth, n_auth, j, counter, delta in pre:
                n = int(idx.size)
                exact = codes_np[idx]
                state = np.full(n, KEPT_EXACT, np.uint8)
                witness = np.zeros(n, np.float64)
                if counter is None:
                    outs.append(EventOutcome(acc.uid, None, Fraction(0), torch.from_numpy(exact), state, witness, radius, 0, 0))
                    continue
                w, served_codes = w_all[off:off + n_auth], codes_all[off:off + n_auth]
                off += n_auth
                viol = w > radius[auth]
                served = exact.copy()
                served[j[~viol]] = served_codes[~viol]
                state[auth] = np.where(viol, RESTORED_EXACT, MASKED).astype(np.uint8)
                witness[auth] = np.where(viol, 0.0, w)
                n_viol = int(viol.sum())
                acc.n_authorized += n_auth
                acc.n_auth_violations += n_viol
                acc.n_fallback_exact += n - n_auth
                if (~viol).any():
                    wm = float(w[~viol].max())
                    acc.w_max_compressed = wm if acc.w_max_compressed is None else max(acc.w_max_compressed, wm)
                acc.update_digest(struct.pack("<qq", layer, counter) + served_codes.tobytes())
                has_c = c_sum[auth] > 0
                n_no_rand = int((~has_c).sum())
                acc.n_factors_skipped_no_randomness += n_no_rand
                lg = log_factors(w[has_c], (mean + det)[auth][has_c], c_sum[auth][has_c])
                acc.eprocess.add(lg)
                if fold_global:
                    book.global_eprocess.add(lg)
                outs.append(EventOutcome(acc.uid, counter, delta, torch.from_numpy(served), state, witness, radius, n_auth,
                                         n_viol, FactorSummary.of(lg), n_no_rand, lg))
        return outs


def _take(g: SRGrid, rows: torch.Tensor | slice) -> SRGrid:
    return SRGrid(value=g.value[rows], lo=g.lo[rows], step=g.step[rows], theta=g.theta[rows], shift=g.shift[rows])
