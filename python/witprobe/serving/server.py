"""A small loopback HTTP server running transformers' continuous batching with the ledger attached.

``python -m witprobe.serving.server --out DIR`` loads SmolLM2 (``attn_implementation="paged|eager"``,
CPU), creates a ``ContinuousBatchingManager``, attaches the ledger (journal ``DIR/journal.sqlite``),
runs the warmup request (warmup account, uid 0), and serves on ``127.0.0.1`` only:

====================  ===========================================================================
``POST /generate``    ``{"request_id", "prompt" | "input_ids", "max_new_tokens"}`` -> tokens, text,
                      the request's verdict and the committed journal head ``[seq, hash]``
``GET /verdict/ID``   the verdict of one request (404 if unknown)
``GET /verdicts``     every user request's verdict
``GET /metrics``      Prometheus text format 0.0.4 (``prometheus_client``, one registry per server)
``GET /healthz``      ``{"ok", "engine_running", "reason"}``: 200 while the engine runs, else 503
``GET /journal/head`` ``{"seq", "hash"}`` of the last committed journal record
``POST /shutdown``    stop the engine, close the journal, exit
====================  ===========================================================================

Health: once the engine's generation loop has stopped (a request crashed it: transformers'
continuous batching fails every pending request and ends its thread), ``/healthz`` and ``/metrics``
answer 503 (a Prometheus scrape then records ``up = 0``; the body still carries
``witprobe_engine_up 0``), and ``/generate`` answers 503 at once.

Refusals: a prompt whose tokens plus ``max_new_tokens`` exceed the engine's KV capacity
(``num_blocks * page_size`` tokens) is refused with 413 before it reaches the engine, as is a body
over 1 MiB. Every state-changing request (``POST``) must name this server in ``Host``
(``127.0.0.1:PORT`` or ``localhost:PORT``) and, if it sends ``Origin``, an origin of this server:
otherwise 403 (a web page in a browser cannot drive the server through DNS rebinding or a
cross-site form).

With ``--sign KEY`` (an Ed25519 private key, :mod:`witprobe.signing`) the journal ends with a
signed head after ``close``, and every journal head the server returns carries ``signed_head``:
``{"n_records", "head", "time", "key_id", "signature"}`` (:mod:`witprobe.ledger.signed_head`),
signed when the response is made. A client that keeps it can later run ``ledger verify
--expect-head FILE --key PUB`` to catch a journal cut shorter or re-chained since.

When it is ready it writes ``--ready-file`` (``{"port", "pid"}``, temp file + rename). SIGTERM is a
clean shutdown; SIGKILL leaves the journal valid up to its last committed record, without ``close``.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import sys
import threading
import time
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

RID = re.compile(r"^[A-Za-z0-9_.:-]{1,64}$")
LOOPBACK = "127.0.0.1"


@dataclass(frozen=True)
class EngineConfig:
    """Engine geometry: paged-cache page size and blocks, tokens per forward, default generation length."""

    page_size: int = 16
    num_blocks: int = 96
    max_batch_tokens: int = 64
    max_new_tokens: int = 8
    request_timeout_s: float = 300.0

    @property
    def capacity_tokens(self) -> int:
        """The most tokens (prompt plus generated) one request's KV cache can hold."""
        return self.page_size * self.num_blocks


