"""spacy-ag: adaptor grammars (Johnson, Griffiths & Goldwater 2006) for spaCy.

``from spacy_ag import AdaptorGrammar, TopicModel`` gives the two model
classes. They are imported on first use, because spaCy imports this package
at start-up (through its factory entry points) and the numba engine behind
them takes a second to load.
"""
from typing import Any

from .about import __version__
from .errors import Errors
__all__ = ["AdaptorGrammar", "TopicModel", "__version__"]


def __getattr__(name: str) -> Any:
    if name == "AdaptorGrammar":
        from .model import AdaptorGrammar

        return AdaptorGrammar
    if name == "TopicModel":
        from .topics import TopicModel

        return TopicModel
    raise AttributeError(Errors.E460.format(name=name))
