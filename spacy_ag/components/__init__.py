"""spaCy components of spacy-ag.

* ``spacy-ag.Segmenter.v1`` (tokenizer): unsupervised word segmentation (`segmenter`);
* ``ag_parser`` (pipeline component): trees of an adaptor grammar (`parser`);
* ``ag_topics`` (pipeline component): infinite-vocabulary topics of Docs and tokens (`topics`);
* ``ag_tokenizer_update`` (pipeline component): lets ``spacy train`` update the segmenter;
* ``spacy-ag.segmentation_scorer.v1`` (scorer): token/boundary/lexicon P/R/F (`scoring`);
* ``spacy-ag.SegmentedCorpus.v1`` (reader): gold-segmented text files (`readers`);
* ``spacy-ag.TextCorpus.v1`` and ``spacy-ag.PlainTextCorpus.v1`` (readers): raw training text: JSONL,
  plain text or wordseg's tagged and prepared text (`readers`);
* `observe_fitting` (`fitting`): watch the sampler's trace while
  ``nlp.initialize`` fits the segmenter and ag_parser;
* `tree_pictures` (imported on use): ag_parser's trees as inline SVG, an
  HTML page or a Jupyter picture (``render_tree(doc)``).

All are registered both by decorators (importing this package) and by entry
points in pyproject.toml, so configs, ``nlp.add_pipe("ag_parser")`` and
``spacy.load`` work without importing spacy_ag. These modules import only
spaCy at import time; the numba engine is imported when a model is fitted or
loaded, so spaCy's start-up (which imports every factory module) stays fast.
"""
from .fitting import FitObserver, observe_fitting
from .parser import AGParser, install_extensions, make_ag_parser
from .readers import SegmentedCorpus, create_segmented_corpus
from .scoring import make_segmentation_scorer, score_segmentation
from .segmenter import BUILTIN_GRAMMARS, Segmenter, create_segmenter
from .tokenizer_update import TokenizerUpdate, make_tokenizer_update
from .topic_tagger import AGTopics, make_ag_topics

__all__ = [
    "AGParser",
    "AGTopics",
    "BUILTIN_GRAMMARS",
    "FitObserver",
    "SegmentedCorpus",
    "Segmenter",
    "TokenizerUpdate",
    "create_segmented_corpus",
    "create_segmenter",
    "install_extensions",
    "make_ag_parser",
    "make_ag_topics",
    "make_segmentation_scorer",
    "make_tokenizer_update",
    "observe_fitting",
    "score_segmentation",
]
