"""Segmentation scores in spaCy's Scorer conventions.

``spacy-ag.segmentation_scorer.v1`` returns

* ``token_p``, ``token_r``, ``token_f``: exactly
  `spacy.scorer.Scorer.score_tokenization` (character spans of the
  non-whitespace tokens; examples whose reference has unknown spaces are
  skipped, so build gold Docs with explicit ``spaces``);
* ``token_acc`` (``TOK`` in ``spacy evaluate``): the gold tokens predicted
  exactly over all gold tokens, as spaCy's Scorer documents it ("# correct
  tokens / # gold tokens"), which makes it equal to ``token_r``. spaCy's own
  code counts instead the predicted tokens that lie inside one gold token,
  so a segmenter that only splits words too finely (``walk ing`` for
  ``walking``) would score 100% there: every piece lies inside a gold word.
  Unsupervised segmenters err that way more than any other, so the score
  spaCy prints must see it;
* ``boundary_p/r/f`` (word-internal boundaries, utterance edges excluded) and
  ``lexicon_p/r/f`` (distinct word strings over all examples), as defined in
  docs/algorithms.md 5.2 and computed by `spacy_ag.evaluation.segmentation_scores`
  with each Example as one utterance (whitespace tokens are not words).

The segmenter tokenizer uses it as its ``score``, so ``nlp.evaluate`` on
gold-segmented examples reports all of these keys. Note that ``spacy
evaluate`` prints and writes only spaCy's fixed list of metrics (``TOK`` is
token_acc); use ``nlp.evaluate`` or spacy-ag's own evaluate command for the rest.
"""
from __future__ import annotations

from typing import Any, Callable, Dict, Iterable, List

from spacy.scorer import Scorer
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

from ..evaluation import segmentation_scores

__all__ = ["doc_words", "make_segmentation_scorer", "score_segmentation"]

SCORE_KEYS = ("token_acc", "token_p", "token_r", "token_f", "boundary_p", "boundary_r", "boundary_f",
              "lexicon_p", "lexicon_r", "lexicon_f")


def doc_words(doc: Doc) -> List[str]:
    """The words of a Doc for segmentation scoring: tokens without whitespace."""
    words = []
    for token in doc:
        word = "".join(token.text.split())
        if word:
            words.append(word)
    return words


def score_segmentation(examples: Iterable[Example], **kwargs) -> Dict[str, Any]:
    """Score the predicted tokenization of each Example against its reference.

    examples (Iterable[Example]): Predicted and gold-segmented Docs.
    RETURNS (Dict[str, Any]): The keys in SCORE_KEYS (None when there is nothing to score).
    """
    examples = list(examples)
    scores: Dict[str, Any] = dict(Scorer.score_tokenization(examples))
    scores["token_acc"] = scores["token_r"]  # gold tokens found exactly / gold tokens (see the module doc)
    predicted, gold = [], []
    for eg in examples:
        p, g = doc_words(eg.predicted), doc_words(eg.reference)
        if p or g:
            predicted.append(p)
            gold.append(g)
    ours = segmentation_scores(predicted, gold) if predicted else None
    for name, key in (("boundary", "boundary"), ("lexicon", "type")):
        for x in "prf":
            scores[f"{name}_{x}"] = ours[f"{key}_{x}"] if ours else None
    return scores


@registry.scorers("spacy-ag.segmentation_scorer.v1")
def make_segmentation_scorer() -> Callable[..., Dict[str, Any]]:
    """Registered scorer ``spacy-ag.segmentation_scorer.v1``.

    RETURNS (Callable): ``score(examples, **kwargs) -> dict`` (see the module doc).
    """
    return score_segmentation
