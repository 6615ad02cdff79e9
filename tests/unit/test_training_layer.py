"""The training layer, the model archive, the settings and the error table."""
from __future__ import annotations

import json
import os
import subprocess
import sys

import numpy as np
import pytest
import spacy
from typer.testing import CliRunner

from spacy_ag import AdaptorGrammar, TopicModel
from spacy_ag.archive import read_archive
from spacy_ag.cli import app
from spacy_ag.errors import ConfigError, Errors, ModelFileError, SpacyAgError
from spacy_ag.settings import ParserSettings, SamplerSettings, SegmenterSettings, SettingError, check, defaults
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_raw
from conftest import UNIGRAM, assert_one_error_line


ENGINE = """\
[paths]
train = null
output = null

[grammar]
path = "unigram.lt"

[corpus]
path = ${paths.train}

[training]
iterations = 6
sample_every = 2
checkpoint_every = 2
"""

TOPICS = """\
[paths]
train = null
output = null

[corpus]
path = ${paths.train}
heldout_fraction = 0.2

[topics]
n_topics = 3
passes = 2
inference = "online"
word_adapted = false

[online]
batch_size = 10

[training]
seed = 4
checkpoint_every = 3
"""


@pytest.fixture
def runner():
    return CliRunner()


def run(runner, *args):
    return runner.invoke(app, [str(a) for a in args])


