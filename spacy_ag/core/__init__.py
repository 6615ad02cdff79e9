"""The inference core: compiled grammar arrays, sampler state and numba kernels.

Importing it settles numba's environment first (`spacy_ag.kernel_environment`):
the kernel cache, the threading layer, one compiled version per kernel, and
the progress shown while a first run compiles.
"""
from pathlib import Path

from ..kernel_environment import clear_stale_kernel_cache, prepare_kernel_environment

__all__ = ["KERNEL_CACHE", "clear_stale_kernel_cache"]

KERNEL_CACHE = prepare_kernel_environment(Path(__file__).parent, __name__ + ".")  # None: caching is off
