"""The benchmark scripts' logic that can be checked without timing: the static-buffer decoder the
GPU script captures in a graph (run eagerly here), the GPU script's refusal without CUDA, and the
statistics helpers. No timing assertions."""

from __future__ import annotations

import os
import subprocess
import sys
from pathlib import Path

import pytest
import torch

BENCH = Path(__file__).resolve().parents[2] / "bench"
sys.path.insert(0, str(BENCH))

from probe_bench_lib import RunResult, compare_settings, noise_floor, percentile  # noqa: E402


def test_statistics_helpers():
    assert percentile([1, 2, 3, 4, 5], 50) == 3
    assert percentile(list(range(101)), 99) == pytest.approx(99)
    assert noise_floor([10.0, 11.0, 9.5]) == pytest.approx(0.1)
    runs = [RunResult("off", 1, i, [0.1] * 9 + [0.1 + 0.01 * i], 0.0) for i in range(3)]
    runs += [RunResult("probe", 1, i, [0.2] * 10, 0.0) for i in range(3)]
    res = compare_settings(runs)["1"]
    assert res["settings"]["probe"]["cost_ratio"] == pytest.approx(2.0)
    assert res["settings"]["probe"]["delta_throughput"] < -0.4
    assert not res["settings"]["probe"]["throughput_inside_noise_floor"]
    assert res["settings"]["off"]["throughput_inside_noise_floor"]
    with pytest.raises(ValueError):
        compare_settings(runs[3:])  # no probe-off runs: no noise floor, no comparison


def test_gpu_script_refuses_clearly_without_cuda():
    if torch.cuda.is_available():
        pytest.skip("a GPU is present: the script would run")
    env = {k: v for k, v in os.environ.items() if k != "TRITON_INTERPRET"}
    run = subprocess.run([sys.executable, str(BENCH / "probe_overhead_gpu.py")], capture_output=True, text=True,
                         timeout=120, env=env)
    assert run.returncode == 3
    assert "no CUDA device" in run.stderr and "nothing was measured" in run.stderr
    run = subprocess.run([sys.executable, str(BENCH / "probe_overhead_gpu.py")], capture_output=True, text=True,
                         timeout=120, env={**env, "TRITON_INTERPRET": "1"})
    assert run.returncode == 3 and "TRITON_INTERPRET" in run.stderr


@pytest.mark.slow
def test_static_decoder_matches_dynamic_greedy_decoding_and_counts(smollm2):
    """The graph-capturable step (static cache, static ids/positions/mask) decodes the same tokens
    as the dynamic cache, and the probed static cache counts one call per step."""
    from static_decode import StaticDecoder
    from transformers import StaticCache

    from witprobe.probe.probed_cache import ProbedCache, ProbedStaticCache
    from witprobe.probe.runtime import ProbeConfig, ProbeRuntime

    model, tok = smollm2.model, smollm2.tokenizer
    n_layers = model.config.num_hidden_layers
    ids = tok(["Static buffers make a decode step capturable"] * 2, return_tensors="pt")["input_ids"]
    steps = 5
    rt = ProbeRuntime(n_layers, ProbeConfig(layers=(4,)))
    dec = StaticDecoder(model, ProbedStaticCache(rt, 32), ids, 32)
    toks = [dec.prefill()]
    for _ in range(steps):
        dec.step()
        toks.append(dec.ids.clone())
    static = torch.cat(toks, dim=1)
    plain = StaticDecoder(model, StaticCache(config=model.config, max_cache_len=32), ids, 32)
    ptoks = [plain.prefill()]
    for _ in range(steps):
        plain.step()
        ptoks.append(plain.ids.clone())
    with torch.no_grad():
        cache = ProbedCache(ProbeRuntime(n_layers, ProbeConfig(layers=(4,))))
        out = model(input_ids=ids, cache=cache)
        nxt = out.logits[:, -1].argmax(-1, keepdim=True)
        dyn = [nxt]
        for _ in range(steps):
            nxt = model(input_ids=nxt, cache=cache).logits[:, -1].argmax(-1, keepdim=True)
            dyn.append(nxt)
    assert torch.equal(static, torch.cat(dyn, dim=1))
    assert torch.equal(static, torch.cat(ptoks, dim=1))
    assert rt.exec_table[4].tolist() == [steps + 1, steps + 1] and int(rt.exec_table.sum()) == 2 * (steps + 1)
    assert int(dec.pos[0, 0]) == ids.shape[1] + steps
