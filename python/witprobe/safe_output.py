"""How every witprobe command writes files: never lose a file witprobe did not write.

Every command that writes goes through this module. Its rules:

1. **A manifest of what witprobe wrote.** Each output directory carries :data:`MANIFEST`
   (``.witprobe-output.json``): the tool that made the directory and every file witprobe wrote
   there, with its SHA-256.
2. **``--force`` removes only those files, and only while their hashes still match.** Anything
   else in the directory (a file the manifest does not list, a listed file whose bytes changed, a
   symbolic link, a special file, a manifest witprobe did not write) makes the command refuse
   with exit 2 and one line naming it, before anything is removed. Nothing is followed through a
   symbolic link: the tree is walked with directory descriptors opened ``O_NOFOLLOW`` and
   entries are examined with ``lstat``.
3. **No predictable temporary names.** A directory is built in a fresh private folder
   (:func:`tempfile.mkdtemp` beside the destination) and renamed into place when complete; a
   file is written to a :func:`tempfile.mkstemp` file (``O_EXCL``, a random name) beside it
   and renamed into place. On any error or interrupt the temporary is removed: nothing
   half-written is left behind. A writer killed outright (``kill -9``) cannot remove its
   folder; the folder carries :data:`PARTIAL_MARK` while it is being built, and the next writer
   of the same destination, holding its lock (so no other writer of it is alive), removes every
   such marked folder of that destination before it starts (:func:`sweep_partials`). A folder
   without the mark, even one named like witprobe's, is never touched.
4. **One writer at a time.** The writer holds an exclusive :func:`fcntl.flock` on a lock file
   beside the destination (``.NAME.witprobe-lock``, removed when released); a second writer on
   the same destination fails at once with exit 2.
5. **No silent overwrite.** A file that exists is replaced only with ``--force`` (a standalone
   output such as ``--out FILE``, and only while its record ``.FILE.witprobe`` names its current
   sha256: witprobe wrote it and nobody changed it), or when the directory's manifest says witprobe wrote it and
   its bytes are unchanged (a derived page such as ``gate.json`` or ``report.html`` rewritten
   in its own output directory).

Refusals are :class:`OutputRefused`, a :class:`~witprobe.cliutil.UsageError`: every command
line prints them as one ``error:`` line and exits 2.

SQLite's own side files (``-wal``, ``-shm``, ``-journal``) beside a journal the manifest lists
belong to that journal: a reader of the journal may create or remove them.

Standard library only.
"""

from __future__ import annotations

import contextlib
import errno
import fcntl
import hashlib
import json
import os
import re
import shutil
import stat
import tempfile
from collections.abc import Iterator
from dataclasses import dataclass, field
from pathlib import Path

from witprobe.cliutil import UsageError

MANIFEST = ".witprobe-output.json"
"""The manifest file in every output directory."""
SCHEMA = "witprobe-output/1"
LOCK_SUFFIX = ".witprobe-lock"
PARTIAL_MARK = ".witprobe-partial"
"""The file inside a directory still being built (removed before the directory is renamed into place)."""
_PARTIAL_TEXT = b"witprobe partial output\n"
_LOCK_MARK = b"witprobe lock\n"
_SQLITE_SIDES = ("-wal", "-shm", "-journal")
_MAX_MANIFEST_BYTES = 8 << 20
_SHA_RE = re.compile(r"[0-9a-f]{64}")
_NOFOLLOW = getattr(os, "O_NOFOLLOW", 0)
_DIR_FLAGS = os.O_RDONLY | getattr(os, "O_DIRECTORY", 0) | _NOFOLLOW | getattr(os, "O_CLOEXEC", 0)
_READ_FLAGS = os.O_RDONLY | _NOFOLLOW | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_CLOEXEC", 0)


class OutputRefused(UsageError):
    """An output may not be written or replaced (exit 2); nothing was removed or overwritten."""


def _abs(path: Path | str) -> Path:
    """``path`` made absolute without resolving symbolic links (the last component is never followed)."""
    p = Path(os.path.abspath(os.fspath(path)))
    if not p.name:
        raise OutputRefused(f"cannot write to {p}: choose a directory below it")
    return p


