"""Reading training text into sentences of terminals (docs/algorithms.md §1.7.3).

Two input modes exist because the two reference programs disagree on what a
terminal is: py-cfg reads whitespace-separated tokens (``mode="tokens"``),
while word segmentation wants every character to be a terminal and spaces to
mean nothing (``mode="chars"``).  A gold file read with ``gold=True`` yields
both the unsegmented training sentence and its gold words, so one file serves
training and evaluation.

Chinese text is split at punctuation before parsing (§5.2, §6): punctuation
is a hard word boundary, so each run of other characters is parsed on its own
(cheaper, since parsing is cubic in length) and each punctuation character
becomes a one-character word.  `Corpus.pieces` records how a line was cut so
that `Corpus.reassemble` can glue the chunk segmentations back into full lines
for scoring against the gold file.

Line numbers are 1-based source lines and survive skipped blank lines, so
every error can point at the offending line of the user's file.

What a character is comes from `spacy_ag.text_units`: ``units="graphemes"``
(the default) makes every extended grapheme cluster one terminal, so a
letter with combining marks or an emoji sequence is never cut;
``units="codepoints"`` makes every code point one. Control characters (NUL,
ESC, ...) are hard boundaries, like the `split_at` characters, and a lone
surrogate is a one-line `TextError` naming the line.
"""
from __future__ import annotations

import codecs
import os
from dataclasses import dataclass, field
from typing import Dict, Iterable, Iterator, List, NamedTuple, Optional, Sequence, Tuple, Union

from .errors import Errors, TextError
from .text_units import DEFAULT_UNITS, check_text, check_units, is_control, terminals as text_terminals

__all__ = [
    "DEFAULT_PUNCTUATION",
    "Corpus",
    "Piece",
    "chunked",
    "iter_lines",
    "read_corpus",
    "split_chunks",
]

#: Characters treated as hard word boundaries in Chinese (and mixed) text:
#: ASCII punctuation, its full-width forms, and common CJK punctuation.
DEFAULT_PUNCTUATION: frozenset = frozenset(
    ".,;:?!\"'()[]{}-"
    "．，；：？！＂＇（）［］｛｝－"
    "。、“”‘’《》【】〈〉〔〕—…·「」『』"
)

MODES = ("chars", "tokens")


def chunked(items: Iterable, size: int) -> Iterator[List]:
    """Consecutive lists of `size` items of a stream (the last one shorter): minibatches and batches
    without holding more than one of them."""
    batch: List = []
    for item in items:
        batch.append(item)
        if len(batch) == size:
            yield batch
            batch = []
    if batch:
        yield batch


class Piece(NamedTuple):
    """One chunk of a source line.

    ``boundary`` pieces are single split-at terminals that are never parsed
    and always form a word of their own; other pieces are parsed as
    ``Corpus.sentences[sentence]``.
    """

    terminals: Tuple[str, ...]
    boundary: bool
    sentence: int  # index into Corpus.sentences, -1 for boundary pieces


