"""`--prompts FILE`: plain text and JSONL chats, chat templates, errors naming the line."""

from __future__ import annotations

import io
import json
from contextlib import redirect_stdout

import pytest

from witprobe.certify.cli import main
from witprobe.models.prompts import encode, read_prompts
from witprobe.cliutil import InputError

CHAT = [{"role": "system", "content": "You are terse."}, {"role": "user", "content": "Name a sea."}]


def test_plain_text_is_one_prompt_per_nonempty_line(tmp_path):
    p = tmp_path / "p.txt"
    p.write_text("first prompt\n\n  second prompt  \n")
    assert read_prompts(p) == ("first prompt", "second prompt")


def test_jsonl_forms(tmp_path):
    p = tmp_path / "p.jsonl"
    p.write_text("\n".join([json.dumps({"messages": CHAT}), json.dumps(CHAT), json.dumps({"prompt": "hi"}),
                            json.dumps("plain")]) + "\n")
    got = read_prompts(p)
    assert got[0] == tuple(CHAT) and got[1] == tuple(CHAT) and got[2:] == ("hi", "plain")


@pytest.mark.parametrize("line, field", [("{bad", "line 2"), (json.dumps({"messages": [{"role": "x", "content": "a"}]}),
                                          "line 2.messages[0]"), (json.dumps({"other": 1}), "line 2")])
def test_bad_jsonl_names_the_line(tmp_path, line, field):
    p = tmp_path / "p.jsonl"
    p.write_text(json.dumps("ok") + "\n" + line + "\n")
    with pytest.raises(InputError) as e:
        read_prompts(p)
    assert e.value.field == field and str(p) in str(e.value)


def test_chat_template_is_applied_when_the_tokenizer_has_one():
    from witprobe.models.smollm2 import load_tokenizer

    tok = load_tokenizer(chat_template=True)
    ids = encode(tok, tuple(CHAT))["input_ids"][0].tolist()
    assert ids == tok.apply_chat_template(CHAT, add_generation_prompt=True, return_dict=True)["input_ids"]
    assert tok.convert_tokens_to_ids("<|im_start|>") in ids
    plain = load_tokenizer(chat_template=False)
    assert plain.decode(encode(plain, tuple(CHAT))["input_ids"][0]) == "system: You are terse.\nuser: Name a sea."


def test_certify_run_with_a_prompts_file(tmp_path, capsys):
    p = tmp_path / "p.jsonl"
    p.write_text(json.dumps({"messages": CHAT}) + "\n" + json.dumps("What is the capital of France?") + "\n")
    out = tmp_path / "run"
    buf = io.StringIO()
    with redirect_stdout(buf):
        code = main(["run", "--model", "qwen3", "--prompts", str(p), "--out", str(out), "--max-new-tokens", "2",
                     "--coq", "off", "--lean", "off", "--quiet", "--no-reference"])
    assert code == 0, buf.getvalue()
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["prompts"] == [CHAT, "What is the capital of France?"]
    assert len(run["requests"]) == 2
    assert main(["check", str(out)]) == 0
    assert main(["run", "--model", "qwen3", "--prompts", str(p), "--prompt", "x", "--out", str(tmp_path / "o")]) == 2
    assert "cannot be combined" in capsys.readouterr().err
