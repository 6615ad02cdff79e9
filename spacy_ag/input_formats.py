"""The files of utterances spacy-ag reads besides segmented text, and how each becomes training text.

docs/input-formats.md lists every format and where it is accepted. Here:

* **JSONL**: one ``{"text": ...}`` record per line (`jsonl_texts`), the raw
  text of spaCy's ``spacy.JsonlCorpus.v1``;
* **plain text**: one text per line, blank lines skipped;
* **wordseg's tagged text** (``wordseg-tags``): every unit (a phone) followed
  by a space, and the tokens ``;esyll`` and ``;eword`` after the last unit of
  each syllable and word, e.g. ``y u ;esyll ;eword w a n t ;esyll ;eword``.
  The units are the terminals and the ``;eword`` tags give the gold words,
  each its units joined (``yu want``), as ``wordseg-prep --gold`` writes
  them. Syllable tags are dropped: no grammar here can take syllable
  boundaries as given (a syllable grammar learns its own);
* **wordseg's prepared text** (``wordseg-prepared``): the output of
  ``wordseg-prep``, the units separated by spaces and no word boundaries
  (``y u w a n t``).

A unit of wordseg's formats may be several characters (``hh``, ``aː``). A
reader that makes every character a terminal (an engine config with
``grammar.mode = "chars"``, the pipeline segmenter) reads the units joined
(``yuwant``), so a unit of several characters is refused there (E152):
with ``grammar.mode = "tokens"`` every unit stays one terminal.

wordseg's tagged text read as plain or segmented text would train without a
complaint, with ``;eword`` as phonemes; `reject_wordseg_tags` finds a
``;eword`` token in the first `SNIFF_LINES` lines of such a file and stops
with one line (E150) naming the setting that reads it as tags.
"""
from __future__ import annotations

import json
import os
from pathlib import Path
from typing import Any, Callable, Dict, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from .corpus import iter_lines
from .errors import Errors, TextError, TrainingLayerError
from .settings import GOLD_FORMATS, TEXT_CORPUS_FORMATS
from .text_units import terminals

__all__ = [
    "SNIFF_LINES",
    "SYLLABLE_TAG",
    "WORD_TAG",
    "WordsegUtterance",
    "find_wordseg_tags",
    "has_wordseg_tags",
    "jsonl_texts",
    "joined_units",
    "parse_wordseg_line",
    "read_gold_words",
    "reject_wordseg_tags",
    "resolve_text_format",
    "wordseg_units",
    "wordseg_utterances",
]

PathLike = Union[str, "os.PathLike[str]"]

#: wordseg's default word and syllable separators (its ``-w`` and ``-s`` options).
WORD_TAG = ";eword"
SYLLABLE_TAG = ";esyll"
TAGS = frozenset((WORD_TAG, SYLLABLE_TAG))
#: Lines of a plain or segmented text file searched for a ``;eword`` token before it is read.
SNIFF_LINES = 1000


class WordsegUtterance(NamedTuple):
    """One line of wordseg's tagged or prepared text."""

    units: List[str]
    #: The gold words, each its units joined (tagged text); None for prepared text.
    words: Optional[List[str]]


def has_wordseg_tags(text: str) -> bool:
    """Whether a line holds wordseg's word tag as a token of its own."""
    return WORD_TAG in text and WORD_TAG in text.split()


def wordseg_units(text: str) -> List[str]:
    """The units of a line of tagged or prepared text: its tokens without the tags."""
    return [token for token in text.split() if token not in TAGS]


def parse_wordseg_line(text: str, fmt: str, path: PathLike = "<text>", line: int = 0) -> WordsegUtterance:
    """A line of ``wordseg-tags`` (units and gold words) or ``wordseg-prepared`` (units) text.

    In tagged text a word ends at each ``;eword``; units after the last one
    (a line that does not end with its tag, which wordseg-prep refuses) make
    a last word. Prepared text holds no tags (E151).
    """
    if fmt == "wordseg-prepared":
        units = text.split()
        for token in units:
            if token in TAGS:
                raise TextError(Errors.E151.format(path=path, line=line, tag=token,
                                                   fix='format "wordseg-tags"'))
        return WordsegUtterance(units, None)
    if fmt != "wordseg-tags":
        raise ValueError(Errors.E493.format(fmt=fmt))
    units: List[str] = []
    words: List[str] = []
    word: List[str] = []
    for token in text.split():
        if token == WORD_TAG:
            if word:
                words.append("".join(word))
                word = []
        elif token != SYLLABLE_TAG:
            units.append(token)
            word.append(token)
    if word:
        words.append("".join(word))
    return WordsegUtterance(units, words)


