"""Codec plugins: resolve a ``--codec`` spec to a codec, and record which code built it.

A spec is one of (docs/PLUGINS.md):

- ``NAME``: a codec registered in :data:`witprobe.memory.codecs.CODECS` (the built-ins), or else
  an entry point ``NAME`` of the group ``witprobe.codecs`` of an installed distribution;
- ``NAME(k=v, ...)``: that entry point, with keyword parameters;
- ``package.module:Attr`` or ``package.module:Attr(k=v, ...)``: an object found by import path.

Parameters are Python literals (numbers, strings, booleans, ``None``, tuples and lists of them),
keyword only, parsed with :func:`ast.literal_eval` (nothing is evaluated). The object a plugin
names is one of:

- a :class:`~witprobe.memory.codecs.Codec` subclass: built as ``Attr(**params)``, with
  ``bands=`` the run's band count when the class has a ``bands`` field not given;
- an :class:`~witprobe.memory.codecs.EvictionPolicy` subclass: ``EvictionCodec(Attr(**params))``;
- a :class:`~witprobe.memory.codecs.CodecEntry` or a function: called as ``f(bands, **params)``
  (a ``CodecEntry`` takes no parameters); it must return a codec;
- a codec instance (no parameters);
- a kvpress press class or instance (``kvpress:SnapKVPress(compression_ratio=0.5)``):
  ``EvictionCodec(PressPolicy(press))`` (:mod:`witprobe.memory.press`).

:func:`codec_provenance` says which code built the codec: the spec, where it came from, the
codec's parameters, and the SHA-256 of the source file of every module involved (the named
object's, the codec class's and an eviction policy's class's), with the installed distribution and
its version where there is one. ``certify check`` recomputes those hashes
(:func:`changed_sources`) and names a plugin codec whose code changed since the run.
"""

from __future__ import annotations

import ast
import dataclasses
import hashlib
import importlib
import importlib.metadata
import importlib.util
import inspect
import re
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from witprobe.memory.codecs import CODECS, Codec, CodecEntry, CodecError, EvictionCodec, EvictionPolicy
from witprobe.memory.press import is_press, press_codec, press_of

ENTRY_POINT_GROUP = "witprobe.codecs"
BUILTIN, ENTRY_POINT, IMPORT = "builtin", "entry_point", "import"

_SPEC = re.compile(r"^\s*(?P<target>[A-Za-z_][\w.-]*(?::[A-Za-z_][\w.]*)?)\s*(?:\((?P<args>.*)\))?\s*$", re.S)


@dataclass(frozen=True)
class ModuleSource:
    """One module of a codec's code: its name, the SHA-256 of its source file (``None`` when it has
    no file, e.g. a built-in extension), and the installed distribution that ships it, if any."""

    module: str
    sha256: str | None
    distribution: str | None = None
    version: str | None = None


@dataclass(frozen=True)
class CodecProvenance:
    """Which code built a run's codec. ``origin`` is ``builtin``, ``entry_point`` or ``import``;
    ``object`` is ``module:qualname`` of what the spec named; ``parameters`` the codec's dataclass
    fields as JSON values (an eviction codec's policy nested under ``policy``)."""

    spec: str
    origin: str
    object: str
    codec_class: str
    parameters: dict[str, Any]
    sources: tuple[ModuleSource, ...]

    def to_json(self) -> dict[str, Any]:
        """The ``config.codec_provenance`` value of ``run.json`` (absent fields left out)."""
        return {"spec": self.spec, "origin": self.origin, "object": self.object, "codec_class": self.codec_class,
                "parameters": self.parameters,
                "sources": [{k: v for k, v in dataclasses.asdict(m).items() if v is not None} for m in self.sources]}


def _parse(spec: str) -> tuple[str, dict[str, Any]]:
    """``(target, params)`` of a spec; :class:`CodecError` naming what is wrong."""
    if not isinstance(spec, str) or not spec.strip():
        raise CodecError("the codec spec is empty")
    m = _SPEC.match(spec)
    if m is None:
        raise CodecError(f"codec spec {spec!r} is not NAME, NAME(k=v, ...) or package.module:Attr(k=v, ...)")
    args = m.group("args")
    params: dict[str, Any] = {}
    if args is not None and args.strip():
        try:
            call = ast.parse(f"f({args})", mode="eval").body
        except SyntaxError as e:
            raise CodecError(f"codec spec {spec!r}: the parameters do not parse ({e.msg})") from None
        if not isinstance(call, ast.Call) or call.args:
            raise CodecError(f"codec spec {spec!r}: parameters are keyword only (k=v, ...)")
        for kw in call.keywords:
            if kw.arg is None:
                raise CodecError(f"codec spec {spec!r}: ** is not a parameter")
            try:
                params[kw.arg] = ast.literal_eval(kw.value)
            except ValueError:
                raise CodecError(f"codec spec {spec!r}: parameter {kw.arg} is not a literal "
                                 "(numbers, strings, booleans, None, tuples, lists)") from None
    return m.group("target"), params


