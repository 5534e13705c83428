"""Greedy decoding with a static cache and static input buffers, so that one step can be captured
in a CUDA graph and replayed (used by ``probe_overhead_gpu.py``; tested eagerly on the CPU).

The step reads and writes only preallocated device tensors: the token ids ``(B, 1)``, the position
ids ``(B, 1)`` and an additive 4-D attention mask ``(B, 1, 1, max_len)`` (0 visible, dtype minimum
hidden), which transformers passes through unchanged. The static cache writes slot ``pos`` through
its own device-side length counter, so positions and cache slots advance together on replay.
"""

from __future__ import annotations

import torch


class StaticDecoder:
    """Greedy decoding over a static cache.

    Parameters
    ----------
    model:
        A causal LM (transformers), on its device.
    cache:
        A static cache (``StaticCache`` or ``ProbedStaticCache``) with ``max_len`` slots, empty.
    prompt_ids:
        ``(B, P)`` token ids on the model's device, ``P < max_len``.
    max_len:
        Cache slots (prompt plus every decoded token must fit).
    """

    def __init__(self, model, cache, prompt_ids: torch.Tensor, max_len: int) -> None:
        b, p = prompt_ids.shape
        if p >= max_len:
            raise ValueError(f"prompt of {p} tokens does not fit a cache of {max_len}")
        dev = prompt_ids.device
        self.model, self.cache, self.prompt_ids, self.max_len = model, cache, prompt_ids, max_len
        self.dtype = next(model.parameters()).dtype
        self.neg = torch.finfo(self.dtype).min
        self.ids = torch.zeros((b, 1), dtype=torch.long, device=dev)
        self.pos = torch.zeros((b, 1), dtype=torch.long, device=dev)
        self.slots = torch.arange(max_len, device=dev).view(1, 1, 1, max_len)
        self.mask = torch.zeros((b, 1, 1, max_len), dtype=self.dtype, device=dev)

    def _update_mask(self) -> None:
        hidden = self.slots > self.pos.view(-1, 1, 1, 1)
        self.mask.zero_().masked_fill_(hidden, self.neg)

    @torch.no_grad()
    def prefill(self) -> torch.Tensor:
        """Eager prefill: fills slots ``0..P-1``; returns the first generated token ``(B, 1)``."""
        b, p = self.prompt_ids.shape
        dev = self.prompt_ids.device
        rows = torch.arange(p, device=dev).view(1, 1, p, 1)
        causal = torch.zeros((b, 1, p, self.max_len), dtype=self.dtype, device=dev)
        causal.masked_fill_(self.slots > rows, self.neg)
        pos = torch.arange(p, device=dev).view(1, p).expand(b, p)
        out = self.model(input_ids=self.prompt_ids, position_ids=pos, attention_mask=causal, cache=self.cache)
        self.ids.copy_(out.logits[:, -1].argmax(-1, keepdim=True))
        self.pos.fill_(p)
        self._update_mask()
        return self.ids.clone()

    @torch.no_grad()
    def step(self) -> None:
        """One decode step on the static buffers (no host synchronisation: capturable)."""
        out = self.model(input_ids=self.ids, position_ids=self.pos, attention_mask=self.mask, cache=self.cache)
        self.ids.copy_(out.logits[:, -1].argmax(-1, keepdim=True))
        self.pos.add_(1)
        self._update_mask()
