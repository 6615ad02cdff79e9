"""The inference core: compiled grammar arrays, sampler state and numba kernels."""
import hashlib
import os
from pathlib import Path


def prefer_fork_safe_threading() -> bool:
    """Have numba pick a fork-safe threading layer, unless the user chose one.

    ``nlp.pipe(n_process=k)`` forks. numba's default layer on Linux without
    TBB is GNU OpenMP, which is not fork-safe: once a parallel kernel (an
    E-step, topic inference) has run in this process, the first one in a
    forked worker hangs forever. numba's "forksafe" choice takes tbb if
    installed, else OpenMP only where it is fork-safe (not GNU's), else
    workqueue. numba fixes the layer at its first parallel launch, so this
    runs here, before any kernel of this package is compiled or loaded; a
    NUMBA_THREADING_LAYER variable, a numba.config setting or a layer already
    running is left alone. Returns whether the setting was changed.
    """
    from numba import config
    from numba.np.ufunc import parallel

    if "NUMBA_THREADING_LAYER" in os.environ or str(config.THREADING_LAYER).lower() != "default":
        return False
    if getattr(parallel, "_is_initialized", False):  # too late: the layer is already chosen
        return False
    config.THREADING_LAYER = "forksafe"
    return True


def clear_stale_kernel_cache(folder: Path) -> bool:
    """Drop numba's cached kernels of `folder` when any of its sources changed.

    Numba revalidates a cached kernel against its own file only, while the
    kernels here inline and call each other across files: after an edit to
    chart.py, the cached sampler kernels would keep running the old inside
    pass. A digest of every source in the folder, kept beside the cache, catches
    that. Returns whether the cache was cleared.
    """
    digest = hashlib.sha256()
    for source in sorted(folder.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    cache = folder / "__pycache__"
    stamp = cache / "kernel-sources.sha256"
    try:
        if stamp.read_text() == digest.hexdigest():
            return False
    except OSError:
        pass
    try:
        for cached in list(cache.glob("*.nbi")) + list(cache.glob("*.nbc")):
            cached.unlink(missing_ok=True)
        cache.mkdir(exist_ok=True)
        partial = cache / f"{stamp.name}.{os.getpid()}"  # processes importing at once see a whole stamp
        partial.write_text(digest.hexdigest())
        os.replace(partial, stamp)
    except OSError:  # a read-only install: numba keeps its cache elsewhere, rebuilt on reinstall
        pass
    return True


clear_stale_kernel_cache(Path(__file__).parent)
prefer_fork_safe_threading()