class Engine:
    """The model, its continuous-batching manager, the attached ledger (or none) and result routing."""

    def __init__(self, ecfg: EngineConfig, lcfg: Any | None, journal: Path | None, signer: Any | None = None) -> None:
        import torch
        from transformers import GenerationConfig
        from transformers.generation.configuration_utils import ContinuousBatchingConfig  # 5.24: checked in _serve

        from witprobe.models.zoo import load_model

        torch.set_num_threads(max(1, min(2, os.cpu_count() or 1)))
        self.ecfg = ecfg
        lm = load_model("smollm2", attn_implementation="paged|eager")
        self.model, self.tok = lm.model, lm.tokenizer
        gen = GenerationConfig(max_new_tokens=ecfg.max_new_tokens, do_sample=False, eos_token_id=-1)
        cb = ContinuousBatchingConfig(page_size=ecfg.page_size, num_blocks=ecfg.num_blocks, max_batch_tokens=ecfg.max_batch_tokens,
                                      use_async_batching=False, use_cuda_graph=False)
        self.manager = self.model.init_continuous_batching(generation_config=gen, continuous_batching_config=cb)
        self.ledger = None
        if lcfg is not None:
            from witprobe.serving.attach import attach

            self.ledger = attach(self.manager, lcfg, journal=journal, signer=signer)
        else:
            self.manager.warmup()
        self._waiters: dict[str, tuple[threading.Event, list[Any]]] = {}
        self._lock = threading.Lock()
        self.counters = {"requests_ok": 0, "requests_failed": 0, "requests_refused": 0, "tokens": 0}
        self.crash: str | None = None  # the error that stopped the engine's generation loop, once it has
        self.metrics = None
        if self.ledger is not None:
            from witprobe.serving.metrics import ledger_registry

            self.metrics = ledger_registry(self.ledger, self.served)
        self._stop = threading.Event()
        self.manager.start()
        self._router = threading.Thread(target=self._route, name="witprobe-results", daemon=True)
        self._router.start()

    def _route(self) -> None:
        while not self._stop.is_set():
            r = self.manager.get_result(timeout=0.1)
            if r is None:
                if not self.manager.is_running():
                    time.sleep(0.05)
                continue
            if not r.is_finished():
                continue
            with self._lock:
                w = self._waiters.get(r.request_id)
            if w is not None:
                w[1].append(r)
                w[0].set()

    def count(self, **inc: int) -> None:
        with self._lock:
            for k, v in inc.items():
                self.counters[k] += v

    def served(self) -> dict[str, int]:
        """A copy of the server's own counters, and ``engine_up`` (1 while the engine runs), read by
        the metrics registry at scrape time."""
        with self._lock:
            out = dict(self.counters)
        out["engine_up"] = int(self.health()["ok"])
        return out

    def health(self) -> dict[str, Any]:
        """``{"ok", "engine_running", "reason"}``: ok while the generation loop runs and nothing stopped it."""
        running = bool(self.manager.is_running())
        reason = "" if running else f"the engine's generation loop has stopped{': ' + self.crash if self.crash else ''}"
        return {"ok": running and not self._stop.is_set(), "engine_running": running, "reason": reason}

    def encode(self, prompt: str) -> list[int]:
        return list(self.tok.apply_chat_template([{"role": "user", "content": prompt}], add_generation_prompt=True,
                                                 return_dict=True)["input_ids"])

    def generate(self, rid: str, ids: list[int], max_new_tokens: int) -> Any:
        ev: threading.Event = threading.Event()
        with self._lock:
            if rid in self._waiters:
                raise KeyError(rid)
            self._waiters[rid] = (ev, [])
        if self.manager.add_request(ids, request_id=rid, max_new_tokens=max_new_tokens) is None:
            raise RuntimeError("the engine is not accepting requests")
        deadline = time.monotonic() + self.ecfg.request_timeout_s
        while not ev.wait(0.2):  # a stopped engine never answers: do not wait for it
            if not self.manager.is_running():
                raise RuntimeError("the engine's generation loop has stopped")
            if time.monotonic() > deadline:
                raise TimeoutError(f"request {rid} did not finish within {self.ecfg.request_timeout_s} s")
        out = self._waiters[rid][1][0]
        if out.error is not None and not self.manager.is_running():
            self.crash = str(out.error)[:200]
        return out

    def warmup(self, prompt: str, prefix: str) -> None:
        """One warmup request (the warmup account). Two new tokens: a request that finishes in its first
        forward registers no prefix blocks, so nothing of it could be shared."""
        self.generate(f"{prefix}0", self.encode(prompt), 2)

    def shutdown(self) -> None:
        self.manager.stop(block=True, timeout=60)
        self._stop.set()
        if self.ledger is not None:
            from witprobe.serving.attach import detach

            detach(self.ledger)


