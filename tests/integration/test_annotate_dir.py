"""Directory mode of `spacy-ag segment`, `parse` and `tag-topics`: one shard per input file, resumable, here
or on Ray.

A tiny unigram model trained on made-up words serves the module (and a
two-topic model for tag-topics); the corpus is a few made-up files (one in a
subfolder, one empty, one hidden). What must hold: a directory run writes, per file, exactly what the single-file
command prints, whatever the backend and the number of workers; a rerun
skips complete shards and rewrites stale temporary files; bad input is one
coded line naming file and line; Ctrl-C stops the driver and its workers
and keeps complete shards. The Ray tests skip when ray is not installed.
"""
from __future__ import annotations

import json
import os
import random
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spacy_ag.annotation import LocalWorkers, Segment, annotate_shards, plan_shards
from spacy_ag.annotation.shards import MANIFEST
from spacy_ag.cli import app
from spacy_ag.model import AdaptorGrammar
from spacy_ag.synthetic import generate_corpus, make_lexicon
from conftest import NO_RAY, UNIGRAM, processes_of, stop_processes

#: The input files and how many lines each has ("" marks the empty file).
FILES = {"a.txt": 40, "b.txt": 25, "empty.txt": 0, "sub/c.txt": 31}


def run(*args, **kwargs):
    return CliRunner().invoke(app, [str(a) for a in args], **kwargs)


def one_error_line(result, *fragments):
    """A failed directory run: exit code 1, one `✘` line naming every fragment (after progress lines, which are
    indented), no traceback."""
    assert result.exit_code == 1, (result.exit_code, result.output)
    err = [line for line in result.stderr.splitlines() if line.strip() and not line.startswith("  ")]
    assert len(err) == 1 and err[0].startswith("✘ "), result.stderr
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in err[0], (fragment, err[0])
    return err[0]


def made_up_lines(n: int, seed: int):
    lexicon = make_lexicon(8, alphabet="abcdefg", min_len=2, max_len=4, seed=1)
    return ["".join(words) for words in generate_corpus(lexicon, n, mean_words=3, seed=seed)]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    folder = tmp_path_factory.mktemp("model")
    AdaptorGrammar(UNIGRAM).fit(made_up_lines(80, seed=2), iterations=10, seed=1).save(folder / "model")
    return folder / "model"


def write_corpus(root: Path, files=FILES, seed: int = 10) -> Path:
    for i, (name, n) in enumerate(files.items()):
        lines = made_up_lines(n, seed + i) if n else []
        if n > 5:
            lines[2] = ""  # a blank line stays a blank line
            lines[4] = lines[4] + "zz"  # symbols the model does not know: `(no parse)` and a warning
        (root / name).parent.mkdir(parents=True, exist_ok=True)
        (root / name).write_text("".join(line + "\n" for line in lines), encoding="utf8")
    (root / ".hidden").write_text("not read\n", encoding="utf8")
    return root


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    return write_corpus(tmp_path_factory.mktemp("corpus"))


def single_file_outputs(command, model_dir, corpus, *options):
    """What the single-file command prints for every input file: the reference of every directory run."""
    outputs = {}
    for name in FILES:
        result = run(command, model_dir, corpus / name, *options)
        assert result.exit_code == 0, result.output
        outputs[name] = result.stdout
    return outputs


@pytest.fixture(scope="module")
def expected(model_dir, corpus):
    return {"segment": single_file_outputs("segment", model_dir, corpus, "--batch-size", "7"),
            "parse": single_file_outputs("parse", model_dir, corpus)}