def _why(e: OSError) -> str:
    return e.strerror or str(e)


# --------------------------------------------------------------------------- locking


@dataclass
class _Held:
    fd: int
    ino: tuple[int, int]
    depth: int = 0
    sticky: bool = False


_HELD: dict[str, _Held] = {}


def lock_path(out: Path | str) -> Path:
    out = _abs(out)
    return out.parent / f".{out.name}{LOCK_SUFFIX}"


def _acquire(out: Path) -> str:
    lp = lock_path(out)
    key = str(lp)
    if key in _HELD:
        return key
    cloexec = getattr(os, "O_CLOEXEC", 0)
    created = False
    try:
        try:
            fd = os.open(lp, os.O_RDWR | os.O_CREAT | os.O_EXCL | _NOFOLLOW | cloexec, 0o600)
            created = True
        except FileExistsError:
            fd = os.open(lp, os.O_RDWR | _NOFOLLOW | cloexec)
    except OSError as e:
        if e.errno == errno.ELOOP:
            raise OutputRefused(f"{lp} is a symbolic link; witprobe does not lock through links: remove it") from None
        raise OutputRefused(f"cannot write {out}: cannot create the lock file {lp} ({_why(e)})") from None
    try:
        st = os.fstat(fd)
        if created:
            os.write(fd, _LOCK_MARK + f"pid {os.getpid()}\n".encode())
        elif not stat.S_ISREG(st.st_mode) or not os.pread(fd, len(_LOCK_MARK), 0).startswith(_LOCK_MARK):
            raise OutputRefused(f"{lp} exists and is not a witprobe lock file: move it away")  # never touched
        try:
            fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
        except OSError as e:
            if e.errno in (errno.EWOULDBLOCK, errno.EAGAIN, errno.EACCES):
                raise OutputRefused(f"{out} is being written by another witprobe command (lock {lp} is held); "
                                    "wait for it or choose another --out") from None
            raise OutputRefused(f"cannot lock {lp}: {_why(e)}") from None
        try:  # the file we locked must still be the one at the path (a releaser may have unlinked it)
            now = os.lstat(lp)
        except FileNotFoundError:
            now = None
        if now is None or (now.st_dev, now.st_ino) != (st.st_dev, st.st_ino):
            raise OutputRefused(f"{out} is being written by another witprobe command (lock {lp} changed)")
    except BaseException:
        os.close(fd)
        raise
    _HELD[key] = _Held(fd, (st.st_dev, st.st_ino))
    return key


def _release(key: str) -> None:
    h = _HELD.pop(key, None)
    if h is None:
        return
    try:
        now = os.lstat(key)
        if (now.st_dev, now.st_ino) == h.ino:
            os.unlink(key)  # still locked by us: nobody else can be using it
    except OSError:
        pass
    os.close(h.fd)


@contextlib.contextmanager
def locked(out: Path | str) -> Iterator[None]:
    """Hold the writer's lock of ``out`` (reentrant within this process)."""
    key = _acquire(_abs(out))
    _HELD[key].depth += 1
    try:
        yield
    finally:
        h = _HELD.get(key)
        if h is not None:
            h.depth -= 1
            if h.depth <= 0 and not h.sticky:
                _release(key)


def hold(out: Path | str) -> None:
    """Take the writer's lock of ``out`` until :func:`release_all` (the command line's end) or exit;
    a second writer on ``out`` then fails at once (exit 2). Creates ``out``'s parent folders."""
    out = _abs(out)
    _check_parent(out)
    key = _acquire(out)
    _HELD[key].sticky = True


def release_all() -> None:
    """Release every lock this process holds (called when a command line's handler returns)."""
    for key in list(_HELD):
        _release(key)


# --------------------------------------------------------------------------- the manifest


def _sha_fd(fd: int) -> str:
    h = hashlib.sha256()
    while True:
        b = os.read(fd, 1 << 20)
        if not b:
            return h.hexdigest()
        h.update(b)


