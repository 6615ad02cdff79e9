"""`spacy-ag segment` and `spacy-ag parse`: apply a trained model to text, line by line.

Both read INPUT (a file or stdin) in batches, write stdout or a file that only
appears complete, and show a line count on a terminal; the helpers for that are
shared here.
"""
from __future__ import annotations

import os
import sys
from contextlib import contextmanager
from pathlib import Path
from typing import Iterator, List, Optional, TextIO, Tuple

import typer

from . import app
from ._common import _errors_as_lines, _require_file, good, warn


def _model_dir(path: Path) -> Path:
    """Accept the model directory or a training output directory holding model/."""
    from ..archive import is_archive

    if not is_archive(path) and is_archive(path / "model"):
        return path / "model"
    return path


def _load_model(path: Path):
    from ..model import AdaptorGrammar

    if not path.exists():
        raise FileNotFoundError(f"model directory not found: {path}")
    return AdaptorGrammar.load(_model_dir(path))


def _input_lines(source: str) -> Iterator[Tuple[int, str]]:
    from ..corpus import iter_lines

    if source == "-":
        for number, raw in enumerate(sys.stdin, 1):
            yield number, raw.rstrip("\n").rstrip("\r")
        return
    path = Path(source)
    _require_file(path, "input file")
    yield from iter_lines(path)


def _batches(lines: Iterator[Tuple[int, str]], size: int) -> Iterator[List[Tuple[int, str]]]:
    batch: List[Tuple[int, str]] = []
    for item in lines:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class _Writer:
    """stdout or a file (written to a temporary name, renamed when complete)."""

    def __init__(self, path: Optional[Path]):
        self.path = path
        self.tmp = None if path is None else path.with_name(path.name + ".part")
        self.stream: Optional[TextIO] = None

    def __enter__(self) -> TextIO:
        if self.path is None:
            self.stream = sys.stdout
        else:
            if self.path.parent and not self.path.parent.exists():
                self.path.parent.mkdir(parents=True)
            self.stream = open(self.tmp, "w", encoding="utf8", newline="\n")
        return self.stream

    def __exit__(self, exc_type, *rest) -> None:
        if self.path is None:
            self.stream.flush()
            return
        self.stream.close()
        if exc_type is None:
            os.replace(self.tmp, self.path)
        elif self.tmp.exists():
            self.tmp.unlink()


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


@app.command("segment")
@_errors_as_lines
def segment_cli(
    model_path: Path = typer.Argument(..., metavar="MODEL", help="Model directory (OUTPUT/model of train)"),
    input_path: str = typer.Argument(..., metavar="INPUT", help="Text file, one utterance per line; - for stdin"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout"),
    category: Optional[str] = typer.Option(None, "--category", "-c",
                                           help="Segmentation category (default: the model's, e.g. Word); several "
                                                "joined by commas, e.g. Word,FuncWord1,FuncWord2,FuncWord3"),
    batch_size: int = typer.Option(1000, "--batch-size", help="Lines segmented per call", min=1),
    level: Optional[str] = typer.Option(None, "--level", "-l",
                                        help="Morph nonterminals, e.g. Stem,Suffix: print each word of a "
                                             "line as its morphs joined by + (walk+ing)"),
) -> None:
    """Segment each line of INPUT into words, printed separated by single spaces.

    With --level (word-internal grammars, e.g. a morphology model trained on a
    word list), each whitespace-separated word of a line is parsed on its own
    and printed as the yields of its outermost nodes at those levels, joined
    by + (Stem also matches the class-indexed Stem_3): `walking` -> `walk+ing`.
    """
    from ..text_units import check_text

    model = _load_model(model_path)
    if category is not None:
        from ..grammar import check_categories

        check_categories(model.grammar, category, "--category")
    if level is not None:
        _segment_levels(model, input_path, output, level, batch_size)
        return
    with _Writer(output) as out, _line_progress("segmenting", output is not None) as advance:
        for batch in _batches(_input_lines(input_path), batch_size):
            texts = [check_text(text, f"{input_path}:{number}") for number, text in batch]
            for words in model.segment(texts, category):
                out.write(" ".join(words) + "\n")
            advance(len(batch))
    if output is not None:
        good(f"Segmentation written to {output}", err=True)


def _segment_levels(model, input_path: str, output: Optional[Path], level: str, batch_size: int) -> None:
    """`segment --level`: every word of every line as its morphs (`spacy_ag.morphology.analysis`)."""
    from ..morphology.analysis import analyse_words, format_morphs, label_matches, parse_levels

    levels = parse_levels(level)
    unknown = [name for name in levels if not any(label_matches(nt, [name]) for nt in model.grammar.nonterminals)]
    if unknown:
        raise ValueError(f"--level {','.join(unknown)}: not a nonterminal of the model's grammar (nor one with a "
                         f"class index such as {unknown[0]}_1); choose from "
                         + ", ".join(model.grammar.nonterminals))
    with _Writer(output) as out, _line_progress("segmenting", output is not None) as advance:
        for batch in _batches(_input_lines(input_path), batch_size):
            lines = [text.split() for _, text in batch]
            analyses = iter(analyse_words(model, [w for words in lines for w in words], levels))
            for words in lines:
                out.write(" ".join(format_morphs(next(analyses)[0]) for _ in words) + "\n")
            advance(len(batch))
    if output is not None:
        good(f"Analyses written to {output}", err=True)


@app.command("parse")
@_errors_as_lines
def parse_cli(
    model_path: Path = typer.Argument(..., metavar="MODEL", help="Model directory (OUTPUT/model of train)"),
    input_path: str = typer.Argument(..., metavar="INPUT", help="Text file, one sentence per line; - for stdin"),
    compact: bool = typer.Option(True, "--compact/--full",
                                 help="Only adapted nodes and the root (py-cfg -C), or every node"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout"),
) -> None:
    """Print the most probable tree of each line of INPUT, bracketed, one per line.

    A line the grammar cannot parse prints `(no parse)` and a warning on stderr.
    """
    from ..text_units import check_text

    model = _load_model(model_path)
    known = model.compiled.term_index
    failed = 0
    with _Writer(output) as out, _line_progress("parsing", output is not None) as advance:
        for batch in _batches(_input_lines(input_path), 200):
            texts = []
            for number, text in batch:
                texts.append(model._terminals(check_text(text, f"{input_path}:{number}")))
            trees = iter(model.parse([t for t in texts if t]))
            for (number, _), terms in zip(batch, texts):
                if not terms:
                    out.write("\n")
                    continue
                tree = next(trees)
                if tree is None:
                    failed += 1
                    out.write("(no parse)\n")
                    unknown = sorted({t for t in terms if t not in known})
                    why = (f"{len(unknown)} symbol(s) the grammar does not know: "
                           + " ".join(repr(t) for t in unknown[:5])) if unknown else "the grammar has no parse"
                    warn(f"{input_path}:{number}: no parse ({why})")
                else:
                    out.write(tree.bracketed(compact=compact) + "\n")
            advance(len(batch))
    if output is not None:
        good(f"Trees written to {output}" + (f" ({failed} lines without a parse)" if failed else ""), err=True)

