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
anything else sees them, and every failure is a `ModelFileError`. Nothing is
inflated beyond what the header declares: a member's uncompressed size is
checked before it is read, so a small file cannot take gigabytes. Archives
of format 1 (``grammar.lt`` + ``state.npz`` with its header inside) are
converted on load, with a warning.

A training checkpoint (chain-N.npz, online.npz, gibbs.npz) is the same
archive as one file (the members `archive_bytes` zips): its header records the
run's progress, its arrays the sampler's state, and its grammar.lt is empty
(the run's fingerprint pins the grammar). It is written atomically with
SIGTERM held back (`write_checkpoint_file`) and read within the same bounds
(`read_checkpoint_file`, `read_checkpoint_bytes`). A checkpoint of format 1
(an .npz with its header in a ``__meta__`` array) is refused in one line
(E560): the run starts again without resuming.
"""
from __future__ import annotations

import contextlib
import errno
import hashlib
import io
import json
import os
import re
import shutil
import tempfile
import warnings
import zipfile
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any, Callable, Dict, Iterator, List, Mapping, Optional, Union

import numpy as np

from .errors import Errors, ModelFileError, OutputWriteError
from .runs.signals import holding_sigterm

__all__ = ["Archive", "FORMAT_VERSION", "FULL_DISK", "archive_bytes", "atomic_writer", "checkpoint_bytes",
           "declared_arrays", "full_disk_error", "is_archive", "load_npz", "naming_failed_write", "read_archive",
           "read_archive_bytes", "read_checkpoint_bytes", "read_checkpoint_file", "remove_leftovers",
           "replace_directory", "write_archive", "write_atomic_file", "write_checkpoint_file"]

FORMAT_VERSION = 2
HEADER, GRAMMAR, ARRAYS = "header.json", "grammar.lt", "arrays.npz"
LEGACY_STATE = "state.npz"
#: The member that holds the header of a format-1 checkpoint (an .npz of the arrays and this one).
LEGACY_CHECKPOINT_META = "__meta__.npy"
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


def npz_bytes(arrays: Mapping[str, np.ndarray]) -> memoryview:
    """An .npz archive (readable by `np.load`), byte-stable: sorted members, fixed timestamps.
    A view of one buffer: the arrays are copied once, not once per member and again whole."""
    buf = io.BytesIO()
    write_npz(buf, arrays)
    return buf.getbuffer()


def write_npz(f: IO, arrays: Mapping[str, np.ndarray]) -> None:
    """Write `npz_bytes(arrays)` to the seekable binary file f, each array streamed into its member."""
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as zf:
        for member, name in sorted((name + ".npy", name) for name in arrays):
            info = zipfile.ZipInfo(member, date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            with zf.open(info, "w") as out:
                np.lib.format.write_array(out, np.asanyarray(arrays[name]), allow_pickle=False)


def zip_bytes(members: Mapping[str, bytes]) -> bytes:
    buf = io.BytesIO()
    write_zip(buf, members)
    return buf.getvalue()


def write_zip(f: IO, members: Mapping[str, bytes]) -> None:
    """Write the zip of `members` (sorted, fixed timestamps, stored) to the binary file f."""
    with zipfile.ZipFile(f, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            zf.writestr(info, members[name])


def _members(kind: str, grammar_text: str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any],
             compact: bool = False) -> Dict[str, bytes]:
    """The members of an archive (see `_header_bytes`)."""
    return {HEADER: _header_bytes(kind, grammar_text, arrays, meta, compact),
            GRAMMAR: grammar_text.encode("utf8"),
            ARRAYS: npz_bytes(arrays)}


def _header_bytes(kind: str, grammar_text: str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any],
                  compact: bool) -> bytes:
    """An archive's header.json. A model's is indented with sorted keys, for people who read it; a
    checkpoint's (`compact`), rewritten every few iterations with its trace and counts, is written
    by json's fast encoder, in the order the runner gave."""
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
    text = json.dumps(header) if compact else json.dumps(header, indent=1, sort_keys=True)
    return text.encode("utf8")


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


@holding_sigterm
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


@holding_sigterm
def write_archive(path: PathLike, kind: str, grammar_text: str, arrays: Mapping[str, np.ndarray],
                  meta: Mapping[str, Any]) -> None:
    """Write the archive directory `path` whole, replacing any archive there."""
    def write(tmp: Path) -> None:
        members = {HEADER: _header_bytes(kind, grammar_text, arrays, meta, False),
                   GRAMMAR: grammar_text.encode("utf8"), ARRAYS: None}
        for name, data in members.items():
            with naming_failed_write(Path(path) / name), open(tmp / name, "wb") as f:
                if data is None:
                    write_npz(f, arrays)  # streamed: no copy of the arrays in memory
                else:
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
#
# Nothing is inflated or allocated before its size is known to be what the header declares: an
# archive's memory and time on load are bounded by the sizes its header lists (which the models'
# own checks then compare with the grammar), never by what a zip member claims to hold.

#: The most bytes a header.json or grammar.lt may hold (whose sizes no header declares): far above
#: any model's (a 20,000-topic grammar is a few MB), far below what would exhaust a machine.
TEXT_MEMBER_LIMIT = 256 << 20
#: The most bytes the .npy header of one array may take (numpy writes 64-byte multiples, a few
#: hundred bytes for any array an archive holds; numpy's own reader allows 10,000).
NPY_HEADER_LIMIT = 10_000
#: Per array, what arrays.npz adds to the arrays' bytes: the .npy header and the zip's two headers.
NPZ_MEMBER_OVERHEAD = NPY_HEADER_LIMIT + 1024
MAX_ARRAY_DIMENSIONS = 8
#: numpy dtype kinds an archive may hold: booleans, integers, floats, complex; never objects.
ARRAY_DTYPE_KINDS = "biufc"
_READ_CHUNK = 1 << 24


def _archive_error(source: str, kind: str, err: BaseException) -> ModelFileError:
    """numpy and zipfile raise many types for damaged files; their advice to allow pickles must not reach the user."""
    reason = "not an archive of plain numpy arrays" if "allow_pickle" in str(err) else type(err).__name__
    return ModelFileError(Errors.E061.format(path=source, kind=kind, err=reason))


def declared_arrays(header: Mapping[str, Any], source: str) -> Dict[str, tuple]:
    """``{name: (shape, dtype)}`` of the header's "arrays", each checked like a config value."""
    where = f"{source}/{HEADER}"
    specs = header.get("arrays")
    if not isinstance(specs, dict):
        raise ModelFileError(Errors.E193.format(path=where, problem=f"arrays must be a table of arrays, got {specs!r}"))
    out = {}
    for name, spec in specs.items():
        if not name or not name.replace("_", "").isalnum() or not name.isascii():
            raise ModelFileError(Errors.E193.format(path=where, problem=f"arrays has a bad array name {name!r}"))
        shape = spec.get("shape") if isinstance(spec, dict) else None
        if not isinstance(shape, list) or len(shape) > MAX_ARRAY_DIMENSIONS or not all(
                isinstance(n, int) and not isinstance(n, bool) and n >= 0 for n in shape):
            raise ModelFileError(Errors.E193.format(
                path=where, problem=f"arrays.{name}.shape must be a list of at most {MAX_ARRAY_DIMENSIONS} "
                                    f"sizes >= 0, got {shape!r}"))
        dtype_text = spec.get("dtype")
        try:
            dtype = np.dtype(dtype_text) if isinstance(dtype_text, str) else None
        except (TypeError, ValueError):
            dtype = None
        if dtype is None or dtype.kind not in ARRAY_DTYPE_KINDS or dtype.fields is not None or dtype.subdtype:
            raise ModelFileError(Errors.E193.format(
                path=where, problem=f"arrays.{name}.dtype must be a numpy dtype of numbers such as \"<i8\", "
                                    f"got {dtype_text!r}"))
        out[name] = (tuple(shape), dtype)
    return out


def _nbytes(shape: tuple, dtype: np.dtype) -> int:
    size = dtype.itemsize
    for n in shape:
        size *= n
    return size


def _read_npy(zf: zipfile.ZipFile, info: zipfile.ZipInfo, where: str, kind: str,
              declared: Union[tuple, None]) -> np.ndarray:
    """One .npy member, its header checked against `declared` ((shape, dtype) or None) before the
    array is allocated; its data read straight into the array, in chunks."""
    name = info.filename[:-len(".npy")]
    with zf.open(info) as f:
        version = np.lib.format.read_magic(f)
        if version == (1, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_1_0(f, max_header_size=NPY_HEADER_LIMIT)
        elif version == (2, 0):
            shape, fortran, dtype = np.lib.format.read_array_header_2_0(f, max_header_size=NPY_HEADER_LIMIT)
        else:
            raise ValueError(Errors.E524.format(version=version))
        found = f"{dtype.str}{list(shape)}"
        if declared is not None and (tuple(shape), dtype.str) != (declared[0], declared[1].str):
            raise ModelFileError(Errors.E064.format(path=where, name=name, found=found,
                                                    expected=f"{declared[1].str}{list(declared[0])}"))
        if dtype.kind not in ARRAY_DTYPE_KINDS or dtype.fields is not None or len(shape) > MAX_ARRAY_DIMENSIONS:
            raise ModelFileError(Errors.E061.format(path=where, kind=kind, err="not an archive of plain numpy arrays"))
        nbytes = _nbytes(tuple(shape), dtype)
        if info.file_size != f.tell() + nbytes:
            raise ModelFileError(Errors.E190.format(path=where, member=info.filename, found=info.file_size,
                                                    expected=f.tell() + nbytes, what=found))
        data = np.empty(nbytes, np.uint8)
        view, done = memoryview(data), 0
        while done < nbytes:
            n = f.readinto(view[done:done + _READ_CHUNK])
            if not n:
                raise EOFError(Errors.E525)
            done += n
    array = data.view(dtype)
    return array.reshape(shape[::-1]).T if fortran else array.reshape(shape)


def load_npz(file: Union[PathLike, bytes], source: str, kind: str,
             declared: Union[Mapping[str, tuple], None] = None) -> Dict[str, np.ndarray]:
    """The arrays of an .npz file (a path or its bytes), read within bounds.

    With `declared` (`declared_arrays`), the members must be exactly the arrays it lists, and each
    one's uncompressed size (the zip's central directory) must fit its declared shape and dtype
    before it is inflated. Without (format-1 models), no member may be larger than
    the whole file, which holds every member uncompressed as spacy-ag writes them. Either way a
    member is read only once its .npy header agrees with its size, and never unpickled.
    """
    container = len(file) if isinstance(file, (bytes, bytearray)) else None
    try:
        if container is None:
            container = os.path.getsize(file)
            zf = zipfile.ZipFile(file)
        else:
            zf = zipfile.ZipFile(io.BytesIO(file))
    except Exception as err:
        raise _archive_error(source, kind, err) from None
    with zf:
        infos = zf.infolist()
        names = [info.filename[:-len(".npy")] if info.filename.endswith(".npy") else None for info in infos]
        seen = set()
        for info, name in zip(infos, names):
            if name is None or (declared is not None and name not in declared) or name in seen:
                raise ModelFileError(Errors.E191.format(
                    path=source, member=info.filename, what="a numpy array (.npy) it holds only once" if declared is None
                    else "one of the arrays header.json lists"))
            seen.add(name)
            if declared is not None:
                nbytes = _nbytes(*declared[name])
                if not nbytes + 10 <= info.file_size <= nbytes + NPY_HEADER_LIMIT + 12:
                    raise ModelFileError(Errors.E190.format(
                        path=source, member=info.filename, found=info.file_size, expected=nbytes,
                        what=f"{declared[name][1].str}{list(declared[name][0])} and its .npy header"))
            elif info.file_size > container:
                raise ModelFileError(Errors.E192.format(path=source, member=info.filename, size=info.file_size,
                                                        limit=container))
        if declared is not None and set(declared) - set(names):
            missing = sorted(set(declared) - set(names))
            raise ModelFileError(Errors.E064.format(path=source, name=missing[0], found="missing",
                                                    expected=f"{declared[missing[0]][1].str}"
                                                             f"{list(declared[missing[0]][0])}"))
        try:
            return {name: _read_npy(zf, info, source, kind, declared[name] if declared is not None else None)
                    for info, name in zip(infos, names)}
        except ModelFileError:
            raise
        except Exception as err:
            raise _archive_error(source, kind, err) from None


def _member(zf: zipfile.ZipFile, name: str, limit: int, source: str, kind: str) -> Union[bytes, None]:
    """The bytes of member `name` (None if absent), refused unread when it would inflate beyond `limit`."""
    try:
        info = zf.getinfo(name)
    except KeyError:
        return None
    if info.file_size > limit:
        raise ModelFileError(Errors.E192.format(path=source, member=name, size=info.file_size, limit=limit))
    try:
        return zf.read(info)
    except Exception as err:
        raise _archive_error(f"{source}/{name}", kind, err) from None


def _file(path: Path, limit: int, kind: str) -> Union[bytes, None]:
    """The bytes of the file `path` (None if absent), refused unread when larger than `limit`."""
    try:
        if not path.is_file():
            return None
        size = path.stat().st_size
        if size > limit:
            raise ModelFileError(Errors.E192.format(path=path.parent, member=path.name, size=size, limit=limit))
        return path.read_bytes()
    except OSError as err:
        raise ModelFileError(Errors.E061.format(path=path, kind=kind, err=err)) from None


HeaderCheck = Callable[[Mapping[str, Any], str], None]


def _check_header(data: Union[bytes, None], grammar: Union[bytes, None], source: str, kind: str,
                  check_header: Union[HeaderCheck, None]):
    """The header and grammar text, checked; the arrays the header declares."""
    for name, member in ((HEADER, data), (GRAMMAR, grammar)):
        if member is None:
            raise ModelFileError(Errors.E066.format(path=source, name=name))
    try:
        header = json.loads(data.decode("utf8"))
        grammar_text = grammar.decode("utf8")
        if not isinstance(header, dict):
            raise ValueError(Errors.E522)
    except ValueError as err:
        raise ModelFileError(Errors.E061.format(path=source, kind=kind, err=err)) from None
    found, version = header.get("kind"), header.get("format_version")
    if found != kind or version != FORMAT_VERSION:
        raise ModelFileError(Errors.E062.format(path=source, found=found, version=version, kind=kind,
                                                expected=FORMAT_VERSION))
    if header.get("grammar_sha256") != grammar_hash(grammar_text):
        raise ModelFileError(Errors.E063.format(path=f"{source}/{GRAMMAR}", found=grammar_hash(grammar_text)[:12],
                                                expected=str(header.get("grammar_sha256"))[:12]))
    declared = declared_arrays(header, source)
    if check_header is not None:
        check_header(header, source)
    return header, grammar_text, declared


def _legacy(arrays: Dict[str, np.ndarray], grammar: Union[bytes, None], source: str, kind: str,
            check_header: Union[HeaderCheck, None]) -> Archive:
    """A format-1 model (grammar.lt + state.npz with a __meta__ header), converted."""
    if grammar is None:
        raise ModelFileError(Errors.E066.format(path=source, name=GRAMMAR))
    try:
        meta = json.loads(bytes(arrays.pop("__meta__")).decode("utf8"))
        grammar_text = grammar.decode("utf8")
        if not isinstance(meta, dict):
            raise ValueError(Errors.E522)
    except (KeyError, ValueError) as err:
        raise ModelFileError(Errors.E061.format(path=source, kind=kind, err=err)) from None
    if meta.get("kind") != kind or meta.get("format_version") != 1:
        raise ModelFileError(Errors.E062.format(path=source, found=meta.get("kind"),
                                                version=meta.get("format_version"), kind=kind,
                                                expected=FORMAT_VERSION))
    if check_header is not None:
        check_header(meta, source)
    warnings.warn(Errors.W520.format(source=source, version=FORMAT_VERSION), UserWarning, stacklevel=3)
    return Archive(kind, meta, grammar_text, arrays)


def is_archive(path: PathLike) -> bool:
    """True if `path` looks like a model archive directory (of any format version)."""
    path = Path(path)
    return (path / HEADER).is_file() or (path / LEGACY_STATE).is_file()


def read_archive(path: PathLike, kind: str, check_header: Union[HeaderCheck, None] = None) -> Archive:
    """The checked archive of the directory `path`.

    `check_header(header, source)` checks the model's own header fields (raising `ModelFileError`)
    before any array is read.
    """
    path = Path(path)
    if not path.is_dir():
        raise ModelFileError(Errors.E060.format(path=path))
    grammar = _file(path / GRAMMAR, TEXT_MEMBER_LIMIT, kind)
    if not (path / HEADER).exists() and (path / LEGACY_STATE).is_file():
        arrays = load_npz(path / LEGACY_STATE, f"{path}/{LEGACY_STATE}", kind)
        return _legacy(arrays, grammar, str(path), kind, check_header)
    header, grammar_text, declared = _check_header(_file(path / HEADER, TEXT_MEMBER_LIMIT, kind), grammar,
                                                   str(path), kind, check_header)
    if not (path / ARRAYS).is_file():
        raise ModelFileError(Errors.E066.format(path=path, name=ARRAYS))
    arrays = load_npz(path / ARRAYS, f"{path}/{ARRAYS}", kind, declared)
    return Archive(kind, header, grammar_text, arrays)


def read_archive_bytes(data: bytes, source: str, kind: str, check_header: Union[HeaderCheck, None] = None
                       ) -> Archive:
    """The checked archive of `archive_bytes` output (or of a format-1 model's bytes); members other
    than the archive's own are never read."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except Exception as err:
        raise _archive_error(source, kind, err) from None
    with zf:
        grammar = _member(zf, GRAMMAR, TEXT_MEMBER_LIMIT, source, kind)
        names = set(zf.namelist())
        if HEADER not in names and LEGACY_STATE in names:
            state = _member(zf, LEGACY_STATE, len(data), source, kind)
            return _legacy(load_npz(state, f"{source}/{LEGACY_STATE}", kind), grammar, source, kind, check_header)
        return _zip_archive(zf, grammar, TEXT_MEMBER_LIMIT, source, kind, check_header)


def _zip_archive(zf: zipfile.ZipFile, grammar: Union[bytes, None], text_limit: int, source: str, kind: str,
                 check_header: Union[HeaderCheck, None]) -> Archive:
    """The checked archive of an open zip of the archive's members (header.json at most `text_limit`
    bytes), `grammar` being its grammar.lt."""
    header, grammar_text, declared = _check_header(_member(zf, HEADER, text_limit, source, kind),
                                                   grammar, source, kind, check_header)
    limit = sum(_nbytes(*spec) + NPZ_MEMBER_OVERHEAD for spec in declared.values()) + 1024
    member = _member(zf, ARRAYS, limit, source, kind)
    if member is None:
        raise ModelFileError(Errors.E066.format(path=source, name=ARRAYS))
    return Archive(kind, header, grammar_text, load_npz(member, f"{source}/{ARRAYS}", kind, declared))


# ---------------------------------------------------------------- checkpoints


def checkpoint_bytes(kind: str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]) -> bytes:
    """A checkpoint: the archive of `arrays`, with `meta` (the run's progress) in its header and an
    empty grammar, as the bytes of one file."""
    return zip_bytes(_members(kind, "", arrays, meta, compact=True))


@holding_sigterm
def write_checkpoint_file(path: PathLike, kind: str, arrays: Mapping[str, np.ndarray], meta: Mapping[str, Any]
                          ) -> None:
    """Replace the checkpoint `path` atomically with `checkpoint_bytes`, SIGTERM held back until it
    is done; the outer zip goes straight to the file, so the arrays are copied once."""
    with atomic_writer(path) as f:
        write_zip(f, _members(kind, "", arrays, meta, compact=True))


def read_checkpoint_file(path: PathLike, kind: str):
    """(arrays, header) of the checkpoint file `path` of `kind`, checked as an archive."""
    path = Path(path)
    if not path.exists():
        raise ModelFileError(Errors.E076.format(path=path))
    try:
        size = path.stat().st_size
        zf = zipfile.ZipFile(path)
    except Exception as err:
        raise _archive_error(str(path), kind, err) from None
    with zf:
        return _checkpoint(zf, size, str(path), kind)


def read_checkpoint_bytes(data: bytes, source: str, kind: str):
    """(arrays, header) of `checkpoint_bytes` output (a Ray chain's last checkpoint), checked."""
    try:
        zf = zipfile.ZipFile(io.BytesIO(data))
    except Exception as err:
        raise _archive_error(source, kind, err) from None
    with zf:
        return _checkpoint(zf, len(data), source, kind)


def _checkpoint(zf: zipfile.ZipFile, size: int, source: str, kind: str):
    """A checkpoint's header holds its trace and counts, which grow with the run: its members are
    bounded by the file's own size (spacy-ag stores them uncompressed), not by TEXT_MEMBER_LIMIT."""
    names = set(zf.namelist())
    if HEADER not in names and LEGACY_CHECKPOINT_META in names:
        raise ModelFileError(Errors.E560.format(path=source))
    archive = _zip_archive(zf, _member(zf, GRAMMAR, size, source, kind), size, source, kind, None)
    return archive.arrays, archive.header
