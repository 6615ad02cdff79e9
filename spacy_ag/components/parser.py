"""``ag_parser``: parse Docs (or each token) with a trained adaptor grammar.

    nlp.add_pipe("ag_parser", config={"grammar": "colloc", "mode": "doc"})
    nlp.initialize(lambda: examples)      # fits the grammar on the docs' text

Modes:

* ``mode = "doc"``: the terminals are the characters of ``doc.text`` without
  its whitespace; one tree per Doc. A character is an extended grapheme
  cluster (``units = "graphemes"``), a code point (``units = "codepoints"``)
  or a grapheme with every run of digits and Latin letters as one unit
  (``units = "alnum-runs"``); the default ``units = "auto"`` takes the
  units of ``nlp.lang``, as the segmenter does. Node offsets are character
  offsets in ``doc.text`` either way.
* ``mode = "token"``: the terminals are the characters of each token (for
  word-internal grammars such as morphology); one tree per non-whitespace
  token (equal token texts are parsed once per Doc). ``train_on = "types"``
  fits on each distinct token text once (the usual unit for morphology:
  a frequent word should not dominate the analyses of the rare ones),
  ``"tokens"`` on every token.

Morphology (see `spacy_ag.morphology`): ``grammar`` may name a generated
morphology grammar, ``"stem-suffix"``, ``"prefix-stem-suffix"`` or
``"submorphs"``, each also with ``-classes`` (``"stem-suffix-classes"``:
``classes`` hidden classes, [JGG06] used 6)::

    nlp.add_pipe("ag_parser", config={"grammar": "stem-suffix-classes", "classes": 6,
                                      "mode": "token", "train_on": "types"})

Output (every value survives ``DocBin(store_user_data=True)`` and
``nlp.pipe(..., n_process=k)``):

* ``doc.spans[spans_key]``: the tree's nodes in preorder (in token mode, the
  nodes of each token's tree, token by token), labelled with their
  nonterminal. With ``compact = true`` (the default) only adapted nodes and
  the roots are kept, as in py-cfg's compact trees; with false, every
  nonterminal node. A span must cover whole tokens, so a node whose
  characters do not align with token boundaries is widened to the smallest
  covering token span (``doc.char_span(..., alignment_mode="expand")``); in
  token mode every node spans its token. The exact extent of each node is
  kept in the group's attrs. ``SpanGroup.attrs``:

  - ``parent``: index of the parent node in the group (-1 for a root);
  - ``adapted``: the node's nonterminal is adapted;
  - ``cached``: the node is a reused cache entry (a table of its adaptor);
  - ``customers``: for a cached node, how often the training corpus used its table (None otherwise);
  - ``start_char`` / ``end_char``: the node's exact character offsets in ``doc.text``;
  - ``units``: the model's text units (what a terminal is), one value for the group.

  `spacy_ag.components.tree_pictures` draws the trees from this group.

* ``doc._.ag_tree``: the bracketed tree (doc mode; None in token mode or
  when the text has no parse).
* ``token._.ag_tree``: the token's bracketed tree and ``token._.ag_morphs``:
  the yields of the outermost nodes labelled with one of ``morph_labels``,
  left to right, as a list of strings (token mode; None without a parse).
  The value lives in the hidden default extension ``token._._ag_morphs``
  (so in ``doc.user_data``); ``ag_morphs`` is a module-level getter/setter
  that always returns a new list, because spaCy restores sequences in
  ``user_data`` as tuples from DocBin but as lists from ``Doc.from_bytes``
  (``n_process``), and the two would compare unequal. With a grammar whose
  morphs are labelled ``Stem_3`` and the like (hidden classes), a morph label
  ``Stem`` matches them too, and characters under no morph node are kept as
  a morph of their own, so the morphs always spell the token.
* ``token._.ag_morph_string``: the morphs joined by ``+`` (``walk+ing``),
  the form ``spacy-ag segment --level`` prints (a getter; None without a parse).
* ``token._.ag_morph_class``: the hidden class ``c`` of the ``Word_c`` that
  expanded the token (an int), or None (no parse, or a grammar without classes).
* ``token.morph`` is left alone unless ``set_morph = true``: then the class is
  added as the feature ``AgClass=<c>`` (kept with the token's other features).
  The morphs themselves are not written there: UD features hold closed-class
  values (``Tense=Past``), and a segmentation is a string of the word's own
  letters, which may contain the ``|``, ``=`` and ``,`` that spaCy's MORPH
  syntax reserves.

Text that the grammar cannot parse (for example a character never seen in
training) gets no tree: an empty span group and None extensions.
"""
from __future__ import annotations

