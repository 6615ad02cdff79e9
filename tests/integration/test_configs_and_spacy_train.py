"""Every shipped config loads, every pipeline config passes `spacy debug config`, and
`python -m spacy train` and `spacy-ag train` give the same model from the same config."""
from __future__ import annotations

import hashlib
import json
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest
import spacy
import srsly

from spacy_ag.config import config_kind, load_pipeline_config, load_topic_config, load_training_config
from spacy_ag.synthetic import generate_corpus, make_lexicon
from spacy_ag.train.starter_config import init_config_text

REPO = Path(__file__).resolve().parents[2]
CONFIGS = sorted(p for p in (REPO / "configs").rglob("*.cfg"))


def test_there_are_configs_of_every_kind():
    kinds = {config_kind(p) for p in CONFIGS}
    assert kinds == {"engine", "topics", "pipeline"}


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: str(p.relative_to(REPO / "configs")))
def test_every_shipped_config_loads(path):
    kind = config_kind(path)
    if kind == "engine":
        cfg = load_training_config(path)
        assert cfg.grammar_path.is_file(), cfg.grammar_path
    elif kind == "topics":
        v = load_topic_config(path)
        assert v["topics"].n_topics >= 1 and v["topics"].b in ("auto",) or isinstance(v["topics"].b, float)
    else:
        from spacy.cli.debug_config import debug_config

        load_pipeline_config(path)
        try:  # spaCy's own check, as `python -m spacy debug config PATH` runs it
            debug_config(path, overrides={})
        except SystemExit as exit:
            pytest.fail(f"spacy debug config {path} failed ({exit.code})")


@pytest.mark.parametrize("args", [dict(phonemes=True), dict(lang="zh", grammar="colloc")])
def test_init_config_output_passes_spacy_debug_config(tmp_path, args):
    from spacy.cli.debug_config import debug_config

    path = tmp_path / "c.cfg"
    path.write_text(init_config_text(**args), encoding="utf8")
    debug_config(path, overrides={})


def _tree_hashes(root: Path):
    """sha256 of every file under `root` but meta.json (it holds timings and speeds)."""
    return {str(p.relative_to(root)): hashlib.sha256(p.read_bytes()).hexdigest()
            for p in sorted(root.rglob("*")) if p.is_file() and p.name != "meta.json"}


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    root = tmp_path_factory.mktemp("corpus")
    lexicon = make_lexicon(25, seed=4)
    gold = generate_corpus(lexicon, 150, seed=5)
    srsly.write_jsonl(root / "train.jsonl", [{"text": "".join(u)} for u in gold])
    (root / "dev.txt").write_text("".join(" ".join(u) + "\n" for u in gold[:40]), encoding="utf8")
    words = sorted({w + suffix for u in gold for w in u for suffix in ("", "ing", "ed")})
    (root / "words.txt").write_text("\n".join(words[:120]) + "\n", encoding="utf8")
    return root


def _run(*args, cwd):
    return subprocess.run([sys.executable, *map(str, args)], cwd=cwd, capture_output=True, text=True, timeout=900)


