"""Fuzz every witprobe command line: random arguments, each case a real process in a sandbox of user files.

The arguments are drawn from the commands' own parsers (``_parser()`` of ``certify``, ``ledger``, the
server, and the gate's options): a subcommand, then a random subset of its options and positionals,
each given a value from a hostile pool for its kind (a path: missing, a user file, a user directory,
a symlink to a user file or directory, a path under a file, ``/proc``, a name with control
characters, an empty string, a 300-character name, the package directory; a number: ``-1``, ``0``,
``nan``, ``inf``, ``1e999``, a 400-digit integer, ``abc``, the empty string; a choice: a wrong
word), plus unknown options, duplicated options and stray positionals.

The sandbox holds user files that witprobe did not write: regular files, a directory of them, a
symlink to each, a read-only directory, and a look-alike manifest. After every case:

- no traceback on stderr, and an exit status in 0-5 (never a signal or an uncaught exception);
- a refusal (exit 2) is one line on stderr, and writes nothing in the sandbox;
- every user file is there, with its bytes and its symlink target unchanged;
- nothing is left beside an output (no temporary or partial directory).

A case that is still running after ``--timeout`` seconds is a *long* case when its command does
long work (a measurement, a server) and it has shown progress; it is interrupted (SIGINT), must
exit within 30 s, and the user files are checked as above. Any other case past the timeout is a
hang. ``python bench/fuzz_cli.py --cases 320 --seed 29`` prints the counts; the JSON record goes to
``--json``. ``tests/test_fuzz_cli.py`` runs a few of the same cases in CI.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import os
import random
import shutil
import signal
import stat
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
PACKAGE = ROOT / "python" / "witprobe"
ARTIFACT = ROOT / "artifacts" / "coverage" / "qwen3-int8"

LONG = {("certify", "run"), ("certify", "coverage"), ("ledger", "simulate"), ("ledger", "live"), ("ledger", "record"),
        ("ledger", "sentinel"), ("ledger", "campaign"), ("ledger", "reads"), ("ledger", "replay"), ("serve", ""),
        ("serve-loopback", "")}
"""Commands whose valid arguments start long work (a measurement or a server)."""
OWN_RECORDS = {".witprobe-output.json"}
"""Hidden files witprobe writes on purpose: an output directory's manifest (not a leftover)."""


def commands() -> dict[tuple[str, str], list[argparse.Action]]:
    """``(tool, subcommand) -> actions`` from the real parsers (``--help``/``--version`` left out)."""
    from witprobe.certify.cli import _parser as certify_parser
    from witprobe.ledger.cli import _parser as ledger_parser
    from witprobe.serving.openai_server import _parser as openai_parser
    from witprobe.serving.server import _parser as serve_parser

    out: dict[tuple[str, str], list[argparse.Action]] = {}
    for tool, parser in (("certify", certify_parser()), ("ledger", ledger_parser()), ("serve", openai_parser()),
                         ("serve-loopback", serve_parser())):
        subs = [a for a in parser._actions if isinstance(a, argparse._SubParsersAction)]
        for name, sp in (subs[0].choices.items() if subs else [("", parser)]):
            out[(tool, name)] = [a for a in sp._actions if not isinstance(a, (argparse._HelpAction, argparse._VersionAction))]
    gate = argparse.ArgumentParser()
    gate.add_argument("snapshots", nargs="*", type=Path)
    gate.add_argument("--expect-layers")
    gate.add_argument("--expect-paths")
    gate.add_argument("--expect-replay", action="store_true")
    gate.add_argument("--magnitude-limit", type=float)
    gate.add_argument("--json", action="store_true")
    out[("gate", "")] = [a for a in gate._actions if not isinstance(a, argparse._HelpAction)]
    return out


