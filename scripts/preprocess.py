"""Turn a corpus folder into training and dev data for the pipeline configs.

    python scripts/preprocess.py assets/brent corpus/brent

The corpus folder holds ``gold.txt`` (one utterance per line, gold words
separated by whitespace: Brent's br-phono.txt, SIGHAN's *_gold.utf8, or the
generated corpus) and, optionally, ``raw.txt`` (the unsegmented text, e.g.
SIGHAN's testing/*.utf8). Without ``raw.txt`` the raw text is the gold text
with the spaces removed. Writes to the output folder:

* ``train.jsonl``: the raw text, one ``{"text": ...}`` per utterance
  (``[corpora.train]``, spacy.JsonlCorpus.v1);
* ``dev.txt``: the gold words, single spaces (``[corpora.dev]``,
  spacy-ag.SegmentedCorpus.v1, and ``spacy-ag evaluate``);
* ``dev.spacy``: the same as a DocBin of gold Docs without spaces, for
  ``spacy evaluate``.

Unsupervised segmentation is scored on the text it was trained on, as in the
literature (Goldwater et al. 2009, Johnson & Goldwater 2009), so dev is the
gold segmentation of the training text.
"""
from __future__ import annotations

from pathlib import Path
from typing import List

import spacy
import srsly
import typer
from spacy.tokens import Doc, DocBin

from spacy_ag.corpus import iter_lines


def read_lines(path: Path) -> List[str]:
    return [text for _, text in iter_lines(path) if text.strip()]


def main(
    source: Path = typer.Argument(..., help="Corpus folder with gold.txt (and optionally raw.txt)"),
    output: Path = typer.Argument(..., help="Output folder"),
) -> None:
    gold_path, raw_path = source / "gold.txt", source / "raw.txt"
    if not gold_path.is_file():
        raise SystemExit(f"✘ {gold_path} not found; run `spacy project assets` (or the generate command) first")
    gold = [line.split() for line in read_lines(gold_path)]
    if raw_path.is_file():
        raw = read_lines(raw_path)
        spelled = ["".join(words) for words in gold]
        if len(raw) != len(gold) or any("".join(r.split()) != s for r, s in zip(raw, spelled)):
            raise SystemExit(f"✘ {raw_path} and {gold_path} do not hold the same text line by line")
    else:
        raw = ["".join(words) for words in gold]
    output.mkdir(parents=True, exist_ok=True)
    srsly.write_jsonl(output / "train.jsonl", ({"text": text} for text in raw))
    with open(output / "dev.txt", "w", encoding="utf8", newline="\n") as f:
        for words in gold:
            f.write(" ".join(words) + "\n")
    vocab = spacy.blank("xx").vocab
    docs = DocBin(attrs=[])
    for words in gold:
        docs.add(Doc(vocab, words=words, spaces=[False] * len(words)))
    docs.to_disk(output / "dev.spacy")
    n_chars = sum(len(text) for text in raw)
    typer.echo(f"✔ {len(raw)} utterances ({n_chars} characters, {sum(map(len, gold))} gold words) -> "
               f"{output}/train.jsonl, dev.txt, dev.spacy")


if __name__ == "__main__":
    typer.run(main)
