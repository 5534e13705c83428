"""``python -m witprobe.certify``: measure a run, derive typed claims, render and check obligations."""

#: the tool name ``certify run`` writes into its output manifests (:mod:`witprobe.safe_output`)
RUN_TOOL = "witprobe.certify run"
