"""Attach the ledger to transformers' continuous batching (paged KV cache), through public entry points.

``attach(manager)`` takes a ``ContinuousBatchingManager`` (transformers 5.24; the engine behind
``model.generate_batch`` and ``transformers serve --continuous-batching``) and wraps, **on the
instances only** (no transformers source is changed; :func:`detach` deletes the wrappers and
the engine's objects are exactly as before):

- ``PagedAttentionCache.update`` (the paged cache write path, called by every attention layer
  with the layer's new key/value states ``[1, H, Nq, D]`` and the physical ``write_index`` /
  ``read_index`` of the batch): the new entries are encoded as e4m3 codes with one power-of-two
  scale per entry (the compressed pool format), the **certified writer** authorizes them before
  any draw, draws, audits and restores in the same call, and the *served* values (the certified
  bytes, dequantized) are what the engine writes into its cache tensor and what the model reads
  back. After the engine's read-back, every read entry is checked against the slot table
  (state, generation, owner) and the values the model is about to attend to are compared with
  the certified bytes (``n_read_not_certified``).
- the full-attention allocator's ``allocate_cache_to_request`` / ``fork_blocks`` (a block handed
  to a request: its slots are invalidated, generation + 1, no owner, before anyone reads it),
  ``acquire_prefix_blocks`` and ``mark_complete_blocks`` (prefix sharing and de-duplication:
  the request's handle names the block's writer, so foreign reads are attributed to it),
- ``PagedAttentionCache.free_blocks`` (an offload, ``no_cache=True``, is journaled; the restored
  bytes bypass the write path and their reads fail closed) and ``scheduler.finish_request``
  (the request's accounts are closed in the journal).

Identity is detected on the write path: at the first layer of each forward, the batch plan
(``inputs_and_outputs.requests_in_batch``: request id, query length, past length) gives one
:class:`~witprobe.ledger.identity.Row` per request (extend while the past length is inside the
prompt, decode after); rows are attributed token by token
(:func:`~witprobe.ledger.identity.attribute`) against the entries actually written
(``write_index``), and a batch whose plan does not account for them is written exact and counted
``identity_fail_closed``. Requests whose id starts with ``LiveConfig.warmup_prefix`` are server
warmup (uid 0).

Geometry: the allocator's physical row ``p`` of a token (the same for every layer; a layer's view
is shifted) lies in block ``p // stride`` at offset ``p % stride < page_size`` with
``stride = 2 * page_size * n_layers``; the ledger's slot is ``block * page_size + offset``, its
namespace ``layer * H + head`` in each family (key, value).

Every event goes to the hash-chained journal; one transaction per forward (at its last layer, so
the events of a batch are committed before its tokens are sampled and delivered).
"""

from __future__ import annotations

import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Callable

import numpy as np
import torch

from witprobe.calculus.rounding import fraction_text
from witprobe.ledger.accounts import Account, AccountBook
from witprobe.ledger.identity import WARMUP_UID, IdentityTracker, Row, attribute
from witprobe.ledger.journal import open_segment
from witprobe.ledger.owner import OwnerLedger
from witprobe.ledger.pool import FamilySpec, PagedPool
from witprobe.ledger.slots import KEPT_EXACT, UNWRITTEN, ReadTally
from witprobe.ledger.writer import CertifiedWriter, Prepared, WriterConfig
from witprobe.memory.stochastic_rounding import encode_e4m3
from witprobe.serving.config import DROP_PLAN_PERIOD, FAMILIES, LiveConfig
from witprobe.serving.attention_entry import Override, current, override, restore
from witprobe.serving.read_meter import LiveReadMeter, ReadSpan

#: Finished requests whose attention record the verdict still answers from memory.
ATTENTION_KEPT = 4096
#: The ledger whose read meter wraps each model's attention (by ``id(model)``), while attached.
_METERED_MODELS: dict[int, "LiveLedger"] = {}


class AttachError(RuntimeError):
    """The engine cannot carry the ledger (the message says why), or the ledger is misused."""


@dataclass
class Handles:
    """What one request expects of the entries it reads, per family: ``exp_gen (n_ns, positions)``
    and ``exp_owner (positions,)`` (the writer it attributes each position to)."""

    exp_gen: dict[str, np.ndarray]
    exp_owner: dict[str, np.ndarray]

    @classmethod
    def empty(cls, n_ns: int) -> "Handles":
        return cls({f: np.full((n_ns, 0), -1, np.int64) for f in FAMILIES}, {f: np.full(0, -1, np.int64) for f in FAMILIES})

    def grow(self, n: int) -> None:
        for f in FAMILIES:
            have = self.exp_owner[f].size
            if n > have:
                m = max(n, 2 * have, 64)
                g = np.full((self.exp_gen[f].shape[0], m), -1, np.int64)
                g[:, :have] = self.exp_gen[f]
                o = np.full(m, -1, np.int64)
                o[:have] = self.exp_owner[f]
                self.exp_gen[f], self.exp_owner[f] = g, o


