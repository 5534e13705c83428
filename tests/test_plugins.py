"""Codec plugins (docs/PLUGINS.md): a real package, installed with pip, certified from the CLI.

``tests/data/plugin_demo`` is a tiny distribution (``witprobe-demo-codec``) with two
``witprobe.codecs`` entry points: a rounding codec and a user-defined eviction policy. The module
fixture installs it with ``pip install --target`` (built by setuptools, as a user's would be) into
a temporary folder that the CLI's processes get on ``PYTHONPATH``.
"""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import jsonschema
import pytest
import torch

from witprobe.memory.codec_plugins import changed_sources, resolve_codec
from witprobe.memory.codecs import CodecError, EvictionCodec, EvictionPolicy

ROOT = Path(__file__).resolve().parents[1]
DEMO = ROOT / "tests" / "data" / "plugin_demo"
PROMPT = "The capital of France is"


@pytest.fixture(scope="module")
def site(tmp_path_factory) -> Path:
    """The demo plugin, installed by pip into a folder of its own."""
    src = tmp_path_factory.mktemp("plugin-src") / "plugin_demo"
    shutil.copytree(DEMO, src)  # setuptools writes build/ and *.egg-info beside the sources
    target = tmp_path_factory.mktemp("plugin-site")
    done = subprocess.run([sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--no-build-isolation",
                           "--disable-pip-version-check", "--target", str(target), str(src)],
                          capture_output=True, text=True, timeout=600)
    assert done.returncode == 0, done.stderr
    assert (target / "witprobe_demo_codec" / "__init__.py").is_file()
    return target


@pytest.fixture
def on_path(site, monkeypatch):
    monkeypatch.syspath_prepend(str(site))
    yield site
    for name in [m for m in sys.modules if m.startswith("witprobe_demo_codec")]:
        del sys.modules[name]


def _cli(site: Path, *args: str, timeout: int = 900) -> subprocess.CompletedProcess:
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(site), os.environ.get("PYTHONPATH", "")]).rstrip(os.pathsep)}
    return subprocess.run([sys.executable, "-m", "witprobe.certify", *args], capture_output=True, text=True,
                          env=env, timeout=timeout)


def test_specs_resolve_by_entry_point_and_import_path_with_parameters(on_path):
    codec, prov = resolve_codec("demo-step", 4)
    assert codec.name == "step5" and prov.origin == "entry_point"
    assert prov.object == "witprobe_demo_codec:StepCodec" and prov.parameters == {"step_bits": 5}
    [src] = prov.sources
    assert (src.module, src.distribution, src.version) == ("witprobe_demo_codec", "witprobe-demo-codec", "0.1.0")
    codec, prov = resolve_codec("demo-step(step_bits=7)", 4)
    assert codec.name == "step7" and prov.parameters == {"step_bits": 7}
    codec, prov = resolve_codec("witprobe_demo_codec:FirstLastPolicy(first=2, last=3)", 4)
    assert isinstance(codec, EvictionCodec) and prov.origin == "import"
    assert prov.parameters["policy"] == {"class": "witprobe_demo_codec:FirstLastPolicy", "first": 2, "last": 3}
    x = torch.tensor([0.3, -1.26, 2.0], dtype=torch.float32)
    assert torch.equal(resolve_codec("demo-step(step_bits=2)", 4)[0].encode_decode(x),
                       torch.tensor([0.25, -1.25, 2.0]))
    assert changed_sources([m.__dict__ for m in prov.sources]) == []


@pytest.mark.parametrize("spec, says", [
    ("demo-step(step_bits=99)", "step_bits must be an integer in [0, 20]"),
    ("demo-step(5)", "keyword only"),
    ("demo-step(step_bits=open('x'))", "not a literal"),
    ("witprobe_demo_codec:torch", "not a codec"),
    ("witprobe_demo_codec:Nothing", "has no attribute Nothing"),
    ("no_such_pkg.mod:Codec", "cannot import no_such_pkg.mod"),
    ("demo-nothing", "installed plugins: demo-first-last, demo-step"),
])
def test_bad_specs_are_refused_naming_the_problem(on_path, spec, says):
    with pytest.raises(CodecError, match=None) as e:
        resolve_codec(spec, 4)
    assert says in str(e.value)


@dataclass(frozen=True)
class _Returns(EvictionPolicy):
    what: str = "float"

    def keep(self, scores: torch.Tensor) -> torch.Tensor:
        t = scores.shape[-1]
        if self.what == "float":
            return torch.zeros(*scores.shape[:-1], 1)
        if self.what == "outside":
            return torch.full((*scores.shape[:-1], 1), t, dtype=torch.int64)
        return torch.zeros(*scores.shape[:-1], 0, dtype=torch.int64)


@pytest.mark.parametrize("what, says", [("float", "int64"), ("outside", "outside [0, 5)"), ("empty", "K >= 1")])
def test_a_user_policy_is_checked_before_anything_is_evicted(what, says):
    codec = EvictionCodec(policy=_Returns(what))
    with pytest.raises(CodecError, match=None) as e:
        codec.kept(torch.zeros(1, 2, 5))
    assert says in str(e.value)


