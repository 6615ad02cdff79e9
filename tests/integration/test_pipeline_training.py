"""`spacy-ag train` on spaCy pipeline configs, `spacy-ag init-config`, the fitting hook,
pipeline evaluation and the weasel project (project.yml).

Everything runs on tiny corpora generated with spacy_ag.synthetic and few
iterations; the project workflow test runs `spacy project run all` on a copy
of the project with a smaller generated corpus.
"""
from __future__ import annotations

import json
import shutil
import textwrap
from pathlib import Path

import pytest
import spacy
import srsly
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from typer.testing import CliRunner

from spacy_ag.cli import app
from spacy_ag.components.fitting import current_observer, observe_fitting
from spacy_ag.config import ConfigError, is_pipeline_config, load_pipeline_config
from spacy_ag.train.starter_config import init_config_text
from spacy_ag.train.pipeline import evaluate_pipeline, train_pipeline
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_gold
from conftest import assert_one_error_line

REPO = Path(__file__).resolve().parents[2]
ALPHABET = "abcdefghij"
SCORE_KEYS = ("token_p", "token_r", "token_f", "boundary_p", "boundary_r", "boundary_f",
              "lexicon_p", "lexicon_r", "lexicon_f")


def run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def data(tmp_path_factory):
    """A tiny corpus: raw JSONL, gold text and a gold DocBin."""
    root = tmp_path_factory.mktemp("data")
    lexicon = make_lexicon(12, alphabet=ALPHABET, min_len=2, max_len=4, seed=5)
    gold = generate_corpus(lexicon, 120, mean_words=3.0, seed=6)
    srsly.write_jsonl(root / "train.jsonl", ({"text": "".join(u)} for u in gold))
    write_gold(root / "dev.txt", gold)
    vocab = spacy.blank("xx").vocab
    db = DocBin()
    for words in gold:
        db.add(Doc(vocab, words=words, spaces=[False] * len(words)))
    db.to_disk(root / "dev.spacy")
    return {"root": root, "gold": gold, "train": root / "train.jsonl", "dev": root / "dev.txt",
            "dev_spacy": root / "dev.spacy"}


def _trace(path):
    return [json.loads(line) for line in Path(path).read_text().splitlines()]


# ---------------------------------------------------------------- init-config


def test_init_config_trains_as_is(data, tmp_path):
    config = tmp_path / "config.cfg"
    result = run("init-config", config, "--phonemes")
    assert result.exit_code == 0, result.output
    assert is_pipeline_config(config)
    out = tmp_path / "training"
    result = run("train", config, "--output", out, "--paths.train", data["train"])
    assert result.exit_code == 0, result.output
    model_dir = out / "model-last"
    assert (model_dir / "config.cfg").exists() and (model_dir / "tokenizer" / "model" / "arrays.npz").exists()
    trace = _trace(out / "trace.jsonl")
    assert len(trace) == 200 and {line["component"] for line in trace} == {"tokenizer"}
    assert [line["iteration"] for line in trace] == list(range(1, 201))
    assert not (out / "scores.json").exists()  # no dev data: not evaluated
    assert (out / "model-best" / "config.cfg").exists()  # spaCy's loop wrote both, as under `spacy train`
    nlp = spacy.load(model_dir)
    text = "".join(data["gold"][0])
    assert nlp(text).text == text and len(nlp(text)) >= 1
    assert nlp.meta["ag_training"]["fits"][0]["iterations"] == 200