def entry_points() -> dict[str, importlib.metadata.EntryPoint]:
    """The installed ``witprobe.codecs`` entry points by name."""
    return {ep.name: ep for ep in importlib.metadata.entry_points(group=ENTRY_POINT_GROUP)}


def _load(target: str, spec: str) -> tuple[str, Any]:
    """``(origin, object)`` of a spec's target: a built-in name, an entry point or an import path."""
    if ":" in target:
        module_name, _, attr = target.partition(":")
        try:
            obj: Any = importlib.import_module(module_name)
        except Exception as e:  # a module that does not import is the user's input: name it, no traceback
            raise CodecError(f"codec spec {spec!r}: cannot import {module_name} ({type(e).__name__}: {e})") from None
        for part in attr.split("."):
            if not hasattr(obj, part):
                raise CodecError(f"codec spec {spec!r}: {module_name} has no attribute {attr}")
            obj = getattr(obj, part)
        return IMPORT, obj
    if target in CODECS:
        return BUILTIN, CODECS[target]
    eps = entry_points()
    if target in eps:
        try:
            return ENTRY_POINT, eps[target].load()
        except Exception as e:  # a broken plugin is the user's input: name it, no traceback
            raise CodecError(f"codec {target!r}: its entry point {eps[target].value} does not load "
                             f"({type(e).__name__}: {e})") from None
    plugins = f"; installed plugins: {', '.join(sorted(eps))}" if eps else ""
    raise CodecError(f"unknown codec {target!r}; built-in: {', '.join(sorted(CODECS))}{plugins} "
                     "(or package.module:Attr; docs/PLUGINS.md)")


def _build(obj: Any, params: dict[str, Any], bands: int, spec: str, label: str) -> Codec:
    try:
        if isinstance(obj, type) and issubclass(obj, Codec):
            names = {f.name for f in dataclasses.fields(obj)} if dataclasses.is_dataclass(obj) else set()
            kwargs = {"bands": bands, **params} if "bands" in names else dict(params)
            codec = obj(**kwargs)
        elif isinstance(obj, type) and issubclass(obj, EvictionPolicy):
            codec = EvictionCodec(policy=obj(**params), label=label)
        elif is_press(obj):
            if params and not isinstance(obj, type):
                raise CodecError(f"codec spec {spec!r}: names a press instance, which takes no parameters")
            codec = press_codec(obj(**params) if isinstance(obj, type) else obj, label)
        elif isinstance(obj, Codec):
            if params:
                raise CodecError(f"codec spec {spec!r}: names a codec instance, which takes no parameters")
            codec = obj
        elif isinstance(obj, CodecEntry):
            if params:
                raise CodecError(f"codec spec {spec!r}: a registered codec takes no parameters")
            codec = obj(bands)
        elif callable(obj):
            codec = obj(bands, **params)
        else:
            raise CodecError(f"codec spec {spec!r} names a {type(obj).__name__}, not a codec, an eviction "
                             "policy, a kvpress press or a function returning a codec")
    except CodecError:
        raise
    except Exception as e:  # the plugin's own constructor refused its parameters
        raise CodecError(f"codec spec {spec!r}: building it failed ({type(e).__name__}: {e})") from None
    if not isinstance(codec, Codec):
        raise CodecError(f"codec spec {spec!r} built a {type(codec).__name__}, not a witprobe Codec")
    try:
        name = codec.name
    except NotImplementedError:
        name = None
    if not isinstance(name, str) or not name:
        raise CodecError(f"codec spec {spec!r}: {type(codec).__name__} defines no name (a property returning a string)")
    return codec


def resolve_codec(spec: str, bands: int) -> tuple[Codec, CodecProvenance]:
    """The codec a spec names, built with ``bands`` where it takes a band count, and its provenance.

    Raises :class:`CodecError` naming what is wrong (unknown name, import failure, parameters).
    """
    target, params = _parse(spec)
    origin, obj = _load(target, spec)
    label = target.rpartition(":")[2].lower() if origin == IMPORT else target
    codec = _build(obj, params, bands, spec, label)
    return codec, codec_provenance(spec, origin, obj, codec)


