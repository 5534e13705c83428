"""``python -m witprobe.certify``."""

import sys

from witprobe.certify.cli import main

sys.exit(main())