class Sandbox:
    """A directory of user files (not witprobe's) and their fingerprints."""

    def __init__(self, root: Path):
        self.root = root
        u = root / "user"
        u.mkdir(parents=True)
        (u / "precious.txt").write_text("mine\n")
        (u / "notes.json").write_text('{"mine": true}\n')
        (u / "run.json").write_text('{"not": "a run"}\n')
        (u / ".witprobe-manifest.json").write_text('{"files": {"precious.txt": "0" }}\n')  # a look-alike manifest
        (root / "file.txt").write_text("a user file\n")
        (root / "link_file").symlink_to(u / "precious.txt")
        (root / "link_dir").symlink_to(u)
        (root / "dangling").symlink_to(root / "nowhere")
        ro = root / "readonly"
        ro.mkdir()
        (ro / "kept.txt").write_text("read-only\n")
        ro.chmod(stat.S_IRUSR | stat.S_IXUSR)
        self.fingerprint = self._scan()

    def _scan(self) -> dict[str, str]:
        out = {}
        for dirpath, dirnames, filenames in os.walk(self.root):
            for n in dirnames + filenames:
                p = Path(dirpath) / n
                rel = str(p.relative_to(self.root))
                if p.is_symlink():
                    out[rel] = "link:" + os.readlink(p)
                elif p.is_file():
                    out[rel] = hashlib.sha256(p.read_bytes()).hexdigest()
                elif p.is_dir():
                    out[rel] = "dir"
        return out

    def damage(self) -> list[str]:
        """User entries changed or gone."""
        now = self._scan()
        return [k for k, v in self.fingerprint.items() if now.get(k) != v]

    def new_entries(self) -> list[str]:
        now = self._scan()
        return sorted(k for k in now if k not in self.fingerprint)

    def reset(self) -> None:
        """Remove what a case added (only entries that are not the user's)."""
        for k in sorted(self.new_entries(), key=len, reverse=True):
            p = self.root / k
            if p.is_symlink() or p.is_file():
                p.unlink()
            elif p.is_dir():
                shutil.rmtree(p, ignore_errors=True)


def path_values(sb: Path) -> list[str]:
    return [str(sb / "missing"), str(sb / "user"), str(sb / "user" / "precious.txt"), str(sb / "link_file"),
            str(sb / "link_dir"), str(sb / "dangling"), str(sb / "file.txt" / "under"), str(sb / "readonly"),
            str(sb / "readonly" / "new"), "/proc/witprobe-x", str(sb / "ctl\x1b[31mname"), "", str(sb / ("n" * 300)),
            str(PACKAGE), str(sb / "new_out"), str(ARTIFACT), str(sb / "user" / "run.json"), ".", "-"]


NUMBERS = ["-1", "0", "1", "2", "nan", "inf", "-inf", "1e999", "9" * 400, "abc", "", "0.5", "1/0", "3/2", "1e-320",
           "--"]
WORDS = ["", "none", "x" * 200, "\x1b[2J", "smollm2", "int8", "on", "FULL", "../..", "mla", "{}", "a,b", "3,17"]


def value_for(action: argparse.Action, rng: random.Random, sb: Path) -> str:
    if action.choices and rng.random() < 0.5:
        return rng.choice(list(action.choices))
    kind = getattr(action.type, "__name__", "")
    if kind == "Path" or action.dest in ("dir", "dir_a", "dir_b", "journal", "trace", "snapshots"):
        return rng.choice(path_values(sb))
    if kind in ("int", "float", "fraction_arg") or rng.random() < 0.3:
        return rng.choice(NUMBERS)
    return rng.choice(WORDS + path_values(sb)[:3])


def make_case(cmds: dict, rng: random.Random, sb: Path) -> tuple[tuple[str, str], list[str]]:
    key = rng.choice(sorted(cmds))
    tool, sub = key
    argv = [tool] + ([sub] if sub else [])
    acts = cmds[key]
    for a in acts:
        if not a.option_strings:  # a positional: usually given
            if rng.random() < 0.85:
                argv += [value_for(a, rng, sb)] * (1 if a.nargs in (None, "?") else rng.randint(1, 2))
            continue
        if rng.random() < (0.6 if a.required else 0.3):
            opt = rng.choice(a.option_strings)
            if a.nargs == 0:
                argv.append(opt)
            elif a.nargs in ("+", "*"):
                argv += [opt] + [value_for(a, rng, sb) for _ in range(rng.randint(1, 3))]
            else:
                argv += [opt, value_for(a, rng, sb)]
    r = rng.random()
    if r < 0.08:
        argv.append("--no-such-option")
    elif r < 0.14:
        argv.append(rng.choice(WORDS + NUMBERS))
    elif r < 0.2 and len(argv) > 2:
        i = rng.randrange(1, len(argv))
        argv += argv[i:i + 2]  # a duplicated option
    return key, argv


