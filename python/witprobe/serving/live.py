"""``python -m witprobe.ledger live``: serve on loopback, drive concurrent HTTP clients, gate the journal.

1. refuse bad options (exit 2, nothing written) and a non-empty ``--out`` (``--force`` removes only
   the files a live run wrote, unchanged, and refuses when anything else is there:
   :mod:`witprobe.safe_output`); take ``--out``'s writer lock (a second run on it exits 2);
   build the run in a fresh private sibling folder, renamed to ``--out`` after step 5;
2. write ``manifest.json`` (the submitted request ids ``req-0 .. req-{n-1}``);
3. start :mod:`witprobe.serving.server` as a child process on ``127.0.0.1`` (log ``server.log``),
   wait for it to be ready (``--start-timeout``);
4. send ``--requests`` generation requests from ``--concurrency`` client threads, each bounded by
   ``--request-timeout``, all by ``--timeout``; store ``clients.json``, then ``metrics.prom`` and
   ``verdicts.json`` (caches, for people);
5. ``POST /shutdown`` (the server closes its journal) and wait for the child (killed if it hangs);
6. evaluate the gate from the journal (:mod:`witprobe.serving.live_gate`), plus ``clients_served``
   (every request answered 200), store ``gate.json``, print it; exit 0 pass, 1 fail.

With ``--sign KEY`` (an Ed25519 private key outside ``--out``; ``ledger keygen``) the server signs
its journal's head after ``close`` and returns a signed head with every response (stored per
request in ``clients.json``), and the gate requires the journal's signed head under the key's
public half.
"""

from __future__ import annotations

import argparse
import concurrent.futures as cf
import json
import os
import signal
import subprocess
import sys
import time
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

from witprobe import safe_output
from witprobe.serving.config import FAULTS
from witprobe.models.transformers_release import continuous_batching_missing
from witprobe.serving.server import add_read_meter_args, read_meter_argv, read_meter_config

EXIT_OK, EXIT_FAIL, EXIT_USAGE = 0, 1, 2
LIVE_TOOL = "witprobe.ledger live"


def add_parser(sub: Any) -> None:
    """Register ``live`` on the ``ledger`` command's subparsers."""
    s = sub.add_parser("live", help="serve SmolLM2 with continuous batching and the ledger attached; drive it over HTTP; gate the journal")
    s.add_argument("--requests", type=int, default=16, help="client requests (default: %(default)s)")
    s.add_argument("--concurrency", type=int, default=8, help="concurrent HTTP clients (default: %(default)s)")
    s.add_argument("--out", type=Path, required=True, help="output directory")
    s.add_argument("--fault", choices=FAULTS, default="none", help="inject a fault the gate must catch (default: none)")
    s.add_argument("--max-new-tokens", type=int, default=8, help="tokens generated per request (default: %(default)s)")
    s.add_argument("--num-blocks", type=int, default=96, help="paged-cache blocks of 16 tokens (default: %(default)s)")
    s.add_argument("--max-batch-tokens", type=int, default=64, help="tokens per forward (default: %(default)s)")
    s.add_argument("--timeout", type=float, default=900.0, help="seconds for all requests (default: %(default)s)")
    s.add_argument("--request-timeout", type=float, default=600.0, help="seconds per request (default: %(default)s)")
    s.add_argument("--start-timeout", type=float, default=300.0, help="seconds for the server to get ready (default: %(default)s)")
    s.add_argument("--force", action="store_true", help="replace the files of an earlier live run in --out")
    s.add_argument("--sign", type=Path, default=None, metavar="KEY",
                   help="Ed25519 private key (outside --out): sign the journal's head and return a signed head with each response")
    s.add_argument("--quiet", action="store_true")
    s.add_argument("--api", choices=tuple(SERVERS), default="witprobe",
                   help="witprobe: the loopback /generate server; openai: python -m witprobe.serve, driven by the openai client")
    add_read_meter_args(s)


def _usage(a: argparse.Namespace) -> str | None:
    from witprobe.cliutil import UsageError
    from witprobe.serving.config import LiveConfig, LiveConfigError

    try:
        LiveConfig(**read_meter_config(a))
    except (UsageError, LiveConfigError) as e:
        return str(e)
    if a.api == "openai":
        if a.fault != "none" or a.sign is not None:
            return "--api openai takes neither --fault nor --sign (use the witprobe server for fault injection and signed heads)"
        try:
            import fastapi  # noqa: F401
            import openai  # noqa: F401
            import uvicorn  # noqa: F401
        except ImportError as e:
            return f"--api openai needs the serve extra ({e.name} is missing): pip install 'witprobe[serve]'"
    if a.requests < 1 or a.requests > 4096:
        return f"--requests must lie in [1, 4096], got {a.requests}"
    if a.concurrency < 1 or a.concurrency > 256:
        return f"--concurrency must lie in [1, 256], got {a.concurrency}"
    if not 1 <= a.max_new_tokens <= 256:
        return f"--max-new-tokens must lie in [1, 256], got {a.max_new_tokens}"
    if a.num_blocks < 8 or a.max_batch_tokens < 16:
        return "--num-blocks must be >= 8 and --max-batch-tokens >= 16"
    for name in ("timeout", "request_timeout", "start_timeout"):
        v = getattr(a, name)
        if not v > 0:
            return f"--{name.replace('_', '-')} must be positive, got {v}"
    return None