@pytest.fixture(scope="module")
def topics(tmp_path_factory):
    """A two-topic model of documents over two made-up vocabularies, and a directory of new documents."""
    from spacy_ag.topics import TopicModel

    folder = tmp_path_factory.mktemp("topics")
    vocabularies = [make_lexicon(10, alphabet=letters, min_len=2, max_len=4, seed=seed)
                    for seed, letters in enumerate(("abcde", "fghij"))]
    rng = random.Random(0)

    def documents(n):
        return [[rng.choice(vocabularies[i % 2]) for _ in range(8)] for i in range(n)]

    TopicModel(n_topics=2).fit(documents(60), passes=1, seed=0).save(folder / "model")
    for name in ("a.txt", "sub/b.txt"):
        (folder / "in" / name).parent.mkdir(parents=True, exist_ok=True)
        lines = [" ".join(doc) for doc in documents(30)]
        lines[3] = ""
        (folder / "in" / name).write_text("".join(line + "\n" for line in lines), encoding="utf8")
    expected = {}
    for name in ("a.txt", "sub/b.txt"):
        result = run("tag-topics", folder / "model", folder / "in" / name)
        assert result.exit_code == 0, result.output
        expected[name] = result.stdout
    return folder / "model", folder / "in", expected


def shards_of(out: Path):
    """Every file under `out`, hidden ones too, by relative path; but the record of what made them
    (`MANIFEST`, tests/integration/test_output_safety.py)."""
    return {str(p.relative_to(out)): p.read_text(encoding="utf8") for p in sorted(out.rglob("*"))
            if p.is_file() and p.relative_to(out) != Path(MANIFEST)}


def test_a_directory_run_writes_what_the_single_file_command_prints(model_dir, corpus, expected, tmp_path):
    result = run("segment", model_dir, corpus, "--output", tmp_path / "seg", "--batch-size", "7")
    assert result.exit_code == 0, result.output
    assert shards_of(tmp_path / "seg") == expected["segment"]  # no .hidden, no temporary file left
    assert "4/4 files" in result.stderr and "(100%)" in result.stderr
    assert "Segmentation of 4 files (96 lines)" in result.stderr

    result = run("parse", model_dir, corpus, "--output", tmp_path / "trees")
    assert result.exit_code == 0, result.output
    assert shards_of(tmp_path / "trees") == expected["parse"]
    for name in ("a.txt", "b.txt", "sub/c.txt"):  # each warning names the file and the line
        assert f"{corpus / name}:5: no parse" in result.stderr
    assert "(3 warnings)" in result.stderr


def test_topic_tags_of_a_directory_equal_those_of_each_file(topics, tmp_path):
    model, corpus, expected = topics
    lines = expected["a.txt"].split("\n")
    assert lines[3] == "" and all(line.split("\t")[0] in "01" and len(line.split("\t")[1].split()) == 2
                                  for line in lines[:3])
    result = run("tag-topics", model, corpus, "--output", tmp_path / "tags", "--batch-size", "7")
    assert result.exit_code == 0, result.output
    assert shards_of(tmp_path / "tags") == expected


def test_batches_and_their_order_do_not_change_the_shards(model_dir, corpus, tmp_path):
    model = AdaptorGrammar.load(model_dir)
    shards = {}
    for size in (1, 7, 1000):
        pending, complete = plan_shards(corpus, tmp_path / str(size))
        assert not complete and [s.source.relative_to(corpus).as_posix() for s in pending] == list(FILES)
        task = Segment(batch_size=size)
        events = []
        counts = annotate_shards(task, LocalWorkers(task, model), pending, events.append)
        assert counts == {"files": 4, "lines": 96, "warnings": 0}
        # the bytes of the progress add up to the size of every file
        assert sum(e["bytes"] for e in events) == sum(s.size for s in pending)
        assert {e["pid"] for e in events if e["event"] == "batch"} == {os.getpid()}
        shards[size] = shards_of(tmp_path / str(size))
    assert shards[1] == shards[7] == shards[1000]