@pytest.mark.parametrize("config", ["pipeline-brent-unigram.cfg", "pipeline-brent-colloc.cfg"])
def test_spacy_train_and_spacy_ag_train_give_the_same_model(corpus, tmp_path, config):
    overrides = ["--paths.train", corpus / "train.jsonl", "--paths.dev", corpus / "dev.txt",
                 "--nlp.tokenizer.iterations", 6, "--nlp.tokenizer.seed", 2,
                 "--nlp.tokenizer.sampler", '{"anneal_start": 2.0, "anneal_iterations": 3}']
    path = REPO / "configs" / config
    spacy = _run("-m", "spacy", "train", path, "--output", tmp_path / "A", *overrides, cwd=tmp_path)
    assert spacy.returncode == 0, spacy.stdout + spacy.stderr
    ours = _run("-m", "spacy_ag", "train", path, "--output", tmp_path / "B", *overrides, cwd=tmp_path)
    assert ours.returncode == 0, ours.stdout + ours.stderr
    a, b = _tree_hashes(tmp_path / "A" / "model-last"), _tree_hashes(tmp_path / "B" / "model-last")
    assert "tokenizer/model/arrays.npz" in a and a == b
    # the settings of the command line reached the sampler under both commands
    trace = [json.loads(line) for line in (tmp_path / "B" / "trace.jsonl").read_text().splitlines()]
    assert len(trace) == 6 and trace[0]["temperature"] == pytest.approx(2.0)
    saved = (tmp_path / "A" / "model-last" / "config.cfg").read_text()
    assert "iterations = 6" in saved and "anneal_start" in saved
    # spacy train ends after the fit: one step of spaCy's loop, which evaluates the segmenter
    steps = [line.split() for line in spacy.stdout.splitlines() if line.strip()[:1].isdigit()]
    assert len(steps) == 1 and steps[0][:2] == ["0", "0"], spacy.stdout
    meta = srsly.read_json(tmp_path / "A" / "model-last" / "meta.json")
    assert 0.0 < meta["performance"]["token_f"] <= 1.0


def test_spacy_train_and_spacy_ag_train_give_the_same_morphology_pipeline(corpus, tmp_path):
    """ag_parser fitted in initialize with its own [components.ag_parser] sampler settings; no dev data."""
    overrides = ["--paths.train", corpus / "words.txt", "--components.ag_parser.iterations", 4,
                 "--components.ag_parser.seed", 1]
    path = REPO / "configs" / "morphology" / "pipeline-en.cfg"
    for out, command in (("A", ("-m", "spacy")), ("B", ("-m", "spacy_ag"))):
        done = _run(*command, "train", path, "--output", tmp_path / out, *overrides, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    a, b = _tree_hashes(tmp_path / "A" / "model-last"), _tree_hashes(tmp_path / "B" / "model-last")
    assert "ag_parser/model/arrays.npz" in a and a == b
    assert _tree_hashes(tmp_path / "A" / "model-best") == _tree_hashes(tmp_path / "B" / "model-best")
    header = srsly.read_json(tmp_path / "A" / "model-last" / "ag_parser" / "model" / "header.json")
    assert header["sampler"]["sample_hyper"] is False  # [components.ag_parser.sampler] of the config
    trace = [json.loads(line) for line in (tmp_path / "B" / "trace.jsonl").read_text().splitlines()]
    assert [line["iteration"] for line in trace] == [1, 2, 3, 4]


def test_spacy_train_and_spacy_ag_train_give_the_same_topic_pipeline(tmp_path):
    """ag_topics learns its topics in initialize ([components.ag_topics] passes); the loop leaves them."""
    themes = [["steuer", "wahl", "gesetz"], ["tor", "spiel", "pokal"], ["regen", "wind", "schnee"]]
    rng = np.random.default_rng(0)
    docs = [" ".join(rng.choice(themes[i % 3], size=10)) for i in range(60)]
    (tmp_path / "docs.txt").write_text("\n".join(docs) + "\n", encoding="utf8")
    overrides = ["--paths.train", tmp_path / "docs.txt", "--components.ag_topics.n_topics", 3,
                 "--components.ag_topics.passes", 2]
    path = REPO / "configs" / "topics" / "pipeline-topics.cfg"
    for out, command in (("A", ("-m", "spacy")), ("B", ("-m", "spacy_ag"))):
        done = _run(*command, "train", path, "--output", tmp_path / out, *overrides, cwd=tmp_path)
        assert done.returncode == 0, done.stdout + done.stderr
    a, b = _tree_hashes(tmp_path / "A" / "model-last"), _tree_hashes(tmp_path / "B" / "model-last")
    assert "ag_topics/model/arrays.npz" in a and a == b
    nlp = spacy.load(tmp_path / "A" / "model-last")
    assert abs(sum(nlp(docs[0]).cats.values()) - 1.0) < 1e-9
