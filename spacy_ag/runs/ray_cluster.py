"""The connection to a Ray cluster, shared by everything spacy-ag runs on Ray.

The chains (`ray_chains`), the online E-step (`ray_estep`) and the
annotation of a directory (`spacy_ag.annotation.on_ray`) all join a cluster
the same way: the one this process already uses, the address given, or a new
local one, which the run then shuts down (`connect_ray`, `RayActors`). ray is
imported only when a run asks for it.
"""
from __future__ import annotations

import contextlib
import contextvars
from typing import Iterator, Optional

from ..errors import Errors, TrainingLayerError

__all__ = ["RayActors", "connect_ray", "watching"]


def connect_ray(address: Optional[str]):
    """Ray, joined to a cluster: the one this process already uses, `address`, or a new local one.

    RETURNS: (the ray module, whether this call connected, so the run must disconnect).
    """
    try:
        import ray
    except ImportError:
        raise TrainingLayerError(Errors.E042) from None
    if ray.is_initialized():
        return ray, False
    import logging

    try:
        ray.init(address=address, include_dashboard=False, logging_level=logging.WARNING)
    except (ConnectionError, RuntimeError, ValueError) as err:
        where = repr(address) if address else "on this machine"
        raise TrainingLayerError(Errors.E043.format(address=where, err=" ".join(str(err).split())[:200])) from None
    return ray, True


class RayActors:
    """Actors of one run, and the connection to their cluster (see `connect_ray`). Subclasses set
    `ray`, `connected` and `actors`."""

    def close(self) -> None:
        """Stop the actors (their processes end), and the cluster if this run started it."""
        for actor in self.actors:
            self.ray.kill(actor)
        self._disconnect()

    def _disconnect(self) -> None:
        if self.connected:
            self.ray.shutdown()
            self.connected = False


@contextlib.contextmanager
def watching(var: contextvars.ContextVar, watcher) -> Iterator[None]:
    """`watcher` in the context variable `var` inside the ``with`` (the watchers of the Ray modules)."""
    token = var.set(watcher)
    try:
        yield
    finally:
        var.reset(token)