def test_a_rerun_skips_complete_shards_and_rewrites_stale_ones(model_dir, corpus, expected, tmp_path):
    out = tmp_path / "out"
    assert run("segment", model_dir, corpus, "--output", out).exit_code == 0  # records what makes the shards
    for name in expected["segment"]:  # a run stopped after its first shard
        if name != "a.txt":
            (out / name).unlink()
    (out / "sub" / ".c.txt.part").write_text("half of a shard\n", encoding="utf8")  # stale: written again
    before = (out / "a.txt").stat().st_mtime_ns
    result = run("segment", model_dir, corpus, "--output", out, "--batch-size", "7")
    assert result.exit_code == 0, result.output
    assert "1 of 4 shards" in result.stderr and "Segmentation of 3 files" in result.stderr
    assert (out / "a.txt").stat().st_mtime_ns == before
    assert shards_of(out) == expected["segment"]
    again = run("segment", model_dir, corpus, "--output", out)
    assert again.exit_code == 0 and "Nothing to do" in again.stderr


def test_directory_errors_are_one_line(model_dir, corpus, tmp_path):
    assert "[E131]" in one_error_line(run("segment", model_dir, corpus), str(corpus), "--output")
    assert "[E132]" in one_error_line(run("segment", model_dir, corpus, "--output", corpus / "out"),
                                             "inside the input directory")
    assert "[E132]" in one_error_line(run("parse", model_dir, corpus, "--output", corpus), str(corpus))
    (tmp_path / "file").write_text("x\n", encoding="utf8")
    assert "[E133]" in one_error_line(run("segment", model_dir, corpus, "--output", tmp_path / "file"),
                                             "is a file")
    one_error_line(run("segment", model_dir, tmp_path / "missing", "--output", tmp_path / "o"), "missing")
    one_error_line(run("segment", model_dir, corpus, "--output", tmp_path / "o", "--backend", "dask"),
                          "--backend must be one of local, ray")


@pytest.mark.parametrize("bad, what", [(b"ab\xffcd", "byte 0xff"),
                                       (b"ab\xed\xa0\x80cd", "an encoded lone surrogate U+D800")])
def test_bad_bytes_are_one_line_naming_file_and_line_and_keep_the_shards_before(model_dir, tmp_path, bad, what):
    corpus = write_corpus(tmp_path / "in", {"a.txt": 6, "b.txt": 6})
    (corpus / "b.txt").write_bytes(b"abc\nabab\n" + bad + b"\n")
    out = tmp_path / "out"
    line = one_error_line(run("segment", model_dir, corpus, "--output", out), f"{corpus / 'b.txt'}:3", what)
    assert "[E111]" in line
    assert sorted(shards_of(out)) == ["a.txt"]  # complete, and nothing half-written


def test_ctrl_c_stops_a_local_directory_run_and_keeps_complete_shards(model_dir, tmp_path):
    corpus = write_corpus(tmp_path / "in", {f"f{i:03}.txt": 30 for i in range(300)})
    out = tmp_path / "out"
    stopped = interrupt_after_first_shard(["segment", model_dir, corpus, "--output", out, "--batch-size", "1"],
                                          out, tmp_path)
    assert stopped.returncode == 130, stopped.stderr
    assert stopped.stderr.strip().splitlines()[-1] == "✘ interrupted"
    assert_valid_shards(model_dir, corpus, out)


def interrupt_after_first_shard(args, out: Path, tmp_path: Path, env=None):
    """Run the command in a process of its own, SIGINT it once a shard is complete; its outcome."""
    with open(tmp_path / "stderr", "wb") as stderr:
        driver = subprocess.Popen([sys.executable, "-m", "spacy_ag", *map(str, args)], stdout=subprocess.DEVNULL,
                                  stderr=stderr, env={**os.environ, **(env or {})}, start_new_session=True)
    try:
        deadline = time.monotonic() + 180
        while not (out.is_dir() and any(p.suffix == ".txt" for p in out.iterdir())):
            assert driver.poll() is None and time.monotonic() < deadline, (tmp_path / "stderr").read_text()
            time.sleep(0.1)
        os.kill(driver.pid, signal.SIGINT)
        code = driver.wait(timeout=60)
    finally:
        if driver.poll() is None:
            driver.kill()
            driver.wait()
    return subprocess.CompletedProcess(args, code, None, (tmp_path / "stderr").read_text(encoding="utf8"))


