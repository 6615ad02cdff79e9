"""What a run must share with the checkpoints it resumes: grammar, corpus and every result-changing setting.

A run records its fingerprint (`RUN_FILE`) beside its checkpoints when it
starts. ``--resume`` compares the new run's fingerprint with it, key by key,
and refuses with one line naming the first setting that differs: a resumed
run must equal the uninterrupted run its saved config describes. Settings
that never change the result (worker counts, the backend that runs the
chains and its cluster, checkpoint and evaluation intervals) are left out, so they may change on resume.
"""
from __future__ import annotations

import hashlib
import json
from pathlib import Path
from typing import Any, Dict, Iterable, Mapping, Optional

from ..archive import write_atomic_file
from ..errors import Errors, TrainingLayerError

__all__ = ["RUN_FILE", "check_resume", "file_sha256", "record_run", "run_fingerprint"]

RUN_FILE = "run.json"

#: ``section.key`` names that do not change what a run computes.
NEUTRAL = frozenset({"training.workers", "training.checkpoint_every", "training.eval_every", "training.eval_at",
                     "training.backend", "training.ray_address", "online.workers", "topics.top_words"})


def file_sha256(path: Path) -> str:
    h = hashlib.sha256()
    with open(path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            h.update(block)
    return h.hexdigest()


def run_fingerprint(sections: Mapping[str, Mapping[str, Any]], files: Mapping[str, Optional[Path]]) -> Dict[str, Any]:
    """``section.key`` -> value for every setting that changes the result, plus file hashes.

    sections: settings groups as dicts (``{"sampler": {...}, "training": {...}}``).
    files: what the run reads (``{"grammar": path, "corpus": path}``); None is recorded as None.
    """
    out: Dict[str, Any] = {}
    for section, values in sections.items():
        for key, value in values.items():
            name = f"{section}.{key}"
            if name not in NEUTRAL:
                out[name] = list(value) if isinstance(value, tuple) else value
    for name, path in files.items():
        out[f"{name} (sha256)"] = file_sha256(path) if path is not None else None
    return json.loads(json.dumps(out, sort_keys=True, default=str))


def record_run(checkpoints: Path, fingerprint: Mapping[str, Any]) -> None:
    write_atomic_file(checkpoints / RUN_FILE, json.dumps(fingerprint, indent=1, sort_keys=True).encode("utf8"))


def _short(value: Any) -> str:
    text = json.dumps(value)
    return text if len(text) <= 24 else text[:12] + "..."


def check_resume(checkpoints: Path, fingerprint: Mapping[str, Any], patterns: Iterable[str]) -> None:
    """Refuse ``--resume`` without checkpoints, or with a run that differs from theirs."""
    if not any(p for pattern in patterns for p in checkpoints.glob(pattern)):
        raise TrainingLayerError(Errors.E034.format(path=checkpoints))
    try:
        recorded = json.loads((checkpoints / RUN_FILE).read_text(encoding="utf8"))
    except (OSError, ValueError):
        recorded = None  # checkpoints of a version that kept no record: the chains check corpus and grammar
    if not isinstance(recorded, dict):
        return
    for key in sorted(set(recorded) | set(fingerprint)):
        if recorded.get(key) != fingerprint.get(key):
            raise TrainingLayerError(Errors.E035.format(path=checkpoints, what=key, was=_short(recorded.get(key)),
                                                        now=_short(fingerprint.get(key))))
