"""``ag_topics``: infinite-vocabulary topics (InfVocLDA, an adaptor grammar) on Docs.

    nlp.add_pipe("ag_topics", config={"n_topics": 5})
    nlp.initialize(lambda: examples)       # collapsed Gibbs sweeps over the docs' tokens (inference = "online":
                                           # online passes)

Output (every value survives ``DocBin(store_user_data=True)``):

* ``doc.cats["TOPIC_<i>"]`` (prefix configurable): the document's topic
  proportions E_q[theta], summing to 1;
* ``doc._.ag_topics``: the same proportions as a sequence of floats, in topic order
  (a list; a tuple after a DocBin round trip);
* ``token._.ag_topic``: the token's most probable topic, or None for tokens
  that are not modelled (spaces, punctuation, stop words when
  ``skip_stop``, characters never seen in training).

Words never seen in training still get topics: their probability under a
topic comes from the topic's character-level base distribution. With
``online_updates = true``, ``update`` makes one online step per minibatch
(``spacy train``); its loss is the negative log likelihood of the batch. By
default the topics of ``initialize`` are final.
"""
from __future__ import annotations

import dataclasses
from typing import Any, Callable, Dict, Iterable, List, Optional

from spacy import util
from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc, Token
from spacy.training import Example
from spacy.vocab import Vocab

from ..errors import Errors
from ..settings import TopicComponentSettings, check, defaults, keyword_signature, topic_online_settings
from .segmenter import is_dummy_examples
from .serialization import ModelSerializer


def install_topic_extensions() -> None:
    Doc.set_extension("ag_topics", default=None, force=True)
    Token.set_extension("ag_topic", default=None, force=True)


install_topic_extensions()


@Language.factory(
    "ag_topics",
    assigns=["doc.cats", "doc._.ag_topics", "token._.ag_topic"],
    default_config=defaults(TopicComponentSettings),
)
def make_ag_topics(nlp: Language, name: str, **settings: Any) -> "AGTopics":
    """The topic tagger; its settings are `TopicComponentSettings`."""
    return AGTopics(nlp.vocab, name, **settings)


make_ag_topics.__signature__ = keyword_signature(TopicComponentSettings, "nlp", "name")


class AGTopics(ModelSerializer, Pipe):
    """Topics of Docs and tokens (see the module doc).

    vocab (Vocab): The shared vocabulary.
    name (str): The component name.
    **settings: Any `TopicComponentSettings` (n_topics, alpha, attr, ...).
    """

    kind = "topics"
    model = None  # the TopicModel (not a thinc model: nothing for spaCy's optimizer)

    @property
    def is_trainable(self) -> bool:
        return self.settings.online_updates

    def finish_update(self, sgd=None) -> None:
        """Nothing to do: `update` already made its online step (spaCy's optimizer has no part in it)."""

    def __init__(self, vocab: Vocab, name: str = "ag_topics", **settings: Any) -> None:
        self.vocab = vocab
        self.name = name
        self.settings = check(TopicComponentSettings, settings, name)
        self.cfg: Dict[str, Any] = dataclasses.asdict(self.settings)
        self.model = None

    def _model_class(self):
        from ..topics import TopicModel

        return TopicModel

    def _set_model(self, model) -> None:
        if model is not None and model.n_topics != self.cfg["n_topics"]:
            from ..errors import ModelFileError

            raise ModelFileError(Errors.E428.format(name=self.name, n_topics=model.n_topics, cfg=self.cfg['n_topics']))
        self.model = model

    # -------------------------------------------------------------- words
    def _modelled(self, token: Token) -> bool:
        return not (token.is_space or token.is_punct or (self.cfg.get("skip_stop") and token.is_stop))

    def _word(self, token: Token) -> str:
        attr = self.cfg.get("attr", "LOWER")
        return {"LOWER": token.lower_, "ORTH": token.text, "NORM": token.norm_, "LEMMA": token.lemma_}[attr]

    def words(self, doc: Doc) -> List[str]:
        return [self._word(t) for t in doc if self._modelled(t)]

    def _new_model(self):
        from ..topics import TopicModel

        c = self.cfg
        return TopicModel(c["n_topics"], alpha=c["alpha"], a=c["a"], b=c["b"],
                          local_iterations=c["local_iterations"], units=c["units"], inference=c["inference"],
                          sweeps=c["sweeps"], alpha_every=c["alpha_every"], sample_b=c["sample_b"],
                          word_adapted=c["word_adapted"], history_every=c["history_every"],
                          history_size=c["history_size"],
                          online=topic_online_settings(batch_size=c["batch_size"],
                                                       default_truncation=c["truncation"]))

    # -------------------------------------------------------------- training
    def initialize(self, get_examples: Optional[Callable[[], Iterable[Example]]] = None, *,
                   nlp: Optional[Language] = None) -> None:
        """Learn the topics from the examples' reference docs (`TopicModel.fit`: Gibbs sweeps, or online
        passes with inference = "online")."""
        if is_dummy_examples(get_examples):
            return
        docs = [self.words(eg.reference) for eg in get_examples()]
        docs = [d for d in docs if d]
        if not docs:
            raise ValueError(Errors.E429.format(name=self.name))
        self.model = self._new_model()
        self.model.fit(docs, passes=self.cfg["passes"], seed=self.cfg["seed"])

    def update(self, examples: Iterable[Example], *, drop: float = 0.0, sgd=None,
               losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        """One online minibatch of the examples' documents; loss: their negative log likelihood."""
        losses = {} if losses is None else losses
        losses.setdefault(self.name, 0.0)
        docs = [d for d in (self.words(eg.reference) for eg in examples) if d]
        if not docs or not self.settings.online_updates:
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
            raise ValueError(Errors.E430.format(name=self.name))
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