def assert_valid_shards(model_dir, corpus: Path, out: Path):
    """Some but not all shards, each complete (what the single-file command prints), no temporary file."""
    written = shards_of(out)
    assert 0 < len(written) < len(list(corpus.glob("*.txt"))), sorted(written)
    assert all(name.endswith(".txt") and not name.startswith(".") for name in written)
    for name in sorted(written)[:3] + sorted(written)[-2:]:
        assert written[name] == run("segment", model_dir, corpus / name, "--batch-size", "1").stdout, name


# ---------------------------------------------------------------- on a Ray cluster


def test_ray_shards_equal_local_ones_and_run_on_two_workers(cluster, model_dir, corpus, expected, tmp_path):
    from spacy_ag.annotation.on_ray import RayWorkers

    model = AdaptorGrammar.load(model_dir)
    task = Segment(batch_size=7)
    pending, _ = plan_shards(corpus, tmp_path / "seg")
    workers = RayWorkers(task, model, workers=2)
    events = []
    try:
        pids = {pid for _, pid in workers.where()}
        counts = annotate_shards(task, workers, pending, events.append)
    finally:
        workers.close()
    if sys.platform.startswith("linux"):
        assert not wait_until_gone(pids)  # closing the run stops its actors
    assert counts == {"files": 4, "lines": 96, "warnings": 0}
    assert shards_of(tmp_path / "seg") == expected["segment"]
    # the batches ran in the two actors, at the same time
    batches = [e for e in events if e["event"] == "batch"]
    assert {e["pid"] for e in batches} == pids and len(pids) == 2 and os.getpid() not in pids
    spans = [(min(e["started"] for e in batches if e["pid"] == pid), max(e["ended"] for e in batches
                                                                         if e["pid"] == pid)) for pid in pids]
    assert max(start for start, _ in spans) < min(end for _, end in spans)

    result = run("parse", model_dir, corpus, "--output", tmp_path / "trees", "--backend", "ray", "--workers", "2")
    assert result.exit_code == 0, result.output
    assert shards_of(tmp_path / "trees") == expected["parse"]
    assert f"{corpus / 'sub/c.txt'}:5: no parse" in result.stderr and "(3 warnings)" in result.stderr
    result = run("segment", model_dir, corpus, "--output", tmp_path / "one", "--backend", "ray", "--workers", "1",
                 "--batch-size", "7")
    assert result.exit_code == 0, result.output
    assert shards_of(tmp_path / "one") == expected["segment"]


def test_a_killed_ray_worker_is_restarted_and_its_batches_sent_again(cluster, model_dir, corpus, expected,
                                                                      tmp_path):
    from spacy_ag.annotation.on_ray import RayWorkers

    task = Segment(batch_size=7)
    pending, _ = plan_shards(corpus, tmp_path / "seg")
    workers = RayWorkers(task, AdaptorGrammar.load(model_dir), workers=2)
    killed, pids = [], []

    def kill_one(event):
        if event["event"] == "batch":
            pids.append(event["pid"])
            if not killed:
                os.kill(event["pid"], signal.SIGKILL)
                killed.append(event["pid"])

    try:
        counts = annotate_shards(task, workers, pending, kill_one)
    finally:
        workers.close()
    assert killed and len(set(pids)) == 3  # the killed actor, the one started in its place, the other
    assert counts["lines"] == 96 and shards_of(tmp_path / "seg") == expected["segment"]


def test_ray_topic_tags_equal_local_ones(cluster, topics, tmp_path):
    model, corpus, expected = topics
    result = run("tag-topics", model, corpus, "--output", tmp_path / "tags", "--backend", "ray", "--workers", "2",
                 "--batch-size", "4")
    assert result.exit_code == 0, result.output
    assert shards_of(tmp_path / "tags") == expected