@pytest.mark.parametrize("args,lang,boundary,grammar,units", [
    ([], "zh", None, "unigram", "alnum-runs"),
    (["--phonemes"], "xx", "", "unigram", "graphemes"),
    (["--lang", "xx", "--grammar", "colloc"], "xx", None, "colloc", "graphemes"),
    (["--lang", "zh", "--phonemes", "--grammar", "colloc"], "zh", "", "colloc", "graphemes"),
    (["--lang", "ja", "--grammar", "colloc3"], "ja", None, "colloc3", "alnum-runs"),
])
def test_init_config_options(tmp_path, args, lang, boundary, grammar, units):
    path = tmp_path / "c.cfg"
    result = run("init-config", path, *args, "--iterations", 7)
    assert result.exit_code == 0, result.output
    config = spacy.util.load_config(path, interpolate=True)
    assert config["nlp"]["lang"] == lang
    assert config["nlp"]["tokenizer"]["boundary_chars"] == boundary
    assert config["nlp"]["tokenizer"]["grammar"] == grammar
    assert config["nlp"]["tokenizer"]["units"] == units  # numbers and Latin words are units in zh, ja, th
    assert config["nlp"]["tokenizer"]["iterations"] == 7 and config["nlp"]["tokenizer"]["seed"] == 0
    # spaCy accepts it as it is: building the pipeline (unfitted) needs no filling
    nlp = spacy.util.load_model_from_config(spacy.util.load_config(path), auto_fill=False, validate=True)
    assert type(nlp.tokenizer).__name__ == "Segmenter" and nlp.lang == lang
    assert "ag_training" not in nlp.config


def test_init_config_stdout_and_errors(tmp_path):
    result = run("init-config", "-", "--grammar", "colloc")
    assert result.exit_code == 0 and '@tokenizers = "spacy-ag.Segmenter.v1"' in result.stdout
    assert 'grammar = "colloc"' in result.stdout
    assert_one_error_line(run("init-config", tmp_path / "c.cfg", "--grammar", "trigram"), "trigram")
    assert_one_error_line(run("init-config", tmp_path / "c.cfg", "--lang", "qq"), "qq")
    assert_one_error_line(run("init-config", tmp_path, "--phonemes"), "directory")
    grammar = tmp_path / "g.lt"
    grammar.write_text("1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n")
    assert run("init-config", tmp_path / "g.cfg", "--grammar", grammar).exit_code == 0


SHIPPED = {
    "pipeline-brent-unigram.cfg": dict(grammar="unigram", phonemes=True),
    "pipeline-brent-colloc.cfg": dict(grammar="colloc", phonemes=True),
    "pipeline-zh-unigram.cfg": dict(grammar="unigram", lang="zh"),
    "pipeline-zh-colloc.cfg": dict(grammar="colloc3", lang="zh"),
}


@pytest.mark.parametrize("name", sorted(SHIPPED))
def test_shipped_pipeline_configs_are_init_config_output(name):
    """configs/pipeline-*.cfg are written by init-config; they must not drift from it."""
    kwargs = SHIPPED[name]
    args = [name] + (["--lang", kwargs["lang"]] if "lang" in kwargs else []) + ["--grammar", kwargs["grammar"]]
    args += ["--phonemes"] if kwargs.get("phonemes") else []
    expected = init_config_text(name=name, args=" ".join(args), **kwargs)
    assert (REPO / "configs" / name).read_text(encoding="utf8") == expected
    nlp = spacy.util.load_model_from_config(spacy.util.load_config(REPO / "configs" / name), auto_fill=True)
    assert nlp.tokenizer.cfg["grammar"] == kwargs["grammar"]


# ---------------------------------------------------------------- train with dev data and a parser

PIPELINE_CONFIG = """\
[paths]
train = null
dev = null

[system]
seed = 0
gpu_allocator = null

[nlp]
lang = "xx"
pipeline = ["ag_parser"]

[nlp.tokenizer]
@tokenizers = "spacy-ag.Segmenter.v1"
grammar = "unigram"
iterations = 12
seed = 3
boundary_chars = ""

[nlp.tokenizer.sampler]
anneal_start = 2.0
anneal_iterations = 6

[components]

[components.ag_parser]
factory = "ag_parser"
grammar = "colloc"
iterations = 12
seed = 3
online_updates = false

[components.ag_parser.sampler]
anneal_start = 2.0
anneal_iterations = 6

[corpora]

[corpora.train]
@readers = "spacy.JsonlCorpus.v1"
path = ${paths.train}

[corpora.dev]
@readers = "spacy-ag.SegmentedCorpus.v1"
path = ${paths.dev}

[training]
seed = ${system.seed}
gpu_allocator = null
max_epochs = 1

[training.batcher]
@batchers = "spacy.batch_by_sequence.v1"
size = 1000000000
get_length = null

[training.score_weights]
token_f = 1.0
token_p = 0.0
token_r = 0.0
boundary_p = 0.0
boundary_r = 0.0
boundary_f = 0.0
lexicon_p = 0.0
lexicon_r = 0.0
lexicon_f = 0.0
"""


