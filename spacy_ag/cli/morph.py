"""`spacy-ag evaluate-morph`: boundary precision, recall and F of morph analyses against a Morpho Challenge gold file."""
from __future__ import annotations

from pathlib import Path
from typing import Optional

import typer

from . import app
from ..errors import Errors
from ._common import errors_as_lines, require_input_file
from .evaluate import write_scores_json


@app.command("evaluate-morph")
@errors_as_lines
def evaluate_morph_cli(
    pred: Path = typer.Argument(..., metavar="PRED",
                                help="Analyses, one word per line: walk+ing (the output of segment --level), "
                                     "walk ing, or walking<TAB>walk ing"),
    gold: Path = typer.Argument(..., metavar="GOLD",
                                help="Gold analyses in Morpho Challenge format: word<TAB>walk:walk_V ing:+PCP1[, ...]"),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Also write the scores as JSON"),
) -> None:
    """Morpho-Challenge-style boundary P/R/F of PRED against GOLD.

    Word-internal boundaries are scored, micro-averaged over the gold words;
    each word counts against its best-matching gold alternative. PRED may
    hold more words than GOLD (only the gold words are scored), but every
    gold word needs an analysis.
    """
    from ..morphology.gold import morph_boundary_scores, read_gold_segmentation, read_predicted_segmentation

    require_input_file(pred, "prediction file")
    require_input_file(gold, "gold file")
    predicted, gold_analyses = read_predicted_segmentation(pred), read_gold_segmentation(gold)
    try:
        scores = morph_boundary_scores(predicted, gold_analyses)
    except ValueError as err:
        raise ValueError(Errors.E465.format(pred=pred, err=err, gold=gold)) from None
    typer.echo(f"{'':<9}  {'P':>6}  {'R':>6}  {'F':>6}")
    typer.echo("boundary   " + "  ".join(f"{scores[f'boundary_{m}']:6.4f}" for m in "prf"))
    typer.echo(f"words {scores['n_words']}, predicted boundaries {scores['n_pred_boundaries']}, gold boundaries "
               f"{scores['n_gold_boundaries']}, correct {scores['n_correct_boundaries']}, "
               f"words exactly right {scores['word_accuracy']:.4f}")
    write_scores_json(json_path, scores)


@app.command("morph-grammar")
@errors_as_lines
def morph_grammar_cli(
    kind: str = typer.Argument(..., metavar="KIND", help="stem-suffix, prefix-stem-suffix, submorphs or "
                                                        "prefix-stem-suffix-submorphs (PrStSu+SM)"),
    classes: int = typer.Option(0, "--classes", "-c", help="Hidden morphological classes (0: none)", min=0),
    a: float = typer.Option(0.0, "-a", help="Pitman-Yor discount of every adapted nonterminal"),
    b: float = typer.Option(500.0, "-b", help="Pitman-Yor concentration of every adapted nonterminal"),
    output: Optional[Path] = typer.Option(None, "--output", "-o", help="Write here instead of stdout"),
) -> None:
    """Print a word-internal morphology grammar (docs/algorithms.md 2.5); defaults a = 0, b = 500 as in [JGG06].

    The files configs/morphology/grammars/*.lt are this command's output, e.g.
    `spacy-ag morph-grammar stem-suffix --classes 6`.
    """
    from ..morphology.grammars import morphology_grammar

    text = morphology_grammar(kind, classes=classes or None, a=a, b=b)
    if output is None:
        typer.echo(text, nl=False)
    else:
        output.write_text(text, encoding="utf8")
