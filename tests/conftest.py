"""Fixtures and small helpers shared by the tests.

The core tests' hand-built grammars (tests/support/grammars.py) and the
independent re-implementation of the model they check the kernels against
(tests/support/oracle.py) are reached through the `core` fixture
(``core.toy_grammar()``, ``core.Reference(...)``), so no test module imports
another. Here: config texts for CLI runs, the one-coded-line check, and the
helpers that start and stop Ray clusters and other processes.
"""
from __future__ import annotations

import contextlib
import json
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
import types

# The first-compilation progress lines of spacy_ag.kernel_environment are for people at a terminal;
# in tests they would land between a command's expected lines and after pytest's summary.
# tests/unit/test_kernel_environment.py checks them with a listener of its own.
os.environ.setdefault("SPACY_AG_COMPILE_PROGRESS", "0")

import pytest


@pytest.fixture(scope="session")
def core():
    """The hand-built grammars and the oracle (tests/support), as one namespace."""
    from support import grammars, oracle

    names = {**vars(grammars), **vars(oracle)}
    return types.SimpleNamespace(**{k: v for k, v in names.items() if not k.startswith("__")})


#: The unigram grammar over the corpus's characters (Word adapted with the default a and b).
UNIGRAM = "1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n"


def engine_config(iterations: int, checkpoint_every: int) -> str:
    """An engine config over grammars/unigram.lt and ${paths.train}: batch initialisation, seed 0."""
    return f"""\
[paths]
train = null
gold = null
output = null

[grammar]
path = "grammars/unigram.lt"
default_a = 0.0001
default_b = 10000
segment_category = "Word"

[corpus]
path = ${{paths.train}}
gold = false

[sampler]
init = "batch"

[training]
iterations = {iterations}
seed = 0
sample_every = 2
checkpoint_every = {checkpoint_every}
"""


#: An online (or vb: `mode`) engine config over unigram.lt and the gold-segmented `train`, seed 3.
ONLINE_CONFIG = """\
[paths]
train = "{train}"

[grammar]
path = "unigram.lt"
default_a = 0.0
default_b = 100

[corpus]
path = ${{paths.train}}
gold = true

[inference]
mode = "{mode}"

[online]
batch_size = 10
tau = 16
kappa = 0.7
refine_every = 5
truncation = {{"Word": 40}}
passes = {passes}
update_b = false

[training]
seed = 3
checkpoint_every = 7
"""


def assert_one_error_line(result, *fragments):
    """A CLI failure: exit code 1, one `✘` line on stderr naming every fragment, no traceback."""
    assert result.exit_code == 1, (result.exit_code, result.output)
    err = result.stderr.strip().splitlines()
    assert len(err) == 1, result.stderr
    assert err[0].startswith("✘ "), err[0]
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in err[0], (fragment, err[0])
    return err[0]


# ---------------------------------------------------------------------------
# Ray clusters of the tests (tests/integration/test_ray_backend.py, tests/integration/test_annotate_dir.py)

NO_RAY = "Ray is not installed (pip install spacy-ag[ray]); the Ray backend is not tested"


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster of two CPUs for the module."""
    ray = pytest.importorskip("ray", reason=NO_RAY)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


def run_driver(script: str, task) -> dict:
    """Run `script` as a Ray driver process of its own (a process that was the driver of another
    cluster keeps that one's settings), `task` as JSON on its stdin; returns the JSON of its last line."""
    done = subprocess.run([sys.executable, "-c", script], input=json.dumps(task), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def record_numba_threads(monkeypatch, module, name: str) -> list:
    """Wrap `module.name` so that each call records numba's thread count then; returns the records
    (a test of a parallel path checks that it really ran on more than one thread)."""
    import numba

    seen = []
    real = getattr(module, name)

    def recording(*args):
        seen.append(numba.get_num_threads())
        return real(*args)

    monkeypatch.setattr(module, name, recording)
    return seen


def processes_of(folder: str):
    """The processes whose command line names `folder`, with their descendants (Ray's agents and workers)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":  # a zombie is gone already
            table[int(entry)] = (int(fields[1]), cmd)
    ours = {pid for pid, (_, cmd) in table.items() if folder in cmd}
    while True:
        children = {pid for pid, (parent, _) in table.items() if parent in ours} - ours
        if not children:
            return ours
        ours |= children


def stop_processes(pids, grace: float = 5.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(os.path.exists(f"/proc/{pid}") and
                                                  not _zombie(pid) for pid in pids):
            time.sleep(0.2)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True



@pytest.fixture
def two_raylets(monkeypatch):
    """A head of one CPU and a second raylet of one CPU joined to it: two nodes on this machine.

    Both keep their sockets and logs in a folder of their own, by which the
    teardown finds and stops exactly their processes (not `ray stop`, which
    stops every Ray process of the machine).
    """
    pytest.importorskip("ray", reason=NO_RAY)
    if not sys.platform.startswith("linux"):
        pytest.skip("finds the raylets' processes in /proc")
    ray_cli = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    if ray_cli is None:
        pytest.skip("the `ray` command is not on PATH; two raylets cannot be started")
    folder = tempfile.mkdtemp(prefix="sag-ray-", dir="/tmp")  # short: a socket path has at most 107 bytes
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # the driver and both raylets, without a shared token
    env = {**os.environ, "RAY_TMPDIR": folder}
    run = dict(env=env, capture_output=True, text=True, timeout=120)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    try:
        head = subprocess.run([ray_cli, "start", "--head", f"--port={port}", "--include-dashboard=false", *common],
                              **run)
        if head.returncode != 0:
            pytest.skip(f"`ray start --head` failed: {head.stderr.strip().splitlines()[-1:]}")
        second = subprocess.run([ray_cli, "start", f"--address=127.0.0.1:{port}", *common], **run)
        assert second.returncode == 0, second.stderr
        yield f"127.0.0.1:{port}"
    finally:
        stop_processes(processes_of(folder))
        assert not processes_of(folder)
        shutil.rmtree(folder, ignore_errors=True)
