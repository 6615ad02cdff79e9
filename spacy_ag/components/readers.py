"""Corpus readers: gold-segmented text, and raw text that may be left unset.

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

__all__ = ["PlainTextCorpus", "SegmentedCorpus", "create_plain_text_corpus", "create_segmented_corpus"]


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


class PlainTextCorpus:
    """Raw text, one document per non-blank line, tokenized by the pipeline (reference = predicted).

    spaCy's ``spacy.PlainTextCorpus.v1`` refuses ``path = null``, so a config
    whose training text is given on the command line (``--paths.train``)
    would fail ``spacy debug config``; here null is an empty corpus.

    path (str / Path / None): The file; None is an empty corpus.
    min_length, max_length (int): Skip documents with fewer / more tokens (0: no limit).
    """

    def __init__(self, path: Optional[Union[str, os.PathLike]], *, min_length: int = 0, max_length: int = 0) -> None:
        self.path = Path(path) if path is not None else None
        self.min_length = min_length
        self.max_length = max_length

    def __call__(self, nlp) -> Iterator[Example]:
        if self.path is None:
            return
        if not self.path.exists():
            raise FileNotFoundError(f"spacy-ag.PlainTextCorpus.v1: file not found: {self.path}")
        for _, line in iter_lines(self.path):
            if not line.strip():
                continue
            doc = nlp.make_doc(line)
            if (self.min_length and len(doc) < self.min_length) or (self.max_length and len(doc) > self.max_length):
                continue
            yield Example(doc, doc.copy())


@registry.readers("spacy-ag.PlainTextCorpus.v1")
def create_plain_text_corpus(path: Optional[Path], min_length: int = 0,
                             max_length: int = 0) -> Callable[..., Iterator[Example]]:
    """Registered reader ``spacy-ag.PlainTextCorpus.v1`` (see `PlainTextCorpus`)."""
    return PlainTextCorpus(path, min_length=min_length, max_length=max_length)
