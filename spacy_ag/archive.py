"""The one model archive: grammar text, arrays and a header, for every saved model.

`AdaptorGrammar`, `TopicModel` and the three spaCy components all save
through here. An archive is a directory (or, as bytes, a zip of the same
members)::

    header.json   format version, kind, spacy-ag version, the settings,
                  the SHA-256 of grammar.lt, the shape and dtype of every array
    grammar.lt    the (expanded) grammar, py-cfg text
    arrays.npz    the arrays, numpy's format, never pickled

A directory is written whole into a temporary sibling and renamed into place,
so a crash leaves either the old archive or the new one, never a mixture;
files get the user's umask. Reading checks the kind, the format version, the
grammar hash and every array's shape and dtype against the header before
anything else sees them, and every failure is a `ModelFileError`. Archives
of format 1 (``grammar.lt`` + ``state.npz`` with its header inside) are
converted on load, with a warning.
"""
from __future__ import annotations

import contextlib
import errno
import functools
import hashlib
import io
import json
import os
import re
import shutil
import signal
import tempfile
import threading
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterator, List, Mapping, Optional, Union

import numpy as np

from .errors import Errors, ModelFileError, OutputWriteError

__all__ = ["Archive", "FORMAT_VERSION", "FULL_DISK", "archive_bytes", "atomic_writer", "full_disk_error", "is_archive",
           "naming_failed_write", "read_archive", "replace_directory",
           "read_archive_bytes", "remove_leftovers", "write_archive", "write_atomic_file"]

FORMAT_VERSION = 2
HEADER, GRAMMAR, ARRAYS = "header.json", "grammar.lt", "arrays.npz"
LEGACY_STATE = "state.npz"
_ZIP_TIME = (1980, 1, 1, 0, 0, 0)

PathLike = Union[str, "os.PathLike[str]"]


@dataclass
class Archive:
    """What an archive holds, checked."""

    kind: str
    header: Dict[str, Any]
    grammar_text: str
    arrays: Dict[str, np.ndarray]


#: Trace keys that measure the machine (time, memory) rather than the model: left out of
#: archives, so that equal models give equal archives whatever the machine did.
MEASUREMENTS = ("seconds", "peak_rss_mb")


def reproducible(lines):
    """Trace lines without their measurements (see `MEASUREMENTS`)."""
    return [{k: v for k, v in line.items() if k not in MEASUREMENTS} for line in lines]


def grammar_hash(text: str) -> str:
    return hashlib.sha256(text.encode("utf8")).hexdigest()


def _umask() -> int:
    mask = os.umask(0)
    os.umask(mask)
    return mask


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> bytes:
    """An .npz archive (readable by `np.load`), byte-stable: sorted members, fixed timestamps."""
    members = {}
    for name, arr in arrays.items():
        out = io.BytesIO()
        np.lib.format.write_array(out, np.asanyarray(arr), allow_pickle=False)
        members[name + ".npy"] = out.getvalue()
    return zip_bytes(members)


