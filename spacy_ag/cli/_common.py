"""What every `spacy-ag` command shares: one-line messages, the error policy, input checks, progress.

The error policy lives here so that every command fails the same way: one
``✘ <message>`` line on stderr and exit code 1 (130 when interrupted), or a
Python traceback with ``SPACY_AG_DEBUG=1``. ``TraceLog`` is here rather than
in ``train`` because the spaCy pipeline training (``spacy_ag.pipeline_training``)
shows its sampler progress the same way.
"""
from __future__ import annotations

import functools
import json
import os
import sys
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Optional, Sequence, TextIO

import typer

PROG = "spacy-ag"
DEBUG_ENV = "SPACY_AG_DEBUG"
OVERRIDES_HELP = "Config overrides such as --training.iterations 100 --paths.train file.txt"


# ---------------------------------------------------------------- messages


def _one_line(message: Any) -> str:
    return " ".join(str(message).split()) or "error"


def fail(message: Any) -> None:
    typer.secho(f"✘ {_one_line(message)}", err=True, fg=typer.colors.RED)


def warn(message: Any) -> None:
    typer.secho(f"⚠ {_one_line(message)}", err=True, fg=typer.colors.YELLOW)


def info(message: Any, *, err: bool = False) -> None:
    typer.secho(f"ℹ {message}", err=err, fg=typer.colors.BLUE if not err else None)


def good(message: Any, *, err: bool = False) -> None:
    typer.secho(f"✔ {message}", err=err, fg=typer.colors.GREEN)


class TrainingStopped(Exception):
    """Training was interrupted (Ctrl-C); the message says how to resume."""


def _errors_as_lines(func):
    """Turn expected exceptions of a command into one `✘` line and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if os.environ.get(DEBUG_ENV):
            try:
                return func(*args, **kwargs)
            except TrainingStopped as stop:
                warn(stop)
                raise typer.Exit(130)
        try:
            return func(*args, **kwargs)
        except typer.Exit:
            raise
        except BrokenPipeError:  # `spacy-ag segment ... | head`: stop quietly
            try:
                sys.stdout = open(os.devnull, "w")
            except OSError:
                pass
            raise typer.Exit(1)
        except TrainingStopped as stop:
            warn(stop)
            raise typer.Exit(130)
        except KeyboardInterrupt:
            fail("interrupted")
            raise typer.Exit(130)
        except (ValueError, OSError, RuntimeError, KeyError) as err:
            # ConfigError, GrammarError, ModelFileError and corpus errors are ValueErrors.
            message = str(err) if not isinstance(err, KeyError) else f"unknown name {err}"
            if isinstance(err, OSError) and err.filename and str(err.filename) not in message:
                message = f"{err.filename}: {message}"
            fail(message)
            raise typer.Exit(1)
        except Exception as err:  # a bug: still one line, with a way to see the traceback
            fail(f"internal error ({type(err).__name__}: {err}); rerun with {DEBUG_ENV}=1 for details")
            raise typer.Exit(1)

    return wrapper


def _require_file(path: Path, what: str) -> Path:
    if not path.exists():
        raise FileNotFoundError(f"{what} not found: {path}")
    if path.is_dir():
        raise IsADirectoryError(f"{what} {path} is a directory, expected a file")
    return path


def _choice(value: str, options: Sequence[str], option: str) -> str:
    if value not in options:
        raise ValueError(f"{option} must be one of {', '.join(options)}, got {value!r}")
    return value



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
        self.path.parent.mkdir(parents=True, exist_ok=True)
        self.stream = open(self.path, "a" if self.append else "w", encoding="utf8")
        if self.interactive:
            self.progress = _progress_with_status()
            self.progress.start()
            self.task = self.progress.add_task(f"{self.label}: initializing", total=self.iterations * self.chains)
        return self

    def __exit__(self, *exc) -> None:
        if self.progress is not None:
            self.progress.stop()
        if self.stream is not None:
            self.stream.close()

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
