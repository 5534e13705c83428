"""Fuzzed command lines (issue 29 item 5), each a real process in a sandbox of user files.

A few cases of ``bench/fuzz_cli.py`` (fixed seed) plus the findings of its campaigns: every case
exits 0-5 without a traceback, a refusal (exit 2) is one line and writes nothing, and no user file
(plain, symlinked, read-only, a look-alike manifest) changes. The campaign of 300+ cases is
``python bench/fuzz_cli.py --cases 320 --seed 29`` (its counts are in ``bench/RESULTS.md``).
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fuzz_cli", ROOT / "bench" / "fuzz_cli.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)


@pytest.fixture
def sandbox(tmp_path):
    sb = fuzz.Sandbox(tmp_path / "sb")
    yield sb
    (sb.root / "readonly").chmod(0o700)


def _check(sb, key, argv) -> dict:
    r = fuzz.run_case(key, argv, sb, timeout=60)
    assert not r["problems"], r
    return r


# findings of the campaigns, each once a broken promise (now one line, nothing written, nothing changed)
FINDINGS = [
    (("certify", "run"), ["certify", "run", "--prompt", "3,17", "--lean", "FULL"]),  # argparse's usage block
    (("certify", "check"), ["certify", "check", ".", "1e999"]),
    (("gate", ""), ["gate", "--no-such-option"]),
    (("serve-loopback", ""), ["serve-loopback", "--fault", "0", "--no-ledger", "--sign", "{sb}/user"]),
    (("serve-loopback", ""), ["serve-loopback", "--out", "{sb}/new_out", "--ready-file", "{sb}/user/precious.txt"]),  # wrote over it
    (("serve-loopback", ""), ["serve-loopback", "--out", "{sb}/link_dir", "--ready-file", "{sb}/new_ready"]),
    (("serve", ""), ["serve", "--out", "{sb}/new_out", "--ready-file", "{sb}/user/precious.txt"]),  # the OpenAI server, too
    (("certify", "schema"), ["certify", "schema", "--out", "{sb}/user/precious.txt", "--force"]),  # replaced it
    (("ledger", "replay"), ["ledger", "replay", "{sb}/" + "n" * 300, "--force"]),  # traceback: name too long
    (("certify", "coverage"), ["certify", "coverage", "--max-new-tokens", "9" * 400]),  # traceback, after setup
]


@pytest.mark.parametrize("key,argv", FINDINGS, ids=[" ".join(a[:2]) + f" #{i}" for i, (_, a) in enumerate(FINDINGS)])
def test_campaign_findings_are_one_line_refusals(sandbox, key, argv):
    r = _check(sandbox, key, [a.replace("{sb}", str(sandbox.root)) for a in argv])
    assert r["exit"] == 2 and r["state"] == "done", r


def test_drawn_command_lines_keep_every_promise(sandbox):
    rng = random.Random(29)
    cmds = fuzz.commands()
    for _ in range(10):
        key, argv = fuzz.make_case(cmds, rng, sandbox.root)
        r = _check(sandbox, key, argv)
        assert r["state"] == "done" or key in fuzz.LONG, r
        sandbox.reset()


def test_the_sandbox_notices_a_changed_user_file(sandbox):
    """The check the fuzz relies on: a changed or removed user file is reported."""
    (sandbox.root / "user" / "precious.txt").write_text("overwritten")
    (sandbox.root / "file.txt").unlink()
    assert set(sandbox.damage()) == {"user/precious.txt", "file.txt"}
