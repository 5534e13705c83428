"""The path on which a claim becomes ``certified``, and every way off it, in seconds.

A tier is ``certified`` only when the Coq kernel checked the claim's theorem. The path is
exercised three ways on a committed four-layer run (no model):

- with the real ``coqc`` (the library's build verified by hash, or built once): every claim is
  certified, and ``certify check`` confirms it;
- with a test double at ``$WITPROBE_COQC`` that accepts everything (it prints the audit for the
  audit file, ``witprobe_audit.v``, and compiles the mutation guard's file): the plumbing from kernel
  status to tier, with no kernel behind it, isolated from Coq's own speed;
- with doubles that fail, print an assumption outside the allowlist, or print no audit: every
  claim is demoted to ``empirical`` with the reason.
"""

from __future__ import annotations

import json
import os
import stat
from pathlib import Path

import pytest

from witprobe.certify.cli import main
from witprobe.certify.pipeline import write_run_dir
from witprobe.formal import coq_runner

ROOT = Path(__file__).resolve().parents[1]
RUN = ROOT / "artifacts" / "coverage" / "qwen3-int8" / "run.json"

DOUBLE = """#!/bin/sh
if [ "$1" = "--version" ]; then echo "The Coq Proof Assistant, version 0.0-test-double-{mode}"; exit 0; fi
for last; do :; done
case "$last" in *.v) : > "${{last%.v}}.vo" ;; esac
case "{mode}" in
  accept) case "$last" in */witprobe_audit.v) echo "Closed under the global context" ;; esac; exit 0 ;;
  axiom) case "$last" in */witprobe_audit.v) printf 'Axioms:\\ncheat : False\\n' ;; esac; exit 0 ;;
  silent) exit 0 ;;
  fail) case "$last" in */run.v) echo "Error: no"; exit 1 ;; esac; exit 0 ;;
  nolib) echo "Error: cannot build"; exit 1 ;;
esac
"""


def _double(tmp_path: Path, mode: str) -> Path:
    p = tmp_path / f"coqc-{mode}"
    p.write_text(DOUBLE.format(mode=mode))
    p.chmod(p.stat().st_mode | stat.S_IXUSR)
    return p


def _produce(tmp_path: Path, monkeypatch, coqc: Path | None) -> dict:
    if coqc is not None:
        monkeypatch.setenv("WITPROBE_COQC", str(coqc))
        monkeypatch.setenv("PATH", str(tmp_path))  # no real coqc behind the double
        monkeypatch.setenv("WITPROBE_CACHE", str(tmp_path / "cache"))
    out = tmp_path / "run"
    return write_run_dir(json.loads(RUN.read_text()), out, "off").certificate


def _attn(cert: dict) -> list[dict]:
    return [c for c in cert["claims"] if c["kind"] == "attn_tv"]


def test_a_kernel_that_accepts_every_theorem_certifies_every_non_vacuous_claim(tmp_path, monkeypatch):
    cert = _produce(tmp_path, monkeypatch, _double(tmp_path, "accept"))
    assert cert["kernels"]["coq"]["status"] == "checked"
    claims = _attn(cert)
    assert claims and all(not c["vacuous"] for c in claims)
    for c in claims:
        assert c["kernels"]["coq"]["status"] == coq_runner.KERNEL_CHECKED
        assert c["tier"] == "certified" and "kernel-checked by Coq" in c["tier_reason"]
    assert cert["summary"]["tiers"]["certified"] == len(claims)
    assert cert["summary"]["coq"]["kernel_checked"] == len(claims)


@pytest.mark.parametrize("mode,status,reason", [
    ("fail", coq_runner.UNCHECKED, "coqc failed outside any claim theorem"),
    ("axiom", coq_runner.REJECTED, "cheat is outside the allowlist"),
    ("silent", coq_runner.REJECTED, "Print Assumptions printed nothing"),
    ("nolib", coq_runner.UNCHECKED, "library did not build"),
])
def test_a_kernel_that_does_not_accept_demotes_every_claim_with_the_reason(tmp_path, monkeypatch, mode, status, reason):
    cert = _produce(tmp_path, monkeypatch, _double(tmp_path, mode))
    for c in _attn(cert):
        assert c["kernels"]["coq"]["status"] == status, c["kernels"]["coq"]
        assert c["tier"] == "empirical"
        assert reason in c["kernels"]["coq"]["reason"] or reason in c["tier_reason"], c["tier_reason"]
    assert cert["summary"]["tiers"]["certified"] == 0
    assert cert["summary"]["verdict"] == "pass"  # demotion is a tier, not a failed self-check


