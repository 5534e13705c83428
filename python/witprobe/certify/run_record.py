"""The run record (``run.json``, schema ``witprobe-run/6``): typed, versioned, with a JSON Schema.

``certify run`` measures a model into a :class:`RunRecord` and stores it as canonical JSON; every
consumer (derivation, coverage, the report, ``certify check``) reads it back through
:func:`parse_run`, which is strict: a missing or unknown field, a value of the wrong type, or a
self-check counter that is not a count fails with the JSON path of the problem. The JSON Schema
(``docs/schema/run.schema.json``) is generated from these types by :func:`run_schema`
(``python scripts/regenerate.py --only schema``); ``SCHEMA_FINGERPRINTS`` pins its SHA-256 per
schema version, so renaming, adding or retyping a field fails the tests until the version is
bumped (and older versions stay readable: ``READABLE_SCHEMAS``).

A layer's ``write`` and ``read`` blocks map reading names to a :data:`Reading`: a
:class:`Statistic` (count, sum, mean, minimum and maximum of the values a meter folded, float64,
in the meter's unit) or a counter (an integer ``>= 0``). Counters that are self-checks are named
in :mod:`witprobe.self_checks`; the types require them to be counts.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any, Union

from witprobe import self_checks
from witprobe.typed_json import RecordError, decode, encode, field_doc, json_schema

RUN_SCHEMA = "witprobe-run/6"
# /1: the first record; /2: reads record the magnitudes of the float64 error analysis (fp_width,
# keys_visible, score_err, score_abs_max); /3: dense-KV reads record the attention-output meter,
# requests the per-step next-token readings and config the end-to-end tolerance; /4: config records the
# query-aligned witness's calibration (config.query_aligned) and reads may carry its certified box form; /5: layers
# record the kernel-checked box rows (layers[].box_rows); /6: config records the codec's provenance (config.codec_provenance) and a run may record task readings (tasks). The versions differ
# in which readings a layer records and in optional fields only, so one type reads them all.
READABLE_SCHEMAS = ("witprobe-run/1", "witprobe-run/2", "witprobe-run/3", "witprobe-run/4", "witprobe-run/5",
                    RUN_SCHEMA)
RUN_SCHEMA_ID = "https://witprobe.dev/schema/run.schema.json"
# SHA-256 of the canonical JSON text of run_schema() per schema version: a test fails when the
# types change and this does not (bump RUN_SCHEMA, keep the old version readable, update this)
SCHEMA_FINGERPRINTS = {RUN_SCHEMA: "c9fba02c285ab0c1fd7faf09fdd1b60adfd1a2d4154b1e4427e327c0f9450307"}

READING_NAME = r"[A-Za-z][A-Za-z0-9_.]*"


@dataclass(frozen=True)
class Statistic:
    """A meter's fold of float64 values: their count, sum, mean, minimum and maximum (unit: the meter's).

    ``n`` values from ``calls`` meter calls; ``mean``, ``min`` and ``max`` are null when ``n`` is 0."""

    calls: int = field(metadata=field_doc("meter calls that folded values (some may fold none)", minimum=0))
    n: int = field(metadata=field_doc("values folded", minimum=0))
    sum: float = field(metadata=field_doc("sum of the values (float64)"))
    mean: float | None = field(metadata=field_doc("sum / n; null when n is 0"))
    min: float | None = field(metadata=field_doc("smallest value; null when n is 0"))
    max: float | None = field(metadata=field_doc("largest value; null when n is 0 (a bound read from it fails closed)"))


Reading = Union[Statistic, int]  # a statistic, or a counter (an integer >= 0)


def _write_counters() -> dict[str, tuple[Any, str]]:
    return {rx: (int, doc) for rx, doc in self_checks.counter_patterns("write").items()}


def _read_counters() -> dict[str, tuple[Any, str]]:
    return {rx: (int, doc) for rx, doc in self_checks.counter_patterns("read").items()}


@dataclass(frozen=True)
class OutputProjectionNorm:
    """An upper bound on the operator norm of a layer's output projection W_o (a measured constant)."""

    opnorm_upper: str = field(metadata=field_doc("exact upper bound on ||W_o||_2 (a fraction p/q)"))
    opnorm_upper_decimal: str = field(metadata=field_doc("the same, decimal, rounded up to 6 digits"))
    frobenius_upper_decimal: str = field(metadata=field_doc("upper bound on ||W_o||_F, decimal, rounded up"))
    method: str = field(metadata=field_doc("how the bound was computed"))
    shape: list[int] = field(metadata=field_doc("W_o's shape (out_features, in_features)"))


