"""Measure a pydantic v2 prototype of run.json's layer records against ``witprobe.typed_json``.

The evaluation behind docs/JSON.md ("Why not pydantic"): the prototype models ``Statistic`` and
``LayerRecord`` (with its nested records) as strictly as pydantic allows, then

1. decodes ``layers`` of every committed ``artifacts/coverage/*/run.json`` with both, checks they agree;
2. times both (from the parsed JSON object, and pydantic also from the raw bytes);
3. probes the strictness cases typed_json enforces and prints pydantic's answer to each.

Run: ``PYTHONPATH=python python3 scripts/measure_pydantic_records.py``. Not imported by the package.
"""

from __future__ import annotations

import json
import re
import sys
import time
from pathlib import Path
from typing import Annotated, Any

from pydantic import (BaseModel, ConfigDict, Discriminator, Field, StringConstraints, Tag, TypeAdapter, ValidationError,
                      field_validator, model_serializer)

from witprobe import self_checks
from witprobe.certify.run_record import READING_NAME, LayerRecord as TjLayer
from witprobe.typed_json import RecordError, decode, encode

ROOT = Path(__file__).resolve().parent.parent
STRICT = ConfigDict(strict=True, extra="forbid", frozen=True)


class Statistic(BaseModel):
    model_config = STRICT
    calls: int = Field(ge=0, description="meter calls that folded values (some may fold none)")
    n: int = Field(ge=0, description="values folded")
    sum: float = Field(description="sum of the values (float64)")
    mean: float | None = Field(description="sum / n; null when n is 0")
    min: float | None = Field(description="smallest value; null when n is 0")
    max: float | None = Field(description="largest value; null when n is 0")


def _reading_tag(v: Any) -> str:
    # called on validation (a dict) and on serialization (a Statistic): both must say "statistic"
    return "statistic" if isinstance(v, (dict, Statistic)) else "counter"


Reading = Annotated[Annotated[Statistic, Tag("statistic")] | Annotated[int, Tag("counter")], Discriminator(_reading_tag)]
ReadingName = Annotated[str, StringConstraints(pattern=f"^(?:{READING_NAME})$")]


def _counters_are_counts(block: dict[str, Any], record: str) -> dict[str, Any]:
    # typed_json's ``key_types``: a key named like a self-check counter must hold an integer >= 0
    pats = [re.compile(rx) for rx in self_checks.counter_patterns(record)]
    for k, v in block.items():
        if any(p.fullmatch(k) for p in pats) and not (isinstance(v, int) and v >= 0):
            raise ValueError(f"{k}: a self-check counter must be an integer >= 0, got {v!r}")
    return block


class OutputProjectionNorm(BaseModel):
    model_config = STRICT
    opnorm_upper: str
    opnorm_upper_decimal: str
    frobenius_upper_decimal: str
    method: str
    shape: list[int]


class ChannelProfile(BaseModel):
    model_config = STRICT
    n: int = Field(ge=0)
    mean_log_a: list[float]
    mean_a: list[float]
    near_one_share: list[float]


class BoxRow(BaseModel):
    model_config = STRICT
    c_max: float
    bound: float
    intervals: int = Field(ge=1)
    heavy: list[float]
    buckets: list[list[float]]


class BoxRows(BaseModel):
    model_config = STRICT
    rows_seen: int = Field(ge=0)
    dropped_c_max: float
    rows: list[BoxRow]


class LayerRecord(BaseModel):
    model_config = STRICT
    layer: int = Field(ge=0)
    memory_class: str
    write: dict[ReadingName, Reading]
    read: dict[ReadingName, Reading]
    host_write_calls: int = Field(ge=0)
    host_read_calls: int = Field(ge=0)
    # typed_json's ``optional``: the key may be absent, but a present key is never null. pydantic has
    # no such field kind: the type must admit None (for the default) and a validator refuses null.
    channels: ChannelProfile | None = None
    o_proj: OutputProjectionNorm | None = None
    box_rows: dict[Annotated[str, StringConstraints(pattern="^(?:boxsup|qa_boxsup)$")], BoxRows] | None = None

    @field_validator("channels", "o_proj", "box_rows", mode="before")
    @classmethod
    def _present_is_not_null(cls, v: Any) -> Any:
        if v is None:
            raise ValueError("an optional field that is present must hold a value, not null")
        return v

    @field_validator("write", mode="after")
    @classmethod
    def _write_counts(cls, v: dict[str, Any]) -> dict[str, Any]:
        return _counters_are_counts(v, "write")

    @field_validator("read", mode="after")
    @classmethod
    def _read_counts(cls, v: dict[str, Any]) -> dict[str, Any]:
        return _counters_are_counts(v, "read")

    @model_serializer(mode="wrap")
    def _absent_optionals(self, handler: Any) -> dict[str, Any]:
        out = handler(self)
        return {k: v for k, v in out.items() if not (k in ("channels", "o_proj", "box_rows") and v is None)}


