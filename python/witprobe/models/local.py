"""The user's own model: a local transformers model directory or a GGUF file, loaded offline.

``--model DIR`` loads ``DIR/config.json``, its weights and the tokenizer saved beside them;
``--model FILE.gguf`` dequantizes the GGUF once (weights and tokenizer) and caches the result as
safetensors under the witprobe cache folder, keyed by the file's SHA-256. Both load in fp32 with
eager attention; ``certify`` then switches the model to the ``witprobe`` attention function.

Which architectures are supported is decided from the configuration alone, before any weight is
read: the attention function ``witprobe`` meters exactly ``softmax(scale q k^T + mask) v`` over
a dense K/V cache (any query/KV head grouping, RoPE or absolute positions, full or sliding-window
masks), so a model is supported when its attention is that and nothing more.
:data:`~witprobe.models.capability.SUPPORTED` lists the tested families;
:func:`~witprobe.models.capability.check_config` names what is not supported (an unknown model type,
attention logit soft-capping, cross-attention, quantized checkpoints); the Python API runs the
same check on the model it is given.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from witprobe.cliutil import read_json_object
from witprobe.models.capability import MAX_LAYERS, SUPPORTED, check_config  # noqa: F401 (re-exported)
from witprobe.models.loaded import LoadedModel, ModelError

TOKENIZER_FILES = ("tokenizer.json", "tokenizer_config.json", "tokenizer.model", "vocab.json")


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
