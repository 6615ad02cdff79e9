"""`spacy-ag evaluate`: score a segmentation file, or a trained pipeline, against gold words."""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import typer

from . import app
from ._common import _errors_as_lines, _require_file, good, info


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
    """Token, boundary and type precision/recall/F of PRED against GOLD (docs/algorithms.md 5.2).

    With a pipeline directory as PRED (e.g. OUTPUT/model-last of `spacy-ag
    train`), GOLD's text is segmented by the pipeline and scored with
    nlp.evaluate: token, boundary and lexicon P/R/F, everything `spacy
    evaluate` leaves out. With a model directory as PRED (OUTPUT/model of
    `spacy-ag train`), GOLD's text is segmented by the model (most probable
    parse) and the held-out log likelihood of GOLD's text (docs/algorithms.md
    4.15) is reported too.
    """
    from ..corpus import DEFAULT_PUNCTUATION
    from ..evaluation import evaluate_files, format_scores

    from ..archive import is_archive

    if pred.is_dir() and is_archive(pred):
        _evaluate_model(pred, gold, json_path, no_punct, drop_empty)
        return
    if pred.is_dir():
        from ..train.pipeline import evaluate_pipeline, format_pipeline_scores

        scores = evaluate_pipeline(pred, gold, exclude=DEFAULT_PUNCTUATION if no_punct else None)
        info(f"Pipeline {pred} on {gold} ({scores['n_examples']} examples):")
        typer.echo(format_pipeline_scores(scores))
        if no_punct:
            typer.echo("without punctuation tokens:")
            typer.echo(format_pipeline_scores(scores["without_punctuation"]))
        _write_json(json_path, scores)
        return
    _require_file(pred, "prediction file")
    _require_file(gold, "gold file")
    scores = evaluate_files(pred, gold, drop_empty=drop_empty)
    typer.echo(format_scores(scores))
    if no_punct:
        scores["without_punctuation"] = evaluate_files(pred, gold, DEFAULT_PUNCTUATION, drop_empty=drop_empty)
        typer.echo("without punctuation tokens:")
        typer.echo(format_scores(scores["without_punctuation"]))
    _write_json(json_path, scores)


def _evaluate_model(model_dir: Path, gold: Path, json_path: Optional[Path], no_punct: bool,
                    drop_empty: bool) -> None:
    from ..corpus import DEFAULT_PUNCTUATION
    from ..evaluation import format_scores, read_segmented, segmentation_scores
    from ..model import AdaptorGrammar

    _require_file(gold, "gold file")
    model = AdaptorGrammar.load(model_dir)
    gold_words = read_segmented(gold)
    if drop_empty:
        gold_words = [w for w in gold_words if w]
    texts = ["".join(words) for words in gold_words]
    pred = model.segment(texts)
    scores = segmentation_scores(pred, gold_words)
    scores.update(model.heldout_loglik(texts))
    info(f"Model {model_dir} ({model.inference}) on the text of {gold}:")
    typer.echo(format_scores(scores))
    typer.echo(f"held-out log likelihood {scores['heldout_loglik']:.1f} over {scores['heldout_sentences']} "
               f"chunks ({scores['heldout_unparseable']} without a parse)")
    if no_punct:
        scores["without_punctuation"] = segmentation_scores(pred, gold_words, exclude=DEFAULT_PUNCTUATION)
        typer.echo("without punctuation tokens:")
        typer.echo(format_scores(scores["without_punctuation"]))
    _write_json(json_path, scores)


def _write_json(path: Optional[Path], scores) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf8")
    good(f"Scores written to {path}", err=True)