LAYERS = TypeAdapter(list[LayerRecord])


def bench(fn: Any, repeat: int) -> float:
    best = float("inf")
    for _ in range(repeat):
        t = time.perf_counter()
        fn()
        best = min(best, time.perf_counter() - t)
    return best


def probe(name: str, layer: dict[str, Any]) -> None:
    try:
        decode(TjLayer, layer, "layer")
        tj = "accepted"
    except RecordError as e:
        tj = f"refused: {e}"
    try:
        LayerRecord.model_validate(layer)
        pd = "accepted"
    except ValidationError as e:
        err = e.errors()[0]
        pd = f"refused: {'.'.join(map(str, err['loc']))}: {err['msg']} ({e.error_count()} error(s))"
    print(f"- {name}\n    typed_json: {tj[:140]}\n    pydantic:   {pd[:140]}")


def main() -> int:
    total_tj = total_pd = total_pdj = 0.0
    n_layers = 0
    for path in sorted((ROOT / "artifacts/coverage").glob("*/run.json")):
        raw = path.read_bytes()
        obj = json.loads(raw)
        layers = obj["layers"]
        raw_layers = json.dumps(layers).encode()
        a = [encode(decode(TjLayer, x, f"layers[{i}]")) for i, x in enumerate(layers)]
        b = [m.model_dump(mode="json") for m in LAYERS.validate_python(layers)]
        assert a == b == layers, f"{path}: the two decoders disagree"
        rep = 20
        t_tj = bench(lambda: [decode(TjLayer, x, f"layers[{i}]") for i, x in enumerate(layers)], rep)
        t_pd = bench(lambda: LAYERS.validate_python(layers), rep)
        t_pdj = bench(lambda: LAYERS.validate_json(raw_layers), rep)
        total_tj, total_pd, total_pdj, n_layers = total_tj + t_tj, total_pd + t_pd, total_pdj + t_pdj, n_layers + len(layers)
        print(f"{path.parent.name:18s} {len(raw) / 1024:6.0f} KiB {len(layers):3d} layers  typed_json {t_tj * 1e3:7.2f} ms"
              f"  pydantic(dict) {t_pd * 1e3:6.2f} ms  pydantic(json bytes) {t_pdj * 1e3:6.2f} ms")
    print(f"{'all':18s} {'':10s} {n_layers:3d} layers  typed_json {total_tj * 1e3:7.2f} ms  pydantic(dict) {total_pd * 1e3:6.2f} ms"
          f"  pydantic(json bytes) {total_pdj * 1e3:6.2f} ms  (best of 20)")

    base = json.loads((ROOT / "artifacts/coverage/smollm2-int8/run.json").read_bytes())["layers"][0]
    stat = next(k for k, v in base["read"].items() if isinstance(v, dict))
    counter = next(k for k, v in base["read"].items() if isinstance(v, int) and "beaten" in k)
    print("\nstrictness probes (first error shown):")
    probe("unknown field", {**base, "extra": 1})
    probe("bool as a count", {**base, "host_read_calls": True})
    probe("float as a count", {**base, "host_read_calls": 3.0})
    probe("string as a number", {**base, "read": {**base["read"], stat: {**base["read"][stat], "sum": "1.5"}}})
    probe("bool as a float", {**base, "read": {**base["read"], stat: {**base["read"][stat], "sum": True}}})
    probe("int as a float (JSON cannot tell)", {**base, "read": {**base["read"], stat: {**base["read"][stat], "sum": 2}}})
    probe("self-check counter as a statistic", {**base, "read": {**base["read"], counter: base["read"][stat]}})
    probe("negative self-check counter", {**base, "read": {**base["read"], counter: -1}})
    probe("reading name off the key regex", {**base, "read": {**base["read"], "9bad": 1}})
    probe("optional field present as null", {**base, "o_proj": None})
    probe("deep path: a statistic's field", {**base, "read": {**base["read"], stat: {**base["read"][stat], "n": -1}}})
    return 0


if __name__ == "__main__":
    sys.exit(main())