class Handler(BaseHTTPRequestHandler):
    engine: Engine
    server_version = "witprobe-serving/1"

    def log_message(self, fmt: str, *args: Any) -> None:  # quiet: the journal is the record
        return

    def _send(self, code: int, body: Any, ctype: str = "application/json") -> None:
        data = (body if isinstance(body, str) else json.dumps(body, default=str)).encode()
        self.send_response(code)
        self.send_header("Content-Type", ctype)
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def _same_origin(self) -> str | None:
        """Why a state-changing request is refused (403), or None: ``Host`` must name this server on
        loopback, and ``Origin``, when sent, must be this server."""
        port = self.server.server_address[1]
        hosts = {f"127.0.0.1:{port}", f"localhost:{port}"}
        host = self.headers.get("Host")
        if host not in hosts:
            return f"Host {host!r} is not this server ({' or '.join(sorted(hosts))})"
        origin = self.headers.get("Origin")
        if origin is not None and origin not in {f"http://{h}" for h in hosts}:
            return f"Origin {origin!r} is not this server"
        return None

    def _health(self) -> dict[str, Any]:
        e = self.engine
        return e.health() if hasattr(e, "health") else {"ok": True, "engine_running": True, "reason": ""}

    def _head(self) -> dict[str, Any]:
        """The last committed journal record ``{"seq", "hash"}``, with ``signed_head`` when the
        journal has a signing key (both read from one head)."""
        led = self.engine.ledger
        if led is None:
            return {"seq": None, "hash": None}
        sh = led.journal.signed_head()
        if sh is None:
            seq, h = led.journal.head
            return {"seq": seq, "hash": h}
        return {"seq": sh.n_records, "hash": sh.head, "signed_head": sh.as_dict()}

    def do_GET(self) -> None:  # noqa: N802 - http.server's naming
        e = self.engine
        if self.path == "/metrics":
            if e.metrics is None:
                return self._send(404, {"error": "no ledger attached"})
            from witprobe.serving.metrics import CONTENT_TYPE, prometheus_text

            return self._send(200 if self._health()["ok"] else 503, prometheus_text(e.metrics), CONTENT_TYPE)
        if self.path == "/journal/head":
            return self._send(200, self._head())
        if self.path == "/healthz":
            h = self._health()
            return self._send(200 if h["ok"] else 503, h)
        if self.path == "/verdicts":
            if e.ledger is None:
                return self._send(404, {"error": "no ledger attached"})
            rids = sorted({a.rid for a in e.ledger.book.accounts.values() if a.kind == "user"})
            return self._send(200, {r: e.ledger.verdict(r) for r in rids})
        if self.path.startswith("/verdict/"):
            rid = self.path[len("/verdict/"):]
            v = e.ledger.verdict(rid) if e.ledger is not None else None
            return self._send(200, v) if v is not None else self._send(404, {"error": f"unknown request {rid!r}"})
        return self._send(404, {"error": f"no route {self.path}"})

    def do_POST(self) -> None:  # noqa: N802
        e = self.engine
        refused = self._same_origin()
        if refused is not None:
            return self._send(403, {"error": refused})
        if self.path == "/shutdown":
            self._send(200, {"ok": True})
            threading.Thread(target=self.server.shutdown, daemon=True).start()
            return
        if self.path != "/generate":
            return self._send(404, {"error": f"no route {self.path}"})
        if not self._health()["ok"]:
            return self._send(503, {"error": self._health()["reason"] or "the engine is not running"})
        try:
            n = int(self.headers.get("Content-Length", "0"))
        except ValueError:
            return self._send(400, {"error": "Content-Length must be an integer"})
        if n > 1 << 20:
            e.count(requests_refused=1)
            return self._send(413, {"error": f"a body of {n} bytes is over the 1 MiB limit"})
        try:
            if n <= 0:
                raise ValueError("body must be 1 byte to 1 MiB of JSON")
            req = json.loads(self.rfile.read(n))
            if not isinstance(req, dict):
                raise ValueError("the body must be a JSON object")
            rid = req.get("request_id")
            if not isinstance(rid, str) or not RID.match(rid) or rid.startswith(e.ledger.cfg.warmup_prefix if e.ledger else "warmup-"):
                raise ValueError("request_id must match [A-Za-z0-9_.:-]{1,64} and not use the warmup prefix")
            mnt = req.get("max_new_tokens", e.ecfg.max_new_tokens)
            if not isinstance(mnt, int) or not 1 <= mnt <= 256:
                raise ValueError("max_new_tokens must be an integer in [1, 256]")
            if "input_ids" in req:
                ids = req["input_ids"]
                if not (isinstance(ids, list) and ids and all(isinstance(t, int) and 0 <= t < e.model.config.vocab_size for t in ids)):
                    raise ValueError("input_ids must be a nonempty list of token ids")
            elif isinstance(req.get("prompt"), str) and req["prompt"]:
                ids = e.encode(req["prompt"])
            else:
                raise ValueError("give a nonempty prompt or input_ids")
        except (ValueError, TypeError) as err:
            return self._send(400, {"error": str(err)})
        cap = e.ecfg.capacity_tokens
        if len(ids) + mnt > cap:
            e.count(requests_refused=1)
            return self._send(413, {"error": f"the prompt's {len(ids)} tokens plus max_new_tokens {mnt} exceed the "
                                             f"engine's KV capacity of {cap} tokens"})
        try:
            out = e.generate(rid, ids, mnt)
        except KeyError:
            return self._send(409, {"error": f"request_id {rid!r} was already used"})
        except (TimeoutError, RuntimeError) as err:
            e.count(requests_failed=1)
            return self._send(503, {"error": str(err)})
        if out.error is not None:
            e.count(requests_failed=1)
            return self._send(500, {"error": str(out.error), "request_id": rid})
        e.count(requests_ok=1, tokens=len(out.generated_tokens))
        self._send(200, {"request_id": rid, "tokens": list(out.generated_tokens), "text": e.tok.decode(out.generated_tokens),
                         "verdict": e.ledger.verdict(rid) if e.ledger else None, "journal_head": self._head()})


