"""An OpenAI-compatible server with witprobe attached: transformers' own ``transformers serve`` app.

``python -m witprobe.serve --model NAME|DIR|FILE.gguf --out DIR [--tau T] [--audit-rate R] ...``
builds the FastAPI application of ``transformers serve --continuous-batching`` (transformers'
``ModelManager``, ``GenerationState``, chat and completion handlers and ``build_server``: the
routes ``/v1/chat/completions``, ``/v1/completions``, ``/v1/responses``, ``/v1/models``,
``/health``, streaming included) and changes three things:

- the model is loaded by witprobe's zoo (:func:`witprobe.models.zoo.load_model`: a registered
  name such as ``smollm2``, a local model directory or a GGUF file) with the paged eager attention;
- the continuous-batching manager, when transformers creates it, gets the ledger and the live
  read meter attached (:func:`witprobe.serving.attach.attach`) before it starts, with
  synchronous batching (the ledger's requirement); the journal is ``DIR/journal.sqlite``;
- three routes and one middleware are added: ``GET /metrics`` (``prometheus_client``, one registry
  per server), ``GET /witprobe/verdict/{id}`` and ``GET /witprobe/verdicts``; every response
  carries ``X-Request-ID`` (the engine's request id; a client may set it) and, for a finished
  non-streaming generation, ``X-Witprobe-Verdict``: the request's verdict in compact JSON (its
  live attention bound, enforcement and audit counts, the ledger's ``ok``). OpenAI clients ignore
  the header; a streaming client reads the verdict from ``/witprobe/verdict/{id}`` after its
  stream ends.

It binds ``127.0.0.1`` unless ``--host`` says otherwise.
"""

from __future__ import annotations

import argparse
import json
import signal
import sys
import threading
import uuid
from pathlib import Path
from typing import Any

X_REQUEST_ID = "x-request-id"
VERDICT_HEADER = "X-Witprobe-Verdict"
#: verdict fields copied into the response header (the full verdict is at /witprobe/verdict/{id})
HEADER_ATTENTION = ("ok", "bound_max", "rows", "tau", "rows_over_tau", "enforced_rows", "fallback_rate", "budget", "audit",
                    "tier")


def header_verdict(v: dict[str, Any]) -> str:
    """The compact verdict of ``X-Witprobe-Verdict`` (ASCII JSON)."""
    att = v.get("attention") or {}
    body = {"request_id": v.get("request_id"), "ok": v.get("ok"), "delta_spent": v.get("delta_spent"),
            "attention": {k: att.get(k) for k in HEADER_ATTENTION}}
    return json.dumps(body, separators=(",", ":"), ensure_ascii=True)


class Witprobe:
    """What the server attaches: the ledger configuration, the journal path and, once transformers
    creates its continuous-batching manager, the attached ledger and its metrics registry."""

    def __init__(self, lcfg: Any, journal: Path) -> None:
        self.lcfg = lcfg
        self.journal = journal
        self.ledger: Any = None
        self.registry: Any = None
        self.lock = threading.Lock()
        self.counters = {"requests_ok": 0, "requests_failed": 0, "requests_refused": 0, "tokens": 0}

    def attached(self, ledger: Any) -> None:
        from witprobe.serving.metrics import ledger_registry

        with self.lock:
            self.ledger = ledger
            self.registry = ledger_registry(ledger, self.served)

    def served(self) -> dict[str, int]:
        with self.lock:
            out = dict(self.counters)
        out["engine_up"] = int(self.ledger is not None and self.ledger.manager.is_running())
        return out

    def count(self, key: str) -> None:
        with self.lock:
            self.counters[key] += 1


