"""`spacy package` round trip: a trained pipeline becomes a wheel that installs
into a new virtual environment (next to spacy-ag installed from this
repository) and loads there with ``spacy.load("<package name>")``.

Offline: nothing is downloaded. The new environment sees the current
interpreter's site-packages through a folder of links (so spaCy, numba and
numpy are not installed again) that leaves out spacy-ag itself, which is
then built from a copy of this repository and installed into the new
environment with ``pip --no-index --no-build-isolation``. The packaged
pipeline is installed with its requirements checked (``spacy-ag``, ``spacy``),
still without an index.
"""
from __future__ import annotations

import json
import os
import shutil
import site
import subprocess
import sys
import textwrap
from pathlib import Path

import pytest
import srsly

from spacy_ag.train.starter_config import init_config_text
from spacy_ag.train.pipeline import train_pipeline
from spacy_ag.synthetic import generate_corpus, make_lexicon

REPO = Path(__file__).resolve().parents[2]
NAME, VERSION = "ag_pkgtest", "0.0.1"
PACKAGE = f"xx_{NAME}"


def _env():
    env = {k: v for k, v in os.environ.items() if k not in ("PYTHONPATH", "PYTHONHOME", "PIP_INDEX_URL",
                                                            "PIP_EXTRA_INDEX_URL", "PIP_FIND_LINKS")}
    env.update(PIP_NO_INDEX="1", PIP_DISABLE_PIP_VERSION_CHECK="1", PYTHONNOUSERSITE="1")
    return env


def _run(args, cwd, timeout=600):
    result = subprocess.run([str(a) for a in args], cwd=cwd, env=_env(), capture_output=True, text=True,
                            timeout=timeout)
    assert result.returncode == 0, f"{args}\n{result.stdout[-3000:]}\n{result.stderr[-3000:]}"
    return result


def _site_folder(root: Path) -> Path:
    """Links to everything in this interpreter's site-packages except spacy-ag (and .pth hooks)."""
    folder = root / "outer-site-packages"
    folder.mkdir()
    dirs = [Path(p) for p in site.getsitepackages()]
    user = Path(site.getusersitepackages())
    if site.ENABLE_USER_SITE and str(user) in sys.path and user.is_dir():
        dirs.append(user)
    for d in dirs:
        for entry in d.iterdir():
            name = entry.name.lower()
            if name.startswith(("spacy_ag", "spacy-ag", "__editable__")) or name.endswith((".pth", ".egg-link")) \
                    or name == "__pycache__":
                continue
            link = folder / entry.name
            if not link.exists():
                link.symlink_to(entry)
    return folder


def _source_copy(root: Path) -> Path:
    src = root / "spacy-ag-src"
    src.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):  # LICENSE: pyproject's license-files
        shutil.copy(REPO / name, src / name)
    shutil.copytree(REPO / "spacy_ag", src / "spacy_ag",
                    ignore=shutil.ignore_patterns("__pycache__", "*.nbi", "*.nbc", "*.pyc"))
    return src


@pytest.mark.slow
def test_spacy_package_wheel_installs_and_loads_in_a_new_venv(tmp_path):
    # a small trained pipeline
    lexicon = make_lexicon(10, alphabet="abcdefgh", min_len=2, max_len=4, seed=21)
    gold = generate_corpus(lexicon, 80, mean_words=3.0, seed=22)
    srsly.write_jsonl(tmp_path / "train.jsonl", ({"text": "".join(u)} for u in gold))
    (tmp_path / "config.cfg").write_text(init_config_text(phonemes=True, iterations=15))
    trained = train_pipeline(tmp_path / "config.cfg", tmp_path / "training",
                             {"paths.train": str(tmp_path / "train.jsonl")}, interactive=False)
    texts = ["".join(u) for u in gold[:5]] + ["abc hgf", "zzz"]
    expected = [[t.text for t in doc] for doc in trained.nlp.pipe(texts)]

    # spacy package --build wheel
    packages = tmp_path / "packages"
    packages.mkdir()
    _run([sys.executable, "-m", "spacy", "package", trained.model_dir, packages, "--name", NAME,
          "--version", VERSION, "--build", "wheel", "--force"], cwd=tmp_path)
    wheels = list((packages / f"{PACKAGE}-{VERSION}" / "dist").glob("*.whl"))
    assert len(wheels) == 1, list((packages / f"{PACKAGE}-{VERSION}").rglob("*"))
    meta = json.loads((packages / f"{PACKAGE}-{VERSION}" / "meta.json").read_text())
    assert any(r.startswith("spacy-ag>=") for r in meta["requirements"]), meta["requirements"]

    # a new virtual environment: this interpreter's packages without spacy-ag
    venv = tmp_path / "venv"
    _run([sys.executable, "-m", "venv", "--without-pip", venv], cwd=tmp_path)
    python = venv / ("Scripts/python.exe" if os.name == "nt" else "bin/python")
    venv_site = _run([python, "-c", "import site; print(site.getsitepackages()[0])"], cwd=tmp_path).stdout.strip()
    Path(venv_site, "outer-site-packages.pth").write_text(str(_site_folder(tmp_path)) + "\n")
    probe = _run([python, "-c", "import importlib.util as u; print(u.find_spec('spacy_ag') is None)"], cwd=tmp_path)
    assert probe.stdout.strip() == "True", "spacy_ag leaked into the new environment"

    # spacy-ag from this repository, then the packaged pipeline (its requirements checked, no index)
    _run([python, "-m", "pip", "install", "--no-index", "--no-build-isolation", _source_copy(tmp_path)],
         cwd=tmp_path)
    _run([python, "-m", "pip", "install", "--no-index", wheels[0]], cwd=tmp_path)

    script = textwrap.dedent(f"""
        import json, spacy, spacy_ag
        nlp = spacy.load({PACKAGE!r})
        words = [[t.text for t in doc] for doc in nlp.pipe({texts!r})]
        print(json.dumps({{"spacy_ag": spacy_ag.__file__, "words": words, "name": nlp.meta["name"],
                           "tokenizer": type(nlp.tokenizer).__name__,
                           "installed": {PACKAGE!r} in spacy.util.get_installed_models()}}))
    """)
    out = json.loads(_run([python, "-c", script], cwd=tmp_path).stdout.strip().splitlines()[-1])
    assert Path(out["spacy_ag"]).resolve().is_relative_to(venv.resolve()), out["spacy_ag"]
    assert out["tokenizer"] == "Segmenter" and out["name"] == NAME and out["installed"]
    assert out["words"] == expected
