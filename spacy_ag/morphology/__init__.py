"""Unsupervised morphology with word-internal adaptor grammars ([JGG06] §4.2, docs/algorithms.md 2.5).

* `grammars`: the stem-suffix, prefix-stem-suffix and submorph grammars,
  with or without hidden classes, generated from their settings;
* `analysis`: a word's morphs at chosen levels (``walk+ing``) and its class,
  read off its parse tree;
* `words`: the word types (or tokens) of word lists and text files to train on,
  and the analyses of a trained model;
* `gold`: Morpho Challenge gold files and boundary precision, recall and F.

The spaCy side is the ``ag_parser`` component in token mode (its ``grammar``
setting takes the names of `grammars.GRAMMAR_NAMES`); the command line has
``spacy-ag segment --level Stem,Suffix`` and ``spacy-ag evaluate-morph``.
"""
from .analysis import analyse_words, format_morphs, label_matches, morph_class, morphs_at, parse_levels
from .grammars import GRAMMAR_NAMES, KINDS, MORPH_LEVELS, morphology_grammar, parse_grammar_name
from .gold import morph_boundary_scores, read_gold_segmentation, read_predicted_segmentation
from .words import UNITS, read_words, word_units

__all__ = [
    "GRAMMAR_NAMES",
    "KINDS",
    "UNITS",
    "MORPH_LEVELS",
    "analyse_words",
    "format_morphs",
    "label_matches",
    "morph_boundary_scores",
    "morph_class",
    "morphology_grammar",
    "morphs_at",
    "parse_grammar_name",
    "parse_levels",
    "read_gold_segmentation",
    "read_predicted_segmentation",
    "read_words",
    "word_units",
]