def zip_bytes(members: Mapping[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            zf.writestr(info, members[name])
    return buf.getvalue()


def _members(kind: str, grammar_text: str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]
             ) -> Dict[str, bytes]:
    from .about import __version__

    header = {
        "format_version": FORMAT_VERSION,
        "kind": kind,
        "spacy_ag_version": __version__,
        "grammar_sha256": grammar_hash(grammar_text),
        "arrays": {name: {"shape": list(np.shape(a)), "dtype": np.asarray(a).dtype.str}
                   for name, a in sorted(arrays.items())},
        **meta,
    }
    return {HEADER: json.dumps(header, indent=1, sort_keys=True).encode("utf8"),
            GRAMMAR: grammar_text.encode("utf8"),
            ARRAYS: npz_bytes(arrays)}


#: The names of the temporary siblings below (``tempfile``'s 8 random characters between the
#: target's name and the suffix): a file ``.NAME.XXXXXXXX.tmp``, a directory ``.NAME.XXXXXXXX.tmp``
#: or ``.NAME.XXXXXXXX.old``. Only a killed process (SIGKILL, power loss) leaves one behind.
_LEFTOVER = re.compile(r"\..+\.[a-z0-9_]{8}\.(tmp|old)\Z")


def remove_leftovers(folder: PathLike) -> List[str]:
    """Remove the temporary files and directories that killed atomic writes left in `folder`.

    Only names of the exact form the writers below create are touched (files ending in .tmp,
    directories in .tmp or .old, and links in .old, removed without following them); returns the names removed, sorted. Call it
    only where no other process is writing (a trainer does it under its output lock).
    """
    removed = []
    try:
        entries = list(os.scandir(folder))
    except (FileNotFoundError, NotADirectoryError):
        return removed
    for entry in entries:
        match = _LEFTOVER.match(entry.name)
        if match is None or (entry.is_symlink() and match.group(1) != "old"):
            continue
        try:
            if entry.is_symlink():  # a linked directory moved aside by `replace_directory`: the link goes
                os.unlink(entry.path)
            elif entry.is_dir(follow_symlinks=False):
                shutil.rmtree(entry.path)
            elif match.group(1) == "tmp" and entry.is_file(follow_symlinks=False):
                os.unlink(entry.path)
            else:
                continue
        except FileNotFoundError:
            continue
        removed.append(entry.name)
    return sorted(removed)


def _holding_sigterm(write):
    """Hold SIGTERM back while `write` runs, then deliver it to the handler there was.

    Without this, SIGTERM's default action would kill the process mid-write and leave the
    temporary sibling behind; held back, the write finishes (or fails and cleans up) first.
    Only in the main thread, where Python runs signal handlers.
    """

    @functools.wraps(write)
    def held(*args, **kwargs):
        if threading.current_thread() is not threading.main_thread() or signal.getsignal(signal.SIGTERM) is None:
            return write(*args, **kwargs)
        received = []
        previous = signal.signal(signal.SIGTERM, lambda signum, frame: received.append(signum))
        try:
            return write(*args, **kwargs)
        finally:
            signal.signal(signal.SIGTERM, previous)
            if received:
                signal.raise_signal(signal.SIGTERM)

    return held


#: The OSErrors of a full disk, what they mean and what to do (E202): the disk, the user's quota, or the
#: file size limit of the process (``ulimit -f``; Python ignores SIGXFSZ, so the write fails with EFBIG).
FULL_DISK = {
    errno.ENOSPC: ("ENOSPC", "free space on that disk, or write to another one"),
    getattr(errno, "EDQUOT", -1): ("EDQUOT: the disk quota is used up",
                                   "free space within your quota, or write to another disk"),
    errno.EFBIG: ("EFBIG: past the file size limit, see `ulimit -f`",
                  "raise the limit (`ulimit -f unlimited`), or write to a disk without one"),
}


def full_disk_error(err: BaseException, path: PathLike) -> Optional[OutputWriteError]:
    """The one-line OutputWriteError (E202) naming `path` for the OSError of a full disk; None for any
    other error."""
    if not isinstance(err, OSError) or err.errno not in FULL_DISK:
        return None
    name, todo = FULL_DISK[err.errno]
    return OutputWriteError(Errors.E202.format(path=path, reason=f"{os.strerror(err.errno)} ({name})", todo=todo))


@contextlib.contextmanager
def naming_failed_write(path: PathLike) -> Iterator[None]:
    """Inside the block, a full disk (`FULL_DISK`) raises one OutputWriteError naming `path`, the file the
    user asked for (never a temporary name); other errors pass unchanged. An OSError carries no file
    name when a write, flush or fsync fails, so without this the user would not know which output."""
    try:
        yield
    except OSError as err:
        error = full_disk_error(err, path)
        if error is None:
            raise
        raise error from err


@contextlib.contextmanager
def atomic_writer(path: PathLike, text: bool = False) -> Iterator[IO]:
    """A file that replaces `path` only once the `with` block ends without error (temporary
    sibling, fsync, rename, the user's umask); on any error, Ctrl-C included, the part written
    is removed and `path` is left as it was. Large outputs stream through it line by line.
    A full disk is one OutputWriteError naming `path` (`naming_failed_write`)."""
    path = Path(path)
    with naming_failed_write(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp")
        try:
            with (os.fdopen(fd, "w", encoding="utf8", newline="\n") if text else os.fdopen(fd, "wb")) as f:
                yield f
                f.flush()
                os.fsync(f.fileno())
            os.chmod(tmp, 0o666 & ~_umask())
            os.replace(tmp, path)
        except BaseException:
            if os.path.exists(tmp):
                os.unlink(tmp)
            raise


@_holding_sigterm
def write_atomic_file(path: PathLike, data: bytes) -> None:
    """Replace `path` by `data` atomically (`atomic_writer`), SIGTERM held back until it is done."""
    with atomic_writer(path) as f:
        f.write(data)


def replace_directory(path: PathLike, write: Callable[[Path], None]) -> None:
    """Call `write(tmp)` on a new temporary sibling of `path`, then put it in `path`'s place by
    renames, so that a failure or Ctrl-C leaves the old `path` (or none) and never a mixture.
    A symlink at `path` is replaced by the directory (the link is removed, never what it points to)."""
    path = Path(path)
    with naming_failed_write(path):
        path.parent.mkdir(parents=True, exist_ok=True)
        tmp = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".tmp"))
        try:
            write(tmp)
            if path.exists() or path.is_symlink():
                old = Path(tempfile.mkdtemp(dir=path.parent, prefix=f".{path.name}.", suffix=".old"))
                os.rmdir(old)
                os.replace(path, old)
                os.replace(tmp, path)
                if old.is_symlink() or not old.is_dir():
                    os.unlink(old)
                else:
                    shutil.rmtree(old, ignore_errors=True)
            else:
                os.replace(tmp, path)
        except BaseException:
            shutil.rmtree(tmp, ignore_errors=True)
            raise


