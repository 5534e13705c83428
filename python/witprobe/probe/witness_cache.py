"""The witness cache: a transformers ``Cache`` that sees every write to compressed memory.

Each layer kind is one class (the transformers ``cache_utils`` pattern). For plain dense KV,
:class:`WitnessKVLayer` receives exactly the key/value states the model writes, serves the codec's
reconstruction, and records per stored entry its witness (band residual norms) as small metadata.
It also keeps the uncompressed entries side by side so that every bound can be compared with the
realized error on the same input.

Pass a :class:`WitnessCache` as ``past_key_values=`` to ``model(...)`` or ``model.generate(...)``;
no model code is patched.
"""

from __future__ import annotations

from typing import Protocol

import torch
from transformers.cache_utils import Cache, DynamicCache, DynamicLayer

from witprobe.memory.codecs import Codec
from witprobe.probe.meters import WitnessBatch, band_witness


class WriteRecorder(Protocol):
    """Receives the witness of every write (implemented by :class:`witprobe.probe.observer.Observer`)."""

    def record_write(self, layer_idx: int, tensor: str, w: WitnessBatch, bands: int) -> None: ...


class WitnessKVLayer(DynamicLayer):
    """Dense KV layer: compress each write, serve the reconstruction, keep the witness.

    Attributes (all ``(batch, kv_heads, seq, ...)``)
    -------------------------------------------------
    keys, values:
        Served (compressed) entries, what attention reads.
    exact_keys, exact_values:
        Uncompressed entries, for the side-by-side realized error only.
    key_band_norms, value_band_norms:
        ``||Delta_b||`` per entry and band, recorded at the write.
    """

    def __init__(
        self,
        layer_idx: int,
        key_codec: Codec,
        value_codec: Codec | None,
        bands: int,
        recorder: WriteRecorder,
    ) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.key_codec = key_codec
        self.value_codec = value_codec
        self.bands = bands
        self.recorder = recorder
        self.exact_keys: torch.Tensor | None = None
        self.exact_values: torch.Tensor | None = None
        self.key_band_norms: torch.Tensor | None = None
        self.value_band_norms: torch.Tensor | None = None

    def update(self, key_states: torch.Tensor, value_states: torch.Tensor, *args, **kwargs):
        if not self.is_initialized:
            self.lazy_initialization(key_states, value_states)
            b, h, _, d = key_states.shape
            dv = value_states.shape[-1]
            self.exact_keys = key_states.new_zeros((b, h, 0, d))
            self.exact_values = value_states.new_zeros((b, h, 0, dv))
            self.key_band_norms = torch.zeros((b, h, 0, self.bands), dtype=torch.float64, device=key_states.device)
            self.value_band_norms = torch.zeros((b, h, 0, self.bands), dtype=torch.float64, device=key_states.device)
        k_hat = self.key_codec.encode_decode(key_states)
        v_hat = value_states if self.value_codec is None else self.value_codec.encode_decode(value_states)
        wk = band_witness(key_states, k_hat, self.bands)
        wv = band_witness(value_states, v_hat, self.bands)
        self.recorder.record_write(self.layer_idx, "key", wk, self.bands)
        self.recorder.record_write(self.layer_idx, "value", wv, self.bands)
        self.keys = torch.cat([self.keys, k_hat], dim=-2)
        self.values = torch.cat([self.values, v_hat], dim=-2)
        self.exact_keys = torch.cat([self.exact_keys, key_states], dim=-2)
        self.exact_values = torch.cat([self.exact_values, value_states], dim=-2)
        self.key_band_norms = torch.cat([self.key_band_norms, wk.band_norms], dim=-2)
        self.value_band_norms = torch.cat([self.value_band_norms, wv.band_norms], dim=-2)
        return self.keys, self.values

    def crop(self, tokens_to_remove: int) -> None:
        raise NotImplementedError("witness layers do not support cropping: the witness would lose its entries")


class WitnessCache(DynamicCache):
    """A ``DynamicCache`` whose layers are witness layers, one per decoder layer."""

    def __init__(self, layers: list[DynamicLayer]) -> None:
        Cache.__init__(self, layers=layers)

    @classmethod
    def for_dense_kv(
        cls,
        num_layers: int,
        key_codec: Codec,
        value_codec: Codec | None,
        bands: int,
        recorder: WriteRecorder,
    ) -> "WitnessCache":
        return cls([WitnessKVLayer(i, key_codec, value_codec, bands, recorder) for i in range(num_layers)])
