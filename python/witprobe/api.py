"""The Python API: observe a transformers model's compressed attention memory for a block of code.

::

    import witprobe

    with witprobe.observe(model, codec="int8", bands=4) as run:
        model.generate(**inputs, cache=run.cache, max_new_tokens=32)
    for layer in run.layers():
        print(layer.layer, layer.tv_realized_max, layer.bound_max)

transformers 5.24 takes the cache as ``cache=``, transformers 5.2 (the ``kvpress`` extra) as
``past_key_values=``; ``model.generate(**inputs, **run.cache_kwargs, ...)`` works with both.
``codec`` is any ``certify run --codec`` spec, a kvpress press among them
(``"kvpress:SnapKVPress(compression_ratio=0.5)"``, docs/KVPRESS.md).

Inside the block the model uses the ``witprobe`` attention function and ``run.cache`` is a witness
cache (a transformers ``Cache``): every K/V write is compressed by the codec and witnessed, every
read is metered (the realized TV between exact and served attention at the same query, and the
three TV bounds). On exit the model's previous attention implementation is restored, also when
the block raises.

A left-padded batch is metered as each request alone (as ``certify run --batch N`` does) when
its ``attention_mask`` is given::

    enc = tokenizer(prompts, return_tensors="pt", padding=True)   # padding_side="left"
    with witprobe.observe(model) as run, run.batch(enc["attention_mask"]) as streamer:
        model.generate(**enc, cache=run.cache, streamer=streamer, max_new_tokens=32)

Padding positions are left out of every meter (their cache entries and their query rows), and so
are the positions ``generate`` fills after a request's end. Without it, a padding row (a query
that sees no key) raises :class:`~witprobe.probe.errors.ObserverError` instead of turning the
readings to NaN; a NaN reading is never returned (:meth:`ObservedRun.layers` raises).

The model must be one that ``certify run --model`` accepts (:mod:`witprobe.models.capability`, the
same check): anything else raises :class:`~witprobe.models.loaded.ModelError` naming why.

Fail closed: a read through a cache that is not the witness cache raises
:class:`witprobe.probe.errors.ObserverError` at once; and on exit, a layer that was written
but never read through the meter (e.g. the model was switched back to ``sdpa`` inside the block)
raises :class:`UnobservedReads`, because its bounds would speak about nothing.
"""

from __future__ import annotations

import contextlib
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from witprobe.memory.codec_plugins import make_codec_spec
from witprobe.kinds.layouts import text_config, witness_cache_for
from witprobe.models.capability import check_config
from witprobe.models.transformers_release import cache_kwarg
from witprobe.probe.attention import ATTN_IMPLEMENTATION
from witprobe.probe.errors import ObserverError
from witprobe.probe.press_hooks import press_scoring
from witprobe.probe.observer import Observer
from witprobe.probe.padding import PaddingStreamer, eos_ids
from witprobe.probe.witness_cache import WitnessCache


class UnobservedReads(ObserverError):
    """Entries were written to the witness cache but attention never read them through the meter."""


@dataclass(frozen=True)
class LayerReading:
    """One decoder layer's readings over the block (float64 maxima over every metered query row).

    ``bound_max`` is the largest of the tightest per-row bounds (``min`` of the plain, e-form and
    centred forms); ``rows_beaten`` counts rows whose realized TV exceeds any form (0 unless a bug).
    These are empirical readings: only ``certify run`` produces kernel-checked claims.
    """

    layer: int
    rows: int
    reads: int
    writes: int
    tv_realized_max: float | None
    bound_max: float | None
    rows_beaten: int


