"""The numba environment of the kernels: their cache, their threading layer, one compiled
version per kernel, and a visible first compilation.

`spacy_ag.core` calls `prepare_kernel_environment` once, when it is first
imported and before any kernel is decorated: numba reads the cache directory
and the threading layer at decoration and at the first parallel launch, so
both must be settled first. This module imports no kernel and nothing of
spacy_ag but `errors`, so it sits below `core/`.
"""
import getpass
import hashlib
import os
import stat
import tempfile
import types as python_types
import warnings
from pathlib import Path
from typing import Optional

from numba import njit
from numba.core import event as numba_event
from numba.core.caching import NullCache
from numba.core.registry import CPUDispatcher

from .errors import Errors


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
    parallel launch wakes and waits for its threads, which can cost more than
    a whole E-step of a small minibatch, even on one thread
    (docs/performance.md). The wheel puts the library in the environment's
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
            warnings.warn(Errors.W451.format(where=where, cache_dir=config.CACHE_DIR))
            return found
        config.CACHE_DIR = ""
        where = where.replace("nor the user cache", "nor the user cache nor a temp directory")
    _compile_without_cache(folder)
    warnings.warn(Errors.W450.format(where=where))
    return None


def _private_temp_dir() -> Path:
    """tempdir/spacy-ag-numba-cache-<uid>, mode 0700: owned by this user, not a link."""
    uid = os.getuid() if hasattr(os, "getuid") else None
    path = Path(tempfile.gettempdir()) / f"spacy-ag-numba-cache-{getpass.getuser() if uid is None else uid}"
    path.mkdir(mode=0o700, exist_ok=True)
    if uid is not None:  # a shared /tmp: cached kernels are pickles, run on load
        st = path.lstat()
        if not stat.S_ISDIR(st.st_mode) or st.st_uid != uid:
            raise PermissionError(Errors.E452.format(path=path))
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


def _plain_argument_type(ty):
    """The type a kernel is compiled for when another kernel passes it `ty`: int64 for any
    literal or narrower signed integer, the type itself otherwise."""
    from numba.core import types

    ty = types.unliteral(ty)
    if isinstance(ty, types.Integer) and ty.signed and ty.bitwidth < 64:
        return types.int64
    return ty


def compile_one_version_per_kernel(package: str) -> bool:
    """Type the arguments one kernel passes another as plain int64, so each kernel compiles once.

    numba compiles a kernel anew for every distinct tuple of argument types
    it is called with from another kernel, and it types a constant argument
    as a literal: ``alloc_node(S, TERM, x, -1)`` and ``alloc_node(S, RULE,
    x, r)`` would be two compilations of the same function, and an int32 index
    beside an int64 one a third. Compiling is what a first run waits for
    (docs/benchmarks.md, "First runs"), and the largest kernels (the inside
    pass, the tree draws, absorbing draws) are among those so called. Values are
    unchanged: a literal is its value, and a narrower signed integer fits in
    int64. Only kernels whose module is in `package` are affected. Returns
    whether the hook was installed now.
    """
    from numba.core.dispatcher import Dispatcher

    if getattr(Dispatcher.get_call_template, "_plain_arguments_of", None) is not None:
        return False
    call_template = Dispatcher.get_call_template

    def get_call_template(self, args, kws):
        if self.py_func.__module__.startswith(package):
            args = tuple(_plain_argument_type(a) for a in args)
            kws = {name: _plain_argument_type(ty) for name, ty in kws.items()}
        return call_template(self, args, kws)

    get_call_template._plain_arguments_of = package
    Dispatcher.get_call_template = get_call_template
    return True


#: Seconds between two progress lines while kernels compile (one line is rewritten on a terminal).
PROGRESS_EVERY = {True: 1.0, False: 10.0}