@_holding_sigterm
def write_archive(path: PathLike, kind: str, grammar_text: str, arrays: Mapping[str, np.ndarray],
                  meta: Mapping[str, Any]) -> None:
    """Write the archive directory `path` whole, replacing any archive there."""
    def write(tmp: Path) -> None:
        for name, data in _members(kind, grammar_text, arrays, meta).items():
            with naming_failed_write(Path(path) / name), open(tmp / name, "wb") as f:
                f.write(data)
                f.flush()
                os.fsync(f.fileno())
        os.chmod(tmp, 0o777 & ~_umask())

    replace_directory(path, write)


def archive_bytes(kind: str, grammar_text: str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]
                  ) -> bytes:
    """The archive as bytes: a zip of its members, equal bytes for equal models."""
    return zip_bytes(_members(kind, grammar_text, arrays, meta))


# ---------------------------------------------------------------- reading


def _load_npz(data: bytes, source: str, kind: str) -> Dict[str, np.ndarray]:
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            return {k: npz[k] for k in npz.files}
    except Exception as err:  # numpy raises many types for damaged files; its advice to
        # allow pickles must not reach the user
        reason = "not an archive of plain numpy arrays" if "allow_pickle" in str(err) else type(err).__name__
        raise ModelFileError(Errors.E061.format(path=source, kind=kind, err=reason)) from None