@dataclass
class BatchPlan:
    """One forward: its rows, their uids, and the slots each row writes and reads."""

    index: int
    rids: list[str]
    rows: list[Row]
    row_uids: list[int | None]
    tok_uid: np.ndarray | None
    past: np.ndarray  # (rows,)
    q: np.ndarray  # (rows,)
    write_slots: np.ndarray  # (sum q,)
    read_slots: list[np.ndarray]  # per row, positions 0 .. past+q-1
    mult: list[np.ndarray]  # per row: queries of the row that see each position (causal)
    read_offsets: np.ndarray  # (rows+1,) offsets of the rows in the engine's read-back tensor
    records: list[tuple[str, dict[str, Any]]] = field(default_factory=list)
    tallies: dict[int, ReadTally] = field(default_factory=dict)
    not_certified: dict[int, int] = field(default_factory=dict)
    t0: float = 0.0


@dataclass
class _Saved:
    obj: Any
    name: str
    had: bool
    old: Any


class LiveLedger:
    """The ledger attached to one engine (see the module docstring). Create with :func:`attach`."""

    def __init__(self, manager: Any, cfg: LiveConfig, journal_path: Path | str, signer: Any = None) -> None:
        self.cfg = cfg
        self.manager = manager
        bp = manager.batch_processor
        self.bp = bp
        self.cache = bp.cache
        io = bp.inputs_and_outputs
        if not hasattr(io, "requests_in_batch") or hasattr(io, "io_pairs"):
            raise AttachError("the ledger needs synchronous batching (ContinuousBatchingConfig(use_async_batching=False))")
        if list(self.cache.cache_allocators) != ["full_attention"]:
            raise AttachError(f"the ledger supports full-attention models only, got allocators {list(self.cache.cache_allocators)}")
        self.alloc = self.cache.cache_allocators["full_attention"]
        if self.cache.max_decode_fast_path_length > 0:
            raise AttachError("the decode fast path (block-table kernel) writes the cache inside the kernel, bypassing "
                              "the write path; use attn_implementation='paged|eager' or 'sdpa'")
        a = self.alloc
        self.page_size = int(a.tokens_per_page)
        self.stride = int(a.block_physical_stride)
        self.layers = list(a.layer_indices)
        self.layer_pos = {l: i for i, l in enumerate(self.layers)}
        self.heads = int(a.num_key_value_heads)
        self.dim = int(a.head_dim)
        self.n_ns = len(self.layers) * self.heads
        # the blocks a block table can name, plus the trash rows past them (padding tokens write there): the
        # write/read indices address rows of heads x head_dim (a key and a value each), block * stride + offset;
        # sizing by cache rows // page_size, as before, counted every layer's page as a block (about 30x too many)
        rows = int(a.cache_tensor.numel()) // (self.heads * self.dim)
        self.n_blocks = -(-rows // self.stride)
        self.pool = PagedPool([FamilySpec(f, self.page_size) for f in FAMILIES], {f: self.n_blocks for f in FAMILIES},
                              self.n_ns, self.dim, invalidate_on_reuse=cfg.fault != "no-reuse-invalidation",
                              collide_families=cfg.fault == "family-collision")
        self.tables = list({id(F.slots): F.slots for F in self.pool.families.values()}.values())
        self.ever_written = np.zeros(self.n_blocks, bool)
        self.book = AccountBook(cfg.delta_req)
        self.identity = IdentityTracker(split_on_every_extend=cfg.fault == "split-accounts")
        self.owner = OwnerLedger()
        self.writers = {
            f: CertifiedWriter(WriterConfig(nonce=cfg.nonce, w_thr=cfg.auth_thr[f], drop_bits=cfg.drop_bits, bands=cfg.bands,
                                            kernel_extra_drop=1 if cfg.fault == "sr-coarse" else 0))
            for f in FAMILIES
        }
        self.lut = torch.arange(256, dtype=torch.uint8).view(torch.float8_e4m3fn).to(torch.float64).numpy()
        self.lut[np.isnan(self.lut)] = 0.0
        self.handles: dict[str, Handles] = {}
        self.uids_of: dict[str, list[int]] = {}
        self.finished: set[str] = set()
        self.n_batches = 0
        self.n_write_events = 0
        self.n_read_checks = 0
        self.n_tokens_written = 0
        self.fail_closed_entries = 0
        self.wall_s = 0.0
        self.lock = threading.RLock()
        self.pending: list[tuple[str, dict[str, Any]]] = []
        self.attention_done: dict[str, dict[str, Any]] = {}
        self.plan: BatchPlan | None = None
        self.alarms: set[str] = set()
        self.meter: LiveReadMeter | None = None
        if cfg.live_bound:
            missing = sorted(set(cfg.bound_layers or ()) - set(self.layers))
            if missing:
                raise AttachError(f"bound_layers names layers {missing} that the engine does not have (it has {len(self.layers)})")
            self.meter = LiveReadMeter(self.layers, cfg.bound_layers, self.heads, self.dim, self.n_blocks * self.page_size,
                                       cfg.bands, cfg.tau, cfg.audit_rate, cfg.keep_exact, cfg.audit_seed, a.cache_tensor.dtype,
                                       cfg.request_budget)
        self._modules = {id(m) for m in manager.model.modules() if hasattr(m, "layer_idx")}
        self._read_ctx: tuple[BatchPlan, int, int] | None = None
        self._attention_saved: Override | None = None
        # a restart on an existing journal opens a new segment chained to its verified prefix: the old file is
        # never written again, so what it committed stays valid (journal.open_segment)
        self.journal = open_segment(journal_path, synchronous=cfg.synchronous, signer=signer, header={
            "delta_req": fraction_text(cfg.delta_req), "nonce": cfg.nonce, "config": cfg.as_dict(), "source": "witprobe.serving",
            "engine": {"page_size": self.page_size, "layers": len(self.layers), "kv_heads": self.heads, "head_dim": self.dim,
                       "blocks": self.n_blocks, "max_batch_tokens": int(self.cache.max_batch_tokens)},
            "pool": {"namespaces_disjoint": self.pool.namespaces_disjoint(), "invalidate_on_reuse": self.pool.invalidate_on_reuse},
            "read_meter": None if self.meter is None else self.meter.config(),
        })
        self.book.open(WARMUP_UID, "warmup", None)
        self.journal.append("account_open", {"uid": WARMUP_UID, "rid": None, "kind": "warmup"})
        self._saved: list[_Saved] = []
        self.attached = False

    # --- wrapping ----------------------------------------------------------------------------------
    def _wrap(self, obj: Any, name: str, make: Callable[[Callable], Callable]) -> None:
        had = name in vars(obj)
        old = vars(obj).get(name)
        orig = getattr(obj, name)
        self._saved.append(_Saved(obj, name, had, old))
        setattr(obj, name, make(orig))

    def install(self) -> None:
        a, c = self.alloc, self.cache
        self._wrap(c, "update", lambda orig: lambda k, v, layer_idx, kwargs: self._update(orig, k, v, layer_idx, kwargs))
        self._wrap(a, "allocate_cache_to_request", lambda orig: lambda rid, past, q: self._allocate(orig, rid, past, q))
        self._wrap(a, "fork_blocks", lambda orig: lambda src, dst, past: self._fork(orig, src, dst, past))
        self._wrap(a, "acquire_prefix_blocks", lambda orig: lambda rid, n, blocks: self._acquire(orig, rid, n, blocks))
        self._wrap(a, "mark_complete_blocks", lambda orig: lambda rid, toks, n: self._mark_complete(orig, rid, toks, n))
        self._wrap(c, "free_blocks", lambda orig: lambda rid, no_cache=False: self._free(orig, rid, no_cache))
        self._wrap(self.bp.scheduler, "finish_request", lambda orig: lambda rid: self._finish(orig, rid))
        if self.meter is not None:
            self._install_attention()
        self.attached = True

    def _install_attention(self) -> None:
        """Route the engine's attention calls through :meth:`_attend` (calls from modules of other
        models go straight to the function that was there). One read meter per model: a second
        engine of the same model would have its reads claimed by the first ledger's wrapper."""
        _METERED_MODELS[id(self.manager.model)] = self
        orig = current()
        self._attention_saved = override(lambda module, query, key, value, attention_mask, *args, **kw: self._attend(
            orig, module, query, key, value, attention_mask, *args, **kw))

    def uninstall(self) -> None:
        if self._attention_saved is not None:
            restore(self._attention_saved)
            self._attention_saved = None
            if _METERED_MODELS.get(id(self.manager.model)) is self:
                del _METERED_MODELS[id(self.manager.model)]
        for s in reversed(self._saved):
            if s.had:
                setattr(s.obj, s.name, s.old)
            else:
                delattr(s.obj, s.name)
        self._saved.clear()
        self.attached = False

    # --- blocks ------------------------------------------------------------------------------------
    def _block_slots(self, block: int) -> np.ndarray:
        return np.arange(block * self.page_size, (block + 1) * self.page_size)

    def _on_new_blocks(self, rid: str, blocks: list[int], why: str) -> None:
        for b in blocks:
            sl = self._block_slots(b)
            t0 = self.tables[0]
            prev = int(t0.owner[0, sl].max())
            live = bool((t0.state[:, sl] != UNWRITTEN).any())
            inval = self.pool.invalidate_on_reuse
            if inval:
                for t in self.tables:
                    t.invalidate(sl)
            self.pending.append(("block_alloc", {"block": int(b), "rid": rid, "why": why, "reused": bool(self.ever_written[b]),
                                                 "live_before": live, "prev_owner": prev, "invalidated": inval,
                                                 "gen": int(t0.gen[0, sl[0]])}))

    def _allocate(self, orig: Callable, rid: str, past: int, q: int) -> None:
        n0 = len(self.alloc.block_table.get(rid, []))
        orig(rid, past, q)
        with self.lock:
            self._on_new_blocks(rid, list(self.alloc.block_table[rid][n0:]), "allocate")

    def _fork(self, orig: Callable, src: str, dst: str, past: int) -> tuple[list[int], list[int]]:
        out = orig(src, dst, past)
        with self.lock:
            self._on_new_blocks(dst, list(out[1]), "fork")  # copied bytes bypass the write path: their reads fail closed
            self.pending.append(("fork", {"src": src, "dst": dst, "copied_blocks": len(out[1])}))
        return out

    def _adopt(self, rid: str, index: int, block: int) -> None:
        """The request's handle for table position ``index`` names block ``block`` as its writer left it."""
        h = self.handles.setdefault(rid, Handles.empty(self.n_ns))
        pos = np.arange(index * self.page_size, (index + 1) * self.page_size)
        h.grow(int(pos[-1]) + 1)
        sl = self._block_slots(block)
        for f, F in self.pool.families.items():
            h.exp_gen[f][:, pos] = F.slots.gen[:, sl]
            h.exp_owner[f][pos] = F.slots.owner[0, sl]

    def _acquire(self, orig: Callable, rid: str, prefix_len: int, blocks: list[int]) -> None:
        orig(rid, prefix_len, blocks)
        with self.lock:
            table = self.alloc.block_table[rid]
            for i, b in enumerate(table):
                self._adopt(rid, i, b)
            owners = [int(self.tables[0].owner[0, b * self.page_size]) for b in table]
            self.pending.append(("prefix_share", {"rid": rid, "blocks": [int(b) for b in table], "owners": owners,
                                                  "tokens": int(prefix_len)}))

    def _mark_complete(self, orig: Callable, rid: str, token_ids: list[int], n: int) -> None:
        before = list(self.alloc.block_table.get(rid, []))
        orig(rid, token_ids, n)
        after = self.alloc.block_table.get(rid, [])
        with self.lock:
            for i, (b0, b1) in enumerate(zip(before, after)):
                if b0 != b1:
                    self._adopt(rid, i, b1)
                    self.pending.append(("dedupe", {"rid": rid, "index": i, "released": int(b0), "adopted": int(b1),
                                                    "owner": int(self.tables[0].owner[0, b1 * self.page_size])}))

    def _free(self, orig: Callable, rid: str, no_cache: bool) -> None:
        with self.lock:
            if no_cache and rid not in self.finished:
                self.pending.append(("offload", {"rid": rid, "blocks": len(self.alloc.block_table.get(rid, []))}))
        orig(rid, no_cache)

    def _finish(self, orig: Callable, rid: str) -> None:
        with self.lock:
            self.finished.add(rid)
        orig(rid)
        with self.lock:
            self.handles.pop(rid, None)
            recs = [("account_close", self._close_body(self.book.get(uid))) for uid in self.uids_of.get(rid, [])]
            att = None if self.meter is None else self.meter.finish(rid)
            if att is not None:
                self.attention_done[rid] = att
                while len(self.attention_done) > ATTENTION_KEPT:  # the journal keeps them all; memory keeps the newest
                    self.attention_done.pop(next(iter(self.attention_done)))
                recs.append(("attention", {"rid": rid, "uids": list(self.uids_of.get(rid, [])), **att}))
            self.journal.append_many(self.pending + recs)
            self.pending = []

    def _close_body(self, acc: Account) -> dict[str, Any]:
        r = acc.record()
        keys = ("uid", "rid", "kind", "delta_spent", "n_prob_events", "n_det_events", "n_write_events", "n_entries_written",
                "n_authorized", "n_fallback_exact", "n_auth_violations", "draw_digest", "eprocess")
        return {**{k: r[k] for k in keys}, "n_reads": r["read"]["n_reads"], "read": r["read"]}

    # --- the write path ----------------------------------------------------------------------------
    def _physical_to_slots(self, p: np.ndarray) -> np.ndarray:
        block, off = np.divmod(p.astype(np.int64), self.stride)
        if (off >= self.page_size).any() or (block >= self.n_blocks).any():
            raise AttachError("a cache index does not map to a (block, offset) of the full-attention allocator")
        return block * self.page_size + off

    def _begin(self, kwargs: dict[str, Any]) -> BatchPlan:
        io = self.bp.inputs_and_outputs
        fut = list(io.requests_in_batch)
        idx = self.alloc.index
        w = kwargs["write_index"][idx].detach().cpu().numpy()
        r = kwargs["read_index"][idx].detach().cpu().numpy()
        rids, rows, past, q = [], [], [], []
        for i, fs in enumerate(fut):
            st = fs.state
            qi = int(fs.query_length)
            pi = int(st.position_offset) - qi  # prepare_batch_tensors advanced it by the query length
            prompt = len(st.initial_tokens)
            rid = str(st.request_id)
            warm = rid.startswith(self.cfg.warmup_prefix)
            rows.append(Row(rid=None if warm else rid, mode="extend" if pi < prompt else "decode", n_tokens=qi,
                            seq_len=pi + qi, position=i, warmup=warm))
            rids.append(rid)
            past.append(pi)
            q.append(qi)
        past_a, q_a = np.asarray(past, np.int64), np.asarray(q, np.int64)
        row_uids = [self.identity.row_uid(row) for row in rows]
        plan = BatchPlan(index=self.n_batches, rids=rids, rows=rows, row_uids=row_uids, tok_uid=None, past=past_a, q=q_a,
                         write_slots=self._physical_to_slots(w), read_slots=[], mult=[], read_offsets=np.zeros(len(rows) + 1, np.int64),
                         t0=time.perf_counter())
        for rid, row, uid in zip(rids, rows, row_uids):
            if uid is not None and uid not in self.book.accounts:
                self.book.open(uid, "user", rid)
                self.uids_of.setdefault(rid, []).append(uid)
                plan.records.append(("account_open", {"uid": uid, "rid": rid, "kind": "user"}))
        n_tok = int(w.size)
        plan_tokens = n_tok + (1 if self.cfg.fault == "drop-plan" and plan.index % DROP_PLAN_PERIOD == 3 else 0)
        plan.tok_uid = attribute(rows, row_uids, plan_tokens) if int(q_a.sum()) == n_tok else None
        # read slots per row: the engine's read index (positions 0 .. past+q-1), or the written slots when it reads nothing
        off = 0
        cq = np.concatenate([[0], np.cumsum(q_a)])
        for i in range(len(rows)):
            e = int(past_a[i] + q_a[i])
            if r.size:
                sl = self._physical_to_slots(r[off:off + e])
            else:
                if past_a[i] != 0:
                    raise AttachError("a row with past tokens in a batch without cache reads")
                sl = plan.write_slots[cq[i]:cq[i + 1]]
            plan.read_slots.append(sl)
            p = np.arange(e)
            plan.mult.append((e - np.maximum(p, past_a[i])).astype(np.int64))
            plan.read_offsets[i + 1] = plan.read_offsets[i] + e
            off += e
        if r.size and off != r.size:
            raise AttachError(f"read index holds {r.size} entries, the plan accounts for {off}")
        for sl in (plan.write_slots,):
            self.ever_written[np.unique(sl // self.page_size)] = True
        return plan

    def _update(self, orig: Callable, key_states: torch.Tensor, value_states: torch.Tensor, layer_idx: int,
                kwargs: dict[str, Any]) -> tuple[torch.Tensor, torch.Tensor]:
        if kwargs.get("block_table") is not None:
            raise AttachError("block-table update: the kernel would write the cache outside the certified write path")
        with self.lock:
            li = self.layer_pos[layer_idx]
            if li == 0:
                self.pending, recs = [], self.pending
                self.plan = self._begin(kwargs)
                self.plan.records[:0] = recs
            plan = self.plan
            if plan is None:
                raise AttachError("a layer update before the first layer of its batch")
            # both families' entries are encoded and prepared together (the writers share drop_bits and bands;
            # every prepared quantity is per entry), then certified family by family
            xs = (key_states, value_states)
            nq = key_states.shape[2]
            ents = torch.cat([x[0].transpose(0, 1).reshape(nq * self.heads, self.dim) for x in xs])  # entry j = token j // H, head j % H
            codes, sexp = encode_e4m3(ents)
            prep = self.writers[FAMILIES[0]].prepare(codes, sexp)
            n = nq * self.heads
            served = [self._write(plan, li, f, x, prep.rows(slice(k * n, (k + 1) * n))) for k, (f, x) in enumerate(zip(FAMILIES, xs))]
            if self.meter is not None:
                self.meter.on_write(layer_idx, plan.write_slots, key_states, served[0], value_states)
        k_out, v_out = orig(served[0], served[1], layer_idx, kwargs)
        with self.lock:
            for f, x in zip(FAMILIES, (k_out, v_out)):
                self._read(plan, li, f, x)
            self._read_ctx = (plan, li, layer_idx)
            if li == len(self.layers) - 1:
                self._end(plan)
        return k_out, v_out

    def _write(self, plan: BatchPlan, li: int, fam: str, x: torch.Tensor, prep: Prepared) -> torch.Tensor:
        """Certify the batch's new entries of one layer and family (``x [1, H, Nq, D]``, prepared as
        ``prep``: entry ``j`` = token ``j // H``, head ``j % H``); returns the served values ``[1, H, Nq, D]``."""
        F = self.pool.families[fam]
        H, D = self.heads, self.dim
        nq = x.shape[2]
        codes, sexp = prep.codes, prep.scale_exp
        ns = li * H + np.tile(np.arange(H), nq)
        slot_e = np.repeat(plan.write_slots, H)
        codes_np, sexp_np = codes.numpy(), sexp.numpy()
        served = codes_np.copy()
        lkey = self.layers[li] * len(FAMILIES) + FAMILIES.index(fam)
        if plan.tok_uid is None:  # fail closed: exact bytes, no spend, counted
            self.identity.fail_closed(int(nq * H))
            self.fail_closed_entries += int(nq * H)
            owners = np.repeat(np.repeat(np.asarray([u if u is not None else -1 for u in plan.row_uids], np.int64), plan.q), H)
            for own in np.unique(owners):
                m = owners == own
                F.slots.write(ns[m], slot_e[m], int(own), np.full(int(m.sum()), KEPT_EXACT, np.uint8),
                              np.zeros(int(m.sum())), np.zeros(int(m.sum())), -1)
            plan.records.append(("fail_closed", {"batch": plan.index, "family": fam, "layer": self.layers[li], "n_entries": int(nq * H)}))
        else:
            writer = self.writers[fam]
            ent_uid = np.repeat(plan.tok_uid, H)
            uids = list(dict.fromkeys(ent_uid.tolist()))
            events = [(self.book.get(uid), np.nonzero(ent_uid == uid)[0]) for uid in uids]
            # one vectorized draw for every account's event; the global e-process is folded here, event by
            # event, so each write record carries the global state after its own event (journal order)
            outs = writer.write_events(self.book, events, lkey, prep, fold_global=False)
            for uid, (acc, idx), out in zip(uids, events, outs):
                if out.log_g is not None:
                    self.book.global_eprocess.add(out.log_g)
                self.n_write_events += 1
                wid = self.n_write_events
                served[idx] = out.served.numpy()
                n_live = F.slots.write(ns[idx], slot_e[idx], uid, out.state, out.witness, out.radius, wid)
                if n_live:
                    acc.n_slot_reuses += n_live
                e, g = acc.eprocess, self.book.global_eprocess
                rec = {"batch": plan.index, "uid": uid, "family": fam, "layer": self.layers[li], "write_id": wid,
                       "counter": out.counter, "delta": fraction_text(out.delta), "spent": fraction_text(acc.budget.spent),
                       "n_entries": int(idx.size), "n_authorized": out.n_authorized, "n_violations": out.n_violations,
                       "n_live_rewritten": n_live,
                       "eprocess": {"n_factors": e.n_factors, "log_M": e.log_m, "log_M_max": e.log_m_max, "crossed": e.crossed},
                       "eprocess_global": {"n_factors": g.n_factors, "log_M": g.log_m, "log_M_max": g.log_m_max, "crossed": g.crossed}}
                plan.records.append(("write", rec))
                for scope, proc in ((f"uid {uid}", e), ("global", g)):
                    if proc.crossed and scope not in self.alarms:
                        self.alarms.add(scope)
                        plan.records.append(("alarm", {"scope": scope, "uid": uid if scope != "global" else None,
                                                       "first_cross_factor": proc.first_cross_factor,
                                                       "threshold": proc.threshold, "write_id": wid}))
        F.served[ns, slot_e] = served
        F.exact[ns, slot_e] = codes_np
        F.scale_exp[ns, slot_e] = sexp_np
        # the writers' own handles take the generation their write left (owner = the row's account)
        cq = np.concatenate([[0], np.cumsum(plan.q)])
        nsl = li * H + np.arange(H)
        for i, rid in enumerate(plan.rids):
            h = self.handles.get(rid)
            if h is None:
                h = self.handles[rid] = Handles.empty(self.n_ns)
            s, e = int(plan.past[i]), int(plan.past[i] + plan.q[i])
            h.grow(e)
            sl = plan.write_slots[cq[i]:cq[i + 1]]
            h.exp_gen[fam][np.ix_(nsl, np.arange(s, e))] = F.slots.gen[np.ix_(nsl, sl)]
            uid = plan.row_uids[i]
            h.exp_owner[fam][s:e] = uid if uid is not None else -1
        vals = self.lut[served] * np.exp2(sexp_np.astype(np.float64))[:, None]
        self.n_tokens_written += int(nq) if fam == "key" and li == 0 else 0
        return torch.from_numpy(vals).to(x.dtype).reshape(nq, H, D).transpose(0, 1).unsqueeze(0)

    # --- the read path -----------------------------------------------------------------------------
    def _read(self, plan: BatchPlan, li: int, fam: str, x: torch.Tensor) -> None:
        """Check every entry the rows read at this layer and family, and the values the model got.

        All attributed rows at once: entry ``(c, h)`` is read-back column ``c`` (a position of its
        row) at head ``h``, laid out column-major so each row's entries form one segment; the slot
        checks, the owner attribution and the byte comparison are one vectorized pass, and a row's
        counts are sums over its segment (:meth:`~witprobe.ledger.slots.SlotTable.check_read_segments`).
        """
        F = self.pool.families[fam]
        H = self.heads
        rows = [i for i, uid in enumerate(plan.row_uids) if uid is not None]
        if not rows:
            return
        nsl = li * H + np.arange(H)
        sizes = np.asarray([plan.read_slots[i].size for i in rows], np.int64)
        cols = np.concatenate([np.arange(plan.read_offsets[i], plan.read_offsets[i + 1]) for i in rows])
        sl_c = np.concatenate([plan.read_slots[i] for i in rows])
        hs = [self.handles[plan.rids[i]] for i in rows]
        eg = np.concatenate([h.exp_gen[fam][nsl, :e] for h, e in zip(hs, sizes.tolist())], axis=1)
        eo = np.concatenate([h.exp_owner[fam][:e] for h, e in zip(hs, sizes.tolist())])
        mm = np.concatenate([plan.mult[i] for i in rows])
        uids = np.asarray([plan.row_uids[i] for i in rows], np.int64)
        ns = np.tile(nsl, cols.size)
        sl = np.repeat(sl_c, H)
        mm_e = np.repeat(mm, H)
        reader = np.repeat(np.repeat(uids, sizes), H)
        starts = np.concatenate([[0], np.cumsum(sizes * H)[:-1]])
        tallies = F.slots.check_read_segments(ns, sl, eg.T.ravel(), np.repeat(eo, H), mm_e, reader, self.cfg.read_thr[fam], starts)
        self.owner.attribute(reader, F.slots.owner[ns, sl], mm_e)
        # the certified values (exact in float64: a code value times a power of two), as float32, against what the
        # model got as float32 (exact from float32, bfloat16 or float16): equal iff equal in float64
        want = (self.lut[F.served[ns, sl]] * np.exp2(F.scale_exp[ns, sl].astype(np.float64))[:, None]).astype(np.float32)
        got = x[0].detach()  # [H, total_k, D]
        if cols.size != got.shape[1] or rows != list(range(len(plan.rids))):
            got = got[:, torch.from_numpy(cols)]
        seen = got.transpose(0, 1).reshape(cols.size * H, -1).to(torch.float32).numpy()
        bad = (seen != want).any(axis=1)
        nbad = np.add.reduceat(np.where(bad, mm_e, 0), starts)
        for uid, t, nb in zip(uids.tolist(), tallies, nbad.tolist()):
            plan.tallies.setdefault(uid, ReadTally()).add(t)
            if nb:
                plan.not_certified[uid] = plan.not_certified.get(uid, 0) + int(nb)
            acc = self.book.get(uid)
            with acc.lock:
                acc.read.add(t)
                acc.n_read_steps += 1
            self.n_read_checks += t.n_reads

    def _end(self, plan: BatchPlan) -> None:
        recs = plan.records
        recs.insert(0, ("batch", {"batch": plan.index, "rows": [[rid, r.mode, int(r.n_tokens), int(p)] for rid, r, p in
                                                               zip(plan.rids, plan.rows, plan.past)],
                                  "uids": plan.row_uids, "n_tokens": int(plan.write_slots.size),
                                  "attributed": plan.tok_uid is not None}))
        for uid, t in sorted(plan.tallies.items()):
            body = {"batch": plan.index, "uid": uid, **t.__dict__, "n_read_not_certified": plan.not_certified.get(uid, 0)}
            recs.append(("reads", body))
        self.journal.append_many(recs)
        self.n_batches += 1
        self.wall_s += time.perf_counter() - plan.t0
        self.plan = None

    # --- the attention read ------------------------------------------------------------------------
    def _attend(self, orig: Callable, module: Any, query: torch.Tensor, key: torch.Tensor, value: torch.Tensor,
                attention_mask: torch.Tensor | None, *args: Any, **kw: Any) -> tuple[torch.Tensor, Any]:
        """The engine's attention call: the kernel runs, then the read meter bounds, audits and (with
        ``tau``) enforces its rows. Calls of other models' modules pass straight through."""
        out, weights = orig(module, query, key, value, attention_mask, *args, **kw)
        if id(module) not in self._modules or self.meter is None:
            return out, weights
        with self.lock:
            ctx, self._read_ctx = self._read_ctx, None
            if ctx is None or ctx[2] != getattr(module, "layer_idx", None):
                raise AttachError("an attention call without the cache update of its layer: the read cannot be metered")
            plan, _li, layer = ctx
            scaling = kw.get("scaling", args[0] if args else None)
            if scaling is None:
                scaling = query.shape[-1] ** -0.5
            cq = np.concatenate([[0], np.cumsum(plan.q)])
            spans = [ReadSpan(rid, int(cq[i]), int(cq[i + 1]), int(plan.read_offsets[i]), int(plan.read_offsets[i + 1]),
                              plan.read_slots[i], int(plan.past[i]))
                     for i, rid in enumerate(plan.rids) if plan.row_uids[i] is not None]
            res = self.meter.on_read(layer, spans, query, key, value, attention_mask, float(scaling), out)
            for a in res.alerts:
                self.pending.append(("audit_mismatch", {"batch": plan.index, **a}))
        return res.output, weights

    # --- records -----------------------------------------------------------------------------------
    def verdict(self, rid: str) -> dict[str, Any] | None:
        """The ledger's reading for one request (a cache of the journal; the gate re-derives it)."""
        from witprobe.serving.metrics import request_verdict

        with self.lock:
            uids = list(self.uids_of.get(rid, []))
            if not uids:
                return None
            v = request_verdict(rid, [self.book.get(u) for u in uids], rid in self.finished, self.cfg.delta_req)
            if self.meter is not None:
                v["attention"] = self.attention_done.get(rid) or self.meter.peek(rid)
            return v

    def close(self, summary: dict[str, Any] | None = None) -> None:
        """Flush, close the warmup account and the journal (the ``close`` record)."""
        with self.lock:
            if self.journal.closed:
                return
            recs = self.pending + [("account_close", self._close_body(self.book.get(WARMUP_UID)))]
            self.pending = []
            self.journal.append_many(recs)
            g = self.book.global_eprocess
            self.journal.close({"n_batches": self.n_batches, "n_write_events": self.n_write_events, "n_read_checks": self.n_read_checks,
                                "eprocess_global": g.record(), **(summary or {})})


def attach(manager_or_model: Any, cfg: LiveConfig | None = None, *, journal: Path | str, generation_config: Any = None,
           continuous_batching_config: Any = None, signer: Any = None) -> LiveLedger:
    """Attach the ledger to a ``ContinuousBatchingManager`` (or to a model: its manager is created with
    ``model.init_continuous_batching`` and cached on the model, so ``model.generate_batch`` uses it).

    The manager must not be running; its batch processor (and paged cache) is created with the
    public ``manager.warmup()`` if it does not exist yet. With ``signer`` (a
    :class:`witprobe.signing.SigningKey`) the journal is signed (:class:`~witprobe.ledger.journal.Journal`).
    Returns the :class:`LiveLedger`.
    """
    cfg = cfg or LiveConfig()
    manager = manager_or_model
    if not hasattr(manager, "batch_processor"):
        model = manager_or_model
        if not hasattr(model, "init_continuous_batching"):
            raise AttachError(f"expected a ContinuousBatchingManager or a transformers model, got {type(model).__name__}")
        manager = model.init_continuous_batching(generation_config=generation_config,
                                                 continuous_batching_config=continuous_batching_config)
        model._cached_continuous_batching_manager = manager
    if manager.is_running():
        raise AttachError("attach before manager.start(): a running engine may already have written its cache")
    if getattr(manager, "_witprobe_ledger", None) is not None:
        raise AttachError("a ledger is already attached to this manager")
    other = _METERED_MODELS.get(id(manager.model)) if cfg.live_bound else None
    if other is not None and other.attached:  # checked before the journal is opened: a refusal writes nothing
        raise AttachError("another engine of this model has a ledger with a read meter attached: detach it first")
    if manager.batch_processor is None:
        manager.warmup()
    led = LiveLedger(manager, cfg, journal, signer)
    led.install()
    manager._witprobe_ledger = led
    return led


def detach(ledger: LiveLedger) -> None:
    """Remove every wrapper (the engine's objects are exactly as before) and close the journal."""
    m = ledger.manager
    if m.is_running():
        raise AttachError("detach after manager.stop(): the engine is still running")
    ledger.uninstall()
    ledger.close()
    if getattr(m, "_witprobe_ledger", None) is ledger:
        del m._witprobe_ledger
