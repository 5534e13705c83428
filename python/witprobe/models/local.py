"""The user's own model: a local transformers model directory or a GGUF file, loaded offline.

``--model DIR`` loads ``DIR/config.json``, its weights and the tokenizer saved beside them;
``--model FILE.gguf`` dequantizes the GGUF once (weights and tokenizer) and caches the result as
safetensors under the witprobe cache folder, keyed by the file's SHA-256. Both load in fp32 with
eager attention; ``certify`` then switches the model to the ``witprobe`` attention function.

Which architectures are supported is decided from the configuration alone, before any weight is
read: the attention function ``witprobe`` meters exactly ``softmax(scale q k^T + mask) v`` over
a dense K/V cache (any query/KV head grouping, RoPE or absolute positions, full or sliding-window
masks), so a model is supported when its attention is that and nothing more.
:data:`SUPPORTED` lists the tested families; :func:`check_config` names what is not supported
(an unknown model type, attention logit soft-capping, cross-attention, quantized checkpoints).
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from witprobe.cliutil import read_json_object
from witprobe.models.loaded import LoadedModel, ModelError

SUPPORTED: dict[str, str] = {
    "llama": "llama",
    "mistral": "mistral",
    "qwen2": "qwen2",
    "qwen3": "qwen3",
    "phi3": "phi3",
    "gemma2": "gemma2",
    "gemma3_text": "gemma3",
    "gpt2": "gpt2-absolute-positions",
}
"""``config.model_type`` -> family recorded in run.json. Each is tested on a tiny saved model."""


TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


MAX_LAYERS = 1024
"""The most decoder layers a local model may declare (a config claiming 10^6 would run for hours)."""


def check_config(config: Any, where: str) -> None:
    """Raise :class:`ModelError` naming what ``config`` (read from ``where``) has that witprobe cannot meter."""
    layers = getattr(config, "num_hidden_layers", None)
    if isinstance(layers, int) and not 0 < layers <= MAX_LAYERS:
        raise ModelError(f"{where}: num_hidden_layers {layers} is not in 1..{MAX_LAYERS}")
    mt = getattr(config, "model_type", None)
    archs = ", ".join(getattr(config, "architectures", None) or []) or "no architectures listed"
    if mt not in SUPPORTED:
        raise ModelError(f"{where}: model type {mt!r} ({archs}) is not supported; supported model types: "
                         f"{', '.join(sorted(SUPPORTED))}")
    if getattr(config, "is_encoder_decoder", False) or getattr(config, "add_cross_attention", False):
        raise ModelError(f"{where}: cross-attention (encoder-decoder) is not supported: only decoder self-attention "
                         "over a K/V cache is metered")
    cap = getattr(config, "attn_logit_softcapping", None)
    if cap is not None:
        raise ModelError(f"{where}: attention logit soft-capping (attn_logit_softcapping={cap}) is not supported: "
                         "the bounds are stated for uncapped scores; set it to null to certify the uncapped model")
    q = getattr(config, "quantization_config", None)
    if q is not None and not str(where).endswith(".gguf"):
        method = q.get("quant_method") if isinstance(q, dict) else getattr(q, "quant_method", q)
        raise ModelError(f"{where}: quantized checkpoints (quant_method={method}) are not supported; "
                         "witprobe meters an fp32 model (dequantize it first)")
    if getattr(config, "reorder_and_upcast_attn", False):
        raise ModelError(f"{where}: reorder_and_upcast_attn=True (GPT-2's eager-only attention path) is not supported")


def _gguf_dir(src: Path) -> Path:
    """The dequantized copy of ``src`` in the witprobe cache (built once, atomically)."""
    import transformers

    from witprobe.cache import cache_root
    from witprobe.models import smollm2

    digest = smollm2.gguf_digest(src)
    shipped = smollm2._model_dir(digest)  # noqa: SLF001 - the SmolLM2 GGUF shares its cache folder
    if (shipped / "witprobe-meta.json").is_file():
        return shipped
    dst = cache_root() / "gguf" / f"{digest[:16]}-tf{transformers.__version__}"
    if not (dst / "witprobe-meta.json").is_file():
        smollm2.dequantize_gguf(src, dst, digest)
    return dst


def load_local(ref: str, *, attn_implementation: str = "eager", **_: Any) -> LoadedModel:
    """Load a model directory or GGUF file (see the module docstring); :class:`ModelError` if unsupported."""
    import torch
    import transformers

    path = Path(ref)
    if not path.exists():
        raise ModelError(f"--model {ref}: no such file or directory")
    provenance: dict[str, Any] = {"source": str(path.resolve())}
    if path.is_file():
        if path.suffix != ".gguf":
            raise ModelError(f"--model {ref}: a file must be a GGUF model (.gguf); for transformers weights pass "
                             "the directory holding config.json")
        try:
            config = transformers.AutoConfig.from_pretrained(str(path.parent), gguf_file=path.name)
        except Exception as e:  # noqa: BLE001 - any parse failure of a user file is a usage error
            raise ModelError(f"{ref}: not a readable GGUF model ({type(e).__name__}: {e})") from None
        check_config(config, str(path))
        folder = _gguf_dir(path)
        provenance.update(weights="GGUF dequantized to fp32 by transformers", gguf_sha256=folder.name.split("-")[0])
    else:
        if not (path / "config.json").is_file():
            raise ModelError(f"--model {ref}: no config.json in this directory (not a transformers model directory)")
        read_json_object(path / "config.json")  # within the readers' limits first (size, depth, numbers)
        try:
            config = transformers.AutoConfig.from_pretrained(str(path))
        except Exception as e:  # noqa: BLE001
            raise ModelError(f"{path / 'config.json'}: not a readable model configuration ({e})") from None
        check_config(config, str(path / "config.json"))
        folder = path
        provenance.update(weights="local transformers checkpoint, loaded in fp32")
    if not any((folder / f).is_file() for f in TOKENIZER_FILES):
        raise ModelError(f"--model {ref}: no tokenizer saved with the model (none of {', '.join(TOKENIZER_FILES)}); "
                         "save one with tokenizer.save_pretrained(DIR)")
    try:
        tok = transformers.AutoTokenizer.from_pretrained(str(folder))
    except Exception as e:  # noqa: BLE001
        raise ModelError(f"--model {ref}: no usable tokenizer saved with the model ({type(e).__name__}: {e}); "
                         "save one with tokenizer.save_pretrained(DIR)") from None
    try:
        model = transformers.AutoModelForCausalLM.from_pretrained(
            str(folder), dtype=torch.float32, attn_implementation=attn_implementation)
    except Exception as e:  # noqa: BLE001 - missing or corrupt weights in a user's directory are a usage error
        raise ModelError(f"--model {ref}: the weights cannot be loaded ({type(e).__name__}: "
                         f"{' '.join(str(e).split())[:300]})") from None
    model.eval()
    if model.generation_config.pad_token_id is None:
        model.generation_config.pad_token_id = tok.pad_token_id if tok.pad_token_id is not None else tok.eos_token_id
    provenance.update(model=type(model).__name__, model_type=config.model_type,
                      parameters=sum(p.numel() for p in model.parameters()),
                      transformers=transformers.__version__, torch=torch.__version__)
    return LoadedModel(name=ref, model=model, tokenizer=tok, provenance=provenance,
                       family=SUPPORTED[config.model_type], memory_class="plain_kv")
