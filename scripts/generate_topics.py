"""Generate documents drawn from planted topics, with what was planted.

    python scripts/generate_topics.py assets/synthetic/topics --topics 5 --documents 300 --seed 7

Writes to the output folder:

* ``docs.txt``: one document per line, its words separated by spaces (what the
  ``ag_topics`` component of configs/topics/pipeline-topics.cfg trains on);
* ``planted.json``: ``vocabularies`` (each planted topic's words, most
  probable first), ``dominant_topics`` (each document's planted topic with
  the most tokens) and ``proportions`` (each document's drawn mixture), for
  scripts/evaluate_topics.py.

The corpus is `spacy_ag.synthetic.generate_topic_corpus`: topics with
disjoint vocabularies of made-up words, Zipfian within a topic, and
documents whose mixtures come from a symmetric Dirichlet(``--alpha``).
"""
from __future__ import annotations

import json
from pathlib import Path

import typer

from spacy_ag.archive import write_atomic_file
from spacy_ag.synthetic import generate_topic_corpus


def main(
    output: Path = typer.Argument(..., help="Folder for docs.txt and planted.json"),
    topics: int = typer.Option(5, "--topics", help="Planted topics", min=1),
    documents: int = typer.Option(300, "--documents", help="Documents", min=1),
    words_per_topic: int = typer.Option(40, "--words-per-topic", help="Words of each topic", min=1),
    length: int = typer.Option(40, "--length", help="Mean document length in tokens", min=1),
    alpha: float = typer.Option(0.1, "--alpha", help="Dirichlet prior of the documents' topic mixtures"),
    seed: int = typer.Option(7, "--seed", help="Seed of the corpus"),
) -> None:
    corpus = generate_topic_corpus(topics, documents, words_per_topic=words_per_topic, document_length=length,
                                   alpha=alpha, seed=seed)
    write_atomic_file(output / "docs.txt", "".join(" ".join(d) + "\n" for d in corpus.documents).encode("utf8"))
    planted = {"vocabularies": corpus.vocabularies, "dominant_topics": corpus.dominant_topics(),
               "proportions": [[round(float(p), 6) for p in row] for row in corpus.proportions]}
    write_atomic_file(output / "planted.json", (json.dumps(planted) + "\n").encode("utf8"))
    n_tokens = sum(len(d) for d in corpus.documents)
    typer.echo(f"✔ {documents} documents ({n_tokens} tokens) from {topics} planted topics of {words_per_topic} words "
               f"-> {output}/docs.txt, planted.json")


if __name__ == "__main__":
    typer.run(main)
