"""``spacy-ag init-config``: a complete starting pipeline config, as ``spacy init config`` writes one.

The config is filled by spaCy itself (every section and default it has), so
it passes ``spacy debug config`` and trains as is under ``spacy train`` and
``spacy-ag train``. The sampler settings are in ``[nlp.tokenizer]`` (and
``[nlp.tokenizer.sampler]``), where spaCy reads them too. A segmenter-only
pipeline has nothing for spaCy's loop to update, so the config makes the loop
one step long (one epoch of one batch): it evaluates the fitted segmenter
once and saves it.
"""
from __future__ import annotations

import json
from pathlib import Path
from typing import Optional

from ..errors import Errors
from ..settings import UNIT_CHOICES, SegmenterSettings, units_for_language

__all__ = ["init_config_text"]

_HEADER = """\
# spaCy pipeline config for spacy-ag: {what}.
# Written by `spacy-ag init-config {args}`, filled by spaCy.
#
# Train it with spaCy or with spacy-ag (the same model for the same seed; the
# segmenter is fitted without supervision on the raw text, gold dev data is
# optional and only scored):
#
#   python -m spacy train {name} --output training --paths.train train.txt --paths.dev dev.txt
#   spacy-ag train {name} --output training --paths.train train.txt [--paths.dev dev.txt]
#
# paths.train: raw, unsegmented text (spacy-ag.TextCorpus.v1): plain text, one
#              text per line, or JSONL, one {{"text": "..."}} per line (format
#              "auto": by the extension .txt or .jsonl, else the first line), or
#              wordseg's tagged or prepared text (format "wordseg-tags" or
#              "wordseg-prepared", e.g. --corpora.train.format wordseg-tags).
# paths.dev:   gold-segmented text, one utterance per line, words separated by
#              spaces (spacy-ag.SegmentedCorpus.v1; wordseg's tagged text with
#              --corpora.dev.format wordseg-tags).
# The sampler settings are [nlp.tokenizer] iterations, chains, seed, workers and
# [nlp.tokenizer.sampler] (any [sampler] setting); override them like any
# setting, e.g. --nlp.tokenizer.iterations 500 --nlp.tokenizer.seed 3. boundary_chars: hard word
# boundaries (null = punctuation and whitespace, "" = whitespace only).
# [training]: one epoch of one batch, because the fitted segmenter has nothing
# for spaCy's loop to update: the loop evaluates it once and saves it. The
# score weights with 0.0 are not optimised, only recorded in meta.json.
# [initialize.tokenizer] model_path: a model of `spacy-ag train` with an engine
# config, loaded instead of fitting.

"""

_BASE = """\
[paths]
train = null
dev = null

[system]
seed = 0
gpu_allocator = null

[nlp]
lang = "{lang}"
pipeline = []
batch_size = 1000

[nlp.tokenizer]
@tokenizers = "spacy-ag.Segmenter.v1"
grammar = {grammar}
boundary_chars = {boundary}
units = "{units}"
iterations = {iterations}
chains = {chains}
seed = 0

[nlp.tokenizer.sampler]

[components]

[corpora]

[corpora.train]
@readers = "spacy-ag.TextCorpus.v1"
path = ${{paths.train}}
format = "auto"

[corpora.dev]
@readers = "spacy-ag.SegmentedCorpus.v1"
path = ${{paths.dev}}

[training]
seed = ${{system.seed}}
gpu_allocator = ${{system.gpu_allocator}}
max_epochs = 1
frozen_components = []
annotating_components = []

[training.batcher]
@batchers = "spacy.batch_by_sequence.v1"
size = 1000000000
get_length = null

[training.score_weights]
token_f = 1.0
token_p = 0.0
token_r = 0.0
boundary_p = 0.0
boundary_r = 0.0
boundary_f = 0.0
lexicon_p = 0.0
lexicon_r = 0.0
lexicon_f = 0.0

[initialize]

[initialize.tokenizer]
model_path = null
refit = false
"""


def init_config_text(*, lang: Optional[str] = None, grammar: str = "unigram", phonemes: bool = False,
                     iterations: int = SegmenterSettings.iterations, chains: int = SegmenterSettings.chains,
                     name: str = "config.cfg", args: Optional[str] = None) -> str:
    """The text of a complete starting pipeline config (see ``spacy-ag init-config``).

    lang (Optional[str]): spaCy language code; default "xx" for phonemes, else "zh".
    grammar (str): "unigram", "colloc", "colloc3" or a grammar file.
    phonemes (bool): Phoneme strings (Brent): only whitespace is a hard
        boundary, because the transcription uses punctuation characters as phonemes.
    iterations, chains (int): Sampler settings of the segmenter (default: the segmenter's).
    name (str): The file name shown in the usage comment.
    args (Optional[str]): The init-config arguments shown in the header.
    RETURNS (str): The config.
    """
    from confection import Config
    from spacy import util
    from spacy.util import get_lang_class

    from ..components.segmenter import BUILTIN_GRAMMARS

    if lang is None:
        lang = "xx" if phonemes else "zh"
    try:
        get_lang_class(lang)
    except Exception:
        raise ValueError(Errors.E504.format(lang=lang)) from None
    if grammar not in BUILTIN_GRAMMARS and not Path(grammar).is_file():
        raise ValueError(Errors.E502.format(grammar=grammar, builtins=", ".join(BUILTIN_GRAMMARS)))
    if iterations < 1 or chains < 1:
        raise ValueError(Errors.E503)
    if phonemes:
        what = f"unsupervised word segmentation of phoneme strings, {grammar} grammar"
    else:
        what = f"unsupervised word segmentation ({lang}), {grammar} grammar"
    if args is None:
        args = f"{name} --lang {lang} --grammar {grammar}" + (" --phonemes" if phonemes else "")
    base = Config().from_str(_BASE.format(lang=lang, grammar=json.dumps(grammar),
                                          boundary='""' if phonemes else "null", iterations=iterations,
                                          units=UNIT_CHOICES[0] if phonemes else units_for_language(lang),
                                          chains=chains), interpolate=False)
    # spaCy fills the interpolated config; the variables (${paths.train}, ...) are then put back
    filled = util.load_model_from_config(base.interpolate(), auto_fill=True, validate=True).config
    return _HEADER.format(what=what, args=args, name=name) + filled.merge(base).to_str()
