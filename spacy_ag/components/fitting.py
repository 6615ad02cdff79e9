"""How the spaCy components fit their adaptor grammar, and a hook to watch it.

The segmenter tokenizer and ``ag_parser`` fit an `AdaptorGrammar` inside
``initialize`` (called by ``nlp.initialize``, ``spacy.training.initialize.init_nlp``
and ``spacy train``). Their config API has no place for a progress callback,
so a trainer that wants the sampler's trace installs an *observer* around the
call instead::

    from spacy_ag.components.fitting import observe_fitting

    with observe_fitting(print):          # any callable taking one trace line
        nlp.initialize(get_examples)      # every line also says which component

An observer only watches: the sampler settings are the components' own
(``[nlp.tokenizer]``, ``[components.<name>]``), so ``spacy train`` and
``spacy-ag train`` fit the same model from the same config.

The observer is held in a context variable, so it is local to the thread (and
asyncio task) that installed it, and it is removed when the ``with`` ends.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import time
from typing import Any, Callable, ContextManager, Dict, Iterator, List, Optional, Union

from ..errors import Errors

__all__ = ["FitObserver", "fit_adaptor_grammar", "observe_fitting", "current_observer"]

TraceCallback = Callable[[Dict[str, Any]], None]


class FitObserver:
    """Watches the fits of the components.

    Subclass it, or pass a plain callable to `observe_fitting`. `fitting` is a
    context manager entered around each fit; it yields the callback that
    receives the trace lines (dicts with ``iteration``, ``chain``,
    ``log_posterior``, ``tables``, ... and ``component``), or None.
    """

    def __init__(self, callback: Optional[TraceCallback] = None) -> None:
        self.callback = callback
        #: One record per finished fit: component, grammar, iterations, chains, seed, texts, seconds.
        self.fits: List[Dict[str, Any]] = []

    @contextlib.contextmanager
    def fitting(self, component: str, *, grammar: str, iterations: int, chains: int, seed: int,
                texts: int) -> Iterator[Optional[TraceCallback]]:
        """Entered around one fit.

        component (str): "tokenizer" or the pipe's name.
        grammar (str): The component's grammar setting.
        iterations, chains, seed (int): The settings actually used.
        texts (int): How many texts (chunks) the grammar is fitted on.
        YIELDS (Optional[Callable]): The trace callback for this fit.
        """
        started = time.time()
        yield None if self.callback is None else functools.partial(_tagged, self.callback, component)
        self.fits.append({"component": component, "grammar": grammar, "iterations": iterations,
                          "chains": chains, "seed": seed, "texts": texts,
                          "seconds": round(time.time() - started, 3)})


def _tagged(callback: TraceCallback, component: str, line: Dict[str, Any]) -> None:
    callback({**line, "component": component})


_OBSERVER: contextvars.ContextVar[Optional[FitObserver]] = contextvars.ContextVar("spacy_ag_fit_observer",
                                                                                    default=None)


def current_observer() -> Optional[FitObserver]:
    """The active observer, or None."""
    return _OBSERVER.get()


def observe_fitting(observer: Union[FitObserver, TraceCallback, None]) -> ContextManager[Optional[FitObserver]]:
    """Install an observer (or a plain trace callback) for the fits run inside the ``with``.

    observer (FitObserver / Callable / None): The observer, or a callable that
        receives every trace line (with a ``component`` key); None disables.
    RETURNS (ContextManager[FitObserver]): Yields the installed observer.
    """
    if observer is not None and not isinstance(observer, FitObserver):
        if not callable(observer):
            raise TypeError(Errors.E426.format(type_name=type(observer).__name__))
        observer = FitObserver(callback=observer)
    return _installed(observer)


@contextlib.contextmanager
def _installed(observer: Optional[FitObserver]) -> Iterator[Optional[FitObserver]]:
    token = _OBSERVER.set(observer)
    try:
        yield observer
    finally:
        _OBSERVER.reset(token)


def fit_adaptor_grammar(model, texts: List[str], *, component: str, grammar: str, settings):
    """Fit `model` on `texts` by MCMC with a component's settings, reporting to the active observer.

    model (AdaptorGrammar): The untrained model.
    texts (List[str]): The training texts (chunks without hard boundaries).
    component (str): Name reported to the observer ("tokenizer" or the pipe name).
    grammar (str): The component's grammar setting (reported only).
    settings (SegmenterSettings / ParserSettings): iterations, chains, seed, workers, backend, ray_address
        and sampler.
    RETURNS (AdaptorGrammar): The fitted model.
    """
    from ..settings import SamplerSettings, check

    if settings.sampler:
        changes = check(SamplerSettings, settings.sampler, f"{component}.sampler", partial=True)
        model.sampler = dataclasses.replace(model.sampler, **changes)
    run = dict(iterations=settings.iterations, chains=settings.chains, seed=settings.seed, workers=settings.workers,
               backend=settings.backend, ray_address=settings.ray_address)
    observer = _OBSERVER.get()
    if observer is None:
        return model.fit(texts, **run)
    with observer.fitting(component, grammar=grammar, iterations=settings.iterations, chains=settings.chains,
                          seed=settings.seed, texts=len(texts)) as callback:
        model.fit(texts, callback=callback, **run)
    return model
