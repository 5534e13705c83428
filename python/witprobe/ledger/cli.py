"""Command line: ``python -m witprobe.ledger {simulate,gate,verify,replay,record,reads}``.

Exit codes:

====  ==========================================================================================
0     pass (simulate/gate: every criterion holds; verify: the journal is valid; replay: done)
1     fail (a gate criterion failed; the journal has a bad record, named on stdout)
2     usage error (bad option, missing or corrupt input, unwritable output, existing output without
      --force, --force on a directory that is not a ledger run)
4     internal error
130   interrupted (``simulate`` writes into a temporary folder renamed into place at the end, so an
      interrupted run leaves nothing behind)
141   broken pipe
====  ==========================================================================================
"""

from __future__ import annotations

import argparse
import json
import os
import re
import shutil
import sys
import tempfile
from fractions import Fraction
from pathlib import Path

from witprobe.cliutil import (EXIT_INTERNAL, EXIT_USAGE, InputError, UsageError, add_version, quiet_third_party,
                              check_writable, read_json_object, run_handler, wants_quiet)

EXIT_OK, EXIT_FAIL = 0, 1
__all__ = ["EXIT_OK", "EXIT_FAIL", "EXIT_USAGE", "EXIT_INTERNAL", "main"]
SIM_TOOL = "witprobe.ledger simulate"
SIM_FILES = re.compile(r"(manifest\.json|coupling\.json|gate\.json|\.dist_init|ledger\.rank\d+\.json"
                       r"|journal\.rank\d+\.sqlite(-wal|-shm|-journal)?)(\.tmp)?")
"""Every file ``simulate`` (and the gate it runs) writes into its output directory."""
SQLITE_MAGIC = b"SQLite format 3\x00"


def _family_map(text: str, cast=float) -> dict[str, float]:
    """``key=9,value=0.3`` -> ``{"key": 9.0, "value": 0.3}``."""
    out = {}
    for part in text.split(","):
        name, sep, val = part.partition("=")
        if not sep:
            raise argparse.ArgumentTypeError(f"expected family=value pairs, got {part!r}")
        try:
            out[name.strip()] = cast(val)
        except ValueError:
            raise argparse.ArgumentTypeError(f"{name}: {val!r} is not a number") from None
    return out


def _parser() -> argparse.ArgumentParser:
    from witprobe.ledger.replay import THRESHOLDS
    from witprobe.ledger.simulate import DEFAULT_AUTH_THR, FAULTS
    from witprobe.ledger.trace import DEFAULT_FIXTURE

    p = argparse.ArgumentParser(prog="python -m witprobe.ledger", description="The request-level risk ledger.")
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
    s.add_argument("--delta-req", type=Fraction, default=Fraction(1, 100), help="per-request budget (default: 1/100)")
    s.add_argument("--nonce", type=int, default=0x5EED, help="server nonce of the RNG key (default: %(default)s)")
    s.add_argument("--decode-steps", type=int, default=None, help="decode steps per request (default: all recorded)")
    s.add_argument("--max-rows", type=int, default=3, help="rows per batch at most (default: %(default)s)")
    s.add_argument("--seed", type=int, default=0, help="scheduler seed (default: %(default)s)")
    s.add_argument("--fault", choices=FAULTS, default="none", help="inject a fault the gate must catch (default: none)")
    s.add_argument("--force", action="store_true",
                   help="replace an existing simulate output directory (refused for any other directory)")
    s.add_argument("--quiet", action="store_true")
    g = sub.add_parser("gate", help="decide the twelve criteria of a run directory (JSON on stdout, exit code = verdict)")
    g.add_argument("dir", type=Path)
    v = sub.add_parser("verify", help="verify a journal: chain, hashes, ledger arithmetic; names the first bad record")
    v.add_argument("journal", type=Path)
    r = sub.add_parser("replay", help="replay an entry-read Parquet trace with a threshold sweep")
    r.add_argument("trace", type=Path)
    r.add_argument("--thresholds", type=lambda t: tuple(float(x) for x in t.split(",")), default=THRESHOLDS)
    r.add_argument("--out", type=Path, default=None, help="write the sweep as JSON here")
    r.add_argument("--quiet", action="store_true", help="no progress bar")
    rec = sub.add_parser("record", help="record a trace from SmolLM2 (writes.parquet, witness.parquet, manifest.json)")
    rec.add_argument("--out", type=Path, default=DEFAULT_FIXTURE)
    e = sub.add_parser("reads", help="expand a recorded trace's witnesses to an entry-read Parquet trace")
    e.add_argument("--trace", type=Path, default=DEFAULT_FIXTURE)
    e.add_argument("--out", type=Path, required=True)
    return p