def test_a_vacuous_claim_is_never_certified_even_when_the_kernel_accepts(tmp_path, monkeypatch):
    run = json.loads(RUN.read_text())
    for layer in run["layers"]:
        layer["read"]["c_max"]["max"] = 50.0  # every form >= 1
        layer["read"]["q_coef"]["max"] = 50.0
        layer["read"]["eform_excess"]["max"] = 50.0
        layer["read"]["boxsup_bound"]["max"] = 1.0  # the box form too
    monkeypatch.setenv("WITPROBE_COQC", str(_double(tmp_path, "accept")))
    monkeypatch.setenv("PATH", str(tmp_path))
    monkeypatch.setenv("WITPROBE_CACHE", str(tmp_path / "cache"))
    cert = write_run_dir(run, tmp_path / "vac", "off").certificate
    for c in _attn(cert):
        assert c["vacuous"] and c["tier"] == "empirical" and c["kernels"]["coq"]["status"] == "none"


COQC, COQ_WHY = coq_runner.find_coqc()


@pytest.mark.skipif(COQC is None and not os.environ.get("CI"), reason=f"no Coq here: {COQ_WHY}")
def test_the_real_kernel_certifies_a_committed_run_and_check_confirms_it(tmp_path, capsys):
    cert = write_run_dir(json.loads(RUN.read_text()), tmp_path / "run", "off").certificate
    claims = _attn(cert)
    assert [c["tier"] for c in claims] == ["certified"] * len(claims), [c["tier_reason"] for c in claims]
    assert all(c["kernels"]["coq"]["status"] == coq_runner.KERNEL_CHECKED for c in claims)
    assert set(cert["kernels"]["coq"]["assumptions"]) <= coq_runner.ALLOWED_ASSUMPTIONS
    assert main(["check", str(tmp_path / "run")]) == 0, capsys.readouterr().out


def test_tier_rules_refuse_certified_for_vacuous_empirical_or_observation_claims():
    """Defence in depth: even a kernel-checked status cannot certify a vacuous bound, a chain
    with an empirical step, or an observation (each rule on its own, not only via 'no theorem')."""
    from witprobe.calculus.tiers import Tier
    from witprobe.certify.certificate import effective_tier
    from witprobe.certify.derive import derive

    claim = next(c for c in derive(json.loads(RUN.read_text())).claims if c.kind == "attn_tv")
    ok = coq_runner.KERNEL_CHECKED
    off = ("unchecked", "Lean is off")
    assert effective_tier(claim, ok, "", *off)[0] is Tier.CERTIFIED
    assert effective_tier(claim, "unchecked", "no Coq", ok, "")[0] is Tier.CERTIFIED  # either kernel certifies
    for edit, why in ((dict(vacuous=True), "vacuous"), (dict(registered_tier=Tier.EMPIRICAL), "empirical step"),
                      (dict(kind="recurrent"), "observation only"), (dict(kind="pooling"), "pooling profile"),
                      (dict(value=None, forms={}), "no reads")):
        import dataclasses

        tier, reason = effective_tier(dataclasses.replace(claim, **edit), ok, "", ok, "")
        assert tier is Tier.EMPIRICAL and why in reason, (edit, reason)
    assert effective_tier(claim, coq_runner.REJECTED, "the kernel rejected it", *off)[0] is Tier.EMPIRICAL
    assert effective_tier(claim, "none", "", "none", "")[0] is Tier.EMPIRICAL
    assert effective_tier(claim, coq_runner.REJECTED, "rejected", "rejected", "rejected")[0] is Tier.EMPIRICAL