@pytest.fixture
def engine(tmp_path):
    utterances = generate_corpus(make_lexicon(6, alphabet="abcdefg", min_len=2, max_len=4, seed=1), 30, seed=2)
    write_raw(tmp_path / "raw.txt", utterances)
    (tmp_path / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    (tmp_path / "e.cfg").write_text(ENGINE, encoding="utf8")
    return tmp_path


# ---------------------------------------------------------------- resume fingerprint


def test_resume_with_another_setting_is_refused_and_neutral_settings_may_change(runner, engine):
    out = engine / "out"
    args = ["--paths.train", engine / "raw.txt"]
    assert run(runner, "train", engine / "e.cfg", "-o", out, *args).exit_code == 0
    assert (out / "checkpoints" / "run.json").exists()
    for override, name in ((["--training.seed", "5"], "training.seed"),
                           (["--training.iterations", "8"], "training.iterations"),
                           (["--sampler.mh", "false"], "sampler.mh"),
                           (["--grammar.default_b", "50"], "grammar.default_b")):
        line = assert_one_error_line(run(runner, "train", engine / "e.cfg", "-o", out, *args, *override, "--resume"),
                                     name, "--resume")
        assert "[E035]" in line
    # the corpus is part of the run
    other = engine / "other.txt"
    other.write_text("abab\nbaba\n", encoding="utf8")
    assert_one_error_line(run(runner, "train", engine / "e.cfg", "-o", out, "--paths.train", other, "--resume"),
                          "corpus (sha256)")
    # workers and the checkpoint interval do not change the result
    result = run(runner, "train", engine / "e.cfg", "-o", out, *args, "--training.workers", "1",
                 "--training.checkpoint_every", "3", "--resume")
    assert result.exit_code == 0, result.output


def test_pipeline_configs_do_not_take_resume(runner, tmp_path):
    config = tmp_path / "p.cfg"
    config.write_text('[nlp]\nlang = "xx"\npipeline = []\n', encoding="utf8")
    assert "[E038]" in assert_one_error_line(run(runner, "train", config, "-o", tmp_path / "o", "--resume"),
                                             "spacy train")


# ---------------------------------------------------------------- topic configs: checkpoints and resume


def _docs(n=60, seed=0):
    rng = np.random.default_rng(seed)
    themes = [["tax", "budget", "vote", "law"], ["goal", "match", "team", "cup"], ["rain", "sun", "wind", "snow"]]
    return [" ".join(rng.choice(themes[i % 3], size=8)) for i in range(n)]


def test_topic_config_interrupted_and_resumed_equals_an_uninterrupted_run(runner, tmp_path, monkeypatch):
    (tmp_path / "docs.txt").write_text("\n".join(_docs()) + "\n", encoding="utf8")
    config = tmp_path / "t.cfg"
    config.write_text(TOPICS, encoding="utf8")
    args = ["--paths.train", tmp_path / "docs.txt"]
    fresh = tmp_path / "fresh"
    assert run(runner, "train", config, "-o", fresh, *args).exit_code == 0
    expected = TopicModel.load(fresh / "model").to_bytes()

    real_step = TopicModel.step

    def interrupted(self, batch, **kwargs):
        if self.learner.minibatches == 7:  # 5 minibatches a pass: in the second pass
            raise KeyboardInterrupt
        return real_step(self, batch, **kwargs)

    monkeypatch.setattr(TopicModel, "step", interrupted)
    stopped = tmp_path / "stopped"
    result = run(runner, "train", config, "-o", stopped, *args)
    assert result.exit_code == 130 and "--resume" in result.stderr, result.output
    assert not (stopped / "model").exists()
    monkeypatch.setattr(TopicModel, "step", real_step)
    resumed = run(runner, "train", config, "-o", stopped, *args, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert "resuming after minibatch 7" in resumed.stdout
    assert TopicModel.load(stopped / "model").to_bytes() == expected
    assert "topics.n_topics" in assert_one_error_line(
        run(runner, "train", config, "-o", stopped, *args, "--topics.n_topics", "4", "--resume"), "n_topics")


# ---------------------------------------------------------------- the archive


@pytest.fixture(scope="module")
def model():
    texts = ["".join(u) for u in generate_corpus(make_lexicon(6, seed=3), 30, seed=4)]
    return AdaptorGrammar(UNIGRAM).fit(texts, iterations=3)


def test_archive_round_trip_is_byte_stable_and_atomic(model, tmp_path):
    model.save(tmp_path / "m")
    assert sorted(p.name for p in (tmp_path / "m").iterdir()) == ["arrays.npz", "grammar.lt", "header.json"]
    header = json.loads((tmp_path / "m" / "header.json").read_text())
    assert header["kind"] == "model" and header["format_version"] == 2 and len(header["grammar_sha256"]) == 64
    assert header["arrays"]["tab_count"]["dtype"] in ("<i8", "<i4")
    again = AdaptorGrammar.load(tmp_path / "m")
    assert again.to_bytes() == model.to_bytes() == AdaptorGrammar.from_bytes(model.to_bytes()).to_bytes()
    model.save(tmp_path / "m")  # replacing an archive leaves no temporary directory behind
    assert [p.name for p in tmp_path.iterdir()] == ["m"]


@pytest.mark.parametrize("umask,mode", [(0o022, 0o644), (0o077, 0o600)])
def test_archive_files_follow_the_umask(model, tmp_path, umask, mode):
    old = os.umask(umask)
    try:
        model.save(tmp_path / "m")
    finally:
        os.umask(old)
    for p in (tmp_path / "m").iterdir():
        assert p.stat().st_mode & 0o777 == mode, p


def test_damaged_archives_are_one_model_file_error(model, tmp_path):
    def fresh():
        path = tmp_path / "m"
        model.save(path)
        return path

    path = fresh()
    grammar = path / "grammar.lt"
    grammar.write_text(grammar.read_text().replace("Word", "Wort"))
    with pytest.raises(ModelFileError, match=r"\[E063\].*grammar does not match"):
        AdaptorGrammar.load(path)
    path = fresh()
    header = json.loads((path / "header.json").read_text())
    header["arrays"]["tab_count"]["shape"] = [3]
    (path / "header.json").write_text(json.dumps(header))
    with pytest.raises(ModelFileError, match=r"\[E064\].*tab_count"):
        AdaptorGrammar.load(path)
    path = fresh()
    (path / "header.json").write_text("{not json")
    with pytest.raises(ModelFileError, match=r"\[E061\]"):
        AdaptorGrammar.load(path)
    path = fresh()
    (path / "arrays.npz").write_bytes(os.urandom(300))
    with pytest.raises(ModelFileError) as err:
        AdaptorGrammar.load(path)
    assert "allow_pickle" not in str(err.value)
    with pytest.raises(ModelFileError, match="topic_model"):
        TopicModel.load(fresh())


def test_format_1_models_are_converted_on_load(model, tmp_path):
    from spacy_ag.archive import npz_bytes

    archive = read_archive(_saved(model, tmp_path / "new"), "model")
    old = tmp_path / "old"
    old.mkdir()
    (old / "grammar.lt").write_text(archive.grammar_text, encoding="utf8")
    meta = {k: v for k, v in archive.header.items() if k not in ("arrays", "grammar_sha256")}
    meta.update(kind="model", format_version=1)
    header = np.frombuffer(json.dumps(meta).encode("utf8"), dtype=np.uint8)  # format 1: inside the npz
    (old / "state.npz").write_bytes(npz_bytes({**archive.arrays, "__meta__": header}))
    with pytest.warns(UserWarning, match="format 1"):
        loaded = AdaptorGrammar.load(old)
    assert loaded.to_bytes() == model.to_bytes()


def _saved(model, path):
    model.save(path)
    return path


# ---------------------------------------------------------------- settings and errors


def test_settings_are_checked_with_one_line_listing_the_keys():
    with pytest.raises(SettingError, match=r"x.iterationz is not a setting; \[x\] takes .*iterations"):
        check(ParserSettings, {"iterationz": 3}, "x")
    with pytest.raises(SettingError, match=r"x.sampler.temperature is not a setting; .*anneal_start"):
        check(SegmenterSettings, {"sampler": {"temperature": 2}}, "x")
    with pytest.raises(SettingError, match=r"anneal_start must be a number >= 1"):
        check(SamplerSettings, {"anneal_start": 0.5}, "sampler")
    assert check(ParserSettings, {"iterations": 7}, "x").iterations == 7
    # one default each: the components and the engine share DEFAULT_A and DEFAULT_B
    from spacy_ag.settings import DEFAULT_A, DEFAULT_B, GrammarSettings

    for cls in (GrammarSettings, SegmenterSettings, ParserSettings):
        assert (defaults(cls)["default_a"], defaults(cls)["default_b"]) == (DEFAULT_A, DEFAULT_B)


def test_components_refuse_unknown_settings_with_the_valid_keys():
    from spacy_ag.components import Segmenter

    with pytest.raises(SettingError, match=r"nlp.tokenizer.iterationz is not a setting.*boundary_chars"):
        Segmenter(spacy.blank("xx").vocab, iterationz=3)
    nlp = spacy.blank("xx")
    with pytest.raises(Exception, match="iterationz"):
        nlp.add_pipe("ag_parser", config={"iterationz": 3})


def test_error_codes_come_from_one_table():
    assert Errors.E001.startswith("[E001] ")
    err = ConfigError(Errors.E001.format(path="x.cfg"))
    assert isinstance(err, ValueError) and isinstance(err, SpacyAgError) and err.code == "E001"
    assert SpacyAgError("no code").coded_line() == "[E000] no code"


def test_cli_prints_the_code(runner, tmp_path):
    line = assert_one_error_line(run(runner, "train", tmp_path / "missing.cfg"), "missing.cfg")
    assert "[E526] config file not found" in line
    bad = tmp_path / "bad.cfg"
    bad.write_text("[grammar]\npath = \"g.lt\"\n[sampler]\nanneal_start = 0.5\n", encoding="utf8")
    assert "[E004]" in assert_one_error_line(run(runner, "train", bad, "-o", tmp_path / "o"), "anneal_start")


def test_help_and_import_load_no_numba():
    code = ("import sys; import spacy_ag; from spacy_ag.cli import app; "
            "assert 'numba' not in sys.modules and 'confection' not in sys.modules, sorted(sys.modules); "
            "from spacy_ag import settings, config, errors, archive; assert 'numba' not in sys.modules")
    subprocess.run([sys.executable, "-c", code], check=True, timeout=120)
    train_help = subprocess.run([sys.executable, "-m", "spacy_ag", "train", "--help"], capture_output=True,
                                text=True, timeout=120).stdout
    assert "[grammar], [corpus], [sampler], [training]" in train_help  # rich markup must not eat [sections]


def test_bad_corpora_name_the_file_and_the_line(runner, engine, tmp_path):
    from spacy_ag.train.starter_config import init_config_text

    config = tmp_path / "p.cfg"
    config.write_text(init_config_text(phonemes=True, iterations=2), encoding="utf8")
    cases = {'{"text": "abab"}\n{"text": 5}\n': ("[E048]", ":2:", "int"),
             '{"text": "abab"}\n\n{"txt": "ab"}\n': ("[E047]", ":3:", '"text"'),
             '{"text": "abab"}\n[1, 2\n': ("[E046]", ":2:", "JSON object"),
             '"just a string"\n': ("[E046]", ":1:", "str")}
    for i, (text, fragments) in enumerate(cases.items()):
        corpus = tmp_path / f"c{i}.jsonl"
        corpus.write_text(text, encoding="utf8")
        assert_one_error_line(run(runner, "train", config, "-o", tmp_path / "o", "--paths.train", corpus),
                              corpus.name, *fragments)
    assert_one_error_line(run(runner, "train", config, "-o", tmp_path / "o", "--paths.train", tmp_path),
                          "[E045]", "is a directory")
    assert_one_error_line(run(runner, "train", engine / "e.cfg", "-o", tmp_path / "o", "--paths.train", tmp_path),
                          "[E045]", "is a directory")