def sha256_file(path: Path | str) -> str:
    fd = os.open(path, _READ_FLAGS)
    try:
        return _sha_fd(fd)
    finally:
        os.close(fd)


def _valid_rel(rel: str) -> bool:
    parts = rel.split("/")
    return bool(rel) and not rel.startswith("/") and "\\" not in rel and "\0" not in rel and \
        all(p not in ("", ".", "..") for p in parts) and rel != MANIFEST


@dataclass
class Manifest:
    tool: str
    files: dict[str, str] = field(default_factory=dict)

    def to_text(self) -> str:
        return json.dumps({"schema": SCHEMA, "tool": self.tool, "files": dict(sorted(self.files.items()))},
                          indent=1) + "\n"


def _read_manifest_at(dfd: int, where: Path) -> Manifest | None:
    """The manifest in the directory ``dfd`` (``None`` if there is none); :class:`OutputRefused`
    if the file there is not a manifest witprobe wrote (a link, a look-alike, corrupt)."""
    try:
        fd = os.open(MANIFEST, _READ_FLAGS, dir_fd=dfd)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise OutputRefused(f"{where / MANIFEST} cannot be read as a witprobe manifest ({_why(e)})") from None
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode) or st.st_size > _MAX_MANIFEST_BYTES:
            raise OutputRefused(f"{where / MANIFEST} is not a witprobe manifest")
        raw = os.read(fd, _MAX_MANIFEST_BYTES + 1)
    finally:
        os.close(fd)
    bad = OutputRefused(f"{where / MANIFEST} is not a manifest witprobe wrote; remove the directory yourself")
    try:
        data = json.loads(raw.decode("utf-8"))
    except (ValueError, UnicodeDecodeError, RecursionError):
        raise bad from None
    if not isinstance(data, dict) or data.get("schema") != SCHEMA or not isinstance(data.get("tool"), str) \
            or not isinstance(data.get("files"), dict) or set(data) != {"schema", "tool", "files"}:
        raise bad
    files = data["files"]
    for rel, sha in files.items():
        if not _valid_rel(rel) or not isinstance(sha, str) or not _SHA_RE.fullmatch(sha):
            raise bad
    return Manifest(data["tool"], dict(files))


def read_manifest(d: Path | str) -> Manifest | None:
    """The manifest of output directory ``d`` (``None`` when it has none)."""
    d = _abs(d)
    dfd = _open_dir(d)
    try:
        return _read_manifest_at(dfd, d)
    finally:
        os.close(dfd)


def _open_dir(d: Path, dir_fd: int | None = None, name: str | None = None) -> int:
    try:
        return os.open(name if name is not None else d, _DIR_FLAGS, dir_fd=dir_fd)
    except OSError as e:
        if e.errno in (errno.ELOOP, errno.ENOTDIR):
            kind = "a symbolic link" if os.path.islink(d) else "not a directory"
            raise OutputRefused(f"{d} is {kind}; witprobe writes only into real directories") from None
        raise OutputRefused(f"cannot open {d}: {_why(e)}") from None


def _write_manifest_at(d: Path, man: Manifest) -> None:
    _atomic_bytes(d / MANIFEST, man.to_text().encode("utf-8"), replace=True)


# --------------------------------------------------------------------------- verifying a directory


@dataclass
class _Plan:
    """What ``--force`` removes from a verified directory: our files, then our folders, then the manifest."""
    root_fd: int
    fds: dict[str, int]  # relative folder -> descriptor ('' is the root)
    files: list[tuple[str, str, tuple[int, int]]]  # (folder, name, (dev, ino)) verified
    dirs: list[str]  # relative folders, deepest first
    has_manifest: bool

    def close(self) -> None:
        for fd in set(self.fds.values()):
            os.close(fd)

    def remove(self) -> None:
        try:
            self._remove()
        except OSError as e:
            raise OutputRefused(f"cannot remove the files witprobe wrote: {_why(e)}") from None

    def _remove(self) -> None:
        for folder, name, ino in self.files:
            fd = self.fds[folder]
            try:
                st = os.stat(name, dir_fd=fd, follow_symlinks=False)
            except FileNotFoundError:
                continue
            if (st.st_dev, st.st_ino) != ino:
                raise OutputRefused(f"{folder}/{name} changed while witprobe was replacing it; nothing more removed")
            os.unlink(name, dir_fd=fd)
        for rel in self.dirs:
            parent, _, name = rel.rpartition("/")
            try:
                os.rmdir(name, dir_fd=self.fds[parent])
            except OSError as e:
                raise OutputRefused(f"cannot remove the folder {rel}: {_why(e)}") from None
        if self.has_manifest:
            os.unlink(MANIFEST, dir_fd=self.root_fd)


