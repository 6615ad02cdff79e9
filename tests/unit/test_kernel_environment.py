"""The kernels' numba environment: one compiled version per kernel, and a first compilation that says so."""
import io
import time

import numpy as np
from numba import njit

import spacy_ag.core  # noqa: F401  (installs the hooks)
from spacy_ag.kernel_environment import CompileProgress, _plain_argument_type
from numba.core import event as numba_event, types


def _kernel(source: str, module: str, name: str):
    namespace = {"__name__": module, "njit": njit, "np": np}
    exec(compile(source, f"<{module}>", "exec"), namespace)
    return namespace[name]


def test_plain_argument_types_fold_literals_and_narrow_integers():
    assert _plain_argument_type(types.literal(-1)) == types.int64
    assert _plain_argument_type(types.int32) == types.int64
    assert _plain_argument_type(types.int8) == types.int64
    assert _plain_argument_type(types.uint64) == types.uint64  # would not fit
    assert _plain_argument_type(types.float64) == types.float64
    assert _plain_argument_type(types.Array(types.int32, 1, "C")) == types.Array(types.int32, 1, "C")


CALLEE_AND_CALLERS = """
@njit
def callee(x, k):
    return x[k] + k

@njit
def caller(x):
    return callee(x, -1) + callee(x, 0) + callee(x, np.int32(1)) + callee(x, x.shape[0] - 1)
"""


def test_a_kernel_of_the_package_compiles_once_for_literal_and_narrow_arguments():
    ours = _kernel(CALLEE_AND_CALLERS, "spacy_ag.core._probe_once", "caller")
    theirs = _kernel(CALLEE_AND_CALLERS, "elsewhere._probe_once", "caller")
    x = np.arange(5.0)
    assert ours(x) == theirs(x) == 4.0 + -1 + 0.0 + 0 + 1.0 + 1 + 4.0 + 4
    assert len(ours.py_func.__globals__["callee"].signatures) == 1
    assert len(theirs.py_func.__globals__["callee"].signatures) > 1  # numba's own behaviour, untouched outside


def test_a_first_compilation_is_announced_at_once_with_progress_and_a_total():
    stream = io.StringIO()
    progress = CompileProgress("spacy_ag.core._probe_progress")
    progress.stream = stream
    numba_event.register("numba:compile", progress)
    try:
        kernel = _kernel("@njit\ndef twice(x):\n    return 2 * x\n", "spacy_ag.core._probe_progress", "twice")
        started = time.monotonic()
        assert kernel(21) == 42
        while progress.thread is not None and progress.thread.is_alive() and time.monotonic() - started < 30:
            time.sleep(0.1)
    finally:
        numba_event.unregister("numba:compile", progress)
    lines = stream.getvalue().splitlines()
    assert lines[0].startswith("ℹ Compiling spacy-ag's kernels for this machine")
    assert lines[-1].startswith("✔ Compiled 1 kernels in ")
    stream.truncate(0)
    kernel(1)  # compiled already: nothing to say
    assert stream.getvalue() == ""


def test_a_kernel_compiles_without_wrappers_and_python_calls_its_twin():
    from spacy_ag.kernel_environment import KernelDispatcher, kernel

    namespace = {"__name__": "spacy_ag.core._probe_twin", "kernel": kernel}
    exec("@kernel\ndef add_one(x):\n    return x + 1\n\n"
         "@kernel\ndef twice_plus_one(x):\n    return 2 * add_one(x) - 1\n", namespace)
    outer, inner = namespace["twice_plus_one"], namespace["add_one"]
    assert isinstance(inner, KernelDispatcher)
    assert inner.targetoptions["no_cpython_wrapper"] and inner.targetoptions["no_cfunc_wrapper"]
    assert outer(3) == 7
    assert "python_entry" not in inner.__dict__  # only a kernel called it: no wrapper was compiled
    assert len(inner.signatures) == 1
    assert inner(4) == 5  # from Python: through the twin, compiled now with the CPython wrapper
    assert inner.python_entry.py_func.__qualname__ == "add_one.python_entry"
    assert not inner.python_entry.targetoptions.get("no_cpython_wrapper")
