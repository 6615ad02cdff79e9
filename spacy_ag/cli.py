"""The ``spacy-ag`` command line (also ``python -m spacy_ag``).

Commands: ``train`` (config-driven MCMC training, spaCy-style dotted
overrides, checkpoints and ``--resume``; or, given a spaCy pipeline config,
a pipeline directory), ``init-config`` (a starting pipeline config),
``segment`` and ``parse`` (apply a trained model), ``check-grammar``,
``evaluate`` (files or a pipeline) and ``demo`` (a self-contained run on
generated data).

Every expected failure (missing file, bad grammar, bad config, damaged model,
unreadable corpus) prints one line ``✘ <message>`` to stderr and exits with
code 1. Set ``SPACY_AG_DEBUG=1`` to get Python tracebacks instead.

The heavy modules (numba kernels) are imported inside the commands that need
them, so ``--help``, ``check-grammar`` and ``evaluate`` start quickly.
"""
from __future__ import annotations

import functools
import json
import os
import shlex
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Dict, Iterator, List, Optional, Sequence, TextIO, Tuple

import typer

from .config import ConfigError, TrainingConfig, build_model, load_training_config, parse_overrides

app = typer.Typer(
    name="spacy-ag",
    help="Adaptor grammars: train by MCMC, segment and parse text, check grammars, score segmentations.",
    add_completion=False,
    no_args_is_help=True,
    pretty_exceptions_enable=False,
)

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


# ---------------------------------------------------------------- training


