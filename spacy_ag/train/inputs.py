"""The input files of a run, checked before any work: one line naming the file (and the line) that is wrong.

A corpus that is a directory or a stream (a pipe, /dev/stdin: training reads
its files more than once), a JSONL record that is not an object, has no
``text`` or a ``text`` that is not a string would otherwise surface deep in
spaCy's readers or the corpus code as a TypeError or KeyError. Unsegmented
text read as gold words would be scored as garbage (`check_gold_words`).
"""
from __future__ import annotations

import stat
from pathlib import Path
from typing import Iterable, Optional, Sequence, Union

from ..errors import Errors, TrainingLayerError

__all__ = ["check_gold_words", "check_jsonl", "require_file", "stream_kind"]

#: What a path that exists but is neither a regular file nor a directory is, for the line that refuses it.
_STREAM_KINDS = ((stat.S_ISFIFO, "a pipe (FIFO)"),
                 (stat.S_ISCHR, "a character device"), (stat.S_ISSOCK, "a socket"), (stat.S_ISBLK, "a block device"))


def stream_kind(path: Path) -> Optional[str]:
    """What `path` is when it exists but is neither a regular file nor a directory (it can then be read only
    once, or is no text file at all); None otherwise. Links are followed: /dev/stdin redirected from a
    file is that file."""
    try:
        mode = path.stat().st_mode
    except OSError:
        return None
    if stat.S_ISREG(mode) or stat.S_ISDIR(mode):
        return None
    return next((kind for test, kind in _STREAM_KINDS if test(mode)), "not a regular file")


def require_file(file: Path, what: str, config_path: Path) -> None:
    """`file` exists and is a regular file, or a TrainingLayerError that names `what` (e.g. "corpus.path:
    training file"): a directory (E045), a stream (E200: a run reads its files more than once), or missing."""
    if file.is_dir():
        raise TrainingLayerError(Errors.E045.format(path=file, what=what))
    kind = stream_kind(file)
    if kind is not None:
        raise TrainingLayerError(Errors.E200.format(path=file, what=what, kind=kind))
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
