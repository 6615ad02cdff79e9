"""Saving sampler states and model directories: numpy and JSON, versioned, no pickle."""
from __future__ import annotations

import io
import json
import zipfile
import os
import tempfile
from pathlib import Path
from typing import Any, Dict, Tuple

import numpy as np

from .core.state import N_TRIE, NODE_HWM, TAB_HWM, State

FORMAT_VERSION = 1

_NODE = ("node_kind", "node_sym", "node_rule", "node_table", "node_child", "node_sib", "node_aux", "node_free")
_TAB = ("tab_adaptor", "tab_count", "tab_label", "tab_yield", "tab_state", "tab_next", "tab_prev",
        "tab_free", "tab_mark")
_TRIE = ("trie_parent", "trie_term", "trie_head")


class ModelFileError(ValueError):
    """A saved model or checkpoint that cannot be read; the message names the file."""


def state_arrays(state: State) -> Dict[str, np.ndarray]:
    """The state's arrays, with the pools cut to what has ever been used."""
    c = state.counters
    out = {}
    for name in State._fields:
        arr = getattr(state, name)
        if name in _NODE:
            arr = arr[: max(1, int(c[NODE_HWM]))]
        elif name in _TAB:
            arr = arr[: max(1, int(c[TAB_HWM]))]
        elif name in _TRIE:
            arr = arr[: max(1, int(c[N_TRIE]))]
        out[name] = np.ascontiguousarray(arr)
    return out


def state_from_arrays(arrays: Dict[str, np.ndarray], source: str) -> State:
    missing = [f for f in State._fields if f not in arrays]
    if missing:
        raise ModelFileError(f"{source}: not a spacy-ag state (missing {', '.join(missing[:3])}); "
                             "was it written by another program?")
    return State(**{f: np.array(arrays[f]) for f in State._fields})


def write_npz_atomic(path: Path, arrays: Dict[str, np.ndarray], meta: Dict[str, Any]) -> None:
    """One file holding arrays plus a JSON header, replaced atomically."""
    path = Path(path)
    path.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=path.name, suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f:
            f.write(npz_bytes(arrays, meta))
            f.flush()
            os.fsync(f.fileno())
        os.replace(tmp, path)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


def read_npz(path: Path, kind: str) -> Tuple[Dict[str, np.ndarray], Dict[str, Any]]:
    path = Path(path)
    if not path.exists():
        raise ModelFileError(f"{path}: file not found")
    return read_npz_bytes(path.read_bytes(), str(path), kind)


def meta_header(kind: str, **fields) -> Dict[str, Any]:
    from . import __version__

    return {"kind": kind, "format_version": FORMAT_VERSION, "spacy_ag_version": __version__, **fields}


_ZIP_TIME = (1980, 1, 1, 0, 0, 0)


def zip_bytes(members: Dict[str, bytes]) -> bytes:
    buf = io.BytesIO()
    with zipfile.ZipFile(buf, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(members):
            info = zipfile.ZipInfo(name, date_time=_ZIP_TIME)
            info.external_attr = 0o644 << 16
            zf.writestr(info, members[name])
    return buf.getvalue()


def npz_bytes(arrays: Dict[str, np.ndarray], meta: Dict) -> bytes:
    """An .npz archive (readable by `np.load`) with the JSON header as `__meta__`, byte-stable."""
    payload = dict(arrays)
    payload["__meta__"] = np.frombuffer(json.dumps(meta).encode("utf8"), dtype=np.uint8)
    members = {}
    for name, arr in payload.items():
        out = io.BytesIO()
        np.lib.format.write_array(out, np.asanyarray(arr), allow_pickle=False)
        members[name + ".npy"] = out.getvalue()
    return zip_bytes(members)


def read_npz_bytes(data: bytes, source: str, kind: str):
    """Arrays and JSON header of an in-memory npz, checked for kind and format version."""
    try:
        with np.load(io.BytesIO(data), allow_pickle=False) as npz:
            arrays = {k: npz[k] for k in npz.files}
        meta = json.loads(bytes(arrays.pop("__meta__")).decode("utf8"))
    except (OSError, ValueError, KeyError, EOFError, zipfile.BadZipFile) as err:
        raise ModelFileError(f"{source}: damaged or not a spacy-ag {kind} file ({err}); "
                             "retrain or restore it from a backup") from None
    version = meta.get("format_version")
    if meta.get("kind") != kind or version != FORMAT_VERSION:
        raise ModelFileError(f"{source}: a {meta.get('kind')!r} file of format {version!r}, expected a "
                             f"{kind!r} file of format {FORMAT_VERSION}; use the spacy-ag version "
                             "that wrote it")
    return arrays, meta
