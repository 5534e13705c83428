"""The certified writer: pre-authorization before any draw, audit, in-place restoration."""

from fractions import Fraction

import numpy as np
import pytest
import torch

import witprobe.ledger.writer as writer_mod
from witprobe.ledger.accounts import AccountBook
from witprobe.ledger.slots import SlotState
from witprobe.ledger.writer import CertifiedWriter, WriterConfig, WriterError
from witprobe.memory.stochastic_rounding import encode_e4m3

D = 64


def _entries(n=12, seed=0):
    g = torch.Generator().manual_seed(seed)
    x = torch.randn(n, D, generator=g, dtype=torch.float64) * (1 + 20 * torch.rand(n, 1, generator=g, dtype=torch.float64))
    codes, e = encode_e4m3(x)
    return codes, e


def _book():
    book = AccountBook(Fraction(1, 100))
    return book, book.open(1, "user", "r1")


def test_unauthorized_entries_are_exact_and_draw_nothing(monkeypatch):
    codes, e = _entries()
    book, acc = _book()
    w = CertifiedWriter(WriterConfig(nonce=3, w_thr=1e9))
    prep = w.prepare(codes, e)
    # choose a threshold that authorizes only some entries, computed before the draw
    radius_guess = prep.mean + prep.det
    thr = float(np.median(radius_guess)) * 6
    w = CertifiedWriter(WriterConfig(nonce=3, w_thr=thr))
    drawn = []
    real = writer_mod.keyed_uniforms
    monkeypatch.setattr(writer_mod, "keyed_uniforms", lambda k, idx: (drawn.append(idx.clone()), real(k, idx))[1])
    out = w.write_event(book, acc, 0, prep, np.arange(len(codes)))
    auth = out.radius <= thr
    assert 0 < auth.sum() < len(codes)
    rows_drawn = sorted(set((torch.cat(drawn).reshape(-1) // D).tolist()))
    assert rows_drawn == np.nonzero(auth)[0].tolist(), "only authorized entries may draw"
    assert torch.equal(out.served[~torch.from_numpy(auth)], codes[~torch.from_numpy(auth)])
    assert (out.state[~auth] == SlotState.KEPT_EXACT).all()
    assert acc.budget.n_prob_events == 1 and acc.budget.spent == Fraction(1, 200)


def test_event_without_authorized_entry_is_deterministic():
    codes, e = _entries()
    book, acc = _book()
    w = CertifiedWriter(WriterConfig(nonce=3, w_thr=0.0))
    out = w.write_event(book, acc, 0, w.prepare(codes, e), np.arange(len(codes)))
    assert out.counter is None and out.delta == 0 and out.n_authorized == 0
    assert acc.budget.spent == 0 and acc.budget.n_prob_events == 0 and acc.budget.n_det_events == 1
    assert torch.equal(out.served, codes)


def test_audit_restores_exact_bytes_in_place(monkeypatch):
    codes, e = _entries(40)
    book, acc = _book()
    # a radius computed 100x too small (a bug the audit must contain): authorized, then beaten
    monkeypatch.setattr(writer_mod, "radius_up", lambda x: x / 100)
    w = CertifiedWriter(WriterConfig(nonce=3, w_thr=1e9))
    out = w.write_event(book, acc, 0, w.prepare(codes, e), np.arange(len(codes)))
    viol = out.state == SlotState.RESTORED_EXACT
    assert out.n_violations == int(viol.sum()) > 0 and acc.n_auth_violations == out.n_violations
    assert torch.equal(out.served[torch.from_numpy(viol)], codes[torch.from_numpy(viol)])
    served_w = out.witness[out.state == SlotState.MASKED]
    assert (served_w <= out.radius[out.state == SlotState.MASKED]).all(), "a served value exceeds its radius"


def test_draws_are_keyed_by_uid_layer_counter_and_rank_invariant():
    codes, e = _entries()
    outs = []
    for _ in range(2):  # two replicas
        book, acc = _book()
        w = CertifiedWriter(WriterConfig(nonce=9, w_thr=1e9))
        p = w.prepare(codes, e)
        outs.append([w.write_event(book, acc, layer, p, np.arange(len(codes))).served for layer in (0, 0, 1)])
        digest = acc.draw_digest
    assert all(torch.equal(a, b) for a, b in zip(*outs))
    assert not torch.equal(outs[0][0], outs[0][1])  # counter 0 vs 1
    assert digest == acc.draw_digest


def test_eprocess_gets_one_factor_per_authorized_random_entry():
    codes, e = _entries(30)
    book, acc = _book()
    w = CertifiedWriter(WriterConfig(nonce=3, w_thr=1e9))
    w.write_event(book, acc, 0, w.prepare(codes, e), np.arange(30))
    assert acc.eprocess.n_factors + acc.n_factors_skipped_no_randomness == acc.n_authorized == 30
    assert book.global_eprocess.n_factors == acc.eprocess.n_factors
    assert acc.eprocess.log_m_max is not None and not acc.eprocess.crossed


def test_writer_refuses_bad_configuration():
    with pytest.raises(WriterError, match="w_thr"):
        WriterConfig(nonce=1, w_thr=float("nan"))
    with pytest.raises(WriterError, match="nonce"):
        WriterConfig(nonce=2**32, w_thr=1.0)
    with pytest.raises(WriterError, match="codes"):
        CertifiedWriter(WriterConfig(nonce=1, w_thr=1.0)).prepare(torch.zeros(3, dtype=torch.uint8), torch.zeros(3))
