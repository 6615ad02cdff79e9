"""Corpus reader for gold-segmented text.

``spacy-ag.SegmentedCorpus.v1`` reads a UTF-8 file with one utterance per
line and the gold words separated by whitespace (the br-phono / SIGHAN gold
format) and yields one `Example` per non-blank line:

* reference: the gold words, built with ``spaces=False`` so that its text is
  the unsegmented utterance (the raw text the segmenter sees);
* predicted: ``nlp.make_doc(reference.text)``, the pipeline's own tokenization.

Use it for ``[corpora.dev]`` so that ``nlp.evaluate`` and the training loop
score segmentation; as ``[corpora.train]`` the segmenter and ag_parser only
read the examples' raw text, so the gold words are ignored there.

``path = null`` is an empty corpus (no examples): a config can leave its gold
dev data optional (``path = ${paths.dev}`` with ``dev = null``), and
``spacy-ag train`` then skips the evaluation.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator, Optional, Union

from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

from ..corpus import iter_lines

__all__ = ["SegmentedCorpus", "create_segmented_corpus"]


class SegmentedCorpus:
    """Iterate the Examples of a gold-segmented text file (see the module doc).

    path (str / Path / None): The file; None is an empty corpus.
    limit (int): Read at most this many utterances (0: all).
    """

    def __init__(self, path: Optional[Union[str, os.PathLike]], *, limit: int = 0) -> None:
        self.path = Path(path) if path is not None else None
        self.limit = limit

    def __call__(self, nlp) -> Iterator[Example]:
        if self.path is None:
            return
        if not self.path.exists():
            raise FileNotFoundError(f"spacy-ag.SegmentedCorpus.v1: file not found: {self.path}")
        n = 0
        for _, line in iter_lines(self.path):
            words = line.split()
            if not words:
                continue
            reference = Doc(nlp.vocab, words=words, spaces=[False] * len(words))
            yield Example(nlp.make_doc(reference.text), reference)
            n += 1
            if self.limit and n >= self.limit:
                break


@registry.readers("spacy-ag.SegmentedCorpus.v1")
def create_segmented_corpus(path: Optional[Path], limit: int = 0) -> Callable[..., Iterator[Example]]:
    """Registered reader ``spacy-ag.SegmentedCorpus.v1``.

    path (Optional[Path]): A gold-segmented text file (words separated by
        whitespace); null for an empty corpus.
    limit (int): Read at most this many utterances (0: all).
    RETURNS (Callable[[Language], Iterator[Example]]): The corpus.
    """
    return SegmentedCorpus(path, limit=limit)
