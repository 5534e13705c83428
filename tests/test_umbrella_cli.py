"""``witprobe TOOL ...`` (``python -m witprobe``, console script ``witprobe``) runs each tool's own
entry point: same output and exit code as the module form."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

from witprobe.__main__ import TOOLS

ROOT = Path(__file__).resolve().parents[1]


def _py(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", *args], capture_output=True, text=True, cwd=ROOT, timeout=300)


def test_usage_lists_every_tool_and_an_unknown_one_exits_2_in_one_line():
    out = _py("witprobe")
    assert out.returncode == 0 and all(f"  {t}" in out.stdout for t in TOOLS)
    bad = _py("witprobe", "certfy")
    assert bad.returncode == 2 and bad.stdout == "" and len(bad.stderr.strip().splitlines()) == 1
    assert "certfy" in bad.stderr


@pytest.mark.parametrize("tool", sorted(TOOLS))
def test_each_tool_is_its_modules_entry_point(tool, capsys):
    from witprobe.__main__ import main

    with pytest.raises(SystemExit) as e:
        main([tool, "--help"])
    assert e.value.code == 0 and "usage:" in capsys.readouterr().out


def test_same_output_as_the_module_form(capsys):
    from witprobe.__main__ import main

    a = main(["certify", "schema"])
    b = _py("witprobe.certify", "schema")
    out = capsys.readouterr().out
    assert a == b.returncode == 0 and out == b.stdout and len(out) > 1000


PARSERS = ("witprobe.certify.cli", "witprobe.ledger.cli", "witprobe.probe.gate", "witprobe.serving.openai_server",
           "witprobe.serving.server")


def _positionals(parser, name):
    import argparse

    for action in parser._actions:
        if isinstance(action, argparse._SubParsersAction):
            for sub, p in action.choices.items():
                yield from _positionals(p, f"{name} {sub}")
        elif not action.option_strings and not isinstance(action, argparse._HelpAction):
            yield f"{name} {action.dest}", action.help


@pytest.mark.parametrize("module", PARSERS)
def test_every_positional_argument_of_every_subcommand_is_described_in_its_help(module):
    import importlib

    parser = importlib.import_module(module)._parser()
    found = list(_positionals(parser, module))
    bare = [where for where, text in found if not (text and text.strip())]
    assert bare == [], f"positional arguments without a --help description: {bare}"
