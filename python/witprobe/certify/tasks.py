"""Task-level readings beside the bounds (``certify run --task niah|ppl|FILE.jsonl``).

Readings, never bounds. Each task is served twice:

- **compressed**: from a witness cache with the run's codec, through the ``witprobe`` attention
  function, so eviction masks and sequence codecs serve exactly what the measured run serves. An
  observer of its own serves them without metering the reads (an eviction policy's votes are still
  folded: they decide what is served): the run's per-layer bounds speak about the run's prompts,
  and the task prompts do not enter them;
- **uncompressed**: the same model with a plain cache (the reference of ``certify run``).

Tasks (all built in, nothing downloaded):

- ``niah``: needle in a haystack. :data:`NIAH_ITEMS` synthetic haystacks (filler sentences drawn
  with a fixed seed, about 300 tokens with SmolLM2's tokenizer), each hiding one sentence "The magic
  number is N." at a depth from 10% to 90%, then a question. Greedy decoding of
  :data:`NIAH_NEW_TOKENS` tokens; an item is correct when the 4-digit number appears in the answer.
  Metric: accuracy (fraction correct).
- ``ppl``: perplexity on shipped text (:data:`PPL_PASSAGES`, written for witprobe). Each passage's
  first :data:`PPL_PREFIX` tokens are prefilled, then every later token is scored teacher-forced,
  one decode step at a time, so every scored token reads the compressed memory as decoding does.
  Metric: perplexity, ``exp`` of the mean negative log-likelihood in nats per scored token.
- ``FILE.jsonl``: exact match on the user's items, one JSON object per line with ``"prompt"`` (a
  string) or ``"messages"`` (a chat) and ``"answer"``. Greedy decoding of ``max_tokens`` (default
  32); the prediction is the first non-empty line of the output, and it matches when it equals the
  answer after lowercasing, collapsing whitespace and stripping surrounding punctuation. Metric:
  exact-match accuracy.

Every reading is checked finite: a NaN or an infinity is an error, never a reading.
"""

from __future__ import annotations

import json
import math
import random
import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import torch

from witprobe.kinds.layouts import text_config, witness_cache_for
from witprobe.memory.codecs import Codec
from witprobe.models.loaded import LoadedModel
from witprobe.models.transformers_release import cache_kwarg
from witprobe.models.prompts import Prompt, encode
from witprobe.probe.attention import ATTN_IMPLEMENTATION
from witprobe.probe.observer import Observer
from witprobe.probe.press_hooks import press_scoring

BUILTIN_TASKS = ("niah", "ppl")
NIAH_ITEMS = 8
NIAH_SENTENCES = 30
NIAH_NEW_TOKENS = 16
NIAH_SEED = 20261207
PPL_PREFIX = 64
EM_MAX_ITEMS = 1000
EM_NEW_TOKENS = 32

_FILLER = (
    "The grass is green and the sky is blue.", "The sun rose over the quiet hills.",
    "A small boat drifted along the river.", "The market opened early on Saturday morning.",
    "Birds sang in the tall oak trees.", "The train left the station on time.",
    "Rain fell softly on the old stone roof.", "Children played in the park after school.",
    "The library was silent in the afternoon.", "A cat slept on the warm windowsill.",
)

PPL_PASSAGES = (
    "Every morning the baker on the corner lit his oven before the street was awake. He mixed flour, "
    "water and salt in the same wooden bowl his father had used, and while the dough rested he swept the "
    "floor and wrote the day's prices on a small chalkboard. By six o'clock the first loaves came out "
    "golden and crackling, and the smell drifted down the road to the bus stop, where people waiting for "
    "the early bus would turn their heads and, more often than not, cross the street to buy a roll. He "
    "knew most of them by name, and he knew which ones liked their bread dark and which ones asked for the "
    "softest loaf on the shelf.",
    "A river changes its course slowly, over many years, by carrying sand from the outside of each bend "
    "and leaving it on the inside of the next. Engineers who build bridges study these movements with "
    "care, because a pillar that stands on firm ground today may stand in the middle of the current a "
    "century later. Old maps help them, and so do the records of floods, which show how high the water "
    "rose and how quickly it fell. In some valleys farmers still remember where the river ran when their "
    "grandparents were young, and their stories often agree with what the measurements say.",
    "The committee met on Thursday to decide how the new library should be organised. Some members wanted "
    "the children's books on the ground floor, close to the entrance, so that parents with small children "
    "would not have to climb the stairs. Others argued that the quiet reading rooms belonged downstairs, "
    "away from the noise of the street. After a long discussion they agreed on a compromise: picture books "
    "and a play corner near the door, and the reading rooms at the back of the building, behind a wall of "
    "shelves that would keep the sound out.",
)


