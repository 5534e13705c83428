"""Recurrent (linear-attention) state: the Update operator as a contraction, observed.

Kimi-Linear's KDA layers keep a state ``S`` per head (``(B, H, d_k, d_v)``) updated per token as
``S_t = (I - beta_t k_t k_t^T) diag(a_t) S_{t-1} + beta_t k_t v_t^T`` with a per-key-channel decay
``a_t = exp(g_t) in (0, 1]``. The witness layer compresses every state write (the rows of the state
are the entries, witnessed by bands) and the forget-gate hook records ``a_t`` with its channel
identity. Error decays only if ``sum_t log a_t < 0``; the mean ``a`` is the wrong statistic
(``E[log a] <= log E[a]`` by Jensen), so both are reported (paper section 2.1, observation only).

With ``||k|| = 1`` and ``beta in [0, 1]`` the factor ``I - beta k k^T`` has operator norm 1, so a
state error is multiplied by at most ``max_j a_{t,j}`` per token; the running layer-level Groenwall
quantity ``E <- (prod_t max_j a_{t,j}) E + ||Delta_write||_F`` is recorded as a *reading*: it bounds
the error of the layer's own state quantization only for identical inputs, which no runtime
measurement can confirm here (the class stays empirical).
"""

from __future__ import annotations

import torch
from torch import nn
from transformers.cache_utils import LinearAttentionLayer

from witprobe.memory.codecs import Codec
from witprobe.probe.meters import band_witness
from witprobe.probe.witness_cache import WitnessLayerMixin, WriteRecorder, bands_for
from witprobe.probe.model_hooks import ModelHooks

A_EDGES = (0.5, 0.9, 0.99, 0.999)  # bins: <=.5 | (.5,.9] | (.9,.99] | (.99,.999] | >.999
NEAR_ONE = 0.999


class WitnessRecurrentLayer(WitnessLayerMixin, LinearAttentionLayer):
    """A linear-attention cache layer whose recurrent-state writes are compressed and witnessed."""

    kind = "recurrent"

    def __init__(self, layer_idx: int, state_codec: Codec | None, bands: int, recorder: WriteRecorder) -> None:
        super().__init__()
        self.layer_idx = layer_idx
        self.state_codec = state_codec
        self.bands = bands
        self.recorder = recorder
        self.groenwall: torch.Tensor | None = None  # (B,) running layer-level state-error quantity
        self.channel_gain: torch.Tensor | None = None  # (B, H*d_k) per-channel sum_s prod_{i>s} a_i

    def update_recurrent_state(self, recurrent_states: torch.Tensor, state_idx: int = 0, **kwargs) -> torch.Tensor:
        s = recurrent_states
        served = s if self.state_codec is None else self.state_codec.encode_decode(s)
        bands = bands_for(s.shape[-1], self.bands)
        w = band_witness(s, served, bands)
        self.recorder.record_write(self.layer_idx, "state", w, bands)
        b = w.residual.reshape(s.shape[0], -1).pow(2).sum(-1).sqrt()  # Frobenius norm per batch row
        self.groenwall = b if self.groenwall is None else self.groenwall + b
        self.recorder.note_state_write(self.layer_idx, self.groenwall)
        return super().update_recurrent_state(served, state_idx, **kwargs)

    def observe_decay(self, g: torch.Tensor) -> None:
        """Fold one forget-gate output ``g = log a`` of shape ``(B, S, H, d_k)`` into the recursions."""
        a = g.to(torch.float64).exp().clamp(0.0, 1.0)
        bsz, steps = a.shape[:2]
        flat = a.reshape(bsz, steps, -1)
        if self.channel_gain is None:
            self.channel_gain = torch.zeros(bsz, flat.shape[-1], dtype=torch.float64, device=a.device)
        amax = flat.amax(-1)  # (B, S)
        for t in range(steps):
            self.channel_gain = flat[:, t] * self.channel_gain + 1.0
            if self.groenwall is not None:
                self.groenwall = self.groenwall * amax[:, t]


class DecayHooks(ModelHooks):
    """Forward hooks on every KDA forget gate: record ``a_t`` per channel and drive the recursions."""

    def install(self, model: nn.Module) -> int:
        for mod in model.modules():
            gate = getattr(mod, "forget_gate", None)
            if isinstance(gate, nn.Module) and hasattr(mod, "layer_idx"):
                idx = mod.layer_idx
                self.handles.append(gate.register_forward_hook(lambda m, i, o, idx=idx: self._hook(idx, o)))
        return len(self.handles)

    def _hook(self, layer_idx: int, g: torch.Tensor) -> None:
        obs = self.observer
        if obs.cache is None or not obs.is_active:  # an unobserved run (e.g. the uncompressed reference)
            return
        layer = obs.cache.layers[layer_idx]
        if not isinstance(layer, WitnessRecurrentLayer):
            from witprobe.probe.errors import ObserverError

            raise ObserverError(f"forget gate of layer {layer_idx} feeds {type(layer).__name__}, not a witness layer")
        with torch.no_grad():
            layer.observe_decay(g)
            obs.record_decay(layer_idx, g)
