"""`spacy-ag segment` and `spacy-ag parse`: apply a trained model to text, line by line.

Both read INPUT (a file or stdin) in batches, write stdout or a file that only
appears complete, and show a line count on a terminal; the helpers for that are
shared here. What a command does to a batch is its task
(`spacy_ag.annotation.tasks`); a directory INPUT goes to
`spacy_ag.cli.directory`, which applies the same task file by file, here or
on a Ray cluster.
"""
from __future__ import annotations

import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Callable, Iterator, Optional, TextIO, Tuple

import typer

from ..errors import Errors
from ..settings import BACKEND_CHOICES, ray_address_setting
from . import app
from ._common import (
    PARSER_MODEL, SEGMENTER_MODEL, checked_choice, errors_as_lines, require_input_file, good, resolve_model_dir, warn,
)


def _load_model(path: Path, wanted=SEGMENTER_MODEL):
    """The AdaptorGrammar of MODEL: a model directory, a training output holding model/, or a pipeline
    directory's segmenter (`wanted`: for parse, its ag_parser first) (`resolve_model_dir`)."""
    from ..model import AdaptorGrammar

    return AdaptorGrammar.load(resolve_model_dir(path, wanted))


def _input_lines(source: str) -> Iterator[Tuple[int, str]]:
    from ..corpus import iter_lines

    if source == "-":
        for number, raw in enumerate(sys.stdin, 1):
            yield number, raw.rstrip("\n").rstrip("\r")
        return
    path = Path(source)
    require_input_file(path, "input file", stream_ok=True)
    yield from iter_lines(path)


class _Writer:
    """stdout or a file (written to a temporary name, renamed when complete: `PartFile`); on any error,
    a full disk included (one line naming the file), the part written is removed."""

    def __init__(self, path: Optional[Path]):
        self.path = path
        self.file = None

    def __enter__(self) -> TextIO:
        if self.path is None:
            return sys.stdout
        from ..annotation.shards import PartFile
        from ..train.inputs import stream_kind

        if stream_kind(self.path) is not None:  # /dev/stdout, a pipe: written in place, never renamed over
            self.file = PartFile(self.path, None)
        else:
            self.file = PartFile(self.path, self.path.with_name(self.path.name + ".part"))
        return self.file.stream

    def __exit__(self, exc_type, exc, traceback) -> None:
        from ..archive import full_disk_error, naming_failed_write

        if self.file is None:
            if exc_type is None:
                with naming_failed_write("stdout"):
                    sys.stdout.flush()
                return
            error = full_disk_error(exc, "stdout")
            if error is not None:
                raise error from exc
            return
        if exc_type is None:
            try:
                self.file.commit()
            except BaseException:
                self.file.discard()
                raise
            return
        self.file.discard()
        error = full_disk_error(exc, self.path)  # the lines are written to the stream directly: name the file
        if error is not None:
            raise error from exc


@contextmanager
def _line_progress(label: str, enabled: bool):
    """Yield `advance(n_lines)`: a transient spinner with a line count on stderr (terminal only)."""
    if not enabled or not sys.stderr.isatty():
        yield lambda n: None
        return
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.completed} lines"),
                  TimeElapsedColumn(), console=Console(stderr=True), transient=True) as progress:
        task = progress.add_task(label, total=None)
        yield lambda n: progress.advance(task, n)


MODEL_HELP = ("Model directory (OUTPUT/model of train), the training output directory, or a pipeline directory "
              "(e.g. training/model-last)")
BACKEND_HELP = (f"With a directory INPUT: {' or '.join(BACKEND_CHOICES)} (local: this process; ray: a cluster, "
                "after pip install spacy-ag[ray])")
RAY_ADDRESS_HELP = ray_address_setting().metadata["help"]
WORKERS_HELP = "--backend ray: Ray actors, each holding the model (0: one per CPU of the cluster)"
FORCE_HELP = ("With a directory INPUT: rewrite every shard in --output DIR even if shards of another model or "
              "other options are there (without it they are refused; shards of this model and options are "
              "skipped, so an interrupted run resumes)")


def annotate_input(command: str, task, load: Callable[[], object], input_path: str, output: Optional[Path],
              backend: str, ray_address: Optional[str], workers: int, force: bool = False) -> None:
    """Apply `task` to INPUT: a file or stdin into `output` (stdout when None), or a directory into shards.

    `load` gives the model (called after the options are checked). Shared by
    segment, parse and tag-topics (`command`), so that they take the same options.
    """
    checked_choice(backend, BACKEND_CHOICES, "--backend")
    model = load()
    task.check(model)
    if input_path != "-" and Path(input_path).is_dir():
        from .directory import annotate_directory

        annotate_directory(command, task, model, Path(input_path), output, backend, ray_address, workers, force)
        return
    if backend != "local" or workers:
        warn(Errors.W466.format(input_path=input_path))
    from ..corpus import chunked

    warnings = 0
    with _Writer(output) as out, _line_progress(task.label, output is not None) as advance:
        for batch in chunked(_input_lines(input_path), task.batch_size):
            lines, messages = task(model, batch, input_path)
            for line in lines:
                out.write(line + "\n")
            for message in messages:
                warn(message)
            warnings += len(messages)
            advance(len(batch))
    if output is not None:
        good(f"{task.done} written to {output}" + (f" ({warnings} lines without a parse)" if warnings else ""),
             err=True)


