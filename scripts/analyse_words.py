"""Analyse every word of a word list with a trained morphology pipeline (the ``ag_parser`` component).

    python scripts/analyse_words.py training/morphology/model-last assets/synthetic/morphology/gold.txt analyses.txt

Reads the words like `spacy_ag.morphology.read_words` (each line's
whitespace-separated words; of a line with a tab only the first field, so a
Morpho Challenge gold file gives its words) and writes one line per distinct
word, ``word<TAB>morph morph``: the token's ``token._.ag_morphs``, for
``spacy-ag evaluate-morph``. Each word is one token (a Doc of that word), so
the pipeline's tokenizer cannot split it. A word the grammar cannot parse
(a character never seen in training) is written as one morph.
"""
from __future__ import annotations

from pathlib import Path

import spacy
import typer
from spacy.tokens import Doc

from spacy_ag.archive import write_atomic_file
from spacy_ag.morphology import read_words


def main(
    model: Path = typer.Argument(..., help="Pipeline directory with an ag_parser component in token mode"),
    words_path: Path = typer.Argument(..., help="Word list (or Morpho Challenge gold file)"),
    output: Path = typer.Argument(..., help="Analyses to write, word<TAB>morph morph"),
    batch_size: int = typer.Option(1000, "--batch-size", help="Words per batch", min=1),
) -> None:
    nlp = spacy.load(model)
    words = read_words(words_path)
    lines, unparsed = [], 0
    for doc in nlp.pipe((Doc(nlp.vocab, words=[w]) for w in words), batch_size=batch_size):
        morphs = doc[0]._.ag_morphs
        if morphs is None:
            unparsed += 1
            morphs = [doc[0].text]
        lines.append(f"{doc[0].text}\t{' '.join(morphs)}\n")
    write_atomic_file(output, "".join(lines).encode("utf8"))
    typer.echo(f"✔ {len(words)} words analysed -> {output}" + (f" ({unparsed} without a parse)" if unparsed else ""))


if __name__ == "__main__":
    typer.run(main)
