"""Numba's kernel cache: dropped whenever any kernel source changes, not just the kernel's own file,
and safe to load whatever order processes filled it in."""
import os
import subprocess
import sys
import textwrap
from pathlib import Path

import spacy_ag.core
from spacy_ag.core import clear_stale_kernel_cache


def _kernels(folder: Path):
    (folder / "__pycache__").mkdir(exist_ok=True)
    for name in ("sampler.sweep-94.py311.nbi", "sampler.sweep-94.py311.1.nbc"):
        (folder / "__pycache__" / name).write_bytes(b"compiled")


def _cached(folder: Path):
    return sorted(p.name for p in (folder / "__pycache__").iterdir() if p.suffix in (".nbi", ".nbc"))


def test_an_edit_to_another_file_drops_every_cached_kernel(tmp_path):
    (tmp_path / "chart.py").write_text("def inside(): return 1\n")
    (tmp_path / "sampler.py").write_text("from .chart import inside\n")
    _kernels(tmp_path)
    (tmp_path / "__pycache__" / "chart.cpython-311.pyc").write_bytes(b"bytecode")

    assert clear_stale_kernel_cache(tmp_path)  # no stamp yet: nothing is trusted
    assert _cached(tmp_path) == []
    assert (tmp_path / "__pycache__" / "chart.cpython-311.pyc").exists()

    _kernels(tmp_path)
    assert not clear_stale_kernel_cache(tmp_path)  # sources unchanged: the cache stays
    assert len(_cached(tmp_path)) == 2

    # sampler.py is untouched, but its cached kernels inlined the old inside()
    (tmp_path / "chart.py").write_text("def inside(): return 2\n")
    assert clear_stale_kernel_cache(tmp_path)
    assert _cached(tmp_path) == []
    assert not clear_stale_kernel_cache(tmp_path)


def test_importing_the_core_stamps_its_sources():
    assert not clear_stale_kernel_cache(Path(spacy_ag.core.__file__).parent)


# A parallel kernel compiled on its own (here through a caller outside the package)...
PARALLEL_ALONE = textwrap.dedent("""
    import numpy as np
    from numba import njit
    from spacy_ag.core.expectations import stick_terms

    @njit
    def weights(nu1, nu2):
        log_pi, log_rest = np.empty(nu1.shape[0]), np.empty(nu1.shape[0])
        stick_terms(nu1, nu2, log_pi, log_rest)  # 600 sticks: the parallel branch
        return log_pi.sum()

    nu = np.linspace(1.0, 5.0, 600)
    print(weights(nu, nu + 1.0))
""")
# ...then a cached kernel calling it (refresh_weights), compiled in a second process and loaded in a third
CALLER = textwrap.dedent("""
    import numpy as np
    from spacy_ag.runs.online_learner import OnlineLearner
    from spacy_ag.grammar.reader import parse_grammar_text
    from spacy_ag.model import AdaptorGrammar
    from spacy_ag.settings import OnlineSettings

    grammar = parse_grammar_text("1 1 Sentence --> Word+\\nWord --> Char+\\n1 1 Char --> [:corpus:]\\n")
    model = AdaptorGrammar(grammar, inference="online")
    model._prepare(model.read_corpus(["abab", "ba"]))
    learner = OnlineLearner(model.compiled, OnlineSettings(default_truncation=600))
    print(np.isfinite(learner.V.rho).all())
""")


def test_a_cached_kernel_compiled_after_its_parallel_callee_was_cached_loads_without_a_crash(tmp_path):
    """numba#8578: loaded from the cache, such a kernel does not start the threads, and its first parallel
    launch crashed the process (SIGSEGV). `spacy_ag.core` starts them at import."""
    env = {**os.environ, "NUMBA_CACHE_DIR": str(tmp_path / "cache")}
    for step, script in (("parallel kernel alone", PARALLEL_ALONE), ("caller compiled", CALLER),
                         ("caller loaded", CALLER)):
        done = subprocess.run([sys.executable, "-c", script], env=env, capture_output=True, text=True,
                              timeout=600)
        assert done.returncode == 0, f"{step}: exit {done.returncode}\n{done.stderr[-2000:]}"
    assert done.stdout.strip() == "True"
    assert any((tmp_path / "cache").rglob("variational.refresh_weights.python_entry-*.nbc"))  # loaded, not compiled