@dataclass(frozen=True)
class ChannelProfile:
    """Per-channel decay profile of a recurrent layer (readings): means over ``n`` state updates."""

    n: int = field(metadata=field_doc("state updates averaged", minimum=0))
    mean_log_a: list[float] = field(metadata=field_doc("per channel, mean of log a_t (a_t: the decay gate)"))
    mean_a: list[float] = field(metadata=field_doc("per channel, mean of a_t"))
    near_one_share: list[float] = field(metadata=field_doc("per channel, share of updates with a_t near 1"))


@dataclass(frozen=True)
class BoxRow:
    """One read row shipped to the kernel's box checker (``coq/Witprobe/BoxCheck.v``): its keys
    pooled into radius buckets (:func:`witprobe.probe.box_sup.box_pool`). Measured: the masses are
    float64 sums of the served distribution ``p'``, the radii are ``c_t (1 + 2**-30)`` maxima."""

    c_max: float = field(metadata=field_doc("the row's largest radius c_t (as read.c_max folds it)"))
    bound: float = field(metadata=field_doc("the meter's box bound of the row (a reading)"))
    intervals: int = field(metadata=field_doc("grid intervals of the row's certificate (an untrusted hint)", minimum=1))
    heavy: list[float] = field(metadata=field_doc("[served mass, radius] of the row's heaviest key"))
    buckets: list[list[float]] = field(metadata=field_doc(
        "[served mass, largest radius] of each nonempty bucket of the other keys"))


@dataclass(frozen=True)
class BoxRows:
    """A layer's rows for one box form: those whose centred cap may exceed the layer's bound
    (:mod:`witprobe.probe.box_rows`); every other row's radii are at most ``dropped_c_max``."""

    rows_seen: int = field(metadata=field_doc("rows the keeper was offered", minimum=0))
    dropped_c_max: float = field(metadata=field_doc("largest c_max of the rows not kept"))
    rows: list[BoxRow] = field(metadata=field_doc("the kept rows"))


@dataclass(frozen=True)
class LayerRecord:
    """One layer's meters: the write block (every stored tensor), the read block (every attention
    read or state update), the host call counts and the layer's measured constants."""

    layer: int = field(metadata=field_doc("layer index, 0-based; equals the position in layers", minimum=0))
    memory_class: str = field(metadata=field_doc("the memory kind (dense_kv, latent, latent_indexed, recurrent, v4)"))
    write: dict[str, Reading] = field(metadata=field_doc(
        "write-side readings by name: statistics and counters", keys=READING_NAME, key_types=_write_counters))
    read: dict[str, Reading] = field(metadata=field_doc(
        "read-side readings by name: statistics and counters", keys=READING_NAME, key_types=_read_counters))
    host_write_calls: int = field(metadata=field_doc("cache writes the host observed", minimum=0))
    host_read_calls: int = field(metadata=field_doc("attention reads the host observed", minimum=0))
    channels: ChannelProfile | None = field(default=None, metadata=field_doc(
        "recurrent layers: the per-channel decay profile", optional=True))
    o_proj: OutputProjectionNorm | None = field(default=None, metadata=field_doc(
        "dense-KV layers: the output projection's norm bound", optional=True))
    box_rows: dict[str, BoxRows] | None = field(default=None, metadata=field_doc(
        "box forms (boxsup, qa_boxsup): the rows shipped to the kernel's box checker (schema /5)", optional=True,
        keys="(boxsup|qa_boxsup)"))


@dataclass(frozen=True)
class ModelRecord:
    """The model that was measured."""

    name: str = field(metadata=field_doc("registry name or local path"))
    family: str = field(metadata=field_doc("architecture family"))
    memory_class: str = field(metadata=field_doc("the model's memory class (its kinds joined by +)"))
    num_layers: int = field(metadata=field_doc("decoder layers", minimum=1))
    num_heads: int = field(metadata=field_doc("query heads", minimum=1))
    num_kv_heads: int = field(metadata=field_doc("key/value heads", minimum=1))
    head_dim: int = field(metadata=field_doc("head dimension", minimum=1))
    provenance: dict[str, Any] = field(metadata=field_doc(
        "where the weights come from (hashes, versions, conversion details): free-form, not read by derivation"))


