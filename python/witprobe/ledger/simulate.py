"""Online ledger under real concurrency: recorded SmolLM2 traffic over one shared paged pool.

``simulate`` serves the recorded requests of a trace (``writes.parquet``: the exact e4m3 bytes
of every key and value entry SmolLM2 wrote, with the queries' norms) the way a batching server
does, with ``workers`` threads executing batches concurrently over one :class:`PagedPool`:

- **warmup**: requests without identity (warmup account, uid 0) run first, serially, prefill
  only, until the pool is full of cached pages; the first one repeats the first user prompt;
- **admission**: the user requests arrive together and are admitted in order (the repeated
  prompt last): prefix-cache lookup (validated by generation), then page allocation, evicting
  cached pages in LRU order (each eviction is a reuse: invalidation);
- **batches**: the scheduler groups ready requests into batches of 1 to ``max_rows`` rows
  (chunked prefill extend rows, or decode rows of one token), allocating pages on demand; a
  request is in at most one batch at a time; workers execute batches in parallel;
- **execution of a batch**, per layer and family: the certified write of the batch's new entries
  (attributed row by row, one write event per account), then every read of every row checked
  against the slot table (state, generation, owner) and served bytes re-audited;
- every write event and read summary is appended to the journal; account records at the end.

Outputs in ``out``: ``journal.rank{r}.sqlite`` (the primary record; its record kinds are the
contract listed in :mod:`witprobe.ledger.acceptance`), ``ledger.rank{r}.json`` (a cache of what the
journal says, which the gate compares against it) and ``manifest.json`` (what was submitted).
The global e-process is folded in journal order (under the engine's journal lock), so the gate
re-derives it from the journal exactly.
"""

from __future__ import annotations

import concurrent.futures as cf
import json
import random
import threading
from dataclasses import asdict, dataclass, field
from fractions import Fraction
from pathlib import Path
from typing import Any

import numpy as np
import torch

from witprobe.calculus.rounding import fraction_text
from witprobe.ledger.accounts import AccountBook, emitted_metrics
from witprobe.ledger.certificates import tv_step_bound
from witprobe.ledger.eprocess import DELTA_E, KAPPA
from witprobe.ledger.identity import WARMUP_UID, IdentityTracker, Row, attribute
from witprobe.ledger.journal import Journal
from witprobe.ledger.owner import OwnerLedger
from witprobe.ledger.pool import FamilySpec, PagedPool, prefix_hashes
from witprobe.ledger.sentinel import BlockId, BlockRecord
from witprobe.ledger.slots import ReadTally
from witprobe.ledger.trace import FAMILIES, WRITES_FILE, TraceError, load_manifest
from witprobe.ledger.writer import CertifiedWriter, WriterConfig
from witprobe.safe_output import atomic_write

FAULTS = ("none", "no-reuse-invalidation", "family-collision", "split-accounts", "drop-plan", "sr-coarse")
DEFAULT_AUTH_THR = {"key": 9.0, "value": 0.3}
DEFAULT_PAGE_SIZE = {"key": 16, "value": 8}
WARMUP_SALT = 1 << 40


