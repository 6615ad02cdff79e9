"""Processes that cannot hang or leak: signals to a training run, its output lock, leftovers of killed writes.

The runs are real ``python -m spacy_ag train`` processes, each in a session of
its own (``start_new_session``): every worker it forks is in the session whose
id is the run's pid, and /proc tells which of them are still alive. Output goes
to files, not pipes (a pipe nobody reads could block a child by itself). Every
wait has a timeout, so a hang fails the test instead of blocking the test run;
whatever a failed test leaves running is killed by its process group.
"""
from __future__ import annotations

import json
import os
import shlex
import signal
import subprocess
import sys
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spacy_ag.archive import read_checkpoint_file
from spacy_ag.cli import app
from spacy_ag.errors import TrainingLayerError
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_raw
from spacy_ag.train.lock import output_lock
from conftest import UNIGRAM, engine_config

pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc; forks workers")

STARTUP_TIMEOUT = 300  # seconds until the first iterations (numba may compile the kernels first)
STOP_TIMEOUT = 60  # seconds for a signalled run to end: the workers stop within an iteration
RUN_TIMEOUT = 300  # seconds for a whole (resumed) run
GRACE = 10  # seconds for the processes of an ended run to disappear


@pytest.fixture(scope="module")
def engine(tmp_path_factory):
    """A corpus of 400 utterances and an engine config: 200 iterations of about 20-60 ms per chain."""
    folder = tmp_path_factory.mktemp("signals")
    lexicon = make_lexicon(12, alphabet="abcdefgh", min_len=2, max_len=4, seed=1)
    write_raw(folder / "raw.txt", generate_corpus(lexicon, 400, mean_words=3, seed=2))
    (folder / "grammars").mkdir()
    (folder / "grammars" / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    (folder / "e.cfg").write_text(engine_config(iterations=200, checkpoint_every=1000), encoding="utf8")
    return folder


def train_args(engine: Path, out: Path, chains: int):
    return ["train", str(engine / "e.cfg"), "--output", str(out), "--paths.train", str(engine / "raw.txt"),
            "--training.chains", str(chains), "--training.workers", str(chains)]


def command(args):
    return [sys.executable, "-m", "spacy_ag", *args]


def environment():
    env = dict(os.environ)
    env.pop("SPACY_AG_DEBUG", None)
    return env


class Run:
    """A training run in a session of its own, its stdout and stderr in files."""

    def __init__(self, args, folder: Path, name: str):
        self.stdout, self.stderr = folder / f"{name}.out", folder / f"{name}.err"
        with open(self.stdout, "w") as out, open(self.stderr, "w") as err:
            self.process = subprocess.Popen(command(args), stdout=out, stderr=err, stdin=subprocess.DEVNULL,
                                            cwd=folder, env=environment(), start_new_session=True)
        self.pid = self.process.pid

    def err(self) -> str:
        return self.stderr.read_text(encoding="utf8")

    def wait(self, timeout: float) -> int:
        try:
            return self.process.wait(timeout=timeout)
        except subprocess.TimeoutExpired:
            pytest.fail(f"the run did not end within {timeout} s: {self.err()[-2000:]}")

    def kill_leftovers(self) -> None:
        """After the test: whatever is still running in the run's process group (nothing, if all went well)."""
        try:
            os.killpg(self.pid, signal.SIGKILL)
        except (ProcessLookupError, PermissionError):
            pass
        if self.process.poll() is None:
            self.process.wait(timeout=10)


def session(sid: int):
    """(pid, parent pid) of the live processes of session `sid` (zombies are dead)."""
    out = []
    for entry in os.listdir("/proc"):
        if not entry.isdigit():
            continue
        try:
            stat = Path(f"/proc/{entry}/stat").read_text()
        except OSError:
            continue
        fields = stat[stat.rindex(")") + 2:].split()  # state, ppid, pgrp, session, ...
        if int(fields[3]) == sid and fields[0] not in "ZX":
            out.append((int(entry), int(fields[1])))
    return out


def assert_nothing_survives(sid: int) -> None:
    deadline = time.monotonic() + GRACE
    while session(sid) and time.monotonic() < deadline:
        time.sleep(0.05)
    assert session(sid) == [], "processes of the run survived it"


def trace_progress(out: Path):
    """chain -> last iteration in OUTPUT/trace.jsonl."""
    seen = {}
    path = out / "trace.jsonl"
    if path.exists():
        for line in path.read_text(encoding="utf8").splitlines():
            try:
                t = json.loads(line)
            except ValueError:  # a line being written
                continue
            seen[t.get("chain", 0)] = t["iteration"]
    return seen


def wait_for_progress(run: Run, out: Path, chains: int, at_least: int = 2):
    deadline = time.monotonic() + STARTUP_TIMEOUT
    while time.monotonic() < deadline:
        if run.process.poll() is not None:
            pytest.fail(f"the run ended (exit code {run.process.returncode}) before it was signalled: "
                        f"{run.err()[-2000:]}")
        seen = trace_progress(out)
        if len(seen) == chains and min(seen.values()) >= at_least:
            return seen
        time.sleep(0.05)
    pytest.fail(f"no progress in {STARTUP_TIMEOUT} s: {run.err()[-2000:]}")


def workers_of(run: Run):
    return sorted(pid for pid, parent in session(run.pid) if parent == run.pid)


def stop_line(run: Run, out: Path, signum: int) -> str:
    """The run's one-line stop message, checked; returns the resume command it gives."""
    err = run.err()
    assert "Traceback" not in err, err
    lines = [line for line in err.splitlines() if "interrupted" in line]
    assert len(lines) == 1, err
    line = lines[0]
    assert line == err.strip().splitlines()[-1]
    expected = "⚠ interrupted (" if signum == signal.SIGINT else "⚠ interrupted by SIGTERM ("
    assert line.startswith(expected), line
    assert f"checkpoints are in {out / 'checkpoints'}" in line, line
    assert "; continue with: spacy-ag train " in line and line.endswith(" --resume"), line
    return line.split("; continue with: ", 1)[1]


def same_result(a: Path, b: Path) -> None:
    def trace(folder):
        return [{k: v for k, v in json.loads(line).items() if k not in ("seconds", "peak_rss_mb")}
                for line in (folder / "trace.jsonl").read_text(encoding="utf8").splitlines()]

    assert (a / "segmentation.txt").read_bytes() == (b / "segmentation.txt").read_bytes()
    assert trace(a) == trace(b)
    assert (a / "model" / "arrays.npz").read_bytes() == (b / "model" / "arrays.npz").read_bytes()


def resume(hint: str, engine: Path, out: Path) -> None:
    """Run the resume command of the stop message; it finishes the run."""
    args = shlex.split(hint)
    assert args[0] == "spacy-ag" and args[-1] == "--resume"
    run = Run(args[1:], engine, out.name + "-resume")
    try:
        assert run.wait(RUN_TIMEOUT) == 0, run.err()[-2000:]
        assert_nothing_survives(run.pid)
    finally:
        run.kill_leftovers()
    assert (out / "model").is_dir() and (out / "segmentation.txt").exists()


@pytest.fixture(scope="module")
def reference(engine):
    """The uninterrupted 2-chain run that every resumed run must equal."""
    out = engine / "reference"
    result = subprocess.run(command(train_args(engine, out, 2)), stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            cwd=engine, env=environment(), timeout=RUN_TIMEOUT, text=True)
    assert result.returncode == 0, result.stderr[-2000:]
    return out


@pytest.mark.parametrize("signum,chains", [(signal.SIGINT, 2), (signal.SIGTERM, 2), (signal.SIGTERM, 1)],
                         ids=["SIGINT-2-chains", "SIGTERM-2-chains", "SIGTERM-1-chain"])
def test_a_signal_to_the_parent_alone_stops_every_chain_with_checkpoints(engine, reference, signum, chains):
    out = engine / f"out-{signal.Signals(signum).name}-{chains}"
    run = Run(train_args(engine, out, chains), engine, out.name)
    try:
        wait_for_progress(run, out, chains)
        if chains > 1:  # really parallel: two worker processes, both under way
            assert len(workers_of(run)) == 2, session(run.pid)
        os.kill(run.pid, signum)  # the parent only, not its process group
        assert run.wait(STOP_TIMEOUT) == 128 + signum, run.err()[-2000:]
        assert_nothing_survives(run.pid)
    finally:
        run.kill_leftovers()
    hint = stop_line(run, out, signum)
    checkpoints = out / "checkpoints"
    names = sorted(p.name for p in checkpoints.iterdir())
    assert names == [f"chain-{c}.npz" for c in range(chains)] + ["run.json"]  # and no temporary file
    for c in range(chains):  # written at the stop (checkpoint_every is larger than the run)
        _, meta = read_checkpoint_file(checkpoints / f"chain-{c}.npz", "checkpoint")
        assert 2 <= meta["iteration"] < 200
        assert f"chain {c} at iteration {meta['iteration']}" in run.err()
    assert not (out / "model").exists()
    if chains > 1:
        resume(hint, engine, out)
        same_result(out, reference)


def test_parallel_workers_of_a_killed_parent_stop_with_checkpoints(engine, reference):
    out = engine / "out-SIGKILL"
    run = Run(train_args(engine, out, 2), engine, out.name)
    try:
        wait_for_progress(run, out, 2)
        assert len(workers_of(run)) == 2, session(run.pid)
        os.kill(run.pid, signal.SIGKILL)
        run.wait(STOP_TIMEOUT)
        assert_nothing_survives(run.pid)  # the orphans stopped at their next iteration boundary
    finally:
        run.kill_leftovers()
    assert sorted(p.name for p in (out / "checkpoints").iterdir()) == ["chain-0.npz", "chain-1.npz", "run.json"]
    hint = shlex.join(train_args(engine, out, 2)[1:])
    resume(f"spacy-ag train {hint} --resume", engine, out)
    same_result(out, reference)


def test_a_second_run_on_the_same_output_is_refused(engine):
    out = engine / "out-locked"
    # long enough to be still running when the second run has started (a few seconds of imports)
    first = Run(train_args(engine, out, 1) + ["--training.iterations", "100000"], engine, out.name)
    try:
        wait_for_progress(first, out, 1)
        config = (out / "config.cfg").read_bytes()
        second = subprocess.run(command(train_args(engine, out, 1)), stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                cwd=engine, env=environment(), timeout=RUN_TIMEOUT, text=True)
        assert second.returncode == 1, second.stderr
        err = second.stderr.strip().splitlines()
        assert len(err) == 1, second.stderr
        assert err[0].startswith("✘ [E041] ") and str(out) in err[0] and "another run" in err[0], err[0]
        assert f"(pid {first.pid})" in err[0], err[0]
        assert first.process.poll() is None  # the first run goes on, its files untouched
        assert (out / "config.cfg").read_bytes() == config
        os.kill(first.pid, signal.SIGINT)
        assert first.wait(STOP_TIMEOUT) == 130, first.err()[-2000:]
        assert_nothing_survives(first.pid)
    finally:
        first.kill_leftovers()
    with output_lock(out):  # the lock went with the process
        pass


def test_output_lock_is_exclusive_and_released(tmp_path):
    out = tmp_path / "out"
    with output_lock(out):
        assert (out / ".lock").read_text().strip() == str(os.getpid())
        with pytest.raises(TrainingLayerError, match=r"\[E041\] output .*out is in use: another run holds its lock"):
            with output_lock(out):
                pass
    with output_lock(out):
        pass


def test_leftovers_of_killed_writes_are_removed_by_the_next_run(engine, tmp_path):
    out = tmp_path / "out"
    checkpoints = out / "checkpoints"
    checkpoints.mkdir(parents=True)
    (out / ".lock").write_bytes(b"")  # the killed run's, which it took first: its output, not a user's folder
    leftovers = [checkpoints / ".chain-0.npz.k2j4h_g6.tmp", out / ".trace.jsonl.abcd1234.tmp"]
    for path in leftovers:
        path.write_bytes(b"")  # what SIGKILL during a checkpoint write leaves
    for name in (".model.abcd1234.tmp", ".model.efgh5678.old"):  # and during a model write
        (out / name).mkdir()
        (out / name / "arrays.npz").write_bytes(b"x")
    kept = [out / "notes.tmp", out / ".chain-0.npz.tmp", checkpoints / ".chain-1.npz.abc.tmp",
            out / ".model.abcd1234.old"]  # not names the atomic writers make (.old files: only directories)
    for path in kept:
        path.write_bytes(b"keep")
    result = CliRunner().invoke(app, [*train_args(engine, out, 1)[:6], "--training.iterations", "3"])
    assert result.exit_code == 0, result.output
    assert not any(p.exists() for p in leftovers)
    assert not (out / ".model.abcd1234.tmp").exists() and not (out / ".model.efgh5678.old").exists()
    assert all(p.read_bytes() == b"keep" for p in kept)
    lines = [line for line in result.stdout.splitlines() if "temporary file" in line]
    assert lines == [f"ℹ Removed 4 temporary files left in {out} by an interrupted write: .model.abcd1234.tmp, "
                     ".model.efgh5678.old, .trace.jsonl.abcd1234.tmp, checkpoints/.chain-0.npz.k2j4h_g6.tmp"]


def test_sigterm_during_an_atomic_write_leaves_no_temporary_file(tmp_path):
    """SIGTERM's default action waits for the write: the target is whole, no .tmp sibling is left."""
    script = f"""
import os, signal
from spacy_ag.archive import write_atomic_file
real = os.fsync
def fsync(fd):  # SIGTERM arrives in the middle of the write
    os.kill(os.getpid(), signal.SIGTERM)
    real(fd)
os.fsync = fsync
write_atomic_file({str(tmp_path / "file.bin")!r}, b"x" * 100000)
print("not reached")
"""
    result = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, timeout=60,
                            env=environment())
    assert result.returncode == -signal.SIGTERM, result.stderr
    assert "not reached" not in result.stdout
    assert sorted(p.name for p in tmp_path.iterdir()) == ["file.bin"]
    assert (tmp_path / "file.bin").read_bytes() == b"x" * 100000


