"""Command line: ``python -m witprobe.certify {run,check,show,report,doctor,coverage}``.

Exit codes (documented in the README, each tested):

====  ==========================================================================
0     ok (run: every self-check is 0, no bound was beaten, and the run did not diverge end to end;
      check: identical, and with ``--key`` signature.json verifies)
1     a self-check or a bound failed (run), or the directory does not re-derive (check; show and report:
      the certificate is not the one run.json and its recorded kernel outcomes give, e.g. a bound below
      its realized value: it is printed as NOT VERIFIED, never with its own verdict)
5     run: the verdict is pass (every per-layer bound held) but the served next-token distribution
      diverged end to end: its largest TV exceeds ``--e2e-tv-tol`` (a reading, no bound covers it)
2     usage error (bad option or combination, unknown model or codec, unwritable or existing output
      without --force, --force on a directory that is not a witprobe run, a corrupt input file, a
      key file (``run --sign``, ``check --key``) that cannot be read)
3     ``--coq required`` or ``--lean required`` and that kernel (or its library) is not available
4     internal error
130   interrupted (nothing half-written is left behind)
141   broken pipe (the reader of stdout went away)
====  ==========================================================================

Every usage error is caught before any measurement (:mod:`witprobe.cliutil`).
"""

from __future__ import annotations

import argparse
import io
import os
import re
import sys
import time
from pathlib import Path

from witprobe.cliutil import (EXIT_INTERNAL, EXIT_USAGE, OneLineParser, UsageError, add_version,
                              quiet_third_party, read_json_object, read_with, run_handler, terminal_safe, wants_quiet)
from witprobe.certify.task_report import compare_tasks, format_tasks
from witprobe.probe.errors import MeterInputError

EXIT_OK, EXIT_FAIL, EXIT_NO_LEAN = 0, 1, 3
__all__ = ["EXIT_OK", "EXIT_FAIL", "EXIT_USAGE", "EXIT_NO_LEAN", "EXIT_INTERNAL", "main"]


