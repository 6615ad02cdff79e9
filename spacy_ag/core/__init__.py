"""The inference core: compiled grammar arrays, sampler state and numba kernels."""
import hashlib
import os
from pathlib import Path


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
