"""Checkpoints are archives (spacy_ag/archive.py): the members of a model in one file, read within the
sizes their header declares; a checkpoint of format 1 is refused in one line (E560)."""
from __future__ import annotations

import io
import json
import zipfile

import numpy as np
import pytest
from typer.testing import CliRunner

from spacy_ag import archive
from spacy_ag.archive import (checkpoint_bytes, npz_bytes, read_checkpoint_bytes, read_checkpoint_file,
                              write_checkpoint_file, zip_bytes)
from spacy_ag.cli import app
from spacy_ag.errors import ModelFileError
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_raw

from conftest import UNIGRAM, assert_one_error_line, engine_config

ARRAYS = {"counts": np.arange(12, dtype=np.int64).reshape(3, 4), "weights": np.linspace(0, 1, 5)}
META = {"iteration": 7, "trace": [{"iteration": 7, "log_posterior": -1.5}], "run": {"training.seed": 3}}


def members(data: bytes) -> dict:
    with zipfile.ZipFile(io.BytesIO(data)) as zf:
        return {name: zf.read(name) for name in zf.namelist()}


def format_1_checkpoint(arrays, meta) -> bytes:
    """What spacy-ag wrote before checkpoints were archives: an .npz with its header as `__meta__`."""
    meta = {"kind": "checkpoint", "format_version": 1, "spacy_ag_version": "0.9.0", **meta}
    return npz_bytes({**arrays, "__meta__": np.frombuffer(json.dumps(meta).encode("utf8"), dtype=np.uint8)})


def test_a_checkpoint_is_an_archive_and_round_trips(tmp_path):
    path = tmp_path / "chain-0.npz"
    write_checkpoint_file(path, "checkpoint", ARRAYS, META)
    data = path.read_bytes()
    assert data == checkpoint_bytes("checkpoint", ARRAYS, META)  # byte-stable
    found = members(data)
    assert sorted(found) == [archive.ARRAYS, archive.GRAMMAR, archive.HEADER]
    assert found[archive.GRAMMAR] == b""
    header = json.loads(found[archive.HEADER])
    assert header["kind"] == "checkpoint" and header["format_version"] == archive.FORMAT_VERSION
    assert header["arrays"] == {"counts": {"shape": [3, 4], "dtype": "<i8"}, "weights": {"shape": [5], "dtype": "<f8"}}
    for arrays, meta in (read_checkpoint_file(path, "checkpoint"), read_checkpoint_bytes(data, "chain 0", "checkpoint")):
        assert sorted(arrays) == sorted(ARRAYS)
        for name, array in ARRAYS.items():
            assert arrays[name].dtype == array.dtype and np.array_equal(arrays[name], array)
        assert {k: meta[k] for k in META} == META


def test_a_format_1_checkpoint_is_refused_in_one_coded_line(tmp_path):
    path = tmp_path / "online.npz"
    path.write_bytes(format_1_checkpoint(ARRAYS, META))
    with pytest.raises(ModelFileError, match=r"^\[E560\] --resume: .*online\.npz is a checkpoint written by an "
                                             r"older spacy-ag \(format 1\).*train without --resume") as err:
        read_checkpoint_file(path, "checkpoint")
    assert "\n" not in str(err.value)
    with pytest.raises(ModelFileError, match=r"\[E560\] --resume: chain 1 "):
        read_checkpoint_bytes(path.read_bytes(), "chain 1", "checkpoint")


def test_checkpoints_are_checked_like_models(tmp_path):
    data = checkpoint_bytes("checkpoint", ARRAYS, META)
    with pytest.raises(ModelFileError, match=r"\[E062\].*'checkpoint'.*'topic_gibbs_checkpoint'"):
        read_checkpoint_bytes(data, "gibbs.npz", "topic_gibbs_checkpoint")
    with pytest.raises(ModelFileError, match=r"\[E076\]"):
        read_checkpoint_file(tmp_path / "gone.npz", "checkpoint")
    with pytest.raises(ModelFileError, match=r"\[E061\]"):
        read_checkpoint_bytes(b"not a zip", "chain 0", "checkpoint")
    # a header that declares less than an array holds: refused, before arrays.npz is read when it is
    # larger than every declared array could make it, else at the array's .npy header
    for size, error in ((100_000, "E192"), (5, "E064")):
        found = members(checkpoint_bytes("checkpoint", {"weights": np.zeros(size)}, META))
        header = json.loads(found[archive.HEADER])
        header["arrays"]["weights"]["shape"] = [1]
        found[archive.HEADER] = json.dumps(header).encode("utf8")
        with pytest.raises(ModelFileError, match=rf"\[{error}\] chain 0.*arrays\.npz"):
            read_checkpoint_bytes(zip_bytes(found), "chain 0", "checkpoint")


def test_resume_from_a_format_1_checkpoint_is_one_line(tmp_path):
    lexicon = make_lexicon(6, alphabet="abcdefg", min_len=2, max_len=4, seed=1)
    write_raw(tmp_path / "raw.txt", generate_corpus(lexicon, 20, seed=2))
    (tmp_path / "grammars").mkdir()
    (tmp_path / "grammars" / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    (tmp_path / "mcmc.cfg").write_text(engine_config(iterations=2, checkpoint_every=2), encoding="utf8")
    out = tmp_path / "out"
    args = ["train", str(tmp_path / "mcmc.cfg"), "--output", str(out), "--paths.train", str(tmp_path / "raw.txt")]
    result = CliRunner().invoke(app, args)
    assert result.exit_code == 0, result.output
    checkpoint = out / "checkpoints" / "chain-0.npz"
    arrays, meta = read_checkpoint_file(checkpoint, "checkpoint")
    assert meta["iteration"] == 2 and sorted(meta["arrays"]) == sorted(arrays)
    checkpoint.write_bytes(format_1_checkpoint(arrays, {k: v for k, v in meta.items() if k in (
        "iteration", "chain", "fingerprint", "run", "trace", "marginals", "sampler", "training")}))
    assert_one_error_line(CliRunner().invoke(app, args + ["--resume"]), "[E560]", str(checkpoint),
                          "train without --resume")