class CompileProgress(numba_event.Listener):
    """Says on stderr, at once, that kernels are being compiled, then how far it has got.

    A first run compiles numba kernels for this machine for a minute or more
    before its first iteration; without a word it looks hung. A numba event
    listener counts the kernels of `package` as they compile (numba emits
    the event only for a kernel missing from the cache, so a warm run prints
    nothing); a daemon thread prints a line when the first one starts, a
    progress line every few seconds (rewritten in place on a terminal), and
    the count and time once compiling stops. Set SPACY_AG_COMPILE_PROGRESS=0
    to silence it.
    """

    def __init__(self, package: str, stream=None):
        import sys
        import threading

        self.package = package
        self.stream = sys.stderr if stream is None else stream
        self.lock = threading.Lock()
        self.depth = 0          # nested compilations under way
        self.current = ""       # the kernel compiling at the outermost level
        self.done = 0           # kernels of the package compiled in this round
        self.started = None     # time.monotonic() at the round's first compilation
        self.idle_since = None
        self.said_first = False
        self.thread = None

    def on_start(self, event) -> None:
        self._count(event, start=True)

    def on_end(self, event) -> None:
        self._count(event, start=False)

    def _count(self, event, start: bool) -> None:
        import time

        dispatcher = event.data.get("dispatcher")
        func = getattr(dispatcher, "py_func", None)
        module = getattr(func, "__module__", "") or ""
        if not module.startswith(self.package):
            return
        with self.lock:
            if start:
                if self.depth == 0:
                    self.current = f"{module.rsplit('.', 1)[-1]}.{func.__name__}"
                    if self.started is None:
                        self.started = time.monotonic()
                self.depth += 1
                self._ensure_thread()
            else:
                self.depth = max(0, self.depth - 1)
                self.done += 1
                if self.depth == 0:
                    self.idle_since = time.monotonic()

    def _ensure_thread(self) -> None:
        import threading

        if self.thread is None or not self.thread.is_alive():
            self.thread = threading.Thread(target=self._report, name="spacy-ag-compile-progress", daemon=True)
            self.thread.start()

    def _write(self, text: str, end: str = "\n") -> None:
        try:
            self.stream.write(text + end)
            self.stream.flush()
        except (OSError, ValueError):  # a closed or broken stream: progress is not worth a failure
            pass

    def _report(self) -> None:
        import time

        tty = bool(getattr(self.stream, "isatty", lambda: False)())
        every = PROGRESS_EVERY[tty]
        if not self.said_first:
            self.said_first = True
            self._write("ℹ Compiling spacy-ag's kernels for this machine (first run only: they are "
                        "cached for later runs)")
        last_line = time.monotonic()
        while True:
            time.sleep(0.2)
            with self.lock:
                now = time.monotonic()
                idle = self.depth == 0 and self.idle_since is not None and now - self.idle_since > 1.0
                done, current, elapsed = self.done, self.current, now - (self.started or now)
                if idle:
                    self.started = None
                    self.done = 0
                    self.thread = None
            if idle:
                self._write(("\r" if tty else "") + f"✔ Compiled {done} kernels in {elapsed:.0f} s"
                            + (" " * 30 if tty else ""))
                return
            if now - last_line >= every:
                last_line = now
                line = f"  compiling kernels: {done} done, {elapsed:.0f} s (now {current})"
                self._write(("\r" + line.ljust(78)) if tty else line, end="" if tty else "\n")


def report_compilation(package: str) -> Optional[CompileProgress]:
    """Install the `CompileProgress` listener for `package` unless SPACY_AG_COMPILE_PROGRESS=0."""
    if os.environ.get("SPACY_AG_COMPILE_PROGRESS", "1").strip().lower() in {"0", "false", "no", "off"}:
        return None
    progress = CompileProgress(package)
    numba_event.register("numba:compile", progress)
    return progress


def prepare_kernel_environment(folder: Path, package: str) -> Optional[Path]:
    """Everything numba needs settled before the kernels of `folder` are decorated.

    Returns the kernel cache directory (None: caching is off)."""
    cache = choose_kernel_cache(folder)
    if cache is not None:
        clear_stale_kernel_cache(folder, cache)
    prefer_fork_safe_threading()
    start_threads()
    compile_one_version_per_kernel(package)
    report_compilation(package)
    return cache


class KernelDispatcher(CPUDispatcher):
    """A kernel compiled without numba's wrappers, and a twin with the CPython one for calls from Python.

    numba compiles two wrappers beside every function: one that unboxes
    Python arguments, one that makes it a C function pointer. Our kernels
    take the grammar and the state as tuples of some sixty arrays each, and
    for such signatures the wrappers are most of the compiling
    (docs/performance.md; docs/benchmarks.md, "First runs"). Kernels call each other without either
    wrapper, so a kernel is compiled without them; the few that Python calls
    (the drivers' entry points, the tests) go through `python_entry`, a twin
    of the same function compiled with the CPython wrapper on its first call
    from Python and cached under its own name.
    """

    def __call__(self, *args, **kwargs):
        entry = self.__dict__.get("python_entry")
        if entry is None:
            entry = self._make_python_entry()
        return entry(*args, **kwargs)

    def _make_python_entry(self) -> CPUDispatcher:
        func = self.py_func
        twin = python_types.FunctionType(func.__code__, func.__globals__, func.__name__, func.__defaults__,
                                         func.__closure__)
        twin.__kwdefaults__ = func.__kwdefaults__
        twin.__qualname__ = f"{func.__qualname__}.python_entry"  # numba names its cache files by this
        twin.__module__ = func.__module__
        twin.__doc__ = func.__doc__
        options = {key: value for key, value in self.targetoptions.items()
                   if key not in ("nopython", "no_cpython_wrapper")}
        entry = njit(cache=not isinstance(self._cache, NullCache), **options)(twin)
        self.python_entry = entry
        return entry


def kernel(*args, **options):
    """``numba.njit`` for the kernels of `spacy_ag.core`: no wrappers, Python calls through a twin.

    Takes njit's options (``cache``, ``parallel``, ``inline``, ...); see
    `KernelDispatcher` for why.
    """
    def decorate(func):
        dispatcher = njit(no_cfunc_wrapper=True, no_cpython_wrapper=True, **options)(func)
        dispatcher.__class__ = KernelDispatcher
        return dispatcher

    if args:  # used bare, as @kernel
        return decorate(args[0])
    return decorate
