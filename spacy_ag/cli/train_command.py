"""`spacy-ag train`: the command line of `spacy_ag.train.train` (any config: engine, topics, pipeline)."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import OVERRIDES_HELP, errors_as_lines, require_input_file


@app.command("train", context_settings={"allow_extra_args": True, "ignore_unknown_options": True},
             epilog=OVERRIDES_HELP)
@errors_as_lines
def train_cli(
    ctx: typer.Context,
    config_path: Path = typer.Argument(..., metavar="CONFIG", help="Training config (.cfg)"),
    output: Optional[Path] = typer.Option(None, "--output", "-o",
                                          help="Output directory (default: paths.output of the config)"),
    resume: bool = typer.Option(False, "--resume", help="Continue from OUTPUT/checkpoints (engine and topic configs)"),
    code: Optional[Path] = typer.Option(None, "--code", "-c",
                                        help="Python file with extra registered functions (pipeline configs)"),
    force: bool = typer.Option(False, "--force", "-F",
                               help="Write into an existing OUTPUT that spacy-ag did not write, replacing what "
                                    "training writes there (model/, config.cfg, ...); without it such a folder is "
                                    "refused. A folder of an earlier spacy-ag run needs no --force"),
) -> None:
    """Train an adaptor grammar, or a spaCy pipeline, from a config file.

    An engine config ([grammar], [corpus], [sampler], [training]) writes
    OUTPUT/model, OUTPUT/trace.jsonl, OUTPUT/segmentation.txt,
    OUTPUT/checkpoints/ and, with gold words, OUTPUT/scores.json. Ctrl-C
    keeps the checkpoints; rerun with --resume to continue. A topic config
    ([topics]) trains the same way.

    A spaCy pipeline config (it has an [nlp] section; see `spacy-ag
    init-config`) trains exactly as `python -m spacy train` trains it: the
    segmenter and ag_parser are fitted in initialize with the sampler settings
    of their own config sections ([nlp.tokenizer], [components.NAME]), then
    spaCy's loop runs. spacy-ag adds the sampler's progress, OUTPUT/trace.jsonl
    and OUTPUT/scores.json.

    OUTPUT may be new, empty or the output of an earlier spacy-ag run (it is
    written over, as a rerun); a folder holding anything else is refused in
    one line listing what is there, unless --force.
    """
    from ..config import parse_overrides
    from ..train import train

    overrides = parse_overrides(ctx.args)
    require_input_file(config_path, "config file")
    if code is not None:
        from spacy.util import import_file

        require_input_file(code, "--code file")
        import_file("spacy_ag_user_code", code)
    train(config_path, output, overrides, resume=resume, command_args=ctx.args, force=force)
