"""The discrimination campaign on the simulator: registered arms and the adjudication calculus."""

import json
import subprocess
import sys

import pytest

from witprobe.campaign.adjudication import REGISTERED, Comparison, Run
from witprobe.campaign.ledger import ARMS, BLOCK_REUSE, FIELDS


@pytest.fixture(scope="module")
def campaign(tmp_path_factory):
    out = tmp_path_factory.mktemp("campaign") / "c"
    p = subprocess.run([sys.executable, "-m", "witprobe.ledger", "campaign", "--out", str(out), "--decode-steps", "16"],
                       capture_output=True, text=True, timeout=1200)
    assert p.returncode == 0, p.stderr[-3000:]
    return out, json.loads((out / "findings.json").read_text()), p.stdout


def test_every_arm_is_a_registered_run_with_a_total_record(campaign):
    out, body, _ = campaign
    assert sorted(body["arms"]) == sorted(a.name for a in ARMS)
    for name, arm in body["arms"].items():
        assert set(arm["registered"]) == set(FIELDS) and all(isinstance(v, int) for v in arm["registered"].values())
        assert json.loads((out / "arms" / name / "arm.json").read_text()) == json.loads(json.dumps(arm, sort_keys=True))
        assert (out / "arms" / name / "journal.rank0.sqlite").is_file()
        codes = {a["registered"]["code"] for a in body["arms"].values()}
        assert len(codes) == 1
    # the pool drives block reuse: an ample pool evicts nothing, a small one does
    assert all(body["arms"][a.name]["registered"]["evictions"] == 0 for a in ARMS if a.pool == "ample")
    assert all(body["arms"][a.name]["registered"]["evictions"] > 0 for a in ARMS if a.pool == "small")
    bad = body["arms"]["inv0-small-c8"]
    assert bad["corrupted_reads"] > 0 and "read_out_of_generation==0" in bad["gate_failed"]
    assert all(body["arms"][a.name]["gate_passed"] for a in ARMS if a.invalidation)


def test_the_calculus_accepts_invalidation_and_rejects_the_confounded_concurrency_claim(campaign):
    _, body, stdout = campaign
    f = {x["comparison"]: x for x in body["findings"]}
    assert f["invalidation"]["verdict"] == "accepted" and f["invalidation"]["effect_pm"] > 0
    naive = f["concurrency (naive)"]
    assert naive["verdict"] == "rejected" and set(naive["confounded"]) & set(BLOCK_REUSE)
    assert "evictions differs" in naive["reason"]
    via = f["concurrency via block reuse"]
    assert via["verdict"] == "accepted" and via["mediators"] == list(BLOCK_REUSE) and via["effect_pm"] > 0
    assert f["concurrency without reuse pressure"]["verdict"] == "accepted"
    assert f["concurrency without reuse pressure"]["effect_pm"] == 0
    assert "REJECTED concurrency (naive)" in stdout and "ACCEPTED invalidation" in stdout


def test_runs_with_their_own_registry():
    r1 = Run("a", {"x": 1, "y": 2}, 1000, ("x", "y"))
    r2 = Run("b", {"x": 2, "y": 2}, 990, ("x", "y"))
    assert Comparison(r1, r2, ("x",)).premises_hold()
    with pytest.raises(ValueError, match="missing"):
        Run("c", {"x": 1}, 1000, ("x", "y"))
    with pytest.raises(ValueError, match="integers"):
        Run("c", {"x": 1.5, "y": 2}, 1000, ("x", "y"))
    paper = Run("p", {f: 0 for f in REGISTERED}, 1000)
    with pytest.raises(ValueError, match="not comparable"):
        Comparison(r1, paper, ("x",))
    with pytest.raises(ValueError, match="not registered"):
        Comparison(r1, r2, ("z",))