def _parser() -> argparse.ArgumentParser:
    from witprobe.memory.codec_plugins import ENTRY_POINT_GROUP, entry_points
    from witprobe.memory.codecs import CODECS
    from witprobe.models.prompts import DEFAULT_PROMPTS
    from witprobe.models.zoo import DEFAULT_MODEL, MODELS

    p = OneLineParser(
        prog="python -m witprobe.certify",
        description="Certify compressed attention memory on a model: measure, bound, and check with Coq.",
    )
    add_version(p)
    sub = p.add_subparsers(dest="command", required=True)
    codec_lines = "\n".join(f"  {name:<12} {CODECS[name].summary}" for name in sorted(CODECS))
    plugins = sorted(entry_points().items())
    plugin_lines = "\n".join(f"  {name:<12} {ep.value} ({ep.dist.name if ep.dist else 'no distribution'})"
                             for name, ep in plugins) or "  (none installed)"
    r = sub.add_parser("run", help="measure a run and write run.json, obligations/ and certificate.json",
                       formatter_class=argparse.RawDescriptionHelpFormatter,
                       epilog=f"built-in codecs (--codec; docs/CODECS.md):\n{codec_lines}\n\n"
                              f"installed codec plugins (entry points {ENTRY_POINT_GROUP!r}; docs/PLUGINS.md):\n"
                              f"{plugin_lines}\n\n"
                              "exit codes: 0 pass and close end to end; 1 fail; 2 usage; 3 kernel required but "
                              "missing; 4 internal; 5 pass but diverged end to end")
    r.add_argument("--model", default=DEFAULT_MODEL, metavar="NAME|DIR|FILE.gguf",
                   help=f"a zoo configuration ({', '.join(sorted(MODELS))}), a local transformers model directory "
                        "(config.json, weights, tokenizer) or a GGUF file (default: %(default)s)")
    r.add_argument("--codec", default=None, metavar="CODEC",
                   help="codec for K/V: a built-in codec or an installed plugin listed below, with parameters as "
                        "NAME(k=v, ...), or any codec class, eviction policy class or factory by import path, "
                        "package.module:Attr(k=v, ...) (docs/PLUGINS.md) (default: int8)")
    r.add_argument("--press", default=None, metavar="PRESS",
                   help="a kvpress press instead of --codec, by import path with parameters, e.g. "
                        "'kvpress:SnapKVPress(compression_ratio=0.5)': its prefill scores choose the entries evicted, "
                        "and the read meter bounds the attention mass they carried (kvpress ScorerPress presses; "
                        "docs/KVPRESS.md)")
    r.add_argument("--task", action="append", default=None, metavar="niah|ppl|FILE.jsonl",
                   help="add a task reading beside the bounds, served compressed and uncompressed (repeatable): "
                        "niah (built-in needle in a haystack, 8 haystacks of about 300 tokens), ppl (perplexity on "
                        "shipped text), or exact match on FILE.jsonl ({\"prompt\" or \"messages\", \"answer\"} per "
                        "line); readings, never bounds (dense KV models)")
    r.add_argument("--bands", type=int, default=4, help="bands per entry for the codec and witness (default: %(default)s)")
    r.add_argument("--max-new-tokens", type=int, default=24, help="greedy tokens per prompt (default: %(default)s)")
    r.add_argument("--prompt", action="append", default=None, help="a prompt (repeatable; default: %d built-in prompts)" % len(DEFAULT_PROMPTS))
    r.add_argument("--prompts", type=Path, default=None, metavar="FILE",
                   help="prompts from a file: plain text, one per line, or .jsonl with chat messages "
                        "({\"messages\": [{\"role\": ..., \"content\": ...}]}); chat templates are applied when the "
                        "tokenizer has one")
    r.add_argument("--batch", type=int, default=1, metavar="N",
                   help="serve N requests together in one forward, left-padded to the longest (dense KV models and "
                        "per-entry codecs; padded positions are left out of every meter) (default: %(default)s)")
    r.add_argument("--box-sup", choices=("on", "off"), default="on",
                   help="meter the empirical box-sup TV bound beside the certified forms; off saves most of the "
                        "metering time of long contexts and changes no certified claim (default: %(default)s)")
    r.add_argument("--query-aligned", type=int, default=0, metavar="RANK",
                   help="also store a rank-RANK query-aligned witness per key (bases calibrated on 3 built-in prompts "
                        "disjoint from the measured ones; 2 RANK + 8 bytes per key entry and KV head) and claim the box "
                        "bound over its radii where it is the tightest (dense KV; default: %(default)s, off)")
    r.add_argument("--keys-only", action="store_true", help="compress keys only (values stay exact)")
    r.add_argument("--no-reference", action="store_true",
                   help="skip the uncompressed reference (no end-to-end readings: end-to-end is 'not measured')")
    r.add_argument("--e2e-tv-tol", type=float, default=0.1,
                   help="largest next-token TV (served vs uncompressed, same prefix) before the run counts as "
                        "diverged end to end, exit 5 (default: %(default)s; 1 never diverges)")
    r.add_argument("--out", type=Path, default=None, help="output directory (default: runs/<model>-<codec>-<UTC time>)")
    r.add_argument("--lean", choices=("auto", "required", "off"), default="auto",
                   help="auto: check with Lean if found; required: exit 3 without Lean; off: never (default: %(default)s)")
    r.add_argument("--coq", choices=("auto", "required", "off"), default="auto",
                   help="auto: kernel-check the claim theorems with Coq if found; required: exit 3 without Coq; "
                        "off: never (default: %(default)s)")
    r.add_argument("--force", action="store_true",
                   help="replace a run directory certify run wrote, removing only its unchanged files "
                        "(refused if anything else is there)")
    r.add_argument("--sign", type=Path, default=None, metavar="KEY",
                   help="sign run.json and certificate.json with this Ed25519 private key (kept outside --out; "
                        "python -m witprobe.ledger keygen makes one): writes signature.json (docs/SIGNING.md)")
    r.add_argument("--quiet", action="store_true", help="no progress on stderr (third-party progress bars included)")
    c = sub.add_parser("check", help="re-derive a run directory's certificate from its run.json and compare")
    c.add_argument("dir", type=Path, help="a run directory written by certify run")
    c.add_argument("--key", type=Path, default=None, metavar="PUB",
                   help="also require signature.json to verify under this Ed25519 public key (docs/SIGNING.md)")
    s = sub.add_parser("show", help="print the per-layer table of a run directory")
    s.add_argument("dir", type=Path, help="a run directory (run.json and certificate.json)")
    s.add_argument("--format", choices=("table", "csv", "json"), default="table",
                   help="table: the per-layer table and summary; csv/json: one row per claim (id, kind, layer, "
                        "metric, form, exact bound and its decimal rounded up, vacuous, realized, tightness, "
                        "tier, reason) (default: %(default)s)")
    cmp_ = sub.add_parser("compare", help="line up two run directories' claims: bounds, realized values, tiers and "
                                          "their differences")
    cmp_.add_argument("dir_a", type=Path, help="run directory A")
    cmp_.add_argument("dir_b", type=Path, help="run directory B (differences are B - A)")
    rep = sub.add_parser("report", help="write a self-contained report.html (inline CSS and SVG plots) of a run directory")
    rep.add_argument("dir", type=Path, help="a run directory (run.json and certificate.json)")
    rep.add_argument("--out", type=Path, default=None, metavar="FILE", help="the page to write (default: DIR/report.html)")
    rep.add_argument("--force", action="store_true", help="replace an existing --out FILE")
    sub.add_parser("doctor", help="report the environment: torch, transformers, Lean, Triton, GPU")
    sch = sub.add_parser("schema", help="print the JSON Schema of run.json or certificate.json (generated from the "
                                        "record types)")
    sch.add_argument("--certificate", action="store_true", help="certificate.json's schema instead of run.json's")
    sch.add_argument("--out", type=Path, default=None, metavar="FILE", help="write it to FILE instead of stdout")
    sch.add_argument("--force", action="store_true", help="replace an existing --out FILE")
    cov = sub.add_parser("coverage", help="certify every zoo configuration and write the coverage table")
    cov.add_argument("--out", type=Path, default=Path("artifacts") / "coverage")
    cov.add_argument("--models", nargs="+", default=None, choices=sorted(MODELS))
    cov.add_argument("--codec", default="int8", choices=sorted(CODECS))
    cov.add_argument("--max-new-tokens", type=int, default=24)
    cov.add_argument("--lean", choices=("auto", "required", "off"), default="auto")
    cov.add_argument("--coq", choices=("auto", "required", "off"), default="auto")
    cov.add_argument("--force", action="store_true", help="replace the run directories and tables a previous "
                     "coverage wrote in --out (refused if they changed)")
    cov.add_argument("--quiet", action="store_true")
    return p


