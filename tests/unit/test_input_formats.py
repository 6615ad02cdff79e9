"""Plain text wherever JSONL is read, and a pipeline directory wherever a model is (docs/input-formats.md).

A tiny generated corpus, pipelines fitted with 3 sweeps: plain text, JSONL and
an extensionless file must give the same segmenter byte for byte; `segment`
and `parse` on a pipeline directory must print what its segmenter's model
prints; every MODEL argument goes through one resolver.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import spacy
import srsly
from typer.testing import CliRunner

from spacy_ag.cli import app
from spacy_ag.cli._common import PARSER_MODEL, SEGMENTER_MODEL, TOPIC_MODEL, resolve_model_dir
from spacy_ag.components.readers import PlainTextCorpus, TextCorpus
from spacy_ag.components.serialization import saved_components
from spacy_ag.errors import ModelFileError, TextError, TrainingLayerError
from spacy_ag.input_formats import jsonl_texts, resolve_text_format
from spacy_ag.synthetic import generate_corpus, make_lexicon
from spacy_ag.train.starter_config import init_config_text
from spacy_ag.train.pipeline import train_pipeline
from conftest import assert_one_error_line

TOKENIZER_ARRAYS = Path("model-last") / "tokenizer" / "model" / "arrays.npz"


def run(*args, input=None):
    return CliRunner().invoke(app, [str(a) for a in args], input=input)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """80 unsegmented utterances as plain text (with a blank line), JSONL and an extensionless copy."""
    root = tmp_path_factory.mktemp("formats")
    lexicon = make_lexicon(10, alphabet="abcdefgh", min_len=2, max_len=4, seed=2)
    texts = ["".join(words) for words in generate_corpus(lexicon, 80, mean_words=3.0, seed=4)]
    (root / "train.txt").write_text("\n".join(texts[:40]) + "\n\n" + "\n".join(texts[40:]) + "\n", encoding="utf8")
    (root / "train").write_text((root / "train.txt").read_text(encoding="utf8"), encoding="utf8")
    srsly.write_jsonl(root / "train.jsonl", ({"text": t} for t in texts))
    config = root / "c.cfg"
    config.write_text(init_config_text(phonemes=True, iterations=3), encoding="utf8")
    return {"root": root, "texts": texts, "config": config}


@pytest.fixture(scope="module")
def pipeline(corpus):
    """A pipeline trained on the plain-text file."""
    out = corpus["root"] / "from-txt"
    train_pipeline(corpus["config"], out, {"paths.train": str(corpus["root"] / "train.txt")}, interactive=False,
                   show_scores=False)
    return out


def test_resolve_text_format(tmp_path):
    obj, arr = '{"text": "ab"}\n', "[1, 2]\n"
    cases = {"a.jsonl": (arr, "jsonl"), "a.json": (arr, "jsonl"), "a.txt": (obj, "text"),
             "obj": ("\n\n" + obj, "jsonl"), "array": (arr, "text"), "plain": ("ab cd\n", "text"),
             "empty": ("", "text"), "bad": ("{not json\n", "text")}
    for name, (text, expected) in cases.items():
        (tmp_path / name).write_text(text, encoding="utf8")
        assert resolve_text_format(tmp_path / name) == expected, name
    assert resolve_text_format(tmp_path / "a.txt", "jsonl") == "jsonl"  # a declared format wins
    assert resolve_text_format(tmp_path / "obj", "text") == "text"
    with pytest.raises(ValueError, match="unknown format"):
        resolve_text_format(tmp_path / "a.txt", "csv")


def test_jsonl_records_are_checked_line_by_line(tmp_path):
    path = tmp_path / "c.jsonl"
    path.write_text('{"text": "ab"}\n\n{"text": "cd", "id": 3}\n', encoding="utf8")
    assert list(jsonl_texts(path)) == [(1, "ab"), (3, "cd")]
    path.write_text('{"text": "ab"}\n{"txt": "cd"}\n', encoding="utf8")
    with pytest.raises(TrainingLayerError, match=r"\[E047\] .*c\.jsonl:2:"):
        list(jsonl_texts(path))


def test_text_corpus_reads_plain_text_and_jsonl_alike(corpus):
    nlp = spacy.blank("xx")
    root = corpus["root"]
    read = {name: [eg.reference.text for eg in TextCorpus(root / name)(nlp)] for name in ("train.txt", "train.jsonl",
                                                                                          "train")}
    assert read["train.txt"] == read["train.jsonl"] == read["train"] == corpus["texts"]  # the blank line skipped
    assert [eg.reference.text for eg in TextCorpus(root / "train.txt", limit=5)(nlp)] == corpus["texts"][:5]
    assert [eg.reference.text for eg in PlainTextCorpus(root / "train.txt")(nlp)] == corpus["texts"]
    assert list(TextCorpus(None)(nlp)) == []


def test_plain_text_trains_the_same_pipeline_as_jsonl(corpus, pipeline):
    """`--paths.train raw.txt` with the shipped config: the segmenter of the JSONL file, byte for byte."""
    root = corpus["root"]
    for name in ("train.jsonl", "train"):
        train_pipeline(corpus["config"], root / f"from-{name}", {"paths.train": str(root / name)}, interactive=False,
                       show_scores=False)
        assert (root / f"from-{name}" / TOKENIZER_ARRAYS).read_bytes() == (pipeline / TOKENIZER_ARRAYS).read_bytes()
    trace = [json.loads(line) for line in (pipeline / "trace.jsonl").read_text().splitlines()]
    assert [line["iteration"] for line in trace] == [1, 2, 3]
    assert spacy.load(pipeline / "model-last").meta["ag_training"]["fits"][0]["texts"] == len(corpus["texts"])


def test_a_config_with_spacys_jsonl_reader_reads_plain_text(corpus, pipeline, tmp_path):
    """A config written before plain text was read (spacy.JsonlCorpus.v1) trains on a .txt file too."""
    text = corpus["config"].read_text(encoding="utf8")
    ours = '@readers = "spacy-ag.TextCorpus.v1"\npath = ${paths.train}\nformat = "auto"\n'
    assert ours in text
    old = tmp_path / "old.cfg"
    old.write_text(text.replace(ours, '@readers = "spacy.JsonlCorpus.v1"\npath = ${paths.train}\n'), encoding="utf8")
    result = run("train", old, "--output", tmp_path / "out", "--paths.train", corpus["root"] / "train.txt")
    assert result.exit_code == 0, result.output
    assert "plain text, not JSONL: read with spacy-ag.TextCorpus.v1" in result.stdout
    saved = spacy.util.load_config(tmp_path / "out" / "model-last" / "config.cfg", interpolate=False)
    assert saved["corpora"]["train"]["@readers"] == "spacy-ag.TextCorpus.v1"
    assert (tmp_path / "out" / TOKENIZER_ARRAYS).read_bytes() == (pipeline / TOKENIZER_ARRAYS).read_bytes()


def test_plain_text_that_is_wordseg_tags_is_refused(corpus, tmp_path):
    tagged = tmp_path / "tagged.txt"
    tagged.write_text("a b ;eword\nc d ;esyll ;eword e ;eword\n", encoding="utf8")
    line = assert_one_error_line(run("train", corpus["config"], "--output", tmp_path / "o", "--paths.train", tagged),
                                 "[E150]", "tagged.txt:1:", "--corpora.train.format wordseg-tags")
    assert "TextCorpus" in line
    with pytest.raises(TextError, match=r"\[E150\] .*spacy-ag.TextCorpus.v1.*format = \"wordseg-tags\""):
        list(PlainTextCorpus(tagged)(spacy.blank("xx")))
    # read as tags, the same file trains
    result = run("train", corpus["config"], "--output", tmp_path / "o", "--paths.train", tagged,
                 "--corpora.train.format", "wordseg-tags")
    assert result.exit_code == 0, result.output


def test_segment_and_parse_take_a_pipeline_directory(corpus, pipeline, tmp_path):
    """model-last segments and parses as its tokenizer's model does, and as the pipeline itself does."""
    root = corpus["root"]
    model_last, model = pipeline / "model-last", pipeline / "model-last" / "tokenizer" / "model"
    for command in ("segment", "parse"):
        from_pipeline = run(command, model_last, root / "train.txt")
        from_model = run(command, model, root / "train.txt")
        assert from_pipeline.exit_code == 0, from_pipeline.output
        assert from_pipeline.stdout == from_model.stdout
    lines = run("segment", model_last, root / "train.txt").stdout.splitlines()
    assert len(lines) == 81 and lines[40] == ""
    nlp = spacy.load(model_last)
    texts = corpus["texts"]
    assert [" ".join(t.text for t in doc) for doc in nlp.pipe(texts)] == lines[:40] + lines[41:]
    assert run("parse", model_last, root / "train.txt").stdout.startswith("(Sentence (Word ")
    assert_one_error_line(run("segment", root, root / "train.txt"), "[E153]", "segmenter")
    assert_one_error_line(run("parse", tmp_path / "missing", root / "train.txt"), "[E060]", "missing")
    assert_one_error_line(run("topics", model_last), "[E153]", "ag_topics")