def test_parallel_chains_stopped_by_the_callback_resume_exactly(engine, tmp_path):
    """In-process parallel chains (2 workers): Ctrl-C in the callback stops both at an iteration boundary."""
    from spacy_ag.model import AdaptorGrammar
    from spacy_ag.serialize import state_arrays
    from spacy_ag.runs.signals import TrainingInterrupted

    texts = (engine / "raw.txt").read_text(encoding="utf8").split()[:120]
    options = dict(iterations=12, chains=2, workers=2, seed=3, sample_every=2, checkpoint_every=5)
    reference = AdaptorGrammar(UNIGRAM).fit(texts, **options)
    pids = set()

    def interrupt(line):
        pids.add(line["chain"])
        if line["chain"] == 0 and line["iteration"] == 8:
            raise KeyboardInterrupt

    with pytest.raises(TrainingInterrupted) as stop:
        AdaptorGrammar(UNIGRAM).fit(texts, checkpoint_dir=tmp_path, callback=interrupt, **options)
    assert stop.value.signum == signal.SIGINT and pids == {0, 1}
    assert [p for p, parent in session(os.getsid(0)) if parent == os.getpid()] == []  # every worker collected
    resumed = AdaptorGrammar(UNIGRAM).fit(texts, checkpoint_dir=tmp_path, resume=True, **options)
    assert [l["log_posterior"] for l in resumed.trace] == [l["log_posterior"] for l in reference.trace]
    a, b = state_arrays(resumed.state), state_arrays(reference.state)
    assert a.keys() == b.keys() and all((a[k] == b[k]).all() for k in a)
    assert resumed.training_segmentation() == reference.training_segmentation()


def test_an_error_in_one_worker_is_raised_and_stops_the_other(engine, tmp_path, monkeypatch):
    from spacy_ag.runs import mcmc_chain as chain
    from spacy_ag.model import AdaptorGrammar

    step = chain.Chain.step

    def failing(self):  # in the forked worker of chain 1 (seeded seed + 1)
        line = step(self)
        if self.seed == 1 and self.iteration == 3:
            raise ValueError("chain 1 failed")
        return line

    monkeypatch.setattr(chain.Chain, "step", failing)
    texts = (engine / "raw.txt").read_text(encoding="utf8").split()[:120]
    started = time.monotonic()
    with pytest.raises(ValueError, match="chain 1 failed") as err:
        AdaptorGrammar(UNIGRAM).fit(texts, iterations=500, chains=2, workers=2, seed=0, checkpoint_dir=tmp_path)
    assert "chain 1 failed" in str(err.value.__cause__)  # the worker's traceback
    assert time.monotonic() - started < 60  # chain 0 stopped rather than ran its 500 iterations
    assert [p for p, parent in session(os.getsid(0)) if parent == os.getpid()] == []
    assert (tmp_path / "chain-0.npz").exists()  # chain 0 stopped with its checkpoint