def default_out(model: str, codec: str, root: Path = Path("runs")) -> Path:
    """``runs/<model>-<codec>-<UTC time>`` (a path model is named by its file or folder name),
    with ``-2``, ``-3``, ... appended when that directory already exists."""
    slug = re.sub(r"[^A-Za-z0-9._-]+", "_", Path(model).name if ("/" in model or model.endswith(".gguf")) else model)
    codec_slug = re.sub(r"[^A-Za-z0-9._-]+", "_", codec.rpartition(":")[2]).strip("._") or "codec"  # a plugin spec: its class
    base = root / f"{slug.strip('._') or 'model'}-{codec_slug}-{time.strftime('%Y%m%d-%H%M%S', time.gmtime())}"
    out, n = base, 1
    while out.exists():
        n += 1
        out = base.with_name(f"{base.name}-{n}")
    return out


def _cmd_run(args: argparse.Namespace) -> int:
    from witprobe.certify import RUN_TOOL
    from witprobe.cliutil import check_writable
    from witprobe.models.prompts import DEFAULT_PROMPTS, read_prompts
    from witprobe.safe_output import check_replaceable

    if args.prompt and args.prompts:
        raise UsageError("--prompt and --prompts FILE cannot be combined; put every prompt in the file")
    for i, text in enumerate(args.prompt or (), start=1):
        try:
            text.encode("utf-8")  # a non-UTF-8 argument arrives as lone surrogates
        except UnicodeEncodeError as e:
            raise UsageError(f"--prompt number {i} is not UTF-8 text (an undecodable byte at character {e.start})") from None
    if args.press is not None and args.codec is not None:
        raise UsageError(f"--press and --codec {args.codec} cannot be combined: a press evicts exact entries, "
                         "and eviction and quantization together are not metered")
    # an --out that cannot be written is refused before the measurement is imported (with --sign, after the
    # key's own checks below, which say more: e.g. a key inside the output)
    if args.out is not None and args.sign is None:
        check_replaceable(args.out, args.force, RUN_TOOL)
        check_writable(args.out)

    from witprobe.certify.measure import MeasureConfig, check_compatible, measure
    from witprobe.certify.pipeline import prepare_output, write_run_dir
    from witprobe.certify.progress import Progress
    from witprobe.certify.report import print_summary, print_table
    from witprobe.formal import lean_runner
    from witprobe.memory.codec_base import CodecError
    from witprobe.memory.press import press_of
    from witprobe.models.loaded import ModelError
    from witprobe.models.zoo import check_model_ref, load_model

    if args.quiet:
        quiet_third_party()
    args.codec = args.press or args.codec or "int8"
    prompts = read_prompts(args.prompts) if args.prompts else tuple(args.prompt) if args.prompt else DEFAULT_PROMPTS
    cfg = MeasureConfig(
        model=args.model, codec=args.codec, bands=args.bands, compress_values=not args.keys_only,
        max_new_tokens=args.max_new_tokens, prompts=prompts,
        reference=not args.no_reference, e2e_tv_tolerance=args.e2e_tv_tol, batch=args.batch,
        box_sup=args.box_sup == "on", query_aligned=args.query_aligned, tasks=tuple(args.task or ()),
    )
    try:
        codec = cfg.validate()
        check_model_ref(args.model)
    except (ValueError, ModelError) as e:
        raise UsageError(str(e)) from None
    if args.press is not None and press_of(codec) is None:
        raise UsageError(f"--press {args.press} names no kvpress press (a codec or policy goes with --codec)")
    out = args.out or default_out(args.model, args.codec)
    signer = None
    if args.sign is not None:
        from witprobe.signing import check_outside, load_private

        signer = load_private(args.sign)  # unreadable: exit 2 before any measurement
        check_outside(args.sign, out)
    prepare_output(out, args.force)
    if args.lean == "required":
        missing = _lean_missing()
        if missing:
            print(f"error: --lean required but {missing}", file=sys.stderr)
            return EXIT_NO_LEAN
    if args.coq == "required":
        missing = _coq_missing()
        if missing:
            print(f"error: --coq required but {missing}", file=sys.stderr)
            return EXIT_NO_LEAN
    progress = Progress(quiet=args.quiet)
    progress.info(f"loading model {args.model}")
    try:
        loaded = load_model(args.model)
        check_compatible(cfg, loaded, codec)
    except (ModelError, ValueError) as e:
        raise UsageError(str(e)) from None
    progress.info(f"measuring {len(cfg.prompts)} requests with {cfg.codec} ({cfg.bands} bands)")
    try:
        run = measure(loaded, cfg, progress, codec=codec)
    except (MeterInputError, CodecError) as e:  # numbers the meter cannot bound; a press or policy that failed
        raise UsageError(f"cannot meter this run: {e}") from None
    kernels = [k for k, m in (("Coq", args.coq), ("Lean", args.lean)) if m != "off"]
    progress.info("deriving claims, rendering theorems" + (f", checking with {' and '.join(kernels)}" if kernels else ""))
    produced = write_run_dir(run, out, args.lean, force=args.force, coq_mode=args.coq, signer=signer)
    cert = produced.certificate
    print_table(cert, sys.stdout)
    print_summary(cert, sys.stdout)
    for line in format_tasks(run.to_json().get("tasks") or []):
        print(line)
    print(f"wrote {out}/run.json, {out}/certificate.json"
          + (f", {out}/obligations/run.v" if produced.coq_text else "")
          + (f", {out}/obligations/run_real.lean" if produced.lean_real_text else "")
          + (f", {out}/obligations/run.lean" if produced.lean_text else "")
          + (f", {out}/signature.json (key {signer.key_id[:16]})" if signer is not None else ""))
    if args.lean == "required" and (any(o["status"] != "kernel_checked" for o in cert["obligations"])
                                    or cert["summary"]["lean"]["kernel_checked"] < cert["summary"]["lean"]["theorems"]):
        return EXIT_FAIL
    if args.coq == "required" and cert["summary"]["coq"]["kernel_checked"] < cert["summary"]["coq"]["theorems"]:
        return EXIT_FAIL
    from witprobe.certify.verdict import run_exit_code

    return run_exit_code(cert["summary"], EXIT_OK, EXIT_FAIL)


