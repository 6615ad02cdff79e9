"""``backend = "ray"``: chains as tasks of a real Ray cluster, with the local backend's result bit for bit.

One local cluster of two CPUs serves the module (`cluster`); the runs are
short (a made-up corpus, a few dozen sweeps). Every test that needs Ray
skips with the reason when it is not installed (``pip install spacy-ag[ray]``).
"""
from __future__ import annotations

import hashlib
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time

import pytest
import spacy
from spacy.training import Example
from typer.testing import CliRunner

from spacy_ag.archive import read_checkpoint_file
from spacy_ag.cli import app
from spacy_ag.model import AdaptorGrammar
from spacy_ag.runs.ray_chains import watch_chains
from spacy_ag.serialize import state_arrays
from spacy_ag.settings import SegmenterSettings, SettingError, TrainingSettings, check
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_raw
from spacy_ag.runs.signals import TrainingInterrupted
from conftest import (
    NO_RAY, UNIGRAM, assert_one_error_line, engine_config, processes_of, run_driver, stop_processes,
)

#: 60 sweeps of 2 chains; checkpoints every 10 (a lost chain repeats at most 10 sweeps)
OPTIONS = dict(iterations=60, chains=2, seed=7, sample_every=2, checkpoint_every=10)


@pytest.fixture(scope="module")
def texts():
    lexicon = make_lexicon(12, alphabet="abcdefgh", min_len=2, max_len=4, seed=3)
    return ["".join(words) for words in generate_corpus(lexicon, 300, mean_words=3, seed=4)]


@pytest.fixture(scope="module")
def reference(texts):
    """The local backend's model, its chains in two processes."""
    return AdaptorGrammar(UNIGRAM).fit(texts, workers=2, **OPTIONS)


def without_time(trace):
    """Trace lines without what measures the process rather than the chain."""
    return [{k: v for k, v in line.items() if k not in ("seconds", "peak_rss_mb")} for line in trace]


def assert_same_model(got, reference):
    a, b = state_arrays(got.state), state_arrays(reference.state)
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    assert without_time(got.trace) == without_time(reference.trace)
    assert got.marginals.counts == reference.marginals.counts
    assert got.marginals.n_samples == reference.marginals.n_samples
    assert got.training_segmentation() == reference.training_segmentation()


def test_ray_chains_equal_local_ones_run_in_parallel_and_report_progress(cluster, texts, reference, tmp_path):
    events, lines = [], []
    with watch_chains(events.append):
        got = AdaptorGrammar(UNIGRAM).fit(texts, backend="ray", callback=lines.append, checkpoint_dir=tmp_path,
                                          **OPTIONS)
    assert_same_model(got, reference)
    # every iteration of both chains reached the callback on the driver, once
    assert sorted((line["chain"], line["iteration"]) for line in lines) == \
        [(c, i) for c in range(2) for i in range(1, 61)]
    # two worker processes at the same time
    started = {e["chain"]: e for e in events if e["event"] == "started"}
    ended = {e["chain"]: e for e in events if e["event"] == "ended"}
    assert sorted(started) == sorted(ended) == [0, 1]
    assert started[0]["pid"] != started[1]["pid"] and os.getpid() not in (started[0]["pid"], started[1]["pid"])
    assert max(e["time"] for e in started.values()) < min(e["time"] for e in ended.values())
    # the checkpoints are written on the driver, as the local backend writes them
    for c in range(2):
        arrays, meta = read_checkpoint_file(tmp_path / f"chain-{c}.npz", "checkpoint")
        assert meta["iteration"] == 60 and meta["trace"] == got.trace[60 * c: 60 * (c + 1)]


def test_a_killed_chain_worker_is_restarted_from_its_checkpoint(cluster, texts, reference):
    events, lines, killed = [], [], []

    def kill_chain_1(line):
        lines.append(line)
        if line["chain"] == 1 and line["iteration"] >= 25 and not killed:
            pid = next(e["pid"] for e in events if e["event"] == "started" and e["chain"] == 1)
            os.kill(pid, signal.SIGKILL)
            killed.append((pid, line["iteration"]))

    with watch_chains(events.append):
        got = AdaptorGrammar(UNIGRAM).fit(texts, backend="ray", callback=kill_chain_1, **OPTIONS)
    assert killed and killed[0][1] < 60, "chain 1 had finished before it could be killed"
    lost = [e for e in events if e["event"] == "lost"]
    assert [(e["chain"], e["attempt"]) for e in lost] == [(1, 0)]
    assert lost[0]["iteration"] in (20, 30, 40, 50)  # its last checkpoint, sent to the driver
    again = [e for e in events if e["event"] == "started" and e["chain"] == 1 and e["attempt"] == 1]
    assert len(again) == 1 and again[0]["pid"] != killed[0][0]
    assert_same_model(got, reference)
    assert sorted((line["chain"], line["iteration"]) for line in lines) == \
        [(c, i) for c in range(2) for i in range(1, 61)]


