"""The unsupervised word segmenter as a spaCy tokenizer.

Use it from a config::

    [nlp]
    lang = "zh"                      # or "xx" for phoneme strings

    [nlp.tokenizer]
    @tokenizers = "spacy-ag.Segmenter.v1"
    grammar = "unigram"              # "unigram" | "colloc" | path to a grammar file
    segment_category = "Word"
    iterations = 200
    seed = 0
    chains = 1
    boundary_chars = null            # null: spacy_ag.corpus.DEFAULT_PUNCTUATION
    default_a = 0.0001
    default_b = 10000.0

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
* Phoneme strings: the Brent transcription uses ``(`` and ``)`` as vowels,
  and both are in DEFAULT_PUNCTUATION, so set ``boundary_chars = ""`` there
  (with ``lang = "xx"``); for Chinese keep the default.
* An **unfitted** segmenter (no ``initialize`` yet, or ``nlp.initialize()``
  called without examples) falls back to one token per character and warns
  once. It does not raise, because spaCy's corpus readers tokenize the
  training examples with this very tokenizer *before* it is fitted.
"""
from __future__ import annotations

import logging
import warnings
from pathlib import Path
from typing import (
    TYPE_CHECKING, Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple, Union,
)

import srsly
from spacy import util
from spacy.tokens import Doc
from spacy.training import Example
from spacy.util import registry

if TYPE_CHECKING:
    from spacy.language import Language
from spacy.vocab import Vocab

from ..corpus import DEFAULT_PUNCTUATION
from .fitting import fit_adaptor_grammar

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
    # ALGORITHMS.md 2.1: a sentence is words, a word is characters.
    "unigram": "1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n",
    # ALGORITHMS.md 2.2: collocations of words.
    "colloc": "1 1 Sentence --> Colloc+\nColloc --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n",
    # ALGORITHMS.md 2.5: a word is a stem and an optional suffix (for ag_parser's token mode).
    "morph": ("Word --> Stem Suffix\nWord --> Stem\nStem --> Char+\nSuffix --> Char+\n"
              "1 1 Char --> [:corpus:]\n"),
}

CFG_VERSION = 1


def load_grammar(grammar: str, default_a: float, default_b: float):
    """A built-in grammar by name, or a grammar file (py-cfg or PyAdaGram format)."""
    from ..grammar import read_grammar

    if grammar in BUILTIN_GRAMMARS:
        return read_grammar(BUILTIN_GRAMMARS[grammar], default_a=default_a, default_b=default_b,
                            source=f"<built-in grammar {grammar!r}>")
    if not Path(grammar).exists():
        raise ValueError(f"grammar {grammar!r}: neither a built-in grammar "
                         f"({', '.join(sorted(BUILTIN_GRAMMARS))}) nor an existing grammar file")
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
            raise ValueError(f"segmentation {list(pieces)!r} does not spell the text {text!r}")
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
            raise ValueError(f"segmentation {list(pieces)!r} does not spell the text {text!r}")
        words.append(text[pos:])
        spaces.append(False)
    return words, spaces


def is_dummy_examples(get_examples: Optional[Callable]) -> bool:
    """True for None and for the stand-in `Language.initialize` makes when called without data."""
    if get_examples is None:
        return True
    return getattr(get_examples, "__qualname__", "") == "Language.initialize.<locals>.get_examples"


# ---------------------------------------------------------------- serialization helpers


def model_to_bytes(model) -> bytes:
    return model.to_bytes() if model is not None else b""


def model_from_bytes(data: bytes, source: str):
    from ..model import AdaptorGrammar

    return AdaptorGrammar.from_bytes(data, source=source) if data else None


def load_model_dir(path: Union[str, Path]):
    """A model directory (grammar.lt + state.npz); errors name the file."""
    from ..model import AdaptorGrammar

    return AdaptorGrammar.load(path)


def check_cfg(cfg: Dict[str, Any], source: str, kind: str) -> Dict[str, Any]:
    from ..serialize import ModelFileError

    if not isinstance(cfg, dict) or cfg.get("kind") != kind:
        raise ModelFileError(f"{source}: not the settings of a spacy-ag {kind}")
    if cfg.get("cfg_version") != CFG_VERSION:
        raise ModelFileError(f"{source}: settings of version {cfg.get('cfg_version')!r}, expected "
                             f"{CFG_VERSION}; use the spacy-ag version that wrote it")
    return cfg


def read_cfg_file(path: Path, kind: str) -> Dict[str, Any]:
    from ..serialize import ModelFileError

    try:
        cfg = srsly.read_json(path)
    except ValueError as err:
        raise ModelFileError(f"{path}: damaged settings file ({err})") from None
    return check_cfg(cfg, str(path), kind)


