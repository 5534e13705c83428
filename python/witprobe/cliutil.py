"""What every witprobe command line shares: exit codes, one-line errors, interrupts, broken pipes.

Each ``main`` of ``witprobe.certify``, ``witprobe.ledger`` and ``witprobe.gate`` runs its handler
through :func:`run_handler`, which gives the same behaviour everywhere:

====  ==========================================================================================
2     :class:`UsageError` (bad option, bad combination, unwritable output) or :class:`InputError`
      (a corrupt input file; the one-line message names the file and the field)
130   interrupted (SIGINT / Ctrl-C); whatever was being written is removed by the writer's cleanup
141   the reader of stdout went away (broken pipe): stop quietly, no traceback
4     internal error (a bug: the traceback is printed)
====  ==========================================================================================

Standard library only (``witprobe.gate`` is importable without torch).
"""

from __future__ import annotations

import argparse
import errno
import json
import math
import os
import re
import sys
import tempfile
import traceback
from collections.abc import Callable
from fractions import Fraction
from pathlib import Path
from typing import Any

EXIT_USAGE = 2
EXIT_INTERNAL = 4
EXIT_INTERRUPTED = 130  # 128 + SIGINT
EXIT_BROKEN_PIPE = 141  # 128 + SIGPIPE


class UsageError(Exception):
    """A usage error: the message is printed as ``error: <message>`` and the exit code is 2."""


class InputError(UsageError):
    """A corrupt or unreadable input file: names the file and the field that is wrong."""

    def __init__(self, path: Path | str, field: str, problem: str) -> None:
        self.path, self.field, self.problem = str(path), field, problem
        where = f"{self.path}: field {field}" if field else self.path
        super().__init__(f"{where}: {problem}")


_UNSAFE = re.compile("[\x00-\x08\x0b-\x1f\x7f-\x9f\u061c\u200e\u200f\u202a-\u202e\u2066-\u2069\u2028\u2029]")


def terminal_safe(text: str) -> str:
    """``text`` with every control character but newline and tab escaped (``\\x1b``, ``\\u202e``):
    strings from input files (a model name, a prompt, a field value) reach the terminal as text,
    never as escape sequences that recolour, move the cursor, retitle the window or reorder a line."""
    return _UNSAFE.sub(lambda m: f"\\x{ord(m.group()):02x}" if ord(m.group()) < 0x100
                       else f"\\u{ord(m.group()):04x}", text)


def check_writable(out: Path) -> None:
    """Raise :class:`UsageError` unless a directory can be created beside ``out`` (tried, then removed)."""
    anc = out.parent
    while not anc.exists():
        if anc == anc.parent:
            break
        anc = anc.parent
    if not anc.is_dir():
        raise UsageError(f"cannot write {out}: {anc} is not a directory")
    try:
        Path(tempfile.mkdtemp(prefix=".witprobe-probe-", dir=anc)).rmdir()
    except OSError as e:
        raise UsageError(f"cannot write {out}: {anc} is not writable ({e.strerror or e})") from None


class OneLineParser(argparse.ArgumentParser):
    """An argument parser whose usage errors are one line on stderr and exit 2 (``--help`` shows the usage)."""

    def error(self, message: str) -> None:  # type: ignore[override]
        self.exit(EXIT_USAGE, f"error: {terminal_safe(' '.join(message.split()))} (see {self.prog} --help)\n")


def fraction_arg(text: str) -> Fraction:
    """An argparse type: an exact rational ``p/q`` or decimal (``1/0`` and ``nan`` are usage errors)."""
    try:
        return Fraction(text)
    except (ValueError, ZeroDivisionError):
        raise argparse.ArgumentTypeError(f"{text!r} is not a rational number p/q with q > 0") from None


def version_text(prog: str) -> str:
    from witprobe.version import __version__

    return f"{prog} (witprobe {__version__})"


def add_version(parser: argparse.ArgumentParser) -> None:
    """``--version``: print ``prog (witprobe X.Y.Z)`` and exit 0."""
    parser.add_argument("--version", action="version", version=version_text(parser.prog))


