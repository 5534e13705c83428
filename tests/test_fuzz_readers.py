"""Fuzzed inputs for every file reader, through its command line, in-process (issue 29): mutated
certificate.json (`certify show`), run.json (`certify report`, re-derived), a probe snapshot
(`witprobe.gate`), a journal record body re-chained (`ledger verify`) and a prompts file. Every
case exits 0, 1 or 2, never with a traceback; a refusal is one stderr line and writes nothing.

Hypothesis draws the mutation seeds, derandomized so CI is deterministic; about 60 cases, well
under a minute. The larger campaign is ``python bench/fuzz_readers.py --cases 3600``.
"""

from __future__ import annotations

import importlib.util
import random
from pathlib import Path

import pytest
from hypothesis import given, settings, strategies as st

ROOT = Path(__file__).resolve().parents[1]
_spec = importlib.util.spec_from_file_location("fuzz_readers", ROOT / "bench" / "fuzz_readers.py")
fuzz = importlib.util.module_from_spec(_spec)
_spec.loader.exec_module(fuzz)

EXAMPLES = {"certificate": 8, "run": 6, "snapshot": 12, "journal": 12, "prompts": 10}


@pytest.fixture(scope="module")
def fixtures(tmp_path_factory):
    return fuzz.Fixtures(tmp_path_factory.mktemp("fuzz"))


@pytest.mark.parametrize("target", fuzz.TARGETS)
def test_the_valid_input_is_accepted(fixtures, tmp_path, target):
    code, _, err, problems = fuzz.run_case(fixtures, target, fixtures.valid(target), tmp_path / "case")
    assert code == 0 and not problems, err


@pytest.mark.parametrize("target", fuzz.TARGETS)
def test_mutated_inputs_exit_0_1_or_2_without_a_traceback(fixtures, tmp_path_factory, target):
    seen = []

    @settings(max_examples=EXAMPLES[target], derandomize=True, database=None, deadline=None)
    @given(seed=st.integers(0, 2**32 - 1))
    def case(seed: int) -> None:
        label, mutated = fuzz.mutate(fixtures.valid(target), random.Random(seed))
        code, _, err, problems = fuzz.run_case(fixtures, target, mutated, tmp_path_factory.mktemp("case") / "c")
        seen.append(code)
        assert not problems, f"{target} [{label[:80]}] exit {code}: {problems}: {err[-400:]}"

    case()
    assert {1, 2} & set(seen)  # the mutations do reach the refusals (a bad journal record is exit 1)


@pytest.mark.parametrize("target", fuzz.TARGETS)
def test_every_special_value_in_a_nested_field(fixtures, tmp_path, target):
    """NaN, Infinity, 1e999, 300 and 5,000-digit integers, 3,000-deep nesting, wrong types: each once."""
    for i, (label, mutated) in enumerate(fuzz.special_cases(fixtures.valid(target))):
        code, _, err, problems = fuzz.run_case(fixtures, target, mutated, tmp_path / f"case{i}")
        assert not problems, f"{target} [{label[:80]}] exit {code}: {problems}: {err[-400:]}"


def _put(data: bytes, path: tuple, text: str) -> bytes:
    import json

    d = json.loads(data)
    parent = d
    for k in path[:-1]:
        parent = parent[k]
    parent[path[-1]] = fuzz._MARK
    return json.dumps(d).replace(json.dumps(fuzz._MARK), text).encode()


@pytest.mark.parametrize("target, path, text", [
    ("snapshot", ("slots", "DenseKV#0|L2|value", "layer"), "[" * 60 + "1" + "]" * 60),
    ("snapshot", ("slots", "DenseKV#0|L10|value", "owner"), "[]"),
    ("run", ("layers", 2, "read", "out_spread_l2", "max"), "1e308"),
    ("run", ("layers", 0, "write", "key_witness", "max"), "1e308"),
    ("run", ("layers", 2, "read", "out_spread_l2", "max"), "1e300"),
    ("run", ("layers", 0, "write", "key_witness", "max"), "1e300"),
    ("run", ("layers", 0, "read", "plain_bound", "max"), "1e300"),
    # seed 31 (3,600 cases): a declared-paths list of the wrong shape
    ("snapshot", ("coverage", "paths_declared", 0), "{}"),
    ("snapshot", ("coverage", "paths_declared", 0), "[" * 60 + "1" + "]" * 60),
    ("snapshot", ("coverage", "paths_declared"), "NaN"),
])
def test_the_3600_case_campaign_findings(fixtures, tmp_path, target, path, text):
    """What `bench/fuzz_readers.py --cases 3600` found (exit 4 before the fix): with seed 29, an
    unhashable slot owner or layer in the gate, a 1e308 reading overflowing the report's arithmetic;
    with seed 31, ``coverage.paths_declared`` holding a dict, a nested list or NaN."""
    code, _, err, problems = fuzz.run_case(fixtures, target, _put(fixtures.valid(target), path, text), tmp_path / "c")
    assert not problems and code in (1, 2), err
