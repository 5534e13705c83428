"""``python -m witprobe.serve``: the OpenAI-compatible server with witprobe attached
(:mod:`witprobe.serving.openai_server`)."""

from __future__ import annotations

import sys

from witprobe.serving.openai_server import main

if __name__ == "__main__":
    sys.exit(main())
