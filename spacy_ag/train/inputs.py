"""The input files of a run, checked before any work: one line naming the file (and the line) that is wrong.

A corpus that is a directory, a JSONL record that is not an object, has no
``text`` or a ``text`` that is not a string would otherwise surface deep in
spaCy's readers or the corpus code as a TypeError or KeyError.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ..errors import Errors, TrainingLayerError

__all__ = ["check_jsonl", "require_file"]


def require_file(file: Path, what: str, config_path: Path) -> None:
    """`file` exists and is a file, or a TrainingLayerError that names `what` (e.g. "corpus.path: training file")."""
    if file.is_dir():
        raise TrainingLayerError(Errors.E045.format(path=file, what=what))
    if not file.is_file():
        raise TrainingLayerError(Errors.E032.format(path=config_path, what=what, file=file))


def check_jsonl(path: Path, field: str = "text", limit: Optional[int] = None) -> None:
    """Every non-blank line of `path` is a JSON object whose `field` is a string (the first `limit` lines)."""
    with open(path, encoding="utf8") as f:
        for number, line in enumerate(f, 1):
            if limit is not None and number > limit:
                return
            if not line.strip():
                continue
            try:
                record = json.loads(line)
            except ValueError as err:
                raise TrainingLayerError(Errors.E046.format(path=path, line=number, err=err)) from None
            if not isinstance(record, dict):
                raise TrainingLayerError(Errors.E046.format(path=path, line=number, err=type(record).__name__))
            if field not in record:
                raise TrainingLayerError(Errors.E047.format(path=path, line=number))
            if not isinstance(record[field], str):
                raise TrainingLayerError(Errors.E048.format(path=path, line=number,
                                                            found=type(record[field]).__name__))
