"""Measure one run: generate with the witness cache, collect every accumulator, build run.json.

The run is served from compressed memory (the codec's reconstruction), with the witness cache
keeping the uncompressed entries beside it. A second, uncompressed greedy generation of each
prompt gives a diagnostic reading: how many generated tokens agree.
"""

from __future__ import annotations

import math
import platform
import sys
import weakref
from dataclasses import dataclass
from typing import Any

import torch

from witprobe.version import __version__
from witprobe.calculus import rounding
from witprobe.calculus.opnorm import OpNormBound, spectral_norm_upper
from witprobe.certify.progress import Progress, TokenProgress
from witprobe.kinds.registry import KINDS
from witprobe.models.prompts import DEFAULT_PROMPTS, Prompt, encode, is_valid
from witprobe.memory.codec_plugins import make_codec_spec, provenance_of
from witprobe.memory.codecs import EVICT, WHOLE_SEQUENCE, Codec, CodecError
from witprobe.models.loaded import LoadedModel
from witprobe.models.zoo import MODELS
from witprobe.probe.box_sup import DEFAULT_SPEC as BOX_SUP_DEFAULT
from witprobe.kinds.layouts import layer_kinds, text_config, witness_cache_for
from witprobe.models.transformers_release import cache_kwarg, import_for, optional_import
from witprobe.probe.attention import ATTN_IMPLEMENTATION
from witprobe.probe.observer import Observer
from witprobe.memory.press import press_of
from witprobe.probe.press_hooks import attention_modules, press_scoring
from witprobe.probe.padding import PaddingStreamer, eos_ids
from witprobe.certify.run_record import RUN_SCHEMA, RunRecord, parse_run
from witprobe.certify.tasks import check_spec as check_task, run_tasks
from witprobe.probe.query_aligned import CALIBRATION_PROMPTS, QueryAlignedError, QueryBasis, calibrate

# model hooks by name (MemoryKind.hook), in installation order: the installer (module, class), imported
# when used (the page and decay hooks import transformers classes that older releases lack), and what
# each finds in a model
HOOKS = {"pages": ("witprobe.probe.v4", "PageSelectorHooks", "page indexers"),
         "decay": ("witprobe.probe.recurrent", "DecayHooks", "forget gates"),
         "indexer": ("witprobe.probe.selector", "SelectorHooks", "indexer modules")}


@dataclass(frozen=True)
class MeasureConfig:
    """What to measure. ``codec`` is a codec spec (a registered name, an installed plugin's entry point
    or ``package.module:Attr(k=v, ...)``; :mod:`witprobe.memory.codec_plugins`); ``bands`` its band count."""

    model: str = "smollm2"
    codec: str = "int8"
    bands: int = 4
    compress_values: bool = True
    max_new_tokens: int = 24
    prompts: tuple[Prompt, ...] = DEFAULT_PROMPTS  # strings or chats (tuples of messages)
    reference: bool = True
    e2e_tv_tolerance: float = 0.1
    batch: int = 1  # requests served together in one forward, left-padded (dense KV, entry codecs)
    box_sup: bool = True  # meter the empirical box-sup TV bound (most of the metering time of long contexts)
    query_aligned: int = 0  # rank of the query-aligned witness (0: off); calibrated on CALIBRATION_PROMPTS
    tasks: tuple[str, ...] = ()  # task readings beside the bounds: niah, ppl, FILE.jsonl (witprobe.certify.tasks)

    def validate(self) -> Codec:
        """Check the configuration; return the codec it names, built here once (pass it on).

        Raises ``ValueError`` naming the problem (:class:`~witprobe.memory.codecs.CodecError` for
        the codec).
        """
        codec = make_codec_spec(self.codec, self.bands)
        tol = self.e2e_tv_tolerance
        if isinstance(tol, bool) or not isinstance(tol, (int, float)) or not 0 <= tol <= 1:
            raise ValueError(f"the end-to-end TV tolerance must be a number in [0, 1], got {tol!r}")
        if not isinstance(self.max_new_tokens, int) or not 1 <= self.max_new_tokens <= 4096:
            raise ValueError(f"max_new_tokens must be an integer in [1, 4096], got {self.max_new_tokens!r}")
        if not isinstance(self.box_sup, bool):
            raise ValueError(f"box_sup must be True or False, got {self.box_sup!r}")
        if isinstance(self.batch, bool) or not isinstance(self.batch, int) or not 1 <= self.batch <= 64:
            raise ValueError(f"batch must be an integer in [1, 64], got {self.batch!r}")
        if not self.prompts or not all(is_valid(p) for p in self.prompts):
            raise ValueError("prompts must be a nonempty list of nonempty strings or chats")
        qa = self.query_aligned
        if isinstance(qa, bool) or not isinstance(qa, int) or qa < 0:
            raise ValueError(f"the query-aligned rank must be an integer >= 0 (0: off), got {qa!r}")
        if qa and not self.box_sup:
            raise ValueError("the query-aligned witness needs the box meter: --query-aligned with --box-sup off")
        if qa and codec.scope == EVICT:
            raise ValueError(f"the query-aligned witness bounds stored-key error; codec {self.codec!r} evicts instead")
        if qa and set(CALIBRATION_PROMPTS) & {p for p in self.prompts if isinstance(p, str)}:
            raise ValueError("a measured prompt repeats a query-aligned calibration prompt; measure other prompts")
        if isinstance(self.tasks, str) or len(set(self.tasks)) != len(self.tasks):
            raise ValueError(f"tasks must be a tuple of distinct task specs, got {self.tasks!r}")
        for spec in self.tasks:
            check_task(spec)
        return codec