@dataclass(frozen=True)
class QueryAlignedRecord:
    """The query-aligned witness of a run (``certify run --query-aligned R``): which bases it used.

    Soundness does not depend on the bases (``BoxQueryAligned.box_qa_or_banded_claim`` holds for any
    ``U``); the record says how they were calibrated so a run can be reproduced."""

    rank: int = field(metadata=field_doc("basis width r per layer and KV head", minimum=1))
    calibration_prompts: list[str] = field(metadata=field_doc(
        "the calibration prompts (none of them is a measured prompt)"))
    calibration_tokens: int = field(metadata=field_doc("tokens of the calibration prompts", minimum=1))
    method: str = field(metadata=field_doc("how each basis was computed"))
    basis_sha256: str = field(metadata=field_doc("SHA-256 of the bases, layer order, float64 little-endian"))
    witness_bytes_per_entry: int = field(metadata=field_doc(
        "stored bytes per key entry and KV head: a in float16 (2 r) plus rho and eps in float32 (8)", minimum=1))


@dataclass(frozen=True)
class CodecSourceRecord:
    """One module of the code that built a run's codec (:mod:`witprobe.memory.codec_plugins`)."""

    module: str = field(metadata=field_doc("the module's import name"))
    sha256: str | None = field(default=None, metadata=field_doc(
        "SHA-256 of the module's source file at the run; absent when it has none", optional=True))
    distribution: str | None = field(default=None, metadata=field_doc(
        "the installed distribution that ships the module; absent when none does", optional=True))
    version: str | None = field(default=None, metadata=field_doc("that distribution's version", optional=True))


@dataclass(frozen=True)
class CodecProvenanceRecord:
    """Which code built a run's codec (schema /6): ``certify check`` re-hashes every source and
    names a plugin codec whose code changed since the run."""

    spec: str = field(metadata=field_doc("the --codec spec as given"))
    origin: str = field(metadata=field_doc("builtin, entry_point or import"))
    object: str = field(metadata=field_doc("module:qualname of the class or function the spec named"))
    codec_class: str = field(metadata=field_doc("module:qualname of the codec built"))
    parameters: dict[str, Any] = field(metadata=field_doc(
        "the codec's dataclass fields as JSON values (an eviction policy nested under policy)"))
    sources: list[CodecSourceRecord] = field(metadata=field_doc("every module of that code, with its hash"))


@dataclass(frozen=True)
class RunConfigRecord:
    """What was measured: codec, bands, prompts and generation length."""

    codec: str = field(metadata=field_doc("the codec spec: a registered name, an entry point or module:Attr(k=v)"))
    bands: int = field(metadata=field_doc("witness bands per stored vector", minimum=1))
    compress_values: bool = field(metadata=field_doc("whether values are compressed as well as keys"))
    max_new_tokens: int = field(metadata=field_doc("greedy tokens generated per prompt", minimum=1))
    prompts: list[Union[str, list[dict[str, str]]]] = field(metadata=field_doc(
        "prompts: strings, or chats (lists of messages with role and content)"))
    e2e_tv_tolerance: float | None = field(default=None, metadata=field_doc(
        "next-token TV above which the verdict says 'diverged end to end'; absent (records before /3) means 0.1",
        optional=True))
    batch: int | None = field(default=None, metadata=field_doc(
        "prompts per padded batch; absent means 1", optional=True, minimum=2))
    box_sup: bool | None = field(default=None, metadata=field_doc(
        "false when the box-sup meter was switched off; absent means on", optional=True))
    query_aligned: QueryAlignedRecord | None = field(default=None, metadata=field_doc(
        "the query-aligned witness's calibration (schema /4); absent when it was off", optional=True))
    codec_provenance: CodecProvenanceRecord | None = field(default=None, metadata=field_doc(
        "which code built the codec, with its parameters and source hashes (schema /6)", optional=True))


@dataclass(frozen=True)
class EnvironmentRecord:
    """Software versions of the run."""

    platform: str = field(metadata=field_doc("platform.platform()"))
    python: str = field(metadata=field_doc("Python version"))
    torch: str = field(metadata=field_doc("torch version"))
    transformers: str = field(metadata=field_doc("transformers version"))
    witprobe: str = field(metadata=field_doc("witprobe version"))


@dataclass(frozen=True)
class RequestRecord:
    """One served request: its tokens and, with the uncompressed reference on, the per-step readings."""

    prompt_index: int = field(metadata=field_doc("index into config.prompts", minimum=0))
    prompt_tokens: int = field(metadata=field_doc("prompt length in tokens", minimum=1))
    served_tokens: list[int] = field(metadata=field_doc("tokens generated from the compressed memory"))
    next_token_tv: list[float] | None = field(default=None, metadata=field_doc(
        "per step, TV between the reference and served next-token distributions (a reading)", optional=True))
    next_token_kl: list[float] | None = field(default=None, metadata=field_doc(
        "per step, KL(reference || served) in nats (a reading)", optional=True))
    reference_tokens: list[int] | None = field(default=None, metadata=field_doc(
        "the uncompressed model's greedy tokens", optional=True))
    agreeing_prefix: int | None = field(default=None, metadata=field_doc(
        "tokens before served and reference first differ", optional=True, minimum=0))


