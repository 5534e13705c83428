"""``python -m witprobe.certify``: measure a run, derive typed claims, render and check obligations."""
