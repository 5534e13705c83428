"""The tier registry: every emitted metric, the tier it can earn, and why.

An unregistered metric is a hard error (:class:`UnregisteredMetric`), never a silent demotion
(paper section 4). Each entry states its *kind*:

- ``bound``: an upper bound that may enter a contract as its offset ``b``;
- ``coefficient``: an exact runtime measurement used as a contract gain (e.g. a query norm);
- ``reading``: a diagnostic observation (means, medians, realized errors that need an
  uncompressed reference). A reading is never a bound and never enters a contract.

``lean`` marks the metrics that have a constructor in ``Witprobe.Metric`` (Witprobe/Metric.lean)
because they appear in kernel-checked chains; a test keeps the two lists in step.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass

from witprobe.calculus.metrics import Metric, as_metric
from witprobe.calculus.tiers import Tier

KINDS = ("bound", "coefficient", "reading")


class UnregisteredMetric(KeyError):
    """A metric was emitted that the tier registry does not know."""

    def __str__(self) -> str:  # KeyError quotes its argument; keep the message readable
        return str(self.args[0]) if self.args else "unregistered metric"


@dataclass(frozen=True)
class RegisteredMetric:
    """One registry entry: ``metric`` earns at most ``tier``, for ``reason``."""

    metric: Metric
    tier: Tier
    reason: str
    kind: str
    lean: bool = False

    def __post_init__(self) -> None:
        if self.kind not in KINDS:
            raise ValueError(f"registry entry {self.metric}: kind must be one of {KINDS}, got {self.kind!r}")
        if self.kind == "reading" and self.tier is not Tier.EMPIRICAL:
            raise ValueError(f"registry entry {self.metric}: a reading can only be empirical")
        if not self.reason.strip():
            raise ValueError(f"registry entry {self.metric}: the reason for its tier is required")


class TierRegistry:
    """A mapping ``Metric -> RegisteredMetric`` that refuses unknown metrics."""

    def __init__(self, entries: list[RegisteredMetric] | None = None) -> None:
        self._entries: dict[Metric, RegisteredMetric] = {}
        for e in entries or []:
            self.add(e)

    def add(self, entry: RegisteredMetric) -> None:
        if entry.metric in self._entries:
            raise ValueError(f"metric {entry.metric} is registered twice")
        self._entries[entry.metric] = entry

    def register(self, metric: Metric | str, tier: Tier, reason: str, kind: str, *, lean: bool = False) -> RegisteredMetric:
        entry = RegisteredMetric(as_metric(metric), tier, reason, kind, lean)
        self.add(entry)
        return entry

    def require(self, metric: Metric | str) -> RegisteredMetric:
        m = as_metric(metric)
        try:
            return self._entries[m]
        except KeyError:
            raise UnregisteredMetric(
                f"metric {m} is not registered in the tier registry; register it with its tier and "
                "the reason before emitting it"
            ) from None

    def tier_of(self, metric: Metric | str) -> Tier:
        return self.require(metric).tier

    def __contains__(self, metric: object) -> bool:
        try:
            return as_metric(metric) in self._entries  # type: ignore[arg-type]
        except Exception:
            return False

    def __iter__(self) -> Iterator[RegisteredMetric]:
        return iter(sorted(self._entries.values(), key=lambda e: str(e.metric)))

    def __len__(self) -> int:
        return len(self._entries)


C, P, E = Tier.CERTIFIED, Tier.PARTIAL, Tier.EMPIRICAL

_DEFAULT: list[tuple[str, Tier, str, str, bool]] = [
    # --- Update (write) side of plain and latent KV ----------------------------------------
    ("entry:l2@write", C, "error of a written entry against the value the model computed; "
     "0 at the write by definition (the chain's exact input)", "bound", True),
    ("entry:l2@read", C, "storage contract ||Delta|| <= W: the band witness W = sum_b ||Delta_b|| bounds "
     "the residual by the triangle inequality; W is recorded per entry at the write and self-checked", "bound", True),
    ("entry:band_witness@write", C, "W = sum_b ||Delta_b|| computed from the codec's own residual at the "
     "write; W >= ||Delta|| (triangle inequality) and W <= sqrt(bands)*||Delta|| are self-checked per entry",
     "bound", False),
    ("entry:rel_residual@write", E, "||Delta||/||x|| needs the uncompressed entry: a reading of the codec, "
     "not a bound", "reading", False),
    ("entry:conservativeness@write", E, "W/||Delta|| (how loose the witness is) needs the true residual: "
     "a diagnostic reading", "reading", False),
    ("latent:l2@write", C, "error of a written MLA latent (and rope key) against the value the model "
     "computed; 0 at the write (the chain's exact input)", "bound", True),
    ("latent:l2@read", C, "latent storage contract: the band witness of the latent plus that of the rope key "
     "bounds the residual of the stored pair; recorded per entry at the write and self-checked", "bound", True),
    ("latent:band_witness@write", C, "W = sum_b ||Delta c_b|| + sum_b ||Delta k_pe,b|| from the codec's own "
     "residual; triangle inequality, self-checked per entry", "bound", False),
    ("latent:rel_residual@write", E, "||Delta c||/||c|| needs the uncompressed latent: a reading", "reading", False),
    # --- Read side ----------------------------------------------------------------------------
    ("query:l2@read", C, "scale*||q|| measured exactly on the query at the read: the gain of the score bridge",
     "coefficient", False),
    ("score:linf@read", C, "score bridge (Cauchy-Schwarz, per band): |scale<q, k - k'>| <= "
     "scale*sum_b ||q_b||*||Delta k_b|| <= scale*||q||*W", "bound", True),
    ("score:osc@read", C, "oscillation of the score error, max - min <= 2*max|.|", "bound", True),
    ("score:eform_excess@read", C, "E_p'[e^c] - 1 with c_t the banded per-key score bound; evaluated in "
     "float64 with a relative margin of 1e-9", "bound", True),
    ("attn_dist:tv@read", C, "TV between exact and served attention distributions at the same query, "
     "bounded through the softmax, centred or e-form bridge", "bound", True),
    ("attn_dist:tv_realized@read", E, "TV of served vs uncompressed attention at the same query: needs the "
     "uncompressed reference, so it checks bounds and is never one", "reading", False),
    ("selector_dist:tv@select", C, "selection lemma b_S = (m_out + m_in)/2 in selector-score mass, bounded by "
     "the keys the indexer-key witness leaves contestable (0 where the top-k set is provably unchanged)",
     "bound", False),
    ("selector_dist:tv_realized@select", E, "swapped selector mass of the exact against the served selection: needs "
     "the uncompressed indexer keys", "reading", False),
    ("selector:rho@read", E, "attention mass omitted / selector mass omitted on identical candidate sets: a paired "
     "measurement, the empirical selector-to-attention bridge", "coefficient", False),
    ("attn_dist:tv_total_realized@read", E, "TV of served (compressed keys, compressed selection) vs uncompressed "
     "attention: needs the uncompressed reference", "reading", False),
    ("state:band_witness@write", C, "W = sum_b ||Delta_b|| over each row of a compressed recurrent state; "
     "triangle inequality, self-checked per row", "bound", False),
    ("state:rel_residual@write", E, "||Delta S||/||S|| of a recurrent-state write: a reading", "reading", False),
    ("state:contraction@read", E, "per-channel decay a_t of a linear-attention state (histogram, E[log a], "
     "log E[a], half-lives, share near 1): observation only", "reading", False),
    ("state:groenwall@write", E, "running (prod max_j a) E + ||Delta_write||: bounds the layer's own state "
     "quantization error only for identical inputs, which cannot be confirmed at runtime", "reading", False),
    ("pool:l2_gain@write", E, "per-channel gate weights of V4 block pooling: ||w||_2 (the l2 pooling "
     "contract's gain) and the concentration profile; pooling acts on exact inputs and is not an error source",
     "reading", False),
    ("attn_dist:tightness@read", E, "bound / realized TV: how loose a certified bound is on this run",
     "reading", False),
    # --- Ledger (python/witprobe/ledger) -------------------------------------------------------
    ("entry:sr_radius@write", C, "pre-draw radius u = mean + det + sqrt(C/2 ln(n/delta_i)) of a stochastic-"
     "rounding write; holds for every entry of an event with probability >= 1 - delta_i (McDiarmid, "
     "Jensen mean term, exact clamp shift); the audit restores exact bytes wherever it is beaten", "bound", False),
    ("entry:sr_witness@write", C, "realized W = sum_b ||served_b - exact_b|| of the bytes in the pool, "
     "computed exactly from both byte strings at the write and again at every read", "bound", False),
    ("request:delta_spent@ledger", C, "exact telescoping spend delta_req*k/(k+1) of one account after k "
     "probabilistic events (rationals, re-derived from the journal)", "bound", False),
    ("request:eprocess_log_m@ledger", E, "log of the e-process M_t: a drift-sentinel reading whose crossing "
     "of ln(1/delta_e) is the decision, not a bound", "reading", False),
    ("entry:retention@read", E, "fraction of entry reads served compressed under W_entry <= W_thr: a "
     "reading of the policy, not a bound", "reading", False),
    ("entry:retention@write", E, "fraction of written entries authorized and stored masked: a reading",
     "reading", False),
    # --- Always-on probe (probe/band_meter.py): the probe's own shadow quantizer ----------------
    ("entry:norm@write", E, "||x|| of a sampled written entry: a magnitude reading (the gate's sanity "
     "check on uninitialized memory), never a bound", "reading", False),
    ("shadow_entry:band_witness@write", E, "W = sum_b ||Delta_b|| of the probe's shadow re-quantization, "
     "not of the served codec: self-checked (W >= ||Delta||) but it bounds nothing that is served, so a "
     "reading that must never enter a contract", "reading", False),
    ("shadow_entry:l2@write", E, "||Delta|| of the probe's shadow re-quantization (needs the entry): a "
     "reading", "reading", False),
    ("shadow_entry:rel_residual@write", E, "||Delta||/||x|| of the shadow re-quantization: a reading of how "
     "compressible the written entries are", "reading", False),
    ("shadow_entry:conservativeness@write", E, "W/||Delta|| of the shadow re-quantization, in [1, sqrt(bands)] "
     "by the triangle and Cauchy-Schwarz inequalities (violations are counted): a reading", "reading", False),
]


def _default_registry() -> TierRegistry:
    reg = TierRegistry()
    for metric, tier, reason, kind, lean in _DEFAULT:
        reg.register(metric, tier, reason, kind, lean=lean)
    return reg


DEFAULT_REGISTRY = _default_registry()