def test_a_local_run_stopped_by_ctrl_c_resumes_on_ray(cluster, texts, reference, tmp_path):
    def interrupt(line):
        if line["chain"] == 0 and line["iteration"] == 24:
            raise KeyboardInterrupt

    with pytest.raises(TrainingInterrupted):
        AdaptorGrammar(UNIGRAM).fit(texts, workers=2, checkpoint_dir=tmp_path, callback=interrupt, **OPTIONS)
    iterations = [read_checkpoint_file(tmp_path / f"chain-{c}.npz", "checkpoint")[1]["iteration"] for c in range(2)]
    assert all(0 < i < 60 for i in iterations)
    got = AdaptorGrammar(UNIGRAM).fit(texts, backend="ray", checkpoint_dir=tmp_path, resume=True, **OPTIONS)
    assert_same_model(got, reference)


def test_ray_chains_stopped_by_the_callback_resume_exactly(cluster, texts, tmp_path):
    # The driver hears of a line and its stop reaches the workers 0.2-0.4 s later. On `texts`
    # a sweep takes about 7 ms, so a chain could finish its 60 before the stop came; four times
    # the text makes that 15 sweeps or so. Chain 1's worker may start late on a busy machine, so
    # chain 0 stops the run at 30 at the latest.
    longer = texts * 4
    reference = AdaptorGrammar(UNIGRAM).fit(longer, workers=2, **OPTIONS)

    def interrupt(line):
        if line["iteration"] == (15 if line["chain"] == 1 else 30):
            raise KeyboardInterrupt

    with pytest.raises(TrainingInterrupted) as stop:
        AdaptorGrammar(UNIGRAM).fit(longer, backend="ray", checkpoint_dir=tmp_path, callback=interrupt, **OPTIONS)
    assert stop.value.signum == signal.SIGINT
    assert all(read_checkpoint_file(tmp_path / f"chain-{c}.npz", "checkpoint")[1]["iteration"] < 60 for c in range(2))
    got = AdaptorGrammar(UNIGRAM).fit(longer, workers=2, checkpoint_dir=tmp_path, resume=True, **OPTIONS)
    assert_same_model(got, reference)


def test_spacy_ag_train_reads_the_backend_and_may_resume_with_another(cluster, texts, tmp_path):
    args = write_engine(tmp_path, texts[:80], iterations=12, checkpoint_every=4)
    runner = CliRunner()
    for backend in ("local", "ray"):
        result = runner.invoke(app, [*args, "--output", str(tmp_path / backend), "--training.backend", backend])
        assert result.exit_code == 0, result.output
    assert (tmp_path / "ray" / "segmentation.txt").read_text() == \
        (tmp_path / "local" / "segmentation.txt").read_text()
    result = runner.invoke(app, [*args, "--output", str(tmp_path / "local"), "--training.backend", "ray",
                                 "--resume"])
    assert result.exit_code == 0, result.output  # backend and ray_address are not part of the run's fingerprint


def test_the_segmenter_fits_its_chains_on_ray(cluster, texts):
    segmenter = {"@tokenizers": "spacy-ag.Segmenter.v1", "iterations": 12, "chains": 2, "seed": 1}
    segmented = {}
    for backend in ("local", "ray"):
        nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {**segmenter, "backend": backend}}})
        nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in texts[:80]])
        segmented[backend] = [[t.text for t in doc] for doc in nlp.pipe(texts[:80])]
    assert segmented["ray"] == segmented["local"]


def test_backend_is_one_setting_checked_with_one_line():
    assert TrainingSettings().backend == SegmenterSettings().backend == "local"
    assert TrainingSettings().ray_address is None
    with pytest.raises(SettingError, match="training.backend must be one of"):
        check(TrainingSettings, {"backend": "dask"}, "training")
    with pytest.raises(SettingError, match="training.backend"):
        AdaptorGrammar(UNIGRAM).fit(["abab"], iterations=2, backend="dask")


