"""Long context on SmolLM2 (CPU): peak resident memory and wall time, metered vs unmetered.

For each context length ``N`` (default 1024, 2048, 4096, 8192 tokens) and each mode, one fresh
subprocess loads SmolLM2-135M-Instruct, builds one prompt, generates ``--new-tokens`` greedy tokens
and reports its wall time and its resident-set high-water mark (``VmHWM`` of ``/proc/self/status``,
cross-checked by the parent with ``os.wait4``'s ``ru_maxrss`` of that child). Modes:

``unmetered``
    plain ``model.generate`` with a ``DynamicCache``, eager attention (the same attention
    arithmetic the witprobe attention function runs), same prompt, same new-token count;
``unmetered_sdpa``
    the same with transformers' default SDPA attention (the memory a plain deployment needs; it
    never materialises the ``N x N`` attention matrix);
``metered``
    the real ``python -m witprobe.certify run`` path (its ``main``, called in the child) with the
    int8 codec, one prompt given with ``--prompts FILE``, the uncompressed reference on (the
    default), Coq and Lean off (kernel checks do not depend on the context length). The wall
    time of the measurement (``measure``, wrapped in the child) and of the whole command are
    both recorded;
``metered_no_boxsup``
    the same with ``--box-sup off``: every certified claim is unchanged, only the empirical box-sup
    column is not metered (the box-sup costs most of the metering time of long contexts).

Context length ``N`` means prompt plus generated tokens: the prompt has ``N - new_tokens`` tokens
exactly, as encoded by the certify path (chat template applied), so the longest context stays
within SmolLM2's ``max_position_embeddings = 8192`` (RoPE: nothing refuses longer contexts, but
positions past 8192 are outside the trained range). The prompt is built deterministically: a
fixed text repeated and cut at a token count, re-encoded until the template-wrapped prompt has
exactly the wanted length.

Ratios: ``metered / unmetered`` of the wall time and of the peak RSS, per length. Readings only;
this is a bench, not a test.

    nice python bench/long_context.py --out bench/results/long_context_cpu.json
    nice python bench/long_context.py --lengths 1024 2048 --modes unmetered metered
"""

from __future__ import annotations

import argparse
import json
import os
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Any

os.environ.setdefault("HF_HUB_OFFLINE", "1")
os.environ.setdefault("TOKENIZERS_PARALLELISM", "false")

SCHEMA = "witprobe-bench-long-context/1"
MODES = ("unmetered", "unmetered_sdpa", "metered", "metered_no_boxsup")
METERED = ("metered", "metered_no_boxsup")
DEFAULT_MODES = ("unmetered", "metered")
BASE_TEXT = (
    "The committee reviewed the quarterly report on the northern and southern regions, the new product line, "
    "the support tickets after the launch and the plan to publish a setup guide before the next meeting. "
)


def _log(msg: str) -> None:
    print(f"[long_context] {msg}", file=sys.stderr, flush=True)


def vm_status() -> dict[str, int]:
    """``VmHWM`` and ``VmRSS`` of this process in KiB (``/proc/self/status``)."""
    out = {}
    with open("/proc/self/status", encoding="ascii") as f:
        for line in f:
            if line.startswith(("VmHWM:", "VmRSS:")):
                key, val = line.split(":", 1)
                out[key] = int(val.split()[0])
    return out


