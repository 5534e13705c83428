"""Measure one run: generate with the witness cache, collect every accumulator, build run.json.

The run is served from compressed memory (the codec's reconstruction), with the witness cache
keeping the uncompressed entries beside it. A second, uncompressed greedy generation of each
prompt gives a diagnostic reading: how many generated tokens agree.
"""

from __future__ import annotations

import platform
import sys
from dataclasses import dataclass
from typing import Any

import torch

from witprobe import __version__
from witprobe.certify.progress import Progress, TokenProgress
from witprobe.kinds.registry import KINDS
from witprobe.certify.prompts import Prompt, encode, is_valid
from witprobe.memory.codecs import Codec, make_codec
from witprobe.models.zoo import MODELS, LoadedModel
from witprobe.probe.layouts import layer_kinds, text_config, witness_cache_for
from witprobe.probe.observer import ATTN_IMPLEMENTATION, Observer
from witprobe.probe.recurrent import DecayHooks
from witprobe.probe.selector import SelectorHooks
from witprobe.probe.v4 import PageSelectorHooks

# model hooks by name (MemoryKind.hook), in installation order, with what each finds in a model
HOOKS = {"pages": (PageSelectorHooks, "page indexers"), "decay": (DecayHooks, "forget gates"),
         "indexer": (SelectorHooks, "indexer modules")}
RUN_SCHEMA = "witprobe-run/2"  # /2: reads record the magnitudes of the float64 error analysis

DEFAULT_PROMPTS = (
    "What is the capital of France? Answer in one sentence.",
    "Write a short poem about the sea and the wind.",
    "Explain how a transformer model uses attention to process text, step by step.",
    "Read the following notes and summarize them in two sentences. The team met on Monday to review the "
    "quarterly results. Sales grew in the northern region but fell slightly in the south, where two large "
    "customers delayed their orders. The new product line shipped on time and early reviews are positive. "
    "Support tickets rose after the launch and most were about installation. The team agreed to publish a "
    "short setup guide, to call both delayed customers this week, and to meet again on Friday.",
)


@dataclass(frozen=True)
class MeasureConfig:
    """What to measure. ``codec`` names a registered codec; ``bands`` its band count."""

    model: str = "smollm2"
    codec: str = "int8"
    bands: int = 4
    compress_values: bool = True
    max_new_tokens: int = 24
    prompts: tuple[Prompt, ...] = DEFAULT_PROMPTS  # strings or chats (tuples of messages)
    reference: bool = True

    def validate(self) -> None:
        make_codec(self.codec, self.bands)  # raises CodecError naming the problem
        if not isinstance(self.max_new_tokens, int) or not 1 <= self.max_new_tokens <= 4096:
            raise ValueError(f"max_new_tokens must be an integer in [1, 4096], got {self.max_new_tokens!r}")
        if not self.prompts or not all(is_valid(p) for p in self.prompts):
            raise ValueError("prompts must be a nonempty list of nonempty strings or chats")


def head_dim_of(config: Any) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def check_compatible(cfg: MeasureConfig, loaded: LoadedModel) -> None:
    """Raise ``ValueError`` naming the problem if the codec cannot apply to this model's entries."""
    mc = text_config(loaded.model.config)
    kinds = set(layer_kinds(mc))
    if any(KINDS[k].bands_divide_head_dim for k in kinds):
        d = head_dim_of(mc)
        if d % cfg.bands:
            raise ValueError(f"--bands {cfg.bands} does not divide the head dimension {d} of {cfg.model}")
    limit = absolute_positions(mc)
    if limit is not None:  # learned absolute positions: no position beyond the table exists
        for i, prompt in enumerate(cfg.prompts):
            n = int(_encode(loaded.tokenizer, prompt)["input_ids"].shape[1])
            if n + cfg.max_new_tokens > limit:
                raise ValueError(f"prompt {i + 1} ({n} tokens) plus --max-new-tokens {cfg.max_new_tokens} exceeds the "
                                 f"{limit} absolute positions of {cfg.model}")


def absolute_positions(config: Any) -> int | None:
    """The size of a learned absolute-position table (GPT-2's ``n_positions``), else ``None``."""
    if getattr(config, "model_type", "") == "gpt2":
        return int(config.n_positions)
    return None


def environment() -> dict[str, str]:
    import transformers

    return {
        "witprobe": __version__,
        "python": sys.version.split()[0],
        "torch": torch.__version__,
        "transformers": transformers.__version__,
        "platform": platform.platform(),
    }


