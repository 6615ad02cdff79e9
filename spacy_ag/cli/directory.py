"""The directory mode of `spacy-ag segment` and `spacy-ag parse`: INPUT_DIR to --output OUT_DIR.

One shard per input file, complete shards skipped (so an interrupted run
resumes), on this machine or with ``--backend ray`` on a cluster
(`spacy_ag.annotation`). Progress is in bytes of the input, over all the
files still to do: a bar on a terminal, a line at every tenth otherwise.
"""
from __future__ import annotations

import dataclasses
import hashlib
import sys
from pathlib import Path
from typing import Any, Dict, Optional

import typer

from ..errors import Errors
from ._common import good, info, warn


class _Progress:
    """Receives the runner's events: shows bytes and files done of the total, prints warnings."""

    def __init__(self, label: str, files: int, total: int):
        self.label, self.files, self.total = label, files, total
        self.done_bytes = self.done_files = 0
        self.shown_tenth = 0
        self.bar = self.task = None

    def __enter__(self) -> "_Progress":
        if sys.stderr.isatty():
            from rich.console import Console
            from rich.progress import BarColumn, DownloadColumn, Progress, TextColumn, TimeRemainingColumn

            self.bar = Progress(TextColumn("{task.description}"), BarColumn(), DownloadColumn(),
                                TextColumn("eta"), TimeRemainingColumn(), console=Console(stderr=True),
                                transient=True)
            self.bar.start()
            self.task = self.bar.add_task(self._description(), total=self.total)
        return self

    def __exit__(self, *exc) -> None:
        if self.bar is not None:
            self.bar.stop()

    def _description(self) -> str:
        return f"{self.label}: {self.done_files}/{self.files} files"

    def __call__(self, event) -> None:
        if event["event"] == "warning":
            warn(event["message"])
            return
        self.done_bytes += event["bytes"]
        self.done_files += event["event"] == "shard"
        if self.bar is not None:
            self.bar.update(self.task, completed=self.done_bytes, description=self._description())
            return
        tenth = 10 * self.done_bytes // self.total if self.total else 10
        if self.shown_tenth < tenth < 10 or self.done_files == self.files:
            self.shown_tenth = tenth
            percent = 100 * self.done_bytes // self.total if self.total else 100
            typer.echo(f"  {self._description()}, {self.done_bytes:,}/{self.total:,} bytes ({percent}%)", err=True)


def shard_maker(command: str, task, model) -> Dict[str, Any]:
    """What makes the shards of a directory run, as `claim_shards` records it: the command, the task's
    options that change its output (not the batch size) and the SHA-256 of the model's bytes."""
    options = {key: value for key, value in dataclasses.asdict(task).items() if key != "batch_size"}
    return {"command": f"spacy-ag {command}", "options": options,
            "model_sha256": hashlib.sha256(model.to_bytes()).hexdigest()}


def annotate_directory(command: str, task, model, input_dir: Path, output: Optional[Path], backend: str,
                       ray_address: Optional[str], workers: int, force: bool = False) -> None:
    """Annotate every file of `input_dir` into `output` with `task` on `backend` ("local" or "ray"); complete
    shards of another model or other options are refused, or with `force` rewritten (`claim_shards`)."""
    from ..annotation import LocalWorkers, annotate_shards, claim_shards

    pending, complete = claim_shards(input_dir, output, shard_maker(command, task, model), force)
    if complete:
        info(f"{len(complete)} of {len(complete) + len(pending)} shards in {output} are complete: skipped",
             err=True)
    if not pending:
        good(f"Nothing to do: every file of {input_dir} has its shard in {output}", err=True)
        return
    if backend == "ray":
        from ..annotation.on_ray import RayWorkers

        runners = RayWorkers(task, model, ray_address, workers)
    else:
        if workers > 1:
            warn(Errors.W463)
        runners = LocalWorkers(task, model)
    try:
        with _Progress(task.label, len(pending), sum(s.size for s in pending)) as progress:
            counts = annotate_shards(task, runners, pending, progress)
    finally:
        runners.close()
    extra = f" ({counts['warnings']} warnings)" if counts["warnings"] else ""
    good(f"{task.done} of {counts['files']} files ({counts['lines']:,} lines) written to {output}{extra}",
         err=True)
