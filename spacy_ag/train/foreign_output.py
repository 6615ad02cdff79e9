"""Whose output directory a run writes into: its own, a new or empty one, or, with ``--force``, any.

A training run replaces OUTPUT/model (the whole directory), OUTPUT/config.cfg and the other files it
writes. In a folder spacy-ag wrote before, that is the point (a rerun, a longer run); in a folder of
the user's it would delete their ``model/`` and overwrite their ``config.cfg`` without a word. So a
run writes only where spacy-ag has written before, or into a new or empty directory, unless
``--force`` says to write anyway (spaCy's convention for commands that replace files).

spacy-ag's mark on a folder is its lock file (`spacy_ag.train.lock.LOCK_FILE`): every run of every
trainer creates it first thing, and it stays after the run, so folders written by earlier versions
carry it too.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Sequence

from ..errors import Errors, TrainingLayerError
from .lock import LOCK_FILE

__all__ = ["ENGINE_OUTPUTS", "PIPELINE_OUTPUTS", "TOPIC_OUTPUTS", "refuse_foreign_output"]

#: What each trainer writes into OUTPUT, for the line that refuses a folder it did not write.
ENGINE_OUTPUTS = ("model/", "config.cfg", "trace.jsonl", "segmentation.txt", "scores.json", "checkpoints/")
TOPIC_OUTPUTS = ("model/", "config.cfg", "trace.jsonl", "heldout.txt", "scores.json", "checkpoints/")
PIPELINE_OUTPUTS = ("model-last/", "model-best/", "trace.jsonl", "scores.json")
#: Names of the folder's entries shown in the line; the rest are counted.
SHOWN = 6


def refuse_foreign_output(out: Path, force: bool, writes: Sequence[str], *, marker: str = LOCK_FILE,
                          command: str = "training") -> None:
    """Refuse (E203, listing what is there) an existing, non-empty `out` without spacy-ag's `marker` (a
    path inside `out`), unless `force`. `writes`: what `command` writes there, named in the line."""
    if force or not out.is_dir() or (out / marker).exists():
        return
    entries = sorted(os.scandir(out), key=lambda entry: entry.name)
    if not entries:
        return
    names = [entry.name + ("/" if entry.is_dir() else "") for entry in entries]
    listing = ", ".join(names[:SHOWN]) + (f" and {len(names) - SHOWN} more" if len(names) > SHOWN else "")
    raise TrainingLayerError(Errors.E203.format(path=out, listing=listing, command=command,
                                                writes=", ".join(writes)))
