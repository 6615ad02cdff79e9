"""--resume continues only the run that wrote the checkpoints, for every trainer.

A new run removes the checkpoints of the run before it (before its first iteration), every
checkpoint records the run's fingerprint and is refused by another run (E180), a failed
checkpoint write leaves nothing of another run, and a resumed trace.jsonl has no iteration twice.
A kill is simulated in-process by raising `Killed` (not an Exception: nothing catches it, no
checkpoint is written on the way out) from the checkpoint writer, and once by SIGKILL.
"""
from __future__ import annotations

import errno
import importlib
import json
import os
import re
import shutil
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spacy_ag.archive import MEASUREMENTS
from spacy_ag.cli import app
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_gold, write_raw

from conftest import ONLINE_CONFIG, UNIGRAM, assert_one_error_line, engine_config

TOPICS = """\
[paths]
train = null
output = null

[corpus]
path = ${{paths.train}}
heldout_fraction = 0.2

[topics]
n_topics = 3
inference = "{inference}"
sweeps = 8
passes = 2
word_adapted = false
history_every = 0

[online]
batch_size = 8
refine_every = 1

[training]
seed = 4
checkpoint_every = 2
"""

#: trainer -> (module and name of its checkpoint writer, the override that makes run 2 another run,
#: the setting E180 then names)
TRAINERS = {
    "mcmc": (("spacy_ag.runs.chain_pool", "write_checkpoint_file"), ["--training.seed", "7"], "training.seed"),
    "online": (("spacy_ag.runs.online_runner", "write_checkpoint_file"), ["--training.seed", "7"], "training.seed"),
    "topics-gibbs": (("spacy_ag.topics.gibbs", "write_checkpoint_file"), ["--topics.alpha", "0.5"], "topics.alpha"),
    "topics-online": (("spacy_ag.archive", "write_archive"), ["--training.seed", "7"], "training.seed"),
}


class Killed(BaseException):
    """The process dies here: no handler runs, no checkpoint is written on the way out."""