def _post(url: str, body: dict[str, Any], timeout: float) -> tuple[int, dict[str, Any]]:
    req = urllib.request.Request(url, data=json.dumps(body).encode(), headers={"Content-Type": "application/json"}, method="POST")
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        try:
            return e.code, json.loads(e.read())
        except ValueError:
            return e.code, {"error": str(e)}
    except (urllib.error.URLError, OSError, ValueError) as e:
        return 0, {"error": f"{type(e).__name__}: {e}"}


def _get(url: str, timeout: float = 30.0) -> str | None:
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read().decode()
    except (urllib.error.URLError, OSError):
        return None


def _write(path: Path, text: str) -> None:
    safe_output.atomic_write(path, text)


#: the server module of each ``--api``
SERVERS = {"witprobe": "witprobe.serving.server", "openai": "witprobe.serve"}


def start_server(out: Path, extra: list[str], start_timeout: float, shown: Path | None = None,
                 api: str = "witprobe") -> tuple[subprocess.Popen, int]:
    """Start the server child on loopback; returns ``(process, port)``; raises ``RuntimeError`` if it is not ready in time.

    ``shown`` is the directory named in messages (where ``server.log`` will be once the run is in place);
    ``api`` picks the server (:data:`SERVERS`): witprobe's own or the OpenAI-compatible one."""
    shown = shown or out
    ready = out / "server.json"
    log = open(out / "server.log", "ab")
    env = dict(os.environ, HF_HUB_OFFLINE="1", TOKENIZERS_PARALLELISM="false")
    env["PYTHONPATH"] = os.pathsep.join([str(Path(__file__).resolve().parents[2])] + [p for p in env.get("PYTHONPATH", "").split(os.pathsep) if p])
    proc = subprocess.Popen([sys.executable, "-m", SERVERS[api], "--out", str(out), "--ready-file", str(ready),
                             "--parent-pid", str(os.getpid()), *extra],
                            stdout=log, stderr=subprocess.STDOUT, env=env)
    log.close()
    t_end = time.monotonic() + start_timeout
    while time.monotonic() < t_end:
        if ready.is_file():
            return proc, int(json.loads(ready.read_text())["port"])
        if proc.poll() is not None:
            raise RuntimeError(f"the server exited with code {proc.returncode} before it was ready (see {shown / 'server.log'})")
        time.sleep(0.1)
    proc.kill()
    proc.wait()
    raise RuntimeError(f"the server was not ready within {start_timeout} s (see {shown / 'server.log'})")


def drive(port: int, n: int, concurrency: int, max_new_tokens: int, request_timeout: float, timeout: float) -> list[dict[str, Any]]:
    """Send ``n`` requests ``req-0 ..`` from ``concurrency`` threads; one result row per request."""
    from witprobe.ledger.trace import PROMPTS

    url = f"http://127.0.0.1:{port}/generate"
    t_end = time.monotonic() + timeout

    def one(i: int) -> dict[str, Any]:
        left = t_end - time.monotonic()
        if left <= 0:
            return {"request_id": f"req-{i}", "status": 0, "error": "overall --timeout reached before sending"}
        t0 = time.perf_counter()
        code, body = _post(url, {"request_id": f"req-{i}", "prompt": PROMPTS[i % len(PROMPTS)], "max_new_tokens": max_new_tokens},
                           min(request_timeout, left))
        head = body.get("journal_head")
        return {"request_id": f"req-{i}", "status": code, "latency_s": time.perf_counter() - t0,
                "n_tokens": len(body.get("tokens") or []), "journal_head": head,
                "verdict_ok": (body.get("verdict") or {}).get("ok"), "error": body.get("error")}

    with cf.ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="witprobe-client") as ex:
        return list(ex.map(one, range(n)))


def drive_openai(port: int, n: int, concurrency: int, max_new_tokens: int, request_timeout: float,
                 timeout: float) -> list[dict[str, Any]]:
    """:func:`drive` through the ``openai`` client against ``/v1/chat/completions`` (request ids in
    ``X-Request-ID``, the verdict from ``X-Witprobe-Verdict``)."""
    import openai

    from witprobe.ledger.trace import PROMPTS

    client = openai.OpenAI(base_url=f"http://127.0.0.1:{port}/v1", api_key="witprobe-local", max_retries=0)
    t_end = time.monotonic() + timeout

    def one(i: int) -> dict[str, Any]:
        rid = f"req-{i}"
        left = t_end - time.monotonic()
        if left <= 0:
            return {"request_id": rid, "status": 0, "error": "overall --timeout reached before sending"}
        t0 = time.perf_counter()
        try:
            raw = client.chat.completions.with_raw_response.create(
                model="smollm2", messages=[{"role": "user", "content": PROMPTS[i % len(PROMPTS)]}], max_tokens=max_new_tokens,
                extra_headers={"X-Request-ID": rid}, timeout=min(request_timeout, left))
            r = raw.parse()
            v = json.loads(raw.headers.get("x-witprobe-verdict") or "{}")
            return {"request_id": rid, "status": raw.status_code, "latency_s": time.perf_counter() - t0,
                    "n_tokens": r.usage.completion_tokens if r.usage else 0, "verdict_ok": v.get("ok"),
                    "attention": v.get("attention"), "error": None}
        except openai.APIStatusError as e:
            return {"request_id": rid, "status": e.status_code, "error": str(e)[:300]}
        except openai.APIError as e:
            return {"request_id": rid, "status": 0, "error": f"{type(e).__name__}: {e}"[:300]}

    with cf.ThreadPoolExecutor(max_workers=concurrency, thread_name_prefix="witprobe-client") as ex:
        return list(ex.map(one, range(n)))