def _encode(tokenizer: Any, prompt: Prompt) -> dict[str, torch.Tensor]:
    return encode(tokenizer, prompt)


def measure(loaded: LoadedModel, cfg: MeasureConfig, progress: Progress | None = None) -> dict[str, Any]:
    """Run every prompt through the witness cache; return the run record (run.json content)."""
    cfg.validate()
    check_compatible(cfg, loaded)
    progress = progress or Progress(quiet=True)
    model, tok = loaded.model, loaded.tokenizer
    mc = text_config(model.config)
    num_layers = mc.num_hidden_layers
    kinds = layer_kinds(mc)
    codec = make_codec(cfg.codec, cfg.bands)
    model.set_attn_implementation(ATTN_IMPLEMENTATION)
    observer = Observer(num_layers)
    installed = []
    try:
        for hook, (cls, what) in HOOKS.items():  # every layer whose kind needs a model hook gets exactly one
            installer = cls(observer)
            installed.append(installer)
            found = installer.install(model)
            want = sum(KINDS[k].hook == hook for k in kinds)
            if found != want:
                raise ValueError(f"{found} {what} found for {want} layers that need one")
        requests = _generate_all(loaded, cfg, codec, observer, progress)
    finally:
        for installer in installed:
            installer.remove()
    snap = observer.snapshot()
    layers = [
        {
            "layer": i,
            "memory_class": kinds[i],
            "write": snap["write"][i],
            "read": snap["read"][i],
            "host_write_calls": snap["host_write_calls"][i],
            "host_read_calls": snap["host_read_calls"][i],
            **({"channels": snap["channels"][i]} if i in snap["channels"] else {}),
        }
        for i in range(num_layers)
    ]
    spec = MODELS.get(cfg.model)
    return {
        "schema": RUN_SCHEMA,
        "environment": environment(),
        "model": {
            "name": cfg.model,
            "family": spec.family if spec else (loaded.family or "unregistered"),
            "memory_class": spec.memory_class if spec else (loaded.memory_class or "+".join(sorted(set(kinds)))),
            "num_layers": num_layers,
            "num_heads": mc.num_attention_heads,
            "num_kv_heads": getattr(mc, "num_key_value_heads", mc.num_attention_heads),
            "head_dim": head_dim_of(mc),
            "provenance": loaded.provenance,
        },
        "config": {
            "codec": cfg.codec,
            "bands": cfg.bands,
            "compress_values": cfg.compress_values,
            "max_new_tokens": cfg.max_new_tokens,
            "prompts": [p if isinstance(p, str) else [dict(m) for m in p] for p in cfg.prompts],
        },
        "requests": requests,
        "layers": layers,
    }


def _generate_all(loaded: LoadedModel, cfg: MeasureConfig, codec: Codec, observer: Observer,
                  progress: Progress) -> list[dict[str, Any]]:
    """Serve every prompt from a fresh witness cache; optionally generate the uncompressed reference."""
    model, tok = loaded.model, loaded.tokenizer
    mc = text_config(model.config)
    pad = tok.eos_token_id if tok.pad_token_id is None else tok.pad_token_id
    requests: list[dict[str, Any]] = []
    for i, prompt in enumerate(cfg.prompts):
        label = f"request {i + 1}/{len(cfg.prompts)}"
        inputs = _encode(tok, prompt)
        n_prompt = int(inputs["input_ids"].shape[1])
        cache = observer.attach(witness_cache_for(mc, codec, cfg.bands, cfg.compress_values, observer, model=model))
        with torch.no_grad(), observer.active():
            out = model.generate(
                **inputs, cache=cache, max_new_tokens=cfg.max_new_tokens, do_sample=False,
                pad_token_id=pad, streamer=TokenProgress(progress, label, cfg.max_new_tokens),
            )
        served = out[0, n_prompt:].tolist()
        record: dict[str, Any] = {"prompt_index": i, "prompt_tokens": n_prompt, "served_tokens": served}
        if cfg.reference:
            with torch.no_grad():
                ref = model.generate(**inputs, max_new_tokens=cfg.max_new_tokens, do_sample=False, pad_token_id=pad)
            reference = ref[0, n_prompt:].tolist()
            agree = 0
            for a, b in zip(served, reference):
                if a != b:
                    break
                agree += 1
            record["reference_tokens"] = reference
            record["agreeing_prefix"] = agree
        progress.info(f"{label}: {n_prompt} prompt tokens, {len(served)} generated")
        requests.append(record)
    return requests
