"""The codec interface (:class:`Codec`), its scopes and its error: what every codec and every cache
that serves one agree on.

The reference codecs and their registry are :mod:`witprobe.memory.codecs`; a codec backed by a
stateful cache (:mod:`witprobe.memory.quantized_cache`) implements this interface too, so both
import it from here and neither imports the other for it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import ClassVar

import torch


class CodecError(ValueError):
    """A codec was configured or applied wrongly (the message names what)."""


ENTRY, SEQUENCE, EVICT, CACHE = "entry", "sequence", "evict", "cache"
WHOLE_SEQUENCE = (SEQUENCE, CACHE)
"""Scopes whose served state is the whole sequence after each write (dense KV layers, batch 1)."""


@dataclass(frozen=True)
class Codec:
    """The codec interface (docs/CODECS.md): a frozen dataclass with one verb, :meth:`encode_decode`.

    ``encode_decode(x)`` returns what the cache serves in place of ``x`` (the quantize-dequantize
    round trip, same shape and dtype); the witness cache computes the residual
    ``Delta = x - encode_decode(x)`` and its band witness from both sides, so a codec never states
    its own error. :attr:`scope` says what ``x`` is:

    - ``"entry"``: entries ``(..., D)``, each reconstructed independently; the cache calls it on
      every write, with the new entries only;
    - ``"sequence"``: the whole sequence ``(..., T, D)`` written so far (tokens on dim -2); the
      served state may depend on the position and on the other tokens (KIVI's grouped blocks and
      full-precision window), so the cache calls it on the whole exact sequence after each write,
      re-witnesses every entry whose served form changed, and serves the result;
    - ``"cache"``: a stateful backend (:mod:`witprobe.memory.quantized_cache`, transformers'
      ``QuantizedCache`` layers): ``new_state(role)`` gives a per-layer state whose ``write(new)``
      returns the whole served sequence; the cache re-witnesses changed entries as for
      ``"sequence"``.

    :meth:`for_role` returns the codec applied to ``"key"`` or ``"value"`` entries (KIVI
    quantizes keys per channel and values per token); :meth:`check_dim` refuses an entry width
    the codec cannot take.
    """

    scope: ClassVar[str] = ENTRY

    @property
    def name(self) -> str:  # pragma: no cover - overridden
        raise NotImplementedError

    def encode_decode(self, x: torch.Tensor) -> torch.Tensor:
        """Return the served reconstruction of ``x`` (same shape and dtype)."""
        raise NotImplementedError

    def for_role(self, role: str) -> "Codec":
        """The codec for ``role`` (``"key"`` or ``"value"``); the same codec unless overridden."""
        if role not in ("key", "value"):
            raise CodecError(f"{self.name}: role must be 'key' or 'value', got {role!r}")
        return self

    def check_dim(self, d: int) -> None:
        """Raise :class:`CodecError` naming the problem if entries of width ``d`` cannot be coded."""
