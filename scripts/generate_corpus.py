"""Generate a gold-segmented corpus with a known answer (the project's default, offline corpus).

    python scripts/generate_corpus.py assets/synthetic/gold.txt --words 50 --utterances 1000 --seed 7
    python scripts/generate_corpus.py /tmp/big/gold.txt --words 3000 --chars 10000000 --seed 7

Writes one utterance per line, words separated by single spaces (the format of
Brent's br-phono.txt), drawn by `spacy_ag.synthetic` from a made-up lexicon with
Zipfian word frequencies. `scripts/preprocess.py` turns it into training and
dev data like any other corpus. `--chars N` writes utterances until their words
hold N characters instead, line by line as they are drawn (any size, in the
memory of one block: the streaming benchmark's corpus).
"""
from __future__ import annotations

from pathlib import Path

import typer

from spacy_ag.synthetic import generate_corpus, iter_corpus, make_lexicon, write_gold


def main(
    output: Path = typer.Argument(..., help="Gold file to write"),
    words: int = typer.Option(50, "--words", help="Lexicon size"),
    utterances: int = typer.Option(1000, "--utterances", help="Number of utterances"),
    mean_words: float = typer.Option(3.5, "--mean-words", help="Mean words per utterance"),
    alphabet: str = typer.Option("abcdefghijklmnopqrstuvwxyz", "--alphabet", help="Characters of the words"),
    seed: int = typer.Option(7, "--seed", help="Seed of the lexicon and the corpus"),
    chars: int = typer.Option(0, "--chars", help="Write utterances lazily until their words hold this many "
                                                 "characters (0: --utterances utterances)"),
) -> None:
    lexicon = make_lexicon(words, alphabet=alphabet, seed=seed)
    output.parent.mkdir(parents=True, exist_ok=True)
    if chars:
        write_gold(output, iter_corpus(lexicon, chars, mean_words=mean_words, seed=seed + 1))
        typer.echo(f"Generated at least {chars} characters (a lexicon of {len(lexicon)}) in {output}")
        return
    corpus = generate_corpus(lexicon, utterances, mean_words=mean_words, seed=seed + 1)
    write_gold(output, corpus)
    n_words = sum(len(u) for u in corpus)
    typer.echo(f"Generated {len(corpus)} utterances ({n_words} words, a lexicon of {len(lexicon)}) in {output}")


if __name__ == "__main__":
    typer.run(main)
