"""Morpho Challenge gold segmentations and Morpho-Challenge-style boundary scores.

A gold file (Morpho Challenge 2010, ``*.segmentation.eng``) has one word per
line: ``word<TAB>analysis[, alternative analysis ...]``, each analysis a list
of morphs separated by spaces, each morph ``surface:label`` (``walk:walk_V
ing:+PCP1``). A morph with the surface ``~`` is empty (a morpheme with no
letters, as in ``aides-memoire ~:+PL``) and contributes no boundary. A morph
without a colon is taken as a bare surface, so a plain segmentation file
(``walking<TAB>walk ing``) is read the same way.

Only the *surfaces* matter for boundary scores: an analysis is turned into the
set of word-internal character positions where one morph ends and the next
begins. If an analysis' surfaces do not spell its word (never the case in the
2010 English training set, but possible in other languages' files), the
analysis cannot be placed on the word's letters; it is dropped with one
warning line, and a word left with no analysis is an error.

Scores follow docs/algorithms.md 5.2 (boundaries without the word edges,
micro-averaged) with the Morpho Challenge rule for alternatives: each word is
scored against *the one alternative that matches the prediction best* (the
highest per-word F, ties broken by more correct boundaries, then by the first
listed), so a word is never penalised for missing an analysis it did not
choose. A word whose gold and predicted analyses both have no boundary adds
nothing to any count (it is neither right nor wrong at the boundary level).
"""
from __future__ import annotations

import os
import warnings
from typing import Dict, FrozenSet, Iterable, List, Mapping, Sequence, Tuple, Union

from ..corpus import iter_lines
from ..errors import Errors
from ..evaluation import spans_from_words

__all__ = [
    "EMPTY_MORPH",
    "boundaries",
    "morph_boundary_scores",
    "read_gold_segmentation",
    "read_predicted_segmentation",
]

EMPTY_MORPH = "~"

PathLike = Union[str, "os.PathLike[str]"]
Boundaries = FrozenSet[int]


def boundaries(morphs: Sequence[str]) -> Boundaries:
    """Word-internal boundary positions of a segmentation (empty morphs ignored)."""
    return frozenset(s for s, _ in spans_from_words([m for m in morphs if m])[1:])


def _surface(morph: str) -> str:
    """The surface of ``surface:label``. A colon of the word itself is escaped as ``\\:``
    (Finnish ``hyy\\::hyy`` is the surface ``hyy:``); a morph without an unescaped colon
    after its first character is a bare surface."""
    at = 1
    while True:
        at = morph.find(":", at)
        if at < 0:
            return morph.replace("\\:", ":")
        if morph[at - 1] != "\\":
            return morph[:at].replace("\\:", ":")
        at += 1


def _surfaces(analysis: str) -> List[str]:
    return [surface for surface in map(_surface, analysis.split()) if surface != EMPTY_MORPH]


def read_gold_segmentation(path: PathLike, encoding: str = "auto") -> Dict[str, List[List[str]]]:
    """word -> its alternative analyses, each a list of surface morphs.

    `encoding` is "auto" (UTF-8, or Latin-1 when the file is not valid UTF-8, as the Finnish
    Morpho Challenge files are), "utf-8" or "latin-1". Errors are one line naming the file,
    the line and the fix.
    """
    name = os.fspath(path)
    gold: Dict[str, List[List[str]]] = {}
    for number, text in iter_lines(path, encoding):
        if not text.strip():
            continue
        if "\t" not in text:
            raise ValueError(Errors.E400.format(name=name, number=number, text=text[:60]))
        word, analyses = text.split("\t", 1)
        word = word.strip()
        alternatives = []
        for analysis in analyses.split(","):
            if not analysis.strip():
                continue
            morphs = _surfaces(analysis)
            if "".join(morphs) != word:
                warnings.warn(Errors.W405.format(name=name, number=number, morphs=' '.join(morphs),
                                                 word=word), UserWarning, stacklevel=2)
                continue
            alternatives.append(morphs)
        if not alternatives:
            raise ValueError(Errors.E401.format(name=name, number=number, word=word))
        if word in gold:
            raise ValueError(Errors.E402.format(name=name, number=number, word=word))
        gold[word] = alternatives
    return gold