def _check(members: Mapping[str, bytes], source: str, kind: str) -> Archive:
    for name in (HEADER, GRAMMAR, ARRAYS):
        if name not in members:
            raise ModelFileError(Errors.E066.format(path=source, name=name))
    try:
        header = json.loads(members[HEADER].decode("utf8"))
        grammar_text = members[GRAMMAR].decode("utf8")
        if not isinstance(header, dict):
            raise ValueError("the header is not a JSON object")
    except ValueError as err:
        raise ModelFileError(Errors.E061.format(path=source, kind=kind, err=err)) from None
    found, version = header.get("kind"), header.get("format_version")
    if found != kind or version != FORMAT_VERSION:
        raise ModelFileError(Errors.E062.format(path=source, found=found, version=version, kind=kind,
                                                expected=FORMAT_VERSION))
    if header.get("grammar_sha256") != grammar_hash(grammar_text):
        raise ModelFileError(Errors.E063.format(path=f"{source}/{GRAMMAR}", found=grammar_hash(grammar_text)[:12],
                                                expected=str(header.get("grammar_sha256"))[:12]))
    arrays = _load_npz(members[ARRAYS], f"{source}/{ARRAYS}", kind)
    expected = header.get("arrays")
    if not isinstance(expected, dict) or set(expected) != set(arrays):
        raise ModelFileError(Errors.E061.format(path=source, kind=kind, err="the arrays do not match the header"))
    for name, arr in arrays.items():
        spec = expected[name]
        want = (tuple(spec.get("shape", ())), spec.get("dtype")) if isinstance(spec, dict) else None
        if want is None or (arr.shape, arr.dtype.str) != want:
            raise ModelFileError(Errors.E064.format(path=source, name=name, found=f"{arr.dtype.str}{list(arr.shape)}",
                                                    expected=f"{want[1]}{list(want[0])}" if want else "?"))
    return Archive(kind, header, grammar_text, arrays)


def _legacy(members: Mapping[str, bytes], source: str, kind: str) -> Archive:
    """A format-1 model (grammar.lt + state.npz with a __meta__ header), converted."""
    arrays = _load_npz(members[LEGACY_STATE], f"{source}/{LEGACY_STATE}", kind)
    if GRAMMAR not in members:
        raise ModelFileError(Errors.E066.format(path=source, name=GRAMMAR))
    try:
        meta = json.loads(bytes(arrays.pop("__meta__")).decode("utf8"))
        grammar_text = members[GRAMMAR].decode("utf8")
    except (KeyError, ValueError) as err:
        raise ModelFileError(Errors.E061.format(path=source, kind=kind, err=err)) from None
    if meta.get("kind") != kind or meta.get("format_version") != 1:
        raise ModelFileError(Errors.E062.format(path=source, found=meta.get("kind"),
                                                version=meta.get("format_version"), kind=kind,
                                                expected=FORMAT_VERSION))
    warnings.warn(f"{source}: a spacy-ag model of format 1, converted on load; save it again to write "
                  f"format {FORMAT_VERSION}", UserWarning, stacklevel=3)
    return Archive(kind, meta, grammar_text, arrays)


def is_archive(path: PathLike) -> bool:
    """True if `path` looks like a model archive directory (of any format version)."""
    path = Path(path)
    return (path / HEADER).is_file() or (path / LEGACY_STATE).is_file()


def read_archive(path: PathLike, kind: str) -> Archive:
    """The checked archive of the directory `path`."""
    path = Path(path)
    if not path.is_dir():
        raise ModelFileError(Errors.E060.format(path=path))
    names = (HEADER, GRAMMAR, ARRAYS) if (path / HEADER).exists() or not (path / LEGACY_STATE).exists() \
        else (GRAMMAR, LEGACY_STATE)
    members = {}
    for name in names:
        file = path / name
        if file.is_file():
            try:
                members[name] = file.read_bytes()
            except OSError as err:
                raise ModelFileError(Errors.E061.format(path=file, kind=kind, err=err)) from None
    if LEGACY_STATE in names and LEGACY_STATE in members:
        return _legacy(members, str(path), kind)
    return _check(members, str(path), kind)


def read_archive_bytes(data: bytes, source: str, kind: str) -> Archive:
    """The checked archive of `archive_bytes` output (or of a format-1 model's bytes)."""
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as zf:
            members = {name: zf.read(name) for name in zf.namelist()}
    except Exception as err:
        raise ModelFileError(Errors.E061.format(path=source, kind=kind, err=type(err).__name__)) from None
    if HEADER not in members and LEGACY_STATE in members:
        return _legacy(members, source, kind)
    return _check(members, source, kind)
