"""Sampler states as arrays, and checkpoint files (arrays plus a JSON header, versioned, no pickle)."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, Mapping, Optional, Tuple

import numpy as np

from . import archive
from .archive import write_atomic_file
from .errors import Errors, ModelFileError, TrainingLayerError
from .core.state import N_TRIE, NODE_HWM, TAB_HWM, State

#: Format of checkpoint files (models are archives, `spacy_ag.archive`).
FORMAT_VERSION = 1

_NODE = ("node_kind", "node_sym", "node_rule", "node_table", "node_child", "node_sib", "node_aux", "node_free")
_TAB = ("tab_adaptor", "tab_count", "tab_label", "tab_yield", "tab_state", "tab_next", "tab_prev",
        "tab_free", "tab_mark")
_TRIE = ("trie_parent", "trie_term", "trie_head")


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
        raise ModelFileError(Errors.E074.format(source=source, missing=', '.join(missing[:3])))
    return State(**{f: np.array(arrays[f]) for f in State._fields})


def write_npz_atomic(path: Path, arrays: Dict[str, np.ndarray], meta: Dict[str, Any]) -> None:
    """One file holding arrays plus a JSON header (a checkpoint), replaced atomically."""
    write_atomic_file(path, npz_bytes(arrays, meta))


def read_npz(path: Path, kind: str) -> Tuple[Dict[str, np.ndarray], Dict[str, Any]]:
    path = Path(path)
    if not path.exists():
        raise ModelFileError(Errors.E076.format(path=path))
    return _checked_meta(archive.load_npz(path, str(path), kind), str(path), kind)


def meta_header(kind: str, **fields) -> Dict[str, Any]:
    from .about import __version__

    return {"kind": kind, "format_version": FORMAT_VERSION, "spacy_ag_version": __version__, **fields}


def npz_bytes(arrays: Dict[str, np.ndarray], meta: Dict) -> bytes:
    """An .npz archive (readable by `np.load`) with the JSON header as `__meta__`, byte-stable."""
    payload = dict(arrays)
    payload["__meta__"] = np.frombuffer(json.dumps(meta).encode("utf8"), dtype=np.uint8)
    return archive.npz_bytes(payload)


def read_npz_bytes(data: bytes, source: str, kind: str):
    """Arrays and JSON header of an in-memory npz, checked for kind and format version."""
    return _checked_meta(archive.load_npz(data, source, kind), source, kind)


def _checked_meta(arrays: Dict[str, np.ndarray], source: str, kind: str):
    try:
        meta = json.loads(bytes(arrays.pop("__meta__")).decode("utf8"))
        if not isinstance(meta, dict):
            raise ValueError(Errors.E522)
    except (KeyError, ValueError) as err:
        raise ModelFileError(Errors.E061.format(path=source, kind=kind, err=err)) from None
    version = meta.get("format_version")
    if meta.get("kind") != kind or version != FORMAT_VERSION:
        raise ModelFileError(Errors.E062.format(path=source, found=meta.get("kind"), version=version, kind=kind,
                                                expected=FORMAT_VERSION))
    return arrays, meta


def flat_settings(sections: Mapping[str, Mapping[str, Any]], leave_out: frozenset = frozenset()) -> Dict[str, Any]:
    """``section.key`` -> value of settings groups, as JSON gives them back (tuples become lists),
    without the names in `leave_out`: the form in which a checkpoint records its run."""
    out = {f"{section}.{key}": value for section, values in sections.items() for key, value in values.items()
           if f"{section}.{key}" not in leave_out}
    return json.loads(json.dumps(out, sort_keys=True, default=str))


def short_json(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 24 else text[:12] + "..."


def check_run(path: Any, recorded: Any, run: Optional[Mapping[str, Any]]) -> None:
    """Refuse a checkpoint whose recorded run (``section.key`` -> value) is not `run`.

    A checkpoint continues only the run that wrote it: one of another seed, setting, grammar
    or corpus, left in the folder by an earlier run, would otherwise be continued as this one.
    E180 names the first setting that differs; E181 is a checkpoint that records no run.
    """
    expected = json.loads(json.dumps(dict(run or {}), sort_keys=True, default=str))
    if recorded == expected:
        return
    if not isinstance(recorded, dict):
        raise TrainingLayerError(Errors.E181.format(path=path))
    key = first_difference(recorded, expected)
    raise TrainingLayerError(Errors.E180.format(path=path, what=key, was=short_json(recorded.get(key)),
                                                now=short_json(expected.get(key))))


def first_difference(recorded: Mapping[str, Any], expected: Mapping[str, Any]) -> Optional[str]:
    """The first ``section.key``, in sorted order, whose value differs between two recorded runs."""
    return next((k for k in sorted(set(recorded) | set(expected)) if recorded.get(k) != expected.get(k)), None)
