"""Task readings beside the bounds (``certify run --task``): built-in needle in a haystack,
perplexity on shipped text, exact match on a user's jsonl; readings, never bounds."""

from __future__ import annotations

import json
import math
from pathlib import Path

import pytest
import torch

from witprobe.certify import tasks as T
from witprobe.certify.cli import main
from witprobe.certify.task_report import compare_tasks, damaged, format_tasks
from witprobe.memory.codec_plugins import make_codec_spec

ROOT = Path(__file__).resolve().parents[1]


def test_the_haystacks_are_fixed_and_hide_one_needle_each():
    a, b = T.niah_items(), T.niah_items()
    assert a.prompts == b.prompts and a.answers == b.answers and len(a.prompts) == T.NIAH_ITEMS
    for (msg,), ans in zip(a.prompts, a.answers):
        text = msg["content"]
        assert text.count("The magic number is") == 1 and f"The magic number is {ans}." in text
    depths = [m["content"].index("magic number is") / len(m["content"]) for (m,) in a.prompts]
    assert depths == sorted(depths) and depths[0] < 0.2 and depths[-1] > 0.75


@pytest.mark.parametrize("line, says", [
    ("not json", ":2: not JSON"),
    ('{"prompt": "q"}', "nonempty string \"answer\""),
    ('{"prompt": "q", "messages": [], "answer": "a"}', "either \"prompt\""),
    ('{"messages": [{"role": "user"}], "answer": "a"}', "either \"prompt\""),
    ('{"prompt": "q", "answer": "a", "max_tokens": 0}', "max_tokens must be an integer in [1, 256]"),
])
def test_a_bad_task_file_is_refused_naming_the_line(tmp_path, line, says):
    f = tmp_path / "items.jsonl"
    f.write_text('{"prompt": "fine", "answer": "yes"}\n' + line + "\n")
    with pytest.raises(T.TaskError) as e:
        T.check_spec(str(f))
    assert says in str(e.value) and "items.jsonl:2:" in str(e.value)


def test_exact_match_compares_the_first_line_normalized(tmp_path):
    f = tmp_path / "items.jsonl"
    f.write_text('{"prompt": "Capital of France?", "answer": "Paris"}\n\n'
                 '{"messages": [{"role": "user", "content": "2+3?"}], "answer": "5", "max_tokens": 4}\n')
    items = T.em_items(f)
    assert items.task == "em:items.jsonl" and len(items.answers) == 2 and items.new_tokens == T.EM_NEW_TOKENS
    assert items.match("\n  paris.\nmore text", "Paris") and not items.match("The capital is Paris", "Paris")
    with pytest.raises(T.TaskError, match="one of niah, ppl"):
        T.check_spec("squad")


def test_a_non_finite_reading_is_an_error():
    with pytest.raises(T.TaskError, match="never a reading"):
        T._finite(float("nan"), "x")
    with pytest.raises(T.TaskError):
        T._finite(math.inf, "x")


def test_damage_is_called_out_beside_the_readings():
    niah = {"task": "niah", "metric": "accuracy", "items": 8, "compressed": 0.25, "uncompressed": 1.0,
            "description": "d", "per_item": []}
    ppl = {"task": "ppl", "metric": "perplexity", "items": 3, "compressed": 10.2, "uncompressed": 10.0,
           "description": "d", "per_item": []}
    lines = format_tasks([niah, ppl])
    assert "accuracy 2/8 vs 8/8" in lines[1] and "+2.0%" in lines[2]
    assert [ln for ln in lines if ln.startswith("TASK DAMAGE")] == [lines[3]] and "niah" in lines[3]
    assert damaged(niah) and not damaged(ppl) and damaged({**ppl, "compressed": 10.6})
    text = compare_tasks([niah], [{**niah, "compressed": 0.5}, ppl], "a", "b")
    assert "compressed B - A +0.2500" in text[1] and text[2] == "  ppl: only in B"