# id(weight) -> (weak reference to the weight, its version, bound); tensors cannot be dict keys by
# value (their == is elementwise), so the entry is valid only while the reference still is the weight
_OPNORM_CACHE: dict[int, tuple[Any, int, OpNormBound]] = {}


def output_projections(model: Any, kinds: list[str]) -> dict[int, tuple[torch.Tensor, OpNormBound]]:
    """The output projection ``o_proj.weight`` of every dense-KV layer and a sound upper bound on its
    spectral norm (cached per weight tensor and version: the bound costs a few matrix products)."""
    layers = getattr(getattr(model, "model", None), "layers", None)
    out: dict[int, tuple[torch.Tensor, OpNormBound]] = {}
    if layers is None:
        return out
    for i, kind in enumerate(kinds):
        proj = getattr(getattr(layers[i], "self_attn", None), "o_proj", None)
        if kind != "dense_kv" or proj is None or getattr(proj, "bias", None) is not None:
            continue  # a bias cancels in W(y) - W(y_hat); kept out only to stay with the plain case
        w = proj.weight.detach()
        hit = _OPNORM_CACHE.get(id(proj.weight))
        if hit is None or hit[0]() is not proj.weight or hit[1] != proj.weight._version:
            hit = (weakref.ref(proj.weight), proj.weight._version, spectral_norm_upper(w))
            _OPNORM_CACHE[id(proj.weight)] = hit
        out[i] = (w, hit[2])
    return out


def projection_record(bound: OpNormBound) -> dict[str, Any]:
    """The run.json record of an output projection's norm bound (a measured constant)."""
    return {
        "opnorm_upper": rounding.fraction_text(bound.upper),
        "opnorm_upper_decimal": rounding.decimal_up(bound.upper, 6),
        "frobenius_upper_decimal": rounding.decimal_up(bound.frobenius_upper, 6),
        "method": f"gram repeated squaring x{bound.squarings}, float64 products with gamma_m error terms",
        "shape": list(bound.shape),
    }


def head_dim_of(config: Any) -> int:
    return getattr(config, "head_dim", None) or config.hidden_size // config.num_attention_heads


