"""The ledger attached to transformers continuous batching: the model reads the certified bytes."""

from __future__ import annotations

import json

import numpy as np
import pytest

from tests.serving.conftest import chat_ids, make_manager, run_requests
from witprobe.ledger.journal import read_records, verify
from witprobe.ledger.trace import PROMPTS
from witprobe.serving.attach import AttachError, LiveLedger, attach, detach
from witprobe.serving.config import LiveConfig
from witprobe.serving.live_gate import evaluate, failing


def _prompts(tok, n: int, warmup: bool = True) -> dict[str, list[int]]:
    p = {"warmup-0": chat_ids(tok, PROMPTS[0])} if warmup else {}
    p.update({f"req-{i}": chat_ids(tok, PROMPTS[i]) for i in range(n)})
    return p


def _wrapped(led: LiveLedger) -> dict[str, set[str]]:
    return {"cache": set(vars(led.cache)), "alloc": set(vars(led.alloc)), "sched": set(vars(led.bp.scheduler))}


def _manifest(d, n):
    (d / "manifest.json").write_text(json.dumps({"expected": {"user_requests": [f"req-{i}" for i in range(n)]}}))


def test_live_run_is_certified_and_detach_restores(paged_smollm2, tmp_path):
    m, tok = paged_smollm2.model, paged_smollm2.tokenizer
    mgr = make_manager(m)
    mgr.warmup()
    bp = mgr.batch_processor
    before = {"cache": dict(vars(bp.cache)), "alloc": dict(vars(bp.cache.cache_allocators["full_attention"])),
              "sched": dict(vars(bp.scheduler))}
    led = attach(mgr, LiveConfig(), journal=tmp_path / "journal.sqlite")
    assert {"update", "free_blocks"} <= _wrapped(led)["cache"] and "finish_request" in _wrapped(led)["sched"]
    with pytest.raises(AttachError):
        attach(mgr, LiveConfig(), journal=tmp_path / "other.sqlite")
    out = run_requests(mgr, _prompts(tok, 4), max_new_tokens=4)
    assert all(len(v) == (2 if k.startswith("warmup") else 4) for k, v in out.items())
    detach(led)
    # the engine's objects are exactly as before: the same attributes, the same values
    assert dict(vars(bp.cache)).keys() == before["cache"].keys()
    assert all(vars(bp.cache)[k] is v for k, v in before["cache"].items())
    assert vars(bp.cache.cache_allocators["full_attention"]).keys() == before["alloc"].keys()
    assert vars(bp.scheduler).keys() == before["sched"].keys()
    _manifest(tmp_path, 4)
    rep = evaluate(tmp_path)
    assert rep.passed, {k: rep.criteria[k].why for k in failing(rep)}
    res = verify(tmp_path / "journal.sqlite")
    assert res.ok and res.closed
    recs = read_records(tmp_path / "journal.sqlite")
    opens = {b["rid"]: b["uid"] for _, k, b in recs if k == "account_open"}
    assert opens[None] == 0 and set(opens) == {None, "req-0", "req-1", "req-2", "req-3"}  # accounts keyed by engine ids
    # identity on the write path: every write of a user account lies in a batch row of that request
    rows = {}
    for _, k, b in recs:
        if k == "batch":
            rows[b["batch"]] = set(u for u in b["uids"] if u is not None)
    assert all(b["uid"] in rows[b["batch"]] for _, k, b in recs if k == "write")
    # warmup wrote the shared chat-template prefix; users' prefix hits read it, attributed to uid 0
    shares = [b for _, k, b in recs if k == "prefix_share"]
    assert shares and all(0 in b["owners"] for b in shares)
    assert rep.criteria["foreign_reads==0"].value["attributed_to_writer"] > 0
    # the physical cache the model reads holds exactly the certified bytes (dequantized)
    F = led.pool.families["key"]
    written = np.nonzero(F.slots.state[0] != 0)[0]
    assert written.size
    blk, off = np.divmod(written, led.page_size)
    phys = blk * led.stride + off
    k_view, _ = led.alloc._kv_token_views[led.layers[0]]
    got = k_view[phys].to(__import__("torch").float64).numpy()  # [n, H, D]
    want = led.lut[F.served[:led.heads, written]] * np.exp2(F.scale_exp[:led.heads, written].astype(np.float64))[..., None]
    assert np.array_equal(got, want.transpose(1, 0, 2).astype(np.float32).astype(np.float64))


def test_detached_engine_generates_as_never_attached(paged_smollm2, tmp_path):
    m, tok = paged_smollm2.model, paged_smollm2.tokenizer
    prompts = _prompts(tok, 2, warmup=False)
    plain = run_requests(make_manager(m), prompts)
    mgr = make_manager(m)
    detach(attach(mgr, LiveConfig(), journal=tmp_path / "j.sqlite"))
    assert run_requests(mgr, prompts) == plain


def test_model_reads_what_the_writer_wrote_or_the_gate_fails(paged_smollm2, tmp_path, monkeypatch):
    """If the engine stored the raw states instead of the certified bytes, reads_certified_bytes fails."""
    m, tok = paged_smollm2.model, paged_smollm2.tokenizer
    orig = LiveLedger._write

    def leaky(self, plan, li, fam, x, prep):
        orig(self, plan, li, fam, x, prep)
        return x  # the uncertified states reach the cache

    monkeypatch.setattr(LiveLedger, "_write", leaky)
    mgr = make_manager(m)
    led = attach(mgr, LiveConfig(), journal=tmp_path / "journal.sqlite")
    run_requests(mgr, _prompts(tok, 2), max_new_tokens=2)
    detach(led)
    _manifest(tmp_path, 2)
    assert "reads_certified_bytes" in failing(evaluate(tmp_path))


def test_block_reuse_bumps_generation_and_changes_owner(paged_smollm2, tmp_path):
    m, tok = paged_smollm2.model, paged_smollm2.tokenizer
    mgr = make_manager(m, num_blocks=12)  # 12 blocks of 16 tokens: later requests reuse earlier blocks
    led = attach(mgr, LiveConfig(), journal=tmp_path / "journal.sqlite")
    run_requests(mgr, _prompts(tok, 6, warmup=False), max_new_tokens=2)
    detach(led)
    recs = read_records(tmp_path / "journal.sqlite")
    allocs = [b for _, k, b in recs if k == "block_alloc"]
    reused = [b for b in allocs if b["reused"]]
    assert reused, "no block was reused: the test needs cache pressure"
    gens: dict[int, int] = {}
    for b in allocs:  # each hand-over invalidates: generation + 1 per allocation of the same block
        assert b["invalidated"] and b["gen"] == gens.get(b["block"], 0) + 1
        gens[b["block"]] = b["gen"]
    uid_of = {b["rid"]: b["uid"] for _, k, b in recs if k == "account_open"}
    assert any(b["prev_owner"] >= 0 and b["prev_owner"] != uid_of[b["rid"]] for b in reused)
    _manifest(tmp_path, 6)
    rep = evaluate(tmp_path)
    assert rep.passed, {k: rep.criteria[k].why for k in failing(rep)}