def test_a_policy_must_declare_a_known_schedule_and_votes():
    @dataclass(frozen=True)
    class Odd(EvictionPolicy):
        votes = "gradient"

    with pytest.raises(CodecError, match="votes must be one of"):
        EvictionCodec(policy=Odd())

    @dataclass(frozen=True)
    class NoWindow(EvictionPolicy):
        votes = "window"

    with pytest.raises(CodecError, match="needs an integer window"):
        EvictionCodec(policy=NoWindow())


def test_cli_refuses_a_bad_codec_spec_in_one_line(site, tmp_path):
    done = _cli(site, "run", "--codec", "witprobe_demo_codec:Nothing", "--out", str(tmp_path / "r"))
    assert done.returncode == 2
    assert done.stderr.strip().count("\n") == 0 and "has no attribute Nothing" in done.stderr
    assert not (tmp_path / "r").exists()


@pytest.mark.slow
def test_an_installed_plugin_codec_certifies_from_the_cli_and_check_names_it_once_edited(site, tmp_path):
    out = tmp_path / "run"
    done = _cli(site, "run", "--codec", "demo-step", "--max-new-tokens", "3", "--prompt", PROMPT,
                "--box-sup", "off", "--lean", "off", "--out", str(out), "--quiet")
    assert done.returncode == 0, done.stdout[-2000:] + done.stderr[-2000:]
    assert "demo-step" in _cli(site, "run", "--help").stdout  # the help lists installed plugins
    cert = json.loads((out / "certificate.json").read_text())
    certified = [c for c in cert["claims"] if c["tier"] == "certified"]
    assert len(certified) >= 30 and cert["summary"]["verdict"] == "pass"
    run = json.loads((out / "run.json").read_text())
    jsonschema.Draft202012Validator(json.loads((ROOT / "docs" / "schema" / "run.schema.json").read_text())
                                    ).validate(run)
    prov = run["config"]["codec_provenance"]
    assert (prov["spec"], prov["origin"], prov["parameters"]) == ("demo-step", "entry_point", {"step_bits": 5})
    module = site / "witprobe_demo_codec" / "__init__.py"
    import hashlib
    assert prov["sources"][0]["sha256"] == hashlib.sha256(module.read_bytes()).hexdigest()
    module.write_text(module.read_text().replace("round half to even", "round half to even (edited)"))
    done = _cli(site, "check", str(out))
    assert done.returncode == 1, done.stdout
    line = next(x for x in done.stdout.splitlines() if "codec 'demo-step'" in x)
    assert "witprobe_demo_codec changed since the run" in line


@pytest.mark.slow
def test_a_user_defined_eviction_policy_runs_from_the_cli(site, tmp_path):
    out = tmp_path / "run"
    done = _cli(site, "run", "--codec", "witprobe_demo_codec:FirstLastPolicy(first=2, last=4)", "--max-new-tokens",
                "3", "--prompt", PROMPT, "--box-sup", "off", "--coq", "off", "--lean", "off", "--out", str(out),
                "--quiet")
    assert done.returncode in (0, 5), done.stdout[-2000:] + done.stderr[-2000:]
    run = json.loads((out / "run.json").read_text())
    assert run["config"]["codec_provenance"]["parameters"]["policy"]["first"] == 2
    evicting = [layer for layer in run["layers"] if "evict_rows" in layer["read"]]
    assert len(evicting) == 30


def test_check_fails_a_plugin_whose_source_changed_and_notes_the_rest(on_path, tmp_path):
    """``certify check``'s provenance step, without a model: what it says for each case."""
    from witprobe.certify.check import CheckResult, _check_codec_code

    def said(prov, codec=None):
        res = CheckResult()
        _check_codec_code({"config": {"codec": codec or (prov or {}).get("spec"), "codec_provenance": prov}}, res)
        return res.problems, res.notes

    plugin = resolve_codec("demo-step", 4)[1].to_json()
    assert said(plugin) == ([], [])
    builtin = resolve_codec("int8", 4)[1].to_json()
    assert said(builtin) == ([], [])
    problems, _ = said(plugin, codec="int8")
    assert problems and "not the codec its provenance records" in problems[0]
    _, notes = said(None, codec="int8")
    assert notes and "no codec provenance" in notes[0]
    stale = {**builtin, "sources": [{**builtin["sources"][0], "sha256": "0" * 64}]}
    problems, notes = said(stale)
    assert problems == [] and "witprobe's own code changed" in notes[0]
    module = on_path / "witprobe_demo_codec" / "__init__.py"
    text = module.read_text()
    try:
        module.write_text(text + "\n# edited\n")
        problems, _ = said(plugin)
    finally:
        module.write_text(text)
    assert len(problems) == 1 and "codec 'demo-step'" in problems[0] and "changed since the run" in problems[0]


def test_votes_press_need_a_press():
    @dataclass(frozen=True)
    class Pressless(EvictionPolicy):
        schedule = "once_after_prefill"
        votes = "press"

    with pytest.raises(CodecError, match="votes 'press' are a kvpress press's scores"):
        EvictionCodec(policy=Pressless())