def _cmd_simulate(a: argparse.Namespace) -> int:
    from witprobe.ledger.gate import run_gate
    from witprobe.ledger.replica import run_replicas
    from witprobe.ledger.simulate import SimConfig, load_trace, run_rank, write_manifest

    cfg = SimConfig(trace=a.trace, accounts=a.accounts, workers=a.workers, ranks=a.ranks, nonce=a.nonce,
                    delta_req=a.delta_req, auth_thr=a.auth_thr, read_thr=a.read_thr or dict(a.auth_thr),
                    decode_steps=a.decode_steps, max_rows=a.max_rows, fault=a.fault, seed=a.seed)
    if a.quiet:
        quiet_third_party()
    try:
        cfg.validate()
        if not 0 < cfg.delta_req <= 1:
            raise ValueError(f"--delta-req must lie in (0, 1], got {cfg.delta_req}")
        meta, _ = load_trace(cfg.trace)
    except (ValueError, OSError) as e:
        raise UsageError(str(e)) from None
    _prepare_sim_out(a.out, a.force)
    a.out.parent.mkdir(parents=True, exist_ok=True)
    tmp = Path(tempfile.mkdtemp(prefix=f".{a.out.name}.tmp-", dir=a.out.parent))
    try:  # built in a temporary sibling, renamed into place only when complete
        write_manifest(cfg, tmp, meta)
        if cfg.ranks == 1:
            run_rank(cfg, tmp, 0, progress=not a.quiet)
        else:
            run_replicas(cfg, tmp, progress=not a.quiet)
        _prepare_sim_out(a.out, a.force)
        if a.out.exists() and any(a.out.iterdir()):
            _remove_sim_files(a.out)
        elif a.out.exists():
            a.out.rmdir()
        os.replace(tmp, a.out)
    finally:
        if tmp.exists():
            shutil.rmtree(tmp, ignore_errors=True)
    rep = run_gate(a.out)
    print(json.dumps(rep.as_dict(), indent=1, default=str))
    return EXIT_OK if rep.passed else EXIT_FAIL


def sim_dir_problem(out: Path) -> str:
    """Why ``out`` is not a ``simulate`` output directory ('' when it is one)."""
    if not out.is_dir():
        return f"{out} is not a directory"
    man = out / "manifest.json"
    try:
        tool = json.loads(man.read_text(encoding="utf-8")).get("tool")
    except (OSError, ValueError, AttributeError):
        tool = None
    if tool != SIM_TOOL:
        return f"{out}/manifest.json is not a {SIM_TOOL} manifest"
    foreign = sorted(p.name for p in out.iterdir() if not (p.is_file() and SIM_FILES.fullmatch(p.name)))
    if foreign:
        return f"{out} holds files witprobe did not write: {', '.join(foreign[:3])}"
    return ""


def _prepare_sim_out(out: Path, force: bool) -> None:
    if out.exists() or out.is_symlink():
        if not out.is_dir() or out.is_symlink():
            raise UsageError(f"{out} exists and is not a directory")
        if any(out.iterdir()):
            if not force:
                raise UsageError(f"{out} exists and is not empty (use --force to replace a simulate output)")
            problem = sim_dir_problem(out)
            if problem:
                raise UsageError(f"--force replaces only a simulate output directory: {problem}")
    check_writable(out)