def _shown(items: list[str]) -> str:
    return ", ".join(items[:3]) + (f" (and {len(items) - 3} more)" if len(items) > 3 else "")


def _plan(d: Path, tool: str | None) -> _Plan:
    """Verify that everything in directory ``d`` is a file witprobe wrote (manifest and hashes);
    :class:`OutputRefused` naming what is not. Nothing is removed here."""
    root = _open_dir(d)
    fds = {"": root}
    try:
        man = _read_manifest_at(root, d)
        if man is None:
            with os.scandir(root) as it:
                names = sorted(e.name for e in it)
            raise OutputRefused(f"{d} holds {_shown(names)} and no witprobe manifest ({MANIFEST}): "
                                "witprobe did not write it")
        if tool is not None and man.tool != tool:
            raise OutputRefused(f"{d} was written by {man.tool}, not {tool}")
        listed = man.files
        problems: list[str] = []
        files: list[tuple[str, str, tuple[int, int]]] = []
        dirs: list[str] = []

        def walk(fd: int, prefix: str) -> None:
            with os.scandir(fd) as it:
                entries = sorted(it, key=lambda e: e.name)
            for e in entries:
                rel = prefix + e.name
                if rel == MANIFEST:
                    continue
                st = e.stat(follow_symlinks=False)
                if stat.S_ISLNK(st.st_mode):
                    problems.append(f"{rel} (a symbolic link)")
                elif stat.S_ISDIR(st.st_mode):
                    sub = _open_dir(d / rel, fd, e.name)
                    fds[rel] = sub
                    if not any(f.startswith(rel + "/") for f in listed):
                        problems.append(f"{rel}/ (a folder witprobe did not write)")
                        continue
                    walk(sub, rel + "/")
                    dirs.append(rel)
                elif not stat.S_ISREG(st.st_mode):
                    problems.append(f"{rel} (not a regular file)")
                elif rel in listed:
                    try:
                        ffd = os.open(e.name, _READ_FLAGS, dir_fd=fd)
                    except OSError as err:
                        problems.append(f"{rel} (cannot be read: {_why(err)})")
                        continue
                    try:
                        fst = os.fstat(ffd)
                        same = stat.S_ISREG(fst.st_mode) and _sha_fd(ffd) == listed[rel]
                    finally:
                        os.close(ffd)
                    if same:
                        files.append((prefix.rstrip("/"), e.name, (fst.st_dev, fst.st_ino)))
                    else:
                        problems.append(f"{rel} (changed since witprobe wrote it)")
                elif any(rel == f + s for f in listed for s in _SQLITE_SIDES):
                    files.append((prefix.rstrip("/"), e.name, (st.st_dev, st.st_ino)))
                else:
                    problems.append(f"{rel} (witprobe did not write it)")

        walk(root, "")
        if problems:
            raise OutputRefused(f"{d} holds {_shown(problems)}")
        dirs.sort(key=lambda r: -r.count("/"))
        return _Plan(root, fds, files, dirs, True)
    except BaseException:
        for fd in set(fds.values()):
            os.close(fd)
        raise


def _is_empty_dir(d: Path) -> bool:
    fd = _open_dir(d)
    try:
        with os.scandir(fd) as it:
            return next(iter(it), None) is None
    finally:
        os.close(fd)