class TaskError(ValueError):
    """A task spec or a task file is wrong (the message names what), or a reading is not finite."""


@dataclass(frozen=True)
class TaskItems:
    """A task's items: prompts with their answers (``niah``, ``FILE``) or passages (``ppl``)."""

    task: str
    metric: str
    description: str
    prompts: tuple[Prompt, ...]
    answers: tuple[str, ...]
    new_tokens: int
    match: Callable[[str, str], bool]


def niah_items(n: int = NIAH_ITEMS, sentences: int = NIAH_SENTENCES, seed: int = NIAH_SEED) -> TaskItems:
    """``n`` haystacks of ``sentences`` filler sentences, the needle at depths spread over 10%-90%."""
    rng = random.Random(seed)
    prompts, answers = [], []
    for i in range(n):
        depth = 0.1 + 0.8 * i / max(1, n - 1)
        number = rng.randint(1000, 9999)
        hay = [rng.choice(_FILLER) for _ in range(sentences)]
        hay.insert(round(depth * sentences), f"The magic number is {number}.")
        prompts.append(({"role": "user", "content": " ".join(hay) + "\n\nWhat is the magic number mentioned in the "
                         "text above? Answer with the number only."},))
        answers.append(str(number))
    return TaskItems("niah", "accuracy", f"needle in a haystack: {n} haystacks of {sentences} filler sentences, "
                     f"needle depth 10%-90%, {NIAH_NEW_TOKENS} greedy tokens, correct when the number appears",
                     tuple(prompts), tuple(answers), NIAH_NEW_TOKENS, lambda out, ans: ans in out)


def normalize(text: str) -> str:
    """Lowercase, whitespace collapsed, surrounding punctuation and quotes stripped."""
    return " ".join(text.lower().split()).strip(" .,;:!?\"'`()[]")


def first_line(text: str) -> str:
    return next((ln for ln in text.splitlines() if ln.strip()), "")


