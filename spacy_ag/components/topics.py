"""``ag_topics``: infinite-vocabulary topics (InfVocLDA, an adaptor grammar trained online) on Docs.

    nlp.add_pipe("ag_topics", config={"n_topics": 5})
    nlp.initialize(lambda: examples)       # one or more online passes over the docs' tokens

Output (every value survives ``DocBin(store_user_data=True)``):

* ``doc.cats["TOPIC_<i>"]`` (prefix configurable): the document's topic
  proportions E_q[theta], summing to 1;
* ``doc._.ag_topics``: the same proportions as a sequence of floats, in topic order
  (a list; a tuple after a DocBin round trip);
* ``token._.ag_topic``: the token's most probable topic, or None for tokens
  that are not modelled (spaces, punctuation, stop words when
  ``skip_stop``, characters never seen in training).

Words never seen in training still get topics: their probability under a
topic comes from the topic's character-level base distribution. ``update``
makes one online step per minibatch (``spacy train``); its loss is the
negative log likelihood of the batch.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Callable, Dict, Iterable, List, Optional, Union

import srsly
from spacy import util
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Token
from spacy.training import Example
from spacy.vocab import Vocab

from .segmenter import is_dummy_examples

ATTRS = ("LOWER", "ORTH", "NORM", "LEMMA")


def install_topic_extensions() -> None:
    Doc.set_extension("ag_topics", default=None, force=True)
    Token.set_extension("ag_topic", default=None, force=True)


install_topic_extensions()


@Language.factory(
    "ag_topics",
    assigns=["doc.cats", "doc._.ag_topics", "token._.ag_topic"],
    default_config={"n_topics": 5, "alpha": 0.1, "a": 0.0, "b": "auto", "passes": 1, "seed": 0,
                    "attr": "LOWER", "skip_stop": False, "prefix": "TOPIC_", "batch_size": 50,
                    "truncation": 3000, "local_iterations": 20},
)
def make_ag_topics(nlp: Language, name: str, n_topics: int, alpha: float, a: float, b: Union[float, str],
                   passes: int,
                   seed: int, attr: str, skip_stop: bool, prefix: str, batch_size: int, truncation: int,
                   local_iterations: int) -> "AGTopics":
    """The topic tagger.

    n_topics (int): Number of topics.
    alpha (float): Dirichlet prior of the document proportions.
    a (float): Pitman-Yor discount of every topic.
    b (Union[float, str]): Pitman-Yor concentration of every topic; "auto": tokens / (2 n_topics)
        of the training examples (see `TopicModel.prepare`).
    passes (int): Online passes over the examples in `initialize`.
    seed (int): Random seed.
    attr (str): Token attribute that is the word: LOWER, ORTH, NORM or LEMMA.
    skip_stop (bool): Leave stop words out of the model.
    prefix (str): Prefix of the ``doc.cats`` labels.
    batch_size (int): Documents per online minibatch.
    truncation (int): Entries kept per topic (K_Topic).
    local_iterations (int): Fixed-point iterations of a document's proportions.
    """
    return AGTopics(nlp.vocab, name, n_topics=n_topics, alpha=alpha, a=a, b=b, passes=passes, seed=seed,
                    attr=attr, skip_stop=skip_stop, prefix=prefix, batch_size=batch_size, truncation=truncation,
                    local_iterations=local_iterations)


class AGTopics(Pipe):
    model = None  # the TopicModel (not a thinc model: nothing for spaCy's optimizer)

    def __init__(self, vocab: Vocab, name: str = "ag_topics", **cfg: Any) -> None:
        if cfg.get("attr", "LOWER") not in ATTRS:
            raise ValueError(f"{name}: attr must be one of {', '.join(ATTRS)}, got {cfg.get('attr')!r}")
        if cfg.get("n_topics", 5) < 1:
            raise ValueError(f"{name}: n_topics must be at least 1, got {cfg.get('n_topics')}")
        self.vocab = vocab
        self.name = name
        self.cfg: Dict[str, Any] = dict(cfg)
        self.model = None

    # -------------------------------------------------------------- words
    def _modelled(self, token: Token) -> bool:
        return not (token.is_space or token.is_punct or (self.cfg.get("skip_stop") and token.is_stop))

    def _word(self, token: Token) -> str:
        attr = self.cfg.get("attr", "LOWER")
        return {"LOWER": token.lower_, "ORTH": token.text, "NORM": token.norm_, "LEMMA": token.lemma_}[attr]

    def words(self, doc: Doc) -> List[str]:
        return [self._word(t) for t in doc if self._modelled(t)]

    def _new_model(self):
        from ..topics import TopicModel, default_topic_settings

        c = self.cfg
        return TopicModel(c["n_topics"], alpha=c["alpha"], a=c["a"], b=c["b"],
                          local_iterations=c["local_iterations"],
                          online=default_topic_settings(batch_size=c["batch_size"],
                                                        default_truncation=c["truncation"]))

    # -------------------------------------------------------------- training
    def initialize(self, get_examples: Optional[Callable[[], Iterable[Example]]] = None, *,
                   nlp: Optional[Language] = None) -> None:
        """Learn the topics from the examples' reference docs (online passes)."""
        if is_dummy_examples(get_examples):
            return
        docs = [self.words(eg.reference) for eg in get_examples()]
        docs = [d for d in docs if d]
        if not docs:
            raise ValueError(f"{self.name}: the training examples contain no words to learn topics from")
        self.model = self._new_model()
        self.model.fit(docs, passes=self.cfg["passes"], seed=self.cfg["seed"])

    def update(self, examples: Iterable[Example], *, drop: float = 0.0, sgd=None,
               losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        """One online minibatch of the examples' documents; loss: their negative log likelihood."""
        losses = {} if losses is None else losses
        losses.setdefault(self.name, 0.0)
        docs = [d for d in (self.words(eg.reference) for eg in examples) if d]
        if not docs:
            return losses
        if self.model is None:
            self.model = self._new_model()
        losses[self.name] -= self.model.update_documents(docs, seed=self.cfg["seed"])
        return losses

    # -------------------------------------------------------------- annotating
    def __call__(self, doc: Doc) -> Doc:
        return next(self.pipe([doc]))

    def pipe(self, stream: Iterable[Doc], *, batch_size: int = 128):
        if self.model is None:
            raise ValueError(f"{self.name}: no topics yet. Call nlp.initialize(get_examples) or load a "
                             "trained pipeline")
        prefix = self.cfg.get("prefix", "TOPIC_")
        for batch in util.minibatch(stream, size=batch_size):
            modelled = [[t for t in doc if self._modelled(t)] for doc in batch]
            theta, per_token = self.model.infer([[self._word(t) for t in tokens] for tokens in modelled],
                                                return_tokens=True)
            for doc, tokens, proportions, rows in zip(batch, modelled, theta, per_token):
                for i, p in enumerate(proportions):
                    doc.cats[f"{prefix}{i}"] = float(p)
                doc._.ag_topics = [float(p) for p in proportions]
                for token, row in zip(tokens, rows):
                    token._.ag_topic = None if row is None else int(row.argmax())
                yield doc

    # -------------------------------------------------------------- saving
    def to_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> None:
        path = util.ensure_path(path)

        def write_model(p: Path) -> None:
            if self.model is not None:
                self.model.save(p)

        util.to_disk(path, {"cfg": lambda p: srsly.write_json(p, self.cfg), "model": write_model}, exclude)

    def from_disk(self, path: Union[str, Path], *, exclude: Iterable[str] = tuple()) -> "AGTopics":
        from ..topics import TopicModel

        path = util.ensure_path(path)

        def read_model(p: Path) -> None:
            if p.exists():
                self.model = TopicModel.load(p)

        util.from_disk(path, {"cfg": lambda p: None, "model": read_model}, exclude)
        return self

    def to_bytes(self, *, exclude: Iterable[str] = tuple()) -> bytes:
        return util.to_bytes({"cfg": lambda: srsly.json_dumps(self.cfg, sort_keys=True),
                              "model": lambda: self.model.to_bytes() if self.model is not None else b""},
                             exclude)

    def from_bytes(self, data: bytes, *, exclude: Iterable[str] = tuple()) -> "AGTopics":
        from ..topics import TopicModel

        def read_model(b: bytes) -> None:
            self.model = TopicModel.from_bytes(b) if b else None

        util.from_bytes(data, {"cfg": lambda b: None, "model": read_model}, exclude)
        return self