def check_replaceable(out: Path | str, force: bool, tool: str | None = None) -> None:
    """Before any work: ``out`` is absent, an empty directory, or (with ``force``) a directory of
    files ``tool`` wrote, unchanged; :class:`OutputRefused` otherwise. Nothing is removed."""
    out = _abs(out)
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        return
    except OSError as e:
        raise OutputRefused(f"cannot write {out}: {_blocked(out, e)}") from None
    if stat.S_ISLNK(st.st_mode):
        raise OutputRefused(f"{out} is a symbolic link; witprobe writes only into real directories")
    if not stat.S_ISDIR(st.st_mode):
        raise OutputRefused(f"{out} exists and is not a directory")
    if _is_empty_dir(out):
        return
    if not force:
        raise OutputRefused(f"{out} is not empty; choose another --out or pass --force to replace it")
    try:
        _plan(out, tool).close()
    except OutputRefused as e:
        raise OutputRefused(f"--force replaces only files witprobe wrote: {e}; nothing was removed") from None


def _blocked(out: Path, e: OSError) -> str:
    """Why ``out`` cannot be reached: the ancestor that is a file, or the system's reason."""
    anc = out.parent
    while not os.path.lexists(anc) and anc != anc.parent:
        anc = anc.parent
    return f"{anc} is not a directory" if os.path.lexists(anc) and not anc.is_dir() else _why(e)


def _check_parent(out: Path) -> None:
    try:
        out.parent.mkdir(parents=True, exist_ok=True)
    except OSError as e:
        raise OutputRefused(f"cannot write {out}: {_blocked(out, e)}") from None
    if not os.access(out.parent, os.W_OK | os.X_OK):
        raise OutputRefused(f"cannot write {out}: {out.parent} is not writable")


def _hash_tree(d: Path) -> dict[str, str]:
    """Every regular file under ``d`` (a folder witprobe just built), with its SHA-256."""
    out: dict[str, str] = {}
    for dirpath, dirnames, filenames in os.walk(d, followlinks=False):
        for name in dirnames + filenames:
            p = Path(dirpath) / name
            rel = p.relative_to(d).as_posix()
            st = os.lstat(p)
            if stat.S_ISLNK(st.st_mode) or not (stat.S_ISREG(st.st_mode) or stat.S_ISDIR(st.st_mode)):
                raise RuntimeError(f"witprobe built {rel} in {d} and it is not a regular file")
            if stat.S_ISREG(st.st_mode) and rel != MANIFEST:
                out[rel] = sha256_file(p)
    return out


def _partial_prefix(out: Path) -> str:
    return f".{out.name}.witprobe-"


def sweep_partials(out: Path | str) -> list[Path]:
    """Remove the private folders of writers of ``out`` that were killed before they finished;
    the caller holds ``out``'s lock. Only directories named ``.NAME.witprobe-*`` beside ``out``
    that hold a regular :data:`PARTIAL_MARK` file with witprobe's text are removed (never through
    a link). Returns what was removed."""
    out = _abs(out)
    prefix, gone = _partial_prefix(out), []
    try:
        names = [n for n in os.listdir(out.parent) if n.startswith(prefix)]
    except OSError:
        return gone
    for name in names:
        d = out.parent / name
        try:
            if not stat.S_ISDIR(os.lstat(d).st_mode):
                continue
            fd = os.open(d / PARTIAL_MARK, _READ_FLAGS)
            try:
                ok = stat.S_ISREG(os.fstat(fd).st_mode) and os.read(fd, 64) == _PARTIAL_TEXT
            finally:
                os.close(fd)
        except OSError:
            continue
        if ok:
            shutil.rmtree(d, ignore_errors=True)
            gone.append(d)
    return gone


