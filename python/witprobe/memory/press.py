"""kvpress presses as eviction policies: ``--press 'kvpress:SnapKVPress(compression_ratio=0.5)'``.

A kvpress ``ScorerPress`` (NVIDIA kvpress; docs/KVPRESS.md) compresses a layer's cache once, at the
end of the prefill: ``score(module, hidden_states, keys, values, attentions, kwargs)`` gives one
score per cached entry, shape ``(B, Hkv, T)``, and the ``n_kept = max(1, int(T (1 - r)))`` entries
with the largest scores are kept (``r`` the press's ``compression_ratio``; kvpress's
``compute_n_kept``). :class:`PressPolicy` is that rule as an :class:`EvictionPolicy` with schedule
``once_after_prefill`` and votes ``"press"``: the scores are the press's own, computed by
:class:`witprobe.probe.press_hooks.PressHooks` in a forward hook on each attention module at the
end of the prefill, from the module, its input hidden states and the keys and values just cached
(what kvpress's own hook passes). witprobe's attention then hides the evicted entries, and the read
meter bounds the attention mass they carried: the press chooses, the meter measures what was lost,
so nothing about the press is trusted.

The kept entries are chosen by the same ``torch.topk`` call as kvpress's ``ScorerPress.compress``,
so ties break as they do in kvpress (SnapKVPress scores its whole observation window alike, and
with a window longer than ``n_kept`` the tie-breaking chooses every entry kept). NaN scores raise
:class:`CodecError` (fail closed).

Only token eviction by scores is metered here. A press that is not a ``ScorerPress``, or that
overrides ``compress`` or ``forward_hook`` (presses that merge entries, prune channels, choose per
head budgets or compress during decoding), is refused with the reason, naming the press.
"""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any, ClassVar

import torch

from witprobe.memory.codec_base import CodecError
from witprobe.memory.codecs import EvictionCodec, EvictionPolicy

SCORER = ("kvpress.presses.scorer_press", "ScorerPress")
"""The kvpress base class whose ``score`` :class:`PressPolicy` runs (module, class name)."""


def _class_named(obj: type, where: tuple[str, str]) -> type | None:
    for c in obj.__mro__:
        if (c.__module__, c.__name__) == where:
            return c
    return None


def is_press(obj: Any) -> bool:
    """Whether ``obj`` is a kvpress press class or instance (any class in kvpress.presses)."""
    cls = obj if isinstance(obj, type) else type(obj)
    return any(c.__module__.startswith("kvpress.presses.") and c.__name__ == "BasePress" for c in cls.__mro__)


def scorer_refusal(press: Any) -> str | None:
    """Why ``press`` cannot be metered as token eviction by scores, or ``None`` when it can."""
    cls = type(press)
    scorer = _class_named(cls, SCORER)
    name = cls.__name__
    if scorer is None:
        return (f"{name} is not a kvpress ScorerPress: witprobe meters token eviction by a press's scores, "
                f"and {name} compresses the cache by other means")
    for method in ("compress", "forward_hook"):
        if getattr(cls, method) is not getattr(scorer, method):
            return (f"{name} overrides ScorerPress.{method}: it changes the cache beyond keeping its top-scored "
                    "entries once after the prefill, which is all witprobe meters for a press")
    ratio = getattr(press, "compression_ratio", None)
    if isinstance(ratio, bool) or not isinstance(ratio, (int, float)) or not 0 <= ratio < 1 or math.isnan(ratio):
        return f"{name}: compression_ratio must be a number in [0, 1), got {ratio!r}"
    return None


def n_kept(t: int, ratio: float) -> int:
    """Entries a press keeps of ``t``: ``max(1, int(t (1 - ratio)))``, all of them at ratio 0
    (kvpress's ``compute_n_kept``, and its ``compress`` returning the cache unchanged at 0)."""
    return t if ratio == 0 else max(1, int(t * (1 - ratio)))


@dataclass(frozen=True)
class PressPolicy(EvictionPolicy):
    """Keep the top ``n_kept(T, press.compression_ratio)`` entries by the press's scores (module
    docstring), once after the prefill. ``press`` is a kvpress ``ScorerPress`` instance."""

    press: Any

    schedule: ClassVar[str] = "once_after_prefill"
    votes: ClassVar[str] = "press"

    def __post_init__(self) -> None:
        why = scorer_refusal(self.press)
        if why is not None:
            raise CodecError(why)

    def keep(self, scores: torch.Tensor) -> torch.Tensor:
        if torch.isnan(scores).any():
            raise CodecError(f"{type(self.press).__name__}: NaN in the press's scores")
        n = n_kept(scores.shape[-1], float(self.press.compression_ratio))
        return torch.sort(scores.topk(n, dim=-1).indices, dim=-1).values


def press_codec(press: Any, label: str) -> EvictionCodec:
    """The eviction codec of a kvpress press instance (refused with the reason when it is not a
    metered ScorerPress)."""
    return EvictionCodec(policy=PressPolicy(press), label=label)


def press_of(codec: Any) -> Any | None:
    """The kvpress press a codec runs, or ``None``."""
    policy = getattr(codec, "policy", None)
    return policy.press if isinstance(policy, PressPolicy) else None
