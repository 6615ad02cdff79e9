"""`spacy-ag evaluate`: score a segmentation file, or a trained pipeline, against gold words.

The scores are wordseg-eval's (`spacy_ag.evaluation`); ``--wordseg`` prints
them as wordseg-eval does, and ``--gold-format wordseg-tags`` reads the gold
words from wordseg's tagged text (docs/input-formats.md).
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import List, Optional, Tuple

import typer

from ..settings import SegmentedCorpusSettings, help_of
from . import app
from ._common import checked_choice, errors_as_lines, good, info, model_archive, require_input_file

#: How PRED, a segmentation file, must be written, for the line that finds wordseg's tags in it.
PRED_TAGS_FIX = ("PRED is a segmentation, words separated by spaces (`spacy-ag segment MODEL INPUT --format wordseg` "
                 "writes one from wordseg's prepared or tagged text)")
GOLD_TAGS_FIX = "read it with --gold-format wordseg-tags"

Numbered = List[Tuple[int, List[str]]]


@app.command("evaluate")
@errors_as_lines
def evaluate_cli(
    pred: Path = typer.Argument(..., metavar="PRED",
                                help="Predicted segmentation, one utterance per line; or a model, training output "
                                     "or trained pipeline directory"),
    gold: Path = typer.Argument(..., metavar="GOLD",
                                help="Gold segmentation, one utterance per line (with a pipeline: or a .spacy DocBin)"),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Also write the scores as JSON"),
    no_punct: bool = typer.Option(False, "--no-punct", help="Also score without punctuation tokens"),
    drop_empty: bool = typer.Option(False, "--drop-empty", help="Ignore blank lines in both files"),
    gold_format: str = typer.Option("text", "--gold-format",
                                    help="How GOLD is written: " + help_of(SegmentedCorpusSettings, "format")),
    wordseg: bool = typer.Option(False, "--wordseg",
                                 help="Print the scores as wordseg-eval does (its names and order, 4 significant "
                                      "digits, None when undefined; blank lines of each file left out, words "
                                      "separated by spaces only)"),
) -> None:
    """Token, boundary and type precision/recall/F of PRED against GOLD (docs/algorithms.md 5.2).

    The definitions are wordseg-eval's: token (a word is right when gold has
    the same span), boundary (wordseg's boundary_noedge: word-internal
    boundaries), boundary_all (the utterance edges counted too) and type (the
    distinct words of the whole text); --wordseg prints the same numbers as
    wordseg-eval prints them.

    With a pipeline directory as PRED (e.g. OUTPUT/model-last of `spacy-ag
    train`), GOLD's text is segmented by the pipeline and scored with
    nlp.evaluate: token, boundary and lexicon P/R/F, everything `spacy
    evaluate` leaves out. With a model directory as PRED (OUTPUT/model of
    `spacy-ag train`, or OUTPUT itself), GOLD's text is segmented by the model
    (most probable parse) and the held-out log likelihood of GOLD's text
    (docs/algorithms.md 4.15) is reported too.
    """
    from ..corpus import DEFAULT_PUNCTUATION
    from ..evaluation import format_scores, format_wordseg_scores, score_numbered, wordseg_scores
    from ..settings import GOLD_FORMATS

    checked_choice(gold_format, GOLD_FORMATS, "--gold-format")
    if pred.is_dir() and model_archive(pred) is not None:
        _evaluate_model(model_archive(pred), gold, json_path, no_punct, drop_empty, gold_format, wordseg)
        return
    if pred.is_dir():
        from ..train.pipeline import evaluate_pipeline, format_pipeline_scores

        scores = evaluate_pipeline(pred, gold, exclude=DEFAULT_PUNCTUATION if no_punct else None,
                                   gold_format=gold_format, wordseg=wordseg)
        info(f"Pipeline {pred} on {gold} ({scores['n_examples']} examples):", err=wordseg)
        if wordseg:
            typer.echo(format_wordseg_scores(scores["wordseg"]))
        else:
            typer.echo(format_pipeline_scores(scores))
        if no_punct:
            typer.echo("without punctuation tokens:")
            typer.echo(format_pipeline_scores(scores["without_punctuation"]))
        write_scores_json(json_path, scores)
        return
    require_input_file(pred, "prediction file")
    require_input_file(gold, "gold file")
    predicted = _predicted_numbered(pred, drop_empty, wordseg)
    gold_words = _gold_numbered(gold, gold_format, drop_empty, wordseg)
    if wordseg:
        scores = wordseg_scores(score_numbered(predicted, gold_words, str(pred), str(gold)))
        typer.echo(format_wordseg_scores(scores))
        write_scores_json(json_path, scores)
        return
    scores = score_numbered(predicted, gold_words, str(pred), str(gold)).scores()
    typer.echo(format_scores(scores))
    if no_punct:
        scores["without_punctuation"] = score_numbered(predicted, gold_words, str(pred), str(gold),
                                                       DEFAULT_PUNCTUATION).scores()
        typer.echo("without punctuation tokens:")
        typer.echo(format_scores(scores["without_punctuation"]))
    write_scores_json(json_path, scores)


def _predicted_numbered(pred: Path, drop_empty: bool, wordseg: bool) -> Numbered:
    """``(line, words)`` of a segmentation file: every line, or as wordseg-eval reads it (`wordseg`)."""
    from ..evaluation import iter_segmented, iter_wordseg_segmented
    from ..input_formats import reject_wordseg_tags

    reject_wordseg_tags(pred, "a segmentation (words separated by spaces)", PRED_TAGS_FIX)
    if wordseg:
        return list(iter_wordseg_segmented(pred))
    return list(iter_segmented(pred, drop_empty=drop_empty))


def _gold_numbered(gold: Path, gold_format: str, drop_empty: bool, wordseg: bool) -> Numbered:
    """``(line, words)`` of GOLD in `gold_format`; with `wordseg` or `drop_empty`, the blank lines left out."""
    from ..evaluation import iter_segmented, iter_wordseg_segmented
    from ..input_formats import reject_wordseg_tags, wordseg_utterances

    if gold_format == "wordseg-tags":
        numbered = [(line, utterance.words or []) for line, utterance in wordseg_utterances(gold, gold_format)]
        return [(line, words) for line, words in numbered if words] if wordseg or drop_empty else numbered
    reject_wordseg_tags(gold, "gold words separated by spaces", GOLD_TAGS_FIX)
    if wordseg:
        return list(iter_wordseg_segmented(gold))
    return list(iter_segmented(gold, drop_empty=drop_empty))


def _evaluate_model(model_dir: Path, gold: Path, json_path: Optional[Path], no_punct: bool,
                    drop_empty: bool, gold_format: str, wordseg: bool) -> None:
    from ..corpus import DEFAULT_PUNCTUATION
    from ..errors import Errors, TextError
    from ..evaluation import (
        SegmentationCounts, format_scores, format_wordseg_scores, segmentation_scores, wordseg_scores,
    )
    from ..input_formats import wordseg_utterances
    from ..model import AdaptorGrammar

    require_input_file(gold, "gold file")
    model = AdaptorGrammar.load(model_dir)
    if gold_format == "wordseg-tags":  # the units are known: the model reads them as its terminals
        utterances = [u for _, u in wordseg_utterances(gold, gold_format)]
        if drop_empty or wordseg:
            utterances = [u for u in utterances if u.units]
        gold_words = [u.words for u in utterances]
        texts = [u.units for u in utterances]
    else:
        if model.mode == "tokens":
            raise TextError(Errors.E154.format(path=model_dir))
        gold_words = [words for _, words in _gold_numbered(gold, gold_format, drop_empty, wordseg)]
        texts = ["".join(words) for words in gold_words]
    pred = model.segment(texts)
    scores = segmentation_scores(pred, gold_words)
    scores.update(model.heldout_loglik(texts))
    info(f"Model {model_dir} ({model.inference}) on the text of {gold}:", err=wordseg)
    if wordseg:
        counts = SegmentationCounts()
        for p, g in zip(pred, gold_words):
            counts.add(p, g)
        scores["wordseg"] = wordseg_scores(counts)
        typer.echo(format_wordseg_scores(scores["wordseg"]))
    else:
        typer.echo(format_scores(scores))
    line = (f"held-out log likelihood {scores['heldout_loglik']:.1f} over {scores['heldout_sentences']} "
            f"chunks ({scores['heldout_unparseable']} without a parse)")
    if wordseg:
        info(line, err=True)
    else:
        typer.echo(line)
    if no_punct:
        scores["without_punctuation"] = segmentation_scores(pred, gold_words, exclude=DEFAULT_PUNCTUATION)
        typer.echo("without punctuation tokens:")
        typer.echo(format_scores(scores["without_punctuation"]))
    write_scores_json(json_path, scores)


def write_scores_json(path: Optional[Path], scores) -> None:
    if path is None:
        return
    path.parent.mkdir(parents=True, exist_ok=True)
    path.write_text(json.dumps(scores, indent=2) + "\n", encoding="utf8")
    good(f"Scores written to {path}", err=True)