def _lean_missing() -> str:
    """Why Lean cannot check a run here ('' when it can): toolchain, core project, analytic package."""
    from witprobe.formal import lean_runner

    tc, why = lean_runner.find_toolchain()
    if tc is None:
        return why
    if lean_runner.find_project() is None:
        return "the Lean project (lakefile.lean declaring package witprobe) was not found; set WITPROBE_LEAN_PROJECT"
    if lean_runner.find_analytic_project() is None:
        return ("the analytic Lean package (analytic/lakefile.lean) was not found; set WITPROBE_LEAN_ANALYTIC")
    return ""


def _coq_missing() -> str:
    """Why Coq cannot check claims here ('' when it can)."""
    from witprobe.formal import coq_runner

    tc, why = coq_runner.find_coqc()
    if tc is None:
        return why
    if coq_runner.find_library() is None:
        return "the witprobe Coq library (coq/_CoqProject) was not found; set WITPROBE_COQ_LIB"
    return ""


def _cmd_check(args: argparse.Namespace) -> int:
    from witprobe.certify import check
    from witprobe.certify.signature import SIGNATURE_FILE, check_signature

    key = None
    if args.key is not None:
        from witprobe.signing import load_public

        key = load_public(args.key)  # unreadable: exit 2 before any work
    if not args.dir.is_dir():
        raise UsageError(f"{args.dir} is not a directory")
    res = check.check_dir(args.dir)
    if key is not None:
        sig_problems = check_signature(args.dir, key)
        res.problems.extend(sig_problems)
        if not sig_problems:
            res.notes.append(f"{SIGNATURE_FILE} verifies under key {key.key_id[:16]}...: the key's holder signed "
                             "run.json and certificate.json (not a proof that the measurement is true)")
    elif (args.dir / SIGNATURE_FILE).is_file():
        res.notes.append(f"{SIGNATURE_FILE} was not checked (pass --key PUB): without it, nothing says who "
                         "produced these files")
    for n in res.notes:
        print(terminal_safe(f"note: {n}"))
    for p in res.problems:
        print(terminal_safe(f"DIFFERS: {p}"))
    print("check: ok" if res.ok else f"check: {len(res.problems)} problem(s)")
    return EXIT_OK if res.ok else EXIT_FAIL