@dataclass(frozen=True)
class TaskItemRecord:
    """One item of a task: its score served compressed and uncompressed (1/0 for a right/wrong
    answer; the mean NLL in nats per token for a perplexity passage)."""

    compressed: float = field(metadata=field_doc("the item's score served from the compressed memory"))
    uncompressed: float = field(metadata=field_doc("the item's score from the uncompressed model"))


@dataclass(frozen=True)
class TaskRecord:
    """A task-level reading (``certify run --task``, :mod:`witprobe.certify.tasks`): a reading, never
    a bound (schema /6)."""

    task: str = field(metadata=field_doc("niah, ppl, or em:<file name>"))
    metric: str = field(metadata=field_doc("accuracy, perplexity or exact_match"))
    description: str = field(metadata=field_doc("what was measured, how, and what counts as right"))
    items: int = field(metadata=field_doc("items measured", minimum=1))
    compressed: float = field(metadata=field_doc("the metric served from the compressed memory"))
    uncompressed: float = field(metadata=field_doc("the metric from the uncompressed model"))
    per_item: list[TaskItemRecord] = field(metadata=field_doc("every item's scores, in order"))


@dataclass(frozen=True)
class RunRecord:
    """A witprobe run (``run.json``): the model, the configuration, the environment, every request
    and every layer's meters. Certificates are derived from it and from nothing else."""

    schema: str = field(metadata=field_doc("record version"))
    model: ModelRecord = field(metadata=field_doc("the measured model"))
    config: RunConfigRecord = field(metadata=field_doc("what was measured"))
    environment: EnvironmentRecord = field(metadata=field_doc("software versions"))
    requests: list[RequestRecord] = field(metadata=field_doc("served requests, in prompt order"))
    layers: list[LayerRecord] = field(metadata=field_doc("per-layer meters, in layer order"))
    tasks: list[TaskRecord] | None = field(default=None, metadata=field_doc(
        "task-level readings beside the bounds (--task; schema /6); absent when none was asked", optional=True))

    def to_json(self) -> dict[str, Any]:
        return encode(self)


def count(block: dict[str, Reading], key: str) -> int:
    """Counter ``key`` of a layer's write or read block (0 when absent); a statistic under a
    counter's name is malformed (``RecordError``)."""
    v = block.get(key, 0)
    if not isinstance(v, int):
        raise RecordError(f"{key} is a statistic, not a counter")
    return v


def parse_run(obj: Any, where: str = "run.json") -> RunRecord:
    """``obj`` (parsed JSON) as a :class:`RunRecord`; :class:`RecordError` naming the path otherwise.

    The ``schema`` must be one of ``READABLE_SCHEMAS``; layer ``i`` must say ``layer: i``."""
    if not isinstance(obj, dict):
        raise RecordError(f"{where}: expected an object, got {type(obj).__name__}")
    schema = obj.get("schema")
    if schema not in READABLE_SCHEMAS:
        raise RecordError(f"{where}.schema: {schema!r} is not one of {', '.join(READABLE_SCHEMAS)}")
    run = decode(RunRecord, obj, where)
    for i, layer in enumerate(run.layers):
        if layer.layer != i:
            raise RecordError(f"{where}.layers[{i}].layer: expected {i}, got {layer.layer}")
    return run


def as_record(run: RunRecord | dict[str, Any]) -> RunRecord:
    """``run`` itself, or the parsed ``run.json`` object ``run`` checked and typed by :func:`parse_run`."""
    return run if isinstance(run, RunRecord) else parse_run(run)


def run_schema() -> dict[str, Any]:
    """The JSON Schema of ``run.json`` (current version), generated from :class:`RunRecord`."""
    return json_schema(RunRecord, RUN_SCHEMA_ID, f"witprobe run record ({RUN_SCHEMA})", const={"schema": RUN_SCHEMA})


def schema_text() -> str:
    """``run_schema()`` as committed in ``docs/schema/run.schema.json`` (sorted keys, indent 1)."""
    return json.dumps(run_schema(), sort_keys=True, indent=1, ensure_ascii=True) + "\n"


def schema_fingerprint() -> str:
    return hashlib.sha256(schema_text().encode("utf-8")).hexdigest()
