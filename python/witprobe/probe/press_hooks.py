"""A kvpress press's scores of the prefill, computed on the model and handed to the witness layers.

:class:`PressHooks` does what kvpress's ``BasePress.__call__`` does, and nothing else: it calls
``press.post_init_from_model(model)``, gives each decoder layer's attention module the model's
rotary embedding as ``rotary_emb`` (presses that rotate query statistics read it), and registers a
forward hook with keyword arguments on each of those modules. At the end of a layer's prefill
forward (its witness layer holds exactly the prompt's entries and has not compressed yet) the hook
calls ``press.score(module, hidden_states, keys, values, attentions, kwargs)``:

- ``hidden_states`` ``(B, T, d)``: the module's input;
- ``keys``, ``values`` ``(B, Hkv, T, D)``: the entries the witness layer just cached (exact: an
  eviction codec stores entries unchanged);
- ``attentions``: the attention weights the module returned, or ``None``;
- ``kwargs``: the module's keyword arguments (``position_embeddings`` among them).

The scores ``(B, Hkv, T)`` become the layer's votes; :class:`witprobe.memory.press.PressPolicy`
keeps the top ``n_kept`` of them before the first decode write. A press that fails, or returns
scores of another shape or with NaN, raises :class:`CodecError` naming the press and the layer.
:func:`press_scoring` installs the hooks for a codec that runs a press (and does nothing for any
other codec), and removes them, and the rotary embeddings it lent, on exit.
"""

from __future__ import annotations

import contextlib
from typing import Any, Iterator

import torch
from torch import nn

from witprobe.memory.codec_base import CodecError
from witprobe.memory.press import press_of
from witprobe.probe.model_hooks import ModelHooks


def attention_modules(model: nn.Module) -> tuple[nn.Module | None, list[nn.Module]]:
    """The decoder's language model (``model.model`` or its ``language_model``) and the attention
    module of each of its layers, in order (kvpress's own lookup); ``[]`` when the model has none."""
    base = getattr(model, "model", None)
    lm = getattr(base, "language_model", base)
    layers = getattr(lm, "layers", None)
    if layers is None:
        return None, []
    mods = [getattr(layer, "self_attn", None) for layer in layers]
    return lm, [m for m in mods if isinstance(m, nn.Module) and hasattr(m, "layer_idx")]


class PressHooks(ModelHooks):
    """Forward hooks running ``press.score`` at the end of each layer's prefill (module docstring)."""

    def __init__(self, observer: Any, press: Any) -> None:  # observer: witprobe.probe.observer.Observer
        super().__init__(observer)
        self.press = press
        self.lent: list[nn.Module] = []  # modules given a rotary_emb they did not have

    def install(self, model: nn.Module) -> int:
        """Hook every attention module; the number hooked."""
        self.press.post_init_from_model(model)
        lm, mods = attention_modules(model)
        rotary = getattr(lm, "rotary_emb", None)
        for mod in mods:
            if rotary is not None and not hasattr(mod, "rotary_emb"):
                mod.rotary_emb = rotary
                self.lent.append(mod)
            self.handles.append(mod.register_forward_hook(self._hook, with_kwargs=True))
        return len(self.handles)

    def remove(self) -> None:
        super().remove()
        for mod in self.lent:
            del mod.rotary_emb
        self.lent.clear()

    def _hook(self, module: nn.Module, args: tuple, kwargs: dict, output: Any) -> None:
        obs = self.observer
        if obs.cache is None or not obs.is_active:  # an unobserved forward (the uncompressed reference)
            return
        layer = obs.cache.layers[module.layer_idx]
        if getattr(layer, "evict_codec", None) is None or layer.evict_codec.votes != "press":
            raise CodecError(f"layer {module.layer_idx}: the press hooks reached a {type(layer).__name__} that runs "
                             "no press")
        hidden = kwargs.get("hidden_states", args[0] if args else None)
        if layer.compressed or layer.press_scored or layer.keys is None or hidden is None \
                or layer.keys.shape[-2] != hidden.shape[1]:
            return  # not the prefill: a press scores once
        name = type(self.press).__name__
        attentions = output[1] if isinstance(output, tuple) and len(output) > 1 else None
        try:
            with torch.no_grad():
                scores = self.press.score(module, hidden, layer.keys, layer.values, attentions, kwargs)
        except Exception as e:  # the press's own code on this model: name it, fail closed
            raise CodecError(f"{name}.score failed on layer {module.layer_idx} ({type(module).__name__}): "
                             f"{type(e).__name__}: {e}") from None
        if not isinstance(scores, torch.Tensor) or tuple(scores.shape) != tuple(layer.votes.shape):
            raise CodecError(f"{name}.score returned shape {tuple(getattr(scores, 'shape', ()))} on layer "
                             f"{module.layer_idx}; expected (B, Hkv, T) = {tuple(layer.votes.shape)}")
        scores = scores.detach().to(torch.float64)
        if bool(torch.isnan(scores).any()):
            raise CodecError(f"{name}.score returned NaN on layer {module.layer_idx}")
        layer.votes = scores
        layer.press_scored = True


@contextlib.contextmanager
def press_scoring(model: nn.Module, observer: Any, codec: Any) -> Iterator[None]:
    """Inside the block, ``codec``'s press (if it runs one) scores each prefill of ``model`` served
    through ``observer``'s witness cache; nothing for any other codec."""
    press = press_of(codec)
    if press is None:
        yield
        return
    hooks = PressHooks(observer, press)
    try:
        found = hooks.install(model)
        if not found:
            raise CodecError(f"{type(press).__name__}: {type(model).__name__} has no decoder attention modules "
                             "(model.model.layers[i].self_attn) to score the prefill on")
        yield
    finally:
        hooks.remove()
