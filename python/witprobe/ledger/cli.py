"""Command line: ``python -m witprobe.ledger {simulate,gate,verify,keygen,replay,record,reads,live}``.

Exit codes:

====  ==========================================================================================
0     pass (simulate/gate/live: every criterion holds; verify: the journal is valid; replay: done)
1     fail (a gate criterion failed; the journal has a bad record, named on stdout)
2     usage error (bad option, missing input, existing output without --force)
4     internal error
130   interrupted (SIGINT): nothing half-written is left behind
====  ==========================================================================================

Every command writes through :mod:`witprobe.safe_output`. ``simulate``, ``campaign``, ``record``
and ``live`` build their output in a fresh private sibling directory and rename it to ``--out``
only once complete, so an interrupted or failed run leaves no half-written output. ``--force``
replaces an existing output only if the same command wrote every file in it and none changed
since (its ``.witprobe-output.json`` manifest lists them with their SHA-256); it removes only
those files and refuses (exit 2) when anything else is there. A second writer on the same
output fails at once (exit 2). ``--out FILE`` (``replay``, ``reads``, ``sentinel``) never
replaces an existing file without ``--force``.
``verify`` exits 0 only for a valid, closed journal; a valid journal without its ``close`` record
(the writer did not shut down) is reported as ``unclosed`` with exit 1.

Signing (docs/SIGNING.md): ``keygen --out DIR`` writes an Ed25519 key pair (never over an existing
key); ``simulate --sign KEY`` and ``live --sign KEY`` append signed heads to the journals;
``verify --key PUB`` and ``gate --key PUB`` then require them (a re-chained journal fails), and
``verify --expect-head HEAD`` compares the journal with a head a client holds (truncation,
re-chaining). Without ``--key``, ``verify`` and ``gate`` say that the journal is only hash-chained.
A key file that cannot be read is a usage error (exit 2).
"""

from __future__ import annotations

import argparse
import json
import sys
from fractions import Fraction
from pathlib import Path

from witprobe import safe_output
from witprobe.cliutil import (EXIT_USAGE, InputError, OneLineParser, add_version, fraction_arg, read_json_object,
                              run_handler)

EXIT_OK, EXIT_FAIL = 0, 1
SIMULATE_TOOL = "witprobe.ledger simulate"


def _family_map(text: str, cast=float) -> dict[str, float]:
    """``key=9,value=0.3`` -> ``{"key": 9.0, "value": 0.3}``."""
    out = {}
    for part in text.split(","):
        name, sep, val = part.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"expected family=value pairs, got {part!r}")
        try:
            v = cast(val)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: {val!r} is not a number") from None
        if not 0 <= v < float("inf"):  # NaN fails too: a threshold NaN would authorize nothing, silently
            raise argparse.ArgumentTypeError(f"{name}: {val!r} is not a finite number >= 0")
        out[name.strip()] = v
    return out


def _nonce(text: str) -> int:
    """The server nonce: one 32-bit part of every RNG key (:func:`witprobe.memory.counter_rng.stream_key`)."""
    try:
        n = int(text, 0)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an integer") from None
    if not 0 <= n < 2**32:
        raise argparse.ArgumentTypeError(f"{text!r} does not fit 32 bits (0 to {2**32 - 1})")
    return n