def _components(model_ref: str, wp: Witprobe, cb_kwargs: dict[str, Any]) -> Any:
    """transformers serve's application with the zoo loader and the ledger attached."""
    from transformers import ContinuousBatchingConfig
    from transformers.cli.serving.chat_completion import ChatCompletionHandler
    from transformers.cli.serving.completion import CompletionHandler
    from transformers.cli.serving.model_manager import ModelManager
    from transformers.cli.serving.response import ResponseHandler
    from transformers.cli.serving.server import build_server
    from transformers.cli.serving.systemone import SystemOneHandler
    from transformers.cli.serving.transcription import TranscriptionHandler
    from transformers.cli.serving.utils import CBGenerateManager, GenerationState

    from witprobe.models.zoo import load_model
    from witprobe.serving.attach import attach, detach

    loaded: dict[str, Any] = {}

    def zoo() -> Any:
        if "lm" not in loaded:
            loaded["lm"] = load_model(model_ref, attn_implementation="paged|eager")
        return loaded["lm"]

    class ZooModelManager(ModelManager):
        """transformers' model manager, loading through witprobe's zoo (registered names, directories, GGUF)."""

        @staticmethod
        def process_model_name(model_id: str) -> str:
            return model_id

        def _load_processor(self, model_id_and_revision: str, gguf_file: str | None = None) -> Any:
            return zoo().tokenizer

        def _load_model(self, model_id_and_revision: str, tqdm_class: Any = None, progress_callback: Any = None,
                        gguf_file: str | None = None) -> Any:
            return zoo().model

    class LedgerCBGenerateManager(CBGenerateManager):
        """transformers' continuous-batching manager, with the ledger attached before it starts."""

        def init_cb(self, model: Any, gen_config: Any) -> None:
            if self._cb is not None:
                return
            cb = model.init_continuous_batching(generation_config=gen_config, continuous_batching_config=self._cb_config)
            wp.attached(attach(cb, wp.lcfg, journal=wp.journal))
            self._cb = cb
            cb.start()

        def stop(self) -> None:
            super().stop()
            if wp.ledger is not None and wp.ledger.attached:
                detach(wp.ledger)

    class LedgerGenerationState(GenerationState):
        def get_manager(self, model_id: str, use_cb: bool = False) -> Any:
            if use_cb and self._cb_manager is None:
                self._cb_manager = LedgerCBGenerateManager(cb_config=self._cb_config)
                self._cb_model_id = model_id
            return super().get_manager(model_id, use_cb)

    cfg = ContinuousBatchingConfig(use_async_batching=False, use_cuda_graph=False, **cb_kwargs)
    mm = ZooModelManager(device="cpu", dtype="auto", continuous_batching=True, attn_implementation=None,
                         model_timeout=-1, force_model=model_ref)
    gs = LedgerGenerationState(continuous_batching=True, compile=False, cb_config=cfg)
    chat = ChatCompletionHandler(model_manager=mm, generation_state=gs, chat_template_kwargs={})
    app = build_server(mm, chat, completion_handler=CompletionHandler(model_manager=mm, generation_state=gs),
                       response_handler=ResponseHandler(model_manager=mm, generation_state=gs, chat_template_kwargs={}),
                       transcription_handler=TranscriptionHandler(mm, gs),
                       systemone_handler=SystemOneHandler(model_manager=mm, generation_state=gs, chat_template_kwargs={},
                                                          decision_config=None),
                       generation_state=gs, enable_cors=False)
    return app, mm, gs


def build_app(model_ref: str, wp: Witprobe, cb_kwargs: dict[str, Any]) -> tuple[Any, Any]:
    """The FastAPI app (see the module docstring) and its ``GenerationState`` (shut it down to close the journal)."""
    from fastapi import Request
    from fastapi.responses import JSONResponse, PlainTextResponse
    from prometheus_client import generate_latest

    from witprobe.serving.metrics import CONTENT_TYPE

    app, _mm, gs = _components(model_ref, wp, cb_kwargs)

    @app.middleware("http")
    async def witprobe_verdict(request: Request, call_next: Any) -> Any:
        rid = request.headers.get(X_REQUEST_ID)
        if rid is None:  # name the request here, so that the verdict can be found after the handler
            rid = f"wp-{uuid.uuid4().hex}"
            request.scope["headers"] = [*request.scope["headers"], (X_REQUEST_ID.encode(), rid.encode())]
        response = await call_next(request)
        generation = request.url.path.startswith("/v1/") and request.method == "POST"
        if generation:
            wp.count("requests_ok" if response.status_code == 200 else "requests_failed")
        led = wp.ledger
        if generation and led is not None and response.status_code == 200:
            v = led.verdict(rid)
            streaming = response.headers.get("content-type", "").startswith("text/event-stream")
            if v is not None and not streaming:
                response.headers[VERDICT_HEADER] = header_verdict(v)
            response.headers[VERDICT_HEADER + "-URL"] = f"/witprobe/verdict/{rid}"
        return response

    @app.get("/metrics")
    def metrics() -> Any:
        if wp.registry is None:  # no request has started the engine yet: nothing attached to read
            return PlainTextResponse("", media_type=CONTENT_TYPE)
        return PlainTextResponse(generate_latest(wp.registry).decode(), media_type=CONTENT_TYPE)

    @app.get("/witprobe/verdict/{rid}")
    def verdict(rid: str) -> Any:
        v = None if wp.ledger is None else wp.ledger.verdict(rid)
        return JSONResponse(v) if v is not None else JSONResponse({"error": f"no request {rid}"}, status_code=404)

    @app.get("/witprobe/verdicts")
    def verdicts() -> Any:
        led = wp.ledger
        if led is None:
            return JSONResponse([])
        with led.lock:
            rids = list(led.uids_of)
        return JSONResponse([led.verdict(r) for r in rids])

    return app, gs


