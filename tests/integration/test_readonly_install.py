"""A read-only install: the package folder and HOME are not writable (a container run as non-root).

numba caches a ``cache=True`` kernel beside its source or in ~/.cache; with
neither writable, decorating the kernel raised "no locator available", so
``import spacy_ag.core``, ``spacy.load`` and the CLI failed. spacy_ag.core now
picks a private cache under the temp directory, with one warning, or compiles
without a cache when even that is impossible.

The situation is made for real: a copy of the package goes first on
PYTHONPATH, it and a fake HOME are made read-only, and the checks run in
subprocesses that permission bits bind: as a non-root user already, as
`nobody` when that user can run this interpreter, else as root stripped of the
capabilities that override file permissions (setpriv). The first run compiles
the kernels of a tiny fit and of the segmenter into the fresh cache (about a
minute and a half).
"""
from __future__ import annotations

import os
import shutil
import stat
import subprocess
import sys
import tempfile
import textwrap
from pathlib import Path

import pytest
import spacy
from spacy.training import Example

import spacy_ag

PACKAGE = Path(spacy_ag.__file__).parent
SEGMENTER = {"@tokenizers": "spacy-ag.Segmenter.v1", "iterations": 2, "seed": 1}
TEXTS = ["abcabd", "abdab", "cab", "abcab", "dabab"]
CACHE_WARNING = "NUMBA_CACHE_DIR"  # every cache warning names the variable, nothing else does

PROBE = textwrap.dedent("""
    import sys
    try:
        open(sys.argv[1] + "/probe", "w")
    except PermissionError:
        pass
    else:
        sys.exit("permission bits do not bind this process")
    import numba, spacy
    print(sys.version)
""")

FIT_AND_LOAD = textwrap.dedent("""
    import sys
    import spacy
    import spacy_ag
    from spacy_ag.model import AdaptorGrammar

    assert spacy_ag.__file__.startswith(sys.argv[1]), spacy_ag.__file__
    grammar = '''
    1 1 Sentence --> Word+
    1 0.0001 10000 Word --> Char+
    1 1 Char --> [:corpus:]
    '''
    model = AdaptorGrammar(grammar).fit(["abab", "ba", "ab"], iterations=1, seed=0)
    assert len(model.training_segmentation()) == 3
    nlp = spacy.load(sys.argv[2])
    print("segmented:", [t.text for t in nlp("abcab dab")])
    from spacy_ag.core import KERNEL_CACHE, sampler
    print("cache:", KERNEL_CACHE)
    print("hits:", sum(sampler.sweep.python_entry.stats.cache_hits.values()))  # Python calls its twin
""")

NO_CACHE = textwrap.dedent("""
    import tempfile
    tempfile.tempdir = tempfile.gettempdir() + "/not-a-dir/below"  # as if no temp directory were usable
    import numpy as np
    from spacy_ag.core import KERNEL_CACHE
    from spacy_ag.core.rng import make_rng, next_u64

    assert KERNEL_CACHE is None
    next_u64(make_rng(1))
    print("cache:", type(next_u64._cache).__name__, type(next_u64.python_entry._cache).__name__)
""")


def _unprivileged_prefixes():
    """Command prefixes that run a command without the power to ignore permission bits."""
    if os.geteuid() != 0:
        yield []
        return
    setpriv = shutil.which("setpriv")
    if setpriv:
        yield [setpriv, "--reuid=65534", "--regid=65534", "--clear-groups"]
        yield [setpriv, "--nnp", "--inh-caps=-all", "--bounding-set=-dac_override,-dac_read_search,-fowner"]


@pytest.fixture(scope="module")
def install():
    """A read-only copy of the package, a read-only HOME, a writable TMPDIR, a saved pipeline."""
    base = Path(tempfile.mkdtemp(prefix="spacy-ag-readonly-"))
    try:
        shutil.copytree(PACKAGE, base / "site" / "spacy_ag", ignore=shutil.ignore_patterns("__pycache__"))
        (base / "home").mkdir()
        (base / "tmp").mkdir()
        nlp = spacy.blank("xx", config={"nlp": {"tokenizer": dict(SEGMENTER)}})
        nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in TEXTS])
        nlp.to_disk(base / "pipeline")
        for path in (base / "site", base / "home", base / "pipeline"):
            _set_mode(path, writable=False)
        (base / "tmp").chmod(0o1777)
        base.chmod(0o555)
        env = {k: v for k, v in os.environ.items()
               if k not in ("NUMBA_CACHE_DIR", "XDG_CACHE_HOME", "PYTHONDONTWRITEBYTECODE")}
        env.update(HOME=str(base / "home"), TMPDIR=str(base / "tmp"), PYTHONPATH=str(base / "site"),
                   PYTHONWARNINGS="default")
        yield _Install(base, env)
    finally:
        _set_mode(base, writable=True)
        shutil.rmtree(base)