def _parser() -> argparse.ArgumentParser:
    from witprobe.ledger.replay import THRESHOLDS
    from witprobe.ledger.simulate import DEFAULT_AUTH_THR, FAULTS
    from witprobe.ledger.trace import DEFAULT_FIXTURE

    p = OneLineParser(prog="python -m witprobe.ledger", description="The request-level risk ledger.")
    add_version(p)
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("simulate", help="serve recorded traffic with concurrent workers over one shared pool, then gate it")
    s.add_argument("--accounts", type=int, default=8, help="user requests (accounts) (default: %(default)s)")
    s.add_argument("--workers", type=int, default=8, help="worker threads per rank (default: %(default)s)")
    s.add_argument("--ranks", type=int, default=2, help="replicas under torch.distributed/gloo; 1 runs in-process (default: %(default)s)")
    s.add_argument("--out", type=Path, required=True, help="output directory")
    s.add_argument("--trace", type=Path, default=DEFAULT_FIXTURE, help="recorded trace directory (default: the SmolLM2 fixture)")
    s.add_argument("--auth-thr", type=_family_map, default=dict(DEFAULT_AUTH_THR), help="write authorization W_thr per family, e.g. key=9,value=0.3")
    s.add_argument("--read-thr", type=_family_map, default=None, help="read certificate W_thr per family (default: = --auth-thr)")
    s.add_argument("--delta-req", type=fraction_arg, default=Fraction(1, 100), help="per-request budget (default: 1/100)")
    s.add_argument("--nonce", type=_nonce, default=0x5EED, help="server nonce of the RNG key (default: %(default)s)")
    s.add_argument("--decode-steps", type=int, default=None, help="decode steps per request (default: all recorded)")
    s.add_argument("--max-rows", type=int, default=3, help="rows per batch at most (default: %(default)s)")
    s.add_argument("--seed", type=int, default=0, help="scheduler seed (default: %(default)s)")
    s.add_argument("--fault", choices=FAULTS, default="none", help="inject a fault the gate must catch (default: none)")
    s.add_argument("--force", action="store_true", help="replace a run simulate wrote (only its unchanged files)")
    s.add_argument("--sign", type=Path, default=None, metavar="KEY",
                   help="sign each journal's head with this Ed25519 private key (kept outside --out; see keygen)")
    s.add_argument("--quiet", action="store_true")
    g = sub.add_parser("gate", help="decide the twelve criteria of a run directory (JSON on stdout, exit code = verdict)")
    g.add_argument("dir", type=Path, help="a run directory written by ledger simulate or ledger live (its manifest "
                                          "and journals; every criterion is re-derived from the journals)")
    g.add_argument("--key", type=Path, default=None, metavar="PUB",
                   help="require every journal to end with a head signed by this public key")
    v = sub.add_parser("verify", help="verify a journal: chain, hashes, ledger arithmetic; names the first bad record")
    v.add_argument("journal", type=Path, help="a journal file (SQLite, written by ledger simulate, ledger live or the "
                                             "server)")
    v.add_argument("--key", type=Path, default=None, metavar="PUB",
                   help="require valid signed heads under this Ed25519 public key (without it the journal is only "
                        "hash-chained: anyone who can write it can re-chain it)")
    v.add_argument("--expect-head", default=None, metavar="HEAD",
                   help="a head a client holds: a JSON file (a signed head, or the server's journal_head) or N:HASH; "
                        "the journal must hold record N with that hash (catches truncation and re-chaining)")
    kg = sub.add_parser("keygen", help="write an Ed25519 key pair for signing journals and runs (never over a key)")
    kg.add_argument("--out", type=Path, required=True,
                    help="directory for witprobe-signing.key (0600) and witprobe-signing.pub; keep it outside outputs")
    r = sub.add_parser("replay", help="replay an entry-read Parquet trace with a threshold sweep")
    r.add_argument("trace", type=Path, help="an entry-read trace: columnar Parquet with columns request, layer, head, "
                                          "step, witness, qn (docs/LEDGER.md)")
    r.add_argument("--thresholds", type=lambda t: tuple(float(x) for x in t.split(",")), default=THRESHOLDS,
                   help="comma-separated thresholds to sweep (default: %(default)s)")
    r.add_argument("--out", type=Path, default=None, help="write the sweep as JSON here")
    r.add_argument("--force", action="store_true", help="replace an existing --out FILE")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    rec = sub.add_parser("record", help="record a trace from SmolLM2 (writes.parquet, witness.parquet, manifest.json)")
    rec.add_argument("--out", type=Path, required=True, help="output directory (the test fixture is tests/fixtures/ledger)")
    rec.add_argument("--force", action="store_true", help="replace a trace record wrote there before")
    st = sub.add_parser("sentinel", help="sampling sentinel: corrupt B pool blocks, measure detection latency against n(delta)")
    st.add_argument("--corrupt", type=int, default=4, help="corrupted blocks B per trial (default: %(default)s)")
    st.add_argument("--draws", type=int, default=8, help="blocks r drawn per round, with replacement (default: %(default)s)")
    st.add_argument("--delta", type=fraction_arg, default=Fraction(1, 100), help="confidence level of n(delta) (default: 1/100)")
    st.add_argument("--trials", type=int, default=1000, help="corruption trials (default: %(default)s)")
    st.add_argument("--alpha", type=float, default=1e-3, help="false-disagreement level of the binomial checks (default: %(default)s)")
    st.add_argument("--seed", type=int, default=0)
    st.add_argument("--trace", type=Path, default=DEFAULT_FIXTURE, help="recorded trace that fills the pool")
    st.add_argument("--decode-steps", type=int, default=4, help="decode steps per request while filling the pool (default: %(default)s)")
    st.add_argument("--out", type=Path, default=None, help="also write the JSON result here")
    st.add_argument("--force", action="store_true", help="replace an existing --out FILE")
    cp = sub.add_parser("campaign", help="discrimination campaign: 8 registered arms (invalidation x pool x concurrency), adjudicated")
    cp.add_argument("--out", type=Path, required=True, help="output directory (arms/, findings.json)")
    cp.add_argument("--trace", type=Path, default=DEFAULT_FIXTURE)
    cp.add_argument("--accounts", type=int, default=8)
    cp.add_argument("--decode-steps", type=int, default=None, help="decode steps per request (default: all recorded)")
    cp.add_argument("--seed", type=int, default=0)
    cp.add_argument("--force", action="store_true", help="replace a campaign output (only its unchanged files)")
    e = sub.add_parser("reads", help="expand a recorded trace's witnesses to an entry-read Parquet trace")
    e.add_argument("--trace", type=Path, default=DEFAULT_FIXTURE)
    e.add_argument("--out", type=Path, required=True)
    e.add_argument("--force", action="store_true", help="replace an existing --out FILE")
    from witprobe.serving.live import add_parser as add_live

    add_live(sub)
    return p