def _watch_parent(pid: int, server: Any) -> None:
    """A driver that died (or was killed) leaves no orphan server behind."""
    import os
    import time

    while not server.should_exit:
        time.sleep(0.5)
        try:
            os.kill(pid, 0)
        except OSError:
            server.should_exit = True
            return


def _parser() -> argparse.ArgumentParser:
    from witprobe.cliutil import OneLineParser
    from witprobe.serving.server import add_read_meter_args

    p = OneLineParser(prog="python -m witprobe.serve",
                      description="OpenAI-compatible server (transformers serve, continuous batching) with witprobe attached.")
    p.add_argument("--model", default="smollm2", help="registered name, model directory or .gguf file (default: smollm2)")
    p.add_argument("--out", type=Path, required=True, help="directory of the journal (journal.sqlite)")
    p.add_argument("--host", default="127.0.0.1", help="listen address (default: 127.0.0.1, loopback only)")
    p.add_argument("--port", type=int, default=8000)
    p.add_argument("--page-size", type=int, default=16, help="paged-cache tokens per block (default: 16)")
    p.add_argument("--num-blocks", type=int, default=256, help="paged-cache blocks (default: 256)")
    p.add_argument("--max-batch-tokens", type=int, default=64, help="tokens per forward (default: 64)")
    p.add_argument("--ready-file", type=Path, default=None, help="written as {port, pid} once the server accepts requests")
    p.add_argument("--parent-pid", type=int, default=None, help="shut down cleanly when this process is gone")
    add_read_meter_args(p)
    return p


def main(argv: list[str] | None = None) -> int:
    from witprobe.cliutil import run_handler

    return run_handler(_serve, _parser().parse_args(argv), "witprobe serve")


def _serve(a: argparse.Namespace) -> int:
    import os

    import uvicorn

    from witprobe.cliutil import UsageError
    from witprobe.models.loaded import ModelError
    from witprobe.models.zoo import check_model_ref
    from witprobe.serving.config import LiveConfig, LiveConfigError
    from witprobe.serving.server import read_meter_config

    if not 0 <= a.port <= 65535:
        raise UsageError(f"--port must lie in [0, 65535], got {a.port}")
    from witprobe.models.transformers_release import TransformersReleaseError, import_for

    try:
        import_for("transformers serve (witprobe serve)", "transformers.cli.serving.server")
    except TransformersReleaseError as e:
        raise UsageError(str(e)) from None
    if a.page_size < 1 or a.num_blocks < 8 or a.max_batch_tokens < 16:
        raise UsageError("--page-size must be >= 1, --num-blocks >= 8 and --max-batch-tokens >= 16")
    if a.ready_file is not None and (a.ready_file.exists() or a.ready_file.is_symlink()):
        raise UsageError(f"--ready-file {a.ready_file} exists: the server writes it new and never over a file")
    try:
        check_model_ref(a.model)
    except ModelError as e:
        raise UsageError(str(e)) from None
    try:
        lcfg = LiveConfig(**read_meter_config(a))
    except LiveConfigError as e:
        raise UsageError(str(e)) from None
    if a.out.is_symlink() or (a.out.exists() and not a.out.is_dir()):
        raise UsageError(f"--out {a.out} is not a directory")
    wp = Witprobe(lcfg, a.out / "journal.sqlite")
    try:  # the model loads before anything is written
        app, gs = build_app(a.model, wp, {"page_size": a.page_size, "num_blocks": a.num_blocks,
                                          "max_batch_tokens": a.max_batch_tokens})
    except ModelError as e:
        raise UsageError(str(e)) from None
    try:
        a.out.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise UsageError(f"cannot write --out {a.out}: {e.strerror or e}") from None
    server = uvicorn.Server(uvicorn.Config(app, host=a.host, port=a.port, log_level="warning"))
    signal.signal(signal.SIGTERM, lambda *_: setattr(server, "should_exit", True))
    if a.parent_pid is not None:
        threading.Thread(target=_watch_parent, args=(a.parent_pid, server), daemon=True).start()
    if a.ready_file is not None:
        def ready() -> None:
            import time

            from witprobe.safe_output import atomic_write

            while not server.started and not server.should_exit:
                time.sleep(0.05)
            if server.started:
                port = server.servers[0].sockets[0].getsockname()[1]
                atomic_write(a.ready_file, json.dumps({"port": port, "pid": os.getpid()}))

        threading.Thread(target=ready, daemon=True).start()
    try:
        server.run()
    finally:
        gs.shutdown()  # stops the engine and detaches the ledger: the journal's close record
        if wp.ledger is not None and not wp.ledger.journal.closed:
            wp.ledger.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