def _cmd_show(args: argparse.Namespace) -> int:
    from witprobe.certify.certificate_record import load_certificate
    from witprobe.certify.recorded import verify_recorded
    from witprobe.certify.report import print_summary, print_table

    if not args.dir.is_dir():
        raise UsageError(f"{args.dir} is not a directory")
    path = args.dir / "certificate.json"
    cert = load_certificate(path)
    buf = io.StringIO()  # rendered whole first: a corrupt field never leaves half a table on stdout

    problems = verify_recorded(args.dir, cert)  # never print a verdict `check` would refuse

    def render(c: dict) -> None:
        if args.format != "table":
            from witprobe.certify.claim_rows import claim_rows, rows_csv, rows_json

            rows = claim_rows(c, verified=not problems)
            buf.write(rows_csv(rows) if args.format == "csv" else rows_json(rows, problems))
            if problems and args.format == "csv":
                print(f"NOT VERIFIED: {problems[0]}", file=sys.stderr)
            return
        if problems:
            print(f"NOT VERIFIED: {problems[0]}", file=buf)
        print_table(c, buf, verified=not problems)
        print_summary(c, buf, problems)
        if not problems:  # the task readings of a run.json that verified (a missing or edited one shows none)
            tasks = read_json_object(args.dir / "run.json", schema_prefix="witprobe-run/").get("tasks")
            for line in format_tasks(tasks if isinstance(tasks, list) else []):
                print(line, file=buf)

    read_with(path, cert, render)
    sys.stdout.write(terminal_safe(buf.getvalue()))
    return EXIT_FAIL if problems else EXIT_OK


def _cmd_compare(args: argparse.Namespace) -> int:
    from witprobe.certify.certificate_record import load_certificate
    from witprobe.certify.claim_rows import claim_rows, compare_rows, compare_text
    from witprobe.certify.recorded import verify_recorded

    rows, problems, tasks = [], [], []
    for d in (args.dir_a, args.dir_b):
        if not d.is_dir():
            raise UsageError(f"{d} is not a directory")
        path = d / "certificate.json"
        cert = load_certificate(path)
        bad = verify_recorded(d, cert)
        problems += [f"{d}: {p}" for p in bad]
        rows.append(read_with(path, cert, lambda c, ok=not bad: claim_rows(c, verified=ok)))
        found = read_json_object(d / "run.json", schema_prefix="witprobe-run/").get("tasks") if not bad else None
        tasks.append(found if isinstance(found, list) else [])  # only a run.json that verified is read
    both, only_a, only_b = compare_rows(*rows)
    text = "".join(f"NOT VERIFIED: {p}\n" for p in problems) + compare_text(both, only_a, only_b, str(args.dir_a),
                                                                             str(args.dir_b))
    text += "".join(f"{line}\n" for line in compare_tasks(*tasks, str(args.dir_a), str(args.dir_b)))
    sys.stdout.write(terminal_safe(text))
    return EXIT_FAIL if problems else EXIT_OK


