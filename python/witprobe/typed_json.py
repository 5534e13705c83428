"""Typed JSON records: strict decoding of JSON into dataclasses, encoding back, and JSON Schema.

One codec for every record witprobe writes as JSON (``run.json``; see
:mod:`witprobe.certify.run_record`). A record type is a frozen dataclass whose fields carry
ordinary type hints. The supported hints are ``int`` (never ``bool``), ``float`` (an ``int`` is
accepted, as JSON does not tell ``1`` from ``1.0``), ``str``, ``bool``, ``X | None``, ``list[X]``,
``dict[str, X]``, a nested record type and a union of those (tried in the order written).

Field metadata (:func:`field_doc`):

- ``doc``: the field's meaning, copied into the schema's ``description``;
- ``optional``: the key may be absent; absent decodes to ``None`` and ``None`` encodes to no key
  (a key that is present must hold a value of the declared type, never ``null``);
- ``keys``: for ``dict[str, X]``, a regular expression every key must match;
- ``by``: ``(sibling, table)``: the field's record type is ``table()[value of the sibling field]``
  (a discriminated union: a claim's ``extra`` has the type of its ``kind``); in the schema an
  ``allOf`` of ``if``/``then`` per value;
- ``key_types``: for ``dict[str, X]``, a function returning ``{regex: (type, description)}``: a key
  that matches a regex must hold that narrower type instead (a self-check counter must be an
  integer ``>= 0``); in the schema these are ``patternProperties``.

Decoding is strict and fails closed: a missing key, an unknown key, a value of the wrong type or a
negative count raises :class:`RecordError` naming the JSON path (``run.json layers[3].read.rows``).
``encode(decode(cls, x)) == x`` for every valid ``x``: the types lose nothing.
"""

from __future__ import annotations

import dataclasses
import functools
import re
import types
import typing
from typing import Any, Callable

JSON_SCHEMA_DIALECT = "https://json-schema.org/draft/2020-12/schema"


class RecordError(ValueError):
    """A JSON value does not have its record type; the message starts with the JSON path."""


def field_doc(doc: str, *, optional: bool = False, keys: str | None = None,
              key_types: Callable[[], dict[str, tuple[Any, str]]] | None = None,
              minimum: int | None = None, by: tuple[str, Callable[[], dict[str, type]]] | None = None
              ) -> dict[str, Any]:
    """Metadata for :func:`dataclasses.field` (see the module docstring)."""
    return {"doc": doc, "optional": optional, "keys": keys, "key_types": key_types, "minimum": minimum, "by": by}


@functools.cache
def _hints(cls: type) -> dict[str, Any]:
    # cached: resolving the (string) annotations costs more than decoding the record itself
    return typing.get_type_hints(cls)


def _is_union(tp: Any) -> bool:
    return typing.get_origin(tp) in (typing.Union, types.UnionType)


def _name(tp: Any) -> str:
    if tp is type(None):
        return "null"
    if dataclasses.is_dataclass(tp):
        return f"a {tp.__name__} object"
    origin = typing.get_origin(tp)
    if origin is list:
        return "a list"
    if origin is dict:
        return "an object"
    if _is_union(tp):
        return " or ".join(_name(a) for a in typing.get_args(tp))
    return {int: "an integer", float: "a number", str: "a string", bool: "a boolean"}.get(tp, str(tp))


# the JSON values each scalar type accepts (``bool`` is never a number; an ``int`` is a ``float``)
_SCALARS: dict[Any, Callable[[Any], bool]] = {
    type(None): lambda v: v is None,
    bool: lambda v: isinstance(v, bool),
    int: lambda v: isinstance(v, int) and not isinstance(v, bool),
    float: lambda v: isinstance(v, (int, float)) and not isinstance(v, bool),
    str: lambda v: isinstance(v, str),
}


