"""What a training run shows and keeps: one-line messages, the progress bar, trace.jsonl.

Every trainer of `spacy_ag.train` reports through `TraceLog`: one JSON line
per iteration (or minibatch) and chain goes to ``trace.jsonl`` as it comes,
and a progress bar with the latest line shows on a terminal (every tenth
line is printed otherwise).
"""
from __future__ import annotations

import json
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, TextIO

import typer


def _one_line(message: Any) -> str:
    return " ".join(str(message).split()) or "error"


class TrainingStopped(Exception):
    """Training was interrupted (Ctrl-C); the message says how to resume."""


def fail(message: Any) -> None:
    typer.secho(f"✘ {_one_line(message)}", err=True, fg=typer.colors.RED)


def warn(message: Any) -> None:
    typer.secho(f"⚠ {_one_line(message)}", err=True, fg=typer.colors.YELLOW)


def info(message: Any, *, err: bool = False) -> None:
    typer.secho(f"ℹ {message}", err=err, fg=typer.colors.BLUE if not err else None)


def good(message: Any, *, err: bool = False) -> None:
    typer.secho(f"✔ {message}", err=err, fg=typer.colors.GREEN)


def _format_tables(tables: Dict[str, int]) -> str:
    if len(tables) <= 3:
        return " ".join(f"{k}:{v}" for k, v in tables.items())
    return f"{sum(tables.values())} total"


def _progress_with_status():
    """A rich progress bar on stderr with a free status line below it."""
    from rich.console import Console
    from rich.progress import (BarColumn, MofNCompleteColumn, Progress, TextColumn, TimeElapsedColumn,
                               TimeRemainingColumn)
    from rich.text import Text

    class ProgressWithStatus(Progress):
        status = ""

        def get_renderables(self):
            yield self.make_tasks_table(self.tasks)
            if self.status:
                yield Text("  " + self.status, overflow="ellipsis", no_wrap=True)

    return ProgressWithStatus(TextColumn("{task.description}"), BarColumn(), MofNCompleteColumn(),
                              TimeElapsedColumn(), TextColumn("eta"), TimeRemainingColumn(),
                              console=Console(stderr=True))


@dataclass
class TraceLog:
    """Receives one trace line per iteration and chain: writes trace.jsonl, shows progress."""

    path: Path
    iterations: int
    chains: int
    append: bool = False
    interactive: bool = False
    stream: Optional[TextIO] = None
    label: str = "training"
    progress: Any = None
    task: Any = None
    last: Dict[int, int] = field(default_factory=dict)

    def __enter__(self) -> "TraceLog":
        from ..archive import naming_failed_write

        with naming_failed_write(self.path):
            self.path.parent.mkdir(parents=True, exist_ok=True)
            self.stream = open(self.path, "a" if self.append else "w", encoding="utf8")
        if self.interactive:
            self.progress = _progress_with_status()
            self.progress.start()
            self.task = self.progress.add_task(f"{self.label}: initializing", total=self.iterations * self.chains)
        return self

    def __exit__(self, exc_type, *exc) -> None:
        from ..archive import naming_failed_write

        if self.progress is not None:
            self.progress.stop()
        if self.stream is not None:
            stream, self.stream = self.stream, None
            try:
                with naming_failed_write(self.path):
                    stream.close()
            except Exception:
                if exc_type is None:  # else the error that stopped the run is the one to report
                    raise

    def stats(self, line: Dict) -> str:
        if "minibatch" in line:  # variational training
            parts = [f"pass {line.get('pass', 1)}", f"minibatch {line['minibatch']}",
                     f"entries {_format_tables(line.get('grammaton', {}))}"]
            if "token_f" in line:
                parts.append(f"token F {line['token_f']:.4f}")
            return "  ".join(parts)
        parts = []
        if self.chains > 1:
            parts.append(f"chain {line.get('chain', 0)}")
        parts.append(f"it {line['iteration']}")
        parts.append(f"log P {line['log_posterior']:.1f}")
        parts.append(f"tables {_format_tables(line.get('tables', {}))}")
        parts.append(f"acc {line.get('acceptance_rate', 1.0):.3f}")
        if "token_f" in line:
            parts.append(f"token F {line['token_f']:.4f}")
        return "  ".join(parts)

    def __call__(self, line: Dict) -> None:
        from ..archive import naming_failed_write

        with naming_failed_write(self.path):
            self.stream.write(json.dumps(line) + "\n")
            self.stream.flush()
        chain, it = int(line.get("chain", 0)), int(line.get("iteration", line.get("minibatch", 0)))
        self.last[chain] = it
        if self.progress is not None:
            self.progress.status = self.stats(line)
            self.progress.update(self.task, completed=sum(self.last.values()), description=self.label)
            return
        every = max(1, self.iterations // 10)
        if it % every == 0 or it == self.iterations or it == 1 or "token_f" in line or "minibatch" in line:
            typer.echo(f"  {self.stats(line)}", err=True)
