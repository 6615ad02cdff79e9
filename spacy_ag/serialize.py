"""Sampler states as arrays, and the run a checkpoint records.

A model and a checkpoint hold the state's arrays (`state_arrays`,
`state_from_arrays`); both are archives (`spacy_ag.archive`). A checkpoint
also records the run that wrote it (`flat_settings`), and continues only a
run that gives the same (`check_run`).
"""
from __future__ import annotations

import json
from typing import Any, Dict, Mapping, Optional

import numpy as np

from .errors import Errors, ModelFileError, TrainingLayerError
from .core.state import N_TRIE, NODE_HWM, TAB_HWM, State

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
