"""The end-to-end readings of long contexts: ``next_token_divergence`` asks the model for the logits
it compares only (``logits_to_keep``), and they equal the slice of the full logits."""

from __future__ import annotations

import pytest
import torch

from witprobe.certify.measure import next_token_divergence


def test_kept_logits_give_the_readings_of_the_full_logits():
    import transformers as tf

    with torch.random.fork_rng(devices=[]):
        torch.manual_seed(3)
        model = tf.LlamaForCausalLM(tf.LlamaConfig(vocab_size=97, hidden_size=32, intermediate_size=64,
                                                   num_hidden_layers=2, num_attention_heads=4, num_key_value_heads=2,
                                                   head_dim=8, initializer_range=0.1)).eval()
        context = torch.randint(0, 97, (1, 20))
        served = tuple(torch.randn(1, 97) for _ in range(6))
    n_prompt = 20 - 6 + 1
    got = next_token_divergence(model, context, n_prompt, served)
    with torch.no_grad():
        full = model(input_ids=context).logits[0, n_prompt - 1: n_prompt + 5].to(torch.float64)
    srv = torch.cat(served).to(torch.float64)
    lp, lq = torch.log_softmax(full, -1), torch.log_softmax(srv, -1)
    tv = 0.5 * (lp.exp() - lq.exp()).abs().sum(-1)
    assert got["next_token_tv"] == pytest.approx(tv.tolist(), abs=1e-6)
    with pytest.raises(ValueError, match="context"):
        next_token_divergence(model, context[:, :-1], n_prompt, served)