def em_items(path: Path) -> TaskItems:
    """Exact-match items from a ``.jsonl`` file (module docstring); :class:`TaskError` naming the line."""
    try:
        raw = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as e:
        raise TaskError(f"--task {path}: cannot read it ({type(e).__name__}: {e})") from None
    prompts: list[Prompt] = []
    answers: list[str] = []
    max_tokens = EM_NEW_TOKENS
    for n, line in enumerate(raw.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            obj = json.loads(line)
        except json.JSONDecodeError as e:
            raise TaskError(f"--task {path}:{n}: not JSON ({e.msg})") from None
        if not isinstance(obj, dict) or not isinstance(obj.get("answer"), str) or not obj["answer"].strip():
            raise TaskError(f"--task {path}:{n}: each line is an object with a nonempty string \"answer\"")
        if isinstance(obj.get("prompt"), str) and obj["prompt"].strip() and "messages" not in obj:
            prompts.append(obj["prompt"])
        elif isinstance(obj.get("messages"), list) and obj["messages"] and "prompt" not in obj and all(
                isinstance(m, dict) and isinstance(m.get("role"), str) and isinstance(m.get("content"), str)
                for m in obj["messages"]):
            prompts.append(tuple({"role": m["role"], "content": m["content"]} for m in obj["messages"]))
        else:
            raise TaskError(f"--task {path}:{n}: give either \"prompt\" (a nonempty string) or \"messages\" "
                            "(a list of {\"role\", \"content\"})")
        if "max_tokens" in obj:
            m = obj["max_tokens"]
            if isinstance(m, bool) or not isinstance(m, int) or not 1 <= m <= 256:
                raise TaskError(f"--task {path}:{n}: max_tokens must be an integer in [1, 256]")
            max_tokens = max(max_tokens, m)
        answers.append(obj["answer"])
        if len(answers) > EM_MAX_ITEMS:
            raise TaskError(f"--task {path}: more than {EM_MAX_ITEMS} items")
    if not answers:
        raise TaskError(f"--task {path}: no items")
    return TaskItems(f"em:{path.name}", "exact_match", f"exact match on {len(answers)} items of {path.name}: first "
                     "non-empty output line, normalized, equal to the answer", tuple(prompts), tuple(answers),
                     max_tokens, lambda out, ans: normalize(first_line(out)) == normalize(ans))


def check_spec(spec: str) -> None:
    """Refuse a task spec that is neither built in nor a ``.jsonl`` file (before any model loads)."""
    if spec in BUILTIN_TASKS:
        return
    p = Path(spec)
    if p.suffix != ".jsonl":
        raise TaskError(f"--task {spec!r}: one of {', '.join(BUILTIN_TASKS)}, or a .jsonl file of "
                        "{\"prompt\" or \"messages\", \"answer\"} lines")
    em_items(p)


def _finite(value: float, what: str) -> float:
    if not math.isfinite(value):
        raise TaskError(f"task reading {what} is {value} (a NaN or an infinity is an error, never a reading)")
    return value


class _Served:
    """The two ways of serving a task: from the compressed memory, and uncompressed."""

    def __init__(self, loaded: LoadedModel, codec: Codec, bands: int, compress_values: bool) -> None:
        self.model, self.tok = loaded.model, loaded.tokenizer
        self.mc = text_config(self.model.config)
        self.codec, self.bands, self.compress_values = codec, bands, compress_values
        self.observer = Observer(self.mc.num_hidden_layers, meter=False)  # serves; meters no read
        self.pad = self.tok.eos_token_id if self.tok.pad_token_id is None else self.tok.pad_token_id
        self.previous = getattr(self.model.config, "_attn_implementation", None) or "eager"
        self.model.set_attn_implementation(ATTN_IMPLEMENTATION)  # eviction masks apply only there

    def close(self) -> None:
        """Give the model back its attention implementation."""
        self.model.set_attn_implementation(self.previous)

    def _served_through_witprobe(self, before: int) -> None:
        if sum(self.observer.host_read_calls) <= before:
            raise TaskError("the compressed task was not served through the witprobe attention function "
                            "(no read reached the witness cache's observer); refusing a reading of unknown memory")

    def _cache(self) -> Any:
        return self.observer.attach(witness_cache_for(self.mc, self.codec, self.bands, self.compress_values,
                                                      self.observer, model=self.model))

    def generate(self, inputs: dict[str, torch.Tensor], new_tokens: int, compressed: bool) -> str:
        n = int(inputs["input_ids"].shape[1])
        with torch.no_grad():
            if compressed:
                cache, before = self._cache(), sum(self.observer.host_read_calls)
                with self.observer.active(), press_scoring(self.model, self.observer, self.codec):
                    out = self.model.generate(**inputs, **{cache_kwarg(self.model): cache}, max_new_tokens=new_tokens,
                                              do_sample=False, pad_token_id=self.pad)
                self._served_through_witprobe(before)
            else:
                out = self.model.generate(**inputs, max_new_tokens=new_tokens, do_sample=False, pad_token_id=self.pad)
        return self.tok.decode(out[0, n:], skip_special_tokens=True)

    def nll(self, ids: torch.Tensor, prefix: int, compressed: bool) -> tuple[float, int]:
        """Sum of ``-log p(token)`` (nats) over tokens ``prefix..T-1`` of ``ids (1, T)``, and their count."""
        with torch.no_grad():
            if not compressed:
                logits = self.model(ids).logits[0, prefix - 1:-1].to(torch.float64)
                lp = torch.log_softmax(logits, dim=-1)
                return float(-lp.gather(-1, ids[0, prefix:].unsqueeze(-1)).sum()), ids.shape[1] - prefix
            cache, before = self._cache(), sum(self.observer.host_read_calls)
            total = 0.0
            with self.observer.active(), press_scoring(self.model, self.observer, self.codec):
                kw = cache_kwarg(self.model)
                out = self.model(ids[:, :prefix], **{kw: cache}, use_cache=True)
                for t in range(prefix, ids.shape[1]):
                    lp = torch.log_softmax(out.logits[0, -1].to(torch.float64), dim=-1)
                    total -= float(lp[ids[0, t]])
                    if t + 1 < ids.shape[1]:
                        out = self.model(ids[:, t:t + 1], **{kw: cache}, use_cache=True)
            self._served_through_witprobe(before)
            return total, ids.shape[1] - prefix


def _generation_task(items: TaskItems, served: _Served, say: Callable[[str], None]) -> dict[str, Any]:
    per_item = []
    for i, (prompt, answer) in enumerate(zip(items.prompts, items.answers), start=1):
        inputs = encode(served.tok, prompt)
        row = {}
        for side in ("compressed", "uncompressed"):
            out = served.generate(inputs, items.new_tokens, side == "compressed")
            row[side] = 1.0 if items.match(out, answer) else 0.0
        per_item.append(row)
        say(f"task {items.task} {i}/{len(items.prompts)}: compressed {'right' if row['compressed'] else 'wrong'}, "
            f"uncompressed {'right' if row['uncompressed'] else 'wrong'}")
    n = len(per_item)
    return {"task": items.task, "metric": items.metric, "description": items.description, "items": n,
            "compressed": sum(r["compressed"] for r in per_item) / n,
            "uncompressed": sum(r["uncompressed"] for r in per_item) / n, "per_item": per_item}


def _ppl_task(served: _Served, say: Callable[[str], None]) -> dict[str, Any]:
    per_item = []
    totals = {"compressed": [0.0, 0], "uncompressed": [0.0, 0]}
    for i, text in enumerate(PPL_PASSAGES, start=1):
        ids = served.tok(text, return_tensors="pt")["input_ids"]
        if ids.shape[1] <= PPL_PREFIX + 1:
            raise TaskError(f"task ppl: passage {i} has {ids.shape[1]} tokens, not more than the {PPL_PREFIX}-token prefix")
        row = {}
        for side in ("compressed", "uncompressed"):
            nll, count = served.nll(ids, PPL_PREFIX, side == "compressed")
            _finite(nll, f"ppl passage {i} ({side})")
            totals[side][0] += nll
            totals[side][1] += count
            row[side] = nll / count
        per_item.append(row)
        say(f"task ppl {i}/{len(PPL_PASSAGES)}: mean NLL compressed {row['compressed']:.4f}, "
            f"uncompressed {row['uncompressed']:.4f} nats/token")
    ppl = {side: _finite(math.exp(s / c), f"ppl ({side})") for side, (s, c) in totals.items()}
    return {"task": "ppl", "metric": "perplexity",
            "description": f"perplexity on {len(PPL_PASSAGES)} shipped passages, {PPL_PREFIX}-token prefix prefilled, "
                           f"{totals['compressed'][1]} tokens scored teacher-forced one decode step at a time "
                           "(per item: mean NLL, nats/token)",
            "items": len(per_item), "compressed": ppl["compressed"], "uncompressed": ppl["uncompressed"],
            "per_item": per_item}


def run_tasks(loaded: LoadedModel, specs: Sequence[str], codec: Codec, bands: int, compress_values: bool,
              say: Callable[[str], None] = lambda _: None) -> list[dict[str, Any]]:
    """The ``run.json`` ``tasks`` records of ``specs``, in order (module docstring)."""
    served = _Served(loaded, codec, bands, compress_values)
    out = []
    try:
        for spec in specs:
            if spec == "ppl":
                out.append(_ppl_task(served, say))
            else:
                items = niah_items() if spec == "niah" else em_items(Path(spec))
                out.append(_generation_task(items, served, say))
    finally:
        served.close()
    return out
