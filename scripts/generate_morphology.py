"""Generate a word list of a made-up morphology, with the analyses it was built from.

    python scripts/generate_morphology.py assets/synthetic/morphology --stems 150 --classes 3 --seed 7

Writes to the output folder:

* ``words.txt``: the word types, one per line (what the ``ag_parser``
  component of configs/morphology/pipeline-en.cfg trains on);
* ``gold.txt``: their planted analyses in Morpho Challenge format,
  ``word<TAB>stem suffix`` (alternatives after a comma when two analyses spell
  the same word), for ``spacy-ag evaluate-morph``.

The morphology is `spacy_ag.synthetic.generate_morphology`: random stems,
each in one of ``--classes`` inflection classes with ``--suffixes`` suffixes
each and the bare stem, every stem seen in ``--forms`` of its class's forms.
"""
from __future__ import annotations

from pathlib import Path

import typer

from spacy_ag.archive import write_atomic_file
from spacy_ag.synthetic import generate_morphology


def main(
    output: Path = typer.Argument(..., help="Folder for words.txt and gold.txt"),
    stems: int = typer.Option(150, "--stems", help="Number of stems", min=1),
    classes: int = typer.Option(3, "--classes", help="Inflection classes, each with its own suffixes", min=1),
    suffixes: int = typer.Option(4, "--suffixes", help="Suffixes per class (besides the bare stem)", min=1),
    forms: int = typer.Option(3, "--forms", help="Forms of each stem in the word list", min=2),
    seed: int = typer.Option(7, "--seed", help="Seed of the morphology"),
) -> None:
    morphology = generate_morphology(stems, classes=classes, suffixes_per_class=suffixes, forms_per_stem=forms,
                                     seed=seed)
    write_atomic_file(output / "words.txt", "".join(w + "\n" for w in morphology.words).encode("utf8"))
    write_atomic_file(output / "gold.txt", "".join(line + "\n" for line in morphology.gold_lines()).encode("utf8"))
    n_suffixes = len({s for forms_ in morphology.suffixes for s in forms_ if s})
    typer.echo(f"✔ {len(morphology.words)} words of {stems} stems and {n_suffixes} suffixes in {classes} classes -> "
               f"{output}/words.txt, gold.txt")


if __name__ == "__main__":
    typer.run(main)
