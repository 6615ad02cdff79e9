"""Outputs that must not silently mix or replace what is there, and inputs that cannot be read as asked.

segment DIR --output OUT with another model (E204, E205), train --output onto a folder spacy-ag did not
write (E203), a pipe as a training corpus (E200) or as the input of a command that reads it twice
(E201), and topic coherence that cannot be computed (E206).
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import threading
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spacy_ag import AdaptorGrammar
from spacy_ag.annotation.shards import MANIFEST
from spacy_ag.cli import app
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_raw
from conftest import UNIGRAM, assert_one_error_line, engine_config

TOPICS = """\
[paths]
train = null
output = null

[corpus]
path = ${paths.train}
heldout_fraction = 0.2

[topics]
n_topics = 3
passes = 1
inference = "online"
word_adapted = false

[online]
batch_size = 10

[training]
seed = 4
checkpoint_every = 0
"""


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def tree(folder: Path):
    """Every file under `folder` (hidden ones too) and its bytes."""
    return {str(p.relative_to(folder)): p.read_bytes() for p in sorted(folder.rglob("*")) if p.is_file()}


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    """Two different segmenters of the same text, and that text split into an input directory."""
    root = tmp_path_factory.mktemp("models")
    utterances = generate_corpus(make_lexicon(6, alphabet="abcdefg", min_len=2, max_len=4, seed=1), 40, seed=2)
    texts = ["".join(u) for u in utterances]
    AdaptorGrammar(UNIGRAM).fit(texts, iterations=2, seed=1).save(root / "m1")
    AdaptorGrammar(UNIGRAM).fit(texts, iterations=3, seed=2).save(root / "m2")
    (root / "in" / "sub").mkdir(parents=True)
    (root / "in" / "a.txt").write_text("\n".join(texts[:20]) + "\n", encoding="utf8")
    (root / "in" / "sub" / "b.txt").write_text("\n".join(texts[20:]) + "\n", encoding="utf8")
    return root


def segmented(models, model: str, tmp_path: Path) -> dict:
    """What `model` makes of each input file, one file at a time (the reference for the shards)."""
    out = {}
    for name in ("a.txt", "sub/b.txt"):
        target = tmp_path / "ref" / model / name
        assert run("segment", models / model, models / "in" / name, "-o", target).exit_code == 0
        out[name] = target.read_bytes()
    return out


# ---------------------------------------------------------------- segment DIR --output: one model per output


def test_segment_directory_refuses_the_shards_of_another_model_and_force_rewrites_them(models, tmp_path):
    out = tmp_path / "out"
    first = run("segment", models / "m1", models / "in", "--output", out)
    assert first.exit_code == 0, first.output
    record = json.loads((out / MANIFEST).read_text(encoding="utf8"))
    assert record["command"] == "spacy-ag segment" and len(record["model_sha256"]) == 64
    (out / "sub" / "b.txt").unlink()  # as if the first run had been stopped before its last shard
    before = tree(out)
    line = assert_one_error_line(run("segment", models / "m2", models / "in", "--output", out),
                                 "[E204]", str(out), "--force", record["model_sha256"][:12])
    assert "mix both" in line
    assert tree(out) == before  # nothing written, nothing removed
    # the same model resumes as before
    assert run("segment", models / "m1", models / "in", "--output", out).exit_code == 0
    m1 = segmented(models, "m1", tmp_path)
    assert {name: (out / name).read_bytes() for name in m1} == m1
    # --force rewrites every shard with the new model and records it
    forced = run("segment", models / "m2", models / "in", "--output", out, "--force")
    assert forced.exit_code == 0, forced.output
    m2 = segmented(models, "m2", tmp_path)
    assert m1 != m2
    assert {name: (out / name).read_bytes() for name in m2} == m2
    assert json.loads((out / MANIFEST).read_text(encoding="utf8"))["model_sha256"] != record["model_sha256"]


def test_segment_directory_refuses_other_options_and_shards_without_a_record(models, tmp_path):
    out = tmp_path / "out"
    assert run("segment", models / "m1", models / "in", "--output", out).exit_code == 0
    assert_one_error_line(run("segment", models / "m1", models / "in", "--output", out, "--format", "wordseg"),
                          "[E204]", "--format wordseg", "--format text")
    assert_one_error_line(run("parse", models / "m1", models / "in", "--output", out), "[E204]", "spacy-ag parse")
    (out / MANIFEST).unlink()  # shards of a spacy-ag that kept no record, or copied by hand
    assert_one_error_line(run("segment", models / "m1", models / "in", "--output", out),
                          "[E205]", "2 shards", "a.txt", "--force")
    assert run("segment", models / "m1", models / "in", "--output", out, "--force").exit_code == 0
    assert (out / MANIFEST).is_file()


# ---------------------------------------------------------------- train --output: only where spacy-ag wrote


@pytest.fixture
def engine(tmp_path):
    utterances = generate_corpus(make_lexicon(6, alphabet="abcdefg", min_len=2, max_len=4, seed=1), 30, seed=2)
    write_raw(tmp_path / "raw.txt", utterances)
    (tmp_path / "grammars").mkdir()
    (tmp_path / "grammars" / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    (tmp_path / "e.cfg").write_text(engine_config(iterations=2, checkpoint_every=2), encoding="utf8")
    return tmp_path


def test_train_refuses_a_folder_it_did_not_write_until_forced(engine):
    out = engine / "mine"
    (out / "model").mkdir(parents=True)
    (out / "model" / "notes.txt").write_text("my notes\n", encoding="utf8")
    (out / "config.cfg").write_text("[my]\nown = 1\n", encoding="utf8")
    before = tree(out)
    args = ["train", engine / "e.cfg", "-o", out, "--paths.train", engine / "raw.txt"]
    assert "[E203]" in assert_one_error_line(run(*args), str(out), "config.cfg, model/", "--force")
    assert tree(out) == before
    forced = run(*args, "--force")
    assert forced.exit_code == 0, forced.output
    assert AdaptorGrammar.load(out / "model").grammar.start == "Sentence"
    again = run(*args)  # now a folder of spacy-ag's own: a rerun needs no --force
    assert again.exit_code == 0, again.output
    assert "--force" in run("train", "--help").output


def test_topic_pipeline_and_demo_outputs_are_guarded_too(engine):
    out = engine / "mine"
    out.mkdir()
    (out / "README").write_text("keep\n", encoding="utf8")
    (engine / "docs.txt").write_text("tax vote law\ngoal team cup\n" * 10, encoding="utf8")
    (engine / "t.cfg").write_text(TOPICS, encoding="utf8")
    assert_one_error_line(run("train", engine / "t.cfg", "-o", out, "--paths.train", engine / "docs.txt"),
                          "[E203]", "README", "heldout.txt")
    (engine / "p.cfg").write_text('[nlp]\nlang = "xx"\npipeline = []\n', encoding="utf8")
    assert_one_error_line(run("train", engine / "p.cfg", "-o", out), "[E203]", "README", "model-last/")
    assert_one_error_line(run("demo", "-o", out, "-n", "2"), "[E203]", "README", "grammar.lt")
    assert sorted(os.listdir(out)) == ["README"]


# ---------------------------------------------------------------- pipes as inputs


def test_training_refuses_a_pipe_as_its_corpus(engine):
    fifo = engine / "corpus.fifo"
    os.mkfifo(fifo)  # nothing writes to it: a refusal must not open it (which would block)
    line = assert_one_error_line(run("train", engine / "e.cfg", "-o", engine / "o", "--paths.train", fifo),
                                 "[E200]", str(fifo), "a pipe (FIFO)", "more than once")
    assert "not found" not in line
    (engine / "t.cfg").write_text(TOPICS, encoding="utf8")
    assert_one_error_line(run("train", engine / "t.cfg", "-o", engine / "o", "--paths.train", fifo),
                          "[E200]", "documents file")
    assert not (engine / "o").exists()


def test_training_refuses_dev_stdin_fed_by_a_pipe_but_reads_it_redirected_from_a_file(engine):
    command = [sys.executable, "-m", "spacy_ag", "train", str(engine / "e.cfg"), "-o", str(engine / "o"),
               "--paths.train", "/dev/stdin"]
    piped = subprocess.run(command, input=(engine / "raw.txt").read_bytes(), capture_output=True, cwd=engine)
    assert piped.returncode == 1
    assert piped.stderr.decode().strip().splitlines() == [piped.stderr.decode().strip()]
    assert "[E200] /dev/stdin:" in piped.stderr.decode() and "a pipe (FIFO)" in piped.stderr.decode()
    with open(engine / "raw.txt", "rb") as stdin:  # /dev/stdin is then the file itself
        redirected = subprocess.run(command, stdin=stdin, capture_output=True, cwd=engine)
    assert redirected.returncode == 0, redirected.stderr.decode()
    assert (engine / "o" / "model").is_dir()


def _feed(fifo: Path, text: str) -> threading.Thread:
    def write():
        with open(fifo, "w", encoding="utf8") as f:
            f.write(text)

    thread = threading.Thread(target=write, daemon=True)
    thread.start()
    return thread


def test_commands_that_read_twice_refuse_a_pipe_and_segment_reads_one(models, tmp_path):
    fifo = tmp_path / "lines.fifo"
    os.mkfifo(fifo)
    gold = tmp_path / "gold.txt"
    gold.write_text("ab cd\n", encoding="utf8")
    assert_one_error_line(run("evaluate", fifo, gold), "[E201]", str(fifo), "prediction file", "a pipe")
    assert_one_error_line(run("evaluate-morph", fifo, gold), "[E201]", "prediction file")
    text = (models / "in" / "a.txt").read_text(encoding="utf8")
    writer = _feed(fifo, text)
    result = run("segment", models / "m1", fifo)
    writer.join(10)
    assert result.exit_code == 0, result.output
    expected = run("segment", models / "m1", models / "in" / "a.txt").stdout
    assert result.stdout == expected and len(expected.splitlines()) == 20


def test_segment_writes_a_pipe_output_in_place(models, tmp_path):
    """--output a device or pipe (/dev/stdout) is written, never renamed over (which replaced the device)."""
    fifo = tmp_path / "out.fifo"
    os.mkfifo(fifo)
    got = []
    reader = threading.Thread(target=lambda: got.append(fifo.read_text(encoding="utf8")), daemon=True)
    reader.start()
    result = run("segment", models / "m1", models / "in" / "a.txt", "-o", fifo)
    reader.join(10)
    assert result.exit_code == 0, result.output
    assert got == [run("segment", models / "m1", models / "in" / "a.txt").stdout]
    assert fifo.is_fifo() and sorted(os.listdir(tmp_path)) == ["out.fifo"]


# ---------------------------------------------------------------- coherence that cannot be computed


@pytest.mark.parametrize("docs, n_topics, reason", [
    ("cat dog\ndog cat\nbird cat\nfish dog\nmouse cat\n", 10, "no pair of top words has both words"),
    ("word word word\n" * 20, 3, "single distinct word"),
])
def test_topic_training_reports_coherence_as_not_computable(tmp_path, docs, n_topics, reason):
    (tmp_path / "docs.txt").write_text(docs, encoding="utf8")
    (tmp_path / "t.cfg").write_text(TOPICS, encoding="utf8")
    out = tmp_path / "out"
    result = run("train", tmp_path / "t.cfg", "-o", out, "--paths.train", tmp_path / "docs.txt",
                 "--topics.n_topics", n_topics)
    assert result.exit_code == 0, result.output
    assert "PMI n/a, NPMI n/a" in result.stdout
    warning = result.stderr.strip().splitlines()
    assert len(warning) == 1 and warning[0].startswith(f"⚠ [E206] {out / 'heldout.txt'}:"), result.stderr
    assert reason in warning[0]
    scores = json.loads((out / "scores.json").read_text(encoding="utf8"))
    assert scores["pmi"] is None and scores["heldout"]["tokens"] >= 1
    assert (out / "model" / "header.json").is_file()
    evaluated = run("evaluate-topics", out / "model")
    assert evaluated.exit_code == 0, evaluated.output
    assert "add-one PMI n/a, NPMI n/a" in evaluated.stdout and "[E206]" in evaluated.stderr