def _set_mode(root: Path, writable: bool):
    for path in [root, *root.rglob("*")]:
        if path.is_symlink():
            continue
        mode = (0o755 if path.is_dir() else 0o644) if writable else (0o555 if path.is_dir() else 0o444)
        path.chmod(mode)


class _Install:
    def __init__(self, base: Path, env: dict):
        self.base, self.env = base, env
        self.prefix = None
        reasons = []
        for prefix in _unprivileged_prefixes():
            probe = subprocess.run([*prefix, sys.executable, "-c", PROBE, str(base / "home")], env=env,
                                   cwd=base, capture_output=True, text=True)
            if probe.returncode == 0 and probe.stdout.strip() == sys.version:
                self.prefix = prefix
                break
            reasons.append(f"{' '.join(prefix[:2]) or 'as is'}: {(probe.stderr.strip() or probe.stdout.strip())[-200:]}")
        self.reason = "no way to run this interpreter without overriding permissions (" + "; ".join(reasons) + ")"

    def run(self, *args: str, timeout: float = 900) -> subprocess.CompletedProcess:
        if self.prefix is None:
            pytest.skip(self.reason)
        result = subprocess.run([*self.prefix, sys.executable, *args], env=self.env, cwd=self.base,
                                capture_output=True, text=True, timeout=timeout)
        assert result.returncode == 0, result.stderr[-3000:]
        assert "Traceback" not in result.stderr, result.stderr[-3000:]
        return result

    def caches(self):
        return sorted((self.base / "tmp").glob("spacy-ag-numba-cache-*/core_*"))


def _cache_warnings(result):
    return [line for line in result.stderr.splitlines() if CACHE_WARNING in line]


def _kernels(cache: Path):
    return [p for p in cache.iterdir() if p.suffix in (".nbi", ".nbc")]


def test_help_does_not_touch_numba(install):
    result = install.run("-m", "spacy_ag", "--help")
    assert "Usage" in result.stdout
    assert _cache_warnings(result) == []
    assert install.caches() == []


@pytest.mark.slow
def test_fit_and_load_cache_in_a_private_temp_folder(install):
    site, pipeline = str(install.base / "site"), str(install.base / "pipeline")
    first = install.run("-c", FIT_AND_LOAD, site, pipeline)
    (warning,) = _cache_warnings(first)
    [cache] = install.caches()
    assert str(cache.parent) in warning and "__pycache__ nor the user cache" in warning, warning
    assert f"cache: {cache}" in first.stdout and "hits: 0" in first.stdout
    assert "segmented:" in first.stdout
    assert stat.S_IMODE(cache.parent.stat().st_mode) == 0o700
    assert _kernels(cache) and (cache / "kernel-sources.sha256").exists()
    assert not list((install.base / "site").rglob("__pycache__"))

    again = install.run("-c", FIT_AND_LOAD, site, pipeline)  # a new process loads what the first compiled
    assert len(_cache_warnings(again)) == 1
    assert "hits: 0" not in again.stdout

    # a changed source drops the cached kernels in the folder actually used
    chart = install.base / "site" / "spacy_ag" / "core" / "chart.py"
    stamp = (cache / "kernel-sources.sha256").read_text()
    _set_mode(chart.parent, writable=True)
    try:
        chart.write_text(chart.read_text() + "\n# edited\n")
    finally:
        _set_mode(chart.parent, writable=False)
    install.run("-c", "import spacy_ag.core")
    assert _kernels(cache) == []
    assert (cache / "kernel-sources.sha256").read_text() != stamp


def test_without_any_writable_folder_caching_is_off(install):
    before = install.caches()
    result = install.run("-c", NO_CACHE)
    (warning,) = _cache_warnings(result)
    assert "caching off" in warning, warning
    assert "cache: NullCache NullCache" in result.stdout
    assert install.caches() == before