MAX_INPUT_BYTES = 512 * 2**20
"""The largest input file any reader accepts. A default run's run.json is about 8 MB; a 1,611-token
prompt with ``--query-aligned 48`` wrote 81 MB (its shipped box rows), so the cap sits well above
that; ``certify run`` refuses to write a record over it (it never writes what its readers refuse)."""
MAX_JSON_DEPTH = 64
"""The deepest JSON nesting any reader accepts (witprobe's records nest about 8 deep)."""
MAX_INT_DIGITS = 200
"""The most digits of a JSON integer (witprobe's largest, a 2^-48 unit count, has about 30)."""
MAX_FLOAT = 1e300
"""The largest magnitude of a JSON number with a fraction or exponent: 1e308 overflows the first
product it enters. witprobe's readings are norms, shares and bounds; a vacuous plain bound of an
int2 run reaches 3.3e128, so the limit sits far above that, and ``certify run`` checks its own
records against it before writing them (it never writes what its readers refuse)."""


def read_bytes_capped(path: Path | str, limit: int = MAX_INPUT_BYTES) -> bytes:
    """The bytes of ``path``, at most ``limit`` of them read (``/dev/zero`` is refused at once):
    :class:`InputError` naming the file when it is missing, unreadable or larger."""
    try:
        with open(path, "rb") as f:
            data = f.read(limit + 1)
    except FileNotFoundError:
        raise InputError(path, "", "no such file") from None
    except IsADirectoryError:
        raise InputError(path, "", "is a directory, not a file") from None
    except OSError as e:
        raise InputError(path, "", f"cannot be read ({e.strerror or type(e).__name__})") from None
    if len(data) > limit:
        raise InputError(path, "", f"is larger than {limit} bytes (the limit for an input file)")
    return data


def read_text_capped(path: Path | str, limit: int = MAX_INPUT_BYTES) -> str:
    """:func:`read_bytes_capped` decoded as UTF-8 (:class:`InputError` at the first bad byte)."""
    data = read_bytes_capped(path, limit)
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as e:
        raise InputError(path, "", f"is not UTF-8 text (byte {e.start})") from None


class _LongInt(str):
    """A JSON integer literal longer than :data:`MAX_INT_DIGITS` (refused by :func:`check_json_value`)."""


def _parse_int(text: str) -> int | _LongInt:
    return int(text) if len(text.lstrip("-")) <= MAX_INT_DIGITS else _LongInt(text)


def loads_bounded(text: str | bytes, path: Path | str, field: str = "", allow_nonfinite: bool = False) -> Any:
    """Parse JSON ``text`` (from ``path``, at ``field`` inside it if it is embedded) within the
    readers' limits: nesting depth, integer digits, and no NaN or Infinity anywhere (witprobe's
    records never hold them: where a count or a bound is expected they would pass every
    comparison). :class:`InputError` naming the file and the JSON path otherwise.

    ``allow_nonfinite``: keep NaN and Infinity as floats (probe snapshots record them on purpose,
    for the gate's ``non_finite`` check, which is then the reader's duty)."""
    try:
        data = json.loads(text, parse_int=_parse_int, parse_constant=float)
    except RecursionError:
        raise InputError(path, field, f"nested deeper than {MAX_JSON_DEPTH} levels") from None
    except UnicodeDecodeError as e:
        raise InputError(path, field, f"is not UTF-8 text (byte {e.start})") from None
    except json.JSONDecodeError as e:
        raise InputError(path, field, f"not valid JSON (line {e.lineno}, column {e.colno}: {e.msg})") from None
    except ValueError as e:
        raise InputError(path, field, f"not valid JSON ({e})") from None
    check_json_value(data, path, field, allow_nonfinite)
    return data