@dataclass
class Corpus:
    """Sentences to parse, with enough bookkeeping to report and reassemble.

    ``sentences[i]`` is a tuple of terminal strings and ``lines[i]`` its
    1-based source line.  ``pieces[u]`` describes source line
    ``utterance_lines[u]`` (blank lines are kept here as empty utterances so
    that output written per utterance lines up with the input file).
    ``gold_words[u]`` holds the gold words of utterance ``u`` when the corpus
    was read with ``gold=True``.  ``units`` says what a terminal of chars mode
    is ("graphemes" or "codepoints"; None for a corpus built by hand).  Treat a
    Corpus as immutable once built: the alphabet index is cached.
    """

    sentences: List[Tuple[str, ...]]
    lines: List[int]
    path: Optional[str] = None
    mode: str = "chars"
    pieces: Optional[List[List[Piece]]] = None
    utterance_lines: Optional[List[int]] = None
    gold_words: Optional[List[List[str]]] = None
    units: Optional[str] = None
    _first_line: Optional[Dict[str, int]] = field(default=None, init=False, repr=False, compare=False)

    def __post_init__(self) -> None:
        if len(self.sentences) != len(self.lines):
            raise ValueError(Errors.E488.format(n_sentences=len(self.sentences), n_lines=len(self.lines)))
        if self.pieces is None:  # built by hand: one utterance per sentence
            self.pieces = [[Piece(tuple(s), False, i)] for i, s in enumerate(self.sentences)]
            self.utterance_lines = list(self.lines)
        elif self.utterance_lines is None or len(self.utterance_lines) != len(self.pieces):
            raise ValueError(Errors.E491)

    def __len__(self) -> int:
        return len(self.sentences)

    def _index(self) -> Dict[str, int]:
        if self._first_line is None:
            first: Dict[str, int] = {}
            for sentence, line in zip(self.sentences, self.lines):
                for t in sentence:
                    if t not in first:
                        first[t] = line
            self._first_line = first
        return self._first_line

    def alphabet(self) -> List[str]:
        """Sorted distinct terminals of the parsed sentences.

        Boundary pieces are excluded: they are never parsed, so the grammar
        need not cover them (pre-terminal rules are generated from this list).
        """
        return sorted(self._index())

    def first_line_of(self, terminal: str) -> Optional[int]:
        """1-based source line where ``terminal`` first occurs (None if never).

        Lets a grammar check say *where* an uncovered character is.
        """
        return self._index().get(terminal)

    def reassemble(self, segmentations: Sequence[Sequence[str]]) -> List[List[str]]:
        """Turn per-sentence word lists into per-utterance word lists.

        ``segmentations[i]`` are the words predicted for ``sentences[i]``;
        their concatenation must equal the sentence's terminals joined.
        Boundary pieces become one-character words, blank lines become empty
        utterances, so the result lines up with ``utterance_lines`` (and with
        ``gold_words``).
        """
        if len(segmentations) != len(self.sentences):
            raise ValueError(Errors.E489.format(n_segmentations=len(segmentations), n_sentences=len(self.sentences)))
        out: List[List[str]] = []
        for pieces in self.pieces:
            words: List[str] = []
            for piece in pieces:
                if piece.boundary:
                    words.append("".join(piece.terminals))
                    continue
                seg = list(segmentations[piece.sentence])
                want = "".join(piece.terminals)
                if "".join(seg) != want:
                    raise ValueError(
                        Errors.E492.format(source=self.path or "<lines>", lines=self.lines[piece.sentence],
                                           segmentation=" ".join(seg), want=want))
                words.extend(seg)
            out.append(words)
        return out


def split_chunks(terminals, boundary_chars) -> List[Tuple[object, bool]]:
    """Cut a string (or sequence of tokens) at hard boundaries.

    Each maximal run of non-boundary items becomes one chunk ``(run, False)``;
    each boundary item becomes its own chunk ``(item, True)``.  Chunks are
    slices of the input (``str`` in, ``str`` pieces out), so joining all
    chunks gives back the input exactly.
    """
    boundary = boundary_chars if isinstance(boundary_chars, (set, frozenset)) else frozenset(boundary_chars)
    chunks: List[Tuple[object, bool]] = []
    start = 0
    for i, x in enumerate(terminals):
        if x in boundary:
            if start < i:
                chunks.append((terminals[start:i], False))
            chunks.append((terminals[i:i + 1], True))
            start = i + 1
    if start < len(terminals):
        chunks.append((terminals[start:], False))
    return chunks


ENCODINGS = ("utf-8", "latin-1", "auto")


def _utf8_or_latin1(f) -> str:
    """"utf-8" if the whole binary file `f` decodes as UTF-8, else "latin-1"; `f` is rewound.

    For files of the 1990s and 2000s such as the Morpho Challenge gold standards (Finnish in
    ISO-8859-1): Latin-1 text with any letter beyond ASCII is almost never valid UTF-8, and every
    byte string is valid Latin-1. Read in blocks, so memory stays flat.
    """
    decoder = codecs.getincrementaldecoder("utf-8")()
    try:
        for block in iter(lambda: f.read(1 << 20), b""):
            decoder.decode(block)
        decoder.decode(b"", final=True)
        encoding = "utf-8"
    except UnicodeDecodeError:
        encoding = "latin-1"
    f.seek(0)
    return encoding


def iter_lines(path: Union[str, os.PathLike], encoding: str = "utf-8") -> Iterator[Tuple[int, str]]:
    """Stream ``(lineno, text)`` from a text file, 1-based, without line ends.

    Lines are split on LF only (a CR before it is dropped), so CRLF files
    read like LF files and exotic Unicode line separators stay inside a line
    rather than silently shifting line numbers.  A leading BOM is removed.
    Decoding is per line so an error can name the line. `encoding` is
    "utf-8", "latin-1" or "auto" (`_utf8_or_latin1`).
    """
    name = os.fspath(path)
    if encoding not in ENCODINGS:
        raise ValueError(Errors.E485.format(encoding=encoding, encodings=', '.join(ENCODINGS)))
    try:
        f = open(name, "rb")
    except FileNotFoundError:
        raise FileNotFoundError(Errors.E490.format(name=name)) from None
    with f:
        if encoding == "auto":
            encoding = _utf8_or_latin1(f)
        for lineno, raw in enumerate(f, 1):
            if raw.endswith(b"\n"):
                raw = raw[:-1]
            if raw.endswith(b"\r"):
                raw = raw[:-1]
            try:
                text = raw.decode(encoding)
            except UnicodeDecodeError as e:
                raise TextError(Errors.E111.format(path=name, line=lineno, what=_bad_bytes(raw, e.start),
                                                   column=e.start + 1)) from None
            if lineno == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield lineno, text


