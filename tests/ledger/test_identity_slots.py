"""Slots, generations, identity attribution and the owner ledger."""

from fractions import Fraction

import numpy as np

from witprobe.ledger.accounts import AccountBook
from witprobe.ledger.identity import WARMUP_UID, IdentityTracker, Row, UidAllocator, attribute
from witprobe.ledger.owner import OwnerLedger
from witprobe.ledger.pool import FamilySpec, PagedPool, prefix_hashes
from witprobe.ledger.slots import SlotState, SlotTable


def _read(t: SlotTable, slots, gen, owner, reader, exp_owner=None):
    n = len(slots)
    ns = np.zeros(n, np.int64)
    return t.check_reads(ns, np.asarray(slots), np.full(n, gen), np.full(n, owner if exp_owner is None else exp_owner),
                         np.ones(n, np.int64), reader, 1.0)


def test_slot_state_machine_and_generations():
    t = SlotTable(1, 8)
    r = _read(t, [0, 1], 0, 5, 5)
    assert r.n_read_unwritten == 2  # nothing written yet
    t.write(np.zeros(2, np.int64), np.array([0, 1]), 5, np.array([SlotState.MASKED, SlotState.KEPT_EXACT], np.uint8),
            np.array([0.5, 0.0]), np.array([0.9, 0.0]), 1)
    r = _read(t, [0, 1], 0, 5, 5)
    assert (r.n_read_masked, r.n_read_kept_exact, r.n_read_unwritten, r.n_read_out_of_generation) == (1, 1, 0, 0)
    t.invalidate(np.array([0, 1]))  # reuse: unwritten, generation + 1, before any read
    assert (t.state[0, :2] == SlotState.UNWRITTEN).all() and (t.gen[0, :2] == 1).all()
    r = _read(t, [0, 1], 0, 5, 5)  # an old handle
    assert r.n_read_out_of_generation == 2
    # without invalidation, a rewrite of a live slot bumps the generation at the write (too late)
    t2 = SlotTable(1, 4)
    st = np.array([SlotState.MASKED], np.uint8)
    t2.write(np.zeros(1, np.int64), np.array([0]), 1, st, np.zeros(1), np.ones(1), 1)
    assert t2.write(np.zeros(1, np.int64), np.array([0]), 2, st, np.zeros(1), np.ones(1), 2) == 1
    assert t2.gen[0, 0] == 1 and t2.n_reuse_at_write == 1


def test_foreign_reads_attributed_to_writer_and_spend_once():
    book = AccountBook(Fraction(1, 100))
    writer = book.open(1, "user", "a")
    writer.budget.spend()  # the write event's delta, once
    t = SlotTable(1, 4)
    t.write(np.zeros(4, np.int64), np.arange(4), 1, np.full(4, SlotState.MASKED, np.uint8), np.zeros(4), np.ones(4), 1)
    ledger = OwnerLedger()
    for reader in (2, 3, 4):  # three readers share the prefix written by uid 1
        r = _read(t, range(4), 0, 1, reader, exp_owner=1)
        assert r.n_read_foreign_attributed == 4 and r.n_read_foreign_unattributed == 0
        ledger.attribute(reader, t.owner[0, :4], np.ones(4, np.int64))
        book.get_or_open(reader, "user", str(reader))
    assert ledger.reads_by_writer[1] == 12
    assert writer.budget.spent == Fraction(1, 200)  # however many readers
    assert all(book.get(u).budget.spent == 0 for u in (2, 3, 4))
    # a reader whose handle expects another writer: unattributed
    r = _read(t, range(4), 0, 1, 2, exp_owner=2)
    assert r.n_read_foreign_unattributed == 4


def test_uids_are_monotone_and_request_start_is_on_the_write_path():
    ids = IdentityTracker()
    assert ids.row_uid(Row("a", "decode", 1, 5)) is None  # decode before any extend: unattributable
    u1 = ids.row_uid(Row("a", "extend", 24, 24))
    assert ids.row_uid(Row("a", "extend", 13, 37)) == u1  # chunked prefill stays in one account
    assert ids.row_uid(Row("a", "decode", 1, 38)) == u1
    u2 = ids.row_uid(Row("b", "extend", 10, 10))
    assert u2 > u1 > WARMUP_UID
    assert ids.row_uid(Row(None, "extend", 8, 8, warmup=True)) == WARMUP_UID
    split = IdentityTracker(split_on_every_extend=True)
    s1 = split.row_uid(Row("a", "extend", 24, 24))
    assert split.row_uid(Row("a", "extend", 13, 37)) != s1  # the fault the gate must catch
    alloc = UidAllocator()
    seen = [alloc.new() for _ in range(1000)]
    assert seen == sorted(set(seen)) and WARMUP_UID not in seen


def test_seq_len_drop_fallback_is_counted():
    ids = IdentityTracker()
    a = ids.row_uid(Row(None, "decode", 1, 10, position=0))
    assert ids.row_uid(Row(None, "decode", 1, 11, position=0)) == a
    b = ids.row_uid(Row(None, "extend", 4, 4, position=0))  # the length dropped: a new request
    assert b != a and ids.uid_group_fallbacks == 3


def test_per_row_attribution_segments_by_extend_prefix_sums():
    rows = [Row("a", "extend", 3, 3), Row("b", "decode", 1, 9), Row("c", "extend", 2, 2)]
    assert attribute(rows, [7, 8, 9], 6).tolist() == [7, 7, 7, 8, 9, 9]
    assert attribute(rows, [7, 8, 9], 7) is None  # the plan does not cover the entries
    assert attribute(rows, [7, None, 9], 6) is None
    assert attribute([Row("a", "decode", 2, 3)], [1], 2) is None  # decode rows carry one token