@pytest.mark.slow
def test_serving_without_the_meter_serves_what_the_meter_serves(smollm2):
    """The tasks' serve-only observer (votes folded, nothing metered) gives the same compressed
    log-likelihoods as a metering observer, for an eviction policy that votes with attention."""
    codec = make_codec_spec("evict-h2o", 4)
    ids = smollm2.tokenizer(T.PPL_PASSAGES[0], return_tensors="pt")["input_ids"][:, :80]
    served = T._Served(smollm2, codec, 4, True)
    try:
        plain, n = served.nll(ids, 64, compressed=True)
        assert served.observer.snapshot()["read"][0] == {}  # nothing metered
        from witprobe.probe.observer import Observer

        served.observer = Observer(served.mc.num_hidden_layers)
        metered, _ = served.nll(ids, 64, compressed=True)
        assert served.observer.snapshot()["read"][0]["rows"] > 0  # that one did meter
        exact, _ = served.nll(ids, 64, compressed=False)
    finally:
        served.close()
    assert n == 16 and plain == metered
    assert plain != exact  # H2O's 20-entry budget changed what was served
    retained = served.observer.cache.layers[0].retained
    assert retained.sum(-1).max() <= 21 < ids.shape[1]  # 8 heavy + 12 recent, and the token being written


@pytest.mark.slow
def test_needle_in_a_haystack_sees_what_eviction_destroys(smollm2):
    items = T.niah_items(n=2)
    out = {}
    for spec in ("int8", "evict-streaming"):
        served = T._Served(smollm2, make_codec_spec(spec, 4), 4, True)
        try:
            out[spec] = T._generation_task(items, served, lambda _: None)
        finally:
            served.close()
    assert out["int8"]["uncompressed"] == 1.0 and out["int8"]["compressed"] == 1.0
    assert out["evict-streaming"]["compressed"] == 0.0  # a 20-token window forgets the needle
    assert out["evict-streaming"]["per_item"] == [{"compressed": 0.0, "uncompressed": 1.0}] * 2


def test_task_usage_errors_exit_2_in_one_line(tmp_path, capsys):
    bad = tmp_path / "bad.jsonl"
    bad.write_text('{"prompt": "q"}\n')
    for args, says in ((["--task", "squad"], "one of niah, ppl"), (["--task", str(bad)], "bad.jsonl:1"),
                       (["--task", "ppl", "--task", "ppl"], "distinct"),
                       (["--task", "ppl", "--model", "mla"], "--task needs dense KV layers only")):
        code = main(["run", *args, "--out", str(tmp_path / "o"), "--quiet"])
        err = capsys.readouterr().err
        assert code == 2 and err.count("\n") == 1 and says in err, (args, err)
    assert not (tmp_path / "o").exists()


def test_task_readings_reach_run_json_show_compare_and_the_report(tmp_path, capsys):
    items = tmp_path / "items.jsonl"
    items.write_text('{"prompt": "Say yes.", "answer": "yes"}\n')
    base = ["--model", "qwen3", "--prompt", "Hello", "--max-new-tokens", "2", "--coq", "off", "--lean", "off",
            "--quiet"]
    assert main(["run", "--codec", "int4", "--task", "ppl", "--task", str(items), "--out", str(tmp_path / "a"),
                 *base]) in (0, 5)
    assert main(["run", "--codec", "int2", "--task", "ppl", "--out", str(tmp_path / "b"), *base]) in (0, 5)
    run = json.loads((tmp_path / "a" / "run.json").read_text())
    ppl, em = run["tasks"]
    assert (ppl["task"], ppl["metric"], ppl["items"]) == ("ppl", "perplexity", len(T.PPL_PASSAGES))
    assert all(math.isfinite(ppl[k]) and ppl[k] > 1 for k in ("compressed", "uncompressed"))
    assert em["task"] == "em:items.jsonl" and em["per_item"][0]["uncompressed"] in (0.0, 1.0)
    import jsonschema

    jsonschema.Draft202012Validator(json.loads((ROOT / "docs" / "schema" / "run.schema.json").read_text())
                                    ).validate(run)
    capsys.readouterr()
    assert main(["show", str(tmp_path / "a")]) == 0
    shown = capsys.readouterr().out
    assert "task readings" in shown and "  ppl: perplexity" in shown
    assert main(["compare", str(tmp_path / "a"), str(tmp_path / "b")]) == 0
    compared = capsys.readouterr().out
    assert "  ppl perplexity: A " in compared and "  em:items.jsonl: only in A" in compared
    assert main(["report", str(tmp_path / "a")]) == 0
    html = (tmp_path / "a" / "report.html").read_text()
    assert 'id="tasks"' in html and "em:items.jsonl" in html
    assert main(["check", str(tmp_path / "a")]) == 0
