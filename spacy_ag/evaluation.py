"""Word-segmentation scores exactly as docs/algorithms.md §5.2 defines them.

All scores are micro-averaged (counts summed over utterances, then divided)
and F = 2PR/(P+R) with 0/0 = 0, so a run's numbers are comparable with the
papers' and with wordseg's.  Reported:

* ``token``: a predicted word is correct iff gold has the same span;
* ``boundary`` (wordseg's boundary_noedge, the default): utterance-internal
  boundaries only, because the edges are given by the input;
* ``boundary_all``: the same with both utterance edges counted;
* ``type``: the sets of distinct word strings over the whole corpus.

``exclude`` drops single-character tokens made of the given characters from
the token and type counts; Chinese results are reported with and without
punctuation tokens because [ZBC14] does not say which it used (§5.2, §7).

These are wordseg-eval's definitions (wordseg's ``token``, ``type``,
``boundary_all`` and ``boundary_noedge``); `wordseg_scores` gives its
output exactly: its key names, None where a score is undefined (0/0) instead
of 0, and, read by `iter_wordseg_segmented`, blank lines dropped from each
file and words separated by spaces only.

Run ``python -m spacy_ag.evaluation PRED GOLD`` to score two files.
"""
from __future__ import annotations

import argparse
import os
import sys
from typing import Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union

from .corpus import DEFAULT_PUNCTUATION, iter_lines
from .errors import Errors

__all__ = [
    "WORDSEG_SCORES",
    "evaluate_files",
    "format_scores",
    "format_wordseg_scores",
    "iter_segmented",
    "iter_wordseg_segmented",
    "score_numbered",
    "read_segmented",
    "SegmentationCounts",
    "segmentation_scores",
    "spans_from_words",
    "words_from_boundaries",
    "wordseg_scores",
]

Utterance = Union[str, Sequence[str]]


def spans_from_words(words: Sequence[str]) -> List[Tuple[int, int]]:
    """Character spans ``(start, end)`` of consecutive words; they tile the utterance."""
    spans = []
    pos = 0
    for w in words:
        if not w:
            raise ValueError(Errors.E394.format(words=list(words)))
        spans.append((pos, pos + len(w)))
        pos += len(w)
    return spans


def words_from_boundaries(text: str, boundaries: Iterable[int]) -> List[str]:
    """Cut ``text`` at the given character positions.

    Positions 0 and ``len(text)`` (the edges) are accepted and ignored, so
    both boundary conventions of §5.2 can be fed back in.
    """
    cuts = sorted(set(boundaries))
    for b in cuts:
        if not 0 <= b <= len(text):
            raise ValueError(Errors.E395.format(b=b, n_text=len(text), text=text))
    edges = [0] + [b for b in cuts if 0 < b < len(text)] + [len(text)]
    return [text[s:e] for s, e in zip(edges, edges[1:]) if s < e]


def _words(utt: Utterance) -> List[str]:
    # A bare string would otherwise be iterated character by character.
    return utt.split() if isinstance(utt, str) else list(utt)


def _prf(correct: int, n_pred: int, n_gold: int) -> Tuple[float, float, float]:
    p = correct / n_pred if n_pred else 0.0
    r = correct / n_gold if n_gold else 0.0
    f = 2 * correct / (n_pred + n_gold) if n_pred + n_gold else 0.0
    return p, r, f


def segmentation_scores(
    predicted: Sequence[Utterance],
    gold: Sequence[Utterance],
    *,
    exclude: Optional[Iterable[str]] = None,
) -> Dict[str, float]:
    """Score predicted against gold segmentations (§5.2).

    Both are sequences of utterances, each a sequence of words (a string is
    split on whitespace).  An utterance's predicted words must spell the same
    characters as its gold words; otherwise ValueError names the 1-based
    utterance index.  ``exclude``: characters whose one-character tokens are
    left out of the token and type counts (boundaries are unaffected).

    Returns ``{token,boundary,boundary_all,type}_{p,r,f}`` plus the counts
    ``n_utterances``, ``n_pred_tokens``, ``n_gold_tokens`` (after exclusion),
    ``n_correct_tokens``, ``n_pred_types`` and ``n_gold_types``.
    """
    if len(predicted) != len(gold):
        raise ValueError(Errors.E391.format(n_predicted=len(predicted), n_gold=len(gold)))
    counts = SegmentationCounts(exclude)
    for p_utt, g_utt in zip(predicted, gold):
        counts.add(p_utt, g_utt)
    return counts.scores()


