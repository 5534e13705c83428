"""Reference codecs: compress a tensor of cache entries and return what would be served.

A codec maps entries ``x`` of shape ``(..., D)`` to their served reconstruction ``x_hat`` of the
same shape and dtype. Its error ``Delta = x - x_hat`` is known exactly because the meters see
both sides; the witness is computed from ``Delta`` by :func:`witprobe.probe.meters.band_witness`.

Each codec is a small frozen dataclass with one verb, :meth:`Codec.encode_decode`, in the style
of kvpress presses. Grid codecs also state their a-priori per-element bound,
:meth:`GridCodec.error_bound`, so that a bound can be checked against the realized error. The
registry :data:`CODECS` maps names used on the command line to factories of per-entry codecs.

Besides per-entry codecs this module holds the reference codecs that need more context than one
entry:

- :class:`KIVICodec` acts on a whole sequence ``(..., T, D)`` (the served state after ``T``
  writes: grouped blocks quantized, a full-precision residual window);
- :class:`SinkWindowPolicy`, :class:`HeavyHitterPolicy` and :class:`SnapKVPolicy` are eviction
  policies. Eviction removes entries rather than perturbing them, so these are selection
  functions returning the kept indices, not ``x -> x_hat`` maps; the error they cause is the
  attention mass of the dropped entries. :class:`EvictionCodec` (scope ``"evict"``) puts a policy
  on the ``--codec`` path: the dense witness layer keeps every retained entry exact, hides the
  evicted ones from attention, and the read meter bounds their mass from their stored band norms
  (``coq/Witprobe/Eviction.v``).
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass
from typing import ClassVar

import torch

# the interface, re-exported: a codec's users import everything codec from this module
from witprobe.memory.codec_base import CACHE, ENTRY, EVICT, SEQUENCE, WHOLE_SEQUENCE, Codec, CodecError  # noqa: F401


@dataclass(frozen=True)
class BandIntCodec(Codec):
    """Symmetric per-band integer quantization (paper section 2.1, artifact meters).

    The last dimension ``D`` is split into ``bands`` contiguous bands of ``D / bands`` channels.
    For each entry and band ``b``: ``scale_b = max|x_b| / qmax`` with ``qmax = 2^(bits-1) - 1``,
    ``q = clamp(round(x_b / scale_b), -qmax - 1, qmax)`` (round half to even) and
    ``x_hat_b = q * scale_b``. Arithmetic is float64; the result is cast back to ``x.dtype``,
    which is the value actually stored, so the witness is computed against it.

    Parameters
    ----------
    bits:
        Code width, 2 to 8.
    bands:
        Number of bands; must divide the entry dimension.
    """

    bits: int = 8
    bands: int = 4

    def __post_init__(self) -> None:
        if not isinstance(self.bits, int) or not 2 <= self.bits <= 8:
            raise CodecError(f"band int codec: bits must be an integer in [2, 8], got {self.bits!r}")
        if not isinstance(self.bands, int) or self.bands < 1:
            raise CodecError(f"band int codec: bands must be a positive integer, got {self.bands!r}")

    @property
    def name(self) -> str:
        return f"int{self.bits}"

    @property
    def qmax(self) -> int:
        return (1 << (self.bits - 1)) - 1

    def check_dim(self, d: int) -> None:
        if d % self.bands:
            raise CodecError(f"{self.name}: {self.bands} bands do not divide the entry dimension {d}")

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        d = x.shape[-1]
        if d % self.bands:
            raise CodecError(f"{self.name}: {self.bands} bands do not divide the entry dimension {d}")
        xb = x.to(torch.float64).reshape(*x.shape[:-1], self.bands, d // self.bands)
        scale = xb.abs().amax(dim=-1, keepdim=True).clamp_min(1e-30) / self.qmax
        q = torch.clamp(torch.round(xb / scale), -self.qmax - 1, self.qmax)
        return (q * scale).reshape(x.shape).to(x.dtype)


@dataclass(frozen=True)
class GridCodec(Codec):
    """A codec that rounds onto a known grid; it also states its a-priori per-element bound."""

    def error_bound(self, x: torch.Tensor) -> torch.Tensor:
        """Per-element bound on ``|x - encode_decode(x)|``, float64, same shape as ``x``."""
        raise NotImplementedError


_FLOAT_BITS = {  # dtype -> (mantissa bits, minimum normal exponent)
    torch.float64: (52, -1022),
    torch.float32: (23, -126),
    torch.float16: (10, -14),
    torch.bfloat16: (7, -126),
}


def _slack(magnitude: torch.Tensor, dtype: torch.dtype) -> torch.Tensor:
    """Outward allowance for the float64 arithmetic of a codec and the final cast to ``dtype``.

    ``magnitude`` (float64) bounds every intermediate of the element. The allowance is
    ``2^-49 * magnitude`` (a few float64 roundings) plus, unless ``dtype`` is float64, half an ulp
    of ``dtype`` at ``magnitude`` (the cast rounds to nearest).
    """
    out = magnitude * 2.0**-49
    if dtype != torch.float64:
        p, emin = _FLOAT_BITS.get(dtype, (0, 0))
        if p == 0:
            raise CodecError(f"codec bound: unsupported dtype {dtype}")
        _, e = torch.frexp(magnitude)
        expo = torch.clamp(e.to(torch.float64) - 1, min=emin)
        out = out + torch.pow(2.0, expo - p - 1)
    return out


def _asym_quant(x: torch.Tensor, dim: int, bits: int) -> tuple[torch.Tensor, torch.Tensor]:
    """Asymmetric min/max round-to-nearest-even quantization of float64 ``x`` along ``dim``.

    Returns the reconstruction, the per-element step (``(max - min) / (2^bits - 1)``) and the
    group's largest magnitude, both broadcast to ``x``'s shape.
    """
    lo = x.amin(dim=dim, keepdim=True)
    hi = x.amax(dim=dim, keepdim=True)
    levels = (1 << bits) - 1
    step = (hi - lo) / levels
    safe = torch.where(step > 0, step, torch.ones_like(step))
    q = torch.clamp(torch.round((x - lo) / safe), 0, levels)
    x_hat = torch.where(step > 0, q * safe + lo, x)  # a constant group is stored exactly (step 0)
    magnitude = torch.maximum(lo.abs(), hi.abs())
    return x_hat, step.expand_as(x), magnitude.expand_as(x)


@dataclass(frozen=True)
class KIVICodec(GridCodec):
    """KIVI: asymmetric 2-bit-style KV quantization with a full-precision residual (Liu et al.,
    "KIVI: A Tuning-Free Asymmetric 2bit Quantization for KV Cache", ICML 2024, arXiv 2402.02750).

    :meth:`encode_decode` takes a whole sequence ``x`` of shape ``(..., T, D)`` (tokens on dim -2)
    and returns what a KIVI cache serves after the ``T`` tokens were written one by one (or in
    any chunks: the served state depends only on ``T``), following Algorithm 1 of the paper:

    - ``role="key"``: per-channel quantization. Tokens are grouped in blocks of ``group_size``
      consecutive tokens; each channel of a block has its own min/max. The first
      ``floor(T / residual) * residual`` tokens are quantized (a residual of ``residual`` tokens is
      flushed at once when it fills up); the remaining ``T mod residual`` tokens are exact.
    - ``role="value"``: per-token quantization. Channels are grouped in blocks of ``group_size``
      (``D`` must be a multiple; ``group_size=None`` uses one group of ``D``); the oldest
      ``max(T - residual, 0)`` tokens are quantized, the last ``residual`` tokens are exact.

    Rounding is round-to-nearest-even on the ``2^bits`` levels ``min + q * step``,
    ``step = (max - min) / (2^bits - 1)``, so ``|x - x_hat| <= step / 2`` per element
    (:meth:`error_bound`, which adds an outward allowance for the float64 reconstruction and the
    cast to ``x.dtype``; 0 on exact tokens). Arithmetic is float64, the result is cast to
    ``x.dtype`` (the stored value).

    Parameters
    ----------
    role:
        ``"key"`` or ``"value"``.
    bits:
        Code width, 1 to 8.
    group_size:
        Tokens per key block, or channels per value group.
    residual:
        Full-precision window ``R`` in tokens; for keys a multiple of ``group_size``.
    """

    role: str = "key"
    bits: int = 2
    group_size: int | None = 32
    residual: int = 128

    scope: ClassVar[str] = SEQUENCE

    def __post_init__(self) -> None:
        if self.role not in ("key", "value"):
            raise CodecError(f"kivi codec: role must be 'key' or 'value', got {self.role!r}")
        if not isinstance(self.bits, int) or not 1 <= self.bits <= 8:
            raise CodecError(f"kivi codec: bits must be an integer in [1, 8], got {self.bits!r}")
        if self.group_size is not None and (not isinstance(self.group_size, int) or self.group_size < 1):
            raise CodecError(f"kivi codec: group_size must be a positive integer or None, got {self.group_size!r}")
        if not isinstance(self.residual, int) or self.residual < 0:
            raise CodecError(f"kivi codec: residual must be a non-negative integer, got {self.residual!r}")
        if self.role == "key":
            if self.group_size is None:
                raise CodecError("kivi codec: keys need a token group_size")
            if self.residual % self.group_size:
                raise CodecError(
                    f"kivi codec: the key residual {self.residual} must be a multiple of group_size {self.group_size}"
                )

    @property
    def name(self) -> str:
        return f"kivi{self.bits}-{self.role}"

    def check_dim(self, d: int) -> None:
        if self.role == "value" and self.group_size is not None and d % self.group_size:
            raise CodecError(f"{self.name}: group_size {self.group_size} does not divide the entry dimension {d}")

    def quantized_tokens(self, seq_len: int) -> int:
        """How many of the first tokens are stored quantized after ``seq_len`` writes."""
        if self.role == "key":
            if self.residual == 0:
                return (seq_len // self.group_size) * self.group_size
            return (seq_len // self.residual) * self.residual
        return max(seq_len - self.residual, 0)

    def _encode(self, x: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
        if x.dim() < 2:
            raise CodecError(f"{self.name}: expected (..., T, D), got shape {tuple(x.shape)}")
        t, d = x.shape[-2], x.shape[-1]
        n = self.quantized_tokens(t)
        xd = x.to(torch.float64)
        x_hat = xd.clone()
        step = torch.zeros_like(xd)
        magnitude = torch.zeros_like(xd)
        if n == 0:
            return x_hat, step, magnitude
        head = xd[..., :n, :]
        if self.role == "key":
            g = self.group_size
            blocks = head.reshape(*head.shape[:-2], n // g, g, d)
            q, st, mag = _asym_quant(blocks, dim=-2, bits=self.bits)
        else:
            g = d if self.group_size is None else self.group_size
            if d % g:
                raise CodecError(f"{self.name}: group_size {g} does not divide the entry dimension {d}")
            blocks = head.reshape(*head.shape[:-1], d // g, g)
            q, st, mag = _asym_quant(blocks, dim=-1, bits=self.bits)
        x_hat[..., :n, :] = q.reshape(head.shape)
        step[..., :n, :] = st.reshape(head.shape)
        magnitude[..., :n, :] = mag.reshape(head.shape)
        return x_hat, step, magnitude

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        """Served reconstruction of the sequence ``x`` ``(..., T, D)``, same shape and dtype."""
        return self._encode(x)[0].to(x.dtype)

    def error_bound(self, x: torch.Tensor) -> torch.Tensor:
        """``step / 2`` per element plus the rounding allowance of the float64 reconstruction and
        the cast to ``x.dtype``; exactly 0 on the full-precision residual."""
        _, step, magnitude = self._encode(x)
        return torch.where(step > 0, step / 2 + _slack(magnitude, x.dtype), torch.zeros_like(step))


@dataclass(frozen=True)
class FP8E4M3Codec(GridCodec):
    """Emulated OCP FP8 E4M3 (``e4m3fn``) storage with a per-tensor scale.

    ``x_hat = scale * Q(x / scale)`` where ``Q`` rounds to the nearest E4M3 value, ties to even,
    and saturates at ``+-448`` (no infinities; the NaN code ``S.1111.111`` is never produced for a
    finite input). The E4M3 grid: exponent bias 7, 3 mantissa bits; normal values
    ``(1 + m/8) * 2^(e-7)`` for ``e`` in 1..15 (``e = 15, m = 7`` is NaN, so the largest is
    ``1.75 * 2^8 = 448``); subnormals ``(m/8) * 2^-6``, spacing ``2^-9``. For ``|y| = |x/scale|``
    in ``[2^E, 2^(E+1))`` with ``E >= -6`` the spacing is ``2^(E-3)``, below ``2^-6`` it is ``2^-9``;
    the error is at most half a spacing times ``scale``, except above ``448 * scale`` where it is
    ``|x| - 448 * scale`` (saturation). :meth:`error_bound` states this plus an outward allowance for
    float64 rounding and the cast to ``x.dtype`` (both vanish for a power-of-two scale, where the
    emulation is exact). NaN inputs stay NaN.

    The ``+-448`` range is the OCP ``e4m3fn`` format (torch ``float8_e4m3fn``, vLLM ``fp8_e4m3`` on
    NVIDIA); the ``fnuz`` variant used on some AMD GPUs saturates at ``+-240`` and is not this codec.

    Parameters
    ----------
    scale:
        Per-tensor scale, a positive finite float (vLLM and SGLang default to 1.0).
    """

    scale: float = 1.0

    MAX = 448.0
    MIN_NORMAL_EXP = -6
    MANTISSA_BITS = 3

    def __post_init__(self) -> None:
        if not isinstance(self.scale, (int, float)) or not math.isfinite(self.scale) or self.scale <= 0:
            raise CodecError(f"fp8 e4m3 codec: scale must be a positive finite number, got {self.scale!r}")

    @property
    def name(self) -> str:
        return "fp8-e4m3"

    def _spacing(self, y: torch.Tensor) -> torch.Tensor:
        """Grid spacing at ``y`` (float64): ``2^(max(E, -6) - 3)`` with ``E = floor(log2 |y|)``."""
        _, e = torch.frexp(y)  # y = m * 2^e, 0.5 <= |m| < 1, so floor(log2|y|) = e - 1
        expo = torch.clamp(e.to(torch.float64) - 1, min=self.MIN_NORMAL_EXP)
        expo = torch.where(y == 0, torch.full_like(expo, self.MIN_NORMAL_EXP), expo)
        return torch.pow(2.0, expo - self.MANTISSA_BITS)

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        y = x.to(torch.float64) / self.scale
        sp = self._spacing(y)
        q = torch.round(y / sp) * sp
        q = torch.clamp(q, -self.MAX, self.MAX)
        return (q * self.scale).to(x.dtype)

    def error_bound(self, x: torch.Tensor) -> torch.Tensor:
        xd = x.to(torch.float64)
        y = xd / self.scale
        sp = self._spacing(y)
        over = xd.abs() - self.MAX * self.scale
        exact = torch.where(over > 0, over, sp / 2 * self.scale)
        if math.frexp(self.scale)[0] == 0.5 and x.dtype in (torch.float32, torch.float64):
            return exact  # power-of-two scale: every step above is exact in float64 and in the cast
        return exact + _slack(xd.abs() + sp * self.scale, x.dtype)


_FLOAT_LAYOUT = {  # dtype -> (integer view, mantissa bits, minimum normal exponent)
    torch.float32: (torch.int32, 23, -126),
    torch.float16: (torch.int16, 10, -14),
    torch.bfloat16: (torch.int16, 7, -126),
}


@dataclass(frozen=True)
class MantissaMaskCodec(GridCodec):
    """Drop the ``drop_bits`` low mantissa bits of each value (set them to zero).

    This truncates toward zero onto the grid of a float with ``p - drop_bits`` mantissa bits
    (``p`` = 23 for float32, 10 for float16, 7 for bfloat16): ``drop_bits = 16`` on float32 gives
    bfloat16-precision truncation. The sign and exponent are kept, so the error is
    ``0 <= |x| - |x_hat| <= (2^drop_bits - 1) * ulp(x)`` with ``ulp(x) = 2^(max(E, Emin) - p)``,
    ``E = floor(log2|x|)`` (:meth:`error_bound`). Exact bit operations, no rounding.
    Non-finite values (inf, NaN) are returned unchanged: masking a NaN's payload could turn it
    into an infinity.

    Parameters
    ----------
    drop_bits:
        Number of low mantissa bits to clear, ``0 <= drop_bits <= p``.
    """

    drop_bits: int = 16

    def __post_init__(self) -> None:
        if not isinstance(self.drop_bits, int) or not 0 <= self.drop_bits <= 23:
            raise CodecError(f"mantissa mask: drop_bits must be an integer in [0, 23], got {self.drop_bits!r}")

    @property
    def name(self) -> str:
        return f"mant{self.drop_bits}"

    def _layout(self, x: torch.Tensor) -> tuple[torch.dtype, int, int]:
        try:
            layout = _FLOAT_LAYOUT[x.dtype]
        except KeyError:
            raise CodecError(f"{self.name}: unsupported dtype {x.dtype} (float32, float16, bfloat16)") from None
        if self.drop_bits > layout[1]:
            raise CodecError(f"{self.name}: {x.dtype} has only {layout[1]} mantissa bits")
        return layout

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        int_dtype, _, _ = self._layout(x)
        mask = ~((1 << self.drop_bits) - 1)  # ...1110000 in two's complement, any width
        bits = x.contiguous().view(int_dtype)
        masked = (bits & mask).view(x.dtype)
        return torch.where(torch.isfinite(x), masked, x)

    def error_bound(self, x: torch.Tensor) -> torch.Tensor:
        _, p, emin = self._layout(x)
        xd = x.to(torch.float64)
        _, e = torch.frexp(xd)
        expo = torch.clamp(e.to(torch.float64) - 1, min=emin)
        ulp = torch.pow(2.0, expo - p)
        bound = ((1 << self.drop_bits) - 1) * ulp
        return torch.where(torch.isfinite(xd), bound, torch.zeros_like(bound))


SCHEDULES = ("every_step", "once_after_prefill")
VOTES = ("none", "attention", "window", "press")


@dataclass(frozen=True)
class EvictionPolicy:
    """Base class of eviction policies: :meth:`keep` returns the indices of the entries kept.

    A policy states when it runs and what it scores, as class attributes (a user-defined policy,
    docs/PLUGINS.md, overrides them):

    - ``schedule``: ``"every_step"`` (before every write after the first, on the entries retained
      so far) or ``"once_after_prefill"`` (once, before the first decode write);
    - ``votes``: the ``scores`` that :meth:`keep` receives: ``"none"`` (zeros: positions only),
      ``"attention"`` (served attention mass accumulated over every read) or ``"window"`` (the
      mass from the last ``window`` prompt queries; the policy then has an integer ``window``) or
      ``"press"`` (a kvpress press's own scores of the prefill, :mod:`witprobe.memory.press`).
    """

    schedule: ClassVar[str] = "every_step"
    votes: ClassVar[str] = "none"

    def keep(self, scores: torch.Tensor) -> torch.Tensor:
        """Kept token indices, int64, sorted ascending, shape ``(..., K)``.

        Parameters
        ----------
        scores:
            ``(..., T)``: one score per cached token (e.g. accumulated attention mass per head);
            the policies below use the last dimension's length ``T``, and H2O also the values.
        """
        raise NotImplementedError


@dataclass(frozen=True)
class SinkWindowPolicy(EvictionPolicy):
    """Attention sinks plus a recent window (StreamingLLM; Xiao et al., "Efficient Streaming
    Language Models with Attention Sinks", ICLR 2024, arXiv 2309.17453).

    Keeps tokens ``[0, sinks)`` and ``[T - window, T)``; ``K = min(T, sinks + window)`` tokens, the
    same for every leading index. Deterministic: no ties to break.

    Parameters
    ----------
    sinks:
        Number of initial tokens always kept.
    window:
        Number of most recent tokens kept.
    """

    sinks: int = 4
    window: int = 1020

    def __post_init__(self) -> None:
        for field_name in ("sinks", "window"):
            v = getattr(self, field_name)
            if not isinstance(v, int) or v < 0:
                raise CodecError(f"sink/window policy: {field_name} must be a non-negative integer, got {v!r}")

    def keep(self, scores: torch.Tensor) -> torch.Tensor:
        t = scores.shape[-1]
        if t <= self.sinks + self.window:
            idx = torch.arange(t, device=scores.device)
        else:
            idx = torch.cat([torch.arange(self.sinks, device=scores.device),
                             torch.arange(t - self.window, t, device=scores.device)])
        return idx.expand(*scores.shape[:-1], idx.shape[0]).clone()


@dataclass(frozen=True)
class HeavyHitterPolicy(EvictionPolicy):
    """Heavy hitters plus a recent window (H2O; Zhang et al., "H2O: Heavy-Hitter Oracle for
    Efficient Generative Inference of Large Language Models", NeurIPS 2023, arXiv 2306.14048).

    Keeps the ``recent`` most recent tokens and, among the older ones, the ``heavy`` tokens with
    the largest score (accumulated attention mass), independently for every leading index (e.g.
    per head). **Ties** are broken toward the older token (smaller index): the order is a stable
    sort by descending score. NaN scores raise :class:`CodecError` (fail closed). If
    ``T <= heavy + recent`` every token is kept.

    Parameters
    ----------
    heavy:
        Number of heavy-hitter tokens kept outside the recent window.
    recent:
        Number of most recent tokens kept.
    """

    heavy: int = 64
    recent: int = 64

    votes: ClassVar[str] = "attention"

    def __post_init__(self) -> None:
        for field_name in ("heavy", "recent"):
            v = getattr(self, field_name)
            if not isinstance(v, int) or v < 0:
                raise CodecError(f"heavy-hitter policy: {field_name} must be a non-negative integer, got {v!r}")

    def keep(self, scores: torch.Tensor) -> torch.Tensor:
        if torch.isnan(scores).any():
            raise CodecError("heavy-hitter policy: NaN in the scores")
        t = scores.shape[-1]
        lead = scores.shape[:-1]
        if t <= self.heavy + self.recent:
            return torch.arange(t, device=scores.device).expand(*lead, t).clone()
        old = scores[..., : t - self.recent]
        order = torch.sort(old, dim=-1, descending=True, stable=True).indices[..., : self.heavy]
        recent = torch.arange(t - self.recent, t, device=scores.device).expand(*lead, self.recent)
        return torch.sort(torch.cat([order, recent], dim=-1), dim=-1).values


@dataclass(frozen=True)
class SnapKVPolicy(EvictionPolicy):
    """Observation-window voting with pooling (SnapKV; Li et al., "SnapKV: LLM Knows What You are
    Looking for Before Generation", NeurIPS 2024, arXiv 2404.14469).

    The scores are the votes of the observation window: for every cached token, the attention
    mass it receives from the last ``window`` prompt queries (summed over the window and over the
    query heads of a KV head). The votes of the prefix (all but the last ``window`` tokens) are
    smoothed by a 1-D pooling of width ``kernel`` (``"max"`` or ``"avg"``, stride 1, zero-padded
    for ``avg``, same length), the ``capacity`` prefix tokens with the largest pooled vote are
    kept, and the window itself is always kept: ``K = min(T, capacity + window)`` per leading
    index. **Ties** go to the older token (stable sort by descending pooled vote). NaN votes raise
    :class:`CodecError` (fail closed).

    Parameters
    ----------
    capacity:
        Prefix tokens kept besides the observation window.
    window:
        Length of the observation window (the last prompt tokens; always kept).
    kernel:
        Pooling width (odd, >= 1).
    pooling:
        ``"max"`` or ``"avg"``.
    """

    capacity: int = 256
    window: int = 32
    kernel: int = 7
    pooling: str = "max"

    schedule: ClassVar[str] = "once_after_prefill"
    votes: ClassVar[str] = "window"

    def __post_init__(self) -> None:
        for field_name in ("capacity", "window"):
            v = getattr(self, field_name)
            if not isinstance(v, int) or isinstance(v, bool) or v < 0:
                raise CodecError(f"snapkv policy: {field_name} must be a non-negative integer, got {v!r}")
        if not isinstance(self.kernel, int) or isinstance(self.kernel, bool) or self.kernel < 1 or self.kernel % 2 == 0:
            raise CodecError(f"snapkv policy: kernel must be an odd positive integer, got {self.kernel!r}")
        if self.pooling not in ("max", "avg"):
            raise CodecError(f"snapkv policy: pooling must be 'max' or 'avg', got {self.pooling!r}")

    def pooled(self, votes: torch.Tensor) -> torch.Tensor:
        """The votes ``(..., P)`` pooled along the last dimension (same shape, float64)."""
        v = votes.to(torch.float64)
        lead, p = v.shape[:-1], v.shape[-1]
        flat = v.reshape(-1, 1, p)
        pad = self.kernel // 2
        if self.pooling == "max":
            out = torch.nn.functional.max_pool1d(flat, self.kernel, stride=1, padding=pad)
        else:
            out = torch.nn.functional.avg_pool1d(flat, self.kernel, stride=1, padding=pad, count_include_pad=True)
        return out.reshape(*lead, p)

    def keep(self, scores: torch.Tensor) -> torch.Tensor:
        if torch.isnan(scores).any():
            raise CodecError("snapkv policy: NaN in the votes")
        t = scores.shape[-1]
        lead = scores.shape[:-1]
        if t <= self.capacity + self.window:
            return torch.arange(t, device=scores.device).expand(*lead, t).clone()
        pooled = self.pooled(scores[..., : t - self.window])
        order = torch.sort(pooled, dim=-1, descending=True, stable=True).indices[..., : self.capacity]
        win = torch.arange(t - self.window, t, device=scores.device).expand(*lead, self.window)
        return torch.sort(torch.cat([order, win], dim=-1), dim=-1).values


@dataclass(frozen=True)
class EvictionCodec(Codec):
    """An eviction policy on the ``--codec`` path (scope ``"evict"``; docs/CODECS.md, Eviction).

    Entries are stored exactly (:meth:`encode_decode` is the identity); the dense witness layer
    applies the policy to the cache before each write that follows a read, keeps a retained mask
    ``(B, Hkv, T)``, and attention hides the evicted keys. ``schedule`` says when the policy runs:

    - ``"every_step"`` (StreamingLLM, H2O): before every write after the first, on the entries
      retained so far (an evicted entry never returns);
    - ``"once_after_prefill"`` (SnapKV): once, before the first decode write, from the votes of the
      prompt's observation window; later entries are all kept.

    ``votes`` says what the policy scores: ``"none"`` (positions only), ``"attention"`` (attention
    mass accumulated over every read, H2O) or ``"window"`` (the last ``policy.window`` prompt
    queries, SnapKV).
    """

    policy: EvictionPolicy = SinkWindowPolicy()
    label: str = "evict"

    scope: ClassVar[str] = EVICT

    def __post_init__(self) -> None:
        p = self.policy
        what = type(p).__name__
        if not isinstance(p, EvictionPolicy):
            raise CodecError(f"eviction codec: the policy must be an EvictionPolicy, got {what}")
        if p.schedule not in SCHEDULES:
            raise CodecError(f"eviction policy {what}: schedule must be one of {SCHEDULES}, got {p.schedule!r}")
        if p.votes not in VOTES:
            raise CodecError(f"eviction policy {what}: votes must be one of {VOTES}, got {p.votes!r}")
        window = getattr(p, "window", None)
        if p.votes == "window" and (isinstance(window, bool) or not isinstance(window, int) or window < 1):
            raise CodecError(f"eviction policy {what}: votes 'window' needs an integer window >= 1, got {window!r}")
        if p.votes == "press" and not hasattr(p, "press"):
            raise CodecError(f"eviction policy {what}: votes 'press' are a kvpress press's scores; it needs a press "
                             "(witprobe.memory.press.PressPolicy)")

    @property
    def name(self) -> str:
        return self.label

    @property
    def schedule(self) -> str:
        return self.policy.schedule

    @property
    def votes(self) -> str:
        return self.policy.votes

    def kept(self, scores: torch.Tensor) -> torch.Tensor:
        """The policy's kept indices for ``scores (..., T)``, checked: an int64 tensor ``(..., K)``
        with ``1 <= K``, every index in ``[0, T)`` (a policy that returns anything else raises
        :class:`CodecError` naming it; nothing is evicted on its word alone)."""
        idx = self.policy.keep(scores)
        what = type(self.policy).__name__
        t = scores.shape[-1]
        if not isinstance(idx, torch.Tensor) or idx.dtype != torch.int64:
            raise CodecError(f"eviction policy {what}: keep() must return an int64 tensor, got "
                             f"{getattr(idx, 'dtype', type(idx).__name__)}")
        if idx.dim() != scores.dim() or idx.shape[:-1] != scores.shape[:-1] or idx.shape[-1] < 1:
            raise CodecError(f"eviction policy {what}: keep() returned shape {tuple(idx.shape)} for scores "
                             f"{tuple(scores.shape)}; expected (..., K) with the same leading shape and K >= 1")
        if bool(((idx < 0) | (idx >= t)).any()):
            raise CodecError(f"eviction policy {what}: keep() returned an index outside [0, {t})")
        return idx

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        """Retained entries are served exactly: the identity (eviction is a mask, not a perturbation)."""
        return x


@dataclass(frozen=True)
class KIVIKVCodec(Codec):
    """KIVI for a KV cache (the ``kivi*`` codecs of the command line): per-channel keys, per-token
    values, a full-precision residual window; :meth:`for_role` gives the :class:`KIVICodec` of
    each role with the same ``bits``, ``group_size`` (tokens per key block and channels per value
    group) and ``residual`` (tokens)."""

    bits: int = 2
    group_size: int = 32
    residual: int = 128

    scope: ClassVar[str] = SEQUENCE

    def __post_init__(self) -> None:
        self.for_role("key"), self.for_role("value")  # validates the parameters

    @property
    def name(self) -> str:
        return f"kivi{self.bits}-g{self.group_size}-r{self.residual}"

    def for_role(self, role: str) -> Codec:
        if role not in ("key", "value"):
            raise CodecError(f"{self.name}: role must be 'key' or 'value', got {role!r}")
        return KIVICodec(role=role, bits=self.bits, group_size=self.group_size, residual=self.residual)

    def check_dim(self, d: int) -> None:
        self.for_role("key").check_dim(d)
        self.for_role("value").check_dim(d)

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        raise CodecError(f"{self.name}: keys and values are coded differently; use for_role('key' or 'value')")


@dataclass(frozen=True)
class PackedCodec(GridCodec):
    """Packed int4/int6 entries with a block-Hadamard rotation (:mod:`witprobe.memory.packed`):
    rotate each block of ``block`` channels with the orthonormal Sylvester Hadamard matrix,
    quantize symmetrically per group of ``group`` rotated channels with a float32 scale, bit-pack,
    and serve the unpacked, inverse-rotated reconstruction cast to ``x.dtype``. Per entry of width
    ``D``: ``D * bits / 8`` code bytes plus ``4 D / group`` scale bytes."""

    bits: int = 4
    block: int = 64
    group: int = 32

    def __post_init__(self) -> None:
        from witprobe.memory.packed import PackedFormat, PackedFormatError

        try:
            PackedFormat(self.bits, self.block, self.group)
        except PackedFormatError as e:
            raise CodecError(str(e)) from None

    @property
    def name(self) -> str:
        return f"packed-int{self.bits}-h{self.block}-g{self.group}"

    def _fmt(self):
        from witprobe.memory.packed import PackedFormat

        return PackedFormat(self.bits, self.block, self.group)

    def check_dim(self, d: int) -> None:
        from witprobe.memory.packed import PackedFormatError

        try:
            self._fmt().check_dim(d)
        except PackedFormatError as e:
            raise CodecError(str(e)) from None

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        from witprobe.memory.packed import pack, unpack

        self.check_dim(x.shape[-1])
        fmt = self._fmt()
        return unpack(pack(x, fmt), fmt).to(x.dtype)

    def error_bound(self, x: torch.Tensor) -> torch.Tensor:
        """Per-element bound: the rotated-domain error is at most ``scale / 2`` per channel, so its
        norm per block is at most ``sqrt(block) * max scale / 2``; the inverse rotation is
        orthonormal and each output channel is bounded by that block norm (plus float slack)."""
        from witprobe.memory.packed import hadamard_rotate, quantize_groups

        self.check_dim(x.shape[-1])
        fmt = self._fmt()
        y = hadamard_rotate(x, fmt.block)
        _, scales = quantize_groups(y, fmt)
        per = scales.to(torch.float64).repeat_interleave(fmt.group, dim=-1) / 2  # (..., D) rotated-domain
        blk = per.reshape(*per.shape[:-1], -1, fmt.block).pow(2).sum(-1).sqrt()  # l2 per block
        bound = blk.repeat_interleave(fmt.block, dim=-1)
        return bound + _slack(x.to(torch.float64).abs() + bound, x.dtype)


_NAME = re.compile(r"^[a-z][a-z0-9.-]*$")


@dataclass(frozen=True)
class CodecEntry:
    """A registered codec: its command-line ``name``, a factory of the codec from the band count,
    and a one-line ``summary`` for ``certify run --help``. Calling the entry builds the codec."""

    name: str
    factory: Callable[[int], Codec]
    summary: str

    def __call__(self, bands: int) -> Codec:
        return self.factory(bands)


CODECS: dict[str, CodecEntry] = {}
"""Registered codecs by command-line name (see :func:`register_codec`)."""


def register_codec(name: str, factory: Callable[[int], Codec], summary: str) -> CodecEntry:
    """Register a codec under ``name`` (lowercase, digits, ``.`` and ``-``); a name is registered once.

    ``factory(bands)`` builds the codec (only band codecs use the band count). Example::

        register_codec("int3", lambda bands: BandIntCodec(bits=3, bands=bands), "3-bit per-band integers")
    """
    if not _NAME.match(name):
        raise CodecError(f"codec name {name!r} must be lowercase letters, digits, '.' or '-'")
    if name in CODECS:
        raise CodecError(f"codec {name!r} is already registered")
    if not callable(factory) or not summary.strip():
        raise CodecError(f"codec {name!r}: a factory and a one-line summary are required")
    entry = CodecEntry(name, factory, summary.strip())
    CODECS[name] = entry
    return entry


for _bits in (8, 6, 4, 2):
    register_codec(f"int{_bits}", (lambda b: lambda bands: BandIntCodec(bits=b, bands=bands))(_bits),
                   f"symmetric {_bits}-bit integers, one scale per entry and band")
register_codec("fp8-e4m3", lambda bands: FP8E4M3Codec(),
               "OCP FP8 E4M3 (e4m3fn, saturating at +-448), per-tensor scale 1 (vLLM/SGLang fp8_e4m3 default)")
register_codec("mant13", lambda bands: MantissaMaskCodec(drop_bits=13),
               "float32 truncated to float16 precision (13 low mantissa bits cleared)")
register_codec("mant16", lambda bands: MantissaMaskCodec(drop_bits=16),
               "float32 truncated to bfloat16 precision (16 low mantissa bits cleared)")
register_codec("packed-int4", lambda bands: PackedCodec(bits=4, block=64, group=32),
               "packed int4, block-Hadamard rotation over 64 channels, float32 scale per 32 rotated channels")
register_codec("packed-int6", lambda bands: PackedCodec(bits=6, block=64, group=32),
               "packed int6, block-Hadamard rotation over 64 channels, float32 scale per 32 rotated channels")
for _bits in (2, 4):
    register_codec(f"kivi{_bits}", (lambda b: lambda bands: KIVIKVCodec(bits=b, group_size=32, residual=128))(_bits),
                   f"KIVI {_bits}-bit: keys per channel in 32-token blocks, values per token in 32-channel "
                   "groups, last 128 tokens full precision (paper defaults)")
register_codec("kivi2-r32", lambda bands: KIVIKVCodec(bits=2, group_size=32, residual=32),
               "KIVI 2-bit with a 32-token full-precision window (quantizes more of a short prompt)")


def _quantized_cache(nbits: int, residual_length: int = 128) -> Codec:
    from witprobe.memory.quantized_cache import QuantizedCacheCodec

    return QuantizedCacheCodec(backend="quanto", nbits=nbits, residual_length=residual_length)


for _bits in (2, 4):
    register_codec(f"quanto{_bits}", (lambda b: lambda bands: _quantized_cache(b))(_bits),
                   f"transformers QuantizedCache(backend='quanto', nbits={_bits}): optimum-quanto int{_bits}, "
                   "axis 0, groups of 64, 128-token full-precision residual (needs optimum-quanto)")
register_codec("quanto2-r32", lambda bands: _quantized_cache(2, 32),
               "transformers QuantizedCache(backend='quanto', nbits=2, residual_length=32) (needs optimum-quanto)")
del _bits

# eviction policies (scope "evict"): small budgets that evict on the default prompts, and larger ones
for _name, _policy, _summary in (
    ("evict-streaming", SinkWindowPolicy(sinks=4, window=16),
     "eviction, StreamingLLM: 4 attention sinks plus the 16 most recent tokens"),
    ("evict-streaming-256", SinkWindowPolicy(sinks=4, window=252),
     "eviction, StreamingLLM: 4 attention sinks plus the 252 most recent tokens"),
    ("evict-h2o", HeavyHitterPolicy(heavy=8, recent=12),
     "eviction, H2O: 8 heavy hitters (accumulated attention) plus the 12 most recent tokens"),
    ("evict-h2o-256", HeavyHitterPolicy(heavy=128, recent=128),
     "eviction, H2O: 128 heavy hitters plus the 128 most recent tokens"),
    ("evict-snapkv", SnapKVPolicy(capacity=12, window=8, kernel=5, pooling="max"),
     "eviction, SnapKV: 12 prompt tokens voted by the last 8 (max-pooled, kernel 5) plus that window"),
    ("evict-snapkv-256", SnapKVPolicy(capacity=224, window=32, kernel=7, pooling="max"),
     "eviction, SnapKV: 224 prompt tokens voted by the last 32 (max-pooled, kernel 7) plus that window"),
):
    register_codec(_name, (lambda p, n: lambda bands: EvictionCodec(policy=p, label=n))(_policy, _name), _summary)
del _name, _policy, _summary


def make_codec(name: str, bands: int) -> Codec:
    """Build a registered codec by name, e.g. ``make_codec("int8", bands=4)``."""
    try:
        entry = CODECS[name]
    except KeyError:
        raise CodecError(f"unknown codec {name!r}; available: {', '.join(sorted(CODECS))}") from None
    return entry(bands)