@pytest.fixture(scope="module")
def trained(data, tmp_path_factory):
    root = tmp_path_factory.mktemp("pipeline")
    config = root / "config.cfg"
    config.write_text(PIPELINE_CONFIG)
    out = root / "out"
    result = train_pipeline(config, out, {"paths.train": str(data["train"]), "paths.dev": str(data["dev"])},
                            interactive=False)
    return result


def test_pipeline_output(trained, data):
    out = trained.output
    assert trained.model_dir == out / "model-last"
    for key in SCORE_KEYS:
        assert 0.0 <= trained.scores[key] <= 1.0
    assert trained.scores["token_f"] > 0.5
    assert json.loads((out / "scores.json").read_text())["token_f"] == pytest.approx(trained.scores["token_f"])
    nlp = spacy.load(trained.model_dir)
    performance = nlp.meta["performance"]
    assert set(SCORE_KEYS) <= set(performance)
    assert performance["token_f"] == pytest.approx(trained.scores["token_f"])
    assert nlp.pipe_names == ["ag_parser"]
    fits = nlp.meta["ag_training"]["fits"]
    assert [f["component"] for f in fits] == ["tokenizer", "ag_parser"]
    assert all((f["iterations"], f["chains"], f["seed"]) == (12, 1, 3) for f in fits)
    # the components' own settings were used, and the saved config says so
    assert nlp.config["nlp"]["tokenizer"]["iterations"] == 12
    assert nlp.config["components"]["ag_parser"]["iterations"] == 12
    assert nlp.config["nlp"]["tokenizer"]["sampler"]["anneal_start"] == 2.0
    # the reloaded pipeline segments and parses as the trained one
    texts = ["".join(u) for u in data["gold"][:8]] + ["abc xyz"]
    assert [[t.text for t in d] for d in nlp.pipe(texts)] == [[t.text for t in d] for d in trained.nlp.pipe(texts)]
    assert [d._.ag_tree for d in nlp.pipe(texts)] == [d._.ag_tree for d in trained.nlp.pipe(texts)]


def test_pipeline_trace(trained):
    trace = _trace(trained.output / "trace.jsonl")
    assert [line["component"] for line in trace] == ["tokenizer"] * 12 + ["ag_parser"] * 12
    assert [line["iteration"] for line in trace] == list(range(1, 13)) * 2
    # the components' [sampler] settings reached the sampler: annealing from temperature 2 over 6 iterations
    assert trace[0]["temperature"] == pytest.approx(2.0) and trace[8]["temperature"] == 1.0
    assert all("log_posterior" in line and "tables" in line for line in trace)


def test_spacy_evaluate_and_spacy_ag_evaluate(trained, data, tmp_path):
    from spacy.cli.evaluate import evaluate

    scores = evaluate(str(trained.model_dir), data["dev_spacy"], output=tmp_path / "m.json", silent=True)
    assert scores["token_f"] == pytest.approx(trained.scores["token_f"])
    saved = srsly.read_json(tmp_path / "m.json")
    assert saved["token_acc"] == pytest.approx(scores["token_acc"])
    # spacy-ag evaluate on a pipeline: DocBin or segmented text give the same scores
    for gold in (data["dev_spacy"], data["dev"]):
        result = run("evaluate", trained.model_dir, gold, "--json", tmp_path / "s.json", "--no-punct")
        assert result.exit_code == 0, result.output
        assert "boundary" in result.stdout and "lexicon" in result.stdout
        ours = srsly.read_json(tmp_path / "s.json")
        for key in SCORE_KEYS:
            assert ours[key] == pytest.approx(trained.scores[key]), key
        assert ours["without_punctuation"]["token_f"] == pytest.approx(trained.scores["token_f"])
    assert evaluate_pipeline(trained.model_dir, data["dev"])["n_examples"] == len(data["gold"])
    assert_one_error_line(run("evaluate", trained.model_dir, tmp_path / "missing.txt"), "missing.txt")


