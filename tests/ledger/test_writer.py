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


@pytest.mark.parametrize("extra_drop", [0, 1])
def test_events_written_together_equal_the_events_written_one_by_one(extra_drop):
    """The serving path certifies every account's event of a layer with one vectorized draw
    (write_events): outcomes, each account's state (budget, digest, e-process) and the global
    process equal writing the events one after the other, with deterministic events (nothing
    authorized) among them, and with a coarser kernel (extra_drop=1) whose witnesses drift."""
    codes, e = _entries(n=40, seed=5)
    uid_of = np.array([1, 2, 3, 4] * 10)  # entries interleaved over four accounts, as tokens over rows
    books = []
    for _ in range(2):
        book = AccountBook(Fraction(1, 100))
        accs = {u: book.open(u, "user", f"r{u}") for u in (1, 2, 3, 4)}
        books.append((book, accs))
    w0 = CertifiedWriter(WriterConfig(nonce=7, w_thr=1e9))
    thr = float(np.median(w0.prepare(codes, e).mean)) * 8
    w = CertifiedWriter(WriterConfig(nonce=7, w_thr=thr, kernel_extra_drop=extra_drop))
    prep = w.prepare(codes, e)
    small = CertifiedWriter(WriterConfig(nonce=7, w_thr=0.0, kernel_extra_drop=extra_drop))  # authorizes nothing
    for layer, wr in ((0, w), (1, w), (2, small), (3, w)):
        book, accs = books[0]
        events = [(accs[u], np.nonzero(uid_of == u)[0]) for u in (3, 1, 4, 2)]
        together = wr.write_events(book, events, layer, prep)
        book1, accs1 = books[1]
        alone = [wr.write_event(book1, accs1[acc.uid], layer, prep, idx) for acc, idx in events]
        for a, b in zip(together, alone):
            assert (a.uid, a.counter, a.delta, a.n_authorized, a.n_violations, a.factors, a.n_no_randomness) == \
                   (b.uid, b.counter, b.delta, b.n_authorized, b.n_violations, b.factors, b.n_no_randomness)
            assert torch.equal(a.served, b.served)
            for x, y in ((a.state, b.state), (a.witness, b.witness), (a.radius, b.radius)):
                assert np.array_equal(x, y)
            assert (a.log_g is None) == (b.log_g is None) and (a.log_g is None or np.array_equal(a.log_g, b.log_g))
    (b0, a0), (b1, a1) = books
    for u in a0:
        assert a0[u].record() == a1[u].record()
    assert b0.global_eprocess.record() == b1.global_eprocess.record()
    assert a0[1].budget.n_prob_events == 3 and a0[1].budget.n_det_events == 1
    with pytest.raises(WriterError, match="one event per account"):
        w.write_events(b0, [(a0[1], np.arange(2)), (a0[1], np.arange(2, 4))], 0, prep)