def _cmd_simulate(a: argparse.Namespace) -> int:
    from witprobe.ledger.acceptance import run_gate
    from witprobe.ledger.replica import run_replicas
    from witprobe.ledger.simulate import SimConfig, load_trace, run_rank, write_manifest

    cfg = SimConfig(trace=a.trace, accounts=a.accounts, workers=a.workers, ranks=a.ranks, nonce=a.nonce,
                    delta_req=a.delta_req, auth_thr=a.auth_thr, read_thr=a.read_thr or dict(a.auth_thr),
                    decode_steps=a.decode_steps, max_rows=a.max_rows, fault=a.fault, seed=a.seed,
                    sign_key=a.sign.absolute() if a.sign else None)
    if a.sign is not None:
        from witprobe.signing import check_outside, load_private

        load_private(a.sign)  # unreadable: exit 2 before any work
        check_outside(a.sign, a.out)
    try:
        cfg.validate()
        if not 0 < cfg.delta_req <= 1:
            raise ValueError(f"--delta-req must lie in (0, 1], got {cfg.delta_req}")
        meta, _ = load_trace(cfg.trace)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    out = a.out.absolute()
    safe_output.hold(out)  # one writer until the gate is written
    with safe_output.new_output_dir(out, SIMULATE_TOOL, a.force) as tmp:
        write_manifest(cfg, tmp, meta)
        if cfg.ranks == 1:
            run_rank(cfg, tmp, 0, progress=not a.quiet)
        else:
            run_replicas(cfg, tmp, progress=not a.quiet)
    rep = run_gate(out, key=_public_key(a.sign))
    print(json.dumps(rep.as_dict(), indent=1, default=str))
    return EXIT_OK if rep.passed else EXIT_FAIL


def _public_key(path: Path | None):  # noqa: ANN202 - VerifyKey | None, imported lazily
    """The public key in ``path`` (a private key file gives its public half); None without one."""
    if path is None:
        return None
    from witprobe.signing import load_public

    return load_public(path)