def provenance_of(spec: str, codec: Codec) -> CodecProvenance:
    """The provenance of ``codec``, already built from ``spec`` (the spec's object is looked up
    again, the codec is not built again)."""
    target, _ = _parse(spec)
    origin, obj = _load(target, spec)
    return codec_provenance(spec, origin, obj, codec)


def make_codec_spec(spec: str, bands: int) -> Codec:
    """:func:`resolve_codec` without the provenance."""
    return resolve_codec(spec, bands)[0]


def _json_value(v: Any) -> Any:
    if dataclasses.is_dataclass(v) and not isinstance(v, type):
        return {"class": f"{type(v).__module__}:{type(v).__qualname__}",
                **{f.name: _json_value(getattr(v, f.name)) for f in dataclasses.fields(v)}}
    if isinstance(v, (list, tuple)):
        return [_json_value(x) for x in v]
    if isinstance(v, dict):
        return {str(k): _json_value(x) for k, x in v.items()}
    if v is None or isinstance(v, (bool, int, str)):
        return v
    if isinstance(v, float):
        return v if v == v and v not in (float("inf"), float("-inf")) else repr(v)
    return repr(v)


def module_source(module: str) -> ModuleSource:
    """The SHA-256 of ``module``'s source file and its distribution (the module is imported: it is
    the code that ran, or the code that would run now)."""
    spec = importlib.util.find_spec(module)
    origin = getattr(spec, "origin", None) if spec is not None else None
    sha = None
    if origin and origin not in ("built-in", "frozen") and Path(origin).is_file():
        sha = hashlib.sha256(Path(origin).read_bytes()).hexdigest()
    top = module.split(".")[0]
    dists = importlib.metadata.packages_distributions().get(top) or []
    dist = dists[0] if dists else None
    version = None
    if dist is not None:
        try:
            version = importlib.metadata.version(dist)
        except importlib.metadata.PackageNotFoundError:
            dist = None
    return ModuleSource(module, sha, dist, version)


def _modules(obj: Any, codec: Codec) -> list[str]:
    mods = [getattr(inspect.getmodule(obj), "__name__", None), type(codec).__module__]
    if isinstance(codec, EvictionCodec):
        mods.append(type(codec.policy).__module__)
    press = press_of(codec)
    if press is not None:  # the press's class and the kvpress classes it inherits its rule from
        mods.extend(c.__module__ for c in type(press).__mro__ if c.__module__.startswith("kvpress"))
    out: list[str] = []
    for m in mods:
        if m and m not in out:
            out.append(m)
    return out


def codec_provenance(spec: str, origin: str, obj: Any, codec: Codec) -> CodecProvenance:
    """The provenance of ``codec``, built from ``obj`` named by ``spec`` (see the module doc)."""
    if isinstance(obj, CodecEntry):
        named: Any = type(codec)  # a registered codec: its class
    elif isinstance(obj, type) or callable(obj):
        named = obj  # a class or a factory function
    else:
        named = type(obj)  # a codec instance
    params = _json_value(codec)
    params.pop("class", None)
    return CodecProvenance(
        spec=spec, origin=origin,
        object=f"{getattr(named, '__module__', '?')}:{getattr(named, '__qualname__', type(named).__name__)}",
        codec_class=f"{type(codec).__module__}:{type(codec).__qualname__}",
        parameters=params,
        sources=tuple(module_source(m) for m in _modules(obj, codec)))


def changed_sources(sources: list[dict[str, Any]]) -> list[str]:
    """Each recorded module source (``{"module", "sha256", ...}``) whose file here differs from the
    run's, or cannot be found: one line each, naming the module and both hashes."""
    out: list[str] = []
    for rec in sources:
        module = str(rec.get("module"))
        try:
            now = module_source(module).sha256
        except Exception as e:  # a missing or broken package: the code that ran is not here
            out.append(f"module {module} cannot be found here ({type(e).__name__}: {e})")
            continue
        if rec.get("sha256") is None:
            continue
        if now is None:
            out.append(f"module {module} has no source file here (the run's had sha256 {rec.get('sha256')})")
        elif now != rec.get("sha256"):
            out.append(f"module {module} changed since the run (sha256 {str(rec.get('sha256'))[:12]}... at the run, "
                       f"{now[:12]}... here)")
    return out