def run(a: argparse.Namespace) -> int:
    """The ``live`` command (see the module docstring)."""
    from witprobe.ledger.acceptance import Criterion
    from witprobe.serving.live_gate import failing, run_gate

    why = _usage(a) or continuous_batching_missing()
    if why:
        print(f"error: {why}", file=sys.stderr)
        return EXIT_USAGE
    out = Path(os.path.abspath(a.out))
    key = None
    if a.sign is not None:
        from witprobe.signing import check_outside, load_private

        key = load_private(a.sign).verify_key  # unreadable: exit 2 before anything is written
        check_outside(a.sign, out)
    safe_output.hold(out)  # one writer on --out until the gate is written
    safe_output.check_replaceable(out, a.force, LIVE_TOOL)
    with safe_output.new_output_dir(out, LIVE_TOOL, a.force) as tmp:
        rids = [f"req-{i}" for i in range(a.requests)]
        _write(tmp / "manifest.json", json.dumps({
            "tool": "witprobe.ledger live", "expected": {"user_requests": rids},
            "config": {k: (str(v) if isinstance(v, Path) else v) for k, v in vars(a).items() if k not in ("handler", "sign")},
        }, indent=1, sort_keys=True) + "\n")
        if a.api == "openai":
            extra = ["--num-blocks", str(a.num_blocks), "--max-batch-tokens", str(a.max_batch_tokens), "--port", "0"]
        else:
            extra = ["--fault", a.fault, "--max-new-tokens", str(a.max_new_tokens), "--num-blocks", str(a.num_blocks),
                     "--max-batch-tokens", str(a.max_batch_tokens)] + (["--sign", str(Path(a.sign).absolute())] if a.sign else [])
        extra += read_meter_argv(a)
        clients: list[dict[str, Any]] = []
        t0 = time.perf_counter()
        try:
            proc, port = start_server(tmp, extra, a.start_timeout, shown=out, api=a.api)
        except RuntimeError as e:
            print(f"live: {e}", file=sys.stderr)
            proc = None
        if proc is not None:
            try:
                clients = (drive_openai if a.api == "openai" else drive)(port, a.requests, a.concurrency, a.max_new_tokens,
                                                                          a.request_timeout, a.timeout)
                verdicts = "/witprobe/verdicts" if a.api == "openai" else "/verdicts"
                for name, path in (("metrics.prom", "/metrics"), ("verdicts.json", verdicts)):
                    text = _get(f"http://127.0.0.1:{port}{path}")
                    if text is not None:
                        _write(tmp / name, text)
                if a.api == "openai":
                    proc.send_signal(signal.SIGTERM)  # uvicorn's graceful shutdown; the engine stops, the journal closes
                else:
                    _post(f"http://127.0.0.1:{port}/shutdown", {}, 30.0)
                proc.wait(timeout=120)
            except subprocess.TimeoutExpired:
                print("live: the server did not exit after /shutdown; killed", file=sys.stderr)
                proc.kill()
                proc.wait()
            finally:
                if proc.poll() is None:
                    proc.kill()
                    proc.wait()
        wall = time.perf_counter() - t0
        _write(tmp / "clients.json", json.dumps(clients, indent=1) + "\n")
    rep = run_gate(out, write=False, key=key)
    bad = [c["request_id"] for c in clients if c["status"] != 200]
    ok_c = len(clients) == a.requests and not bad
    rep.criteria["clients_served"] = Criterion("clients_served", ok_c, {"answered_200": len(clients) - len(bad), "requests": a.requests, "failed": bad[:10]},
                                               "" if ok_c else f"{len(bad) or a.requests} requests not served (see clients.json)")
    d = rep.as_dict()
    d["failing"] = failing(rep)
    d["wall_s"] = wall
    d["tokens"] = sum(c.get("n_tokens", 0) for c in clients)
    safe_output.write_into(out, "gate.json", json.dumps(d, indent=1, default=str) + "\n", LIVE_TOOL)
    if not a.quiet:
        print(json.dumps(d, indent=1, default=str))
    verdict = "pass" if rep.passed else "FAIL: " + ", ".join(d["failing"])
    print(f"live: {verdict} ({a.requests} requests, concurrency {a.concurrency}, fault {a.fault}, {wall:.1f} s)", file=sys.stderr)
    return EXIT_OK if rep.passed else EXIT_FAIL