def check_compatible(cfg: MeasureConfig, loaded: LoadedModel, codec: Codec) -> None:
    """Raise ``ValueError`` naming the problem if ``codec`` (what ``cfg.validate()`` returned) cannot
    apply to this model's entries, or ``cfg`` to this model."""
    mc = text_config(loaded.model.config)
    kinds = set(layer_kinds(mc))
    if cfg.batch > 1:  # left padding is metered by the dense-KV read and per-entry write meters only
        if kinds != {"dense_kv"}:
            raise ValueError(f"--batch {cfg.batch} needs dense KV layers only; {cfg.model} has "
                             f"{', '.join(sorted(kinds - {'dense_kv'}))} layers")
        if any(getattr(codec.for_role(r), "scope", None) in (*WHOLE_SEQUENCE, EVICT) for r in ("key", "value")):
            raise ValueError(f"--batch {cfg.batch} needs a per-entry codec; {cfg.codec} is sequence-level or "
                             "an eviction policy (left padding would change what it serves)")
    if codec.scope in (*WHOLE_SEQUENCE, EVICT) and kinds != {"dense_kv"}:
        what = "an eviction policy" if codec.scope == EVICT else "sequence-level"
        raise ValueError(f"codec {cfg.codec} is {what} and applies to dense KV layers only; "
                         f"{cfg.model} has {', '.join(sorted(kinds - {'dense_kv'}))} layers")
    press = press_of(codec)
    if press is not None:
        n = len(attention_modules(loaded.model)[1])
        if n != mc.num_hidden_layers:
            raise ValueError(f"{type(press).__name__} scores the prefill on each layer's attention module "
                             f"(model.model.layers[i].self_attn, as kvpress does); {cfg.model} has {n} of "
                             f"{mc.num_hidden_layers}")
    if cfg.tasks and kinds != {"dense_kv"}:
        raise ValueError(f"--task needs dense KV layers only; {cfg.model} has "
                         f"{', '.join(sorted(kinds - {'dense_kv'}))} layers")
    if cfg.query_aligned:
        if "dense_kv" not in kinds:
            raise ValueError(f"--query-aligned applies to dense KV layers; {cfg.model} has "
                             f"{', '.join(sorted(kinds))} layers")
        if cfg.query_aligned > head_dim_of(mc):
            raise ValueError(f"--query-aligned {cfg.query_aligned} exceeds the head dimension {head_dim_of(mc)} "
                             f"of {cfg.model}")
    if any(KINDS[k].bands_divide_head_dim for k in kinds):
        d = head_dim_of(mc)
        if d % cfg.bands:
            raise ValueError(f"--bands {cfg.bands} does not divide the head dimension {d} of {cfg.model}")
    if "dense_kv" in kinds:
        d = head_dim_of(mc)
        for role in ("key", "value"):
            try:
                codec.for_role(role).check_dim(d)
            except CodecError as e:
                raise ValueError(f"codec {cfg.codec} cannot code the {role}s of {cfg.model}: {e}") from None
    limit = absolute_positions(mc)
    if limit is not None:  # learned absolute positions: no position beyond the table exists
        for i, prompt in enumerate(cfg.prompts):
            n = int(encode(loaded.tokenizer, prompt)["input_ids"].shape[1])
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


def measure(loaded: LoadedModel, cfg: MeasureConfig, progress: Progress | None = None,
            query_basis: QueryBasis | None = None, *, codec: Codec | None = None) -> RunRecord:
    """Run every prompt through the witness cache; return the run record (stored as run.json).

    The record is built from the meters' readback and checked against its types
    (:func:`witprobe.certify.run_record.parse_run`): a meter that records a self-check counter as
    anything but a count fails here, before anything is written.

    With ``cfg.query_aligned = r > 0`` the bases are calibrated first
    (:func:`witprobe.probe.query_aligned.calibrate` on
    :data:`~witprobe.probe.query_aligned.CALIBRATION_PROMPTS`, rank ``r``); ``query_basis`` passes
    bases calibrated elsewhere instead (``cfg.query_aligned`` must then be 0 or their rank). Either
    way the dense-KV reads also record the query-aligned forms and ``config.query_aligned`` records
    the calibration.

    ``codec`` is the codec ``cfg.validate()`` returned, passed on by a caller that has already
    validated ``cfg`` and checked it against ``loaded`` (:func:`check_compatible`), as the command
    line does before measuring; without it both happen here. Either way the codec is built once
    per run.
    """
    if codec is None:
        codec = cfg.validate()
        check_compatible(cfg, loaded, codec)
    progress = progress or Progress(quiet=True)
    model, tok = loaded.model, loaded.tokenizer
    mc = text_config(model.config)
    num_layers = mc.num_hidden_layers
    kinds = layer_kinds(mc)
    if query_basis is None and cfg.query_aligned:
        dense = [i for i, k in enumerate(kinds) if k == "dense_kv"]
        progress.info(f"calibrating rank-{cfg.query_aligned} query bases on {len(CALIBRATION_PROMPTS)} prompts")
        query_basis = calibrate(loaded, CALIBRATION_PROMPTS, cfg.query_aligned, layers=dense)
    elif query_basis is not None and cfg.query_aligned not in (0, query_basis.rank):
        raise QueryAlignedError(f"query_basis has rank {query_basis.rank}, the config asks for {cfg.query_aligned}")
    model.set_attn_implementation(ATTN_IMPLEMENTATION)
    observer = Observer(num_layers, query_basis=query_basis, box_sup=BOX_SUP_DEFAULT if cfg.box_sup else None)
    projections = output_projections(model, kinds)
    for i, (weight, bound) in projections.items():
        observer.set_output_projection(i, weight, math.nextafter(float(bound.upper), math.inf))
    installed = []
    try:
        for hook, (module, cls_name, what) in HOOKS.items():  # every layer whose kind needs a hook gets one
            want = sum(KINDS[k].hook == hook for k in kinds)
            mod = import_for(f"the {what} of {cfg.model}", module) if want else optional_import(module)
            if mod is None:  # this transformers release has no model with such a module
                continue
            installer = getattr(mod, cls_name)(observer)
            installed.append(installer)
            found = installer.install(model)
            if found != want:
                raise ValueError(f"{found} {what} found for {want} layers that need one")
        with press_scoring(model, observer, codec):
            requests = _generate_all(loaded, cfg, codec, observer, progress)
    finally:
        for installer in installed:
            installer.remove()
    tasks = run_tasks(loaded, cfg.tasks, codec, cfg.bands, cfg.compress_values, progress.info) if cfg.tasks else []
    snap = observer.snapshot()
    box_records = observer.box_row_records()
    layers = [
        {
            "layer": i,
            "memory_class": kinds[i],
            "write": snap["write"][i],
            "read": snap["read"][i],
            "host_write_calls": snap["host_write_calls"][i],
            "host_read_calls": snap["host_read_calls"][i],
            **({"channels": snap["channels"][i]} if i in snap["channels"] else {}),
            **({"o_proj": projection_record(projections[i][1])} if i in projections else {}),
            **({"box_rows": box_records[str(i)]} if str(i) in box_records else {}),
        }
        for i in range(num_layers)
    ]
    spec = MODELS.get(cfg.model)
    return parse_run({
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
            "e2e_tv_tolerance": cfg.e2e_tv_tolerance,
            **({"batch": cfg.batch} if cfg.batch > 1 else {}),
            **({} if cfg.box_sup else {"box_sup": False}),
            **({} if query_basis is None else {"query_aligned": query_basis.record()}),
            "codec_provenance": provenance_of(cfg.codec, codec).to_json(),
        },
        "requests": requests,
        "layers": layers,
        **({"tasks": tasks} if tasks else {}),
    }, "measured run.json")


