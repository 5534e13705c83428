"""``witprobe``: one command, the tools as subcommands.

``witprobe certify ...`` is ``python -m witprobe.certify ...``, ``witprobe ledger ...`` is
``python -m witprobe.ledger ...``, ``witprobe gate ...`` is ``python -m witprobe.probe.gate ...``
``witprobe serve ...`` is ``python -m witprobe.serve ...`` (the OpenAI-compatible server) and
``witprobe serve-loopback ...`` is ``python -m witprobe.serving.server ...``; the module forms keep
working. ``witprobe --version`` prints the version; ``witprobe`` alone, or an unknown tool, prints
the list (exit 2 for an unknown one, in one line).
"""

from __future__ import annotations

import sys
from collections.abc import Callable
from importlib import import_module

TOOLS: dict[str, tuple[str, str]] = {
    "certify": ("witprobe.certify.cli", "measure a run, derive and kernel-check its certificate, show, compare, report"),
    "ledger": ("witprobe.ledger.cli", "the request-level risk ledger: simulate, live, gate, verify, replay"),
    "gate": ("witprobe.probe.gate", "the always-on probe's gate over a snapshot"),
    "serve": ("witprobe.serve", "the OpenAI-compatible server (transformers serve) with the ledger and live bound"),
    "serve-loopback": ("witprobe.serving.server", "the loopback /generate server with the ledger attached"),
}


def usage() -> str:
    width = max(map(len, TOOLS))
    return "usage: witprobe TOOL [ARGS...]\n\ntools:\n" + "".join(
        f"  {name:<{width}}  {what}\n" for name, (_, what) in TOOLS.items()) + \
        "\n`witprobe TOOL --help` describes a tool's subcommands and arguments.\n"


def main(argv: list[str] | None = None) -> int:
    args = sys.argv[1:] if argv is None else list(argv)
    if not args or args[0] in ("-h", "--help"):
        sys.stdout.write(usage())
        return 0
    if args[0] == "--version":
        from witprobe.version import __version__

        print(f"witprobe {__version__}")
        return 0
    tool = TOOLS.get(args[0])
    if tool is None:
        print(f"witprobe: error: unknown tool {args[0]!r} (choose from {', '.join(TOOLS)})", file=sys.stderr)
        return 2
    entry: Callable[[list[str]], int] = import_module(tool[0]).main
    sys.argv[0] = f"witprobe {args[0]}"
    return int(entry(args[1:]) or 0)


if __name__ == "__main__":
    sys.exit(main())