def run_case(key: tuple[str, str], argv: list[str], sb: Sandbox, timeout: float) -> dict:
    env = {**os.environ, "HF_HUB_OFFLINE": "1", "PYTHONPATH": str(ROOT / "python")}
    t0 = time.perf_counter()
    # SIGINT at its default in the child even when this bench runs as a background job, which
    # ignores it (an ignored SIGINT is inherited, and Python then installs no KeyboardInterrupt handler)
    proc = subprocess.Popen([sys.executable, "-m", "witprobe", *argv], cwd=sb.root, env=env, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, start_new_session=True,
                            preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL))
    state = "done"
    try:
        out, err = proc.communicate(timeout=timeout)
    except subprocess.TimeoutExpired:
        os.killpg(proc.pid, signal.SIGINT)
        try:
            out, err = proc.communicate(timeout=30)
            state = "interrupted"
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            out, err = proc.communicate()
            state = "stuck"
    text = err.decode("utf-8", "replace")
    rc = proc.returncode
    problems = []
    if "Traceback" in text:
        problems.append("traceback")
    if state == "stuck":
        problems.append("no exit 30 s after SIGINT")
    elif state == "interrupted":
        if key not in LONG or not text.strip():
            problems.append("hang (no progress, not a long command)")
    elif rc is None or rc < 0 or rc > 5:
        problems.append(f"exit {rc}")
    lines = [ln for ln in text.splitlines() if ln.strip()]
    if state == "done" and rc == 2:
        if len(lines) != 1:
            problems.append(f"refusal in {len(lines)} lines")
        if sb.new_entries():
            problems.append("wrote on refusal: " + ", ".join(sb.new_entries()[:3]))
    damaged = sb.damage()
    if damaged:
        problems.append("user files changed: " + ", ".join(damaged[:3]))
    leftovers = [e for e in sb.new_entries() if state in ("done", "interrupted") and Path(e).name.startswith(".")
                 and (".witprobe-" in e or e.endswith(".tmp")) and Path(e).name not in OWN_RECORDS]
    if leftovers:
        problems.append("leftovers: " + ", ".join(leftovers[:3]))
    return {"command": " ".join(x for x in key if x), "argv": argv, "exit": rc, "state": state,
            "seconds": round(time.perf_counter() - t0, 2), "stderr_tail": lines[-1][:300] if lines else "",
            "problems": problems}


def main(argv: list[str] | None = None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--cases", type=int, default=320)
    ap.add_argument("--seed", type=int, default=29)
    ap.add_argument("--timeout", type=float, default=45.0, help="seconds before a case is interrupted")
    ap.add_argument("--json", type=Path, default=None, help="write the record here")
    a = ap.parse_args(argv)
    from tqdm import tqdm

    rng = random.Random(a.seed)
    cmds = commands()
    results = []
    t0 = time.time()
    with tempfile.TemporaryDirectory(prefix="witprobe-fuzz-cli-") as tmp:
        sb = Sandbox(Path(tmp) / "sb")
        for _ in tqdm(range(a.cases), desc="fuzz cli", unit="case", mininterval=5):
            key, args = make_case(cmds, rng, sb.root)
            r = run_case(key, args, sb, a.timeout)
            results.append(r)
            if r["problems"]:
                tqdm.write(f"BROKEN {r['problems']}: witprobe {' '.join(map(repr, args))}")
                if sb.damage():  # restore the user's files so later cases test the same sandbox
                    (sb.root / "readonly").chmod(0o700)
                    shutil.rmtree(sb.root)
                    sb = Sandbox(sb.root)
                    continue
            sb.reset()
        (sb.root / "readonly").chmod(0o700)
    by_cmd = Counter(r["command"] for r in results)
    exits = Counter(f"{r['command']}:{r['exit'] if r['state'] == 'done' else r['state']}" for r in results)
    broken = [r for r in results if r["problems"]]
    record = {"cases": len(results), "seed": a.seed, "timeout_s": a.timeout, "wall_s": round(time.time() - t0, 1),
              "broken": len(broken), "tracebacks": sum("traceback" in r["problems"] for r in results),
              "hangs": sum(any(p.startswith(("hang", "no exit")) for p in r["problems"]) for r in results),
              "user_files_changed": sum(any(p.startswith("user files") for p in r["problems"]) for r in results),
              "by_command": dict(sorted(by_cmd.items())), "exits": dict(sorted(exits.items())),
              "broken_cases": broken}
    print(json.dumps({k: v for k, v in record.items() if k != "broken_cases"}, indent=1))
    for r in broken:
        print("BROKEN", r["problems"], r["argv"])
    if a.json:
        a.json.write_text(json.dumps(record, indent=1) + "\n")
    return 1 if broken else 0


if __name__ == "__main__":
    sys.exit(main())
