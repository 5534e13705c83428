"""``coq_runner.strip_comments`` (a regex token scanner) against the character-by-character reference
it replaced: the same output on random strings over the lexer's alphabet and on every committed
``.v`` file, and the same refusal of an unterminated comment."""

from __future__ import annotations

import random
from pathlib import Path

import pytest

from witprobe.formal.coq_runner import strip_comments

ROOT = Path(__file__).resolve().parents[1]


def reference(text: str) -> str:
    """The former implementation, one character at a time (Coq's lexer: strings inside comments count)."""
    out, i, depth, n = [], 0, 0, len(text)
    while i < n:
        if text[i] == '"':
            j = i + 1
            while j < n and not (text[j] == '"' and not text.startswith('""', j)):
                j += 2 if text.startswith('""', j) else 1
            if depth == 0:
                out.append(text[i:j + 1])
            i = j + 1
        elif text.startswith("(*", i):
            depth, i = depth + 1, i + 2
        elif depth and text.startswith("*)", i):
            depth, i = depth - 1, i + 2
            if depth == 0:
                out.append(" ")
        else:
            if depth == 0:
                out.append(text[i])
            i += 1
    if depth:
        raise ValueError("unterminated comment")
    return "".join(out)


def _either(fn, text):
    try:
        return fn(text)
    except ValueError as e:
        return f"ValueError: {e}"


def test_same_as_the_reference_on_random_strings():
    rng = random.Random(20261207)
    alphabet = ['"', "(", "*", ")", "a", " ", '""', "(*", "*)", "\n"]
    for _ in range(50_000):
        t = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 16)))
        assert _either(strip_comments, t) == _either(reference, t), repr(t)


@pytest.mark.parametrize("path", sorted(str(p.relative_to(ROOT)) for p in (ROOT / "coq").rglob("*.v")))
def test_same_as_the_reference_on_every_committed_proof(path):
    text = (ROOT / path).read_text(encoding="utf-8")
    assert strip_comments(text) == reference(text)


def test_unterminated_comment_and_string_edge_cases():
    assert strip_comments('a (* "*)" *) b') == "a   b"
    assert strip_comments('"(* not a comment *)"') == '"(* not a comment *)"'
    assert strip_comments("x *) y") == "x *) y"
    with pytest.raises(ValueError):
        strip_comments("(* (* *)")