def _fake_component(pipeline: Path, name: str, cfg, fitted: bool = True) -> Path:
    (pipeline / name).mkdir(parents=True)
    (pipeline / name / "cfg").write_text(cfg if isinstance(cfg, str) else json.dumps(cfg), encoding="utf8")
    if fitted:
        (pipeline / name / "model").mkdir()
        (pipeline / name / "model" / "header.json").write_text("{}", encoding="utf8")
    return pipeline / name / "model"


def test_one_resolver_for_every_model_argument(tmp_path):
    """The archive itself, a training output (OUTPUT/model), or a pipeline's component by kind."""
    pipeline = tmp_path / "model-last"
    segmenter = _fake_component(pipeline, "tokenizer", {"kind": "segmenter"})
    parser = _fake_component(pipeline, "ag_parser", {"kind": "parser"})
    topics = _fake_component(pipeline, "ag_topics", {"kind": "topics", "n_topics": 3})
    _fake_component(pipeline, "ner", "not json")
    _fake_component(pipeline, "unfitted", {"kind": "parser"}, fitted=False)
    assert saved_components(pipeline) == [("ag_parser", "parser", parser), ("ag_topics", "topics", topics),
                                          ("tokenizer", "segmenter", segmenter)]
    assert resolve_model_dir(pipeline, SEGMENTER_MODEL) == segmenter
    assert resolve_model_dir(pipeline, PARSER_MODEL) == parser
    assert resolve_model_dir(pipeline, TOPIC_MODEL) == topics
    assert resolve_model_dir(segmenter, PARSER_MODEL) == segmenter
    assert resolve_model_dir(pipeline / "tokenizer", TOPIC_MODEL) == segmenter  # a training output: its model/
    only_segmenter = tmp_path / "seg-only"
    alone = _fake_component(only_segmenter, "tokenizer", {"kind": "segmenter"})
    assert resolve_model_dir(only_segmenter, PARSER_MODEL) == alone
    with pytest.raises(ModelFileError, match=r"\[E153\] .*seg-only.*ag_topics"):
        resolve_model_dir(only_segmenter, TOPIC_MODEL)
    with pytest.raises(ModelFileError, match=r"\[E060\]"):
        resolve_model_dir(tmp_path / "nowhere", SEGMENTER_MODEL)