def test_without_ray_the_ray_backend_is_one_coded_line(tmp_path, monkeypatch):
    monkeypatch.setitem(sys.modules, "ray", None)  # `import ray` fails as if it were not installed
    (tmp_path / "grammars").mkdir()
    (tmp_path / "grammars" / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    (tmp_path / "e.cfg").write_text(engine_config(iterations=4, checkpoint_every=2), encoding="utf8")
    write_raw(tmp_path / "raw.txt", [["abab"], ["baba"]])
    result = CliRunner().invoke(app, ["train", str(tmp_path / "e.cfg"), "--output", str(tmp_path / "o"),
                                      "--paths.train", str(tmp_path / "raw.txt"), "--training.backend", "ray"])
    assert "[E042]" in assert_one_error_line(result, "pip install spacy-ag[ray]")


def write_engine(folder, texts, iterations: int, checkpoint_every: int):
    (folder / "grammars").mkdir(exist_ok=True)
    (folder / "grammars" / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    (folder / "e.cfg").write_text(engine_config(iterations=iterations, checkpoint_every=checkpoint_every),
                                  encoding="utf8")
    write_raw(folder / "raw.txt", [[t] for t in texts])
    return ["train", str(folder / "e.cfg"), "--paths.train", str(folder / "raw.txt"), "--training.chains", "2"]


def test_ctrl_c_on_the_driver_stops_every_ray_chain_and_its_cluster(texts, tmp_path):
    """A real `spacy-ag train` process that starts its own cluster; SIGINT to it alone, mid-run."""
    pytest.importorskip("ray", reason=NO_RAY)
    if not sys.platform.startswith("linux"):
        pytest.skip("finds the cluster's processes in /proc")
    folder = tempfile.mkdtemp(prefix="sag-ray-", dir="/tmp")  # the cluster's: its processes name it
    args = write_engine(tmp_path, texts, iterations=150, checkpoint_every=1000)
    out = tmp_path / "stopped"
    with open(tmp_path / "stdout", "wb") as stdout, open(tmp_path / "stderr", "wb") as stderr:
        driver = subprocess.Popen([sys.executable, "-m", "spacy_ag", *args, "--output", str(out),
                                   "--training.backend", "ray"], stdout=stdout, stderr=stderr,
                                  env={**os.environ, "RAY_TMPDIR": folder, "RAY_ADDRESS": ""},
                                  start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        seen = {}
        while len(seen) < 2 or min(seen.values()) < 3:  # both chains under way
            assert driver.poll() is None and time.monotonic() < deadline, (tmp_path / "stderr").read_text()
            time.sleep(0.2)
            if (out / "trace.jsonl").exists():
                for line in (out / "trace.jsonl").read_text(encoding="utf8").splitlines():
                    if line.endswith("}"):
                        record = json.loads(line)
                        seen[record["chain"]] = max(seen.get(record["chain"], 0), record["iteration"])
        assert processes_of(folder)  # the cluster the driver started
        os.kill(driver.pid, signal.SIGINT)
        assert driver.wait(timeout=90) == 130, (tmp_path / "stderr").read_text()
        assert "--resume" in (tmp_path / "stderr").read_text()
        stopped_at = [read_checkpoint_file(out / "checkpoints" / f"chain-{c}.npz", "checkpoint")[1]["iteration"]
                      for c in range(2)]
        assert all(3 <= i < 150 for i in stopped_at), stopped_at
        deadline = time.monotonic() + 30
        while processes_of(folder) and time.monotonic() < deadline:  # ray.shutdown stops them
            time.sleep(0.5)
        assert not processes_of(folder)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
        stop_processes(processes_of(folder))
        shutil.rmtree(folder, ignore_errors=True)
    runner = CliRunner()
    resumed = runner.invoke(app, [*args, "--output", str(out), "--resume"])  # on the local backend
    assert resumed.exit_code == 0, resumed.output
    whole = runner.invoke(app, [*args, "--output", str(tmp_path / "whole")])
    assert whole.exit_code == 0, whole.output
    assert (out / "segmentation.txt").read_text() == (tmp_path / "whole" / "segmentation.txt").read_text()

    def trace(path):
        return without_time(json.loads(line) for line in path.read_text(encoding="utf8").splitlines())

    assert trace(out / "trace.jsonl") == trace(tmp_path / "whole" / "trace.jsonl")


#: A driver of its own for the two-raylet cluster (a process that was the driver of another
#: cluster keeps that one's settings): trains, then prints what the test compares.
TWO_NODE_DRIVER = """
import hashlib, json, sys
from spacy_ag.model import AdaptorGrammar
from spacy_ag.runs.ray_chains import watch_chains
from spacy_ag.serialize import state_arrays
address, options, grammar, texts = json.loads(sys.stdin.read())
events = []
with watch_chains(events.append):
    model = AdaptorGrammar(grammar).fit(texts, backend="ray", ray_address=address, **options)
arrays = state_arrays(model.state)
print(json.dumps({"nodes": sorted({e["node"] for e in events if e["event"] == "started"}),
                  "state": {k: hashlib.sha256(v.tobytes()).hexdigest() for k, v in sorted(arrays.items())},
                  "trace": model.trace, "segmentation": model.training_segmentation()}))
"""


def test_chains_on_two_raylets_equal_local_ones(texts, reference, two_raylets):
    got = run_driver(TWO_NODE_DRIVER, [two_raylets, OPTIONS, UNIGRAM, texts])
    assert len(got["nodes"]) == 2  # one CPU per raylet: one chain on each
    state = {k: hashlib.sha256(v.tobytes()).hexdigest() for k, v in sorted(state_arrays(reference.state).items())}
    assert got["state"] == state
    assert without_time(got["trace"]) == without_time(reference.trace)
    assert got["segmentation"] == reference.training_segmentation()
