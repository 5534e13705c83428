"""The query-aligned witness: a per-key score radius that knows where the queries live.

The banded radius ``c_t = scale * sum_b ||q_b|| ||Delta k_{t,b}||`` assumes, inside every band,
that the query points along the key residual (Cauchy-Schwarz). Real queries of one KV head span a
low-dimensional subspace; this witness measures the residual *in that subspace* exactly.

Calibration (once per model, on prompts disjoint from the measured ones)
------------------------------------------------------------------------
Per layer and KV head, the post-RoPE queries of every query head of the group over the
calibration prompts are stacked into ``(n, D)``; ``U`` ``(D, r)`` is the top-``r`` right singular
vectors, re-orthonormalized by a float64 QR (:func:`calibrate_basis`). Nothing below needs ``U`` to
be orthonormal: orthonormality only makes the bound tight.

Write (per stored key, per KV head; ``r`` float16 and 2 float32 numbers)
--------------------------------------------------------------------------
With ``Delta = k - k'`` (exact minus served key) the witness stores ``a``, the float16 rounding of
``U^T Delta`` (``r`` numbers), and ``rho >= ||rr||`` and ``eps >= ||U^T rr||`` for the remainder
``rr = Delta - U a``, both rounded up to float32 (:func:`qa_witness`). The decomposition
``Delta = U a + rr`` holds for *any* ``U`` and ``a`` (``rr`` is defined by it), so storing ``a`` in
float16 costs no soundness: the rounding of ``a`` moves into ``rr`` and ``U^T rr`` (about
``2**-11 ||a||``). Stored bytes per key entry and KV head: ``2 r + 8``
(:attr:`QueryBasis.bytes_per_entry`).

Read (per query row and key)
----------------------------
With ``b = U^T q`` (computed; any vector is allowed)::

    |<q, Delta>| <= |<U^T q, a>| + ||q - U b|| ||rr|| + ||b|| ||U^T rr||

(``coq/Witprobe/QueryAligned.v``, ``qa_bridge``; ``qa_score_bridge`` multiplies by ``scale >=
0``). The last term is what makes the bound sound when ``U`` is only approximately orthonormal (it
is about ``1e-16 ||b|| ||rr||`` here); ``qa_bridge_needs_orth`` shows it cannot be dropped without
``U^T rr = 0``, and ``qa_bridge_needs_remainder`` that the middle term cannot be dropped (a query
outside ``span U``). :func:`qa_radius` returns ``c^qa_t`` of shape ``(B, H, Q, T)``; the read meter
uses ``min(c^band_t, c^qa_t)`` (the minimum of two sound radii is a sound radius) for the centred
and box-sup forms.

Float64
-------
Every quantity is float64 and carries an explicit allowance, argued here (not checked by a proof
kernel): the computed ``rr`` differs from ``Delta - U a`` componentwise by at most
``gamma_{r+2} (|U| |a| + |Delta|)``, the computed ``b`` from ``U^T q`` by ``gamma_D |U|^T |q|``,
the computed ``q - U b`` by ``gamma_{r+2} (|U| |b| + |q|)``, the dot product ``<b, a>`` by
``gamma_r ||b|| ||a||``; ``rho``, ``eps`` and ``||q - U b||`` add the norms of those error vectors
(triangle inequality), and the radius is inflated by ``1 + 2**-30`` for the few roundings of the
final norms, products and sums.

Tier
----
The read meter folds two forms per row. The box form over the radii ``min(c_band, c_qa)``
(``qa_boxsup_bound``) is a certified form: derivation claims it through
``coq/Witprobe/BoxQueryAligned.v`` (``box_qa_or_banded_claim``) when it is the tightest. The
centred form over the same radii (``qa_centred_bound``) is a reading only (:data:`TIER_REASON`):
the box form is never above it.

Calibration prompts
-------------------
``certify run --query-aligned R`` calibrates on :data:`CALIBRATION_PROMPTS` and refuses measured
prompts that repeat one of them. Soundness does not depend on the basis (the theorem holds for any
``U``); disjointness keeps the tightness honest (a basis fitted to the measured queries would
flatter it).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import Any

import numpy as np
import torch

from witprobe.calculus.float_error import allowance
from witprobe.calculus.rounding import narrow
from witprobe.models.prompts import encode

TIER = "empirical"
TIER_REASON = ("the query-aligned centred form is a reading: the box form over the same radii is never above it "
               "and is the one derivation certifies")
OUTWARD = 1.0 + 2.0 ** -30
COEF_DTYPE = torch.float16  # storage of a (any a is sound: the remainder absorbs its rounding)
COEF_BYTES = 2
NORM_BYTES = 4  # rho and eps, rounded up to float32
FLOAT16_MAX = 65504.0

CALIBRATION_PROMPTS: tuple[str, ...] = (
    "Bees build hexagonal cells of wax. In winter the colony keeps the hive warm by clustering together "
    "and shivering their flight muscles, while the queen stays at the centre of the cluster.",
    "List three differences between a river and a canal, and say which one ships prefer and why.",
    "def fib(n):\n    a, b = 0, 1\n    for _ in range(n):\n        a, b = b, a + b\n    return a\n"
    "Explain what this function returns for n = 10.",
)
"""The calibration prompts of ``certify run --query-aligned`` (disjoint from the built-in measured prompts)."""


class QueryAlignedError(ValueError):
    """A basis or witness has the wrong shape or rank (the message names what)."""


@dataclass(frozen=True)
class QueryBasis:
    """Calibrated query bases, per layer ``(Hkv, D, r)`` float64 (columns of each head's ``U``).

    Attributes
    ----------
    bases:
        Layer index -> ``U`` for every layer that has one (layers without one keep the band radius).
    rank:
        ``r``, the basis width (the same for every layer).
    calibration:
        What the bases were calibrated on (recorded with every measurement that uses them).
    """

    bases: dict[int, torch.Tensor]
    rank: int
    calibration: dict[str, Any] = field(default_factory=dict)

    def for_layer(self, layer_idx: int) -> torch.Tensor | None:
        return self.bases.get(layer_idx)

    @property
    def floats_per_entry(self) -> int:
        """Stored numbers per key entry and KV head: ``a`` (``r``), ``rho`` and ``eps``."""
        return self.rank + 2

    @property
    def bytes_per_entry(self) -> int:
        """``a`` in float16, ``rho`` and ``eps`` in float32: ``2 r + 8`` bytes per key entry and KV head."""
        return self.rank * COEF_BYTES + 2 * NORM_BYTES

    def record(self) -> dict[str, Any]:
        """``config.query_aligned`` of a run that used these bases (``certify.run_record.QueryAlignedRecord``)."""
        cal = self.calibration
        return {"rank": self.rank, "calibration_prompts": list(cal["prompt_texts"]),
                "calibration_tokens": int(cal["tokens"]), "method": str(cal["method"]),
                "basis_sha256": self.sha256(), "witness_bytes_per_entry": self.bytes_per_entry}

    def sha256(self) -> str:
        """SHA-256 of the bases (layer order, float64 little-endian bytes): which ``U`` a run used."""
        h = hashlib.sha256()
        for i in sorted(self.bases):
            h.update(f"{i}:{tuple(self.bases[i].shape)};".encode())
            h.update(self.bases[i].to(torch.float64).contiguous().numpy().astype("<f8").tobytes())
        return h.hexdigest()


def calibrate_basis(queries: Sequence[torch.Tensor], groups: int, rank: int) -> torch.Tensor:
    """``U`` ``(Hkv, D, r)``: top-``r`` right singular vectors of each KV head's stacked queries.

    ``queries`` are ``(B, H, Q, D)`` post-RoPE queries of one layer (one tensor per calibration
    call), ``H = Hkv * groups`` with query head ``h`` reading KV head ``h // groups``. The
    singular vectors are re-orthonormalized by a float64 QR.
    """
    if not queries:
        raise QueryAlignedError("query-aligned calibration saw no queries")
    d = queries[0].shape[-1]
    if not 1 <= rank <= d:
        raise QueryAlignedError(f"query-aligned rank must be in [1, {d}] (the head dimension), got {rank}")
    h = queries[0].shape[1]
    if h % groups:
        raise QueryAlignedError(f"{h} query heads are not a multiple of {groups} groups")
    hkv = h // groups
    rows = [q.detach().to(torch.float64).reshape(q.shape[0], hkv, groups, q.shape[2], d)
            .permute(1, 0, 2, 3, 4).reshape(hkv, -1, d) for q in queries]
    stack = torch.cat(rows, dim=1)  # (Hkv, n, D)
    if stack.shape[1] < rank:
        raise QueryAlignedError(f"query-aligned calibration has {stack.shape[1]} query rows, fewer than rank {rank}")
    _, _, vh = torch.linalg.svd(stack, full_matrices=False)
    u, _ = torch.linalg.qr(vh[:, :rank, :].transpose(-1, -2))  # (Hkv, D, r)
    return u.contiguous()


@dataclass(frozen=True)
class QAWitness:
    """The stored query-aligned witness of a batch of keys, leading shape ``(B, Hkv, T)``.

    ``coef`` ``(B, Hkv, T, r)`` is ``a = U^T Delta``; ``rest`` ``(B, Hkv, T)`` bounds ``||Delta - U
    a||``; ``cross`` ``(B, Hkv, T)`` bounds ``||U^T (Delta - U a)||`` (float allowances included).
    """

    coef: torch.Tensor
    rest: torch.Tensor
    cross: torch.Tensor


def _check_basis(basis: torch.Tensor, hkv: int, d: int) -> None:
    if basis.dim() != 3 or basis.shape[0] != hkv or basis.shape[1] != d:
        raise QueryAlignedError(f"query basis has shape {tuple(basis.shape)}, expected ({hkv}, {d}, r)")


def _up_float32(x: torch.Tensor) -> torch.Tensor:
    """``x`` (float64) rounded up to a float32 value (:func:`witprobe.calculus.rounding.narrow`), as float64."""
    up = narrow(x.detach().cpu().numpy(), np.float32, up=True)
    return torch.from_numpy(up).to(device=x.device, dtype=torch.float64)


def qa_witness(delta: torch.Tensor, basis: torch.Tensor) -> QAWitness:
    """Witness of residuals ``delta`` ``(B, Hkv, T, D)`` in the basis ``U`` ``(Hkv, D, r)``.

    ``a`` is ``U^T Delta`` rounded to float16 (clamped to its range); ``rr = Delta - U a`` is formed
    explicitly in float64, ``rest = ||rr|| + ||e_rr||`` and ``cross = ||U^T rr|| + ||e_x||`` with the
    componentwise error vectors of the module docstring, each rounded up to float32.
    """
    _check_basis(basis, delta.shape[1], delta.shape[-1])
    d, r = basis.shape[1], basis.shape[2]
    x = delta.to(torch.float64)
    u = basis.to(torch.float64)
    ua = u.abs()
    a = torch.einsum("bhtd,hdr->bhtr", x, u).clamp(-FLOAT16_MAX, FLOAT16_MAX).to(COEF_DTYPE).to(torch.float64)
    rr = x - torch.einsum("bhtr,hdr->bhtd", a, u)
    e_rr = allowance(r + 2) * (torch.einsum("bhtr,hdr->bhtd", a.abs(), ua) + x.abs())
    rest = _up_float32((rr.norm(dim=-1) + e_rr.norm(dim=-1)) * OUTWARD)
    utr = torch.einsum("bhtd,hdr->bhtr", rr, u)
    # error of U^T rr as computed, plus U^T applied to the error of rr (||U^T e|| <= ||U||_F ||e||)
    e_x = allowance(d) * torch.einsum("bhtd,hdr->bhtr", rr.abs(), ua).norm(dim=-1)
    fro = u.pow(2).sum(dim=(1, 2)).sqrt().reshape(1, -1, 1)
    cross = _up_float32((utr.norm(dim=-1) + e_x + fro * e_rr.norm(dim=-1)) * OUTWARD)
    return QAWitness(a, rest, cross)


def qa_radius(query: torch.Tensor, basis: torch.Tensor, w: QAWitness, groups: int, scaling: float,
              drop_remainder: bool = False) -> torch.Tensor:
    """Per-key radius ``c^qa`` ``(B, H, Q, T)`` with ``|s_t - s'_t| <= c^qa_t`` (scale included).

    ``query`` ``(B, H, Q, D)``; ``basis`` ``(Hkv, D, r)``; ``w`` the witness of the row's keys;
    ``c^qa = scale (|<b, a>| + gamma_r ||b|| ||a|| + ||e_b|| ||a|| + ||q - U b||^+ rest + ||b|| cross)``,
    inflated by ``1 + 2**-30`` (module docstring). ``drop_remainder`` omits the two remainder terms:
    an *unsound* radius, for mutation tests only.
    """
    b_, h, _, d = query.shape
    _check_basis(basis, h // groups, d)
    r = basis.shape[2]
    q = query.to(torch.float64)
    u = basis.to(torch.float64).repeat_interleave(groups, dim=0)  # (H, D, r)
    ua = u.abs()
    b = torch.einsum("bhqd,hdr->bhqr", q, u)
    e_b = allowance(d) * torch.einsum("bhqd,hdr->bhqr", q.abs(), ua).norm(dim=-1)  # (B,H,Q)
    qperp = q - torch.einsum("bhqr,hdr->bhqd", b, u)
    e_q = allowance(r + 2) * (torch.einsum("bhqr,hdr->bhqd", b.abs(), ua) + q.abs())
    qp = qperp.norm(dim=-1) + e_q.norm(dim=-1)
    bn = b.norm(dim=-1)
    a = w.coef.to(torch.float64).repeat_interleave(groups, dim=1)  # (B, H, T, r)
    an = a.norm(dim=-1)
    rest = w.rest.to(torch.float64).repeat_interleave(groups, dim=1)
    cross = w.cross.to(torch.float64).repeat_interleave(groups, dim=1)
    inner = torch.matmul(b, a.transpose(-1, -2)).abs()
    c = inner + (allowance(r) * bn + e_b).unsqueeze(-1) * an.unsqueeze(-2)
    if not drop_remainder:
        c = c + qp.unsqueeze(-1) * rest.unsqueeze(-2) + bn.unsqueeze(-1) * cross.unsqueeze(-2)
    return c * (abs(scaling) * OUTWARD)


class QueryCollector:
    """Collects the post-RoPE queries of every layer's attention calls (calibration only).

    It stands in for the observer in the ``"witprobe"`` attention function, which calls
    :meth:`observe_read` before attending; it meters nothing.
    """

    def __init__(self) -> None:
        self.queries: dict[int, list[torch.Tensor]] = {}
        self.groups: dict[int, int] = {}
        self.cache = None  # the observer's witness cache: calibration reads no compressed cache

    def observe_read(self, module: Any, query: torch.Tensor, *args: Any, **kwargs: Any) -> None:
        i = getattr(module, "layer_idx", None)
        if i is None:
            raise QueryAlignedError(f"attention module {type(module).__name__} has no layer_idx")
        self.queries.setdefault(i, []).append(query.detach().to(torch.float64).cpu())
        self.groups[i] = int(getattr(module, "num_key_value_groups", 1))

    @contextlib.contextmanager
    def active(self) -> Iterator["QueryCollector"]:
        from witprobe.probe.attention import ACTIVE

        token = ACTIVE.set(self)  # type: ignore[arg-type]
        try:
            yield self
        finally:
            ACTIVE.reset(token)


def calibrate(loaded: Any, prompts: Sequence[Any], rank: int, layers: Sequence[int] | None = None) -> QueryBasis:
    """Bases of every attention layer from one uncompressed forward pass per calibration prompt.

    ``loaded`` is a :class:`witprobe.models.loaded.LoadedModel`; ``prompts`` strings or chats
    (encoded by :func:`witprobe.models.prompts.encode`, as the measurement encodes them). Keep them
    disjoint from the prompts the bases are then measured on. ``layers`` keeps only those layers'
    bases (default: all).
    """
    from witprobe.probe.attention import ATTN_IMPLEMENTATION

    if not prompts:
        raise QueryAlignedError("query-aligned calibration needs at least one prompt")
    model = loaded.model
    model.set_attn_implementation(ATTN_IMPLEMENTATION)
    col = QueryCollector()
    tokens = 0
    with torch.no_grad(), col.active():
        for p in prompts:
            inputs = encode(loaded.tokenizer, p)
            tokens += int(inputs["input_ids"].shape[1])
            model(**inputs, use_cache=False)
    keep = None if layers is None else set(layers)
    bases = {i: calibrate_basis(qs, col.groups[i], rank) for i, qs in sorted(col.queries.items())
             if keep is None or i in keep}
    texts = [p if isinstance(p, str) else json.dumps([dict(m) for m in p]) for p in prompts]
    return QueryBasis(bases, rank, {"prompts": len(prompts), "tokens": tokens, "prompt_texts": texts,
                                    "method": "top-r right singular vectors of each KV head's stacked "
                                              "post-RoPE queries, float64 QR"})