@pytest.fixture(scope="module")
def folder(tmp_path_factory):
    folder = tmp_path_factory.mktemp("resume_own_run")
    utterances = generate_corpus(make_lexicon(6, alphabet="abcdefg", min_len=2, max_len=4, seed=1), 40, seed=2)
    write_raw(folder / "raw.txt", utterances)
    write_gold(folder / "gold.txt", utterances)
    (folder / "grammars").mkdir()
    (folder / "grammars" / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    (folder / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    (folder / "mcmc.cfg").write_text(engine_config(iterations=8, checkpoint_every=2), encoding="utf8")
    (folder / "online.cfg").write_text(ONLINE_CONFIG.format(train=folder / "gold.txt", mode="online", passes=2)
                                       .replace("checkpoint_every = 7", "checkpoint_every = 2"), encoding="utf8")
    themes = [["tax", "budget", "vote", "law"], ["goal", "match", "team", "cup"], ["rain", "sun", "wind", "snow"]]
    docs = [" ".join(themes[i % 3][(i * j) % 4] for j in range(1, 9)) for i in range(40)]
    (folder / "docs.txt").write_text("\n".join(docs) + "\n", encoding="utf8")
    for inference in ("gibbs", "online"):
        (folder / f"topics-{inference}.cfg").write_text(TOPICS.format(inference=inference), encoding="utf8")
    return folder


def arguments(folder: Path, trainer: str, out: Path):
    extra = {"mcmc": ["--paths.train", folder / "raw.txt"], "topics-gibbs": ["--paths.train", folder / "docs.txt"],
             "topics-online": ["--paths.train", folder / "docs.txt"], "online": []}[trainer]
    return ["train", folder / f"{trainer}.cfg", "--output", out, *extra]


def train(folder: Path, trainer: str, out: Path, *options):
    return CliRunner().invoke(app, [str(a) for a in arguments(folder, trainer, out) + list(options)])


def failing_writer(monkeypatch, trainer: str, at: int, error: BaseException):
    """Make the trainer's checkpoint writer raise `error` at its `at`-th call (1: the first)."""
    module_name, name = TRAINERS[trainer][0]
    module = importlib.import_module(module_name)
    real = getattr(module, name)
    calls = []

    def writer(*args, **kwargs):
        calls.append(1)
        if len(calls) == at:
            raise error
        return real(*args, **kwargs)

    monkeypatch.setattr(module, name, writer)
    return lambda: monkeypatch.setattr(module, name, real)


def trace_lines(out: Path):
    lines = [json.loads(x) for x in (out / "trace.jsonl").read_text(encoding="utf8").splitlines()]
    return [{k: v for k, v in line.items() if k not in MEASUREMENTS} for line in lines]


def steps(out: Path):
    return [(line.get("chain", 0), line.get("iteration", line.get("minibatch"))) for line in trace_lines(out)]


def result_bytes(out: Path):
    """What a run computed: the saved arrays, and the segmentation of an engine run."""
    return {p.name: p.read_bytes() for p in [out / "model" / "arrays.npz", out / "segmentation.txt"] if p.exists()}


def checkpoint_files(out: Path):
    return sorted(p.name for p in (out / "checkpoints").iterdir() if p.name != "run.json")


@pytest.mark.parametrize("trainer", list(TRAINERS))
def test_a_run_killed_before_its_first_checkpoint_leaves_nothing_to_resume(folder, tmp_path, monkeypatch, trainer):
    out, other = tmp_path / "out", TRAINERS[trainer][1]
    assert train(folder, trainer, out).exit_code == 0
    left_by_run_1 = tmp_path / "run-1-checkpoints"
    shutil.copytree(out / "checkpoints", left_by_run_1)
    assert checkpoint_files(out)
    restore = failing_writer(monkeypatch, trainer, 1, Killed())
    with pytest.raises(Killed):
        train(folder, trainer, out, *other)
    restore()
    assert checkpoint_files(out) == []  # run 1's were removed before run 2 began
    assert "[E034]" in assert_one_error_line(train(folder, trainer, out, *other, "--resume"), "no checkpoints")
    # what the earlier version left: run 2's run.json beside run 1's checkpoints
    for path in left_by_run_1.iterdir():
        if path.name != "run.json":
            (shutil.copytree if path.is_dir() else shutil.copy)(path, out / "checkpoints" / path.name)
    line = assert_one_error_line(train(folder, trainer, out, *other, "--resume"), "[E180]", TRAINERS[trainer][2])
    assert "checkpoint of another run" in line


@pytest.mark.parametrize("trainer", list(TRAINERS))
def test_a_second_run_killed_and_resumed_twice_equals_its_uninterrupted_run(folder, tmp_path, monkeypatch,
                                                                              trainer):
    other = TRAINERS[trainer][1]
    reference = tmp_path / "reference"
    assert train(folder, trainer, reference, *other).exit_code == 0
    out = tmp_path / "out"
    assert train(folder, trainer, out).exit_code == 0
    restore = failing_writer(monkeypatch, trainer, 2, Killed())  # after the first checkpoint, before the second
    with pytest.raises(Killed):
        train(folder, trainer, out, *other)
    restore()
    restore = failing_writer(monkeypatch, trainer, 1, Killed())  # the resumed run killed again
    with pytest.raises(Killed):
        train(folder, trainer, out, *other, "--resume")
    restore()
    done = steps(out)
    assert len(done) == len(set(done)) and done  # the sweeps since the checkpoint were cut, not repeated
    resumed = train(folder, trainer, out, *other, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert result_bytes(out) == result_bytes(reference) and result_bytes(out)
    assert trace_lines(out) == trace_lines(reference)
    assert len(steps(out)) == len(set(steps(out)))


@pytest.mark.parametrize("trainer", ["mcmc", "topics-online"])
def test_a_checkpoint_write_out_of_disk_space_leaves_nothing_of_another_run(folder, tmp_path, monkeypatch,
                                                                             trainer):
    out, other = tmp_path / "out", TRAINERS[trainer][1]
    assert train(folder, trainer, out).exit_code == 0
    restore = failing_writer(monkeypatch, trainer, 1, OSError(errno.ENOSPC, os.strerror(errno.ENOSPC)))
    failed = train(folder, trainer, out, *other)
    assert failed.exit_code == 1 and "Traceback" not in failed.output
    last = failed.stderr.strip().splitlines()[-1]  # after the progress lines of the iterations before it
    assert re.match(r"✘ \[E\d{3}\] ", last) and os.strerror(errno.ENOSPC) in last, failed.stderr
    restore()
    assert [p for p in (out / "checkpoints").iterdir() if p.name != "run.json"] == []
    assert "[E034]" in assert_one_error_line(train(folder, trainer, out, *other, "--resume"), "no checkpoints")


def test_a_second_run_sigkilled_before_its_first_checkpoint_cannot_be_resumed(folder, tmp_path):
    out = tmp_path / "out"
    assert train(folder, "mcmc", out).exit_code == 0
    # long enough (many seconds) that the kill lands before its one checkpoint, at the end
    args = [str(a) for a in arguments(folder, "mcmc", out)] + ["--training.seed", "7", "--training.iterations",
                                                                "5000", "--training.checkpoint_every", "0"]
    env = {**os.environ, "PYTHONPATH": os.pathsep.join([str(Path(__file__).resolve().parents[2]),
                                                        os.environ.get("PYTHONPATH", "")])}
    process = subprocess.Popen([sys.executable, "-m", "spacy_ag", *args], env=env, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    run_file = out / "checkpoints" / "run.json"
    deadline = time.monotonic() + 300
    try:
        while not (run_file.exists() and '"training.seed": 7' in run_file.read_text(encoding="utf8")):
            assert process.poll() is None and time.monotonic() < deadline, "run 2 never started"
            time.sleep(0.02)
    finally:
        process.send_signal(signal.SIGKILL)
        process.wait(60)
    assert checkpoint_files(out) == []
    line = assert_one_error_line(CliRunner().invoke(app, args + ["--resume"]), "[E034]")
    assert str(out / "checkpoints") in line