def _parser() -> argparse.ArgumentParser:
    from witprobe.serving.config import FAULTS

    from witprobe.cliutil import OneLineParser

    p = OneLineParser(prog="python -m witprobe.serving.server", description="Loopback serving with the ledger attached.")
    p.add_argument("--out", type=Path, required=True, help="directory of the journal (journal.sqlite)")
    p.add_argument("--ready-file", type=Path, required=True, help="written as {port, pid} once the server accepts requests")
    p.add_argument("--port", type=int, default=0, help="loopback port (default: any free port)")
    p.add_argument("--fault", choices=FAULTS, default="none")
    p.add_argument("--no-ledger", action="store_true", help="serve without the ledger (baseline)")
    p.add_argument("--num-blocks", type=int, default=EngineConfig.num_blocks)
    p.add_argument("--max-batch-tokens", type=int, default=EngineConfig.max_batch_tokens)
    p.add_argument("--max-new-tokens", type=int, default=EngineConfig.max_new_tokens)
    p.add_argument("--synchronous", choices=("NORMAL", "FULL"), default="NORMAL")
    p.add_argument("--parent-pid", type=int, default=None, help="shut down cleanly when this process is gone")
    p.add_argument("--sign", type=Path, default=None, help="Ed25519 private key: sign the journal's heads")
    add_read_meter_args(p)
    return p


def add_read_meter_args(p: argparse.ArgumentParser) -> None:
    """The live read meter's options (shared by the server and ``ledger live``)."""
    p.add_argument("--tau", type=float, default=None,
                   help="enforce: rows whose live TV bound exceeds TAU in (0, 1) are served exact (keeps an exact side pool)")
    p.add_argument("--request-budget", type=float, default=None, metavar="B",
                   help="admission on each request's cumulative bound: once the summed live TV bounds of its rows "
                        "served compressed would pass B, that read and every later one are served exact (keeps an "
                        "exact side pool)")
    p.add_argument("--audit-rate", type=float, default=0.0,
                   help="fraction of (row, head) pairs whose kernel output is audited in float64 (default: 0)")
    p.add_argument("--bound-layers", default="all", help="layers to meter: all, or a comma list such as 2,10 (default: all)")
    p.add_argument("--keep-exact", action="store_true", help="keep the exact side pool (measures each row's realized TV)")
    p.add_argument("--no-live-bound", action="store_true", help="do not meter attention reads")


def read_meter_argv(a: argparse.Namespace) -> list[str]:
    """The read meter's options of ``a`` as server arguments."""
    out = ["--audit-rate", repr(a.audit_rate), "--bound-layers", a.bound_layers]
    out += ["--tau", repr(a.tau)] if a.tau is not None else []
    out += ["--request-budget", repr(a.request_budget)] if a.request_budget is not None else []
    out += ["--keep-exact"] if a.keep_exact else []
    out += ["--no-live-bound"] if a.no_live_bound else []
    return out


