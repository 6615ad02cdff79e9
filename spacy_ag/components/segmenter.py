"""The unsupervised word segmenter as a spaCy tokenizer.

Use it from a config::

    [nlp]
    lang = "zh"                      # or "xx" for phoneme strings

    [nlp.tokenizer]
    @tokenizers = "spacy-ag.Segmenter.v1"
    grammar = "unigram"              # "unigram" | "colloc" | "colloc3" | a grammar file
    segment_category = "Word"
    boundary_chars = null            # null: spacy_ag.corpus.DEFAULT_PUNCTUATION
    iterations = 200                 # the sampler: read by spacy train and spacy-ag train alike
    chains = 1
    seed = 0

    [nlp.tokenizer.sampler]          # any [sampler] setting, e.g. anneal_start = 3.0

    [initialize.tokenizer]
    model_path = null                # a model directory written by `spacy-ag train`
    refit = false

It follows the pattern of spaCy's Chinese tokenizer (spacy/lang/zh): the
registered function returns a factory ``nlp -> Segmenter``; the segmenter is
fitted in ``initialize`` from the raw text of the examples (or loads a fitted
model), segments with the most probable parse under the trained state
(`AdaptorGrammar.segment`) and serializes its model with the pipeline.

Guarantees of ``__call__`` and ``pipe``:

* ``doc.text`` is identical to the input. Whitespace is never part of a
  word: a single space after a word is that token's ``whitespace_``, and any
  other whitespace (runs, newlines, leading whitespace) becomes whitespace
  tokens, as spaCy's own tokenizer does.
* Whitespace and the ``boundary_chars`` are hard word boundaries; each
  boundary character is a token of its own. Training text is cut at the same
  places, so no learned word crosses them.
* A character never seen in training is a token of its own; it never raises.
* A character is an extended grapheme cluster (``units = "graphemes"``: a
  letter with its combining marks, an emoji ZWJ sequence, a flag), a code
  point (``units = "codepoints"``), or a grapheme with every run of digits
  and Latin letters as one unit (``units = "alnum-runs"``: ``2001年GDP`` is
  ``2001``, ``年``, ``GDP``); no token boundary falls inside one. The default,
  ``units = "auto"``, takes the units of ``nlp.lang`` (alnum-runs for zh, ja
  and th, graphemes otherwise: `spacy_ag.settings.LANGUAGE_UNITS`, what
  ``spacy-ag init-config --lang`` writes). A loaded model keeps the units it
  was trained with. Control characters
  (NUL, ESC, ...) are hard boundaries and tokens of their own; a text with a
  lone surrogate raises one `spacy_ag.errors.TextError` [E110].
* Phoneme strings: the Brent transcription uses ``(`` and ``)`` as vowels,
  and both are in DEFAULT_PUNCTUATION, so set ``boundary_chars = ""`` there
  (with ``lang = "xx"``); for Chinese keep the default.
* An **unfitted** segmenter (no ``initialize`` yet, or ``nlp.initialize()``
  called without examples) falls back to one token per character and warns
  once. It does not raise, because spaCy's corpus readers tokenize the
  training examples with this very tokenizer *before* it is fitted.
"""
from __future__ import annotations

import dataclasses
import inspect
import logging
import re
import warnings
from pathlib import Path
from typing import (
    TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union,
)

from spacy import util
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

if TYPE_CHECKING:
    from spacy.language import Language
from spacy.vocab import Vocab

from ..corpus import DEFAULT_PUNCTUATION
from ..errors import Errors
from ..settings import SegmenterSettings, check, keyword_signature, resolve_units
from ..text_units import text_units
from .fitting import fit_adaptor_grammar
from .serialization import ModelSerializer

logger = logging.getLogger("spacy_ag")

__all__ = [
    "BUILTIN_GRAMMARS",
    "Segmenter",
    "create_segmenter",
    "load_grammar",
    "words_and_spaces",
]

