"""A full disk on every write path: one coded line naming the file (E202), no partial file left behind.

The disk is made full by `os.fsync` failing with ENOSPC (as it does when delayed allocation or a
network file system finds no room) or, in a child process, by a file size limit (RLIMIT_FSIZE, `ulimit
-f`: Python ignores SIGXFSZ, so the write itself fails with EFBIG) and by /dev/full for stdout.
"""
from __future__ import annotations

import errno
import os
import resource
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spacy_ag import AdaptorGrammar
from spacy_ag.archive import remove_leftovers, replace_directory
from spacy_ag.cli import app
from spacy_ag.errors import OutputWriteError, coded
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_raw
from spacy_ag.train.progress import TraceLog
from conftest import UNIGRAM, assert_one_error_line, engine_config

def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def full_after(monkeypatch, good_fsyncs: int) -> None:
    """`os.fsync` succeeds `good_fsyncs` times, then fails as on a full disk."""
    real, left = os.fsync, [good_fsyncs]

    def fsync(fd):
        if left[0] <= 0:
            raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))
        left[0] -= 1
        return real(fd)

    monkeypatch.setattr(os, "fsync", fsync)


def leftovers(folder: Path):
    """Temporary and part files anywhere under `folder`."""
    return [str(p) for p in folder.rglob("*") if p.name.endswith((".tmp", ".part", ".old"))]


@pytest.fixture(scope="module")
def model_dir(tmp_path_factory):
    root = tmp_path_factory.mktemp("model")
    texts = ["".join(u) for u in generate_corpus(make_lexicon(6, alphabet="abcdefg", seed=1), 40, seed=2)]
    AdaptorGrammar(UNIGRAM).fit(texts, iterations=2).save(root / "m")
    (root / "in").mkdir()
    (root / "in" / "a.txt").write_text("\n".join(texts * 20) + "\n", encoding="utf8")
    return root


