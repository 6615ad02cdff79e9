"""What a run must share with the checkpoints it resumes: grammar, corpus and every result-changing setting.

A run records its fingerprint (`RUN_FILE`) beside its checkpoints when it
starts. ``--resume`` compares the new run's fingerprint with it, key by key,
and refuses with one line naming the first setting that differs: a resumed
run must equal the uninterrupted run its saved config describes. Settings
that never change the result (worker counts, the backend that runs the
chains and its cluster, checkpoint and evaluation intervals) are left out, so they may change on resume.

The fingerprint is also written into every checkpoint (`spacy_ag.serialize.check_run`), and a
checkpoint whose fingerprint is not the resuming run's is refused: ``run.json`` alone cannot tell
whose the checkpoints beside it are. A new run removes the checkpoints it finds before it records
itself (`start_run`), so a run killed before its first checkpoint leaves nothing to resume, not
the previous run's state. On resume, trace.jsonl is cut back to the checkpoint (`cut_trace`): the
resumed run writes the later lines again.
"""
from __future__ import annotations

import hashlib
import json
import shutil
from pathlib import Path
from typing import Any, Dict, Iterable, Mapping, Optional

from ..archive import atomic_writer, remove_leftovers, write_atomic_file
from ..errors import Errors, TrainingLayerError
from ..serialize import first_difference, flat_settings, short_json

__all__ = ["CHECKPOINT_NAMES", "RUN_FILE", "check_resume", "cut_trace", "file_sha256", "record_run",
           "run_fingerprint", "start_run"]

RUN_FILE = "run.json"
#: Every checkpoint a trainer writes in OUTPUT/checkpoints: MCMC chains, the variational
#: learner, the topics' Gibbs sampler, the topics' online learner (a model archive).
CHECKPOINT_NAMES = ("chain-*.npz", "online.npz", "gibbs.npz", "topics")

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
    out = flat_settings(sections, leave_out=NEUTRAL)
    for name, path in files.items():
        out[f"{name} (sha256)"] = file_sha256(path) if path is not None else None
    return out


def record_run(checkpoints: Path, fingerprint: Mapping[str, Any]) -> None:
    write_atomic_file(checkpoints / RUN_FILE, json.dumps(fingerprint, indent=1, sort_keys=True).encode("utf8"))


def start_run(checkpoints: Path, fingerprint: Mapping[str, Any]) -> None:
    """A new run (no --resume), under the output lock and before its first iteration: remove the
    checkpoints of earlier runs (and what killed writes left), then record this run.

    Removed first, so that a kill or a full disk at any point leaves either no checkpoint at all
    (--resume refuses: E034) or only this run's own.
    """
    remove_leftovers(checkpoints)
    for pattern in CHECKPOINT_NAMES:
        for path in checkpoints.glob(pattern):
            if path.is_dir() and not path.is_symlink():
                shutil.rmtree(path)
            else:
                path.unlink()
    (checkpoints / RUN_FILE).unlink(missing_ok=True)
    record_run(checkpoints, fingerprint)


def cut_trace(trace: Path, key: str, reached: Mapping[int, int]) -> None:
    """Keep in trace.jsonl only the lines up to where a resumed run's checkpoints stand.

    key: what counts the steps ("iteration" or "minibatch"). reached: chain -> the step its
    checkpoint holds (a chain without one: 0); a line without "chain" is chain 0's. A line cut
    by a kill is dropped too. The resumed run then appends the later lines, once each.
    """
    if not trace.exists():
        return
    with open(trace, encoding="utf8") as lines, atomic_writer(trace, text=True) as kept:
        for line in lines:
            try:
                entry = json.loads(line)
            except ValueError:
                continue
            if isinstance(entry, dict) and entry.get(key, 0) <= reached.get(entry.get("chain", 0), 0):
                kept.write(line if line.endswith("\n") else line + "\n")


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
    key = first_difference(recorded, fingerprint)
    if key is not None:
        raise TrainingLayerError(Errors.E035.format(path=checkpoints, what=key, was=short_json(recorded.get(key)),
                                                    now=short_json(fingerprint.get(key))))