def sentence_gold(corpus, gold_utterances: Sequence[Sequence[str]], gold_name: str) -> List[List[str]]:
    """Gold words per parsed sentence (chunk) of `corpus`, from gold words per line.

    The trainer scores its samples sentence by sentence; with ``split_at`` a
    line is several sentences, so the gold words are cut at the chunk edges
    (a gold word that spans a split character is cut there, which only
    affects the running score in the trace, not the final scores). Raises a
    one-line ValueError if the gold file does not spell the training text.
    """
    pieces_per_line = corpus.pieces
    if len(gold_utterances) != len(pieces_per_line):
        raise ValueError(f"{gold_name} has {len(gold_utterances)} lines but {corpus.path} has "
                         f"{len(pieces_per_line)}; the gold file needs one line per training line")
    out: List[Optional[List[str]]] = [None] * len(corpus.sentences)
    for u, (pieces, words) in enumerate(zip(pieces_per_line, gold_utterances)):
        text = "".join(t for piece in pieces for t in piece.terminals)
        spelled = "".join(words)
        if text != spelled:
            line = corpus.utterance_lines[u]
            raise ValueError(f"{gold_name}:{line}: the gold words spell {spelled[:40]!r} but line {line} "
                             f"of {corpus.path} is {text[:40]!r}")
        cuts, pos = set(), 0
        for w in words:
            pos += len(w)
            cuts.add(pos)
        start = 0
        for piece in pieces:
            end = start + sum(len(t) for t in piece.terminals)
            if not piece.boundary:
                chunk_words, current, pos = [], [], start
                for t in piece.terminals:
                    current.append(t)
                    pos += len(t)
                    if pos in cuts or pos == end:
                        chunk_words.append("".join(current))
                        current = []
                out[piece.sentence] = chunk_words
            start = end
    return [w if w is not None else [] for w in out]


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
        chain, it = int(line.get("chain", 0)), int(line["iteration"])
        self.last[chain] = it
        if self.progress is not None:
            self.progress.status = self.stats(line)
            self.progress.update(self.task, completed=sum(self.last.values()), description=self.label)
            return
        every = max(1, self.iterations // 10)
        if it % every == 0 or it == self.iterations or it == 1 or "token_f" in line:
            typer.echo(f"  {self.stats(line)}", err=True)


def _resume_command(config_path: Path, output: Path, extra_args: Sequence[str]) -> str:
    args = [PROG, "train", str(config_path), "--output", str(output)]
    args += [a for a in extra_args if a != "--resume"] + ["--resume"]
    return shlex.join(args)


@dataclass
class TrainingResult:
    model: Any
    output: Path
    segmentation: List[List[str]]
    scores: Optional[Dict[str, Any]]
    config: TrainingConfig


def train_model(config_path: Path, output: Optional[Path] = None, overrides: Optional[Dict[str, Any]] = None,
                *, resume: bool = False, command_args: Sequence[str] = (), show_scores: bool = True,
                interactive: Optional[bool] = None) -> TrainingResult:
    """Train as `spacy-ag train` does and write the output directory.

    OUTPUT/model (the saved AdaptorGrammar), OUTPUT/config.cfg (the filled
    config), OUTPUT/trace.jsonl, OUTPUT/segmentation.txt, OUTPUT/checkpoints/
    and, when gold words are known, OUTPUT/scores.json.
    """
    from .corpus import read_corpus
    from .evaluation import format_scores, read_segmented, segmentation_scores

    config_path = Path(config_path)
    cfg = load_training_config(config_path, overrides or {})
    out = Path(output) if output is not None else cfg.output
    if out is None:
        raise ConfigError(f"{config_path}: no output directory; pass --output DIR or set paths.output")
    if cfg.train_path is None:
        raise ConfigError(f"{config_path}: corpus.path is not set; give the training file with --paths.train FILE")
    if not cfg.train_path.is_file():
        raise ConfigError(f"{config_path}: corpus.path: training file not found: {cfg.train_path}")
    if cfg.gold_path is not None and not cfg.gold_path.is_file():
        raise ConfigError(f"{config_path}: paths.gold: gold file not found: {cfg.gold_path}")
    if not cfg.grammar_path.is_file():
        raise ConfigError(f"{config_path}: grammar.path: grammar file not found: {cfg.grammar_path}")
    if out.exists() and not out.is_dir():
        raise ConfigError(f"output {out} exists and is not a directory")
    checkpoints = out / "checkpoints"
    if resume and not list(checkpoints.glob("chain-*.npz")):
        raise ValueError(f"--resume: no checkpoints in {checkpoints}; train without --resume to start a new run")

    model = build_model(cfg)
    corpus = read_corpus(cfg.train_path, mode=cfg.mode, gold=cfg.corpus_gold, split_at=cfg.split_at)
    if not len(corpus):
        raise ValueError(f"{cfg.train_path}: no text to train on")
    gold_utterances, gold_name = None, None
    if cfg.gold_path is not None:
        gold_utterances, gold_name = read_segmented(cfg.gold_path), str(cfg.gold_path)
    elif cfg.corpus_gold:
        gold_utterances, gold_name = corpus.gold_words, str(cfg.train_path)
    gold = sentence_gold(corpus, gold_utterances, gold_name) if gold_utterances is not None else None
    t = cfg.training
    if (t.eval_every or getattr(t, "eval_at", ())) and gold is None:
        warn("training.eval_every/eval_at is set but there are no gold words (paths.gold or corpus.gold); "
             "token F is not traced")

    out.mkdir(parents=True, exist_ok=True)
    saved = cfg.config.copy()
    saved["grammar"]["path"] = str(cfg.grammar_path.resolve())  # the copy lives in another folder
    (out / "config.cfg").write_text(saved.to_str(), encoding="utf8")
    adapted = ", ".join(f"{s} (a={ad.a:g}, b={ad.b:g})" for s, ad in model.grammar.adaptors.items())
    info(f"Grammar {cfg.grammar_path}: start {model.grammar.start}, adapted {adapted or 'none'}")
    info(f"Corpus {cfg.train_path}: {len(corpus.pieces)} lines, {len(corpus)} sentences, "
         f"{sum(len(s) for s in corpus.sentences)} terminals ({cfg.mode})"
         + (f", gold from {gold_name}" if gold_name else ""))
    info(f"{t.iterations} iterations x {t.chains} chain{'s' if t.chains > 1 else ''}, seed {t.seed}"
         + (f", resuming from {checkpoints}" if resume else "") + f"; output {out}")

    if interactive is None:
        interactive = sys.stderr.isatty()
    log = TraceLog(out / "trace.jsonl", t.iterations, t.chains, append=resume, interactive=interactive)
    started = time.time()
    try:
        with log:
            model.fit(corpus, iterations=t.iterations, chains=t.chains, seed=t.seed, burn_in=t.burn_in,
                      sample_every=t.sample_every, callback=log, checkpoint_dir=checkpoints,
                      checkpoint_every=t.checkpoint_every, resume=resume, workers=t.workers,
                      gold=gold, eval_every=t.eval_every if gold is not None else 0,
                      **({"eval_at": t.eval_at} if getattr(t, "eval_at", ()) and gold is not None else {}))
    except KeyboardInterrupt:
        done = ", ".join(f"chain {c} at iteration {i}" for c, i in sorted(log.last.items()))
        # without --resume, checkpoints left by an earlier run must not be offered for resuming
        usable = [p for p in checkpoints.glob("chain-*.npz") if resume or p.stat().st_mtime >= started - 1]
        if usable:
            raise TrainingStopped(f"interrupted{' (' + done + ')' if done else ''}; checkpoints are in "
                                  f"{checkpoints}; continue with: "
                                  f"{_resume_command(config_path, out, command_args)}") from None
        raise TrainingStopped("interrupted before the first checkpoint was written; nothing to resume") from None

    model.save(out / "model")
    trace = sorted(model.trace, key=lambda line: (line["iteration"], line.get("chain", 0)))
    with open(out / "trace.jsonl", "w", encoding="utf8") as f:
        for line in trace:
            f.write(json.dumps(line) + "\n")
    segmentation = model.training_segmentation()
    with open(out / "segmentation.txt", "w", encoding="utf8", newline="\n") as f:
        for words in segmentation:
            f.write(" ".join(words) + "\n")
    scores = None
    if gold_utterances is not None:
        scores = segmentation_scores(segmentation, gold_utterances)
        if cfg.split_at:
            scores["without_punctuation"] = segmentation_scores(segmentation, gold_utterances,
                                                                exclude=cfg.split_at)
        with open(out / "scores.json", "w", encoding="utf8") as f:
            json.dump(scores, f, indent=2)
    good(f"Saved the model to {out / 'model'}")
    info(f"Training segmentation: {out / 'segmentation.txt'}; trace: {out / 'trace.jsonl'}")
    if scores is not None and show_scores:
        info(f"Scores of the training segmentation against {gold_name} ({out / 'scores.json'}):")
        typer.echo(format_scores(scores))
        if "without_punctuation" in scores:
            typer.echo("without punctuation tokens:")
            typer.echo(format_scores(scores["without_punctuation"]))
    return TrainingResult(model, out, segmentation, scores, cfg)


@app.command("train", context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
             epilog=OVERRIDES_HELP)
@_errors_as_lines
def train_cli(
    ctx: typer.Context,
    config_path: Path = typer.Argument(..., metavar="CONFIG", help="Training config (.cfg)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Output directory (default: paths.output of the config)"),
    resume: bool = typer.Option(False, "--resume", help="Continue from OUTPUT/checkpoints (engine configs)"),
    code: Optional[Path] = typer.Option(None, "--code", "-c",
                                        help="Python file with extra registered functions (pipeline configs)"),
) -> None:
    """Train an adaptor grammar, or a spaCy pipeline, from a config file.

    An engine config ([grammar], [corpus], [sampler], [training]) writes
    OUTPUT/model, OUTPUT/trace.jsonl, OUTPUT/segmentation.txt,
    OUTPUT/checkpoints/ and, with gold words, OUTPUT/scores.json. Ctrl-C
    keeps the checkpoints; rerun with --resume to continue.

    A spaCy pipeline config (it has an [nlp] section; see `spacy-ag
    init-config`) is built with spaCy's init_nlp, which fits the segmenter and
    the ag_parser components on the raw text of [corpora.train] with the
    sampler settings of [ag_training]; the pipeline is scored on [corpora.dev]
    if it has gold data. Writes OUTPUT/model-last (a pipeline for spacy.load,
    spacy evaluate and spacy package), OUTPUT/trace.jsonl and OUTPUT/scores.json.
    """
    from .config import is_pipeline_config

    overrides = parse_overrides(ctx.args)
    _require_file(config_path, "config file")
    if code is not None:
        from spacy.util import import_file

        _require_file(code, "--code file")
        import_file("spacy_ag_user_code", code)
    if is_pipeline_config(config_path):
        from .pipeline_training import train_pipeline

        if resume:
            raise ValueError(f"{config_path} is a spaCy pipeline config; --resume works with engine configs only")
        if output is None:
            raise ValueError("pass the output directory with --output DIR")
        train_pipeline(config_path, output, overrides)
        return
    train_model(config_path, output, overrides, resume=resume, command_args=ctx.args)


@app.command("init-config")
@_errors_as_lines
def init_config_cli(
    output: str = typer.Argument(..., metavar="OUTPUT", help="The config file to write, or - for stdout"),
    lang: Optional[str] = typer.Option(None, "--lang", "-l",
                                       help="spaCy language code (default: zh, or xx with --phonemes)"),
    grammar: str = typer.Option("unigram", "--grammar", "-g", help="unigram, colloc or a grammar file"),
    phonemes: bool = typer.Option(False, "--phonemes",
                                  help="Phoneme strings (Brent): only whitespace is a hard word boundary"),
    iterations: int = typer.Option(200, "--iterations", "-n", help="Sampler iterations ([ag_training])"),
    chains: int = typer.Option(1, "--chains", help="Sampler chains ([ag_training])"),
) -> None:
    """Write a starting spaCy pipeline config for `spacy-ag train`, as `spacy init config` does.

    The config has the segmenter tokenizer, a raw-text corpus ([corpora.train],
    JSONL), optional gold dev data ([corpora.dev], segmented text) and the
    sampler settings ([ag_training]); it trains as is:
    spacy-ag train OUTPUT --output DIR --paths.train train.jsonl
    """
    from .pipeline_training import init_config_text

    args = [output if output == "-" else Path(output).name]
    if lang is not None:
        args += ["--lang", lang]
    args += ["--grammar", grammar] + (["--phonemes"] if phonemes else [])
    if iterations != 200:
        args += ["--iterations", str(iterations)]
    if chains != 1:
        args += ["--chains", str(chains)]
    text = init_config_text(lang=lang, grammar=grammar, phonemes=phonemes, iterations=iterations, chains=chains,
                            name=args[0], args=shlex.join(args))
    if output == "-":
        typer.echo(text, nl=False)
        return
    path = Path(output)
    if path.is_dir():
        raise IsADirectoryError(f"{path} is a directory; give the config file to write")
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf8")
    good(f"Wrote {path}", err=True)
    info(f"Train it: {PROG} train {path} --output training --paths.train train.jsonl [--paths.dev dev.txt]",
         err=True)


# ---------------------------------------------------------------- applying a model


def _model_dir(path: Path) -> Path:
    """Accept the model directory or a training output directory holding model/."""
    if not (path / "state.npz").exists() and (path / "model" / "state.npz").exists():
        return path / "model"
    return path


def _load_model(path: Path):
    from .model import AdaptorGrammar

    if not path.exists():
        raise FileNotFoundError(f"model directory not found: {path}")
    return AdaptorGrammar.load(_model_dir(path))


def _input_lines(source: str) -> Iterator[Tuple[int, str]]:
    from .corpus import iter_lines

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


def _line_progress(source: str, enabled: bool):
    """A transient spinner with a line count on stderr (terminal only)."""
    if not enabled or not sys.stderr.isatty():
        return None
    from rich.console import Console
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    progress = Progress(SpinnerColumn(), TextColumn("{task.description}"), TextColumn("{task.completed} lines"),
                        TimeElapsedColumn(), console=Console(stderr=True), transient=True)
    return progress


@app.command("segment")
@_errors_as_lines
def segment_cli(
    model_path: Path = typer.Argument(..., metavar="MODEL", help="Model directory (OUTPUT/model of train)"),
    input_path: str = typer.Argument(..., metavar="INPUT", help="Text file, one utterance per line; - for stdin"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout"),
    category: Optional[str] = typer.Option(None, "--category", "-c",
                                           help="Segmentation category (default: the model's, e.g. Word)"),
    batch_size: int = typer.Option(1000, "--batch-size", help="Lines segmented per call", min=1),
) -> None:
    """Segment each line of INPUT into words, printed separated by single spaces."""
    model = _load_model(model_path)
    if category is not None and category not in model.grammar.nonterminals:
        raise ValueError(f"--category {category!r} is not a nonterminal of the model's grammar; choose one of "
                         + ", ".join(model.grammar.nonterminals))
    progress = _line_progress("segmenting", output is not None)
    with _Writer(output) as out:
        task = None
        if progress is not None:
            progress.start()
            task = progress.add_task("segmenting", total=None)
        try:
            for batch in _batches(_input_lines(input_path), batch_size):
                texts = [text for _, text in batch]
                for words in model.segment(texts, category):
                    out.write(" ".join(words) + "\n")
                if progress is not None:
                    progress.advance(task, len(batch))
        finally:
            if progress is not None:
                progress.stop()
    if output is not None:
        good(f"Segmentation written to {output}", err=True)


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
    model = _load_model(model_path)
    known = model.compiled.term_index
    progress = _line_progress("parsing", output is not None)
    failed = 0
    with _Writer(output) as out:
        task = None
        if progress is not None:
            progress.start()
            task = progress.add_task("parsing", total=None)
        try:
            for batch in _batches(_input_lines(input_path), 200):
                texts = []
                for _, text in batch:
                    texts.append(text.split() if model.mode == "tokens" else [c for c in text if not c.isspace()])
                trees = model.parse([t for t in texts if t])
                trees_iter = iter(trees)
                for (number, _), terms in zip(batch, texts):
                    if not terms:
                        out.write("\n")
                        continue
                    tree = next(trees_iter)
                    if tree is None:
                        failed += 1
                        out.write("(no parse)\n")
                        unknown = sorted({t for t in terms if t not in known})
                        why = (f"{len(unknown)} symbol(s) the grammar does not know: "
                               + " ".join(repr(t) for t in unknown[:5])) if unknown else "the grammar has no parse"
                        warn(f"{input_path}:{number}: no parse ({why})")
                    else:
                        out.write(tree.bracketed(compact=compact) + "\n")
                if progress is not None:
                    progress.advance(task, len(batch))
        finally:
            if progress is not None:
                progress.stop()
    if output is not None:
        good(f"Trees written to {output}" + (f" ({failed} lines without a parse)" if failed else ""), err=True)


# ---------------------------------------------------------------- grammars


def _number(value: float) -> str:
    return f"{value:g}"


@app.command("check-grammar")
@_errors_as_lines
def check_grammar_cli(
    grammar_path: Path = typer.Argument(..., metavar="GRAMMAR",
                                        help="Grammar file (py-cfg or PyAdaGram), or a training config (.cfg)"),
    corpus: Optional[Path] = typer.Option(None, "--corpus",
                                          help="Check that the grammar covers this corpus (with a config: "
                                               "default corpus.path)"),
    mode: Optional[str] = typer.Option(None, "--mode", help="How the corpus is read: chars (default) or tokens"),
    fmt: Optional[str] = typer.Option(None, "--format", help="auto (default), pycfg or pyadagram"),
    expand: bool = typer.Option(False, "--expand",
                                help="Print the expanded grammar in plain py-cfg format instead of the summary"),
    default_a: Optional[float] = typer.Option(None, "--default-a",
                                              help="a of adapted nonterminals without numbers (py-cfg -a, 0.1)"),
    default_b: Optional[float] = typer.Option(None, "--default-b",
                                              help="b of adapted nonterminals without numbers (py-cfg -b, 1000)"),
    default_weight: Optional[float] = typer.Option(None, "--default-weight",
                                                   help="Weight of rules without one (py-cfg -w, 1)"),
) -> None:
    """Validate a grammar (and its coverage of a corpus) and summarise it.

    Given a training config instead of a grammar, the grammar settings
    (path, format, default a/b/weight, mode, split_at) and the corpus come
    from the config; options given here still win.
    """
    from .corpus import read_corpus
    from .grammar import describe, detect_format, expand_corpus_class, has_corpus_class, read_grammar, write_pycfg
    from .grammar.checks import uncovered_error

    settings = {"fmt": "auto", "mode": "chars", "default_a": 0.1, "default_b": 1000.0, "default_weight": 1.0}
    split_at = None
    if grammar_path.suffix == ".cfg":
        cfg = load_training_config(grammar_path)
        settings = {"fmt": cfg.grammar_format, "mode": cfg.mode, "default_a": cfg.default_a,
                    "default_b": cfg.default_b, "default_weight": cfg.default_weight}
        split_at = cfg.split_at
        if corpus is None and cfg.train_path is not None and cfg.train_path.is_file():
            corpus = cfg.train_path
        grammar_path = cfg.grammar_path
    given = {"fmt": fmt, "mode": mode, "default_a": default_a, "default_b": default_b,
             "default_weight": default_weight}
    settings.update({k: v for k, v in given.items() if v is not None})
    _choice(settings["mode"], ("chars", "tokens"), "--mode")
    _choice(settings["fmt"], ("auto", "pycfg", "pyadagram"), "--format")
    _require_file(grammar_path, "grammar file")
    grammar = read_grammar(grammar_path, fmt=settings["fmt"], default_a=settings["default_a"],
                           default_b=settings["default_b"], default_weight=settings["default_weight"])
    has_class = has_corpus_class(grammar)
    corpus_note = None
    if corpus is not None:
        _require_file(corpus, "corpus file")
        text = read_corpus(corpus, mode=settings["mode"], split_at=split_at)
        alphabet = text.alphabet()
        if has_class:
            grammar = expand_corpus_class(grammar, alphabet)
        known = set(grammar.terminals)
        missing = sorted(((text.first_line_of(t), t) for t in alphabet if t not in known))
        if missing:
            raise uncovered_error(grammar, {t: line for line, t in missing}, str(corpus), settings["mode"])
        unit = "characters" if settings["mode"] == "chars" else "tokens"
        corpus_note = (f"The grammar covers {corpus}: {sum(1 for p in text.pieces if p)} non-empty lines, "
                       f"{len(alphabet)} distinct {unit}")
    if expand:
        typer.echo(write_pycfg(grammar, include_options=True), nl=False)
        return

    summary = describe(grammar)
    shown_fmt = settings["fmt"]
    if shown_fmt == "auto":
        shown_fmt = detect_format(grammar_path.read_text(encoding="utf-8-sig"))
    rows: List[Tuple[str, str]] = [
        ("Start symbol", summary["start"]),
        ("Nonterminals", f"{len(summary['nonterminals'])}: {', '.join(summary['nonterminals'])}"),
        ("Adapted", str(len(summary["adapted"]))),
    ]
    for symbol, params in summary["adapted"].items():
        extra = "".join(f"  {k}={_number(v)}" for k, v in params.items() if k not in ("a", "b"))
        rows.append((f"  {symbol}", f"a={_number(params['a'])}  b={_number(params['b'])}{extra}"))
    terminals = str(summary["terminals"])
    if has_class and corpus is not None:
        terminals += f" ([:corpus:] expanded with the characters of {corpus})"
    elif has_class:
        terminals += " + [:corpus:] (one rule per character of the training corpus)"
    rows.append(("Terminals", terminals))
    rows.append(("Rules", str(summary["rules"])))
    for parent, count in summary["rules_per_parent"].items():
        rows.append((f"  {parent}", f"{count} rule{'s' if count != 1 else ''}"))
    width = max(len(label) for label, _ in rows)
    typer.secho(f"Grammar {grammar_path} ({shown_fmt})", bold=True)
    for label, value in rows:
        typer.echo(f"{label:<{width}}  {value}")
    good("The grammar is valid")
    if corpus_note:
        good(corpus_note)


# ---------------------------------------------------------------- evaluation


@app.command("evaluate")
@_errors_as_lines
def evaluate_cli(
    pred: Path = typer.Argument(..., metavar="PRED",
                                help="Predicted segmentation, one utterance per line; or a trained pipeline directory"),
    gold: Path = typer.Argument(..., metavar="GOLD",
                                help="Gold segmentation, one utterance per line (with a pipeline: or a .spacy DocBin)"),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Also write the scores as JSON"),
    no_punct: bool = typer.Option(False, "--no-punct", help="Also score without punctuation tokens"),
    drop_empty: bool = typer.Option(False, "--drop-empty", help="Ignore blank lines in both files"),
) -> None:
    """Token, boundary and type precision/recall/F of PRED against GOLD (ALGORITHMS.md 5.2).

    With a pipeline directory as PRED (e.g. OUTPUT/model-last of `spacy-ag
    train`), GOLD's text is segmented by the pipeline and scored with
    nlp.evaluate: token, boundary and lexicon P/R/F, everything `spacy
    evaluate` leaves out.
    """
    from .corpus import DEFAULT_PUNCTUATION
    from .evaluation import evaluate_files, format_scores

    if pred.is_dir():
        from .pipeline_training import evaluate_pipeline, format_pipeline_scores

        scores = evaluate_pipeline(pred, gold, exclude=DEFAULT_PUNCTUATION if no_punct else None)
        info(f"Pipeline {pred} on {gold} ({scores['n_examples']} examples):")
        typer.echo(format_pipeline_scores(scores))
        if no_punct:
            typer.echo("without punctuation tokens:")
            typer.echo(format_pipeline_scores(scores["without_punctuation"]))
        if json_path is not None:
            json_path.parent.mkdir(parents=True, exist_ok=True)
            json_path.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf8")
            good(f"Scores written to {json_path}", err=True)
        return
    _require_file(pred, "prediction file")
    _require_file(gold, "gold file")
    scores = evaluate_files(pred, gold, drop_empty=drop_empty)
    typer.echo(format_scores(scores))
    if no_punct:
        scores["without_punctuation"] = evaluate_files(pred, gold, DEFAULT_PUNCTUATION, drop_empty=drop_empty)
        typer.echo("without punctuation tokens:")
        typer.echo(format_scores(scores["without_punctuation"]))
    if json_path is not None:
        json_path.parent.mkdir(parents=True, exist_ok=True)
        json_path.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf8")
        good(f"Scores written to {json_path}", err=True)


# ---------------------------------------------------------------- demo

DEMO_GRAMMAR = """\
# Unigram word segmentation (ALGORITHMS.md 2.1): a sentence is one or more
# words, a word one or more characters. Word has no numbers, so it is adapted
# with [grammar] default_a and default_b of the config.
1 1 Sentence --> Word+
Word --> Char+
1 1 Char --> [:corpus:]
"""

DEMO_CONFIG = """\
# Written by `spacy-ag demo`: unigram segmentation of a generated corpus.
[paths]
train = {train}
gold = {gold}
output = {output}

[grammar]
path = "grammar.lt"
default_a = 0.0001
default_b = 10000
segment_category = "Word"
mode = "chars"

[corpus]
path = ${{paths.train}}
gold = false

[sampler]
collapsed = true
init = "batch"
label_resampling = true

[training]
iterations = {iterations}
chains = {chains}
seed = {seed}
sample_every = 5
checkpoint_every = 50
eval_every = 10
"""


@app.command("demo")
@_errors_as_lines
def demo_cli(
    output: Path = typer.Option(Path("spacy-ag-demo"), "--output", "-o",
                                help="Directory for data, config and model"),
    iterations: int = typer.Option(100, "--iterations", "-n", min=2, help="Sampler iterations"),
    chains: int = typer.Option(1, "--chains", min=1, help="Chains (run in parallel on several cores)"),
    seed: int = typer.Option(0, "--seed", min=0, help="Seed of the sampler (the corpus is fixed)"),
) -> None:
    """Generate a corpus, train a unigram segmenter on it and score it (offline, about a minute)."""
    from .synthetic import generate_corpus, make_lexicon, write_gold, write_raw

    corpus_dir = output / "corpus"
    corpus_dir.mkdir(parents=True, exist_ok=True)
    lexicon = make_lexicon(50, seed=7)
    utterances = generate_corpus(lexicon, 1000, mean_words=3.5, seed=11)
    raw, gold = corpus_dir / "raw.txt", corpus_dir / "gold.txt"
    write_raw(raw, utterances)
    write_gold(gold, utterances)
    (output / "grammar.lt").write_text(DEMO_GRAMMAR, encoding="utf8")
    config_path = output / "config.cfg"
    config_path.write_text(DEMO_CONFIG.format(
        train=json.dumps(str(raw.resolve())), gold=json.dumps(str(gold.resolve())),
        output=json.dumps(str((output / "training").resolve())), iterations=iterations, chains=chains,
        seed=seed), encoding="utf8")
    n_words = sum(len(u) for u in utterances)
    good(f"Generated {len(utterances)} utterances ({n_words} words, a lexicon of {len(lexicon)}) in {corpus_dir}")
    result = train_model(config_path, output / "training", command_args=(), show_scores=True)
    typer.echo("First utterances (predicted | gold):")
    for predicted, words in list(zip(result.segmentation, utterances))[:5]:
        typer.echo(f"  {' '.join(predicted):<40} | {' '.join(words)}")
    model_dir = result.output / "model"
    typer.echo("Next:")
    typer.echo(f"  {PROG} segment {model_dir} {raw}")
    typer.echo(f"  {PROG} parse {model_dir} {raw}")
    typer.echo(f"  {PROG} evaluate {result.output / 'segmentation.txt'} {gold}")
    typer.echo(f"  {PROG} train {config_path} --training.iterations 300")


def main() -> None:  # console entry point alternative to `app`
    app(prog_name=PROG)


if __name__ == "__main__":
    main()