def _cmd_report(args: argparse.Namespace) -> int:
    from witprobe.certify.html_report import write_report

    written, problems = write_report(args.dir, args.out, force=args.force)
    print(terminal_safe(f"wrote {written}"))
    for p in problems:
        print(terminal_safe(f"NOT VERIFIED: {p}"))
    return EXIT_FAIL if problems else EXIT_OK


def _cmd_doctor(_: argparse.Namespace) -> int:
    import os

    import torch
    import transformers

    from witprobe.version import __version__
    from witprobe.formal import lean_runner

    tc, why = lean_runner.find_toolchain()
    print(f"witprobe {__version__}; torch {torch.__version__}; transformers {transformers.__version__}")
    print(f"cuda available: {torch.cuda.is_available()}")
    print(f"TRITON_INTERPRET={os.environ.get('TRITON_INTERPRET', '')!r}")
    from witprobe.formal import coq_runner

    ctc, cwhy = coq_runner.find_coqc()
    print(f"coq: {ctc.version if ctc else cwhy}")
    print(f"coq library: {coq_runner.find_library() or 'not found'}")
    print(f"lean: {tc.version if tc else why}")
    print(f"lean project: {lean_runner.find_project() or 'not found'}")
    print(f"lean analytic package: {lean_runner.find_analytic_project() or 'not found'}")
    return EXIT_OK


def _cmd_schema(args: argparse.Namespace) -> int:
    from witprobe.certify import certificate_record, run_record

    text = (certificate_record if args.certificate else run_record).schema_text()
    if args.out is None:
        sys.stdout.write(text)
        return EXIT_OK
    from witprobe.safe_output import write_file

    write_file(args.out, text, force=args.force)
    print(f"wrote {args.out}")
    return EXIT_OK


def _cmd_coverage(args: argparse.Namespace) -> int:
    from witprobe.certify.campaign_coverage import COVERAGE_MODELS, run_coverage
    from witprobe.certify.campaign_coverage import COVERAGE_FILES
    from witprobe.certify.pipeline import prepare_output
    from witprobe.certify.progress import Progress
    from witprobe.safe_output import check_into, check_replaceable, hold

    if not 1 <= args.max_new_tokens <= 4096:  # before any output is prepared (the measurement's own range)
        raise UsageError(f"--max-new-tokens must lie in [1, 4096], got {args.max_new_tokens}")
    if args.quiet:
        quiet_third_party()
    models = tuple(args.models) if args.models else COVERAGE_MODELS
    hold(args.out)  # before any measurement: one writer, and every file it replaces is witprobe's
    if args.out.is_dir() and any(args.out.iterdir()) and not args.force:
        check_replaceable(args.out, False)  # refuses: not empty, pass --force
    check_into(args.out, COVERAGE_FILES)
    for name in models:
        prepare_output(args.out / f"{name}-{args.codec}", force=args.force)
    if args.lean == "required" and _lean_missing():
        print(f"error: --lean required but {_lean_missing()}", file=sys.stderr)
        return EXIT_NO_LEAN
    if args.coq == "required" and _coq_missing():
        print(f"error: --coq required but {_coq_missing()}", file=sys.stderr)
        return EXIT_NO_LEAN
    table = run_coverage(args.out, models, codec=args.codec,
                         max_new_tokens=args.max_new_tokens, lean=args.lean, progress=Progress(quiet=args.quiet),
                         coq=args.coq)
    print((args.out / "COVERAGE.md").read_text(encoding="utf-8"))
    return EXIT_OK if all(v == "pass" for v in table["verdicts"].values()) else EXIT_FAIL


def main(argv: list[str] | None = None) -> int:
    if wants_quiet(argv):
        quiet_third_party()  # before the parser imports transformers (tqdm reads its switch at import)
    args = _parser().parse_args(argv)
    handler = {"run": _cmd_run, "check": _cmd_check, "show": _cmd_show, "compare": _cmd_compare, "report": _cmd_report,
               "doctor": _cmd_doctor,
               "coverage": _cmd_coverage, "schema": _cmd_schema}[args.command]
    return run_handler(handler, args, "witprobe.certify")
