"""Generated segmentation data with a known answer.

Tests and the offline quickstart need corpora whose gold segmentation is
known and whose statistics resemble child-directed speech (a small lexicon,
Zipfian word frequencies, short utterances, optionally frequent fixed word
pairs for the collocation grammar), without shipping any real corpus.
Everything is deterministic given ``seed`` (numpy's ``default_rng``).
`iter_corpus` draws a corpus of any size block by block, so that a
benchmark can write ten million characters to a file in the memory of one
block.

The other two tasks get made-up data with a planted answer too:
`generate_morphology` a word list built from stems and inflection-class
suffixes, with the analyses it was built from (scored as Morpho Challenge
boundaries), and `generate_topic_corpus` documents drawn from topics with
disjoint vocabularies, with each document's topic proportions (scored by how
well the learned topics recover the planted ones).
"""
from __future__ import annotations

import os
import string
from dataclasses import dataclass
from typing import Dict, Iterable, Iterator, List, Sequence, Tuple, Union

import numpy as np

from .errors import Errors

__all__ = ["PlantedMorphology", "PlantedTopics", "generate_corpus", "generate_morphology", "generate_topic_corpus",
           "iter_corpus", "make_lexicon", "write_gold", "write_raw"]


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
        raise ValueError(Errors.E380.format(n_words=n_words, min_len=min_len, max_len=max_len))
    letters = list(dict.fromkeys(alphabet))
    if not letters:
        raise ValueError(Errors.E381)
    capacity = sum(len(letters) ** k for k in range(min_len, max_len + 1))
    if n_words > capacity:
        raise ValueError(Errors.E382.format(capacity=capacity, min_len=min_len, max_len=max_len,
                                            n_letters=len(letters)))
    rng = np.random.default_rng(seed)
    words: List[str] = []
    seen = set()
    attempts = 0
    while len(words) < n_words:
        attempts += 1
        if attempts > 100 * n_words + 1000:  # near capacity rejection gets hopeless
            raise ValueError(Errors.E389.format(n_words=n_words))
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
        raise ValueError(Errors.E383)
    if mean_words < 1:
        raise ValueError(Errors.E384.format(mean_words=mean_words))
    rng = np.random.default_rng(seed)
    words = list(lexicon)
    colls: List[Tuple[str, ...]] = []
    if isinstance(collocations, (int, np.integer)):
        picks = rng.integers(0, len(words), size=(int(collocations), 2))
        colls = [(words[a], words[b]) for a, b in picks]
    elif collocations is not None:
        colls = [tuple(c) for c in collocations]
        if any(len(c) == 0 or not all(c) for c in colls):
            raise ValueError(Errors.E390)

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
        raise ValueError(Errors.E385.format(n_chars=n_chars, block=block))
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


# ---------------------------------------------------------------- morphology


@dataclass
class PlantedMorphology:
    """A made-up morphology and the word list it spells.

    ``analyses`` maps every word to its planted analyses (lists of morphs that
    spell it). A word is usually built one way; when two (stem, suffix) pairs
    happen to spell the same string, both analyses are kept, as Morpho
    Challenge gold files list alternatives.
    """

    stems: List[str]
    suffixes: List[List[str]]  # per inflection class; "" is the bare stem
    analyses: Dict[str, List[List[str]]]

    @property
    def words(self) -> List[str]:
        return list(self.analyses)

    def gold_lines(self) -> List[str]:
        """Morpho Challenge gold lines, ``word<TAB>stem suffix[, alternative]`` (bare surfaces)."""
        return [f"{word}\t" + ", ".join(" ".join(morphs) for morphs in alternatives)
                for word, alternatives in self.analyses.items()]