def wordseg_utterances(path: PathLike, fmt: str) -> Iterator[Tuple[int, WordsegUtterance]]:
    """``(line number, utterance)`` of every line of a wordseg file; a blank line is an empty utterance."""
    for number, text in iter_lines(path):
        yield number, parse_wordseg_line(text, fmt, path, number)


def joined_units(units: Sequence[str], units_setting: str, path: PathLike, line: int, reader: str, fix: str) -> str:
    """The units joined into one text, for a reader whose every character is a terminal (`reader`);
    a unit of several characters (`units_setting`: graphemes or code points) is refused (E152)."""
    for unit in units:
        n = len(terminals(unit, units_setting))
        if n != 1:
            raise TextError(Errors.E152.format(path=path, line=line, unit=unit, n=n, reader=reader, fix=fix))
    return "".join(units)


def find_wordseg_tags(path: PathLike, limit: int = SNIFF_LINES) -> Optional[int]:
    """The number of the first of the first `limit` lines of `path` that holds a ``;eword`` token, or None."""
    for number, text in iter_lines(path):
        if number > limit:
            return None
        if has_wordseg_tags(text):
            return number
    return None


def reject_wordseg_tags(path: PathLike, expected: str, fix: str, limit: int = SNIFF_LINES) -> None:
    """Stop with one line (E150) if `path`, read as `expected`, looks like wordseg's tagged text."""
    line = find_wordseg_tags(path, limit)
    if line is not None:
        raise TextError(Errors.E150.format(path=path, line=line, expected=expected, fix=fix))


def json_object_lines(path: PathLike, not_an_object: Callable[[int, str], Exception],
                      limit: Optional[int] = None) -> Iterator[Tuple[int, Dict[str, Any]]]:
    """``(line number, object)`` of every non-blank line of a JSONL file (of the first `limit` lines);
    a line that is not a JSON object stops the reading with ``not_an_object(line number, why)``."""
    for number, line in iter_lines(path):
        if limit is not None and number > limit:
            return
        if not line.strip():
            continue
        try:
            record = json.loads(line)
        except ValueError as err:
            raise not_an_object(number, str(err)) from None
        if not isinstance(record, dict):
            raise not_an_object(number, type(record).__name__)
        yield number, record


def jsonl_texts(path: PathLike, field: str = "text", limit: Optional[int] = None) -> Iterator[Tuple[int, str]]:
    """``(line number, record[field])`` of every non-blank line of a JSONL file (of the first `limit` lines).

    A line that is not a JSON object (E046), without `field` (E047) or whose
    `field` is not a string (E048) stops the reading with one line.
    """
    def not_an_object(number: int, why: str) -> Exception:
        return TrainingLayerError(Errors.E046.format(path=path, line=number, err=why))

    for number, record in json_object_lines(path, not_an_object, limit):
        if field not in record:
            raise TrainingLayerError(Errors.E047.format(path=path, line=number))
        if not isinstance(record[field], str):
            raise TrainingLayerError(Errors.E048.format(path=path, line=number, found=type(record[field]).__name__))
        yield number, record[field]


#: File extensions that decide ``format = "auto"`` without reading the file.
EXTENSION_FORMATS = {".jsonl": "jsonl", ".json": "jsonl", ".txt": "text"}


def resolve_text_format(path: PathLike, fmt: str = "auto") -> str:
    """The format of a raw-text file: `fmt` itself unless "auto"; for "auto", by the extension
    (`EXTENSION_FORMATS`), else "jsonl" when the first non-blank line is a JSON object, else "text"."""
    if fmt not in TEXT_CORPUS_FORMATS:
        raise ValueError(Errors.E494.format(fmt=fmt, formats=', '.join(TEXT_CORPUS_FORMATS)))
    if fmt != "auto":
        return fmt
    by_extension = EXTENSION_FORMATS.get(Path(path).suffix.lower())
    if by_extension is not None:
        return by_extension
    for _, text in iter_lines(path):
        if not text.strip():
            continue
        try:
            return "jsonl" if isinstance(json.loads(text), dict) else "text"
        except ValueError:
            return "text"
    return "text"


def read_gold_words(path: PathLike, fmt: str = "text", *, fix: str) -> List[List[str]]:
    """The gold words of every line of `path` (a blank line: no words).

    ``fmt="text"``: words separated by whitespace (wordseg's gold format),
    after `reject_wordseg_tags` (`fix` says how to read tags instead);
    ``fmt="wordseg-tags"``: the ``;eword`` words.
    """
    from .evaluation import read_segmented

    if fmt not in GOLD_FORMATS:
        raise ValueError(Errors.E495.format(fmt=fmt, formats=', '.join(GOLD_FORMATS)))
    if fmt == "wordseg-tags":
        return [utterance.words or [] for _, utterance in wordseg_utterances(path, fmt)]
    reject_wordseg_tags(path, "gold words separated by spaces", fix)
    return read_segmented(path)