def _cmd_campaign(a: argparse.Namespace) -> int:
    from witprobe.campaign.ledger import FINDINGS_FILE, run_campaign
    from witprobe.ledger.simulate import SimConfig, load_trace

    base = SimConfig(trace=a.trace, accounts=a.accounts, decode_steps=a.decode_steps, seed=a.seed)
    try:
        base.validate()
        load_trace(base.trace)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    out = a.out.absolute()
    safe_output.hold(out)
    with safe_output.new_output_dir(out, "witprobe.ledger campaign", a.force) as tmp:
        body = run_campaign(tmp, base)
    print(f"{'arm':<16} {'reads':>9} {'corrupted':>9} {'acc_pm':>6} {'evictions':>9} {'reuses':>6} {'hits':>5}  gate")
    for name, arm in body["arms"].items():
        g = arm["registered"]
        print(f"{name:<16} {arm['reads']:>9} {arm['corrupted_reads']:>9} {arm['acc_pm']:>6} {g['evictions']:>9} "
              f"{g['reuses']:>6} {g['prefix_hits']:>5}  {'pass' if arm['gate_passed'] else 'FAIL ' + ','.join(arm['gate_failed'])}")
    for f in body["findings"]:
        tail = f"effect {f['effect_pm']:+d} per mille" if f["verdict"] == "accepted" else f["reason"]
        print(f"{f['verdict'].upper():<8} {f['comparison']}: {f['claim']} ({f['a']} vs {f['b']}"
              f"{', mediators ' + '+'.join(f['mediators']) if f['mediators'] else ''}): {tail}")
    print(f"findings: {out / FINDINGS_FILE}")
    return EXIT_OK