def read_cfg_bytes(data: bytes, source: str, kind: str) -> Dict[str, Any]:
    from ..serialize import ModelFileError

    try:
        cfg = srsly.json_loads(data)
    except ValueError as err:
        raise ModelFileError(f"{source}: damaged settings ({err})") from None
    return check_cfg(cfg, source, kind)


class ModelSerializer:
    """to_disk/from_disk/to_bytes/from_bytes for a component whose state is
    ``self.cfg`` (JSON) plus ``self.model`` (an `AdaptorGrammar` or None).

    On disk: ``cfg`` (JSON) and ``model/`` (``grammar.lt`` + ``state.npz``,
    the format of `AdaptorGrammar.save`). Both honour ``exclude`` ("cfg",
    "model"). Settings that the component was built with (its config) win
    over the saved ``cfg``, which is kept for the version check and for
    people reading the directory.
    """

    kind = "component"
    model: Any = None

    def _cfg_out(self) -> Dict[str, Any]:
        from .. import __version__

        return {"kind": self.kind, "cfg_version": CFG_VERSION, "spacy_ag_version": __version__,
                "fitted": self.model is not None, **self.cfg}

    def _set_model(self, model) -> None:
        self.model = model

    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        """Save to a directory.

        path (str / Path): The directory (created if needed).
        exclude (Iterable[str]): "cfg" and/or "model" to leave out.
        """
        path = util.ensure_path(path)

        def write_model(p: Path) -> None:
            if self.model is not None:
                self.model.save(p)

        util.to_disk(path, {"cfg": lambda p: srsly.write_json(p, self._cfg_out()), "model": write_model},
                     exclude)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()):
        """Load from a directory written by `to_disk`.

        RETURNS: The component, with the saved model (if any).
        """
        from ..serialize import ModelFileError

        path = util.ensure_path(path)
        saved: Dict[str, Any] = {}

        def read_cfg(p: Path) -> None:
            if p.exists():
                saved.update(read_cfg_file(p, self.kind))

        def read_model(p: Path) -> None:
            if p.exists():
                self._set_model(load_model_dir(p))
            elif saved.get("fitted") and "model" not in exclude:
                raise ModelFileError(f"{p}: model directory missing; {path} is incomplete")

        util.from_disk(path, {"cfg": read_cfg, "model": read_model}, exclude)
        return self

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        """Serialize to bytes (msgpack with "cfg" and "model" keys).

        RETURNS (bytes): The serialized component.
        """
        return util.to_bytes({"cfg": lambda: srsly.json_dumps(self._cfg_out(), sort_keys=True),
                              "model": lambda: model_to_bytes(self.model)}, exclude)

    def from_bytes(self, bytes_data: bytes, *, exclude: Iterable[str] = tuple()):
        """Load from bytes produced by `to_bytes`.

        RETURNS: The component.
        """
        from ..serialize import ModelFileError

        source = f"<{self.kind} bytes>"
        try:
            srsly.msgpack_loads(bytes_data)
        except ValueError as err:
            raise ModelFileError(f"{source}: damaged data ({err})") from None
        util.from_bytes(bytes_data, {"cfg": lambda b: read_cfg_bytes(b, source, self.kind),
                                     "model": lambda b: self._set_model(model_from_bytes(b, source))},
                        exclude)
        return self


# ---------------------------------------------------------------- the tokenizer


@registry.tokenizers("spacy-ag.Segmenter.v1")
def create_segmenter(
    grammar: str = "unigram",
    segment_category: str = "Word",
    iterations: int = 200,
    seed: int = 0,
    chains: int = 1,
    boundary_chars: Optional[str] = None,
    default_a: float = 1e-4,
    default_b: float = 1e4,
    scorer: Optional[Callable] = None,
) -> Callable[["Language"], "Segmenter"]:
    """Registered tokenizer ``spacy-ag.Segmenter.v1``.

    grammar (str): "unigram", "colloc" or the path of a grammar file; it is only
        read when the segmenter is fitted (a saved pipeline carries its grammar).
    segment_category (str): The nonterminal whose nodes are the words.
    iterations (int): MCMC sweeps when fitting in `initialize`.
    seed (int): Random seed of the sampler.
    chains (int): Parallel chains (decoding uses chain 0).
    boundary_chars (Optional[str]): Characters that are always words of their
        own and never inside a word; None means spacy_ag.corpus.DEFAULT_PUNCTUATION,
        "" means whitespace only.
    default_a (float): PY discount of adapted nonterminals without numbers.
    default_b (float): PY concentration of adapted nonterminals without numbers.
    scorer (Optional[Callable]): Scoring function for `Segmenter.score`;
        default spacy-ag.segmentation_scorer.v1.
    RETURNS (Callable[[Language], Segmenter]): The tokenizer factory.
    """

    def segmenter_factory(nlp) -> "Segmenter":
        return Segmenter(nlp.vocab, grammar=grammar, segment_category=segment_category,
                         iterations=iterations, seed=seed, chains=chains, boundary_chars=boundary_chars,
                         default_a=default_a, default_b=default_b, scorer=scorer)

    return segmenter_factory