def decode(tp: Any, obj: Any, path: str, meta: dict[str, Any] | None = None) -> Any:
    """``obj`` (parsed JSON) as a value of type ``tp``; :class:`RecordError` at ``path`` if it is not one."""
    meta = meta or {}
    if tp is Any:
        return obj
    if _is_union(tp):
        args = typing.get_args(tp)
        for alt in args:
            try:
                return decode(alt, obj, path, meta)
            except RecordError:
                if obj is not None and (type(None) in args and len(args) == 2
                                        or isinstance(obj, dict) and dataclasses.is_dataclass(alt)):
                    raise  # ``X | None``, or an object for the record alternative: its error is the useful one
        raise RecordError(f"{path}: expected {_name(tp)}, got {_shown(obj)}")
    if tp in _SCALARS:
        accepts = _SCALARS[tp]
        if not accepts(obj):
            raise RecordError(f"{path}: expected {_name(tp)}, got {_shown(obj)}")
        if tp is int and meta.get("minimum") is not None and obj < meta["minimum"]:
            raise RecordError(f"{path}: expected an integer >= {meta['minimum']}, got {obj}")
        return obj
    origin = typing.get_origin(tp)
    if origin is list:
        if not isinstance(obj, list):
            raise RecordError(f"{path}: expected a list, got {_shown(obj)}")
        (item,) = typing.get_args(tp)
        return [decode(item, x, f"{path}[{i}]") for i, x in enumerate(obj)]
    if origin is dict:
        if not isinstance(obj, dict):
            raise RecordError(f"{path}: expected an object, got {_shown(obj)}")
        _, value_tp = typing.get_args(tp)
        narrow = meta["key_types"]() if meta.get("key_types") else {}
        pattern = meta.get("keys")
        out = {}
        for k, v in obj.items():
            if pattern and not re.fullmatch(pattern, k):
                raise RecordError(f"{path}: key {k!r} does not match {pattern}")
            special = next((t for rx, (t, _) in narrow.items() if re.fullmatch(rx, k)), None)
            out[k] = decode(special if special is not None else value_tp, v, f"{path}.{k}",
                            {"minimum": 0} if special is not None else {})
        return out
    if dataclasses.is_dataclass(tp):
        return _decode_record(tp, obj, path)
    raise TypeError(f"typed_json: unsupported type {tp!r}")


def _decode_record(cls: type, obj: Any, path: str) -> Any:
    if not isinstance(obj, dict):
        raise RecordError(f"{path}: expected {_name(cls)}, got {_shown(obj)}")
    hints = _hints(cls)
    fields = dataclasses.fields(cls)
    unknown = sorted(set(obj) - {f.name for f in fields})
    if unknown:
        raise RecordError(f"{path}: unknown field{'s' if len(unknown) > 1 else ''} {', '.join(map(repr, unknown))} "
                          f"(not in {cls.__name__})")
    values = {}
    for f in fields:
        meta = dict(f.metadata)
        if f.name not in obj:
            if meta.get("optional"):
                values[f.name] = None
                continue
            raise RecordError(f"{path}.{f.name}: missing (a required field of {cls.__name__})")
        tp = hints[f.name]
        if meta.get("optional") and _is_union(tp):  # present optional keys hold a value, never null
            tp = typing.Union[tuple(a for a in typing.get_args(tp) if a is not type(None))]  # type: ignore[assignment]
        if meta.get("by"):
            sibling, table = meta["by"]
            tag = obj.get(sibling)
            if tag not in table():
                raise RecordError(f"{path}.{sibling}: {tag!r} is not one of {', '.join(sorted(table()))}")
            tp = table()[tag]
        values[f.name] = decode(tp, obj[f.name], f"{path}.{f.name}", meta)
    return cls(**values)


def _shown(obj: Any) -> str:
    text = repr(obj)
    return text if len(text) <= 60 else text[:57] + "..."


def encode(value: Any) -> Any:
    """The JSON value of a record (optional fields holding ``None`` are left out)."""
    if dataclasses.is_dataclass(value) and not isinstance(value, type):
        out = {}
        for f in dataclasses.fields(value):
            v = getattr(value, f.name)
            if v is None and f.metadata.get("optional"):
                continue
            out[f.name] = encode(v)
        return out
    if isinstance(value, dict):
        return {k: encode(v) for k, v in value.items()}
    if isinstance(value, (list, tuple)):
        return [encode(v) for v in value]
    return value


