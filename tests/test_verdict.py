"""The verdict states its scope: what was bounded, what was not, and the end-to-end readings."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest

from witprobe.certify.run_record import RequestRecord
from witprobe.typed_json import RecordError, decode
from witprobe.certify.end_to_end import CLOSE, DIVERGED, NOT_MEASURED, EndToEndError, end_to_end
from witprobe.certify.verdict import EXIT_DIVERGED, bounded_and_not, headline, run_exit_code


def _run(tv, kl=None, served=None, ref=None, tol=None):
    served = served if served is not None else list(range(len(tv)))
    req = {"prompt_tokens": 3, "served_tokens": served, "next_token_tv": tv,
           "next_token_kl": kl if kl is not None else [0.0] * len(tv)}
    if ref is not None:
        agree = 0
        for a, b in zip(served, ref):
            if a != b:
                break
            agree += 1
        req.update(reference_tokens=ref, agreeing_prefix=agree)
    req["prompt_index"] = 0
    return [decode(RequestRecord, req, "requests[0]")], tol


def test_status_follows_the_largest_next_token_tv_against_the_tolerance():
    assert end_to_end(*_run([0.01, 0.09])).status == CLOSE
    e = end_to_end(*_run([0.01, 0.2, 0.5], ref=[0, 7, 2]))
    assert e.status == DIVERGED and e.steps_over_tolerance == 2 and e.next_token_tv_max == 0.5
    assert (e.greedy_agreeing_prefix, e.greedy_position_matches, e.greedy_total) == (1, 2, 3)
    assert end_to_end(*_run([0.01, 0.2], tol=0.25)).status == CLOSE
    assert end_to_end([RequestRecord(prompt_index=0, prompt_tokens=3, served_tokens=[1])], None).status == NOT_MEASURED


@pytest.mark.parametrize("bad, error", [
    (dict(tv=[0.1, "x"]), RecordError), (dict(tv=[0.1, -0.2]), EndToEndError),
    (dict(tv=[0.1], kl=[0.0, 0.0]), EndToEndError), (dict(tv=[1.5]), EndToEndError),
    (dict(tv=[0.1], tol=2), EndToEndError)])
def test_malformed_end_to_end_readings_fail_closed(bad, error):
    with pytest.raises(error):
        end_to_end(*_run(**bad))


def _claim(kind, layer, bound, vacuous=False, tier="empirical"):
    return {"kind": kind, "layer": layer, "id": f"L{layer:02d}.{kind}", "tier": tier, "vacuous": vacuous,
            "bound": None if bound is None else {"decimal_up": str(bound), "exact": str(bound)},
            "realized_tv_max": 0.0}


def test_a_pass_next_to_a_divergence_says_so_and_exits_5():
    claims = [_claim("attn_tv", 0, "1/100", tier="certified"), _claim("attn_tv", 1, "3", vacuous=True)]
    bounded, not_bounded = bounded_and_not(claims, True, {0: "dense_kv", 1: "dense_kv"})
    assert bounded[0]["layers"] == 1 and bounded[0]["of"] == 2
    assert any("1/2 layers" in t and "L01" in t for t in not_bounded)
    assert any("end-to-end" in t for t in not_bounded)
    diverged = end_to_end(*_run([0.9], ref=[1], served=[2])).to_json()
    text = headline(True, bounded, diverged)
    assert text.startswith("pass (per-layer bounds held") and "end-to-end DIVERGED" in text
    assert "bounded on 1/2 layers" in text
    assert run_exit_code({"verdict": "pass", "end_to_end": diverged}, 0, 1) == EXIT_DIVERGED
    assert run_exit_code({"verdict": "fail", "end_to_end": diverged}, 0, 1) == 1
    close = end_to_end(*_run([0.01])).to_json()
    assert run_exit_code({"verdict": "pass", "end_to_end": close}, 0, 1) == 0
    assert "end-to-end close" in headline(True, bounded, close)


@pytest.mark.slow
def test_int2_run_prints_pass_with_the_divergence_and_exits_5(tmp_path, smollm2):
    from witprobe.certify.cli import main

    buf = io.StringIO()
    out = tmp_path / "int2"
    with redirect_stdout(buf):
        code = main(["run", "--codec", "int2", "--max-new-tokens", "4", "--prompt", "What is the capital of France?",
                     "--out", str(out), "--coq", "off", "--lean", "off", "--quiet"])
    text = buf.getvalue()
    assert code == EXIT_DIVERGED, text
    verdict_line = next(line for line in text.splitlines() if line.startswith("verdict:"))
    assert "pass" in verdict_line and "DIVERGED" in verdict_line
    assert "end-to-end: DIVERGED" in text and "not bounded:" in text
    cert = json.loads((out / "certificate.json").read_text())
    s = cert["summary"]
    assert s["verdict"] == "pass" and s["end_to_end"]["status"] == "diverged"
    run = json.loads((out / "run.json").read_text())
    req = run["requests"][0]
    assert len(req["next_token_tv"]) == len(req["served_tokens"]) == len(req["next_token_kl"])
    assert max(req["next_token_tv"]) > 0.1
    with redirect_stdout(io.StringIO()):
        assert main(["check", str(out)]) == 0


def test_under_eviction_the_headline_states_the_eviction_scope_not_only_the_storage_tv():
    """Retained keys are stored exactly, so the storage TV is bounded on every layer; the headline
    must also say that the eviction TV is bounded on none (vacuous), not hide it."""
    claims = [_claim("attn_tv", i, "0", tier="certified") for i in range(2)]
    claims += [_claim("evict_tv", i, "1", vacuous=True) for i in range(2)]
    bounded, not_bounded = bounded_and_not(claims, True, {0: "dense_kv", 1: "dense_kv"})
    text = headline(True, bounded, end_to_end(*_run([0.01])).to_json())
    assert "attention TV bounded on 2/2 layers" in text
    assert "eviction TV bounded on 0/2 layers" in text
    assert any("eviction" in t and "2/2 layers" in t for t in not_bounded)


def test_a_bound_that_prints_as_one_but_is_below_one_is_called_nearly_vacuous():
    """An eviction bound of 1 - 2^-47 is not vacuous (it is below 1) and may be certified, but
    printed to six places it reads 1.000000: the headline says how far below 1 it is."""
    from witprobe.certify.report import print_scope

    def line(exact: str, decimal: str) -> str:
        out = io.StringIO()
        print_scope({"largest_tv_bound": {"bound": {"decimal_up": decimal, "exact": exact}, "claim": "L05.evict_tv",
                                          "tier": "certified", "realized_max": 0.99}}, out)
        return out.getvalue()

    assert "1.000000 = 1 - 7.1e-15, nearly vacuous (L05.evict_tv, certified;" in line(
        "140737488355327/140737488355328", "1.000000")
    assert "nearly" not in line("56294995342131/281474976710656", "0.200000")