class SegmentationCounts:
    """The counts behind `segmentation_scores`, added one utterance at a time.

    A segmentation streamed from a large file is scored without holding it:
    only the counts and the two word-type sets (as large as the lexicon, not
    the corpus) are kept.
    """

    def __init__(self, exclude: Optional[Iterable[str]] = None):
        self.skip = frozenset(exclude or ())
        self.tok = [0, 0, 0]  # correct, predicted, gold
        self.bnd = [0, 0, 0]
        self.bnd_all = [0, 0, 0]
        self.lex_pred: set = set()
        self.lex_gold: set = set()
        self.n_utterances = 0

    def _kept(self, word: str) -> bool:
        return not (len(word) == 1 and word in self.skip)

    def add(self, predicted: Utterance, gold: Utterance) -> None:
        """Count one utterance; ValueError (naming its 1-based index) if the two spell different text."""
        self.n_utterances += 1
        p_words, g_words = _words(predicted), _words(gold)
        p_text, g_text = "".join(p_words), "".join(g_words)
        if p_text != g_text:
            raise ValueError(Errors.E396.format(n_utterances=self.n_utterances, p_text=p_text, g_text=g_text))
        kept = self._kept
        p_spans = {s for s, w in zip(spans_from_words(p_words), p_words) if kept(w)}
        g_spans = {s for s, w in zip(spans_from_words(g_words), g_words) if kept(w)}
        tok = self.tok
        tok[0] += len(p_spans & g_spans)
        tok[1] += len(p_spans)
        tok[2] += len(g_spans)

        p_b = {s for s, _ in spans_from_words(p_words) if s > 0}
        g_b = {s for s, _ in spans_from_words(g_words) if s > 0}
        common = len(p_b & g_b)
        self.bnd[0] += common
        self.bnd[1] += len(p_b)
        self.bnd[2] += len(g_b)
        edges = 2 if g_text else 0  # an empty utterance has no edges to score
        self.bnd_all[0] += common + edges
        self.bnd_all[1] += len(p_b) + edges
        self.bnd_all[2] += len(g_b) + edges

        self.lex_pred.update(w for w in p_words if kept(w))
        self.lex_gold.update(w for w in g_words if kept(w))

    def counts(self, name: str) -> Tuple[int, int, int]:
        """(correct, predicted, gold) of the score `name`: token, boundary, boundary_all or type."""
        if name == "type":
            return len(self.lex_pred & self.lex_gold), len(self.lex_pred), len(self.lex_gold)
        return tuple({"token": self.tok, "boundary": self.bnd, "boundary_all": self.bnd_all}[name])

    def scores(self) -> Dict[str, float]:
        """The scores of everything added so far (see `segmentation_scores`)."""
        scores: Dict[str, float] = {}
        lex_pred, lex_gold = self.lex_pred, self.lex_gold
        for name in ("token", "boundary", "boundary_all", "type"):
            p, r, f = _prf(*self.counts(name))
            scores[f"{name}_p"], scores[f"{name}_r"], scores[f"{name}_f"] = p, r, f
        scores.update(
            n_utterances=self.n_utterances,
            n_pred_tokens=self.tok[1],
            n_gold_tokens=self.tok[2],
            n_correct_tokens=self.tok[0],
            n_pred_types=len(lex_pred),
            n_gold_types=len(lex_gold),
        )
        return scores


#: wordseg-eval's scores in the order it prints them: (its name, the name of the same score here).
WORDSEG_SCORES = (("token", "token"), ("type", "type"), ("boundary_all", "boundary_all"),
                  ("boundary_noedge", "boundary"))


def wordseg_scores(counts: "SegmentationCounts") -> Dict[str, Optional[float]]:
    """The scores as wordseg-eval reports them: ``{token,type,boundary_all,boundary_noedge}_{precision,
    recall,fscore}`` in its order, with None where the score is 0/0 (no predicted or no gold items)."""
    out: Dict[str, Optional[float]] = {}
    for theirs, ours in WORDSEG_SCORES:
        correct, n_pred, n_gold = counts.counts(ours)
        out[f"{theirs}_precision"] = correct / n_pred if n_pred else None
        out[f"{theirs}_recall"] = correct / n_gold if n_gold else None
        out[f"{theirs}_fscore"] = 2 * correct / (n_pred + n_gold) if n_pred + n_gold else None
    return out


def format_wordseg_scores(scores: Dict[str, Optional[float]]) -> str:
    """`wordseg_scores` as wordseg-eval prints them: one ``name<TAB>value`` line each, 4 significant digits."""
    return "\n".join(f"{name}\t{'%.4g' % value if value is not None else 'None'}" for name, value in scores.items())


def format_scores(scores: Dict[str, float]) -> str:
    """A small aligned P/R/F table (one row per metric) plus the counts."""
    rows = ["token", "boundary", "boundary_all", "type"]
    width = max(len(r) for r in rows)
    out = [f"{'':<{width}}  {'P':>6}  {'R':>6}  {'F':>6}"]
    for r in rows:
        out.append(f"{r:<{width}}  " + "  ".join(f"{scores[f'{r}_{m}']:6.4f}" for m in "prf"))
    if "n_utterances" in scores:
        out.append(
            f"utterances {scores['n_utterances']}, predicted tokens {scores['n_pred_tokens']}, "
            f"gold tokens {scores['n_gold_tokens']}")
    return "\n".join(out)


