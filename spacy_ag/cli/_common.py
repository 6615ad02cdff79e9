"""What every `spacy-ag` command shares: one-line messages, the error policy, input checks, progress.

The error policy lives here so that every command fails the same way: one
``✘ [code] <message>`` line on stderr and exit code 1 (130 when interrupted by
Ctrl-C, 143 by SIGTERM: 128 + the signal), or a Python traceback with
``SPACY_AG_DEBUG=1``.
"""
from __future__ import annotations

import functools
import os
import signal
import sys
from pathlib import Path
from typing import Dict, Optional, Sequence, Tuple

import typer

from ..errors import Errors, OutputWriteError, SpacyAgError, coded
from ..train.progress import TraceLog, TrainingStopped, fail, good, info, warn  # noqa: F401 (shared by commands)

PROG = "spacy-ag"
DEBUG_ENV = "SPACY_AG_DEBUG"
OVERRIDES_HELP = ("Config overrides such as --paths.train file.txt and --training.iterations 100 (engine configs) "
                  "or --nlp.tokenizer.iterations 100 (pipeline configs)")
#: Codes of errors that are not spacy-ag's own: bad input or arguments, the system, a bug.
INPUT_ERROR, SYSTEM_ERROR, INTERNAL_ERROR = "E900", "E901", "E999"


def _interrupted_code(err: BaseException) -> int:
    """128 + the signal that stopped the command (SIGINT unless the exception says otherwise)."""
    return 128 + int(getattr(err, "signum", None) or signal.SIGINT)


def errors_as_lines(func):
    """Turn expected exceptions of a command into one `✘ [code]` line and exit code 1."""

    @functools.wraps(func)
    def wrapper(*args, **kwargs):
        if os.environ.get(DEBUG_ENV):
            try:
                return func(*args, **kwargs)
            except TrainingStopped as stop:
                warn(stop)
                raise typer.Exit(_interrupted_code(stop))
        try:
            return func(*args, **kwargs)
        except typer.Exit:
            raise
        except BrokenPipeError:  # `spacy-ag segment ... | head`: stop quietly
            _quiet_stdout()
            raise typer.Exit(1)
        except TrainingStopped as stop:
            warn(stop)
            raise typer.Exit(_interrupted_code(stop))
        except KeyboardInterrupt as err:
            code = _interrupted_code(err)
            fail("interrupted" if code == 128 + signal.SIGINT else f"interrupted by {signal.Signals(code - 128).name}")
            raise typer.Exit(code)
        except SpacyAgError as err:
            fail(err.coded_line())
            if isinstance(err, OutputWriteError):
                _quiet_stdout()  # its unwritten buffer would fail once more at exit, a second message
            raise typer.Exit(1)
        except OSError as err:
            from ..archive import full_disk_error

            # the writers of files and stdout name theirs; this is another library's file (spaCy, matplotlib)
            full = full_disk_error(err, err.filename or "an output file (the system does not say which)")
            if full is None:
                fail(coded(SYSTEM_ERROR, str(err) if not err.filename or str(err.filename) in str(err)
                           else f"{err.filename}: {err}"))
                raise typer.Exit(1)
            fail(full.coded_line())
            _quiet_stdout()  # its unwritten buffer would fail once more at exit, a second message
            raise typer.Exit(1)
        except (ValueError, RuntimeError, KeyError) as err:
            fail(coded(INPUT_ERROR, str(err) if not isinstance(err, KeyError) else f"unknown name {err}"))
            raise typer.Exit(1)
        except Exception as err:  # a bug: still one line, with a way to see the traceback
            fail(coded(INTERNAL_ERROR, f"internal error ({type(err).__name__}: {err}); rerun with {DEBUG_ENV}=1 "
                                       "for details"))
            raise typer.Exit(1)

    return wrapper


def _quiet_stdout() -> None:
    """Send what is left for stdout to /dev/null: stdout cannot take it (a closed pipe, a full disk), and its
    buffer, flushed again at exit, would print a second error."""
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
    except (OSError, ValueError, AttributeError):
        # no file descriptor: an in-memory stream (a test's captured stdout), which has no buffer to fail
        # at exit; replacing it would drop the last reference to it, and its wrapper would close it
        pass


def require_input_file(path: Path, what: str, stream_ok: bool = False) -> Path:
    """`path` exists and is not a directory; unless `stream_ok` (a command that reads it once, from start
    to end), it must be a regular file: a pipe or /dev/stdin fed by one is refused (E201) rather than read
    empty the second time."""
    from ..train.inputs import stream_kind

    if not path.exists():
        raise FileNotFoundError(Errors.E526.format(what=what, path=path))
    if path.is_dir():
        raise IsADirectoryError(Errors.E527.format(what=what, path=path))
    kind = stream_kind(path)
    if kind is not None and not stream_ok:
        raise SpacyAgError(Errors.E201.format(path=path, what=what, kind=kind))
    return path


#: The spacy-ag components of a pipeline directory whose model a command uses, the first found wins
#: (`resolve_model_dir`), and how the command's error line names them.
SEGMENTER_MODEL = (("segmenter",), "segmenter (spacy-ag.Segmenter.v1 tokenizer)")
PARSER_MODEL = (("parser", "segmenter"), "ag_parser or segmenter")
TOPIC_MODEL = (("topics",), "ag_topics component")


def model_archive(path: Path) -> Optional[Path]:
    """`path` if it is a model archive directory, its model/ if it is the output of a training run, else None."""
    from ..archive import is_archive

    if is_archive(path):
        return path
    if is_archive(path / "model"):
        return path / "model"
    return None


def resolve_model_dir(path: Path, wanted: Tuple[Sequence[str], str]) -> Path:
    """The model archive a MODEL argument names, for every command that takes one.

    MODEL is the archive directory itself, the output directory of an engine or
    topic training run (its model/), or a pipeline directory (model-last of a
    pipeline run), whose fitted spacy-ag components are found by their saved
    settings (`spacy_ag.components.serialization.saved_components`): the first
    of the kinds in `wanted` (e.g. `SEGMENTER_MODEL`) is used.
    """
    from ..components.serialization import check_saved_pipeline, saved_components
    from ..errors import ModelFileError

    kinds, components = wanted
    if not path.exists():
        raise ModelFileError(Errors.E060.format(path=path))
    archive = model_archive(path)
    if archive is not None:
        return archive
    check_saved_pipeline(path)
    by_kind: Dict[str, Path] = {}
    for _, kind, model_dir in saved_components(path):
        by_kind.setdefault(kind, model_dir)
    for kind in kinds:
        if kind in by_kind:
            return by_kind[kind]
    raise ModelFileError(Errors.E153.format(path=path, components=components))


def checked_choice(value: str, options: Sequence[str], option: str) -> str:
    if value not in options:
        raise ValueError(Errors.E528.format(option=option, choices=", ".join(options), value=value))
    return value