#: Grammars available by name. Adapted nonterminals (lines without numbers)
#: take ``default_a``/``default_b``; ``[:corpus:]`` becomes one rule per
#: character of the training text.
BUILTIN_GRAMMARS: Dict[str, str] = {
    # docs/algorithms.md 2.1: a sentence is words, a word is characters.
    "unigram": "1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n",
    # docs/algorithms.md 2.2: collocations of words.
    "colloc": "1 1 Sentence --> Colloc+\nColloc --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n",
    # docs/algorithms.md 2.8: three collocation levels over words of learned length (Chinese).
    "colloc3": ("1 1 Sentence --> Colloc3+\nColloc3 --> Colloc2+\nColloc2 --> Colloc+\nColloc --> Word+\n"
                "Word --> Char\nWord --> Char Char\nWord --> Char Char Char\nWord --> Char Char Char Char\n"
                "Word --> Char Char Char Char Char+\n1 1 Char --> [:corpus:]\n"),
    # docs/algorithms.md 2.5: a word is a stem and an optional suffix (for ag_parser's token mode).
    "morph": ("Word --> Stem Suffix\nWord --> Stem\nStem --> Char+\nSuffix --> Char+\n"
              "1 1 Char --> [:corpus:]\n"),
}



def load_grammar(grammar: str, default_a: float, default_b: float):
    """A built-in grammar by name, or a grammar file (py-cfg or PyAdaGram format)."""
    from ..grammar import read_grammar

    if grammar in BUILTIN_GRAMMARS:
        return read_grammar(BUILTIN_GRAMMARS[grammar], default_a=default_a, default_b=default_b,
                            source=f"<built-in grammar {grammar!r}>")
    if not Path(grammar).exists():
        raise ValueError(Errors.E479.format(grammar=grammar, builtins=', '.join(sorted(BUILTIN_GRAMMARS))))
    return read_grammar(grammar, default_a=default_a, default_b=default_b)


def words_and_spaces(pieces: Sequence[str], text: str) -> Tuple[List[str], List[bool]]:
    """Words and spaces for ``Doc(vocab, words, spaces)`` so that ``doc.text == text``.

    ``pieces`` are the non-whitespace words in text order (they spell the text
    without its whitespace). One ``" "`` after a word becomes its trailing
    space; every other whitespace run becomes a whitespace token. Linear time.
    """
    words: List[str] = []
    spaces: List[bool] = []
    pos, n = 0, len(text)
    for piece in pieces:
        start = text.find(piece, pos)
        if start < 0 or (start > pos and not text[pos:start].isspace()):
            raise ValueError(Errors.E480.format(pieces=list(pieces), text=text))
        if start > pos:
            words.append(text[pos:start])
            spaces.append(False)
        words.append(piece)
        spaces.append(False)
        pos = start + len(piece)
        if pos < n and text[pos] == " ":
            spaces[-1] = True
            pos += 1
    if pos < n:
        if not text[pos:].isspace():
            raise ValueError(Errors.E480.format(pieces=list(pieces), text=text))
        words.append(text[pos:])
        spaces.append(False)
    return words, spaces


_WHITESPACE = re.compile(r"\s")


def words_and_spaces_at(offsets: Sequence[int], text: str) -> Tuple[List[str], List[bool]]:
    """`words_and_spaces` for words given as character offsets (start0, end0, start1, ...) in text
    order, with only whitespace between and around them: the same words and spaces, without
    searching the text."""
    if not _WHITESPACE.search(text):  # the words are the whole text, one after the other
        words = list(map(text.__getitem__, map(slice, offsets[::2], offsets[1::2])))
        return words, [False] * len(words)
    words: List[str] = []
    spaces: List[bool] = []
    pos, n = 0, len(text)
    for k in range(0, len(offsets), 2):
        start, end = offsets[k], offsets[k + 1]
        if start > pos:
            words.append(text[pos:start])
            spaces.append(False)
        words.append(text[start:end])
        if end < n and text[end] == " ":
            spaces.append(True)
            pos = end + 1
        else:
            spaces.append(False)
            pos = end
    if pos < n:
        words.append(text[pos:])
        spaces.append(False)
    return words, spaces


def is_dummy_examples(get_examples: Optional[Callable]) -> bool:
    """True for None and for the stand-in `Language.initialize` makes when called without data."""
    if get_examples is None:
        return True
    return getattr(get_examples, "__qualname__", "") == "Language.initialize.<locals>.get_examples"


def load_model_dir(path: Union[str, Path]):
    """A model archive directory (`AdaptorGrammar.save`); errors name the file."""
    from ..model import AdaptorGrammar

    return AdaptorGrammar.load(path)


# ---------------------------------------------------------------- the tokenizer