@pytest.fixture
def engine(tmp_path):
    write_raw(tmp_path / "raw.txt", generate_corpus(make_lexicon(6, alphabet="abcdefg", seed=1), 30, seed=2))
    (tmp_path / "grammars").mkdir()
    (tmp_path / "grammars" / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    (tmp_path / "e.cfg").write_text(engine_config(iterations=4, checkpoint_every=2), encoding="utf8")
    return tmp_path


def test_oserror_text_is_not_taken_for_a_code():
    assert coded("E901", "[Errno 28] No space left on device") == "[E901] [Errno 28] No space left on device"
    assert coded("E901", "[E202] x") == "[E202] x"


@pytest.mark.parametrize("good_fsyncs, file", [(0, "config.cfg"), (3, "checkpoints/chain-0.npz")])
def test_train_on_a_full_disk_names_the_file_once(engine, monkeypatch, good_fsyncs, file):
    """config.cfg, checkpoints/run.json, the first checkpoint are the first three fsyncs of a run."""
    out = engine / "out"
    full_after(monkeypatch, good_fsyncs)
    result = run("train", engine / "e.cfg", "-o", out, "--paths.train", engine / "raw.txt")
    assert result.exit_code == 1 and "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("✘")]  # after the progress lines
    assert len(errors) == 1 and errors[0].startswith(f"✘ [E202] {out / file}: cannot write: No space left on "
                                                     "device (ENOSPC); free space"), result.stderr
    assert leftovers(out) == []


def test_saving_a_model_on_a_full_disk_keeps_the_old_one(model_dir, tmp_path, monkeypatch):
    target = tmp_path / "model"
    model = AdaptorGrammar.load(model_dir / "m")
    model.save(target)
    saved = {p.name: p.read_bytes() for p in target.iterdir()}
    full_after(monkeypatch, 1)
    with pytest.raises(OutputWriteError) as caught:
        model.save(target)
    assert str(caught.value).startswith(f"[E202] {target / 'grammar.lt'}: cannot write")  # after header.json
    assert {p.name: p.read_bytes() for p in target.iterdir()} == saved
    assert os.listdir(tmp_path) == ["model"]


def test_segment_output_file_on_a_full_disk_leaves_no_part_file(model_dir, tmp_path, monkeypatch):
    full_after(monkeypatch, 0)
    target = tmp_path / "seg.txt"
    assert_one_error_line(run("segment", model_dir / "m", model_dir / "in" / "a.txt", "-o", target),
                          f"[E202] {target}: cannot write")
    assert os.listdir(tmp_path) == []


def test_trace_on_a_full_disk_names_trace_jsonl(tmp_path):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    log = TraceLog(tmp_path / "trace.jsonl", 2, 1)
    with pytest.raises(OutputWriteError, match=r"^\[E202\] .*trace\.jsonl: cannot write: No space left"):
        with log:
            log.stream.close()
            log.stream = open("/dev/full", "w", encoding="utf8")
            log({"iteration": 1, "log_posterior": -1.0})


def _limited_child(args, limit: int, **kwargs):
    """The CLI in a child whose files may not grow past `limit` bytes (``ulimit -f``)."""
    def limit_files():
        resource.setrlimit(resource.RLIMIT_FSIZE, (limit, limit))

    return subprocess.run([sys.executable, "-m", "spacy_ag", *map(str, args)], capture_output=True,
                          preexec_fn=limit_files, env={**os.environ, "SPACY_AG_COMPILE_PROGRESS": "0"}, **kwargs)


def test_segment_directory_past_the_file_size_limit_keeps_no_part_shard(model_dir, tmp_path):
    """The write fails (EFBIG), and so does closing the part file; it must still go."""
    out = tmp_path / "out"
    child = _limited_child(["segment", model_dir / "m", model_dir / "in", "--output", out], 4096)
    errors = [line for line in child.stderr.decode().splitlines() if line.startswith("✘")]
    assert child.returncode == 1 and "Traceback" not in child.stderr.decode()
    expected = f"✘ [E202] {out / 'a.txt'}: cannot write: File too large (EFBIG: past the file size limit"
    assert len(errors) == 1 and errors[0].startswith(expected), child.stderr.decode()
    assert sorted(p.name for p in out.iterdir()) == [".spacy-ag-shards.json"]


def test_stdout_on_a_full_disk_is_one_line(model_dir):
    if not os.path.exists("/dev/full"):
        pytest.skip("no /dev/full")
    with open("/dev/full", "w") as full:
        child = subprocess.run([sys.executable, "-m", "spacy_ag", "segment", str(model_dir / "m"),
                                str(model_dir / "in" / "a.txt")], stdout=full, stderr=subprocess.PIPE)
    assert child.returncode == 1
    assert child.stderr.decode().strip().splitlines() == [child.stderr.decode().strip()]
    assert child.stderr.decode().startswith("✘ [E202] stdout: cannot write: No space left on device (ENOSPC)")


def test_replacing_a_linked_directory_leaves_no_old_link(tmp_path):
    target = tmp_path / "theirs"
    target.mkdir()
    (target / "f").write_text("kept", encoding="utf8")
    (tmp_path / "model").symlink_to(target)
    replace_directory(tmp_path / "model", lambda tmp: (tmp / "new").write_text("new", encoding="utf8"))
    assert sorted(os.listdir(tmp_path)) == ["model", "theirs"]
    assert (tmp_path / "model" / "new").read_text(encoding="utf8") == "new"
    assert (target / "f").read_text(encoding="utf8") == "kept"
    # one left by a process killed between the two renames: removed, what it points to kept
    (tmp_path / ".model.abcd1234.old").symlink_to(target)
    assert remove_leftovers(tmp_path) == [".model.abcd1234.old"]
    assert sorted(os.listdir(tmp_path)) == ["model", "theirs"] and (target / "f").exists()
