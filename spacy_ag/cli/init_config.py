"""`spacy-ag init-config`: write a starting spaCy pipeline config, as `spacy init config` does."""
from __future__ import annotations

import shlex
from pathlib import Path
from typing import Optional

import typer

from ..errors import Errors
from ..settings import SegmenterSettings
from . import app
from ._common import PROG, errors_as_lines, good, info


@app.command("init-config")
@errors_as_lines
def init_config_cli(
    output: str = typer.Argument(..., metavar="OUTPUT", help="The config file to write, or - for stdout"),
    lang: Optional[str] = typer.Option(None, "--lang", "-l",
                                       help="spaCy language code (default: zh, or xx with --phonemes)"),
    grammar: str = typer.Option("unigram", "--grammar", "-g", help="unigram, colloc, colloc3 or a grammar file"),
    phonemes: bool = typer.Option(False, "--phonemes",
                                  help="Phoneme strings (Brent): only whitespace is a hard word boundary"),
    iterations: int = typer.Option(SegmenterSettings.iterations, "--iterations", "-n",
                                   help="Sampler iterations ([nlp.tokenizer])"),
    chains: int = typer.Option(SegmenterSettings.chains, "--chains", help="Sampler chains ([nlp.tokenizer])"),
) -> None:
    """Write a complete starting spaCy pipeline config, as `spacy init config` does.

    The config has the segmenter tokenizer with its sampler settings
    ([nlp.tokenizer]), a raw-text corpus ([corpora.train]: plain text, one
    text per line, JSONL or wordseg's formats; docs/input-formats.md) and
    optional gold dev data ([corpora.dev], segmented text). It passes
    `spacy debug config` and trains as is, with spaCy or with spacy-ag:
    spacy-ag train OUTPUT --output DIR --paths.train train.txt
    """
    from ..train.starter_config import init_config_text

    args = [output if output == "-" else Path(output).name]
    if lang is not None:
        args += ["--lang", lang]
    args += ["--grammar", grammar] + (["--phonemes"] if phonemes else [])
    if iterations != SegmenterSettings.iterations:
        args += ["--iterations", str(iterations)]
    if chains != SegmenterSettings.chains:
        args += ["--chains", str(chains)]
    text = init_config_text(lang=lang, grammar=grammar, phonemes=phonemes, iterations=iterations, chains=chains,
                            name=args[0], args=shlex.join(args))
    if output == "-":
        typer.echo(text, nl=False)
        return
    path = Path(output)
    if path.is_dir():
        raise IsADirectoryError(Errors.E464.format(path=path))
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(text, encoding="utf8")
    good(f"Wrote {path}", err=True)
    info(f"Train it: {PROG} train {path} --output training --paths.train train.txt [--paths.dev dev.txt]",
         err=True)