def test_pool_reuse_invalidates_and_prefix_lookup_validates_generation():
    for invalidate in (True, False):
        pool = PagedPool([FamilySpec("key", 4)], {"key": 2}, 1, 8, invalidate_on_reuse=invalidate)
        F = pool.families["key"]
        toks = list(range(8))
        pages = F.allocate(2)
        F.slots.write(np.zeros(8, np.int64), np.arange(8), 1, np.full(8, SlotState.MASKED, np.uint8), np.zeros(8), np.ones(8), 1)
        hashes = prefix_hashes(toks, 4, 2)
        F.release(pages, {p: (h, 1) for p, h in zip(pages, hashes)})
        stolen = F.allocate(1)  # LRU eviction: the first cached page goes to a new owner
        hits = F.lookup(hashes)
        if invalidate:
            assert hits == [] and F.n_prefix_stale_dropped == 1
        else:
            assert [h.page for h in hits][:1] == stolen  # a stale page is attached: the hazard


def test_entry_level_read_fallback_is_per_entry():
    t = SlotTable(1, 4)
    t.write(np.zeros(4, np.int64), np.arange(4), 1, np.full(4, SlotState.MASKED, np.uint8),
            np.array([0.1, 0.5, 0.2, 0.9]), np.ones(4), 1)
    r = t.check_reads(np.zeros(4, np.int64), np.arange(4), np.zeros(4, np.int64), np.ones(4, np.int64),
                      np.array([1, 2, 3, 4]), 1, 0.3)
    assert r.n_retained == 1 + 3 and r.n_fallback_exact_read == 2 + 4  # only the failing entries fall back
    assert r.n_served_over_radius == 0 and r.n_reads == 10


def _reference_tally(t: SlotTable, ns, slots, exp_gen, exp_owner, mult, reader, w_thr) -> dict:
    """The read-check rules entry by entry, written out (the spec the vectorized tallies must equal)."""
    out = dict.fromkeys(("n_reads", "n_read_unwritten", "n_read_out_of_generation", "n_read_masked", "n_read_kept_exact",
                         "n_read_restored_exact", "n_read_foreign_attributed", "n_read_foreign_unattributed", "n_retained",
                         "n_fallback_exact_read", "n_served_over_radius"), 0)
    for n, s, g, o, m, r in zip(ns, slots, exp_gen, exp_owner, mult, reader):
        st, own, w, rad = int(t.state[n, s]), int(t.owner[n, s]), float(t.witness[n, s]), float(t.radius[n, s])
        out["n_reads"] += m
        if t.gen[n, s] != g:
            out["n_read_out_of_generation"] += m
            continue
        if st == SlotState.UNWRITTEN:
            out["n_read_unwritten"] += m
            continue
        name = {SlotState.MASKED: "n_read_masked", SlotState.KEPT_EXACT: "n_read_kept_exact",
                SlotState.RESTORED_EXACT: "n_read_restored_exact"}[st]
        out[name] += m
        if own != r:
            out["n_read_foreign_attributed" if own == o else "n_read_foreign_unattributed"] += m
        elif o != r:
            out["n_read_foreign_unattributed"] += m
        if st == SlotState.MASKED:
            out["n_retained" if w <= w_thr else "n_fallback_exact_read"] += m
            out["n_served_over_radius"] += m if w > rad else 0
    return out


def test_segmented_read_checks_equal_the_rules_entry_by_entry():
    """The serving read path checks all rows of a batch at once (one segment per row, a reader per
    entry): each segment's tally equals the read-check rules applied entry by entry, and so does
    the one-reader check."""
    rng = np.random.default_rng(7)
    t = SlotTable(4, 32)
    t.state[:] = rng.integers(0, 4, t.state.shape)
    t.gen[:] = rng.integers(0, 2, t.gen.shape)
    t.owner[:] = rng.integers(-1, 4, t.owner.shape)
    t.witness[:] = rng.uniform(0, 1, t.witness.shape)
    t.radius[:] = rng.uniform(0, 1, t.radius.shape)
    for trial in range(20):
        sizes = rng.integers(1, 40, rng.integers(1, 6))
        n = int(sizes.sum())
        ns, slots = rng.integers(0, 4, n), rng.integers(0, 32, n)
        exp_gen, exp_owner = rng.integers(0, 2, n), rng.integers(-1, 4, n)
        mult = rng.integers(1, 9, n)
        reader = np.repeat(rng.integers(0, 4, sizes.size), sizes)
        starts = np.concatenate([[0], np.cumsum(sizes)[:-1]])
        got = t.check_read_segments(ns, slots, exp_gen, exp_owner, mult, reader, 0.5, starts)
        assert len(got) == sizes.size
        for k, (a, b) in enumerate(zip(starts, starts + sizes)):
            want = _reference_tally(t, ns[a:b], slots[a:b], exp_gen[a:b], exp_owner[a:b], mult[a:b], reader[a:b], 0.5)
            assert got[k].__dict__ == want, (trial, k)
            one = t.check_reads(ns[a:b], slots[a:b], exp_gen[a:b], exp_owner[a:b], mult[a:b], int(reader[a]), 0.5)
            assert one.__dict__ == want, (trial, k)
    assert t.check_reads(*(np.zeros(0, np.int64),) * 5, 1, 0.5).__dict__ == _reference_tally(t, [], [], [], [], [], [], 0.5)