def generate_morphology(
    n_stems: int,
    *,
    classes: int = 3,
    suffixes_per_class: int = 4,
    forms_per_stem: int = 3,
    alphabet: str = string.ascii_lowercase,
    stem_lengths: Tuple[int, int] = (3, 6),
    suffix_lengths: Tuple[int, int] = (1, 3),
    seed: int = 0,
) -> PlantedMorphology:
    """Word types of a made-up inflectional morphology, with their planted analyses.

    Each stem belongs to one of ``classes`` inflection classes; each class has
    ``suffixes_per_class`` suffixes (a suffix may serve several classes, as
    English ``-s`` does) and the bare stem. A stem shows up in
    ``forms_per_stem`` of its class's forms (at least two, so that a
    learner can see the stem repeat), so the words are ``stem`` and
    ``stem+suffix``, each listed once (word types, the usual unit for
    morphology). Stems and suffixes are random strings over ``alphabet``;
    everything is deterministic given ``seed``.
    """
    if n_stems < 1 or classes < 1 or suffixes_per_class < 1 or forms_per_stem < 2:
        raise ValueError(Errors.E386.format(n_stems=n_stems, classes=classes, suffixes_per_class=suffixes_per_class,
                                            forms_per_stem=forms_per_stem))
    if forms_per_stem > suffixes_per_class + 1:
        raise ValueError(Errors.E387.format(forms_per_stem=forms_per_stem, needed=forms_per_stem - 1))
    rng = np.random.default_rng((seed, 0x5EED))
    stems = make_lexicon(n_stems, alphabet=alphabet, min_len=stem_lengths[0], max_len=stem_lengths[1],
                         seed=int(rng.integers(2 ** 32)))
    pool = make_lexicon(max(suffixes_per_class, (classes * suffixes_per_class * 2) // 3), alphabet=alphabet,
                        min_len=suffix_lengths[0], max_len=suffix_lengths[1], seed=int(rng.integers(2 ** 32)))
    suffixes = [[""] + [pool[i] for i in sorted(rng.choice(len(pool), size=suffixes_per_class, replace=False))]
                for _ in range(classes)]
    analyses: Dict[str, List[List[str]]] = {}
    for stem in stems:
        forms = suffixes[int(rng.integers(classes))]
        for j in sorted(rng.choice(len(forms), size=forms_per_stem, replace=False)):
            morphs = [stem, forms[j]] if forms[j] else [stem]
            alternatives = analyses.setdefault(stem + forms[j], [])
            if morphs not in alternatives:
                alternatives.append(morphs)
    return PlantedMorphology(stems, suffixes, analyses)


# ---------------------------------------------------------------- topics


@dataclass
class PlantedTopics:
    """Documents drawn from planted topics, and what was planted.

    ``vocabularies[k]`` are topic k's words, most probable first (the
    vocabularies are disjoint); ``proportions[d]`` is document d's drawn
    topic mixture and ``token_topics[d]`` the planted topic of each of its
    tokens.
    """

    vocabularies: List[List[str]]
    documents: List[List[str]]
    proportions: np.ndarray
    token_topics: List[List[int]]

    def dominant_topics(self) -> List[int]:
        """Each document's planted topic with the most tokens (ties: the lower index)."""
        k = len(self.vocabularies)
        return [int(np.bincount(z, minlength=k).argmax()) for z in self.token_topics]


def generate_topic_corpus(
    n_topics: int,
    n_documents: int,
    *,
    words_per_topic: int = 40,
    document_length: int = 40,
    alpha: float = 0.1,
    zipf: float = 1.0,
    alphabet: str = string.ascii_lowercase,
    seed: int = 0,
) -> PlantedTopics:
    """Documents of an LDA with planted topics over made-up words.

    Topic k is a Zipfian distribution (``∝ rank**-zipf``) over its own
    ``words_per_topic`` words; no word belongs to two topics. A document
    draws its proportions from a symmetric Dirichlet(``alpha``) (a small
    alpha: a document mostly about one topic), its length from
    ``1 + Poisson(document_length - 1)``, then every token's topic from its
    proportions and the token from that topic.
    """
    if n_topics < 1 or n_documents < 1 or words_per_topic < 1 or document_length < 1 or alpha <= 0:
        raise ValueError(Errors.E388.format(n_topics=n_topics, n_documents=n_documents,
                                            words_per_topic=words_per_topic, document_length=document_length,
                                            alpha=alpha))
    rng = np.random.default_rng((seed, 0x70B1C))
    words = make_lexicon(n_topics * words_per_topic, alphabet=alphabet, min_len=3, max_len=7,
                         seed=int(rng.integers(2 ** 32)))
    vocabularies = [words[k * words_per_topic:(k + 1) * words_per_topic] for k in range(n_topics)]
    word_probs = _zipf_probs(words_per_topic, zipf)
    proportions = rng.dirichlet(np.full(n_topics, alpha), size=n_documents)
    lengths = 1 + rng.poisson(document_length - 1, size=n_documents)
    documents: List[List[str]] = []
    token_topics: List[List[int]] = []
    for theta, n in zip(proportions, lengths):
        z = rng.choice(n_topics, size=int(n), p=theta)
        w = rng.choice(words_per_topic, size=int(n), p=word_probs)
        documents.append([vocabularies[k][i] for k, i in zip(z, w)])
        token_topics.append([int(k) for k in z])
    return PlantedTopics(vocabularies, documents, proportions, token_topics)
