"""The README's two set-up commands, and `.ci/run` calling the test command verbatim."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def _commands() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## Set up and run", 1)[1].split("\n## ", 1)[0]
    return re.findall(r"```\n(.+?)\n```", section, flags=re.S)


def test_readme_has_exactly_two_setup_commands():
    cmds = _commands()
    assert len(cmds) == 2 and all("\n" not in c for c in cmds)
    run, test = cmds
    coq = "apt-get update && apt-get install -y coq libcoq-interval libcoq-coquelicot"
    for c, extra in ((run, ""), (test, " chromium")):  # the tests also render `certify report` in Chromium
        head = f"{coq}{extra} && "
        assert c.startswith(head), "Coq (the kernel that certifies) is installed by both commands"
        assert c[len(head):].startswith("python3 -m pip install torch==2.13.0 && "), "torch must be pinned first"
    assert run.endswith("python3 -m witprobe.certify run")
    assert "pytest" in test


def test_ci_runs_the_readme_test_command_last():
    ci = (ROOT / ".ci" / "run").read_text().strip().splitlines()
    assert ci[-1] == _commands()[1]


def _example_block() -> list[str]:
    text = (ROOT / "README.md").read_text()
    section = text.split("## What you get", 1)[1].split("\n## ", 1)[0]
    block = re.findall(r"```\n(.+?)\n```", section, flags=re.S)[0]
    return [ln for ln in block.splitlines() if ln.strip() and ln.strip() != "..."]


def test_readme_example_is_the_committed_smollm2_artifact_verbatim(capsys):
    """Claim guard: every line of the README's example output is printed by `certify show` on the
    committed artifact it names, so no number there can drift from its artifact."""
    from witprobe.certify.cli import main

    text = (ROOT / "README.md").read_text()
    assert "artifacts/coverage/smollm2-int8" in text.split("## What you get", 1)[1].split("\n## ", 1)[0]
    assert main(["show", str(ROOT / "artifacts" / "coverage" / "smollm2-int8")]) == 0
    shown = capsys.readouterr().out.splitlines()
    lines = _example_block()
    assert len(lines) >= 8
    missing = [ln for ln in lines if ln not in shown]
    assert not missing, f"README example lines not printed for the artifact: {missing}"


def test_readme_ledger_numbers_are_what_simulate_reports(tmp_path):
    """The ledger paragraph's criteria count and read checks per rank are re-measured, not remembered."""
    import json

    from witprobe.ledger.cli import main as ledger_main

    text = " ".join((ROOT / "README.md").read_text().split())
    criteria = re.search(r"a gate of (\d+) criteria", text)
    checks = re.search(r"with (\d+) ranks makes ([\d,]+) read checks per rank", text)
    assert criteria and checks, "the README's ledger paragraph states the criteria count and the read checks"
    out = tmp_path / "ledger"
    assert ledger_main(["simulate", "--accounts", "8", "--workers", "8", "--out", str(out)]) == 0
    gate = json.loads((out / "gate.json").read_text())
    assert gate["n_criteria"] == int(criteria.group(1)) == len(gate["criteria"])
    per_rank = gate["criteria"]["read_checks_present"]["value"]
    assert len(per_rank) == int(checks.group(1))
    assert set(per_rank.values()) == {int(checks.group(2).replace(",", ""))}, per_rank


def _pct(x: float) -> str:
    """The README's signed percentage with one decimal (``-0.0157`` -> ``-1.6%``)."""
    return f"{100 * x:+.1f}%"


def test_readme_probe_overhead_table_is_the_committed_bench_json():
    """Every cell of the overhead table is the committed bench result, formatted, not retyped."""
    import json

    bench = json.loads((ROOT / "bench" / "results" / "probe_overhead_cpu.json").read_text())
    text = (ROOT / "README.md").read_text()
    command = bench["command"].split(" --out ")[0]
    assert f"(`{command}`" in " ".join(text.split()), "the README cites the command that made the JSON"
    table = text.split("| batch | one declared layer |", 1)[1].split("\n\n", 1)[0]
    rows = {m.group(1): [c.strip() for c in m.group(2).split("|")]
            for m in re.finditer(r"^\| (\d+) \|(.*)\|$", table, re.MULTILINE)}
    assert set(rows) == set(bench["comparison"]), rows
    for batch, cells in rows.items():
        run = bench["comparison"][batch]
        one, fused, unfused = (run["settings"][k] for k in ("one_layer", "all_layers", "all_layers_unfused"))
        inside = one["throughput_inside_noise_floor"] and one["p99_inside_noise_floor"]
        assert cells[0] == (f"{_pct(one['delta_throughput'])} tok/s, {_pct(one['delta_p99'])} p99: "
                            + ("inside the floor" if inside else "outside the floor")), (batch, cells[0])
        assert cells[1] == f"{fused['cost_ratio']:.2f}x step time", (batch, cells[1])
        assert cells[2] == f"{unfused['cost_ratio']:.2f}x", (batch, cells[2])
        floor = run["noise_floor"]
        assert cells[3] == f"+-{100 * floor['throughput']:.1f}%, +-{100 * floor['p99']:.1f}%", (batch, cells[3])


def test_readme_query_aligned_numbers_are_the_committed_artifacts():
    """The --query-aligned paragraph's tightness and largest bounds are the two committed runs'."""
    import json
    import statistics

    text = " ".join((ROOT / "README.md").read_text().split())
    para = text.split("**Tighter certified bounds: `--query-aligned R`.**", 1)[1].split("**", 1)[0]

    def facts(d: str) -> tuple[str, str, str]:
        cert = json.loads((ROOT / d / "certificate.json").read_text())
        tight = [c["tightness"] for c in cert["claims"] if c["kind"] == "attn_tv"]
        return (f"{statistics.median(tight):.2f}", f"{max(tight):.2f}",
                cert['summary']['largest_tv_bound']['bound']['decimal_up'])

    base, qa = facts("artifacts/coverage/smollm2-int8"), facts("artifacts/query_aligned/smollm2-int8-qa48")
    assert f"{base[0]} times the realized TV (median over layers; {base[1]} at worst)" in para, base
    assert f"{qa[0]} times the realized TV (median; {qa[1]} at worst)" in para, qa
    assert f"The largest per-layer bound is {qa[2]} instead of {base[2]}" in para, (qa, base)
