"""The spaCy project's morphology and topic workflows (project.yml), on tiny generated data, and the
scores they rest on: planted morphology and topics (spacy_ag.synthetic), topic recovery
(spacy_ag.topics.planted), and the TOK that `spacy evaluate` prints for the segmenter.

The segmentation workflow runs in tests/integration/test_pipeline_training.py; packaging is left out here (the
same `spacy package` command as there)."""
from __future__ import annotations

import shutil
from pathlib import Path

import numpy as np
import pytest
import spacy
import srsly
from spacy.scorer import Scorer
from spacy.tokens import Doc
from spacy.training import Example

from spacy_ag.components.scoring import score_segmentation
from spacy_ag.morphology.gold import read_gold_segmentation
from spacy_ag.synthetic import generate_morphology, generate_topic_corpus
from spacy_ag.topics.planted import (
    match_topics, normalized_mutual_information, planted_topic_scores, purity, top_word_precision,
)

REPO = Path(__file__).resolve().parents[2]


def _project_copy(tmp_path: Path) -> Path:
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(REPO / "project.yml", root / "project.yml")
    shutil.copytree(REPO / "configs", root / "configs")
    shutil.copytree(REPO / "scripts", root / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    return root


def _run_workflow_without_packaging(root: Path, workflow: str, overrides) -> None:
    from weasel.cli.run import project_run
    from weasel.util import load_project_config

    steps = load_project_config(root)["workflows"][workflow]
    assert steps[-1].startswith("package"), steps
    for step in steps[:-1]:
        project_run(root, step, overrides=overrides, capture=True)


# ---------------------------------------------------------------- project.yml


def test_all_runs_the_three_workflows_and_each_writes_metrics(tmp_path):
    from weasel.util import load_project_config

    shutil.copy(REPO / "project.yml", tmp_path / "project.yml")  # weasel makes the project's directories
    config = load_project_config(tmp_path)
    workflows = config["workflows"]
    assert workflows["all"] == workflows["segmentation"] + workflows["morphology"] + workflows["topics"]
    commands = {c["name"]: c for c in config["commands"]}
    for name in ("segmentation", "morphology", "topics"):
        steps = workflows[name]
        assert all(step in commands for step in steps), steps
        outputs = [out for step in steps for out in commands[step].get("outputs", [])]
        assert any(out.startswith("metrics/") and out.endswith(".json") for out in outputs), (name, outputs)
        assert any("spacy package" in line for step in steps for line in commands[step]["script"]), name
    assert "ag_parser" in commands["train-morphology"]["help"]
    assert "--components.ag_parser." in commands["train-morphology"]["script"][0]
    assert "--components.ag_topics." in commands["train-topics"]["script"][0]


@pytest.mark.slow
def test_morphology_workflow_recovers_the_planted_analyses(tmp_path):
    root = _project_copy(tmp_path)
    overrides = {"vars.morph_stems": 40, "vars.morph_iterations": 40}
    _run_workflow_without_packaging(root, "morphology", overrides)
    gold = read_gold_segmentation(root / "assets" / "synthetic" / "morphology" / "gold.txt")
    words = (root / "assets" / "synthetic" / "morphology" / "words.txt").read_text(encoding="utf8").split()
    assert sorted(words) == sorted(gold) and len(words) == 40 * 3  # three forms of every stem
    scores = srsly.read_json(root / "metrics" / "morphology.json")
    assert scores["n_words"] == len(gold)
    assert scores["n_gold_boundaries"] == sum(len(alts[0]) - 1 for alts in gold.values())
    # no boundary at all scores F 0; these runs find most planted boundaries (F about .89)
    assert scores["boundary_f"] > 0.7 and scores["boundary_p"] > 0.6 and scores["boundary_r"] > 0.6, scores
    meta = srsly.read_json(root / "training" / "morphology" / "model-last" / "meta.json")
    assert meta["description"] == "Unsupervised parsing (morphology) with adaptor grammars (spacy-ag)"
    analyses = (root / "training" / "morphology" / "analyses.txt").read_text(encoding="utf8").splitlines()
    assert len(analyses) == len(gold)
    for line in analyses:  # word<TAB>morphs that spell it, read off token._.ag_morphs
        word, morphs = line.split("\t")
        assert "".join(morphs.split()) == word


@pytest.mark.slow
def test_topic_workflow_recovers_the_planted_topics(tmp_path):
    root = _project_copy(tmp_path)
    overrides = {"vars.topics": 3, "vars.topic_documents": 60, "vars.topic_sweeps": 30}
    _run_workflow_without_packaging(root, "topics", overrides)
    planted = srsly.read_json(root / "assets" / "synthetic" / "topics" / "planted.json")
    assert len(planted["vocabularies"]) == 3 and len(planted["dominant_topics"]) == 60
    scores = srsly.read_json(root / "metrics" / "topics.json")
    assert scores["n_documents"] == 60 and scores["n_topics"] == scores["n_planted_topics"] == 3
    # chance: NMI 0, purity the largest planted topic's share
    assert scores["nmi"] > 0.6, scores
    assert scores["purity"] > scores["purity_chance"] + 0.3, scores
    assert scores["top_word_precision"] >= 0.8 and scores["planted_topics_found"] == 3, scores
    meta = srsly.read_json(root / "training" / "topics" / "model-last" / "meta.json")
    assert meta["description"] == "Unsupervised topics with adaptor grammars (spacy-ag)"


# ---------------------------------------------------------------- TOK of spacy evaluate


def test_tok_counts_the_gold_tokens_found_exactly():
    """spaCy's own token_acc counts predicted tokens inside one gold token, so over-segmentation scores
    100%; the segmenter's scorer (what `spacy evaluate` prints as TOK) counts gold tokens found exactly."""
    vocab = spacy.blank("xx").vocab
    gold = [["walking", "home"], ["the", "dog"]]
    predicted = [["walk", "ing", "home"], ["the", "dog"]]
    examples = [Example(Doc(vocab, words=p, spaces=[False] * len(p)), Doc(vocab, words=g, spaces=[False] * len(g)))
                for p, g in zip(predicted, gold)]
    assert Scorer.score_tokenization(examples)["token_acc"] == 1.0  # what spaCy would print
    scores = score_segmentation(examples)
    assert scores["token_acc"] == pytest.approx(3 / 4) == scores["token_r"]
    assert scores["token_p"] == pytest.approx(3 / 5)
    exact = [Example(eg.reference.copy(), eg.reference) for eg in examples]
    assert score_segmentation(exact)["token_acc"] == 1.0


# ---------------------------------------------------------------- generated data and recovery scores


def test_generated_morphology_spells_its_words():
    morphology = generate_morphology(30, classes=2, suffixes_per_class=3, forms_per_stem=3, seed=4)
    assert len(morphology.stems) == 30 and all(len(forms) == 4 and forms[0] == "" for forms in morphology.suffixes)
    stems = set(morphology.stems)
    for word, alternatives in morphology.analyses.items():
        for morphs in alternatives:
            assert "".join(morphs) == word and morphs[0] in stems and len(morphs) in (1, 2)
    lines = morphology.gold_lines()
    assert len(lines) == len(morphology.words) and all("\t" in line for line in lines)
    assert generate_morphology(30, classes=2, suffixes_per_class=3, seed=4).analyses == morphology.analyses


def test_generated_topics_are_disjoint_and_planted():
    corpus = generate_topic_corpus(4, 50, words_per_topic=12, document_length=20, alpha=0.05, seed=2)
    vocabularies = [set(v) for v in corpus.vocabularies]
    assert sum(map(len, vocabularies)) == len(set().union(*vocabularies)) == 48
    for doc, topics in zip(corpus.documents, corpus.token_topics):
        assert len(doc) == len(topics) and all(word in vocabularies[k] for word, k in zip(doc, topics))
    dominant = corpus.dominant_topics()
    assert dominant == [int(np.bincount(z, minlength=4).argmax()) for z in corpus.token_topics]
    np.testing.assert_allclose(corpus.proportions.sum(axis=1), 1.0)


def test_recovery_scores():
    planted = [0, 0, 1, 1, 2, 2]
    assert normalized_mutual_information([2, 2, 0, 0, 1, 1], planted) == pytest.approx(1.0)  # a relabelling
    assert normalized_mutual_information([0] * 6, planted) == 0.0  # one topic for all: no information
    assert normalized_mutual_information([0, 1, 0, 1, 0, 1], [0, 0, 0, 1, 1, 1]) == pytest.approx(
        0.0817, abs=1e-4)  # I = 0.0566 nats over mean entropy 0.6931 (scikit-learn gives the same)
    assert purity([0, 0, 0, 1, 1, 1], planted) == pytest.approx(4 / 6)
    vocabularies = [["a", "b", "c"], ["d", "e", "f"]]
    top = [["d", "e", "a"], ["a", "b", "c"], ["x", "y", "f"]]
    assert match_topics(top, vocabularies) == [1, 0, 1]
    assert top_word_precision(top, vocabularies) == pytest.approx([2 / 3, 1.0, 1 / 3])
    scores = planted_topic_scores([0, 1, 1], [0, 1, 1], top, vocabularies)
    assert scores["planted_topics_found"] == 2 and scores["purity_chance"] == pytest.approx(2 / 3)
    with pytest.raises(ValueError):
        purity([0, 1], [0])
