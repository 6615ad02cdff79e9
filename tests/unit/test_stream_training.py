"""Online training streamed from a file: checkpoints, exact resume, and output written in constant memory."""
from __future__ import annotations

import json
import signal
import tracemalloc

import numpy as np
import pytest
from typer.testing import CliRunner

from spacy_ag import AdaptorGrammar
from spacy_ag.archive import read_checkpoint_file
from spacy_ag.cli import app
from spacy_ag.runs import online_learner as online
from spacy_ag.evaluation import read_segmented, segmentation_scores
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_gold
from spacy_ag.train.engine import segment_lines, write_segmentation

from conftest import ONLINE_CONFIG, UNIGRAM

# 300 lines in minibatches of 10: 30 minibatches a pass, 2 passes; the shuffle window (50) is smaller
# than the file, so a resumed pass must replay the seeded shuffle to find its place.
STREAMED = ("--inference.stream", "true", "--inference.shuffle_buffer", "50")


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    tmp = tmp_path_factory.mktemp("stream")
    lexicon = make_lexicon(12, alphabet="abcdefgh", min_len=2, max_len=4, seed=4)
    write_gold(tmp / "train.txt", generate_corpus(lexicon, 300, mean_words=3.0, seed=5))
    (tmp / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    return tmp


def train(corpus, out, *options, checkpoint_every=4):
    """`spacy-ag train` of the streamed config into `out` (with `options`, e.g. --resume)."""
    path = corpus / "online.cfg"
    path.write_text(ONLINE_CONFIG.format(train=corpus / "train.txt", mode="online", passes=2), encoding="utf8")
    args = ["train", path, "--output", out, *STREAMED, "--training.checkpoint_every", checkpoint_every, *options]
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def uninterrupted(corpus):
    out = corpus / "full"
    result = train(corpus, out)
    assert result.exit_code == 0, result.output
    return out


def model_arrays(out):
    with np.load(out / "model" / "arrays.npz") as arrays:
        return {name: arrays[name] for name in arrays.files}


def assert_same_run(out, reference):
    """Bit for bit the same saved model, segmentation, scores and trace (but for timings)."""
    got, want = model_arrays(out), model_arrays(reference)
    assert sorted(got) == sorted(want)
    for name in want:
        assert got[name].dtype == want[name].dtype and np.array_equal(got[name], want[name]), name
    for name in ("segmentation.txt", "scores.json"):
        assert (out / name).read_text() == (reference / name).read_text(), name

    def trace(path):
        lines = [json.loads(line) for line in (path / "trace.jsonl").read_text().splitlines()]
        return [{k: v for k, v in line.items() if k not in ("seconds", "peak_rss_mb")} for line in lines]

    assert trace(out) == trace(reference)


def checkpoint_position(out):
    """(pass, chunks of it consumed, minibatches done) of the run's checkpoint."""
    meta = read_checkpoint_file(out / "checkpoints" / "online.npz", "checkpoint")[1]
    return meta["epoch"], meta["position"], meta["progress"]["minibatches"]


def resume_equals_uninterrupted(corpus, out, uninterrupted, monkeypatch, real_step):
    monkeypatch.setattr(online.OnlineLearner, "step", real_step)
    result = train(corpus, out, "--resume")
    assert result.exit_code == 0, result.output
    assert_same_run(out, uninterrupted)


def interrupting_step(monkeypatch, at, exception):
    """Make the `at`-th minibatch raise `exception` before it changes anything."""
    real_step, calls = online.OnlineLearner.step, {"n": 0}

    def step(self, *args, **kwargs):
        calls["n"] += 1
        if calls["n"] == at:
            raise exception
        return real_step(self, *args, **kwargs)

    monkeypatch.setattr(online.OnlineLearner, "step", step)
    return real_step


# 8: in the first pass; 41: in the second (its shuffle has another seed); 31: the first minibatch of it
@pytest.mark.parametrize("at", [8, 31, 41])
def test_resume_after_ctrl_c_equals_the_uninterrupted_run(corpus, uninterrupted, monkeypatch, at):
    out = corpus / f"cut-{at}"
    real_step = interrupting_step(monkeypatch, at, KeyboardInterrupt)
    result = train(corpus, out)
    assert result.exit_code == 130 and "--resume" in result.output, result.output
    assert checkpoint_position(out)[2] == at - 1  # the minibatches finished, not the one cut
    resume_equals_uninterrupted(corpus, out, uninterrupted, monkeypatch, real_step)


def test_resume_from_a_periodic_checkpoint_after_a_crash(corpus, uninterrupted, monkeypatch):
    """A crash (no checkpoint at the stop) resumes from the last periodic checkpoint, minibatches later
    than it replayed, and the trace lines written after it are not doubled."""
    out = corpus / "crash"
    real_step = interrupting_step(monkeypatch, 47, RuntimeError("crash"))
    result = train(corpus, out)
    assert result.exit_code == 1 and "crash" in result.output, result.output
    assert checkpoint_position(out) == (1, 140, 44)
    resume_equals_uninterrupted(corpus, out, uninterrupted, monkeypatch, real_step)


def test_sigint_stops_after_the_minibatch_with_a_checkpoint(corpus, uninterrupted, monkeypatch):
    """Ctrl-C (a real SIGINT) with no periodic checkpoints: the run finishes its minibatch, writes
    the checkpoint, exits 130, and --resume completes it exactly."""
    out = corpus / "sigint"
    real_step, calls = online.OnlineLearner.step, {"n": 0}

    def step(self, *args, **kwargs):
        line = real_step(self, *args, **kwargs)
        calls["n"] += 1
        if calls["n"] == 13:
            signal.raise_signal(signal.SIGINT)
        return line

    monkeypatch.setattr(online.OnlineLearner, "step", step)
    result = train(corpus, out, checkpoint_every=0)
    assert result.exit_code == 130 and "--resume" in result.output, result.output
    assert checkpoint_position(out) == (0, 130, 13)
    resume_equals_uninterrupted(corpus, out, uninterrupted, monkeypatch, real_step)


def test_streamed_segmentation_equals_the_in_memory_one(corpus, uninterrupted):
    model = AdaptorGrammar.load(uninterrupted / "model")
    gold = read_segmented(corpus / "train.txt")
    in_memory = model.segment(["".join(words) for words in gold])
    written = [line.split() for line in (uninterrupted / "segmentation.txt").read_text().splitlines()]
    assert written == in_memory
    scores = json.loads((uninterrupted / "scores.json").read_text())
    assert scores == json.loads(json.dumps(segmentation_scores(in_memory, gold)))
    assert scores["token_f"] > 0.8


def test_writing_the_segmentation_holds_no_more_memory_for_a_larger_corpus(corpus, uninterrupted, tmp_path):
    """Segmenting, writing and scoring 10 times as many lines peaks at about the same memory: the
    lines are consumed one batch at a time, never gathered."""
    model = AdaptorGrammar.load(uninterrupted / "model")
    lexicon = make_lexicon(12, alphabet="abcdefgh", min_len=2, max_len=4, seed=4)

    def peak(n_lines):
        def gold():
            for k in range(0, n_lines, 500):  # generated a slice at a time, so the input is no list either
                yield from generate_corpus(lexicon, 500, mean_words=3.0, seed=k)
        texts = ("".join(words) for words in gold())
        tracemalloc.start()
        try:
            scores = write_segmentation(tmp_path / f"seg-{n_lines}.txt", segment_lines(model, texts), gold())
            return tracemalloc.get_traced_memory()[1], scores
        finally:
            tracemalloc.stop()

    small, small_scores = peak(2000)
    large, large_scores = peak(20000)
    assert large_scores["n_utterances"] == 20000 and small_scores["n_utterances"] == 2000
    assert len((tmp_path / "seg-20000.txt").read_text().splitlines()) == 20000
    assert large < 1.3 * small, (small, large)