class ObservedRun:
    """What :func:`observe` yields: the witness cache to pass to the model, and the readings."""

    def __init__(self, model: Any, codec: str, bands: int, compress_values: bool) -> None:
        check_config(text_config(model.config), f"observe({type(model).__name__})", zoo=True)
        self.model = model
        self.codec = make_codec_spec(codec, bands)
        self.bands = bands
        self.compress_values = compress_values
        self.config = text_config(model.config)
        self.observer = Observer(self.config.num_hidden_layers)
        self._cache: WitnessCache | None = None

    @property
    def cache(self) -> WitnessCache:
        """The current request's witness cache (pass it as ``cache=``); see :meth:`new_cache`."""
        if self._cache is None:
            self.new_cache()
        return self._cache

    @property
    def cache_kwargs(self) -> dict[str, WitnessCache]:
        """``{"cache": run.cache}`` (transformers 5.24) or ``{"past_key_values": run.cache}`` (5.2):
        the keyword this model's forward takes its cache by."""
        return {cache_kwarg(self.model): self.cache}

    def new_cache(self) -> WitnessCache:
        """A fresh witness cache for the next request (readings keep accumulating)."""
        self._cache = self.observer.attach(witness_cache_for(
            self.config, self.codec, self.bands, self.compress_values, self.observer, model=self.model))
        return self._cache

    @contextlib.contextmanager
    def batch(self, attention_mask: Any) -> Iterator[PaddingStreamer]:
        """Meter a left-padded batch as each request alone: ``attention_mask`` ``(B, prompt_len)``,
        nonzero on real tokens. Yields the streamer to pass to ``model.generate(streamer=...)``
        (a single forward needs none). The padding is dropped when the block ends."""
        import torch

        mask = torch.as_tensor(attention_mask)
        if mask.dim() != 2 or mask.shape[0] < 1:
            raise ValueError(f"attention_mask must be (batch, positions), got shape {tuple(mask.shape)}")
        self.observer.set_padding(mask)
        try:
            yield PaddingStreamer(self.observer, eos_ids(self.model))
        finally:
            self.observer.set_padding(None)

    def snapshot(self) -> dict[str, list]:
        """Every accumulator, read back to the host (the ``run.json`` layer records' source)."""
        return self.observer.snapshot()

    def layers(self) -> list[LayerReading]:
        snap = self.snapshot()
        out = []
        for i, rd in enumerate(snap["read"]):
            def mx(key: str) -> float | None:
                st = rd.get(key)
                return None if not isinstance(st, dict) else st.get("max")

            beaten = sum(int(rd.get(f"rows_{f}_beaten", 0) or 0) for f in ("plain", "centred", "eform"))
            for what, v in (("tv_realized", mx("tv_realized")), ("best_bound", mx("best_bound"))):
                if v is not None and v != v:
                    raise ObserverError(f"layer {i}: the {what} reading is NaN (a NaN is an error, never a reading)")
            out.append(LayerReading(i, int(rd.get("rows", 0) or 0), snap["host_read_calls"][i],
                                    snap["host_write_calls"][i], mx("tv_realized"), mx("best_bound"), beaten))
        return out

    def check_observed(self) -> None:
        """Raise :class:`UnobservedReads` naming every layer written but never read through the meter."""
        snap = self.snapshot()
        silent = [i for i, (w, r) in enumerate(zip(snap["host_write_calls"], snap["host_read_calls"])) if w and not r]
        if silent:
            raise UnobservedReads(
                f"layers {silent} were written to the witness cache but no read was metered: the model did not "
                f"attend through the '{ATTN_IMPLEMENTATION}' attention function (was its attention implementation "
                "changed inside the block?)")


@contextlib.contextmanager
def observe(model: Any, codec: str = "int8", bands: int = 4, compress_values: bool = True) -> Iterator[ObservedRun]:
    """Observe ``model`` inside the block (module docstring); restore its attention implementation on exit."""
    previous = getattr(model.config, "_attn_implementation", None) or "eager"
    run = ObservedRun(model, codec, bands, compress_values)
    model.set_attn_implementation(ATTN_IMPLEMENTATION)
    try:
        with run.observer.active() if run.cache is not None else contextlib.nullcontext(), \
                press_scoring(model, run.observer, run.codec):
            yield run
    finally:
        model.set_attn_implementation(previous)
    run.check_observed()
