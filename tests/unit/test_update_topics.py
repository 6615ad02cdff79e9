"""`spacy-ag update-topics MODEL DOCS --output NEW`: a trained topic model learns from new documents
(TopicModel.partial_fit) into a new model of the same kind, and MODEL stays byte for byte as it was."""
from __future__ import annotations

import hashlib
import json
from pathlib import Path

import pytest
import spacy
from spacy.training import Example
from typer.testing import CliRunner

from conftest import assert_one_error_line
from spacy_ag.cli import app
from spacy_ag.synthetic import generate_topic_corpus
from spacy_ag.topics import TopicModel

N_TOPICS, N_DOCS, SWEEPS = 3, 40, 20


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def digest(folder: Path) -> str:
    """One hash of every file below `folder`, names included."""
    h = hashlib.sha256()
    for path in sorted(p for p in folder.rglob("*") if p.is_file()):
        h.update(path.relative_to(folder).as_posix().encode() + b"\0" + path.read_bytes())
    return h.hexdigest()


@pytest.fixture(scope="module")
def planted():
    return generate_topic_corpus(N_TOPICS, N_DOCS, words_per_topic=10, document_length=15, seed=3)


@pytest.fixture(scope="module")
def old_model(tmp_path_factory, planted):
    path = tmp_path_factory.mktemp("update_topics") / "old"
    TopicModel(N_TOPICS, inference="gibbs", sweeps=SWEEPS).fit(planted.documents, seed=0).save(path)
    return path


def new_words(planted):
    """Words the model has never seen, spelled with letters it knows: two planted words run together."""
    v = planted.vocabularies
    return [v[0][0] + v[1][0], v[2][1] + v[0][2]]


def new_documents(planted, n=8):
    return [planted.vocabularies[0][:4] + new_words(planted) * 3 for _ in range(n)]


def write_lines(path: Path, docs) -> Path:
    path.write_text("".join(" ".join(d) + "\n" for d in docs), encoding="utf8")
    return path


def test_the_updated_model_has_seen_the_new_documents_and_words(tmp_path, old_model, planted):
    before = digest(old_model)
    docs = new_documents(planted)
    result = run("update-topics", old_model, write_lines(tmp_path / "new.txt", docs), "--output", tmp_path / "new")
    assert result.exit_code == 0, result.output
    old, new = TopicModel.load(old_model), TopicModel.load(tmp_path / "new")
    assert old.learner.seen == N_DOCS and new.learner.seen == N_DOCS + len(docs)
    words = new_words(planted)
    old_vocabulary, new_vocabulary = old.get_topics()[1], new.get_topics()[1]
    assert not set(words) & set(old_vocabulary)
    assert set(words) <= set(new_vocabulary)
    assert (new.word_probabilities(words).max(axis=0) > old.word_probabilities(words).max(axis=0)).all()
    # MODEL is untouched and no temporary directory is left beside the output
    assert digest(old_model) == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["new", "new.txt"]
    assert str(tmp_path / "new") in result.stdout and f"{N_DOCS} -> {N_DOCS + len(docs)}" in result.stdout

    # the same documents as JSONL, with the same seed: the same model, byte for byte
    (tmp_path / "new.jsonl").write_text("".join(json.dumps({"text": " ".join(d)}) + "\n" for d in docs),
                                        encoding="utf8")
    again = run("update-topics", old_model, tmp_path / "new.jsonl", "-o", tmp_path / "from-jsonl")
    assert again.exit_code == 0, again.output
    assert digest(tmp_path / "from-jsonl") == digest(tmp_path / "new")
    # an existing model at --output is replaced by the new one
    replaced = run("update-topics", old_model, tmp_path / "new.jsonl", "-o", tmp_path / "new", "--seed", 5)
    assert replaced.exit_code == 0, replaced.output
    assert TopicModel.load(tmp_path / "new").learner.seen == N_DOCS + len(docs)


def test_a_pipeline_gives_a_pipeline(tmp_path, planted):
    nlp = spacy.blank("xx")
    nlp.add_pipe("ag_topics", config={"n_topics": N_TOPICS, "sweeps": SWEEPS})
    examples = [Example(nlp.make_doc(" ".join(d)), nlp.make_doc(" ".join(d))) for d in planted.documents]
    nlp.initialize(lambda: examples)
    nlp.to_disk(tmp_path / "pipeline")
    before = digest(tmp_path / "pipeline")
    docs = new_documents(planted, 5)
    result = run("update-topics", tmp_path / "pipeline", write_lines(tmp_path / "new.txt", docs), "-o",
                 tmp_path / "pipeline-2")
    assert result.exit_code == 0, result.output
    assert digest(tmp_path / "pipeline") == before
    updated = spacy.load(tmp_path / "pipeline-2")
    assert updated.pipe_names == ["ag_topics"]
    model = updated.get_pipe("ag_topics").model
    assert model.learner.seen == N_DOCS + len(docs)
    assert set(new_words(planted)) <= set(model.get_topics()[1])
    doc = updated(" ".join(new_words(planted)))
    assert sum(doc.cats.values()) == pytest.approx(1.0)
    # a pipeline's --output must be a pipeline (or new): a topic model directory is not replaced
    TopicModel.load(tmp_path / "pipeline" / "ag_topics" / "model").save(tmp_path / "archive")
    refused = run("update-topics", tmp_path / "pipeline", tmp_path / "new.txt", "-o", tmp_path / "archive")
    assert_one_error_line(refused, "[E162]", "spaCy pipeline directory")


def test_bad_input_is_one_coded_line_and_writes_nothing(tmp_path, old_model, planted):
    before = digest(old_model)
    good_docs = write_lines(tmp_path / "good.txt", new_documents(planted, 2))
    (tmp_path / "blank.txt").write_text("\n  \n\n", encoding="utf8")
    assert_one_error_line(run("update-topics", old_model, tmp_path / "blank.txt", "-o", tmp_path / "out"),
                          "[E160]", "blank.txt")
    (tmp_path / "unknown.txt").write_text("ÄÖÜ ÉÈ\n", encoding="utf8")
    assert_one_error_line(run("update-topics", old_model, tmp_path / "unknown.txt", "-o", tmp_path / "out"),
                          "[E163]", "2 tokens skipped")
    (tmp_path / "bad.jsonl").write_text('{"text": "ab cd"}\n{"words": ["ab"]}\n', encoding="utf8")
    assert_one_error_line(run("update-topics", old_model, tmp_path / "bad.jsonl", "-o", tmp_path / "out"),
                          "[E047]", "bad.jsonl:2")
    assert_one_error_line(run("update-topics", old_model, good_docs, "-o", old_model), "[E161]")
    assert_one_error_line(run("update-topics", old_model, good_docs, "-o", old_model / "inside"), "[E161]")
    keep = tmp_path / "keep"
    keep.mkdir()
    (keep / "notes.txt").write_text("mine", encoding="utf8")
    assert_one_error_line(run("update-topics", old_model, good_docs, "-o", keep), "[E162]", str(keep))
    assert (keep / "notes.txt").read_text(encoding="utf8") == "mine"
    assert_one_error_line(run("update-topics", tmp_path / "nowhere", good_docs, "-o", tmp_path / "out"),
                          "nowhere")
    assert_one_error_line(run("update-topics", old_model, tmp_path / "missing.txt", "-o", tmp_path / "out"),
                          "missing.txt")
    assert not (tmp_path / "out").exists()
    assert digest(old_model) == before
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".")]
