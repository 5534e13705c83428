"""Recorded traces from a real model: the inputs of ``simulate`` and ``replay``.

One recording of SmolLM2-135M-Instruct (greedy, batched, left-padded) yields two Parquet files:

``writes.parquet``
    The exact bytes of every key and value entry a small serving run writes: one row per
    ``(request, family, layer, head, position)`` with the e4m3 codes (64 bytes) and the entry's
    power-of-two scale exponent (:func:`witprobe.memory.stochastic_rounding.encode_e4m3`), plus
    ``qn = scale * max ||q||`` of the query heads that read this KV head at that position
    (rounded up to float16). Used by ``simulate`` (the online ledger).

``witness.parquet``
    For every key entry of every layer and head: its int8 band witness ``W`` (the re-quantization
    witness of :class:`witprobe.memory.codecs.BandIntCodec`, 4 bands) and ``qn`` at that position,
    both rounded *up* to float16 (so a check ``W <= W_thr`` made on the stored value is
    conservative). ``replay`` expands it to entry reads (:func:`witprobe.ledger.replay.expand_reads`).

``manifest.json`` records the model provenance, prompts, prompt lengths and the command.
Regenerate with ``python -m witprobe.ledger record --out tests/fixtures/ledger --force``.
"""

from __future__ import annotations

import json
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import numpy as np

from witprobe.calculus.rounding import narrow

FAMILIES = ("key", "value")
WRITES_FILE = "writes.parquet"
WITNESS_FILE = "witness.parquet"
MANIFEST_FILE = "manifest.json"
RECORD_TOOL = "witprobe.ledger record"
DEFAULT_FIXTURE = Path(__file__).resolve().parents[3] / "tests" / "fixtures" / "ledger"

PROMPTS: tuple[str, ...] = (
    "Explain why the sky is blue.",
    "Write a haiku about autumn leaves.",
    "What is the capital of Australia and why was it chosen?",
    "Give three tips for learning a new language.",
    "Describe how a bicycle gear system works.",
    "Summarize the plot of a detective story in two sentences.",
    "Why do cats purr?",
    "List the planets of the solar system in order.",
    "How does a refrigerator keep food cold?",
    "Suggest a name for a friendly robot and explain it.",
    "What causes the seasons on Earth?",
    "Explain what a prime number is to a child.",
    "Write a short thank-you note to a teacher.",
    "How do bees make honey?",
    "What is the difference between weather and climate?",
    "Describe a sunrise over the ocean.",
    "Why is exercise good for the brain?",
    "How does a rainbow form?",
    "Give a recipe idea using only potatoes and eggs.",
    "What is photosynthesis?",
    "Explain how a compass finds north.",
    "Write two lines of a poem about the moon.",
    "Why do we need sleep?",
    "How do airplanes stay in the air?",
)


class TraceError(ValueError):
    """A trace file is missing, malformed or inconsistent (the message names what)."""


def _round_up_f16(x: np.ndarray) -> np.ndarray:
    """float16 values ``>= x`` (:func:`witprobe.calculus.rounding.narrow`)."""
    return narrow(x, np.float16, up=True)


@dataclass(frozen=True)
class RecordConfig:
    """What to record. ``code_layers``/``code_requests``/``code_decode`` bound the size of writes.parquet."""

    n_requests: int = 24
    n_decode: int = 96
    code_requests: int = 8
    code_decode: int = 64
    code_layers: tuple[int, ...] = (0, 7, 14, 21, 29)
    witness_bands: int = 4