import dataclasses
import logging
import warnings
from typing import Any, Callable, Dict, Iterable, Iterator, List, Optional, Sequence, Tuple

from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Span, SpanGroup, Token
from spacy.training import Example
from spacy.vocab import Vocab

from ..errors import Errors
from ..morphology.analysis import format_morphs, morph_class, morphs_at
from ..morphology.grammars import morphology_grammar, parse_grammar_name
from ..settings import ParserSettings, check, defaults, keyword_signature, resolve_units
from ..text_units import terminal_spans
from .fitting import fit_adaptor_grammar
from .segmenter import is_dummy_examples, load_grammar, load_model_dir
from .serialization import ModelSerializer

logger = logging.getLogger("spacy_ag")

__all__ = ["AGParser", "make_ag_parser", "install_extensions"]



def install_extensions() -> None:
    """Register the Doc and Token extensions (values with defaults, stored in user_data)."""
    Doc.set_extension("ag_tree", default=None, force=True)
    Token.set_extension("ag_tree", default=None, force=True)
    Token.set_extension("_ag_morphs", default=None, force=True)
    Token.set_extension("ag_morphs", getter=_get_morphs, setter=_set_morphs, force=True)
    Token.set_extension("ag_morph_class", default=None, force=True)
    Token.set_extension("ag_morph_string", getter=_get_morph_string, force=True)


def _get_morphs(token: Token) -> Optional[List[str]]:
    value = token._._ag_morphs
    return None if value is None else list(value)


def _set_morphs(token: Token, value: Optional[Sequence[str]]) -> None:
    token._._ag_morphs = None if value is None else tuple(value)


def _get_morph_string(token: Token) -> Optional[str]:
    value = token._._ag_morphs
    return None if value is None else format_morphs(value)


install_extensions()


@Language.factory(
    "ag_parser",
    assigns=["doc.spans", "doc._.ag_tree", "token._.ag_tree", "token._.ag_morphs",
             "token._.ag_morph_class", "token.morph"],
    default_config=defaults(ParserSettings),
)
def make_ag_parser(nlp: Language, name: str, **settings: Any) -> "AGParser":
    """Factory of the ``ag_parser`` component; its settings are `ParserSettings`."""
    return AGParser(nlp.vocab, name, **settings)


make_ag_parser.__signature__ = keyword_signature(ParserSettings, "nlp", "name")