@contextlib.contextmanager
def new_output_dir(out: Path | str, tool: str, force: bool = False) -> Iterator[Path]:
    """Build the output directory ``out`` in a fresh private folder and rename it into place.

    Yields the folder to write into. On success its files are recorded in :data:`MANIFEST`; an
    existing ``out`` is replaced only if it is empty, or with ``force`` if it holds nothing but
    files ``tool`` wrote, unchanged (only those are removed); then the folder is renamed to
    ``out``. On any error or interrupt the folder is removed and ``out`` is left as it was.
    """
    out = _abs(out)
    check_replaceable(out, force, tool)  # before creating anything
    _check_parent(out)
    with locked(out):
        check_replaceable(out, force, tool)  # again, under the lock
        sweep_partials(out)  # a killed writer's folder: no writer of out is alive but us
        try:
            tmp = Path(tempfile.mkdtemp(prefix=_partial_prefix(out), dir=out.parent))
        except OSError as e:
            raise OutputRefused(f"cannot write {out}: {_why(e)}") from None
        try:
            fd = os.open(tmp / PARTIAL_MARK, os.O_WRONLY | os.O_CREAT | os.O_EXCL | _NOFOLLOW, 0o600)
            try:
                os.write(fd, _PARTIAL_TEXT)
            finally:
                os.close(fd)
            yield tmp
            os.unlink(tmp / PARTIAL_MARK)
            _write_manifest_at(tmp, Manifest(tool, _hash_tree(tmp)))
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o777 & ~umask)  # mkdtemp creates 0700; the output is ordinary
            _commit_dir(tmp, out, tool, force)
        finally:
            if os.path.lexists(tmp):
                shutil.rmtree(tmp, ignore_errors=True)  # our own private folder


def _commit_dir(tmp: Path, out: Path, tool: str, force: bool) -> None:
    try:
        st = os.lstat(out)
    except FileNotFoundError:
        st = None
    if st is not None:
        if stat.S_ISLNK(st.st_mode) or not stat.S_ISDIR(st.st_mode):
            raise OutputRefused(f"{out} changed while witprobe was writing: it is no longer a directory")
        if not _is_empty_dir(out):
            if not force:
                raise OutputRefused(f"{out} is no longer empty; pass --force to replace it")
            _remove_planned(out, tool)
    try:
        os.rename(tmp, out)  # onto a missing or empty directory (never onto a file: ENOTDIR)
    except OSError as e:
        raise OutputRefused(f"cannot put the new output at {out}: {_why(e)}") from None


def remove_output(out: Path | str, tool: str | None = None) -> None:
    """Remove a verified output directory's files (``--force`` in place); :class:`OutputRefused`
    naming anything witprobe did not write, before anything is removed. ``out`` itself stays."""
    out = _abs(out)
    with locked(out):
        _remove_planned(out, tool)


def _remove_planned(out: Path, tool: str | None) -> None:
    """Verify ``out`` against its manifest, then remove what witprobe wrote there (nothing on refusal)."""
    try:
        plan = _plan(out, tool)
    except OutputRefused as e:
        raise OutputRefused(f"--force replaces only files witprobe wrote: {e}; nothing was removed") from None
    try:
        plan.remove()
    finally:
        plan.close()


# --------------------------------------------------------------------------- single files