def test_interactive_progress_bar(data, tmp_path, capsys):
    config = tmp_path / "c.cfg"
    config.write_text(init_config_text(phonemes=True, iterations=3))
    result = train_pipeline(config, tmp_path / "out", {"paths.train": str(data["train"])}, interactive=True)
    assert result.scores is None and len(_trace(tmp_path / "out" / "trace.jsonl")) == 3
    assert "tokenizer" in capsys.readouterr().err


def test_code_option_and_empty_dev_corpus(data, tmp_path):
    """--code imports registered functions; a config whose dev corpus is empty trains without evaluation;
    a config that lacks sections spaCy needs gets one line saying how to fill it."""
    code = tmp_path / "reader.py"
    code.write_text(textwrap.dedent("""
        import spacy
        from spacy.training import Example

        @spacy.registry.readers("test.plain_lines.v1")
        def plain_lines(path):
            def read(nlp):
                for line in open(path, encoding="utf8"):
                    if line.strip():
                        yield Example(nlp.make_doc(line.strip()), nlp.make_doc(line.strip()))
            return read
    """))
    raw = tmp_path / "raw.txt"
    raw.write_text("".join("".join(u) + "\n" for u in data["gold"]))
    config = tmp_path / "c.cfg"
    text = init_config_text(phonemes=True, iterations=4)
    reader = ('[corpora.train]\n@readers = "spacy-ag.TextCorpus.v1"\npath = ${paths.train}\nformat = "auto"\n'
              'min_length = 0\nmax_length = 0\nlimit = 0\n')
    assert reader in text
    config.write_text(text.replace(reader, '[corpora.train]\n@readers = "test.plain_lines.v1"\npath = null\n'))
    result = run("train", config, "--output", tmp_path / "out", "--code", code, "--corpora.train.path", raw)
    assert result.exit_code == 0, result.output
    assert len(_trace(tmp_path / "out" / "trace.jsonl")) == 4
    assert "not evaluated" in result.stdout
    assert spacy.load(tmp_path / "out" / "model-last").tokenizer.is_fitted
    partial = tmp_path / "partial.cfg"
    partial.write_text('[nlp]\nlang = "xx"\npipeline = []\n[nlp.tokenizer]\n@tokenizers = "spacy-ag.Segmenter.v1"\n'
                       '[corpora]\n[corpora.train]\n@readers = "test.plain_lines.v1"\npath = null\n')
    assert_one_error_line(run("train", partial, "--output", tmp_path / "out2", "--code", code,
                              "--corpora.train.path", raw), "fill-config")


# ---------------------------------------------------------------- errors


def test_pipeline_config_errors(data, tmp_path):
    config = tmp_path / "c.cfg"
    config.write_text(init_config_text(phonemes=True, iterations=2))
    out = tmp_path / "out"
    assert_one_error_line(run("train", config, "--output", out), "paths.train")
    assert_one_error_line(run("train", config, "--output", out, "--paths.train", tmp_path / "nope.jsonl"),
                          "nope.jsonl")
    assert_one_error_line(run("train", config, "--paths.train", data["train"]), "--output")
    assert_one_error_line(run("train", config, "--output", out, "--paths.train", data["train"], "--resume"),
                          "--resume")
    assert_one_error_line(run("train", config, "--output", out, "--paths.train", data["train"],
                              "--nlp.tokenizer.iterations", 0), "iterations", ">= 1")
    assert_one_error_line(run("train", config, "--output", out, "--paths.train", data["train"],
                              "--nlp.tokenizer.sweeps", 5), "tokenizer", "sweeps")
    assert_one_error_line(run("train", config, "--output", out, "--paths.train", data["train"],
                              "--nlp.tokenizer.sampler", '{"temperature": 5}'), "temperature")
    assert_one_error_line(run("train", config, "--output", out, "--paths.train", data["train"],
                              "--nlp.tokenizer.sampler", '{"anneal_start": 0.5}'), "anneal_start")
    assert_one_error_line(run("train", config, "--output", out, "--paths.train", data["train"],
                              "--ag_training.iterations", 5), "ag_training", "nlp.tokenizer")
    assert_one_error_line(run("train", config, "--output", out, "--paths.train", data["train"],
                              "--nosection.key", 1), "nosection")
    bad = tmp_path / "bad.cfg"
    bad.write_text(init_config_text(phonemes=True) + "\n[ag_training]\niterations = 5\n")
    assert_one_error_line(run("train", bad, "--output", out, "--paths.train", data["train"]), "ag_training")
    streamed = tmp_path / "streamed.cfg"
    streamed.write_text(init_config_text(phonemes=True).replace("max_epochs = 1", "max_epochs = -1"))
    assert_one_error_line(run("train", streamed, "--output", out, "--paths.train", data["train"]), "max_epochs")