def test_bad_input_on_ray_is_one_line(cluster, model_dir, tmp_path):
    corpus = write_corpus(tmp_path / "in", {"a.txt": 6})
    (corpus / "a.txt").write_bytes(b"abab\n\xff\n")
    result = run("segment", model_dir, corpus, "--output", tmp_path / "out", "--backend", "ray")
    assert "[E111]" in one_error_line(result, f"{corpus / 'a.txt'}:2")
    assert not shards_of(tmp_path / "out")


def wait_until_gone(pids, seconds: float = 30) -> set:
    """The processes of `pids` still running after at most `seconds`."""
    deadline = time.monotonic() + seconds
    while True:
        alive = {pid for pid in pids if os.path.exists(f"/proc/{pid}")}
        if not alive or time.monotonic() > deadline:
            return alive
        time.sleep(0.2)


def test_ctrl_c_stops_a_ray_directory_run_its_workers_and_its_cluster(model_dir, tmp_path):
    """A real `spacy-ag segment` process that starts its own cluster; SIGINT to it alone, mid-run."""
    pytest.importorskip("ray", reason=NO_RAY)
    if not sys.platform.startswith("linux"):
        pytest.skip("finds the cluster's processes in /proc")
    folder = tempfile.mkdtemp(prefix="sag-ray-", dir="/tmp")  # the cluster's: its processes name it
    corpus = write_corpus(tmp_path / "in", {f"f{i:03}.txt": 30 for i in range(300)})
    out = tmp_path / "out"
    try:
        stopped = interrupt_after_first_shard(
            ["segment", model_dir, corpus, "--output", out, "--batch-size", "1", "--backend", "ray", "--workers",
             "2"], out, tmp_path, env={"RAY_TMPDIR": folder, "RAY_ADDRESS": ""})
        assert stopped.returncode == 130, stopped.stderr
        assert stopped.stderr.strip().splitlines()[-1] == "✘ interrupted"
        deadline = time.monotonic() + 30
        while processes_of(folder) and time.monotonic() < deadline:  # ray.shutdown stops them
            time.sleep(0.5)
        assert not processes_of(folder)
    finally:
        stop_processes(processes_of(folder))
        shutil.rmtree(folder, ignore_errors=True)
    assert_valid_shards(model_dir, corpus, out)
    resumed = run("segment", model_dir, corpus, "--output", out, "--batch-size", "1")
    assert resumed.exit_code == 0, resumed.output
    assert len(shards_of(out)) == 300


#: A driver of its own for the two-raylet cluster: segments a directory, prints the actors' nodes.
TWO_NODE_DRIVER = """
import json, sys
from pathlib import Path
from spacy_ag.annotation import Segment, annotate_shards, plan_shards
from spacy_ag.annotation.on_ray import RayWorkers
from spacy_ag.model import AdaptorGrammar
address, model, corpus, out = sys.argv[1:]
task = Segment(batch_size=7)
workers = RayWorkers(task, AdaptorGrammar.load(model), address)
try:
    where = workers.where()
    annotate_shards(task, workers, plan_shards(Path(corpus), Path(out))[0])
finally:
    workers.close()
print(json.dumps(sorted({node for node, _ in where})))
"""


def test_shards_written_on_two_raylets_equal_local_ones(model_dir, corpus, expected, two_raylets, tmp_path):
    done = subprocess.run([sys.executable, "-c", TWO_NODE_DRIVER, two_raylets, str(model_dir), str(corpus),
                           str(tmp_path / "lib")], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    assert len(json.loads(done.stdout.strip().splitlines()[-1])) == 2  # an actor of one CPU on each raylet
    assert shards_of(tmp_path / "lib") == expected["segment"]
    cli = subprocess.run([sys.executable, "-m", "spacy_ag", "parse", str(model_dir), str(corpus), "--output",
                          str(tmp_path / "trees"), "--backend", "ray", "--ray-address", two_raylets],
                         capture_output=True, text=True, timeout=300)
    assert cli.returncode == 0, cli.stderr
    assert shards_of(tmp_path / "trees") == expected["parse"]