class AGParser(ModelSerializer, Pipe):
    """Adaptor-grammar parser component (see the module doc).

    vocab (Vocab): The shared vocabulary.
    name (str): The component name.
    **settings: Any `ParserSettings`: grammar ("unigram", "colloc", "morph", a
        morphology grammar such as "stem-suffix-classes", or a grammar file),
        mode ("doc" or "token"), spans_key, morph_labels, the sampler
        (iterations, chains, seed, workers, sampler), ...
    """

    kind = "parser"
    model = None  # spaCy: no thinc model, nothing to optimise

    @property
    def is_trainable(self) -> bool:
        return self.settings.online_updates

    def finish_update(self, sgd=None) -> None:
        """Nothing to do: `update` already made its online step (spaCy's optimizer has no part in it)."""

    def __init__(self, vocab: Vocab, name: str = "ag_parser", **settings: Any) -> None:
        self.vocab = vocab
        self.name = name
        checked = check(ParserSettings, settings, name)
        self.settings = dataclasses.replace(checked, units=resolve_units(checked.units, vocab.lang))
        self.cfg: Dict[str, Any] = dataclasses.asdict(self.settings)
        self.model = None
        self._model_path = self.settings.model
        self._token_cache: Dict[str, Optional[Tuple]] = {}

    # -------------------------------------------------------------- state
    @property
    def is_fitted(self) -> bool:
        return self.model is not None

    def _set_model(self, model) -> None:
        self.model = model
        self._token_cache = {}

    def _require_model(self):
        if self.model is None and self._model_path:
            self._set_model(load_model_dir(self._model_path))
        if self.model is None:
            raise ValueError(Errors.E421.format(name=self.name))
        return self.model

    # -------------------------------------------------------------- training
    def training_texts(self, examples: Iterable[Example]) -> List[str]:
        """Doc mode: each reference text; token mode: each non-whitespace reference token
        (each distinct one once, in order of first occurrence, with ``train_on = "types"``)."""
        if self.cfg["mode"] == "doc":
            return [eg.reference.text for eg in examples if eg.reference.text.strip()]
        tokens = [t.text for eg in examples for t in eg.reference if not t.is_space]
        if self.cfg.get("train_on") == "types":
            return list(dict.fromkeys(tokens))
        return tokens

    def initialize(self, get_examples: Optional[Callable[[], Iterable[Example]]] = None, *,
                   nlp: Optional[Language] = None, model_path: Optional[str] = None,
                   refit: bool = False) -> None:
        """Fit the grammar on the text of the examples, or load a trained model.

        get_examples (Callable[[], Iterable[Example]]): Training examples (text only).
        nlp (Language): The pipeline (unused).
        model_path (Optional[str]): A model directory to load instead of fitting.
        refit (bool): Fit even if a model is already present.
        """
        if model_path is not None:
            self._set_model(load_model_dir(model_path))
            return
        if self.model is not None and not refit:
            return
        if self._model_path and not refit:
            self._require_model()
            return
        if is_dummy_examples(get_examples):
            warnings.warn(Errors.W422.format(name=self.name),
                          UserWarning, stacklevel=2)
            return
        self._set_model(self._fit(self.training_texts(get_examples())))

    def _fit(self, texts: List[str]):
        from ..model import AdaptorGrammar

        cfg = self.cfg
        if not texts:
            raise ValueError(Errors.E423.format(name=self.name))
        grammar = self.load_grammar()
        model = AdaptorGrammar(grammar, segment_category=cfg["segment_category"] or grammar.start,
                               mode="chars", units=cfg["units"], max_span=cfg["max_span"])
        logger.info("%s: fitting %s on %d texts, %d iterations", self.name, cfg["grammar"], len(texts),
                    cfg["iterations"])
        return fit_adaptor_grammar(model, texts, component=self.name, grammar=str(cfg["grammar"]),
                                   settings=self.settings)

    def update(self, examples: Iterable[Example], *, drop: float = 0.0, sgd=None,
               losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        """One online step of the hybrid variational algorithm on the examples' text, so that
        ``spacy train`` drives the grammar with its minibatches.

        RETURNS (Dict[str, float]): `losses` with this component's entry increased by
            the negative log likelihood of the batch.
        """
        from ..model import AdaptorGrammar

        losses = {} if losses is None else losses
        losses.setdefault(self.name, 0.0)
        texts = self.training_texts(examples)
        if not texts or not self.settings.online_updates:
            return losses
        if self.model is None and self._model_path:
            self._require_model()
        if self.model is None:
            grammar = self.load_grammar()
            cfg = self.cfg
            self._set_model(AdaptorGrammar(grammar, segment_category=cfg["segment_category"] or grammar.start,
                                           mode="chars", inference="online", units=cfg["units"],
                                           max_span=cfg["max_span"]))
        losses[self.name] += self.model.online_step(texts, seed=self.cfg["seed"])
        self._token_cache = {}
        return losses

    def load_grammar(self):
        """The `Grammar` named by the ``grammar`` setting: a generated morphology
        grammar (with its own a and b, `spacy_ag.morphology.grammars`), a
        built-in or a grammar file (with ``default_a``/``default_b``).
        """
        from ..grammar import read_grammar

        cfg = self.cfg
        morph = parse_grammar_name(str(cfg["grammar"]))
        if morph is None:
            return load_grammar(cfg["grammar"], cfg["default_a"], cfg["default_b"])
        kind, with_classes = morph
        text = morphology_grammar(kind, classes=cfg.get("classes", 6) if with_classes else None)
        return read_grammar(text, source=f"<morphology grammar {cfg['grammar']!r}>")

    # -------------------------------------------------------------- annotating
    def __call__(self, doc: Doc) -> Doc:
        """Parse one Doc and store the tree (see the module doc).

        RETURNS (Doc): The Doc, annotated.
        """
        model = self._require_model()
        if self.cfg["mode"] == "doc":
            tree = model.parse([doc.text])[0] if doc.text.strip() else None
            self._annotate_doc(doc, tree)
        else:
            self._annotate_tokens(doc)
        return doc

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128) -> Iterator[Doc]:
        """Parse a stream of Docs.

        YIELDS (Doc): The Docs, annotated, in order.
        """
        error_handler = self.get_error_handler()
        for doc in stream:
            try:
                yield self(doc)
            except Exception as e:
                error_handler(self.name, self, [doc], e)

    def _nodes(self, tree) -> List[Tuple[Any, int]]:
        """(node, parent index) in preorder; compact keeps adapted nodes and the root."""
        out: List[Tuple[Any, int]] = []
        compact = self.cfg["compact"]
        todo = [(tree, -1, True)]
        while todo:
            node, parent, is_root = todo.pop()
            if not compact or is_root or node.adapted:
                out.append((node, parent))
                parent = len(out) - 1
            kids = [c for c in node.children if not isinstance(c, str)]
            todo.extend((c, parent, False) for c in reversed(kids))
        return out

    def _group(self, doc: Doc, entries) -> SpanGroup:
        """entries: (span, node, parent, start_char, end_char)."""
        attrs = {
            "parent": [e[2] for e in entries],
            "adapted": [bool(e[1].adapted) for e in entries],
            "cached": [bool(e[1].cached) for e in entries],
            "customers": [e[1].customers for e in entries],
            "start_char": [e[3] for e in entries],
            "end_char": [e[4] for e in entries],
            "units": self.model.units if self.model is not None else None,
        }
        return SpanGroup(doc, name=self.cfg["spans_key"], attrs=attrs, spans=[e[0] for e in entries])

    def _annotate_doc(self, doc: Doc, tree) -> None:
        entries = []
        if tree is not None:
            spans = terminal_spans(doc.text, self.model.units)  # terminal i is doc.text[spans[i][0]:spans[i][1]]
            for node, parent in self._nodes(tree):
                start, end = spans[node.start][0], spans[node.end - 1][1]
                span = doc.char_span(start, end, label=node.label, alignment_mode="expand")
                entries.append((span, node, parent, start, end))
            doc._.ag_tree = tree.bracketed(compact=self.cfg["compact"])
        else:
            doc._.ag_tree = None
        doc.spans[self.cfg["spans_key"]] = self._group(doc, entries)

    def _token_analysis(self, text: str):
        """(tree, bracketed, morphs) of a token text, cached per model."""
        if text in self._token_cache:
            return self._token_cache[text]
        tree = self.model.parse([text])[0]
        if tree is None:
            result = None
        else:
            result = (tree, tree.bracketed(compact=self.cfg["compact"]),
                      tuple(morphs_at(tree, self.cfg["morph_labels"])), morph_class(tree))
        if len(self._token_cache) > 100_000:
            self._token_cache.clear()
        self._token_cache[text] = result
        return result

    def _annotate_tokens(self, doc: Doc) -> None:
        entries = []
        for token in doc:
            if token.is_space:
                continue
            analysis = self._token_analysis(token.text)
            if analysis is None:
                token._.ag_tree = None
                token._._ag_morphs = None
                token._.ag_morph_class = None
                continue
            tree, bracketed, morphs, klass = analysis
            token._.ag_tree = bracketed
            token._._ag_morphs = morphs
            token._.ag_morph_class = klass
            if klass is not None and self.cfg.get("set_morph"):
                features = token.morph.to_dict()
                features["AgClass"] = str(klass)
                token.set_morph(features)
            spans = terminal_spans(token.text, self.model.units)
            base = len(entries)
            for node, parent in self._nodes(tree):
                span = Span(doc, token.i, token.i + 1, label=node.label)
                entries.append((span, node, parent + base if parent >= 0 else -1,
                                token.idx + spans[node.start][0], token.idx + spans[node.end - 1][1]))
        doc.spans[self.cfg["spans_key"]] = self._group(doc, entries)

    # -------------------------------------------------------------- pickling
    def __reduce__(self):
        return (_restore_parser, (self.vocab, self.name, dict(self.cfg), self.to_bytes()))


def _restore_parser(vocab, name, cfg, data) -> AGParser:
    return AGParser(vocab, name, **cfg).from_bytes(data)