@app.command("segment")
@errors_as_lines
def segment_cli(
    model_path: Path = typer.Argument(..., metavar="MODEL", help=MODEL_HELP),
    input_path: str = typer.Argument(..., metavar="INPUT", help="Text file, one utterance per line; - for stdin; "
                                                                "or a directory of such files (with --output DIR)"),
    fmt: str = typer.Option("text", "--format", "-f",
                            help="How INPUT is written: text, or wordseg (wordseg-prep's units separated by spaces, "
                                 "or wordseg's tagged text): the output is then wordseg's segmented text, the "
                                 "units of each word joined, for wordseg-eval or spacy-ag evaluate"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout (a "
                                                                       "directory for a directory INPUT)"),
    category: Optional[str] = typer.Option(None, "--category", "-c",
                                           help="Segmentation category (default: the model's, e.g. Word); several "
                                                "joined by commas, e.g. Word,FuncWord1,FuncWord2,FuncWord3"),
    batch_size: int = typer.Option(1000, "--batch-size", help="Lines segmented per call", min=1),
    level: Optional[str] = typer.Option(None, "--level", "-l",
                                        help="Morph nonterminals, e.g. Stem,Suffix: print each word of a "
                                             "line as its morphs joined by + (walk+ing)"),
    backend: str = typer.Option("local", "--backend", help=BACKEND_HELP),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    workers: int = typer.Option(0, "--workers", help=WORKERS_HELP, min=0),
    force: bool = typer.Option(False, "--force", "-F", help=FORCE_HELP),
) -> None:
    """Segment each line of INPUT into words, printed separated by single spaces.

    With --level (word-internal grammars, e.g. a morphology model trained on a
    word list), each whitespace-separated word of a line is parsed on its own
    and printed as the yields of its outermost nodes at those levels, joined
    by + (Stem also matches the class-indexed Stem_3): `walking` -> `walk+ing`.

    A directory INPUT is segmented file by file into --output DIR, one file of
    the same relative path per input file; files already there are skipped,
    so an interrupted run resumes (--backend ray spreads the lines over a
    cluster). DIR records the model and options that made its files, and a
    run with another model or other options is refused (--force rewrites).

    MODEL may also be a pipeline directory (model-last of a pipeline run):
    its segmenter segments. With --format wordseg, the units of each line
    (wordseg-prep's output, or wordseg's tagged text without its tags) are the
    terminals, and each word is printed as its units joined, as wordseg's
    segmenters write their output (docs/input-formats.md).
    """
    from ..annotation.tasks import SEGMENT_FORMATS, Segment

    checked_choice(fmt, SEGMENT_FORMATS, "--format")
    annotate_input("segment", Segment(category, level, batch_size, fmt), lambda: _load_model(model_path), input_path,
              output, backend, ray_address, workers, force)


@app.command("parse")
@errors_as_lines
def parse_cli(
    model_path: Path = typer.Argument(..., metavar="MODEL", help=MODEL_HELP + "; a pipeline's ag_parser comes "
                                                                             "first, else its segmenter"),
    input_path: str = typer.Argument(..., metavar="INPUT", help="Text file, one sentence per line; - for stdin; "
                                                                "or a directory of such files (with --output DIR)"),
    compact: bool = typer.Option(True, "--compact/--full",
                                 help="Only adapted nodes and the root (py-cfg -C), or every node"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout (a "
                                                                       "directory for a directory INPUT)"),
    backend: str = typer.Option("local", "--backend", help=BACKEND_HELP),
    ray_address: Optional[str] = typer.Option(None, "--ray-address", help=RAY_ADDRESS_HELP),
    workers: int = typer.Option(0, "--workers", help=WORKERS_HELP, min=0),
    svg: Optional[Path] = typer.Option(None, "--svg", help="Also draw every line's tree in this HTML page "
                                                           "(inline SVG, self-contained; a file INPUT)"),
    force: bool = typer.Option(False, "--force", "-F", help=FORCE_HELP),
) -> None:
    """Print the most probable tree of each line of INPUT, bracketed, one per line.

    A line the grammar cannot parse prints `(no parse)` and a warning on stderr.
    A directory INPUT is parsed file by file into --output DIR, as for segment.
    With --svg PAGE.html the trees are also drawn, one picture per line, in
    one self-contained page (docs/pictures.md).
    """
    from ..annotation.tasks import Parse

    task = Parse(compact)
    if svg is not None:
        from ..components.tree_pictures import TreePageTask

        task = TreePageTask(task, svg, input_path)
    annotate_input("parse", task, lambda: _load_model(model_path, PARSER_MODEL), input_path, output, backend,
              ray_address, workers, force)
    if svg is not None:
        good(f"{task.write()} trees drawn in {svg}", err=True)
