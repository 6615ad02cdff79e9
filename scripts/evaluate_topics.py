"""Score a topic pipeline (the ``ag_topics`` component) against the planted topics of its documents.

    python scripts/evaluate_topics.py training/topics/model-last assets/synthetic/topics/docs.txt \
        assets/synthetic/topics/planted.json --json metrics/topics.json

Every document of DOCS goes through the pipeline; its most probable topic
(the largest of ``doc._.ag_topics``) is compared with its planted dominant
topic by NMI and purity, and the learned topics' top words with the planted
vocabularies by precision@n (`spacy_ag.topics.planted`, where the measures
are defined). The documents are the ones the topics were trained on:
topic models, like unsupervised segmenters, are scored on their own corpus.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

import numpy as np
import spacy
import typer

from spacy_ag.archive import write_atomic_file
from spacy_ag.topics.coherence import read_documents
from spacy_ag.topics.planted import planted_topic_scores


def topic_component(nlp):
    for name in nlp.pipe_names:
        if nlp.get_pipe_meta(name).factory == "ag_topics":
            return nlp.get_pipe(name)
    raise SystemExit(f"✘ the pipeline has no ag_topics component (it has {', '.join(nlp.pipe_names) or 'none'})")


def main(
    model: Path = typer.Argument(..., help="Pipeline directory with an ag_topics component"),
    docs_path: Path = typer.Argument(..., help="The documents, one per line (words separated by spaces)"),
    planted_path: Path = typer.Argument(..., help="planted.json of scripts/generate_topics.py"),
    top: int = typer.Option(10, "--top", help="Top words per learned topic (n of precision@n)", min=1),
    json_path: Optional[Path] = typer.Option(None, "--json", help="Write the scores here"),
) -> None:
    planted = json.loads(planted_path.read_text(encoding="utf8"))
    docs = read_documents(docs_path)
    if len(docs) != len(planted["dominant_topics"]):
        raise SystemExit(f"✘ {docs_path} has {len(docs)} documents but {planted_path} plants topics for "
                         f"{len(planted['dominant_topics'])}; generate both again")
    nlp = spacy.load(model)
    component = topic_component(nlp)
    assigned = [int(np.argmax(doc._.ag_topics)) for doc in nlp.pipe(" ".join(d) for d in docs)]
    top_words = [[w for w, _ in component.model.top_words(k, top)] for k in range(component.model.n_topics)]
    scores = planted_topic_scores(assigned, planted["dominant_topics"], top_words, planted["vocabularies"])
    typer.echo(f"documents: NMI {scores['nmi']:.4f}, purity {scores['purity']:.4f} "
               f"(chance {scores['purity_chance']:.4f}) over {scores['n_documents']} documents")
    typer.echo(f"top {top} words: precision {scores['top_word_precision']:.4f}; {scores['planted_topics_found']} of "
               f"{scores['n_planted_topics']} planted topics found by {scores['n_topics']} learned topics")
    if json_path is not None:
        write_atomic_file(json_path, (json.dumps(scores, indent=1) + "\n").encode("utf8"))
        typer.echo(f"✔ Scores written to {json_path}")


if __name__ == "__main__":
    typer.run(main)
