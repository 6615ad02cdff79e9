"""Corpus readers: gold-segmented text, and raw text (JSONL, plain text, wordseg's formats) that may be left unset.

``spacy-ag.SegmentedCorpus.v1`` reads a UTF-8 file with one utterance per
line and the gold words separated by whitespace (the br-phono / SIGHAN gold
format) and yields one `Example` per non-blank line:

* reference: the gold words, built with ``spaces=False`` so that its text is
  the unsegmented utterance (the raw text the segmenter sees);
* predicted: ``nlp.make_doc(reference.text)``, the pipeline's own tokenization.

Use it for ``[corpora.dev]`` so that ``nlp.evaluate`` and the training loop
score segmentation; as ``[corpora.train]`` the segmenter and ag_parser only
read the examples' raw text, so the gold words are ignored there.

With ``format = "wordseg-tags"`` the gold words are those of wordseg's
tagged text (a word ends at each ``;eword``, `spacy_ag.input_formats`).

``spacy-ag.TextCorpus.v1`` reads the raw training text: JSONL records
``{"text": ...}`` (as ``spacy.JsonlCorpus.v1``), plain text with one text
per line, or wordseg's tagged or prepared text (its units joined: the
segmenter makes every character a terminal), chosen by ``format``;
``"auto"`` (the default) takes JSONL for a .jsonl or .json file, plain text
for a .txt file, and otherwise looks at the first non-blank line.
``spacy-ag.PlainTextCorpus.v1`` is its plain-text case.

Plain and segmented text that holds a ``;eword`` token in its first lines is
wordseg's tagged text read by mistake: the readers stop with one line (E150)
saying which ``format`` reads it.

``path = null`` is an empty corpus (no examples): a config can leave its gold
dev data optional (``path = ${paths.dev}`` with ``dev = null``), and
``spacy-ag train`` then skips the evaluation.
"""
from __future__ import annotations

import os
from pathlib import Path
from typing import Callable, Iterator, Optional, Tuple, Union

from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

from ..corpus import iter_lines
from ..errors import Errors
from ..input_formats import (
    joined_units, jsonl_texts, reject_wordseg_tags, resolve_text_format, wordseg_utterances,
)
from ..settings import UNIT_CHOICES, SegmentedCorpusSettings, TextCorpusSettings, check, keyword_signature

__all__ = ["PlainTextCorpus", "SegmentedCorpus", "TextCorpus", "create_plain_text_corpus",
           "create_segmented_corpus", "create_text_corpus"]


class SegmentedCorpus:
    """Iterate the Examples of a gold-segmented text file (see the module doc).

    path (str / Path / None): The file; None is an empty corpus.
    limit (int): Read at most this many utterances (0: all).
    format (str): "text" (words separated by whitespace) or "wordseg-tags".
    """

    def __init__(self, path: Optional[Union[str, os.PathLike]], *, limit: int = 0, format: str = "text") -> None:
        settings = check(SegmentedCorpusSettings, {"limit": limit, "format": format}, "spacy-ag.SegmentedCorpus.v1")
        self.path = Path(path) if path is not None else None
        self.limit = settings.limit
        self.format = settings.format

    def _gold_words(self) -> Iterator[list]:
        if self.format == "wordseg-tags":
            for _, utterance in wordseg_utterances(self.path, self.format):
                yield utterance.words
            return
        reject_wordseg_tags(self.path, "gold words separated by spaces (spacy-ag.SegmentedCorpus.v1)",
                            'set format = "wordseg-tags" in the reader\'s section (spacy-ag evaluate: '
                            '--gold-format wordseg-tags)')
        for _, line in iter_lines(self.path):
            yield line.split()

    def __call__(self, nlp) -> Iterator[Example]:
        if self.path is None:
            return
        if not self.path.exists():
            raise FileNotFoundError(Errors.E424.format(path=self.path))
        n = 0
        for words in self._gold_words():
            if not words:
                continue
            reference = Doc(nlp.vocab, words=words, spaces=[False] * len(words))
            yield Example(nlp.make_doc(reference.text), reference)
            n += 1
            if self.limit and n >= self.limit:
                break


@registry.readers("spacy-ag.SegmentedCorpus.v1")
def create_segmented_corpus(path: Optional[Path], **settings) -> Callable[..., Iterator[Example]]:
    """Registered reader ``spacy-ag.SegmentedCorpus.v1``; its settings are `SegmentedCorpusSettings`.

    path (Optional[Path]): A gold-segmented text file (words separated by
        whitespace, or wordseg's tagged text with format = "wordseg-tags");
        null for an empty corpus.
    RETURNS (Callable[[Language], Iterator[Example]]): The corpus.
    """
    return SegmentedCorpus(path, **settings)