def _bad_bytes(raw: bytes, at: int) -> str:
    """What the undecodable bytes at `at` are: an encoded lone surrogate gets named."""
    b = raw[at:at + 3]
    if len(b) == 3 and b[0] == 0xED and 0xA0 <= b[1] <= 0xBF and 0x80 <= b[2] <= 0xBF:
        code = 0xD000 | ((b[1] & 0x3F) << 6) | (b[2] & 0x3F)
        return f"byte {b[0]:#04x}: an encoded lone surrogate U+{code:04X}"
    return f"byte {raw[at]:#04x}"


def _numbered(path_or_lines) -> Tuple[Optional[str], Iterable[Tuple[int, str]]]:
    if isinstance(path_or_lines, (str, os.PathLike)):
        return os.fspath(path_or_lines), iter_lines(path_or_lines)

    def gen():
        for lineno, text in enumerate(path_or_lines, 1):
            if lineno == 1 and text.startswith("\ufeff"):
                text = text[1:]
            yield lineno, text

    return None, gen()


def read_corpus(
    path_or_lines,
    *,
    mode: str = "chars",
    gold: bool = False,
    split_at: Optional[Iterable[str]] = None,
    source: Optional[str] = None,
    units: str = DEFAULT_UNITS,
) -> Corpus:
    """Read training text (a file path, or an iterable of line strings).

    ``mode="chars"``: every non-whitespace unit is a terminal; ``units`` says
    what a unit is: an extended grapheme cluster ("graphemes", the default) or
    a code point ("codepoints"). Control characters are hard boundaries.
    ``mode="tokens"``: whitespace-separated tokens are terminals (py-cfg).
    ``gold=True`` (chars mode only): lines are gold segmentations; the
    sentence is the line without spaces and the words go to ``gold_words``.
    ``split_at``: terminals that are hard boundaries (e.g.
    `DEFAULT_PUNCTUATION`); see `split_chunks`.
    ``source``: name used for ``Corpus.path`` and in errors (defaults to the
    file path).

    Blank lines are skipped for parsing (py-cfg would reject them) but kept
    as empty utterances, so line numbers and output lines stay aligned.
    """
    if mode not in MODES:
        raise ValueError(Errors.E486.format(mode=mode, modes=', '.join(MODES)))
    if gold and mode != "chars":
        raise ValueError(Errors.E487)
    check_units(units)
    boundary = frozenset(split_at) if split_at is not None else None
    path, numbered = _numbered(path_or_lines)
    if source is not None:
        path = source

    sentences: List[Tuple[str, ...]] = []
    lines: List[int] = []
    all_pieces: List[List[Piece]] = []
    utterance_lines: List[int] = []
    gold_words: Optional[List[List[str]]] = [] if gold else None

    for lineno, text in numbered:
        if mode == "tokens":
            terminals = tuple(check_text(text, f"{path or '<lines>'}:{lineno}").split())
            cut = boundary
        else:
            terminals = tuple(text_terminals(text, units, f"{path or '<lines>'}:{lineno}"))
            controls = frozenset(t for t in terminals if is_control(t)) if not text.isprintable() else None
            cut = (boundary or frozenset()) | controls if controls else boundary
        if gold_words is not None:
            gold_words.append(text.split())
        chunks = split_chunks(terminals, cut) if cut else ([(terminals, False)] if terminals else [])
        pieces: List[Piece] = []
        for chunk, is_boundary in chunks:
            if is_boundary:
                pieces.append(Piece(tuple(chunk), True, -1))
            else:
                pieces.append(Piece(tuple(chunk), False, len(sentences)))
                sentences.append(tuple(chunk))
                lines.append(lineno)
        all_pieces.append(pieces)
        utterance_lines.append(lineno)

    return Corpus(
        sentences=sentences,
        lines=lines,
        path=path,
        mode=mode,
        pieces=all_pieces,
        utterance_lines=utterance_lines,
        gold_words=gold_words,
        units=units if mode == "chars" else None,
    )
