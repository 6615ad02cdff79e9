"""How the spaCy components fit their adaptor grammar, and a hook to watch it.

The segmenter tokenizer and ``ag_parser`` fit an `AdaptorGrammar` inside
``initialize`` (called by ``nlp.initialize``, ``spacy.training.initialize.init_nlp``
and ``spacy train``). Their config API has no place for a progress callback,
so a trainer that wants the sampler's trace installs an *observer* around the
call instead::

    from spacy_ag.components.fitting import observe_fitting

    with observe_fitting(print):          # any callable taking one trace line
        nlp.initialize(get_examples)      # every line also says which component

An observer may also override the sampler settings of every component fitted
while it is active (``FitObserver.settings``): this is how the ``[ag_training]``
section of a pipeline config reaches the components when ``spacy-ag train``
runs it. Without an observer, components fit with their own settings, exactly
as before.

The observer is held in a context variable, so it is local to the thread (and
asyncio task) that installed it, and it is removed when the ``with`` ends.
"""
from __future__ import annotations

import contextlib
import contextvars
import dataclasses
import functools
import time
from dataclasses import dataclass, field
from typing import Any, Callable, ContextManager, Dict, Iterator, List, Optional, Union

__all__ = ["FitObserver", "FitSettings", "fit_adaptor_grammar", "observe_fitting", "current_observer"]

TraceCallback = Callable[[Dict[str, Any]], None]


@dataclass
class FitSettings:
    """Sampler settings that override those of every component while an observer is active.

    None (and an empty ``sampler``) keeps the component's own setting.

    iterations (Optional[int]): MCMC iterations (sweeps).
    chains (Optional[int]): Independent chains (the components decode with chain 0).
    seed (Optional[int]): Seed of chain 0 (chain c uses seed + c).
    workers (int): Processes for the chains (0: one per chain, at most the cores).
    sampler (Dict[str, Any]): `spacy_ag.core.chain.SamplerSettings` fields to change.
    """

    iterations: Optional[int] = None
    chains: Optional[int] = None
    seed: Optional[int] = None
    workers: int = 0
    sampler: Dict[str, Any] = field(default_factory=dict)


class FitObserver:
    """Watches (and may re-parameterise) the fits of the components.

    Subclass it, or pass a plain callable to `observe_fitting`. `fitting` is a
    context manager entered around each fit; it yields the callback that
    receives the trace lines (dicts with ``iteration``, ``chain``,
    ``log_posterior``, ``tables``, ... and ``component``), or None.
    """

    def __init__(self, settings: Optional[FitSettings] = None,
                 callback: Optional[TraceCallback] = None) -> None:
        self.settings = settings or FitSettings()
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
            raise TypeError(f"observe_fitting takes a FitObserver or a callable, got {type(observer).__name__}")
        observer = FitObserver(callback=observer)
    return _installed(observer)


@contextlib.contextmanager
def _installed(observer: Optional[FitObserver]) -> Iterator[Optional[FitObserver]]:
    token = _OBSERVER.set(observer)
    try:
        yield observer
    finally:
        _OBSERVER.reset(token)


def fit_adaptor_grammar(model, texts: List[str], *, component: str, grammar: str, iterations: int,
                        chains: int, seed: int):
    """Fit `model` on `texts` with the component's settings, or the active observer's.

    model (AdaptorGrammar): The untrained model.
    texts (List[str]): The training texts (chunks without hard boundaries).
    component (str): Name reported to the observer ("tokenizer" or the pipe name).
    grammar (str): The component's grammar setting (reported only).
    iterations, chains, seed (int): The component's own settings.
    RETURNS (AdaptorGrammar): The fitted model.
    """
    observer = _OBSERVER.get()
    if observer is None:
        return model.fit(texts, iterations=iterations, chains=chains, seed=seed)
    s = observer.settings
    iterations = s.iterations if s.iterations is not None else iterations
    chains = s.chains if s.chains is not None else chains
    seed = s.seed if s.seed is not None else seed
    if s.sampler:
        model.sampler = dataclasses.replace(model.sampler, **s.sampler)
    with observer.fitting(component, grammar=grammar, iterations=iterations, chains=chains, seed=seed,
                          texts=len(texts)) as callback:
        model.fit(texts, iterations=iterations, chains=chains, seed=seed, workers=s.workers, callback=callback)
    return model
