"""``ag_tokenizer_update``: lets ``spacy train`` update the spacy-ag segmenter.

spaCy's training loop calls ``update`` on pipeline components only, and the
segmenter is the tokenizer. This pipe annotates nothing; its ``update``
forwards each minibatch to ``nlp.tokenizer.update`` (one online step of the
hybrid variational algorithm)::

    [nlp]
    pipeline = ["ag_tokenizer_update"]

    [components.ag_tokenizer_update]
    factory = "ag_tokenizer_update"
"""
from __future__ import annotations

from typing import Callable, Dict, Iterable, Optional

from spacy.language import Language
from spacy.pipeline import Pipe
from spacy.tokens import Doc
from spacy.training import Example

from ..errors import Errors


@Language.factory("ag_tokenizer_update", default_config={})
def make_tokenizer_update(nlp: Language, name: str) -> "TokenizerUpdate":
    """The pass-through pipe that trains the spacy-ag segmenter during ``spacy train``."""
    return TokenizerUpdate(nlp.tokenizer, name)


class TokenizerUpdate(Pipe):
    model = None  # nothing for spaCy's optimizer

    @property
    def is_trainable(self) -> bool:
        return True

    def finish_update(self, sgd=None) -> None:
        """Nothing to do: the segmenter's `update` already made its online step."""

    def __init__(self, tokenizer, name: str = "ag_tokenizer_update") -> None:
        self.tokenizer = tokenizer
        self.name = name

    def __call__(self, doc: Doc) -> Doc:
        return doc

    def initialize(self, get_examples: Optional[Callable[[], Iterable[Example]]] = None, *,
                   nlp: Optional[Language] = None) -> None:
        if nlp is not None:
            self.tokenizer = nlp.tokenizer

    def update(self, examples: Iterable[Example], *, drop: float = 0.0, sgd=None,
               losses: Optional[Dict[str, float]] = None) -> Dict[str, float]:
        losses = {} if losses is None else losses
        if not hasattr(self.tokenizer, "update"):
            raise ValueError(Errors.E427.format(name=self.name))
        return self.tokenizer.update(examples, drop=drop, sgd=sgd, losses=losses)

    def to_bytes(self, *, exclude=tuple()) -> bytes:
        return b""

    def from_bytes(self, data: bytes, *, exclude=tuple()) -> "TokenizerUpdate":
        return self

    def to_disk(self, path, *, exclude=tuple()) -> None:
        return None

    def from_disk(self, path, *, exclude=tuple()) -> "TokenizerUpdate":
        return self

    def __reduce__(self):
        return (TokenizerUpdate, (None, self.name))