def record(out: Path, cfg: RecordConfig = RecordConfig(), model_name: str = "smollm2", force: bool = False) -> dict[str, Any]:
    """Run the model greedily on ``cfg.n_requests`` chat prompts and write the two trace files.

    ``out`` is written as one output directory (:func:`witprobe.safe_output.new_output_dir`): an
    existing one is replaced only with ``force`` and only if ``record`` wrote it, unchanged."""
    import pyarrow as pa
    import pyarrow.parquet as pq
    import torch

    from witprobe.memory.codecs import BandIntCodec
    from witprobe.memory.stochastic_rounding import encode_e4m3
    from witprobe.models.zoo import load_model
    from witprobe.probe.meters import band_witness

    if cfg.n_requests > len(PROMPTS):
        raise TraceError(f"at most {len(PROMPTS)} prompts are built in, asked for {cfg.n_requests}")
    loaded = load_model(model_name)
    model, tok = loaded.model, loaded.tokenizer
    conf = model.config
    n_layers, n_kv, n_q = conf.num_hidden_layers, conf.num_key_value_heads, conf.num_attention_heads
    head_dim = getattr(conf, "head_dim", None) or conf.hidden_size // n_q
    groups = n_q // n_kv
    scaling = head_dim**-0.5
    for l in cfg.code_layers:
        if not 0 <= l < n_layers:
            raise TraceError(f"code layer {l} outside [0, {n_layers})")
    prompts = PROMPTS[: cfg.n_requests]
    ids = [
        tok.apply_chat_template([{"role": "user", "content": p}], add_generation_prompt=True, return_dict=True)["input_ids"]
        for p in prompts
    ]
    lens = [len(x) for x in ids]
    width = max(lens)
    pad = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    input_ids = torch.tensor([[pad] * (width - n) + list(x) for x, n in zip(ids, lens)])
    attn = torch.tensor([[0] * (width - n) + [1] * n for n in lens])
    qnorms: list[list[torch.Tensor]] = [[] for _ in range(n_layers)]

    def hook(layer: int):
        def fn(_mod, _inp, out):  # (B, T, n_q * head_dim) -> per KV head: max over its query heads
            qn = out.detach().to(torch.float64).reshape(out.shape[0], out.shape[1], n_kv, groups, head_dim)
            qnorms[layer].append(qn.norm(dim=-1).amax(dim=-1) * scaling)  # (B, T, n_kv)
        return fn

    handles = [model.model.layers[i].self_attn.q_proj.register_forward_hook(hook(i)) for i in range(n_layers)]
    print(f"[witprobe] recording {len(prompts)} requests x {cfg.n_decode} tokens on {model_name}", file=sys.stderr)
    try:
        with torch.no_grad():
            gen = model.generate(
                input_ids=input_ids, attention_mask=attn, max_new_tokens=cfg.n_decode, min_new_tokens=cfg.n_decode,
                do_sample=False, return_dict_in_generate=True, pad_token_id=pad,
            )
    finally:
        for h in handles:
            h.remove()
    cache = gen.past_key_values
    total = width + cfg.n_decode - 1  # the last generated token is never fed back
    wit_cols: dict[str, list[np.ndarray]] = {k: [] for k in ("request", "layer", "head", "position", "witness", "qn")}
    code_cols: dict[str, list[Any]] = {k: [] for k in ("request", "family", "layer", "head", "position", "scale_exp", "codes", "qn")}
    codec = BandIntCodec(bits=8, bands=cfg.witness_bands)
    for layer in range(n_layers):
        q = torch.cat(qnorms[layer], dim=1)  # (B, total, n_kv)
        k_all = cache.layers[layer].keys.to(torch.float32)  # (B, n_kv, total, D)
        v_all = cache.layers[layer].values.to(torch.float32)
        if q.shape[1] != total or k_all.shape[2] != total:
            raise TraceError(f"layer {layer}: expected {total} positions, got q {q.shape[1]} k {k_all.shape[2]}")
        for r, n in enumerate(lens):
            sl = slice(width - n, total)
            k = k_all[r, :, sl, :]  # (n_kv, P, D)
            P = k.shape[1]
            w = band_witness(k, codec.encode_decode(k), cfg.witness_bands).witness.numpy()  # (n_kv, P)
            qn = q[r, sl, :].T.numpy()  # (n_kv, P)
            hh, pp = np.meshgrid(np.arange(n_kv), np.arange(P), indexing="ij")
            wit_cols["request"].append(np.full(hh.size, r, np.uint16))
            wit_cols["layer"].append(np.full(hh.size, layer, np.uint8))
            wit_cols["head"].append(hh.ravel().astype(np.uint8))
            wit_cols["position"].append(pp.ravel().astype(np.uint16))
            wit_cols["witness"].append(_round_up_f16(w.ravel()))
            wit_cols["qn"].append(_round_up_f16(qn.ravel()))
            if layer in cfg.code_layers and r < cfg.code_requests:
                keep = n + cfg.code_decode
                for fam, x in enumerate((k, v_all[r, :, sl, :])):
                    codes, exps = encode_e4m3(x[:, :keep, :])  # (n_kv, keep, D), (n_kv, keep)
                    hk, pk = np.meshgrid(np.arange(n_kv), np.arange(keep), indexing="ij")
                    code_cols["request"].append(np.full(hk.size, r, np.uint8))
                    code_cols["family"].append(np.full(hk.size, fam, np.uint8))
                    code_cols["layer"].append(np.full(hk.size, layer, np.uint8))
                    code_cols["head"].append(hk.ravel().astype(np.uint8))
                    code_cols["position"].append(pk.ravel().astype(np.uint16))
                    code_cols["scale_exp"].append(exps.numpy().ravel().astype(np.int8))
                    code_cols["codes"].extend(bytes(c) for c in codes.reshape(-1, head_dim).numpy())
                    code_cols["qn"].append(_round_up_f16(qn[:, :keep].ravel()))
    wit = pa.table({k: np.concatenate(v) for k, v in wit_cols.items()})
    codes_tbl = pa.table({
        **{k: np.concatenate(code_cols[k]) for k in ("request", "family", "layer", "head", "position", "scale_exp", "qn")},
        "codes": pa.array(code_cols["codes"], type=pa.binary(head_dim)),
    })
    manifest = {
        "model": loaded.provenance,
        "prompts": list(prompts),
        "prompt_lengths": lens,
        "tokens": [
            [int(t) for t in gen.sequences[r, width - n : total].tolist()] for r, n in enumerate(lens)
        ],
        "n_decode": cfg.n_decode,
        "code_requests": cfg.code_requests,
        "code_decode": cfg.code_decode,
        "code_layers": list(cfg.code_layers),
        "n_layers": n_layers,
        "n_kv_heads": n_kv,
        "head_dim": head_dim,
        "witness_bands": cfg.witness_bands,
        "witness_codec": codec.name,
        "families": list(FAMILIES),
        "rows": {"witness": wit.num_rows, "writes": codes_tbl.num_rows},
        "command": "python -m witprobe.ledger record --out " + str(out),
    }
    from witprobe.safe_output import new_output_dir

    with new_output_dir(out, RECORD_TOOL, force) as tmp:
        pq.write_table(wit, tmp / WITNESS_FILE, compression="zstd", compression_level=9)
        pq.write_table(codes_tbl, tmp / WRITES_FILE, compression="zstd", compression_level=9)
        (tmp / MANIFEST_FILE).write_text(json.dumps(manifest, indent=1, sort_keys=True) + "\n")
    return manifest


def load_manifest(trace_dir: Path) -> dict[str, Any]:
    """The manifest of a recorded trace directory (clear error if absent)."""
    p = Path(trace_dir) / MANIFEST_FILE
    if not p.is_file():
        raise TraceError(f"{p} not found: record a trace with 'python -m witprobe.ledger record --out {trace_dir}'")
    from witprobe.cliutil import read_json_object

    return read_json_object(p)
