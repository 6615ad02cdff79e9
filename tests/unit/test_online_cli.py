"""Variational modes through the config, the CLI and spaCy's `update`, on generated data."""
from __future__ import annotations

import json
import warnings

import pytest
import spacy
from spacy.training import Example
from typer.testing import CliRunner

from spacy_ag.cli import app
from spacy_ag.config import ConfigError, load_training_config
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_gold

from conftest import ONLINE_CONFIG as CONFIG

GRAMMAR = """\
1 1 Sentence --> Word+
Word --> Char+
1 1 Char --> [:corpus:]
"""

@pytest.fixture()
def setup(tmp_path):
    lexicon = make_lexicon(12, alphabet="abcdefgh", min_len=2, max_len=4, seed=4)
    utterances = generate_corpus(lexicon, 300, mean_words=3.0, seed=5)
    write_gold(tmp_path / "train.txt", utterances)
    (tmp_path / "unigram.lt").write_text(GRAMMAR, encoding="utf8")

    def config(mode="online", passes=3):
        path = tmp_path / f"{mode}.cfg"
        path.write_text(CONFIG.format(train=tmp_path / "train.txt", mode=mode, passes=passes), encoding="utf8")
        return path

    return tmp_path, lexicon, config


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.mark.parametrize("mode", ["online", "vb"])
def test_train_variational_config_and_evaluate_model(setup, mode):
    tmp, lexicon, config = setup
    result = run("train", config(mode, passes=4), "--output", tmp / mode)
    assert result.exit_code == 0, result.output
    scores = json.loads((tmp / mode / "scores.json").read_text())
    assert scores["token_f"] > 0.8, scores
    trace = [json.loads(line) for line in (tmp / mode / "trace.jsonl").read_text().splitlines()]
    assert trace[-1]["pass"] == 4 and "token_f" in trace[-1]
    result = run("evaluate", tmp / mode / "model", tmp / "train.txt", "--json", tmp / "eval.json")
    assert result.exit_code == 0, result.output
    evaluated = json.loads((tmp / "eval.json").read_text())
    assert evaluated["token_f"] == pytest.approx(scores["token_f"])
    assert evaluated["heldout_loglik"] < 0 and evaluated["heldout_unparseable"] == 0


def test_streaming_training_matches_the_alphabet_of_the_whole_file(setup):
    tmp, _, config = setup
    result = run("train", config(), "--output", tmp / "stream", "--inference.stream", "true",
                 "--online.passes", "2")
    assert result.exit_code == 0, result.output
    scores = json.loads((tmp / "stream" / "scores.json").read_text())
    assert scores["token_f"] > 0.8, scores


def test_online_resume_after_interrupt_equals_uninterrupted(setup, monkeypatch):
    tmp, _, config = setup
    path = config(passes=2)
    assert run("train", path, "--output", tmp / "full").exit_code == 0
    from spacy_ag.runs import online_learner as online

    real_steps = online.OnlineLearner.steps  # an in-memory corpus runs its minibatches in calls of several

    def interrupting_steps(self, *args, **kwargs):
        if self.minibatches >= 37:  # in the second pass, between two reports
            raise KeyboardInterrupt
        return real_steps(self, *args, **kwargs)

    monkeypatch.setattr(online.OnlineLearner, "steps", interrupting_steps)
    result = run("train", path, "--output", tmp / "cut")
    assert result.exit_code == 130 and "--resume" in result.output, result.output
    monkeypatch.setattr(online.OnlineLearner, "steps", real_steps)
    assert run("train", path, "--output", tmp / "cut", "--resume").exit_code == 0
    assert (tmp / "cut" / "segmentation.txt").read_text() == (tmp / "full" / "segmentation.txt").read_text()


def test_online_config_errors_are_one_line(setup):
    _, _, config = setup
    with pytest.raises(ConfigError, match=r"online\.truncation must be a table"):
        load_training_config(config(), {"online.truncation": 5})
    with pytest.raises(ConfigError, match=r"inference\.mode must be one of"):
        load_training_config(config(), {"inference.mode": "gibbs"})
    cfg = load_training_config(config(), {"online.truncation": {"Word": 7}})
    assert cfg.online.truncation == {"Word": 7} and cfg.inference == "online"


def test_spacy_update_trains_parser_and_segmenter_online(setup):
    tmp, lexicon, _ = setup
    lines = ["".join(line.split()) for line in (tmp / "train.txt").read_text().splitlines()]
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1",
                                                          "boundary_chars": "", "default_a": 0.0,
                                                          "default_b": 100.0}}})
    nlp.add_pipe("ag_tokenizer_update")
    nlp.add_pipe("ag_parser", config={"grammar": "unigram", "default_a": 0.0, "default_b": 100.0})
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")  # the unfitted tokenizer warns while making examples
        examples = [Example(nlp.make_doc(t), nlp.make_doc(t)) for t in lines]
    losses_first, losses_last = None, None
    for _ in range(3):
        for start in range(0, len(examples), 10):
            losses = nlp.update(examples[start:start + 10])
            losses_first = losses_first or dict(losses)
            losses_last = losses
    assert losses_last["tokenizer"] < losses_first["tokenizer"]
    assert losses_last["ag_parser"] < losses_first["ag_parser"]
    words = [t.text for line in lines[:50] for t in nlp(line)]
    assert sum(w in lexicon for w in words) / len(words) > 0.8
    nlp.to_disk(tmp / "pipeline")
    loaded = spacy.load(tmp / "pipeline")
    assert [t.text for t in loaded(lines[0])] == [t.text for t in nlp(lines[0])]
    assert loaded.tokenizer.model.inference == "online"