@dataclass(frozen=True)
class SimConfig:
    """Knobs of one simulated serving run (all recorded in the manifest)."""

    trace: Path
    accounts: int = 8
    workers: int = 8
    ranks: int = 1
    nonce: int = 0x5EED
    delta_req: Fraction = Fraction(1, 100)
    drop_bits: int = 2
    bands: int = 1
    auth_thr: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_AUTH_THR))
    read_thr: dict[str, float] = field(default_factory=lambda: dict(DEFAULT_AUTH_THR))
    page_size: dict[str, int] = field(default_factory=lambda: dict(DEFAULT_PAGE_SIZE))
    prefill_chunk: int = 24
    max_rows: int = 3
    decode_steps: int | None = None
    fault: str = "none"
    seed: int = 0
    synchronous: str = "NORMAL"
    max_active: int = 0  # requests in flight at once (0: all admitted together); admission in order
    pool_extra_tokens: int = 0  # pool capacity beyond the users' need; warmup fills only the base capacity
    sign_key: Path | None = None  # Ed25519 private key: each journal ends with a signed head (never recorded)

    def validate(self) -> None:
        if self.fault not in FAULTS:
            raise ValueError(f"unknown fault {self.fault!r}; choose from {', '.join(FAULTS)}")
        if self.accounts < 1 or self.workers < 1 or self.ranks < 1:
            raise ValueError("accounts, workers and ranks must be positive")
        if self.prefill_chunk < 1 or self.max_rows < 1:
            raise ValueError("prefill_chunk and max_rows must be positive")
        if self.max_active < 0 or self.pool_extra_tokens < 0:
            raise ValueError("max_active and pool_extra_tokens must be nonnegative")
        if not 0 <= self.nonce < 2**32:
            raise ValueError(f"nonce {self.nonce} does not fit 32 bits")
        for name in FAMILIES:
            for what, d in (("auth_thr", self.auth_thr), ("read_thr", self.read_thr), ("page_size", self.page_size)):
                if name not in d:
                    raise ValueError(f"{what} has no value for family {name!r}")
        for what, d in (("auth_thr", self.auth_thr), ("read_thr", self.read_thr)):
            unknown = sorted(set(d) - set(FAMILIES))
            if unknown:
                raise ValueError(f"{what} names unknown families {', '.join(map(repr, unknown))}; "
                                 f"known: {', '.join(FAMILIES)}")

    def as_dict(self) -> dict[str, Any]:
        d = asdict(self)
        del d["sign_key"]  # where the private key lives is no part of the run's record
        d["trace"] = str(self.trace)
        d["delta_req"] = fraction_text(self.delta_req)
        return d


# --- the trace ------------------------------------------------------------------------------------


@dataclass
class RecordedRequest:
    """Entries of one recorded request: codes ``[family] (layers, heads, positions, D)`` etc."""

    index: int
    tokens: list[int]
    prompt_len: int
    codes: dict[str, np.ndarray]
    scale_exp: dict[str, np.ndarray]
    qn: np.ndarray  # (layers, heads, positions) float64

    @property
    def n_positions(self) -> int:
        return self.qn.shape[-1]


def load_trace(trace_dir: Path) -> tuple[dict[str, Any], list[RecordedRequest]]:
    """Read ``writes.parquet`` into per-request arrays (validated against the manifest)."""
    import pyarrow.parquet as pq

    man = load_manifest(trace_dir)
    path = Path(trace_dir) / WRITES_FILE
    if not path.is_file():
        raise TraceError(f"{path} not found")
    t = pq.read_table(path)
    cols = {c: t.column(c).to_numpy() for c in ("request", "family", "layer", "head", "position", "scale_exp", "qn")}
    d = int(man["head_dim"])
    codes = np.frombuffer(b"".join(t.column("codes").to_pylist()), np.uint8).reshape(-1, d)
    layers = sorted(int(x) for x in np.unique(cols["layer"]))
    heads = int(cols["head"].max()) + 1
    out = []
    for r in sorted(int(x) for x in np.unique(cols["request"])):
        n_pos = int(cols["position"][cols["request"] == r].max()) + 1
        rq = RecordedRequest(r, list(man["tokens"][r][:n_pos]), int(man["prompt_lengths"][r]), {}, {},
                             np.zeros((len(layers), heads, n_pos)))
        for fi, fam in enumerate(FAMILIES):
            m = (cols["request"] == r) & (cols["family"] == fi)
            li = np.searchsorted(layers, cols["layer"][m])
            arr = np.zeros((len(layers), heads, n_pos, d), np.uint8)
            se = np.zeros((len(layers), heads, n_pos), np.int16)
            arr[li, cols["head"][m], cols["position"][m]] = codes[m]
            se[li, cols["head"][m], cols["position"][m]] = cols["scale_exp"][m]
            if int(m.sum()) != len(layers) * heads * n_pos:
                raise TraceError(f"request {r} family {fam}: {int(m.sum())} rows, expected {len(layers) * heads * n_pos}")
            rq.codes[fam], rq.scale_exp[fam] = arr, se
            rq.qn[li, cols["head"][m], cols["position"][m]] = cols["qn"][m].astype(np.float64)
        out.append(rq)
    return {**man, "sim_layers": layers, "heads": heads}, out


# --- requests in flight ------------------------------------------------------------------------


