"""Generated segmentation data with a known answer.

Tests and the offline quickstart need corpora whose gold segmentation is
known and whose statistics resemble child-directed speech (a small lexicon,
Zipfian word frequencies, short utterances, optionally frequent fixed word
pairs for the collocation grammar), without shipping any real corpus.
Everything is deterministic given ``seed`` (numpy's ``default_rng``).
`iter_corpus` draws a corpus of any size block by block, so that a
benchmark can write ten million characters to a file in the memory of one
block.
"""
from __future__ import annotations

import os
import string
from typing import Iterable, Iterator, List, Sequence, Tuple, Union

import numpy as np

__all__ = ["generate_corpus", "iter_corpus", "make_lexicon", "write_gold", "write_raw"]


def make_lexicon(
    n_words: int,
    alphabet: str = string.ascii_lowercase,
    min_len: int = 2,
    max_len: int = 6,
    seed: int = 0,
) -> List[str]:
    """``n_words`` distinct random words over ``alphabet``.

    Lengths are uniform in ``[min_len, max_len]``.  The order is the
    generation order, which `generate_corpus` uses as the frequency rank.
    """
    if n_words < 0 or min_len < 1 or max_len < min_len:
        raise ValueError(f"bad lexicon size/lengths: n_words={n_words}, min_len={min_len}, max_len={max_len}")
    letters = list(dict.fromkeys(alphabet))
    if not letters:
        raise ValueError("empty alphabet")
    capacity = sum(len(letters) ** k for k in range(min_len, max_len + 1))
    if n_words > capacity:
        raise ValueError(f"only {capacity} words of length {min_len}-{max_len} exist over {len(letters)} letters")
    rng = np.random.default_rng(seed)
    words: List[str] = []
    seen = set()
    attempts = 0
    while len(words) < n_words:
        attempts += 1
        if attempts > 100 * n_words + 1000:  # near capacity rejection gets hopeless
            raise ValueError(f"could not draw {n_words} distinct words; use a larger alphabet or max_len")
        length = int(rng.integers(min_len, max_len + 1))
        w = "".join(letters[i] for i in rng.integers(0, len(letters), size=length))
        if w not in seen:
            seen.add(w)
            words.append(w)
    return words


def _zipf_probs(n: int, s: float) -> np.ndarray:
    p = 1.0 / np.arange(1, n + 1, dtype=float) ** s
    return p / p.sum()


def generate_corpus(
    lexicon: Sequence[str],
    n_utterances: int,
    mean_words: float = 4.0,
    zipf: float = 1.1,
    seed: int = 0,
    collocations: Union[None, int, Sequence[Sequence[str]]] = None,
    colloc_prob: float = 0.3,
) -> List[List[str]]:
    """Gold utterances (lists of words); the raw text is their concatenation.

    An utterance is ``1 + Poisson(mean_words - 1)`` units (so never empty).
    A unit is one word drawn with Zipfian probability ``∝ rank**-zipf``
    (rank = position in ``lexicon``; ``zipf=0`` is uniform) or, with
    probability ``colloc_prob`` when ``collocations`` is given, a whole
    fixed word sequence drawn Zipfian from the collocation list.
    ``collocations`` may be an int (that many random word pairs from the
    lexicon, chosen with the same seed) or explicit word sequences.
    """
    if not lexicon:
        raise ValueError("empty lexicon")
    if mean_words < 1:
        raise ValueError(f"mean_words must be at least 1, got {mean_words}")
    rng = np.random.default_rng(seed)
    words = list(lexicon)
    colls: List[Tuple[str, ...]] = []
    if isinstance(collocations, (int, np.integer)):
        picks = rng.integers(0, len(words), size=(int(collocations), 2))
        colls = [(words[a], words[b]) for a, b in picks]
    elif collocations is not None:
        colls = [tuple(c) for c in collocations]
        if any(len(c) == 0 or not all(c) for c in colls):
            raise ValueError("every collocation needs at least one non-empty word")

    lengths = 1 + rng.poisson(mean_words - 1, size=n_utterances)
    total = int(lengths.sum())
    word_ids = rng.choice(len(words), size=total, p=_zipf_probs(len(words), zipf))
    if colls:
        is_coll = rng.random(total) < colloc_prob
        coll_ids = rng.choice(len(colls), size=total, p=_zipf_probs(len(colls), zipf))
    out: List[List[str]] = []
    k = 0
    for n in lengths:
        utt: List[str] = []
        for j in range(k, k + int(n)):
            if colls and is_coll[j]:
                utt.extend(colls[coll_ids[j]])
            else:
                utt.append(words[word_ids[j]])
        k += int(n)
        out.append(utt)
    return out


def iter_corpus(
    lexicon: Sequence[str],
    n_chars: int,
    mean_words: float = 4.0,
    zipf: float = 1.1,
    seed: int = 0,
    block: int = 10000,
) -> Iterator[List[str]]:
    """Gold utterances until their words hold at least ``n_chars`` characters, drawn lazily.

    Block ``k`` is ``generate_corpus(lexicon, block, mean_words, zipf, seed=(seed, k))``, so the
    corpus is deterministic given ``seed`` and only one block is ever held; the last utterance
    is the one that reaches ``n_chars``.
    """
    if n_chars < 0 or block < 1:
        raise ValueError(f"bad corpus size: n_chars={n_chars}, block={block}")
    chars, k = 0, 0
    while chars < n_chars:
        for utt in generate_corpus(lexicon, block, mean_words=mean_words, zipf=zipf, seed=(seed, k)):
            yield utt
            chars += sum(len(w) for w in utt)
            if chars >= n_chars:
                return
        k += 1


def write_gold(path: Union[str, os.PathLike], utterances: Iterable[Sequence[str]]) -> None:
    """Write one utterance per line, words separated by single spaces (br-phono style); a generator
    (`iter_corpus`) is written as it is drawn."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for utt in utterances:
            f.write(" ".join(utt) + "\n")


def write_raw(path: Union[str, os.PathLike], utterances: Iterable[Sequence[str]]) -> None:
    """Write the unsegmented training text: each utterance's words concatenated."""
    with open(path, "w", encoding="utf-8", newline="\n") as f:
        for utt in utterances:
            f.write("".join(utt) + "\n")