@registry.tokenizers("spacy-ag.Segmenter.v1")
def create_segmenter(scorer: Optional[Callable] = None, **settings: Any) -> Callable[["Language"], "Segmenter"]:
    """Registered tokenizer ``spacy-ag.Segmenter.v1``; its settings are `SegmenterSettings`.

    scorer (Optional[Callable]): Scoring function for `Segmenter.score`;
        default spacy-ag.segmentation_scorer.v1.
    RETURNS (Callable[[Language], Segmenter]): The tokenizer factory.
    """
    checked = check(SegmenterSettings, settings, "nlp.tokenizer")

    def segmenter_factory(nlp) -> "Segmenter":
        return Segmenter(nlp.vocab, scorer=scorer, **dataclasses.asdict(checked))

    return segmenter_factory


create_segmenter.__signature__ = keyword_signature(
    SegmenterSettings, extra=[inspect.Parameter("scorer", inspect.Parameter.KEYWORD_ONLY, default=None,
                                                annotation=Optional[Callable])])


class Segmenter(ModelSerializer, util.DummyTokenizer):
    """Adaptor-grammar word segmentation as a spaCy tokenizer (see the module doc).

    vocab (Vocab): The shared vocabulary.
    scorer (Optional[Callable]): Scoring function (default: token, boundary and lexicon P/R/F).
    **settings: Any `SegmenterSettings` (grammar, boundary_chars, iterations, sampler, ...).
    """

    kind = "segmenter"

    def __init__(self, vocab: Vocab, *, scorer: Optional[Callable] = None, **settings: Any) -> None:
        self.vocab = vocab
        checked = check(SegmenterSettings, settings, "nlp.tokenizer")
        self.settings = dataclasses.replace(checked, units=resolve_units(checked.units, vocab.lang))
        self.cfg: Dict[str, Any] = dataclasses.asdict(self.settings)
        boundary_chars = self.settings.boundary_chars
        self.boundary = frozenset(DEFAULT_PUNCTUATION if boundary_chars is None else boundary_chars)
        self.scorer = scorer
        self.model = None
        self._warned = False
        self._quiet = False

    # -------------------------------------------------------------- state
    @property
    def is_fitted(self) -> bool:
        return self.model is not None

    def _set_model(self, model) -> None:
        if model is not None:
            model.segment_category = self.cfg["segment_category"]  # checked against the model's grammar
            model.split_at = self.boundary or None
        self.model = model

    # -------------------------------------------------------------- tokenizing
    def _fallback(self, text: str) -> List[str]:
        if not self._warned and not self._quiet:
            warnings.warn(Errors.W482,
                          UserWarning, stacklevel=3)
            self._warned = True
        return [u for u in text_units(text, self.cfg["units"]) if not u.isspace()]

    def _make_doc(self, text: str, pieces: Sequence[str]) -> Doc:
        words, spaces = words_and_spaces(pieces, text)
        return Doc(self.vocab, words=words, spaces=spaces)

    def _docs(self, texts: List[str]) -> List[Doc]:
        """Docs of texts segmented by the model: from the words' character offsets when the model
        gives them (`AdaptorGrammar.segment_offsets`), else from its words."""
        offsets = self.model.segment_offsets(texts)
        if offsets is None:
            return [self._make_doc(text, words) for text, words in zip(texts, self.model.segment(texts))]
        return [Doc(self.vocab, words=words, spaces=spaces)
                for words, spaces in map(words_and_spaces_at, offsets, texts)]

    def __call__(self, text: str) -> Doc:
        """Segment one text.

        text (str): The text; `doc.text` will be identical to it.
        RETURNS (Doc): One token per word.
        """
        if self.model is None:
            return self._make_doc(text, self._fallback(text))
        return self._docs([text])[0]

    def pipe(self, texts: Iterable[str], batch_size: int = 1000) -> Iterator[Doc]:
        """Segment a stream of texts, one engine call per batch.

        texts (Iterable[str]): The texts.
        batch_size (int): Texts per engine call.
        YIELDS (Doc): One Doc per text, in order.
        """
        for batch in util.minibatch(texts, size=batch_size):
            if self.model is None:
                for text in batch:
                    yield self._make_doc(text, self._fallback(text))
            else:
                yield from self._docs(batch)

    # -------------------------------------------------------------- training
    def training_texts(self, examples: Iterable[Example]) -> List[str]:
        """The raw training lines: each example's text cut at whitespace (a hard boundary)."""
        lines: List[str] = []
        for eg in examples:
            lines.extend(eg.reference.text.split())
        return lines

    def initialize(self, get_examples: Optional[Callable[[], Iterable[Example]]] = None, *,
                   nlp=None, model_path: Optional[str] = None, refit: bool = False,
                   pkuseg_model: Optional[Any] = None, pkuseg_user_dict: Optional[Any] = None) -> None:
        """Fit the segmenter on the raw text of the examples, or load a fitted model.

        get_examples (Callable[[], Iterable[Example]]): Training examples; only
            their text is used (gold segmentations are ignored).
        nlp (Language): The pipeline (unused).
        model_path (Optional[str]): A model directory (`AdaptorGrammar.save`,
            e.g. written by `spacy-ag train`) to load instead of fitting.
        refit (bool): Fit even if the segmenter is already fitted. By default
            a fitted segmenter (a sourced or copied tokenizer) is kept as is.
        pkuseg_model, pkuseg_user_dict: Accepted and ignored, so that
            `lang = "zh"` (whose defaults fill them in) works.
        """
        if model_path is not None:
            self._set_model(load_model_dir(model_path))
            return
        if self.model is not None and not refit:
            logger.info("spacy-ag segmenter already fitted; not refitting (set refit = true to refit)")
            return
        if is_dummy_examples(get_examples):
            warnings.warn(Errors.W483, UserWarning, stacklevel=2)
            return
        self._quiet = True
        try:
            lines = self.training_texts(get_examples())
        finally:
            self._quiet = False
        self._set_model(self._fit(lines))

    def _fit(self, lines: List[str]):
        from ..model import AdaptorGrammar

        cfg = self.cfg
        if not any(c not in self.boundary for line in lines for c in line):
            raise ValueError(Errors.E484)
        grammar = load_grammar(cfg["grammar"], cfg["default_a"], cfg["default_b"])
        model = AdaptorGrammar(grammar, segment_category=cfg["segment_category"], mode="chars",
                               split_at=self.boundary or None, units=cfg["units"], max_span=cfg["max_span"])
        logger.info("spacy-ag segmenter: fitting %s on %d chunks, %d iterations",
                    cfg["grammar"], len(lines), cfg["iterations"])
        return fit_adaptor_grammar(model, lines, component="tokenizer", grammar=str(cfg["grammar"]),
                                   settings=self.settings)

    def update(self, examples: Iterable[Example], *, drop: float = 0.0, sgd=None,
               losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        """One online step of the hybrid variational algorithm on the examples' text.

        A tokenizer is not updated by spaCy's training loop itself; add the
        ``ag_tokenizer_update`` pipe to let ``spacy train`` drive this with
        its minibatches. An MCMC-fitted model continues variationally from
        its tables; an unfitted one starts from the grammar.
        RETURNS (Dict[str, float]): `losses` with "tokenizer" increased by the
            negative log likelihood of the batch.
        """
        losses = {} if losses is None else losses
        losses.setdefault("tokenizer", 0.0)
        lines = self.training_texts(examples)
        if not lines:
            return losses
        model = self.model
        if model is None:
            from ..model import AdaptorGrammar

            cfg = self.cfg
            grammar = load_grammar(cfg["grammar"], cfg["default_a"], cfg["default_b"])
            model = AdaptorGrammar(grammar, segment_category=cfg["segment_category"], mode="chars",
                                   split_at=self.boundary or None, inference="online", units=cfg["units"],
                                   max_span=cfg["max_span"])
        losses["tokenizer"] += model.online_step(lines, seed=self.cfg["seed"])
        self._set_model(model)
        return losses

    # -------------------------------------------------------------- scoring
    def score(self, examples: Iterable[Example], **kwargs) -> Dict[str, Any]:
        """token_p/r/f (spaCy's Scorer.score_tokenization), token_acc (gold tokens
        found exactly / gold tokens, `spacy_ag.components.scoring`) plus
        boundary_p/r/f and lexicon_p/r/f (docs/algorithms.md 5.2).

        RETURNS (Dict[str, Any]): The scores.
        """
        from .scoring import score_segmentation

        scorer = self.scorer or score_segmentation
        return scorer(examples, **kwargs)

    # -------------------------------------------------------------- pickling
    def __reduce__(self):
        return (_restore_segmenter, (self.vocab, dict(self.cfg), self.scorer, self.to_bytes()))


def _restore_segmenter(vocab, cfg, scorer, data) -> Segmenter:
    seg = Segmenter(vocab, scorer=scorer, **cfg)
    return seg.from_bytes(data)