class Segmenter(ModelSerializer, util.DummyTokenizer):
    """Adaptor-grammar word segmentation as a spaCy tokenizer (see the module doc)."""

    kind = "segmenter"

    def __init__(self, vocab: Vocab, *, grammar: str = "unigram", segment_category: str = "Word",
                 iterations: int = 200, seed: int = 0, chains: int = 1,
                 boundary_chars: Optional[str] = None, default_a: float = 1e-4, default_b: float = 1e4,
                 scorer: Optional[Callable] = None) -> None:
        if iterations < 1 or chains < 1:
            raise ValueError(f"spacy-ag.Segmenter.v1: iterations and chains must be >= 1, got "
                             f"{iterations} and {chains}")
        self.vocab = vocab
        self.cfg: Dict[str, Any] = {
            "grammar": grammar, "segment_category": segment_category, "iterations": iterations,
            "seed": seed, "chains": chains, "boundary_chars": boundary_chars,
            "default_a": default_a, "default_b": default_b,
        }
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
            category = self.cfg["segment_category"]
            if category not in model.compiled.nt_index:
                raise ValueError(f"the model has no nonterminal {category!r} (segment_category); "
                                 f"it has {', '.join(model.compiled.nonterminals)}")
            model.segment_category = category
            model.split_at = self.boundary or None
        self.model = model

    # -------------------------------------------------------------- tokenizing
    def _fallback(self, text: str) -> List[str]:
        if not self._warned and not self._quiet:
            warnings.warn("spacy-ag segmenter is not fitted yet: one token per character. Call "
                          "nlp.initialize(get_examples) with raw text, or load a trained pipeline.",
                          UserWarning, stacklevel=3)
            self._warned = True
        return [c for c in text if not c.isspace()]

    def _make_doc(self, text: str, pieces: Sequence[str]) -> Doc:
        words, spaces = words_and_spaces(pieces, text)
        return Doc(self.vocab, words=words, spaces=spaces)

    def __call__(self, text: str) -> Doc:
        """Segment one text.

        text (str): The text; `doc.text` will be identical to it.
        RETURNS (Doc): One token per word.
        """
        if self.model is None:
            return self._make_doc(text, self._fallback(text))
        return self._make_doc(text, self.model.segment([text])[0])

    def pipe(self, texts: Iterable[str], batch_size: int = 1000) -> Iterator[Doc]:
        """Segment a stream of texts, one engine call per batch.

        texts (Iterable[str]): The texts.
        batch_size (int): Texts per engine call.
        YIELDS (Doc): One Doc per text, in order.
        """
        for batch in util.minibatch(texts, size=batch_size):
            if self.model is None:
                pieces = [self._fallback(t) for t in batch]
            else:
                pieces = self.model.segment(batch)
            for text, words in zip(batch, pieces):
                yield self._make_doc(text, words)

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
            warnings.warn("spacy-ag segmenter: nlp.initialize() was called without examples, so the "
                          "segmenter stays unfitted (one token per character)", UserWarning, stacklevel=2)
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
            raise ValueError("spacy-ag segmenter: the training examples contain no text to learn from "
                             "(only whitespace and boundary characters)")
        grammar = load_grammar(cfg["grammar"], cfg["default_a"], cfg["default_b"])
        model = AdaptorGrammar(grammar, segment_category=cfg["segment_category"], mode="chars",
                               split_at=self.boundary or None)
        logger.info("spacy-ag segmenter: fitting %s on %d chunks, %d iterations",
                    cfg["grammar"], len(lines), cfg["iterations"])
        return fit_adaptor_grammar(model, lines, component="tokenizer", grammar=str(cfg["grammar"]),
                                   iterations=cfg["iterations"], chains=cfg["chains"], seed=cfg["seed"])

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
                                   split_at=self.boundary or None, inference="online")
        losses["tokenizer"] += model.online_step(lines, seed=self.cfg["seed"])
        self._set_model(model)
        return losses

    # -------------------------------------------------------------- scoring
    def score(self, examples: Iterable[Example], **kwargs) -> Dict[str, Any]:
        """token_acc/p/r/f (spaCy's Scorer.score_tokenization) plus boundary_p/r/f
        and lexicon_p/r/f (ALGORITHMS.md 5.2).

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
