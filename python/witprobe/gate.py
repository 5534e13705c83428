"""``python -m witprobe.gate SNAPSHOT... --expect-layers N``: the probe gate's command line.

The gate itself is :mod:`witprobe.probe.gate` (coverage, magnitude, soundness); this module only
keeps the command where it was. Standard library only.
"""

from __future__ import annotations

import sys

from witprobe.probe.gate import main

if __name__ == "__main__":
    sys.exit(main())