create_segmented_corpus.__signature__ = keyword_signature(SegmentedCorpusSettings, "path")


def _segmenter_units(nlp) -> str:
    """What a character of the pipeline's segmenter is: the units of its config when it names them
    (graphemes or code points), else graphemes."""
    cfg = getattr(nlp.tokenizer, "cfg", None)
    units = cfg.get("units") if isinstance(cfg, dict) else None
    return units if units in UNIT_CHOICES else UNIT_CHOICES[0]


class TextCorpus:
    """Raw training text, one document per line (reference = predicted; see the module doc).

    spaCy's ``spacy.PlainTextCorpus.v1`` refuses ``path = null``, so a config
    whose training text is given on the command line (``--paths.train``)
    would fail ``spacy debug config``; here null is an empty corpus.

    path (str / Path / None): The file; None is an empty corpus.
    **settings: `TextCorpusSettings` (format, min_length, max_length, limit).
    """

    name = "spacy-ag.TextCorpus.v1"

    def __init__(self, path: Optional[Union[str, os.PathLike]], **settings) -> None:
        self.path = Path(path) if path is not None else None
        self.settings = check(TextCorpusSettings, settings, self.name)

    #: How to read wordseg's tagged text instead (the line of E150).
    tags_fix = 'set format = "wordseg-tags" in the reader\'s section (e.g. --corpora.train.format wordseg-tags)'

    @property
    def format(self) -> str:
        """The format the file is read in ("auto" resolved by the file's name or first line)."""
        return resolve_text_format(self.path, self.settings.format)

    def texts(self, nlp) -> Iterator[Tuple[int, str]]:
        """``(line number, text)`` of every document of the file, blank lines skipped."""
        fmt = self.format
        if fmt == "jsonl":
            yield from jsonl_texts(self.path)
            return
        if fmt == "text":
            reject_wordseg_tags(self.path, f"plain text ({self.name})", self.tags_fix)
            for number, line in iter_lines(self.path):
                if line.strip():
                    yield number, line
            return
        units = _segmenter_units(nlp)
        for number, utterance in wordseg_utterances(self.path, fmt):
            if utterance.units:
                yield number, joined_units(utterance.units, units, self.path, number, "the pipeline segmenter",
                                           "train an engine config with grammar.mode = \"tokens\" and "
                                           f"corpus.format = \"{fmt}\" instead")

    def __call__(self, nlp) -> Iterator[Example]:
        if self.path is None:
            return
        if not self.path.exists():
            raise FileNotFoundError(Errors.E425.format(name=self.name, path=self.path))
        s = self.settings
        n = 0
        for _, text in self.texts(nlp):
            doc = nlp.make_doc(text)
            if (s.min_length and len(doc) < s.min_length) or (s.max_length and len(doc) > s.max_length):
                continue
            yield Example(doc, doc.copy())
            n += 1
            if s.limit and n >= s.limit:
                break


@registry.readers("spacy-ag.TextCorpus.v1")
def create_text_corpus(path: Optional[Path], **settings) -> Callable[..., Iterator[Example]]:
    """Registered reader ``spacy-ag.TextCorpus.v1``; its settings are `TextCorpusSettings`.

    path (Optional[Path]): JSONL, plain text or wordseg's tagged or prepared
        text (see `TextCorpus`); null for an empty corpus.
    RETURNS (Callable[[Language], Iterator[Example]]): The corpus.
    """
    return TextCorpus(path, **settings)


create_text_corpus.__signature__ = keyword_signature(TextCorpusSettings, "path")


class PlainTextCorpus(TextCorpus):
    """Plain text, one document per non-blank line: `TextCorpus` with ``format = "text"``.

    path (str / Path / None): The file; None is an empty corpus.
    min_length, max_length (int): Skip documents with fewer / more tokens (0: no limit).
    """

    name = "spacy-ag.PlainTextCorpus.v1"
    tags_fix = 'read it with @readers = "spacy-ag.TextCorpus.v1" and format = "wordseg-tags"'

    def __init__(self, path: Optional[Union[str, os.PathLike]], *, min_length: int = 0, max_length: int = 0) -> None:
        super().__init__(path, format="text", min_length=min_length, max_length=max_length)


@registry.readers("spacy-ag.PlainTextCorpus.v1")
def create_plain_text_corpus(path: Optional[Path], min_length: int = 0,
                             max_length: int = 0) -> Callable[..., Iterator[Example]]:
    """Registered reader ``spacy-ag.PlainTextCorpus.v1`` (see `PlainTextCorpus`)."""
    return PlainTextCorpus(path, min_length=min_length, max_length=max_length)