def _atomic_bytes(path: Path, data: bytes, replace: bool) -> None:
    """Write ``data`` to a fresh ``mkstemp`` file beside ``path`` and rename it into place;
    with ``replace=False`` an existing ``path`` is never replaced (:class:`FileExistsError`)."""
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(data)
            f.flush()
            os.fsync(f.fileno())
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; the output is ordinary
        if replace:
            os.replace(tmp, path)
        else:
            try:
                os.link(tmp, path)  # fails if path exists: never replaces
            except FileExistsError:
                raise
            except OSError:  # no hard links on this file system: check, then rename
                if os.path.lexists(path):
                    raise FileExistsError(errno.EEXIST, "exists", str(path)) from None
                os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def atomic_path(path: Path | str) -> Iterator[Path]:
    """A fresh temporary path beside ``path`` (``mkstemp``) to write to; renamed onto ``path`` on
    success, removed on any error. For files inside a folder witprobe owns (a private build folder)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    os.close(fd)
    try:
        yield Path(tmp)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


def atomic_write(path: Path | str, data: str | bytes) -> None:
    """Write ``path`` atomically (``mkstemp`` + rename) inside a folder witprobe owns."""
    _atomic_bytes(Path(path), data.encode("utf-8") if isinstance(data, str) else data, replace=True)


def check_new_file(path: Path | str, force: bool = False) -> Path:
    """Before any work: a standalone output file can be written at ``path`` (absent, or with
    ``force`` an existing regular file); :class:`OutputRefused` otherwise."""
    path = _abs(path)
    if not path.parent.is_dir():
        raise OutputRefused(f"cannot write {path}: {path.parent} is not a directory")
    try:
        st = os.lstat(path)
    except FileNotFoundError:
        st = None
    except OSError as e:
        raise OutputRefused(f"cannot write {path}: {_why(e)}") from None
    if st is not None:
        if stat.S_ISLNK(st.st_mode):
            raise OutputRefused(f"{path} is a symbolic link; witprobe does not write through links: remove it")
        if stat.S_ISDIR(st.st_mode):
            raise OutputRefused(f"cannot write {path}: it is a directory; name the file to write")
        if not stat.S_ISREG(st.st_mode):
            raise OutputRefused(f"cannot write {path}: it is not a regular file")
        if not force:
            raise OutputRefused(f"{path} exists; pass --force to replace it")
        if not _standalone_is_ours(path):
            raise OutputRefused(f"{path} exists and witprobe did not write it (or it changed since; no matching "
                                f"{_standalone_record(path).name}): --force replaces only witprobe's own files; "
                                "move it or choose another --out")
    if not os.access(path.parent, os.W_OK | os.X_OK):
        raise OutputRefused(f"cannot write {path}: {path.parent} is not writable")
    return path


_STANDALONE_TEXT = "witprobe standalone output\n"


def _standalone_record(path: Path) -> Path:
    """The record beside a standalone output ``NAME``: ``.NAME.witprobe``, witprobe's text and the
    file's sha256 (what lets ``--force`` tell witprobe's file from a user's)."""
    return path.parent / f".{path.name}.witprobe"


def _standalone_is_ours(path: Path) -> bool:
    """Whether ``path`` is a standalone output witprobe wrote and nobody changed since: its record
    (a regular file, never followed through a link) names the file's current sha256."""
    rec = _standalone_record(path)
    try:
        fd = os.open(rec, _READ_FLAGS)
    except OSError:
        return False
    try:
        if not stat.S_ISREG(os.fstat(fd).st_mode):
            return False
        text = os.read(fd, 4096).decode("ascii", "replace")
    finally:
        os.close(fd)
    if not text.startswith(_STANDALONE_TEXT):
        return False
    try:
        return sha256_file(path) == text[len(_STANDALONE_TEXT):].strip()
    except OSError:
        return False


def _write_standalone_record(path: Path, digest: str) -> None:
    rec = _standalone_record(path)
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
    try:
        os.write(fd, (_STANDALONE_TEXT + digest + "\n").encode("ascii"))
        os.close(fd)
        if os.path.islink(rec) or (os.path.lexists(rec) and not os.path.isfile(rec)):
            raise OutputRefused(f"cannot record {path}: {rec} is not a regular file")
        os.replace(tmp, rec)
    finally:
        if os.path.lexists(tmp):
            os.unlink(tmp)


@contextlib.contextmanager
def new_file(path: Path | str, force: bool = False) -> Iterator[Path]:
    """A standalone output file (``--out FILE``): yields a fresh temporary path beside it to write
    to, then renames it onto ``path``; an existing file is replaced only with ``force``, only if
    witprobe wrote it and it is unchanged (its record ``.NAME.witprobe`` names its sha256), and
    never a directory, a symbolic link or a special file. On any error the temporary is removed."""
    path = check_new_file(path, force)
    with locked(path):
        check_new_file(path, force)
        try:
            fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=path.parent)
        except OSError as e:
            raise OutputRefused(f"cannot write {path}: {_why(e)}") from None
        os.close(fd)
        try:
            yield Path(tmp)
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)  # mkstemp creates 0600; the output is ordinary
            check_new_file(path, force)  # again: a link or file may have been planted meanwhile
            digest = sha256_file(tmp)
            if force:
                os.replace(tmp, path)  # replaces the name itself, never writes through a link
            else:
                try:
                    os.link(tmp, path)  # fails if path exists: never replaces
                except FileExistsError:
                    raise OutputRefused(f"{path} appeared while witprobe was writing it; pass --force to replace it") from None
                except OSError:  # no hard links on this file system
                    os.replace(tmp, path)
            _write_standalone_record(path, digest)
        finally:
            if os.path.lexists(tmp):
                os.unlink(tmp)