def build_prompt(tok: Any, n_tokens: int) -> str:
    """A one-line prompt whose certify encoding (:func:`witprobe.models.prompts.encode`) has exactly
    ``n_tokens`` tokens: ``BASE_TEXT`` repeated, cut after ``k`` tokens, with ``k`` adjusted until
    the encoded length (template included) matches. Deterministic for a given tokenizer."""
    from witprobe.models.prompts import encode

    ids = tok(BASE_TEXT * (n_tokens // 20 + 8), add_special_tokens=False)["input_ids"]
    overhead = int(encode(tok, "x")["input_ids"].shape[1]) - 1
    k = n_tokens - overhead
    seen = set()
    for _ in range(64):
        text = " ".join(tok.decode(ids[:k]).split())  # one line, no trailing space
        n = int(encode(tok, text)["input_ids"].shape[1])
        if n == n_tokens:
            return text
        seen.add(k)
        k += n_tokens - n
        if k in seen:
            k += 1 if n < n_tokens else -1
    raise RuntimeError(f"could not build a prompt of exactly {n_tokens} tokens")


READS = [0]


def start_heartbeat(mode: str, context: int, every_s: float = 30.0) -> None:
    """Progress of a child on stderr every ``every_s``: elapsed time, RSS, its high-water mark and
    the attention reads the observer metered so far (a prefill is one read per layer), so an
    interrupted configuration still leaves its readings in the log."""
    import threading

    from witprobe.probe import observer

    real = observer.Observer.observe_read

    def counted(self, *a, **kw):  # noqa: ANN001, ANN002, ANN003 - the wrapped signature
        READS[0] += 1
        return real(self, *a, **kw)

    observer.Observer.observe_read = counted
    t0 = time.perf_counter()

    def beat() -> None:
        while True:
            time.sleep(every_s)
            st = vm_status()
            _log(f"  {mode} {context}: {time.perf_counter() - t0:.0f} s, RSS {st['VmRSS'] / 2**20:.2f} GiB, "
                 f"high-water {st['VmHWM'] / 2**20:.2f} GiB, metered reads {READS[0]}")

    threading.Thread(target=beat, daemon=True).start()


def child(mode: str, context: int, new_tokens: int, codec: str) -> dict[str, Any]:
    """Run one configuration in this (fresh) process; returns the readings."""
    import torch

    torch.set_num_threads(int(os.environ.get("LONGCTX_THREADS", "2")))
    t0 = time.perf_counter()
    from witprobe.models.prompts import encode
    from witprobe.models.smollm2 import load_smollm2

    start_heartbeat(mode, context)
    attn = "sdpa" if mode == "unmetered_sdpa" else "eager"
    loaded = load_smollm2(attn_implementation=attn)
    tok = loaded.tokenizer
    prompt = build_prompt(tok, context - new_tokens)
    inputs = encode(tok, prompt)
    n_prompt = int(inputs["input_ids"].shape[1])
    load_s = time.perf_counter() - t0
    after_load = vm_status()
    rec: dict[str, Any] = {"mode": mode, "context": context, "prompt_tokens": n_prompt, "new_tokens": new_tokens,
                           "load_s": load_s, "rss_after_load_kib": after_load["VmRSS"]}
    if mode in ("unmetered", "unmetered_sdpa"):
        from transformers.cache_utils import DynamicCache

        model = loaded.model
        pad = tok.eos_token_id if tok.pad_token_id is None else tok.pad_token_id
        t1 = time.perf_counter()
        with torch.no_grad():
            out = model.generate(**inputs, cache=DynamicCache(config=model.config), max_new_tokens=new_tokens,
                                 do_sample=False, pad_token_id=pad)
        rec["generate_s"] = time.perf_counter() - t1
        rec["generated"] = int(out.shape[1] - n_prompt)
    else:
        import witprobe.certify.measure as measure_mod
        from witprobe.certify import cli
        from witprobe.models import zoo

        real_measure = measure_mod.measure
        timing: dict[str, Any] = {}

        def timed_measure(ld, cfg, progress=None, *args, **kw):  # noqa: ANN001 - the wrapped signature
            t = time.perf_counter()
            run = real_measure(ld, cfg, progress, *args, **kw)
            timing["measure_s"] = time.perf_counter() - t
            timing["requests"] = run.to_json()["requests"]
            return run

        measure_mod.measure = timed_measure
        real_load = zoo.load_model
        zoo.load_model = lambda name, **kw: loaded if name == "smollm2" else real_load(name, **kw)  # already loaded
        with tempfile.TemporaryDirectory(prefix="longctx-") as tmp:
            pfile = Path(tmp) / "prompt.txt"
            pfile.write_text(prompt + "\n", encoding="utf-8")
            t1 = time.perf_counter()
            rc = cli.main(["run", "--model", "smollm2", "--codec", codec, "--prompts", str(pfile),
                           "--max-new-tokens", str(new_tokens), "--coq", "off", "--lean", "off",
                           *(("--box-sup", "off") if mode == "metered_no_boxsup" else ()),
                           "--out", str(Path(tmp) / "run"), "--quiet"])
            rec["command_s"] = time.perf_counter() - t1
            cert = json.loads((Path(tmp) / "run" / "certificate.json").read_text(encoding="utf-8"))
        req = timing["requests"][0]
        rec.update(generate_s=timing["measure_s"], exit_code=rc, generated=len(req["served_tokens"]),
                   cli_prompt_tokens=req["prompt_tokens"], verdict=cert["summary"].get("verdict"),
                   next_token_tv_max=max(req["next_token_tv"]) if req.get("next_token_tv") else None,
                   agreeing_prefix=req.get("agreeing_prefix"))
    st = vm_status()
    rec["metered_reads"] = READS[0]
    rec["vm_hwm_kib"] = st["VmHWM"]
    rec["peak_over_load_kib"] = st["VmHWM"] - after_load["VmRSS"]
    return rec


def run_child(mode: str, context: int, new_tokens: int, codec: str, timeout_s: float) -> dict[str, Any]:
    """Start a fresh interpreter for one configuration; its readings plus the parent's ``ru_maxrss``."""
    cmd = [sys.executable, str(Path(__file__).resolve()), "--child", mode, str(context), str(new_tokens), codec]
    proc = subprocess.Popen(cmd, stdout=subprocess.PIPE, stderr=None, text=True)
    t0 = time.perf_counter()
    try:
        out, _ = proc.communicate(timeout=timeout_s)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.communicate()
        return {"mode": mode, "context": context, "error": f"timed out after {timeout_s:.0f} s"}
    wall = time.perf_counter() - t0
    # communicate() reaped the child; RUSAGE_CHILDREN is the max over reaped children so far,
    # so it is reported per child only as a cross-check (children run in increasing memory order
    # is not guaranteed); VmHWM from the child itself is the primary reading
    maxrss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if proc.returncode != 0:
        return {"mode": mode, "context": context, "error": f"child exited {proc.returncode}"}
    rec = json.loads(out.strip().splitlines()[-1])
    rec["process_s"] = wall
    rec["children_maxrss_kib_so_far"] = maxrss
    return rec


def ratios(results: list[dict[str, Any]], base: str = "unmetered") -> list[dict[str, Any]]:
    """Per length, ``metered / base`` of generation time and of peak RSS (and peak over load)."""
    by = {(r["mode"], r["context"]): r for r in results if "error" not in r}
    out = []
    for (mode, n), m in sorted(by.items(), key=lambda kv: kv[0][1]):
        b = by.get((base, n))
        if mode not in METERED or b is None:
            continue
        out.append({
            "context": n, "mode": mode, "base": base,
            "time_ratio": m["generate_s"] / b["generate_s"],
            "peak_rss_ratio": m["vm_hwm_kib"] / b["vm_hwm_kib"],
            "peak_over_load_ratio": m["peak_over_load_kib"] / max(1, b["peak_over_load_kib"]),
        })
    return out


def main(argv: list[str] | None = None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--lengths", type=int, nargs="+", default=[1024, 2048, 4096, 8192])
    p.add_argument("--modes", nargs="+", choices=MODES, default=list(DEFAULT_MODES))
    p.add_argument("--new-tokens", type=int, default=16)
    p.add_argument("--codec", default="int8")
    p.add_argument("--timeout-s", type=float, default=3600.0, help="per configuration")
    p.add_argument("--out", type=Path, default=None)
    p.add_argument("--child", nargs=4, metavar=("MODE", "N", "NEW", "CODEC"), help=argparse.SUPPRESS)
    args = p.parse_args(argv)
    if args.child:
        mode, n, new, codec = args.child
        print(json.dumps(child(mode, int(n), int(new), codec)), flush=True)
        return 0
    bad = [n for n in args.lengths if n - args.new_tokens < 16 or n > 8192]
    if bad:
        print(f"error: --lengths must lie in [{args.new_tokens + 16}, 8192] (SmolLM2's 8192 positions), got {bad}",
              file=sys.stderr)
        return 2
    results = []
    for n in args.lengths:
        for mode in args.modes:
            _log(f"context {n} ({n - args.new_tokens} prompt + {args.new_tokens} new tokens), {mode}: starting")
            rec = run_child(mode, n, args.new_tokens, args.codec, args.timeout_s)
            results.append(rec)
            if "error" in rec:
                _log(f"context {n}, {mode}: {rec['error']}")
            else:
                _log(f"context {n}, {mode}: generate {rec['generate_s']:.1f} s, peak RSS "
                     f"{rec['vm_hwm_kib'] / 2**20:.2f} GiB ({rec['peak_over_load_kib'] / 2**20:.2f} GiB over the loaded model)")
            if args.out:  # written after every configuration: an interrupted run keeps what it measured
                write(args, results)
    for r in ratios(results):
        _log(f"context {r['context']}: {r['mode']}/unmetered time x{r['time_ratio']:.2f}, peak RSS x{r['peak_rss_ratio']:.2f}"
             f" (over-load x{r['peak_over_load_ratio']:.2f})")
    if args.out:
        write(args, results)
    return 0


def write(args: argparse.Namespace, results: list[dict[str, Any]]) -> None:
    import platform

    import torch
    import transformers

    doc = {
        "schema": SCHEMA,
        "model": "smollm2",
        "codec": args.codec,
        "new_tokens": args.new_tokens,
        "context_definition": "prompt tokens + new tokens (the prompt has exactly context - new_tokens tokens, "
                              "chat template included)",
        "environment": {"python": platform.python_version(), "torch": torch.__version__,
                        "transformers": transformers.__version__, "platform": platform.platform(),
                        "threads": int(os.environ.get("LONGCTX_THREADS", "2"))},
        "results": results,
        "ratios": ratios(results),
    }
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(json.dumps(doc, indent=1) + "\n", encoding="utf-8")


if __name__ == "__main__":
    sys.exit(main())