def read_meter_config(a: argparse.Namespace) -> dict[str, Any]:
    """:class:`~witprobe.serving.config.LiveConfig` keywords of the read meter options (a
    :class:`~witprobe.cliutil.UsageError` names a bad one)."""
    from witprobe.cliutil import UsageError

    if a.bound_layers == "all":
        layers = None
    else:
        try:
            layers = tuple(int(x) for x in a.bound_layers.split(","))
        except ValueError:
            raise UsageError(f"--bound-layers must be all or a comma list of layer indices, got {a.bound_layers!r}") from None
    return {"live_bound": not a.no_live_bound, "bound_layers": layers, "tau": a.tau, "audit_rate": a.audit_rate,
            "keep_exact": a.keep_exact, "request_budget": a.request_budget}


def _watch_parent(pid: int, httpd: ThreadingHTTPServer) -> None:
    """A driver that died (or was killed) leaves no orphan server behind."""
    while True:
        time.sleep(0.5)
        try:
            os.kill(pid, 0)
        except OSError:
            httpd.shutdown()
            return


def _usage(a: argparse.Namespace) -> str | None:
    """Why the arguments cannot start a server (None when they can); checked before anything is written."""
    if not 0 <= a.port <= 65535:
        return f"--port must lie in [0, 65535], got {a.port}"
    if a.num_blocks < 8 or a.max_batch_tokens < 16 or not 1 <= a.max_new_tokens <= 4096:
        return "--num-blocks must be >= 8, --max-batch-tokens >= 16 and --max-new-tokens in [1, 4096]"
    if a.out.is_symlink() or (a.out.exists() and not a.out.is_dir()):
        return f"--out {a.out} is not a directory"
    if a.ready_file.exists() or a.ready_file.is_symlink():
        return f"--ready-file {a.ready_file} exists: the server writes it new and never over a file"
    if not a.ready_file.parent.is_dir():
        return f"--ready-file {a.ready_file}: {a.ready_file.parent} is not a directory"
    if a.sign is not None and not a.sign.is_file():
        return f"--sign {a.sign}: no such key file"
    return None


def main(argv: list[str] | None = None) -> int:
    from witprobe.cliutil import run_handler

    return run_handler(_serve, _parser().parse_args(argv), "witprobe serve")


def _serve(a: argparse.Namespace) -> int:
    from witprobe.cliutil import UsageError

    from witprobe.models.transformers_release import continuous_batching_missing

    why = _usage(a) or continuous_batching_missing()
    if why is not None:
        raise UsageError(why)
    from witprobe.ledger.trace import PROMPTS
    from witprobe.serving.config import LiveConfig, LiveConfigError

    try:
        lcfg = None if a.no_ledger else LiveConfig(fault=a.fault, synchronous=a.synchronous, **read_meter_config(a))
    except LiveConfigError as e:
        raise UsageError(str(e)) from None
    if not a.no_ledger:
        try:
            a.out.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise UsageError(f"cannot write --out {a.out}: {e.strerror or e}") from None
    ecfg = EngineConfig(num_blocks=a.num_blocks, max_batch_tokens=a.max_batch_tokens, max_new_tokens=a.max_new_tokens)
    signer = None
    if a.sign is not None:
        from witprobe.signing import load_private

        signer = load_private(a.sign)
    from witprobe.ledger.journal import JournalError

    try:
        engine = Engine(ecfg, lcfg, None if lcfg is None else a.out / "journal.sqlite", signer)
    except JournalError as e:
        raise UsageError(str(e)) from None
    engine.warmup(PROMPTS[0], lcfg.warmup_prefix if lcfg else "warmup-")
    Handler.engine = engine
    httpd = ThreadingHTTPServer((LOOPBACK, a.port), Handler)
    httpd.daemon_threads = True
    signal.signal(signal.SIGTERM, lambda *_: threading.Thread(target=httpd.shutdown, daemon=True).start())
    if a.parent_pid is not None:
        threading.Thread(target=_watch_parent, args=(a.parent_pid, httpd), daemon=True).start()
    from witprobe.safe_output import atomic_write

    atomic_write(a.ready_file, json.dumps({"port": httpd.server_address[1], "pid": os.getpid()}))
    try:
        httpd.serve_forever(poll_interval=0.2)
    finally:
        httpd.server_close()
        engine.shutdown()
    return 0


if __name__ == "__main__":
    sys.exit(main())