def json_schema(root: type, schema_id: str, title: str, const: dict[str, str] | None = None) -> dict[str, Any]:
    """The JSON Schema (draft 2020-12) of record type ``root``: one ``$defs`` entry per record type,
    closed objects (``additionalProperties: false``), descriptions from the fields' ``doc``.
    ``const`` pins fields of the root to one value (the schema version)."""
    defs: dict[str, Any] = {}
    _record_schema(root, defs)
    top = dict(defs.pop(root.__name__))
    for name, value in (const or {}).items():
        top["properties"][name] = {**top["properties"][name], "const": value}
    return {"$schema": JSON_SCHEMA_DIALECT, "$id": schema_id, "title": title, **top,
            "$defs": dict(sorted(defs.items()))}


def _record_schema(cls: type, defs: dict[str, Any]) -> dict[str, Any]:
    if cls.__name__ not in defs:
        defs[cls.__name__] = {}  # a placeholder: records may refer to themselves
        hints = _hints(cls)
        props, required, cases = {}, [], []
        for f in dataclasses.fields(cls):
            meta = dict(f.metadata)
            tp = hints[f.name]
            if meta.get("optional") and _is_union(tp):
                tp = typing.Union[tuple(a for a in typing.get_args(tp) if a is not type(None))]  # type: ignore[assignment]
            if meta.get("by"):
                sibling, table = meta["by"]
                cases += [{"if": {"properties": {sibling: {"const": tag}}, "required": [sibling]},
                           "then": {"properties": {f.name: _record_schema(sub, defs)}}}
                          for tag, sub in sorted(table().items())]
                sch = {"type": "object"}
            else:
                sch = _type_schema(tp, defs, meta)
            if meta.get("doc"):
                sch = {"description": meta["doc"], **sch}
            props[f.name] = sch
            if not meta.get("optional"):
                required.append(f.name)
        for f in dataclasses.fields(cls):  # a discriminator takes only the values its table names
            if f.metadata.get("by"):
                sibling, table = f.metadata["by"]
                props[sibling] = {**props[sibling], "enum": sorted(table())}
        doc = (cls.__doc__ or "").strip().split("\n\n")[0].replace("\n", " ")
        defs[cls.__name__] = {"type": "object", "description": doc, "properties": props,
                              "required": required, "additionalProperties": False,
                              **({"allOf": cases} if cases else {})}
    return {"$ref": f"#/$defs/{cls.__name__}"}


def _type_schema(tp: Any, defs: dict[str, Any], meta: dict[str, Any] | None = None) -> dict[str, Any]:
    meta = meta or {}
    if tp is Any:
        return {}
    if _is_union(tp):
        return {"anyOf": [_type_schema(a, defs) for a in typing.get_args(tp)]}
    if tp is type(None):
        return {"type": "null"}
    if tp is bool:
        return {"type": "boolean"}
    if tp is int:
        return {"type": "integer", **({"minimum": meta["minimum"]} if meta.get("minimum") is not None else {})}
    if tp is float:
        return {"type": "number"}
    if tp is str:
        return {"type": "string"}
    origin = typing.get_origin(tp)
    if origin is list:
        (item,) = typing.get_args(tp)
        return {"type": "array", "items": _type_schema(item, defs)}
    if origin is dict:
        _, value_tp = typing.get_args(tp)
        out: dict[str, Any] = {"type": "object"}
        if meta.get("key_types"):
            out["patternProperties"] = {f"^(?:{rx})$": {"description": d, **_type_schema(t, defs, {"minimum": 0})}
                                        for rx, (t, d) in sorted(meta["key_types"]().items())}
        if meta.get("keys"):
            out["propertyNames"] = {"pattern": f"^(?:{meta['keys']})$"}
        out["additionalProperties"] = _type_schema(value_tp, defs)
        return out
    if dataclasses.is_dataclass(tp):
        return _record_schema(tp, defs)
    raise TypeError(f"typed_json: unsupported type {tp!r}")