def _remove_sim_files(out: Path) -> None:
    """Remove what ``simulate`` wrote (checked by :func:`sim_dir_problem`), then the folder."""
    for p in out.iterdir():
        if p.is_file() and SIM_FILES.fullmatch(p.name):
            p.unlink()
    out.rmdir()


def _check_json_inputs(d: Path) -> None:
    """The gate's JSON inputs must parse: a corrupt one is a usage error naming the file."""
    for p in sorted(d.iterdir()):
        if p.name == "manifest.json" or re.fullmatch(r"ledger\.rank\d+\.json", p.name):
            read_json_object(p)


def _cmd_gate(a: argparse.Namespace) -> int:
    from witprobe.ledger.gate import run_gate

    if not a.dir.is_dir():
        raise UsageError(f"{a.dir} is not a directory")
    _check_json_inputs(a.dir)
    rep = run_gate(a.dir)
    print(json.dumps(rep.as_dict(), indent=1, default=str))
    return EXIT_OK if rep.passed else EXIT_FAIL


def _cmd_verify(a: argparse.Namespace) -> int:
    from witprobe.ledger.journal import verify

    if not a.journal.is_file():
        raise UsageError(f"{a.journal}: no such file")
    with open(a.journal, "rb") as f:
        magic = f.read(len(SQLITE_MAGIC))
    if magic != SQLITE_MAGIC:
        raise InputError(a.journal, "", "not a journal: no SQLite header (file is corrupt or of another kind)")
    res = verify(a.journal)
    if not res.ok and res.n_records == 0 and ("no such table" in res.reason or "not a database" in res.reason):
        raise InputError(a.journal, "journal", f"not a witprobe journal ({res.reason})")
    print(json.dumps(res.as_dict(), indent=1))
    if res.ok:
        print(f"verify: ok ({res.n_records} records, head {res.head[:16]})", file=sys.stderr)
        return EXIT_OK
    print(f"verify: first bad record {res.first_bad}: {res.reason}", file=sys.stderr)
    return EXIT_FAIL


def _cmd_replay(a: argparse.Namespace) -> int:
    from witprobe.ledger.replay import replay, write_report
    from witprobe.ledger.trace import TraceError

    if a.quiet:
        quiet_third_party()
    try:
        res = replay(a.trace, a.thresholds, progress=not a.quiet)
    except (TraceError, ValueError) as e:
        raise UsageError(str(e)) from None
    print(f"{'W_thr':>7} {'retention':>10} {'TV_step<=':>12} {'median req':>11} {'page-in MiB':>12}")
    for r in res.rows():
        tv = f"{r['tv_step_bound']:.4g}" + (" (vac)" if r["vacuous"] else "")
        print(f"{r['w_thr']:>7g} {r['retention']:>10.4f} {tv:>12} {r['median_request_retention']:>11.4f} {r['pagein_mib']:>12.1f}")
    print(f"{res.n_reads:,} entry reads in {res.wall_s:.2f} s ({res.n_reads / max(res.wall_s, 1e-9) / 1e6:.1f} M reads/s); sum delta = 0")
    if a.out:
        write_report(res, a.out)
    return EXIT_OK


def _cmd_record(a: argparse.Namespace) -> int:
    from witprobe.ledger.trace import record

    man = record(a.out)
    print(json.dumps({"out": str(a.out), "rows": man["rows"]}))
    return EXIT_OK


def _cmd_reads(a: argparse.Namespace) -> int:
    from witprobe.ledger.replay import expand_reads
    from witprobe.ledger.trace import TraceError

    try:
        info = expand_reads(a.trace, a.out)
    except TraceError as e:
        raise UsageError(str(e)) from None
    print(json.dumps(info))
    return EXIT_OK


def main(argv: list[str] | None = None) -> int:
    if wants_quiet(argv):
        quiet_third_party()  # before the parser imports transformers (tqdm reads its switch at import)
    args = _parser().parse_args(argv)
    handler = {"simulate": _cmd_simulate, "gate": _cmd_gate, "verify": _cmd_verify, "replay": _cmd_replay,
               "record": _cmd_record, "reads": _cmd_reads}[args.command]
    return run_handler(handler, args, "witprobe.ledger")
