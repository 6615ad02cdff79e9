"""What a saved model's header.json may hold, checked like a config before any array is read.

`spacy_ag.archive` checks what every archive has (kind, format version,
grammar hash, the arrays' shapes and dtypes); here are the fields of each
kind of model, with their types and ranges. The settings groups inside a
header (sampler, online, the topic settings) are checked by their own classes
in `spacy_ag.settings`, whose ranges are those training accepts: a header
edited to ``local_iterations = 10**12`` is refused as a config saying so
would be, with one coded line (`ModelFileError`), instead of running for
ever or failing later with a TypeError.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Dict, List, Mapping, Optional, Sequence

from .errors import Errors, ModelFileError
from .settings import (
    UNIT_CHOICES, GrammarSettings, InferenceSettings, OnlineSettings, SettingError, TopicModelSettings, check,
    fields_of, setting,
)

__all__ = ["GrammarModelHeader", "TopicModelHeader", "TrainingProgress", "check_grammar_model_header",
           "check_topic_model_header"]

#: What a grammar's terminals are, and how it is trained: the choices of the settings that say so.
MODE_CHOICES = fields_of(GrammarSettings)["mode"].metadata["choices"]
INFERENCE_CHOICES = fields_of(InferenceSettings)["mode"].metadata["choices"]


@dataclass
class TrainingProgress:
    """``progress`` of an online learner: how far it has come (its step sizes go on from there)."""

    minibatches: int = setting(0, "minibatches learned from", low=0)
    seen: int = setting(0, "sentences or documents learned from", low=0)
    inside_calls: int = setting(0, "inside passes run", low=0)
    keep_prod: float = setting(1.0, "product of (1 - step size), for the bias correction", low=0.0, high=1.0)


@dataclass
class GrammarModelHeader:
    """header.json of a saved `AdaptorGrammar`."""

    start: str = setting("", "start symbol of grammar.lt", required=True)
    segment_category: str = setting("", "the nonterminal(s) whose yields are words", required=True)
    mode: str = setting("chars", "terminals are characters or tokens", choices=MODE_CHOICES, required=True)
    units: str = setting(UNIT_CHOICES[0], "what one character terminal is", choices=UNIT_CHOICES)
    split_at: Optional[List[str]] = setting(None, "hard boundaries")
    sampler: Dict[str, Any] = setting(help="the MCMC settings", factory=dict, required=True)
    inference: str = setting("mcmc", "how the grammar was trained", choices=INFERENCE_CHOICES)
    online: Dict[str, Any] = setting(help="the variational settings", factory=dict)
    progress: Dict[str, Any] = setting(help="how far online training has come", factory=dict)
    trace_tail: List[Dict[str, Any]] = setting(help="the last trace line", factory=list)


@dataclass
class TopicModelHeader(TopicModelSettings):
    """header.json of a saved `TopicModel`: its settings, plus what it has learned so far."""

    online: Dict[str, Any] = setting(help="the variational settings", factory=dict, required=True)
    history: List[Dict[str, Any]] = setting(help="top words of every topic over training", factory=list)
    progress: Dict[str, Any] = setting(help="how far online training has come", factory=dict, required=True)
    trace_tail: List[Dict[str, Any]] = setting(help="the last trace line", factory=list)


#: Settings of `TopicModelSettings` every topic model header holds (the others have defaults).
TOPIC_REQUIRED = ("n_topics", "alpha", "a", "b", "local_iterations", "word_adapted", "history_size")


def _checked(cls: type, header: Mapping[str, Any], source: str, required: Sequence[str] = ()) -> Dict[str, Any]:
    """The fields of `cls` in `header`, checked (other keys are the archive's, or unknown and unused)."""
    known = fields_of(cls)
    values = {key: value for key, value in header.items() if key in known}
    try:
        for key in required:
            if key not in values:
                raise SettingError(f"header.{key}", Errors.E444)
        checked = check(cls, values, "header", partial=True)
        check(OnlineSettings, checked.get("online", {}), "header.online")
        check(TrainingProgress, checked.get("progress", {}), "header.progress")
    except SettingError as err:
        where = err.where[len("header."):] if err.where.startswith("header.") else err.where
        raise ModelFileError(Errors.E193.format(path=f"{source}/header.json", problem=f"{where} {err.message}")
                             ) from None
    return checked


def check_grammar_model_header(header: Mapping[str, Any], source: str) -> None:
    """Refuse (`ModelFileError`, E193) an `AdaptorGrammar` header with a field of the wrong type or range."""
    _checked(GrammarModelHeader, header, source)


def check_topic_model_header(header: Mapping[str, Any], source: str) -> None:
    """Refuse (`ModelFileError`, E193) a `TopicModel` header with a field of the wrong type or range."""
    _checked(TopicModelHeader, header, source, TOPIC_REQUIRED)
