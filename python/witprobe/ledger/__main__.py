"""``python -m witprobe.ledger``."""

import sys

from witprobe.ledger.cli import main

sys.exit(main())
