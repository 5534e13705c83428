"""The prompts of a run and how a model's tokenizer encodes them (``--prompts FILE``: plain text or JSONL).

:func:`encode` is the one prompt encoding: measurement (:mod:`witprobe.certify.measure`) and the
query-aligned calibration (:mod:`witprobe.probe.query_aligned`) both use it, which is why it sits
in the models layer, below both.

- Plain text (any suffix but ``.jsonl``): one prompt per nonempty line.
- JSONL (``.jsonl``): one request per nonempty line, each one of ``{"messages": [{"role": ...,
  "content": ...}, ...]}``, a bare list of such messages, ``{"prompt": "..."}`` or a JSON string.

A chat (a list of messages) is encoded with the tokenizer's chat template, with the generation
prompt added; without a template its messages are joined as ``role: content`` lines. A plain
prompt is wrapped as one user message when the tokenizer has a template.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any, Union

from witprobe.cliutil import InputError, loads_bounded, read_text_capped

Message = dict[str, str]
Prompt = Union[str, tuple[Message, ...]]
ROLES = ("system", "user", "assistant")
MAX_PROMPTS_BYTES = 16 * 2**20
"""The largest ``--prompts`` file read (``/dev/zero`` is refused after that many bytes)."""

#: the prompts of ``certify run`` without ``--prompt``/``--prompts`` (here, not in the measurement
#: module, so that the command line's parser does not import torch and transformers to count them)
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


def _messages(v: Any, path: Path, where: str) -> tuple[Message, ...]:
    if not isinstance(v, list) or not v:
        raise InputError(path, where, "expected a nonempty list of messages")
    out = []
    for j, m in enumerate(v):
        if not isinstance(m, dict) or m.get("role") not in ROLES or not isinstance(m.get("content"), str):
            raise InputError(path, f"{where}[{j}]", f"expected {{\"role\": one of {'/'.join(ROLES)}, "
                             "\"content\": a string}")
        out.append({"role": m["role"], "content": m["content"]})
    if not any(m["content"].strip() for m in out):
        raise InputError(path, where, "every message is empty")
    return tuple(out)


def read_prompts(path: Path) -> tuple[Prompt, ...]:
    """The prompts in ``path`` (module docstring); :class:`InputError` naming the line otherwise."""
    text = read_text_capped(path, MAX_PROMPTS_BYTES)
    prompts: list[Prompt] = []
    for n, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        if Path(path).suffix != ".jsonl":
            prompts.append(line.strip())
            continue
        where = f"line {n}"
        v = loads_bounded(line, path, where)
        if isinstance(v, str) and v.strip():
            prompts.append(v)
        elif isinstance(v, list):
            prompts.append(_messages(v, path, where))
        elif isinstance(v, dict) and "messages" in v:
            prompts.append(_messages(v["messages"], path, f"{where}.messages"))
        elif isinstance(v, dict) and isinstance(v.get("prompt"), str) and v["prompt"].strip():
            prompts.append(v["prompt"])
        else:
            raise InputError(path, where, 'expected {"messages": [...]}, {"prompt": "..."}, a message list or a string')
    if not prompts:
        raise InputError(path, "", "holds no prompt")
    return tuple(prompts)


def encode(tokenizer: Any, prompt: Prompt) -> dict[str, Any]:
    """``input_ids`` and ``attention_mask`` ``(1, n)`` of one prompt (module docstring)."""
    template = bool(getattr(tokenizer, "chat_template", None))
    if isinstance(prompt, str):
        if not template:
            return tokenizer(prompt, return_tensors="pt")
        prompt = ({"role": "user", "content": prompt},)
    if template:
        return tokenizer.apply_chat_template(list(prompt), add_generation_prompt=True, return_tensors="pt",
                                             return_dict=True)
    return tokenizer("\n".join(f"{m['role']}: {m['content']}" for m in prompt), return_tensors="pt")


def is_valid(prompt: Any) -> bool:
    """Whether ``prompt`` is a nonempty string or a nonempty chat (a tuple of messages with string contents)."""
    if isinstance(prompt, str):
        return bool(prompt.strip())
    return (isinstance(prompt, tuple) and bool(prompt)
            and all(isinstance(m, dict) and isinstance(m.get("content"), str) for m in prompt))