def iter_segmented(
    path: Union[str, os.PathLike],
    *,
    sep: Optional[str] = None,
    drop_empty: bool = False,
) -> Iterator[Tuple[int, List[str]]]:
    """``(lineno, words)`` of a segmented file, read lazily (see `read_segmented`)."""
    for lineno, text in iter_lines(path):
        words = text.split() if sep is None else [w for w in text.split(sep) if w]
        if drop_empty and not words:
            continue
        yield lineno, words


def iter_wordseg_segmented(path: Union[str, os.PathLike]) -> Iterator[Tuple[int, List[str]]]:
    """``(lineno, words)`` of a segmented file as wordseg-eval reads it: each line stripped, blank lines
    left out, the words separated by spaces (a tab is part of a word)."""
    for lineno, text in iter_lines(path):
        text = text.strip()
        if text:
            yield lineno, [w for w in text.split(" ") if w]


def _read_numbered(path, sep: Optional[str], drop_empty: bool) -> Tuple[List[int], List[List[str]]]:
    numbered = list(iter_segmented(path, sep=sep, drop_empty=drop_empty))
    return [lineno for lineno, _ in numbered], [words for _, words in numbered]


def read_segmented(
    path: Union[str, os.PathLike],
    *,
    sep: Optional[str] = None,
    drop_empty: bool = False,
) -> List[List[str]]:
    """Read a segmented file: one utterance per line, words split on ``sep``.

    With ``sep=None`` any run of Unicode whitespace separates words (so PKU's
    two-space gold and U+3000 work); a BOM and CRLF line ends are handled by
    `iter_lines`.  Blank lines become empty utterances so that utterance
    ``k`` is line ``k``; ``drop_empty=True`` removes them instead.
    """
    return _read_numbered(path, sep, drop_empty)[1]


def score_numbered(
    pred: Sequence[Tuple[int, Sequence[str]]],
    gold: Sequence[Tuple[int, Sequence[str]]],
    pred_name: str,
    gold_name: str,
    exclude: Optional[Iterable[str]] = None,
) -> SegmentationCounts:
    """The counts of predicted against gold utterances, each ``(lineno, words)``, paired in order.

    Errors are one line naming file and line: differing utterance counts, or
    an utterance whose characters differ.
    """
    if len(pred) != len(gold):
        raise ValueError(Errors.E392.format(pred_name=pred_name, n_pred=len(pred), gold_name=gold_name,
                                            n_gold=len(gold)))
    counts = SegmentationCounts(exclude)
    for (pl, p), (gl, g) in zip(pred, gold):
        if "".join(p) != "".join(g):
            raise ValueError(Errors.E397.format(pred_name=pred_name, pl=pl, predicted=''.join(p), gold_name=gold_name,
                                                gl=gl, gold=''.join(g)))
        counts.add(p, g)
    return counts


def evaluate_files(
    pred_path: Union[str, os.PathLike],
    gold_path: Union[str, os.PathLike],
    exclude: Optional[Iterable[str]] = None,
    *,
    sep: Optional[str] = None,
    drop_empty: bool = False,
) -> Dict[str, float]:
    """Score a predicted segmentation file against a gold file, line by line.

    Errors are one line naming file and line: differing utterance counts, or
    an utterance whose characters differ.  ``drop_empty=True`` drops blank
    lines from each file first, for outputs that skipped blank input lines.
    """
    p_lines, pred = _read_numbered(pred_path, sep, drop_empty)
    g_lines, gold = _read_numbered(gold_path, sep, drop_empty)
    pn, gn = os.fspath(pred_path), os.fspath(gold_path)
    if len(pred) != len(gold):
        what = "non-empty lines" if drop_empty else "lines"
        raise ValueError(Errors.E393.format(pn=pn, n_pred=len(pred), what=what, gn=gn, n_gold=len(gold)))
    return score_numbered(list(zip(p_lines, pred)), list(zip(g_lines, gold)), pn, gn, exclude).scores()


def main(argv: Optional[Sequence[str]] = None) -> int:
    """Command line: print the score table of PRED against GOLD."""
    ap = argparse.ArgumentParser(prog="python -m spacy_ag.evaluation", description=main.__doc__)
    ap.add_argument("pred")
    ap.add_argument("gold")
    ap.add_argument("--drop-empty", action="store_true", help="ignore blank lines in both files")
    ap.add_argument("--no-punct", action="store_true",
                    help="also score with punctuation tokens excluded")
    args = ap.parse_args(argv)
    try:
        scores = evaluate_files(args.pred, args.gold, drop_empty=args.drop_empty)
        print(format_scores(scores))
        if args.no_punct:
            print("\nwithout punctuation tokens:")
            print(format_scores(evaluate_files(
                args.pred, args.gold, DEFAULT_PUNCTUATION, drop_empty=args.drop_empty)))
    except (OSError, ValueError) as e:
        print(f"error: {e}", file=sys.stderr)
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