@dataclass
class FamilyTable:
    """A request's page table in one family and its per-position read handles."""

    pages: list[int] = field(default_factory=list)
    slot: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    exp_gen: np.ndarray = field(default_factory=lambda: np.zeros((0, 0), np.int64))  # (ns, positions)
    exp_owner: np.ndarray = field(default_factory=lambda: np.zeros(0, np.int64))
    page_hashes: dict[int, tuple[int, int]] = field(default_factory=dict)


@dataclass
class Request:
    rid: str | None
    rec: RecordedRequest
    length: int  # positions this request will hold
    prompt_len: int
    salt: int
    warmup: bool
    uid: int | None = None
    pos: int = 0  # positions written so far (including prefix hits)
    tables: dict[str, FamilyTable] = field(default_factory=dict)
    hit_len: int = 0
    done: bool = False

    def tokens(self) -> list[int]:
        return [t + self.salt for t in self.rec.tokens[: self.length]]


class Engine:
    """One replica: pool, accounts, journal, identity, writer; executes batches from worker threads."""

    def __init__(self, cfg: SimConfig, meta: dict[str, Any], out: Path, rank: int = 0) -> None:
        self.cfg, self.meta, self.rank = cfg, meta, rank
        self.layers: list[int] = meta["sim_layers"]
        self.heads: int = meta["heads"]
        self.n_ns = len(self.layers) * self.heads
        self.book = AccountBook(cfg.delta_req)
        self.owner = OwnerLedger()
        self.identity = IdentityTracker(split_on_every_extend=cfg.fault == "split-accounts")
        self.writers = {
            fam: CertifiedWriter(WriterConfig(nonce=cfg.nonce, w_thr=cfg.auth_thr[fam], drop_bits=cfg.drop_bits,
                                              bands=cfg.bands, kernel_extra_drop=1 if cfg.fault == "sr-coarse" else 0))
            for fam in FAMILIES
        }
        signer = None
        if cfg.sign_key is not None:
            from witprobe.signing import load_private

            signer = load_private(cfg.sign_key)
        self.journal = Journal(out / f"journal.rank{rank}.sqlite", synchronous=cfg.synchronous, signer=signer, header={
            "delta_req": fraction_text(cfg.delta_req), "rank": rank, "nonce": cfg.nonce, "config": cfg.as_dict(),
            "eprocess": {"kappa": KAPPA, "delta_e": DELTA_E}})
        self.pool: PagedPool | None = None
        self.record: BlockRecord | None = None  # the writer's per-block digests (the sampling sentinel's reference)
        self.lut = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).to(torch.float64).numpy()
        self.lut[np.isnan(self.lut)] = 0.0
        self.batch_rows: list[int] = []
        self.n_read_checks = 0
        self.n_write_events = 0
        self._lock = threading.Lock()
        self._journal_lock = threading.Lock()  # global e-process fold + journal append, in one order
        self.book.open(WARMUP_UID, "warmup", None)
        self.journal.append("account_open", {"rank": rank, "uid": WARMUP_UID, "rid": None, "kind": "warmup"})

    # --- pool geometry and allocation (scheduler thread) ---------------------------------------
    def build_pool(self, users: list[Request]) -> None:
        n_pages = {}
        lcm = int(np.lcm.reduce([self.cfg.page_size[f] for f in FAMILIES]))
        tokens = sum(-(-u.length // lcm) * lcm for u in users) + 2 * lcm  # equal token capacity per family
        self.warmup_tokens = tokens
        tokens += -(-self.cfg.pool_extra_tokens // lcm) * lcm
        for fam in FAMILIES:
            n_pages[fam] = tokens // self.cfg.page_size[fam]
        self.pool = PagedPool([FamilySpec(f, self.cfg.page_size[f]) for f in FAMILIES], n_pages, self.n_ns,
                              int(self.meta["head_dim"]),
                              invalidate_on_reuse=self.cfg.fault != "no-reuse-invalidation",
                              collide_families=self.cfg.fault == "family-collision")
        self.journal.append("pool", {
            "rank": self.rank, "namespaces_disjoint": self.pool.namespaces_disjoint(),
            "invalidate_on_reuse": self.pool.invalidate_on_reuse,
            "families": {f: {"page_size": self.cfg.page_size[f], "n_pages": n_pages[f]} for f in FAMILIES}})
        self.record = BlockRecord([(f, pg) for f in FAMILIES for pg in range(n_pages[f])], self.block_bytes)

    def block_bytes(self, block: BlockId) -> np.ndarray:
        """The served bytes of one block (page) over all namespaces: a view ``(ns, page_size, D)``."""
        assert self.pool is not None
        F = self.pool.families[block[0]]
        return F.served[:, block[1] * F.page_size:(block[1] + 1) * F.page_size]

    def overwrite_block(self, block: BlockId, data: np.ndarray) -> None:
        """Store raw bytes into a block *without* the writer (no record update): a fault injector."""
        self.block_bytes(block)[...] = data

    def admit(self, req: Request) -> None:
        """Prefix lookup (both families must agree on a hit length), then prompt pages."""
        assert self.pool is not None
        toks = req.tokens()
        hit_len = None
        hits_by_fam = {}
        for fam, F in self.pool.families.items():
            n_full = (req.prompt_len - 1) // F.page_size if not req.warmup else 0
            hits = F.lookup(prefix_hashes(toks, F.page_size, n_full)) if n_full else []
            hits_by_fam[fam] = hits
            hl = len(hits) * F.page_size
            hit_len = hl if hit_len is None else min(hit_len, hl)
        hit_len = hit_len or 0
        for fam, F in self.pool.families.items():
            keep = hit_len // F.page_size
            hits = hits_by_fam[fam]
            if len(hits) > keep:  # release the pins beyond the common hit length
                F.release([h.page for h in hits[keep:]], {})
            hits = hits[:keep]
            tab = FamilyTable()
            tab.slot = np.full(req.length, -1, np.int64)
            tab.exp_gen = np.full((self.n_ns, req.length), -1, np.int64)
            tab.exp_owner = np.full(req.length, -1, np.int64)
            hashes = prefix_hashes(toks, F.page_size, req.length // F.page_size)
            for i, h in enumerate(hits):
                tab.pages.append(h.page)
                sl = F.page_slots(h.page)
                rng = slice(i * F.page_size, (i + 1) * F.page_size)
                tab.slot[rng] = sl
                tab.exp_gen[:, rng] = h.gen
                tab.exp_owner[rng] = h.owner
                tab.page_hashes[h.page] = (hashes[i], h.owner)
            req.tables[fam] = tab
        req.hit_len = hit_len
        req.pos = hit_len
        self.ensure_pages(req, min(req.length, max(req.prompt_len, hit_len)))

    def ensure_pages(self, req: Request, upto: int) -> None:
        assert self.pool is not None
        for fam, F in self.pool.families.items():
            tab = req.tables[fam]
            need = -(-upto // F.page_size) - len(tab.pages)
            if need > 0:
                for page in F.allocate(need):
                    i = len(tab.pages)
                    tab.pages.append(page)
                    rng = slice(i * F.page_size, min((i + 1) * F.page_size, req.length))
                    n = rng.stop - rng.start
                    tab.slot[rng] = F.page_slots(page)[:n]

    def finish(self, req: Request) -> None:
        assert self.pool is not None
        req.done = True
        for fam, F in self.pool.families.items():
            F.release(req.tables[fam].pages, req.tables[fam].page_hashes)

    # --- one batch (worker thread) -------------------------------------------------------------
    def run_batch(self, batch: list[tuple[Request, int, int]], batch_id: int) -> None:
        """Execute rows ``(request, start, end)``: write positions [start, end), then read."""
        assert self.pool is not None
        rows = [Row(rid=r.rid, mode="extend" if s < r.prompt_len else "decode", n_tokens=e - s, seq_len=e,
                    position=i, warmup=r.warmup) for i, (r, s, e) in enumerate(batch)]
        row_uids = [self.identity.row_uid(row) for row in rows]
        n_fallback = sum(1 for row in rows if row.rid is None and not row.warmup)  # IdentityTracker's fallback rule
        if n_fallback:
            self.journal.append("identity_fallback", {"rank": self.rank, "n_rows": n_fallback})
        for (req, _s, _e), uid in zip(batch, row_uids):
            if uid is not None:
                if uid not in self.book.accounts:
                    self.book.open(uid, "user", req.rid)
                    self.journal.append("account_open", {"rank": self.rank, "uid": uid, "rid": req.rid, "kind": "user"})
                req.uid = uid
        n_tok = sum(e - s for _, s, e in batch)
        plan_tokens = n_tok + (1 if self.cfg.fault == "drop-plan" and batch_id % 7 == 3 else 0)
        tok_uid = attribute(rows, row_uids, plan_tokens)
        tallies: dict[int, ReadTally] = {}
        for li in range(len(self.layers)):
            for fam in FAMILIES:
                self._write(batch, li, fam, tok_uid, n_tok)
                self._read(batch, li, fam, tallies)
        if tallies:  # one read summary per batch and account (reads are deterministic: delta = 0)
            self.journal.append_many([("reads", {"rank": self.rank, "uid": uid, **asdict(t)})
                                      for uid, t in sorted(tallies.items())])

    def _write(self, batch, li: int, fam: str, tok_uid: np.ndarray | None, n_tok: int) -> None:
        assert self.pool is not None
        F = self.pool.families[fam]
        H = self.heads
        codes = np.concatenate([r.rec.codes[fam][li, :, s:e, :].transpose(1, 0, 2).reshape(-1, F.dim) for r, s, e in batch])
        sexp = np.concatenate([r.rec.scale_exp[fam][li, :, s:e].T.reshape(-1) for r, s, e in batch])
        slots = np.concatenate([r.tables[fam].slot[s:e] for r, s, e in batch])
        ns = li * H + np.tile(np.arange(H), n_tok)
        slot_e = np.repeat(slots, H)
        owners_by_tok = np.concatenate([np.full(e - s, r.uid if r.uid is not None else -1) for r, s, e in batch])
        records: list[tuple[str, dict[str, Any]]] = []
        folds = []
        if tok_uid is None:  # fail closed: exact bytes, no spend, counted
            self.identity.fail_closed(int(codes.shape[0]))
            self._store(F, ns, slot_e, codes, codes, sexp)
            state = np.full(codes.shape[0], 2, np.uint8)
            zero = np.zeros(codes.shape[0])
            for own in np.unique(owners_by_tok):
                m = np.repeat(owners_by_tok == own, H)
                F.slots.write(ns[m], slot_e[m], int(own), state[m], zero[m], zero[m], -1)
            records.append(("fail_closed", {"rank": self.rank, "family": fam, "layer": self.layers[li], "n_entries": int(codes.shape[0])}))
            self._refresh_handles(batch, fam, li)
            self._commit(records, [])
            return
        writer = self.writers[fam]
        prep = writer.prepare(torch.from_numpy(codes), torch.from_numpy(sexp.astype(np.int64)))
        ent_uid = np.repeat(tok_uid, H)
        for uid in dict.fromkeys(ent_uid.tolist()):
            idx = np.nonzero(ent_uid == uid)[0]
            acc = self.book.get(uid)
            # the "layer" part of the RNG key (nonce, uid, layer, counter) is layer * families + family,
            # so the key and value events of one layer draw from distinct streams
            out = writer.write_event(self.book, acc, self.layers[li] * len(FAMILIES) + FAMILIES.index(fam), prep, idx,
                                     fold_global=False)
            folds.append(out.factors)
            with self._lock:
                self.n_write_events += 1
                wid = self.n_write_events
            self._store(F, ns[idx], slot_e[idx], out.served.numpy(), codes[idx], sexp[idx])
            n_live = F.slots.write(ns[idx], slot_e[idx], uid, out.state, out.witness, out.radius, wid)
            if n_live:
                with acc.lock:
                    acc.n_slot_reuses += n_live
            records.append(("write", {
                "rank": self.rank, "uid": uid, "family": fam, "layer": self.layers[li], "write_id": wid,
                "counter": out.counter, "delta": fraction_text(out.delta), "spent": fraction_text(acc.budget.spent),
                "n_entries": int(idx.size), "n_authorized": out.n_authorized, "n_violations": out.n_violations,
                "n_live_rewritten": n_live, "n_no_randomness": out.n_no_randomness,
                "ep_n": out.factors.n, "ep_sum": out.factors.total, "ep_max": out.factors.prefix_max,
            }))
        self._refresh_handles(batch, fam, li)
        self._commit(records, folds)

    def _commit(self, records: list[tuple[str, dict[str, Any]]], folds: list) -> None:
        """Append records and fold their e-process summaries into the global process, in one order."""
        with self._journal_lock:
            for f in folds:
                self.book.global_eprocess.add_summary(f)
            self.journal.append_many(records)

    def _store(self, F, ns, slots, served, exact, sexp) -> None:
        F.served[ns, slots] = served
        F.exact[ns, slots] = exact
        F.scale_exp[ns, slots] = sexp
        if self.record is not None:
            for page in np.unique(np.asarray(slots) // F.page_size).tolist():
                self.record.commit((F.spec.name, page))

    def _refresh_handles(self, batch, fam: str, li: int) -> None:
        """The writer's own handles take the generation its write left (owner = itself)."""
        assert self.pool is not None
        F = self.pool.families[fam]
        ns = li * self.heads + np.arange(self.heads)
        for r, s, e in batch:
            tab = r.tables[fam]
            sl = tab.slot[s:e]
            tab.exp_gen[np.ix_(ns, np.arange(s, e))] = F.slots.gen[np.ix_(ns, sl)]
            tab.exp_owner[s:e] = r.uid if r.uid is not None else -1

    def _read(self, batch, li: int, fam: str, tallies: dict[int, ReadTally]) -> None:
        assert self.pool is not None
        F = self.pool.families[fam]
        H = self.heads
        for r, s, e in batch:
            if r.uid is None:
                continue
            tab = r.tables[fam]
            p = np.arange(e)
            mult = (e - np.maximum(p, s)).astype(np.int64)  # queries in [s, e) that see position p
            ns = (li * H + np.arange(H))[:, None].repeat(e, 1).ravel()
            sl = np.tile(tab.slot[:e], H)
            eg = tab.exp_gen[li * H:(li + 1) * H, :e].ravel()
            eo = np.tile(tab.exp_owner[:e], H)
            mm = np.tile(mult, H)
            t = F.slots.check_reads(ns, sl, eg, eo, mm, r.uid, self.cfg.read_thr[fam])
            t.n_served_over_radius += self._audit_bytes(F, ns, sl, mm)
            self.owner.attribute(r.uid, F.slots.owner[ns, sl], mm)
            acc = self.book.get(r.uid)
            qn = float(r.rec.qn[li, :, s:e].max())
            tallies.setdefault(r.uid, ReadTally()).add(t)
            with acc.lock:
                acc.read.add(t)
                acc.n_read_steps += 1
                if fam == "key":
                    acc.qn_max = qn if acc.qn_max is None else max(acc.qn_max, qn)
            with self._lock:
                self.n_read_checks += t.n_reads

    def _audit_bytes(self, F, ns, sl, mult) -> int:
        """Re-derive ``W`` from the served and exact bytes of masked entries; count any above radius."""
        masked = F.slots.state[ns, sl] == 1
        if not masked.any():
            return 0
        n, s = ns[masked], sl[masked]
        scale = np.exp2(F.scale_exp[n, s].astype(np.float64))
        d = (self.lut[F.served[n, s]] - self.lut[F.exact[n, s]])
        b = self.cfg.bands
        w = np.sqrt((d.reshape(d.shape[0], b, -1) ** 2).sum(-1)).sum(-1) * scale
        return int(mult[masked][w > F.slots.radius[n, s]].sum())

    # --- records ----------------------------------------------------------------------------------
    def snapshot(self) -> dict[str, Any]:
        assert self.pool is not None
        accounts = [a.record() for a in sorted(self.book.accounts.values(), key=lambda a: a.uid)]
        for a in accounts:
            a["reads_by_others"] = int(self.owner.reads_by_writer.get(a["uid"], 0))
            a["tv_step_bound_key"] = (float(tv_step_bound(a["qn_max"], self.cfg.read_thr["key"]))
                                      if a["qn_max"] is not None else None)
        fams = {name: {**F.stats(), "slots_invalidated": F.slots.n_invalidated,
                       "slots_reused_at_write": F.slots.n_reuse_at_write} for name, F in self.pool.families.items()}
        return {
            "rank": self.rank,
            "metrics": emitted_metrics(),
            "accounts": accounts,
            "eprocess_global": self.book.global_eprocess.record(),
            "identity": {
                "uids_issued": self.identity.uids.issued,
                "accounts_opened": [{"uid": u, "rid": r} for u, r in self.identity.opened],
                "uid_group_fallbacks": self.identity.uid_group_fallbacks,
                "identity_fail_closed": self.identity.identity_fail_closed,
                "identity_fail_closed_batches": self.identity.identity_fail_closed_batches,
            },
            "pool": {"families": fams, "namespaces_disjoint": self.pool.namespaces_disjoint(),
                     "invalidate_on_reuse": self.pool.invalidate_on_reuse},
            "n_read_checks": self.n_read_checks,
            "n_write_events": self.n_write_events,
            "batch_rows": {str(k): self.batch_rows.count(k) for k in sorted(set(self.batch_rows))},
            "journal": {"path": self.journal.path.name, "head_seq": self.journal.head[0]},
        }


def _requests(cfg: SimConfig, recs: list[RecordedRequest]) -> list[Request]:
    if cfg.accounts > len(recs):
        raise ValueError(f"the trace holds {len(recs)} recorded requests; --accounts {cfg.accounts} is too many")
    users = []
    for i in range(cfg.accounts):
        rec = recs[i]
        steps = rec.n_positions - rec.prompt_len if cfg.decode_steps is None else min(cfg.decode_steps, rec.n_positions - rec.prompt_len)
        users.append(Request(rid=f"req-{i}", rec=rec, length=rec.prompt_len + steps, prompt_len=rec.prompt_len,
                             salt=0, warmup=False))
    return users


def _warmups(users: list[Request], recs: list[RecordedRequest], eng: Engine) -> list[Request]:
    """Warmup requests that fill the pool with cached pages; the first repeats the first user prompt."""
    assert eng.pool is not None
    fams = list(eng.pool.families.values())
    lcm = int(np.lcm.reduce([F.page_size for F in fams]))
    cap = eng.warmup_tokens  # the base capacity (extra capacity stays free)
    first = users[0].prompt_len
    out = [Request(rid=None, rec=users[0].rec, length=first, prompt_len=first, salt=0, warmup=True)]
    total, k = -(-first // lcm) * lcm, 0
    while total < cap:  # later warmups fill the rest in whole pages of every family
        rec = recs[k % len(recs)]
        n = min(rec.n_positions // lcm * lcm, cap - total)
        out.append(Request(rid=None, rec=rec, length=n, prompt_len=n, salt=WARMUP_SALT * (k + 1), warmup=True))
        total += n
        k += 1
    return out


def run_rank(cfg: SimConfig, out: Path, rank: int = 0, progress: bool = False) -> dict[str, Any]:
    """Serve the trace on one replica with ``cfg.workers`` threads; write ledger + journal files."""
    return serve(cfg, out, rank, progress)[1]


def serve(cfg: SimConfig, out: Path, rank: int = 0, progress: bool = False) -> tuple[Engine, dict[str, Any]]:
    """:func:`run_rank`, also returning the engine (its pool and block record stay usable)."""
    cfg.validate()
    # tensors here are small (one event at a time) and workers are threads: intra-op parallelism
    # only adds OpenMP barrier waits (milliseconds per op on a shared machine)
    torch.set_num_threads(1)
    meta, recs = load_trace(cfg.trace)
    out.mkdir(parents=True, exist_ok=True)
    eng = Engine(cfg, meta, out, rank)
    users = _requests(cfg, recs)
    eng.build_pool(users)
    # warmup: serial, prefill only, warmup account
    for w in _warmups(users, recs, eng):
        w.tables = {}
        eng.admit(w)
        for s in range(0, w.length, cfg.prefill_chunk):
            e = min(w.length, s + cfg.prefill_chunk)
            eng.ensure_pages(w, e)
            eng.run_batch([(w, s, e)], -1)
        w.pos = w.length
        _cache_own_pages(eng, w)
        eng.finish(w)
    # users: admitted in order, the repeated prompt (users[0]) last; all together unless max_active
    queue = users[1:] + users[:1]
    if not cfg.max_active:
        for u in queue:
            eng.admit(u)
        queue, ready = [], list(users)
    else:
        ready = []
        while queue and len(ready) < cfg.max_active:
            u = queue.pop(0)
            eng.admit(u)
            ready.append(u)
    rng = random.Random(cfg.seed * 1000003 + 17)
    inflight: dict[cf.Future, list[tuple[Request, int, int]]] = {}
    n_batches = 0
    with cf.ThreadPoolExecutor(max_workers=cfg.workers, thread_name_prefix="ledger-worker") as ex:
        while ready or inflight:
            while ready and len(inflight) < cfg.workers:
                k = min(len(ready), rng.randint(1, cfg.max_rows))
                picked = [ready.pop(rng.randrange(len(ready))) for _ in range(k)]
                batch = []
                for r in picked:
                    if r.pos < r.prompt_len:
                        e = min(r.prompt_len, r.pos + cfg.prefill_chunk)
                    else:
                        e = r.pos + 1
                    eng.ensure_pages(r, e)
                    batch.append((r, r.pos, e))
                eng.batch_rows.append(len(batch))
                inflight[ex.submit(eng.run_batch, batch, n_batches)] = batch
                n_batches += 1
            done, _ = cf.wait(list(inflight), return_when=cf.FIRST_COMPLETED)
            for fut in done:
                batch = inflight.pop(fut)
                fut.result()
                for r, _s, e in batch:
                    r.pos = e
                    if r.pos >= r.length:
                        _cache_own_pages(eng, r)
                        eng.finish(r)
                        acc = eng.book.get(r.uid) if r.uid is not None else None
                        if acc is not None:
                            eng.journal.append("account_close", {"rank": rank, **_close_body(acc.record())})
                        if queue:  # a slot is free: admit the next request
                            nxt = queue.pop(0)
                            eng.admit(nxt)
                            ready.append(nxt)
                    else:
                        ready.append(r)
            if progress:
                print(f"\r[witprobe] rank {rank}: {eng.n_read_checks:,} read checks, {eng.n_write_events:,} write events",
                      end="", flush=True)
    if progress:
        print(flush=True)
    eng.journal.append("account_close", {"rank": rank, **_close_body(eng.book.get(WARMUP_UID).record())})
    snap = eng.snapshot()
    eng.journal.append("pool_stats", {"rank": rank, "families": snap["pool"]["families"]})
    snap["users"] = [{"rid": u.rid, "uid": u.uid, "prompt_len": u.prompt_len, "length": u.length, "prefix_hit_len": u.hit_len,
                      "trace_request": u.rec.index} for u in users]
    eng.journal.close({"rank": rank, "n_write_events": eng.n_write_events, "n_read_checks": eng.n_read_checks})
    snap["journal"]["head_seq"] = eng.journal.head[0]
    snap["journal"]["head_hash"] = eng.journal.head[1]
    atomic_write(out / f"ledger.rank{rank}.json", json.dumps(snap, indent=1, sort_keys=True) + "\n")
    return eng, snap


def _close_body(rec: dict[str, Any]) -> dict[str, Any]:
    keys = ("uid", "rid", "delta_spent", "n_prob_events", "n_det_events", "n_write_events", "n_entries_written",
            "n_authorized", "n_fallback_exact", "n_auth_violations", "draw_digest")
    return {**{k: rec[k] for k in keys}, "n_reads": rec["read"]["n_reads"]}


def _cache_own_pages(eng: Engine, r: Request) -> None:
    """Register the full pages this request wrote (or validly shares) for the prefix cache."""
    assert eng.pool is not None
    toks = r.tokens()
    for fam, F in eng.pool.families.items():
        tab = r.tables[fam]
        n_full = r.length // F.page_size
        hashes = prefix_hashes(toks, F.page_size, n_full)
        for i in range(min(n_full, len(tab.pages))):
            page = tab.pages[i]
            if page not in tab.page_hashes:
                tab.page_hashes[page] = (hashes[i], r.uid if r.uid is not None else WARMUP_UID)


def write_manifest(cfg: SimConfig, out: Path, meta: dict[str, Any] | None = None,
                   require_coupling: bool = True) -> dict[str, Any]:
    """What was submitted: the gate compares the ledger against this, never against itself.

    ``require_coupling=False`` declares a single-replica run whose coupling is not evaluated
    (the gate lists it under ``not_evaluated``); ``simulate`` always requires it.
    """
    man = {
        "tool": "witprobe.ledger simulate",
        "config": cfg.as_dict(),
        "expected": {
            "user_requests": [f"req-{i}" for i in range(cfg.accounts)],
            "ranks": cfg.ranks,
            "delta_req": fraction_text(cfg.delta_req),
            "require_coupling": require_coupling,
        },
        "trace_model": (meta or {}).get("model"),
    }
    atomic_write(out / "manifest.json", json.dumps(man, indent=1, sort_keys=True) + "\n")
    return man
