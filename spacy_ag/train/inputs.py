"""The input files of a run, checked before any work: one line naming the file (and the line) that is wrong.

A corpus that is a directory, a JSONL record that is not an object, has no
``text`` or a ``text`` that is not a string would otherwise surface deep in
spaCy's readers or the corpus code as a TypeError or KeyError. Unsegmented
text read as gold words would be scored as garbage (`check_gold_words`).
"""
from __future__ import annotations

from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

from ..errors import Errors, TrainingLayerError

__all__ = ["check_gold_words", "check_jsonl", "require_file"]


def require_file(file: Path, what: str, config_path: Path) -> None:
    """`file` exists and is a file, or a TrainingLayerError that names `what` (e.g. "corpus.path: training file")."""
    if file.is_dir():
        raise TrainingLayerError(Errors.E045.format(path=file, what=what))
    if not file.is_file():
        raise TrainingLayerError(Errors.E032.format(path=config_path, what=what, file=file))


def check_jsonl(path: Path, field: str = "text", limit: Optional[int] = None) -> None:
    """Every non-blank line of `path` is a JSON object whose `field` is a string (the first `limit` lines)."""
    from ..input_formats import jsonl_texts

    for _ in jsonl_texts(path, field, limit):
        pass


#: The gold check reads at most this many non-blank lines (a stream's first ones).
GOLD_CHECK_LINES = 10_000
#: Gold words in which at least this share of the lines is one word are unsegmented text: a
#: segmentation corpus has far fewer (Brent 21% of its utterances, PKU's test set 0.1%).
GOLD_SINGLE_WORD_SHARE = 0.95


def check_gold_words(words_per_line: Iterable[Sequence[str]], path: Union[str, Path], *, in_corpus: bool) -> None:
    """Gold words that segment nothing stop the run before it trains: when nearly every line (at least
    `GOLD_SINGLE_WORD_SHARE` of the first `GOLD_CHECK_LINES` non-blank ones) is a single word, the
    file is unsegmented text and every score against it would be garbage. `in_corpus`: the gold
    words are the training file's own (corpus.gold = true, E170), else paths.gold's (E171)."""
    lines = single = 0
    for words in words_per_line:
        if not words:
            continue
        lines += 1
        single += len(words) == 1
        if lines >= GOLD_CHECK_LINES:
            break
    if lines and single >= GOLD_SINGLE_WORD_SHARE * lines:
        template = Errors.E170 if in_corpus else Errors.E171
        raise TrainingLayerError(template.format(path=path, single=single, lines=lines))