def write_file(path: Path | str, data: str | bytes, force: bool = False) -> Path:
    """Write a standalone output file with the rules of :func:`new_file`; returns its path."""
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with new_file(path, force) as tmp:
        with open(tmp, "wb") as f:
            f.write(raw)
    return _abs(path)


def check_into(d: Path | str, rels: tuple[str, ...] | list[str]) -> None:
    """Before any work: each file ``rels`` in directory ``d`` is absent or one :func:`write_into`
    may replace (listed in ``d``'s manifest, unchanged); :class:`OutputRefused` otherwise."""
    d = _abs(d)
    if not os.path.lexists(d):
        return
    dfd = _open_dir(d)
    try:
        man = _read_manifest_at(dfd, d)
        for rel in rels:
            _check_replace_at(dfd, d, rel, man)
    finally:
        os.close(dfd)


def _check_replace_at(dfd: int, d: Path, rel: str, man: Manifest | None) -> bool:
    """Whether ``d/rel`` exists (and may be replaced); :class:`OutputRefused` if it may not."""
    try:
        st = os.stat(rel, dir_fd=dfd, follow_symlinks=False)
    except FileNotFoundError:
        return False
    target = d / rel
    if stat.S_ISLNK(st.st_mode):
        raise OutputRefused(f"{target} is a symbolic link; witprobe does not write through links")
    if not stat.S_ISREG(st.st_mode):
        raise OutputRefused(f"cannot write {target}: it is not a regular file")
    if man is None or rel not in man.files:
        raise OutputRefused(f"{target} exists and witprobe did not write it; move it away first")
    fd = os.open(rel, _READ_FLAGS, dir_fd=dfd)
    try:
        same = _sha_fd(fd) == man.files[rel]
    finally:
        os.close(fd)
    if not same:
        raise OutputRefused(f"{target} changed since witprobe wrote it; move it away first")
    return True


def write_into(d: Path | str, rel: str, data: str | bytes, tool: str) -> Path:
    """Write one file into output directory ``d`` and record it in ``d``'s manifest.

    The file is created if absent, or replaced if ``d``'s manifest lists it with its current
    bytes (witprobe wrote it and nobody changed it); anything else there is refused
    (:class:`OutputRefused`). A directory without a manifest gets one listing this file.
    """
    d = _abs(d)
    if not _valid_rel(rel) or "/" in rel:
        raise ValueError(f"not a file name: {rel!r}")
    raw = data.encode("utf-8") if isinstance(data, str) else data
    with locked(d):
        dfd = _open_dir(d)
        try:
            man = _read_manifest_at(dfd, d)
            exists = _check_replace_at(dfd, d, rel, man)
        finally:
            os.close(dfd)
        man = man or Manifest(tool)
        try:
            _atomic_bytes(d / rel, raw, replace=exists)
            man.files[rel] = hashlib.sha256(raw).hexdigest()
            _write_manifest_at(d, man)
        except FileExistsError:
            raise OutputRefused(f"{d / rel} appeared while witprobe was writing it") from None
        except OSError as e:
            raise OutputRefused(f"cannot write {d / rel}: {_why(e)}") from None
    return d / rel


def record_files(d: Path | str, tool: str) -> Manifest:
    """Record every regular file now in ``d`` (a folder witprobe just built) in its manifest."""
    d = _abs(d)
    man = Manifest(tool, _hash_tree(d))
    _write_manifest_at(d, man)
    return man