def check_json_value(data: Any, path: Path | str, field: str = "", allow_nonfinite: bool = False) -> None:
    """Walk ``data`` (iteratively: no recursion to exhaust) for the limits of :func:`loads_bounded`."""
    stack = [(data, field, 0)]
    while stack:
        v, where, depth = stack.pop()
        if depth > MAX_JSON_DEPTH:
            raise InputError(path, where if len(where) <= 60 else where[:57] + "...",
                             f"nested deeper than {MAX_JSON_DEPTH} levels")
        if isinstance(v, _LongInt):
            raise InputError(path, where, f"an integer of {len(v.lstrip('-'))} digits (at most {MAX_INT_DIGITS})")
        if isinstance(v, float) and not allow_nonfinite and not math.isfinite(v):
            raise InputError(path, where, f"{v} is not a finite number")
        if isinstance(v, float) and math.isfinite(v) and abs(v) > MAX_FLOAT:
            raise InputError(path, where, f"{v:g} is out of range (a number's magnitude is at most {MAX_FLOAT:g})")
        if isinstance(v, dict):
            stack += [(x, f"{where}.{k}" if where else str(k), depth + 1) for k, x in v.items()]
        elif isinstance(v, list):
            stack += [(x, f"{where}[{i}]", depth + 1) for i, x in enumerate(v)]


def read_json(path: Path | str, limit: int = MAX_INPUT_BYTES, allow_nonfinite: bool = False) -> Any:
    """The JSON value in ``path``, read within the readers' limits (:func:`loads_bounded`)."""
    return loads_bounded(read_text_capped(path, limit), path, allow_nonfinite=allow_nonfinite)


def read_json_object(path: Path, schema_prefix: str | None = None, allow_nonfinite: bool = False) -> dict[str, Any]:
    """Read a JSON object from ``path`` (:func:`read_json`); :class:`InputError` naming the file (and field) otherwise.

    With ``schema_prefix`` the object's ``schema`` field must be a string starting with it.
    """
    data = read_json(path, allow_nonfinite=allow_nonfinite)
    if not isinstance(data, dict):
        raise InputError(path, "", f"expected a JSON object, found {type(data).__name__}")
    if schema_prefix is not None:
        schema = data.get("schema")
        if not isinstance(schema, str) or not schema.startswith(schema_prefix):
            raise InputError(path, "schema", f"{_short(schema)} is not a {schema_prefix}* record")
    return data


def require(obj: Any, field: str, kind: type | tuple[type, ...], path: Path | str, where: str = "") -> Any:
    """``obj[field]`` checked to be of ``kind`` (``bool`` is not accepted as a number)."""
    name = f"{where}.{field}" if where else field
    if not isinstance(obj, dict) or field not in obj:
        raise InputError(path, name, "missing")
    v = obj[field]
    kinds = kind if isinstance(kind, tuple) else (kind,)
    number_wanted = any(k in (int, float) for k in kinds) and bool not in kinds
    if not isinstance(v, kinds) or (number_wanted and isinstance(v, bool)):
        names = "/".join("null" if k is type(None) else k.__name__ for k in kinds)
        raise InputError(path, name, f"expected {names}, found {type(v).__name__} {_short(v)}")
    return v


def _short(v: Any) -> str:
    s = json.dumps(v, default=str)
    return s if len(s) <= 40 else s[:37] + "..."


def wants_quiet(argv: list[str] | None) -> bool:
    return "--quiet" in (sys.argv[1:] if argv is None else argv)


def quiet_third_party() -> None:
    """Silence third-party progress bars and info logs (``--quiet``): HF Hub, transformers, tqdm.

    Call it before those libraries are imported (tqdm reads ``TQDM_DISABLE`` at import) and again
    after (libraries already imported are switched off through their own APIs); it imports nothing.
    """
    os.environ["HF_HUB_DISABLE_PROGRESS_BARS"] = "1"
    os.environ["TQDM_DISABLE"] = "1"  # tqdm >= 4.66 reads it for every bar it creates
    os.environ["TRANSFORMERS_VERBOSITY"] = "error"
    os.environ["TRANSFORMERS_NO_ADVISORY_WARNINGS"] = "1"
    if "transformers" in sys.modules:
        from transformers.utils import logging as tf_logging

        tf_logging.disable_progress_bar()
        tf_logging.set_verbosity_error()
    if "huggingface_hub" in sys.modules:
        from huggingface_hub.utils import disable_progress_bars

        disable_progress_bars()