def _cmd_sentinel(a: argparse.Namespace) -> int:
    import tempfile

    from witprobe.ledger.sentinel import corruption_trials, detection_rounds, latency_agreement
    from witprobe.ledger.simulate import SimConfig, load_trace, serve

    cfg = SimConfig(trace=a.trace, decode_steps=a.decode_steps, workers=2)
    try:
        cfg.validate()
        if a.trials < 1 or a.draws < 1 or a.corrupt < 1 or not 0 < a.alpha < 1 or not 0 < a.delta < 1:
            raise ValueError("--trials, --draws and --corrupt must be positive; --alpha and --delta in (0, 1)")
        load_trace(cfg.trace)
    except (ValueError, OSError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    if a.out is not None:
        safe_output.check_new_file(a.out, a.force)  # before the trials
    with tempfile.TemporaryDirectory(prefix="witprobe-sentinel-") as tmp:
        eng, _ = serve(cfg, Path(tmp))
    rec = eng.record
    assert rec is not None
    M = len(rec.blocks)
    if a.corrupt > M:
        print(f"error: --corrupt {a.corrupt} exceeds the pool's {M} blocks", file=sys.stderr)
        return EXIT_USAGE
    clean = [b for b in rec.blocks if not rec.matches(b)]
    if clean:
        print(f"error: the writer's record disagrees with {len(clean)} blocks before any corruption", file=sys.stderr)
        return EXIT_FAIL
    n = detection_rounds(M, a.corrupt, a.draws, a.delta)
    lat = corruption_trials(rec, eng.overwrite_block, a.corrupt, a.draws, a.trials, a.seed, max_rounds=50 * n)
    res = latency_agreement(lat, M, a.corrupt, a.draws, a.delta, a.alpha)
    body = {**res.as_dict(), "pool": {"blocks": M, "families": sorted({f for f, _ in rec.blocks})},
            "command": "python -m witprobe.ledger " + " ".join(sys.argv[1:])}
    text = json.dumps(body, indent=1)
    print(text)
    if a.out is not None:
        safe_output.write_file(a.out, text + "\n", force=a.force)
    print(f"sentinel: {'agrees' if res.agrees else 'DISAGREES'} with n(delta) = {n} "
          f"({res.detected_within_n:.4f} detected within n(delta), at least {res.min_detected_within_n:.4f} required)",
          file=sys.stderr)
    return EXIT_OK if res.agrees else EXIT_FAIL


def _cmd_gate(a: argparse.Namespace) -> int:
    from witprobe.ledger.acceptance import run_gate

    if not a.dir.is_dir():
        print(f"error: {a.dir} is not a directory", file=sys.stderr)
        return EXIT_USAGE
    key = _public_key(a.key)
    if (a.dir / "manifest.json").is_file():  # present but unreadable is bad input (exit 2); absent is a gate fail
        read_json_object(a.dir / "manifest.json")
    rep = run_gate(a.dir, key=key)
    print(json.dumps(rep.as_dict(), indent=1, default=str))
    return EXIT_OK if rep.passed else EXIT_FAIL


_SQLITE_MAGIC = b"SQLite format 3\x00"


def _cmd_verify(a: argparse.Namespace) -> int:
    from witprobe.ledger.journal import verify
    from witprobe.ledger.signed_head import parse_expected

    key = _public_key(a.key)
    expect = parse_expected(a.expect_head) if a.expect_head is not None else None
    if not a.journal.is_file():
        print(f"error: {a.journal}: no such file", file=sys.stderr)
        return EXIT_USAGE
    with open(a.journal, "rb") as f:
        if f.read(len(_SQLITE_MAGIC)) != _SQLITE_MAGIC:  # not a journal at all: bad input, not a bad record
            raise InputError(a.journal, "", "not a witprobe journal (no SQLite header)")
    res = verify(a.journal, key=key, expect=expect)
    print(json.dumps(res.as_dict(), indent=1))
    if key is None and res.status != "bad":
        print("verify: note: the journal is only hash-chained: anyone who can write it can re-chain it "
              "(pass --key PUB to require signed heads)", file=sys.stderr)
    if res.status == "ok":
        signed = f", signed heads verified under key {key.key_id[:16]}" if key is not None else ""
        print(f"verify: ok ({res.n_records} records, head {res.head[:16]}{signed})", file=sys.stderr)
        return EXIT_OK
    if res.status == "unclosed":
        print(f"verify: unclosed ({res.n_records} records valid, no close record: the writer did not shut down)",
              file=sys.stderr)
        return EXIT_FAIL
    print(f"verify: first bad record {res.first_bad}: {res.reason}", file=sys.stderr)
    return EXIT_FAIL


def _cmd_keygen(a: argparse.Namespace) -> int:
    from witprobe.signing import generate, load_public

    priv, pub = generate(a.out)
    print(json.dumps({"private_key": str(priv), "public_key": str(pub), "key_id": load_public(pub).key_id}))
    print(f"keygen: keep {priv} secret and outside every output directory; give {pub} to whoever verifies",
          file=sys.stderr)
    return EXIT_OK


def _cmd_replay(a: argparse.Namespace) -> int:
    from witprobe.ledger.replay import replay, write_report
    from witprobe.ledger.trace import TraceError

    if a.out:
        safe_output.check_new_file(a.out, a.force)  # before the sweep
    try:
        res = replay(a.trace, a.thresholds, progress=not a.quiet)
    except (TraceError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(f"{'W_thr':>7} {'retention':>10} {'TV_step<=':>12} {'median req':>11} {'page-in MiB':>12}")
    for r in res.rows():
        tv = f"{r['tv_step_bound']:.4g}" + (" (vac)" if r["vacuous"] else "")
        print(f"{r['w_thr']:>7g} {r['retention']:>10.4f} {tv:>12} {r['median_request_retention']:>11.4f} {r['pagein_mib']:>12.1f}")
    print(f"{res.n_reads:,} entry reads in {res.wall_s:.2f} s ({res.n_reads / max(res.wall_s, 1e-9) / 1e6:.1f} M reads/s); sum delta = 0")
    if a.out:
        write_report(res, a.out, force=a.force)
    return EXIT_OK


def _cmd_record(a: argparse.Namespace) -> int:
    from witprobe.ledger.trace import RECORD_TOOL, record

    safe_output.hold(a.out)
    safe_output.check_replaceable(a.out, a.force, RECORD_TOOL)  # before loading the model
    man = record(a.out, force=a.force)
    print(json.dumps({"out": str(a.out), "rows": man["rows"]}))
    return EXIT_OK


def _cmd_reads(a: argparse.Namespace) -> int:
    from witprobe.ledger.replay import expand_reads
    from witprobe.ledger.trace import TraceError

    try:
        info = expand_reads(a.trace, a.out, force=a.force)
    except TraceError as e:
        print(f"error: {e}", file=sys.stderr)
        return EXIT_USAGE
    print(json.dumps(info))
    return EXIT_OK


def _cmd_live(a: argparse.Namespace) -> int:
    from witprobe.serving.live import run

    return run(a)


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    handler = {"simulate": _cmd_simulate, "gate": _cmd_gate, "verify": _cmd_verify, "replay": _cmd_replay,
               "record": _cmd_record, "reads": _cmd_reads, "live": _cmd_live,
               "sentinel": _cmd_sentinel, "campaign": _cmd_campaign, "keygen": _cmd_keygen}[args.command]
    return run_handler(handler, args, "witprobe.ledger")
