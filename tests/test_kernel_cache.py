"""Numba's kernel cache is dropped whenever any kernel source changes, not just the kernel's own file."""
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