def next_token_divergence(model: Any, context: torch.Tensor, n_prompt: int,
                          served_logits: tuple[torch.Tensor, ...]) -> dict[str, list[float]]:
    """Per generated step, the served next-token distribution against the uncompressed model's
    on the same (served) prefix: readings, never bounds.

    ``context`` ``(1, n_prompt + steps - 1)`` is the prompt plus every served token but the last;
    one uncompressed forward pass over it gives the reference logits of every step (teacher
    forcing on the served prefix, so a token flip early on does not compound into later steps).
    Step ``s`` compares ``p = softmax(reference logits)`` with ``p' = softmax(served logits)``,
    float64: ``TV = 1/2 sum_v |p_v - p'_v|`` and ``KL(p || p') = sum_v p_v (log p_v - log p'_v)``
    (nats).
    """
    steps = len(served_logits)
    if context.shape[1] != n_prompt + steps - 1:
        raise ValueError(f"context has {context.shape[1]} tokens, not {n_prompt} prompt + {steps - 1} served")
    # only the last ``steps`` positions' logits (positions n_prompt - 1 ...): the whole (L, vocab)
    # logits of a long context would be the largest tensor of the run (8192 x 49152 fp32 = 1.5 GiB)
    try:
        logits = model(input_ids=context, logits_to_keep=steps).logits
    except TypeError:  # a model without logits_to_keep: all positions, then the slice
        logits = model(input_ids=context).logits
    ref = logits[0, -steps:].to(torch.float64)
    srv = torch.stack([lg[0] for lg in served_logits]).to(torch.float64)
    if ref.shape != srv.shape:
        raise ValueError(f"reference logits {tuple(ref.shape)} do not match the served logits {tuple(srv.shape)}")
    lp, lq = torch.log_softmax(ref, dim=-1), torch.log_softmax(srv, dim=-1)
    p = lp.exp()
    tv = 0.5 * (p - lq.exp()).abs().sum(-1)
    kl = (p * (lp - lq)).sum(-1).clamp_min(0.0)  # clamp: float64 rounding around 0
    return {"next_token_tv": tv.tolist(), "next_token_kl": kl.tolist()}


def _request_record(model: Any, cfg: MeasureConfig, index: int, inputs: dict[str, torch.Tensor],
                    served: list[int], logits: tuple[torch.Tensor, ...], pad: int) -> dict[str, Any]:
    """The run.json record of one served request: its tokens and, with the reference on, the
    per-step next-token readings and the uncompressed greedy generation (always unbatched).
    ``inputs`` is the request's own (unpadded) encoding, ``logits`` its served logits ``(1, V)`` per step."""
    n_prompt = int(inputs["input_ids"].shape[1])
    record: dict[str, Any] = {"prompt_index": index, "prompt_tokens": n_prompt, "served_tokens": served}
    if cfg.reference:
        context = torch.cat([inputs["input_ids"], torch.tensor([served[:-1]], dtype=inputs["input_ids"].dtype)], 1)
        with torch.no_grad():
            record.update(next_token_divergence(model, context, n_prompt, logits))
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
    return record


