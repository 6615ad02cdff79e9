"""The words a morphology model is trained on and applied to.

Morphology is learned from *word types* by default: in running text a few
frequent words (``the``, ``you``) make up most tokens, and a model fitted on
tokens spends its caches on them. Goldwater, Griffiths & Johnson (2006) showed
that types (or a strongly discounted adaptor on tokens) give the better
morphological analyses; ``units = "tokens"`` keeps every occurrence for those
who want [JGG06]'s token setting.

A word file is read line by line: each line's whitespace-separated words
count (a word list has one per line, running text many); in a line with a tab
only the first field counts, so a Morpho Challenge gold file (``word<TAB>
analyses``) gives its words without their analyses.
"""
from __future__ import annotations

import os
from typing import Iterable, List, Sequence, Union

from ..corpus import iter_lines
from ..errors import Errors

__all__ = ["UNITS", "read_words", "word_units"]

UNITS = ("types", "tokens")

PathLike = Union[str, "os.PathLike[str]"]


def word_units(words: Iterable[str], units: str = "types") -> List[str]:
    """Every word (``tokens``) or each distinct word once, in order of first occurrence (``types``)."""
    if units not in UNITS:
        raise ValueError(Errors.E409.format(choices=', '.join(UNITS), units=units))
    words = [w for w in words if w]
    return list(dict.fromkeys(words)) if units == "types" else words


def read_words(paths: Union[PathLike, Sequence[PathLike]], units: str = "types", encoding: str = "auto"
               ) -> List[str]:
    """The words of one or more files (see the module doc), as types or tokens.

    Several files are read in order, so their types are merged (a word in
    two files is one type). Each file is UTF-8 or Latin-1 (`encoding="auto"` tells them apart).
    """
    if isinstance(paths, (str, os.PathLike)):
        paths = [paths]
    words: List[str] = []
    for path in paths:
        for _, text in iter_lines(path, encoding):
            words.extend((text.split("\t", 1)[0] if "\t" in text else text).split())
    return word_units(words, units)