def _stdout_gone() -> None:
    """After a broken pipe: point stdout at /dev/null so the interpreter's final flush is silent."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError):
        pass


_UNUSABLE_PATH = (errno.ENAMETOOLONG, errno.ELOOP, errno.ENOTDIR)
"""Errors of a path given on the command line, not of witprobe: one line, exit 2."""


def _internal_error() -> int:
    traceback.print_exc()
    print("internal error (exit 4)", file=sys.stderr)
    return EXIT_INTERNAL


def run_handler(handler: Callable[[argparse.Namespace], int], args: argparse.Namespace, prog: str) -> int:
    """Run one command's handler with the shared exit-code contract (module docstring)."""
    try:
        code = handler(args)
        sys.stdout.flush()  # a broken pipe surfaces here, inside the handler's contract
        return code
    except UsageError as e:
        print("error: " + terminal_safe(" ".join(str(e).split())), file=sys.stderr)  # always one line
        return EXIT_USAGE
    except KeyboardInterrupt:
        print(f"{prog}: interrupted", file=sys.stderr)
        return EXIT_INTERRUPTED
    except BrokenPipeError:  # before OSError, its base class
        _stdout_gone()
        return EXIT_BROKEN_PIPE
    except OSError as e:
        if e.errno not in _UNUSABLE_PATH:
            return _internal_error()
        # a path the system cannot resolve (too long, a symlink loop, a component that is not a directory)
        print("error: " + terminal_safe(f"{e.filename}: {e.strerror}"), file=sys.stderr)
        return EXIT_USAGE
    except Exception:  # noqa: BLE001 - the exit code contract says 4
        return _internal_error()
    finally:
        safe_output = sys.modules.get("witprobe.safe_output")
        if safe_output is not None:
            safe_output.release_all()  # output locks a command held until its end


class _Trail:
    """The JSON path of the field read last (shared by one tracked document)."""

    def __init__(self) -> None:
        self.last = ""


class _TrackedDict(dict):
    def __init__(self, data: dict, where: str, trail: _Trail) -> None:
        super().__init__(data)
        self._where, self._trail = where, trail

    def _path(self, key: Any) -> str:
        return f"{self._where}.{key}" if self._where else str(key)

    def __getitem__(self, key: Any) -> Any:
        self._trail.last = self._path(key)
        if not dict.__contains__(self, key):
            raise _Missing(self._trail.last)
        return _track(dict.__getitem__(self, key), self._trail.last, self._trail)

    def get(self, key: Any, default: Any = None) -> Any:
        self._trail.last = self._path(key)
        return self[key] if dict.__contains__(self, key) else default

    def items(self):  # noqa: ANN201 - dict protocol
        return [(k, self[k]) for k in dict.keys(self)]

    def values(self):  # noqa: ANN201 - dict protocol
        return [self[k] for k in dict.keys(self)]


class _TrackedList(list):
    def __init__(self, data: list, where: str, trail: _Trail) -> None:
        super().__init__(data)
        self._where, self._trail = where, trail

    def __getitem__(self, i: Any) -> Any:
        if isinstance(i, slice):
            return [self[j] for j in range(*i.indices(len(self)))]
        self._trail.last = f"{self._where}[{i}]"
        return _track(list.__getitem__(self, i), self._trail.last, self._trail)

    def __iter__(self):  # noqa: ANN204 - list protocol
        return (self[i] for i in range(len(self)))


class _Missing(KeyError):
    pass


def _track(v: Any, where: str, trail: _Trail) -> Any:
    if isinstance(v, dict):
        return _TrackedDict(v, where, trail)
    if isinstance(v, list):
        return _TrackedList(v, where, trail)
    return v


def read_with(path: Path, data: dict[str, Any], reader: Callable[[dict[str, Any]], Any]) -> Any:
    """Run ``reader`` on ``data`` read from ``path``; a missing field or a value of the wrong type
    becomes an :class:`InputError` naming the JSON path of the field read last."""
    trail = _Trail()
    try:
        return reader(_track(data, "", trail))
    except _Missing as e:
        raise InputError(path, e.args[0], "missing") from None
    except (KeyError, IndexError, TypeError, ValueError, AttributeError, ZeroDivisionError) as e:
        raise InputError(path, trail.last or "(root)", f"unexpected value ({type(e).__name__}: {e})") from None
