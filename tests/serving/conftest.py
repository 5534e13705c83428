"""Shared fixtures: SmolLM2 with the paged eager attention, and a small engine runner."""

from __future__ import annotations

import pytest


@pytest.fixture(scope="session")
def paged_smollm2():
    from witprobe.models.zoo import load_model

    return load_model("smollm2", attn_implementation="paged|eager")


def make_manager(model, *, num_blocks: int = 48, max_batch_tokens: int = 64, max_new_tokens: int = 4):
    from transformers import GenerationConfig
    from transformers.generation.configuration_utils import ContinuousBatchingConfig

    gen = GenerationConfig(max_new_tokens=max_new_tokens, do_sample=False, eos_token_id=-1)
    cb = ContinuousBatchingConfig(page_size=16, num_blocks=num_blocks, max_batch_tokens=max_batch_tokens,
                                  use_async_batching=False, use_cuda_graph=False)
    return model.init_continuous_batching(generation_config=gen, continuous_batching_config=cb)


def run_requests(manager, prompts: dict[str, list[int]], max_new_tokens: int = 4, timeout: float = 120.0) -> dict[str, list[int]]:
    """Start the manager, run the requests, stop; returns the generated tokens by request id.

    Requests named ``warmup-*`` run first, to completion, with two new tokens (as the server's warmup: a request that finishes in its first forward registers no prefix blocks).
    """
    manager.start()
    out: dict[str, list[int]] = {}
    try:
        waves = [{k: v for k, v in prompts.items() if k.startswith("warmup-")},
                 {k: v for k, v in prompts.items() if not k.startswith("warmup-")}]
        for wave in waves:
            for rid, ids in wave.items():
                manager.add_request(ids, request_id=rid, max_new_tokens=2 if rid.startswith("warmup-") else max_new_tokens)
            done = 0
            while done < len(wave):
                r = manager.get_result(timeout=timeout)
                assert r is not None, f"engine stalled with {sorted(set(wave) - set(out))} pending"
                if r.is_finished():
                    assert r.error is None, r.error
                    out[r.request_id] = list(r.generated_tokens)
                    done += 1
        return out
    finally:
        manager.stop(block=True, timeout=60, keep_for_next_session=False)


def chat_ids(tok, text: str) -> list[int]:
    return list(tok.apply_chat_template([{"role": "user", "content": text}], add_generation_prompt=True, return_dict=True)["input_ids"])