def _padding_streamer(observer: Observer, eos: list[int], progress: TokenProgress) -> PaddingStreamer:
    """The batch's padding streamer (:mod:`witprobe.probe.padding`), reporting progress too."""
    return PaddingStreamer(observer, eos, on_put=progress.put, on_end=progress.end)


def _generate_batch(loaded: LoadedModel, cfg: MeasureConfig, codec: Codec, observer: Observer, progress: Progress,
                    indices: list[int]) -> list[dict[str, Any]]:
    """Serve the requests ``indices`` together: left-padded to the longest, one forward per step."""
    model, tok = loaded.model, loaded.tokenizer
    mc = text_config(model.config)
    pad = tok.eos_token_id if tok.pad_token_id is None else tok.pad_token_id
    encoded = [encode(tok, cfg.prompts[i]) for i in indices]
    width = max(int(e["input_ids"].shape[1]) for e in encoded)
    ids = torch.full((len(indices), width), pad, dtype=encoded[0]["input_ids"].dtype)
    attn = torch.zeros((len(indices), width), dtype=torch.long)
    for row, e in enumerate(encoded):
        n = int(e["input_ids"].shape[1])
        ids[row, width - n:] = e["input_ids"][0]
        attn[row, width - n:] = 1
    label = f"requests {indices[0] + 1}-{indices[-1] + 1}/{len(cfg.prompts)}"
    eos = eos_ids(model)
    cache = observer.attach(witness_cache_for(mc, codec, cfg.bands, cfg.compress_values, observer, model=model))
    observer.set_padding(attn)
    try:
        with torch.no_grad(), observer.active():
            gen = model.generate(
                input_ids=ids, attention_mask=attn, **{cache_kwarg(model): cache}, max_new_tokens=cfg.max_new_tokens,
                do_sample=False,
                pad_token_id=pad, streamer=_padding_streamer(observer, eos, TokenProgress(progress, label, cfg.max_new_tokens)),
                output_logits=True, return_dict_in_generate=True,
            )
    finally:
        observer.set_padding(None)
    records = []
    for row, (i, e) in enumerate(zip(indices, encoded)):
        served = gen.sequences[row, width:].tolist()
        ends = [s for s, t in enumerate(served) if t in eos]
        served = served[: ends[0] + 1] if ends else served  # the request's own run stops at its end
        logits = tuple(lg[row: row + 1] for lg in gen.logits[: len(served)])
        records.append(_request_record(model, cfg, i, e, served, logits, pad))
        progress.info(f"request {i + 1}/{len(cfg.prompts)}: {int(e['input_ids'].shape[1])} prompt tokens, "
                      f"{len(served)} generated (batch of {len(indices)})")
    return records


def _generate_all(loaded: LoadedModel, cfg: MeasureConfig, codec: Codec, observer: Observer,
                  progress: Progress) -> list[dict[str, Any]]:
    """Serve every prompt from a fresh witness cache (``cfg.batch`` at a time, left-padded, when
    above 1); optionally generate the uncompressed reference."""
    model, tok = loaded.model, loaded.tokenizer
    mc = text_config(model.config)
    pad = tok.eos_token_id if tok.pad_token_id is None else tok.pad_token_id
    requests: list[dict[str, Any]] = []
    if cfg.batch > 1:
        for first in range(0, len(cfg.prompts), cfg.batch):
            requests.extend(_generate_batch(loaded, cfg, codec, observer, progress,
                                            list(range(first, min(len(cfg.prompts), first + cfg.batch)))))
        return requests
    for i, prompt in enumerate(cfg.prompts):
        label = f"request {i + 1}/{len(cfg.prompts)}"
        inputs = encode(tok, prompt)
        n_prompt = int(inputs["input_ids"].shape[1])
        cache = observer.attach(witness_cache_for(mc, codec, cfg.bands, cfg.compress_values, observer, model=model))
        with torch.no_grad(), observer.active():
            gen = model.generate(
                **inputs, **{cache_kwarg(model): cache}, max_new_tokens=cfg.max_new_tokens, do_sample=False,
                pad_token_id=pad, streamer=TokenProgress(progress, label, cfg.max_new_tokens),
                output_logits=True, return_dict_in_generate=True,
            )
        served = gen.sequences[0, n_prompt:].tolist()
        requests.append(_request_record(model, cfg, i, inputs, served, gen.logits, pad))
        progress.info(f"{label}: {n_prompt} prompt tokens, {len(served)} generated")
    return requests