def read_predicted_segmentation(path: PathLike, *, separator: str = "+", encoding: str = "auto"
                                ) -> Dict[str, List[str]]:
    """word -> predicted morphs, from a file of analyses such as ``walk+ing``.

    Accepted line forms: ``walk+ing`` (morphs joined by ``separator``, the
    output of ``spacy-ag segment --level``), ``walk ing`` (morphs separated by
    spaces) and ``walking<TAB>walk ing`` (Morpho Challenge style, labels after
    a colon ignored). The word is the concatenation of its morphs.
    """
    name = os.fspath(path)
    pred: Dict[str, List[str]] = {}
    for number, text in iter_lines(path, encoding):
        if not text.strip():
            continue
        analysis = text.split("\t", 1)[1] if "\t" in text else text
        analysis = analysis.split(",")[0] if "\t" in text else analysis
        if "\t" in text:
            morphs = _surfaces(analysis)
        else:
            morphs = [m for m in analysis.replace(separator, " ").split() if m] if separator else analysis.split()
        word = text.split("\t", 1)[0].strip() if "\t" in text else "".join(morphs)
        if "".join(morphs) != word:
            raise ValueError(Errors.E403.format(name=name, number=number, morphs=' '.join(morphs), word=word))
        if not word:
            continue
        pred[word] = morphs
    return pred


def _best_match(pred: Boundaries, alternatives: Iterable[Boundaries]) -> Tuple[int, int]:
    """(correct, gold boundaries) of the alternative with the best per-word F."""
    best = None
    for gold in alternatives:
        correct = len(pred & gold)
        total = len(pred) + len(gold)
        f = 2 * correct / total if total else 1.0
        key = (f, correct)
        if best is None or key > best[0]:
            best = (key, correct, len(gold))
    return best[1], best[2]


def morph_boundary_scores(predicted: Mapping[str, Sequence[str]],
                          gold: Mapping[str, Sequence[Sequence[str]]]) -> Dict[str, float]:
    """Boundary precision, recall and F of predicted morphs against gold analyses.

    predicted: word -> morphs; gold: word -> alternative analyses (lists of
    morphs). Every gold word must have a prediction (ValueError names the
    first missing one); predicted words not in gold are ignored, so a model's
    output on a larger word list can be scored on the gold subset.

    RETURNS (Dict[str, float]): ``boundary_p``, ``boundary_r``,
    ``boundary_f``, the counts ``n_words``, ``n_pred_boundaries``,
    ``n_gold_boundaries``, ``n_correct_boundaries``, and ``word_accuracy``
    (share of words whose boundaries equal one gold alternative exactly).
    """
    missing = [w for w in gold if w not in predicted]
    if missing:
        raise ValueError(Errors.E399.format(n_missing=len(missing), missing=missing[0]))
    correct = n_pred = n_gold = exact = 0
    for word, alternatives in gold.items():
        morphs = list(predicted[word])
        if "".join(morphs) != word:
            raise ValueError(Errors.E404.format(morphs=' '.join(morphs), word=word))
        pred = boundaries(morphs)
        alts = [boundaries(a) for a in alternatives]
        c, g = _best_match(pred, alts)
        correct += c
        n_pred += len(pred)
        n_gold += g
        exact += any(pred == a for a in alts)
    p = correct / n_pred if n_pred else 0.0
    r = correct / n_gold if n_gold else 0.0
    f = 2 * correct / (n_pred + n_gold) if n_pred + n_gold else 0.0
    return {"boundary_p": p, "boundary_r": r, "boundary_f": f, "n_words": len(gold),
            "n_pred_boundaries": n_pred, "n_gold_boundaries": n_gold, "n_correct_boundaries": correct,
            "word_accuracy": exact / len(gold) if gold else 0.0}