def test_withdrawn_ag_training_section_is_refused(tmp_path):
    config = tmp_path / "c.cfg"
    config.write_text("[nlp]\nlang = \"xx\"\n[ag_training]\niterations = 5\n")
    with pytest.raises(ConfigError, match=r"\[E010\].*nlp.tokenizer"):
        load_pipeline_config(config)
    assert not is_pipeline_config(REPO / "configs" / "brent-unigram.cfg")
    assert is_pipeline_config(REPO / "configs" / "pipeline-brent-unigram.cfg")


# ---------------------------------------------------------------- the fitting hook


def test_observe_fitting_hook(data):
    texts = ["".join(u) for u in data["gold"][:40]]
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1",
                                                            "iterations": 50}}})
    lines = []
    with observe_fitting(lines.append) as observer:
        assert current_observer() is observer
        nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in texts])
    assert current_observer() is None
    assert len(lines) == 50 and all(line["component"] == "tokenizer" for line in lines)
    assert observer.fits[0]["iterations"] == 50 and observer.fits[0]["texts"] == 40
    # an observer only watches: the same fit as without one
    nlp2 = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1",
                                                             "iterations": 50}}})
    nlp2.initialize(lambda: [Example.from_dict(nlp2.make_doc(t), {}) for t in texts])
    assert nlp2.tokenizer.to_bytes() == nlp.tokenizer.to_bytes()
    with pytest.raises(TypeError):
        observe_fitting(42)


# ---------------------------------------------------------------- the weasel project


def test_docs_have_the_project_document(tmp_path):
    from weasel.cli.document import project_document

    project_document(REPO, tmp_path / "doc.md", no_emoji=False)
    generated = (tmp_path / "doc.md").read_text(encoding="utf8").strip()
    page = (REPO / "docs" / "spacy-project.md").read_text(encoding="utf8")
    assert generated in page, \
        "docs/spacy-project.md is out of date: run `spacy project document --output docs/spacy-project.md`"


def _project_copy(tmp_path):
    root = tmp_path / "project"
    root.mkdir()
    shutil.copy(REPO / "project.yml", root / "project.yml")
    shutil.copytree(REPO / "configs", root / "configs")
    shutil.copytree(REPO / "scripts", root / "scripts", ignore=shutil.ignore_patterns("__pycache__"))
    return root


@pytest.mark.slow
def test_project_workflow_segmentation_offline(tmp_path):
    """`spacy project run segmentation` on the default (generated) corpus, smaller and shorter (the
    morphology and topic workflows: tests/integration/test_project_workflows.py)."""
    from weasel.cli.run import project_run

    root = _project_copy(tmp_path)
    overrides = {"vars.synthetic_utterances": 300, "vars.iterations": 20, "vars.name": "ag_test"}
    project_run(root, "segmentation", overrides=overrides, capture=True)
    scores = srsly.read_json(root / "metrics" / "synthetic.json")
    assert scores["token_f"] > 0.5 and 0.0 <= scores["boundary_f"] <= 1.0 and "lexicon_f" in scores
    spacy_scores = srsly.read_json(root / "metrics" / "synthetic-spacy.json")
    assert spacy_scores["token_acc"] == pytest.approx(scores["token_acc"])
    assert (root / "training" / "synthetic" / "trace.jsonl").exists()
    assert list((root / "packages" / "xx_ag_test-0.1.0" / "dist").glob("*.tar.gz"))
    meta = srsly.read_json(root / "packages" / "xx_ag_test-0.1.0" / "meta.json")
    assert any(r.startswith("spacy-ag>=") for r in meta["requirements"])
