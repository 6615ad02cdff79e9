"""The inference core: compiled grammar arrays, sampler state and numba kernels."""
import getpass
import hashlib
import os
import stat
import tempfile
import warnings
from pathlib import Path
from typing import Optional


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
    load_pip_tbb()
    config.THREADING_LAYER = "forksafe"
    return True


#: The file name numba's TBB layer loads by, per platform (numba.np.ufunc.parallel).
TBB_LIBRARY = {"linux": "libtbb.so.12", "darwin": "libtbb.12.dylib", "win32": "tbb12.dll"}


def load_pip_tbb() -> bool:
    """Load the TBB library of the `tbb` wheel, so that numba's fork-safe choice can take TBB.

    Without TBB, that choice on Linux is the workqueue layer, whose every
    parallel launch wakes and waits for its threads: about 0.2 ms, more than
    a whole E-step of five utterances (the Brent collocation pass is 27% slower
    on it, even on one thread). The wheel puts the library in the environment's
    lib folder, which the dynamic loader does not search, so numba's import of
    its TBB layer fails; loaded here first, by its full path, it is found by
    name. Returns whether it was loaded.
    """
    import ctypes
    import sys
    from importlib import metadata

    name = TBB_LIBRARY.get(sys.platform)
    try:
        files = metadata.files("tbb") or []
    except metadata.PackageNotFoundError:
        return False
    for file in files:
        if file.name == name:
            try:
                ctypes.CDLL(str(file.locate()), mode=getattr(ctypes, "RTLD_GLOBAL", 0))
                return True
            except OSError:
                return False
    return False


def start_threads() -> None:
    """Start numba's threading layer now, before any cached kernel of this package runs.

    A cached kernel that calls a parallel one (refresh_weights calls the
    digammas' stick_terms, estep its sentence loop), compiled in a process
    that had loaded that parallel kernel from the cache, does not start the
    threads when it is itself loaded from the cache: its first parallel launch
    then crashes the process (numba#8578). A user meets that order by
    running one command, then another that compiles more kernels, then the
    second again. Started here, the threads are running before any kernel.
    A layer that cannot load is left to say so at the first parallel kernel,
    as it would have.
    """
    import numba

    try:
        numba.get_num_threads()  # starts the layer (numba's own reload hook for cached parfors does this)
    except ValueError:
        pass


def clear_stale_kernel_cache(folder: Path, cache: Optional[Path] = None) -> bool:
    """Drop numba's cached kernels of `folder` when any of its sources changed.

    Numba revalidates a cached kernel against its own file only, while the
    kernels here inline and call each other across files: after an edit to
    chart.py, the cached sampler kernels would keep running the old inside
    pass. A digest of every source in the folder, kept beside the cache, catches
    that. `cache` is the directory numba caches the folder's kernels in (its
    __pycache__ unless given). Returns whether the cache was cleared.
    """
    digest = hashlib.sha256()
    for source in sorted(folder.glob("*.py")):
        digest.update(source.name.encode() + b"\0" + source.read_bytes())
    cache = folder / "__pycache__" if cache is None else cache
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


def kernel_cache_dir(folder: Path) -> Optional[Path]:
    """The directory numba would cache kernels of `folder` in now; None if it finds none.

    Asks numba itself (its locators, NUMBA_CACHE_DIR and all), for a probe
    function "defined" in the folder's __init__.py, creating the directory as
    numba does.
    """
    from numba.core.caching import FunctionCache

    namespace: dict = {}
    exec(compile("def probe():\n    pass\n", str(folder / "__init__.py"), "exec"), namespace)
    try:
        return Path(FunctionCache._impl_class(namespace["probe"]).locator.get_cache_path())
    except RuntimeError:  # "cannot cache function ...: no locator available"
        return None


def choose_kernel_cache(folder: Path) -> Optional[Path]:
    """Give numba a writable cache for the kernels of `folder`; return it, None if caching is off.

    numba picks the cache of a ``cache=True`` kernel when it is decorated:
    NUMBA_CACHE_DIR, else beside the source (__pycache__), else the user's
    cache (~/.cache/numba). A read-only install run without a writable HOME
    (a container, non-root) has none of them, and the decoration raises "no
    locator available": importing a kernel module, so ``spacy.load`` of our
    components, fails. Then, unless NUMBA_CACHE_DIR was set, the cache goes
    to a private per-user folder under the temp directory, through
    numba.config.CACHE_DIR (read for every cached function decorated from
    now on, like NUMBA_CACHE_DIR; not the environment, whose change would
    make numba re-read its whole config and undo the threading choice), with
    one warning. Where even that is impossible our kernels are compiled
    without caching (each process compiles afresh), with one warning.
    """
    from numba import config

    found = kernel_cache_dir(folder)
    if found is not None:
        return found
    if config.CACHE_DIR:
        where = f"NUMBA_CACHE_DIR={config.CACHE_DIR} is not writable"
    else:
        where = f"neither {folder / '__pycache__'} nor the user cache is writable"
        try:
            config.CACHE_DIR = str(_private_temp_dir())
            found = kernel_cache_dir(folder)
        except OSError:
            pass
        if found is not None:
            warnings.warn(f"spacy-ag: {where}, so numba caches compiled kernels in "
                          f"{config.CACHE_DIR}; set NUMBA_CACHE_DIR to choose a directory")
            return found
        config.CACHE_DIR = ""
        where = where.replace("nor the user cache", "nor the user cache nor a temp directory")
    _compile_without_cache(folder)
    warnings.warn(f"spacy-ag: {where}, so numba compiles the kernels afresh in every process "
                  "(caching off); set NUMBA_CACHE_DIR to a writable directory to keep them")
    return None


def _private_temp_dir() -> Path:
    """tempdir/spacy-ag-numba-cache-<uid>, mode 0700: owned by this user, not a link."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    path = Path(tempfile.gettempdir()) / f"spacy-ag-numba-cache-{getpass.getuser() if uid is None else uid}"
    path.mkdir(mode=0o700, exist_ok=True)
    if uid is not None:  # a shared /tmp: cached kernels are pickles, run on load
        st = path.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
            raise PermissionError(f"{path} is not a directory of this user")
        if st.st_mode & 0o077:
            path.chmod(0o700)
    return path


def _compile_without_cache(folder: Path) -> None:
    """Make ``cache=True`` a no-op for functions defined in `folder` (numba would raise)."""
    from numba.core.dispatcher import Dispatcher

    enable_caching = Dispatcher.enable_caching

    def enable_caching_outside(self):
        if os.path.dirname(self.py_func.__code__.co_filename) != str(folder):
            enable_caching(self)

    Dispatcher.enable_caching = enable_caching_outside


KERNEL_CACHE = choose_kernel_cache(Path(__file__).parent)  # where numba keeps our kernels; None: nowhere
if KERNEL_CACHE is not None:
    clear_stale_kernel_cache(Path(__file__).parent, KERNEL_CACHE)
prefer_fork_safe_threading()
start_threads()
