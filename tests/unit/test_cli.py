"""The `spacy-ag` command line: every command on tiny generated data.

Corpora are generated in tmp_path with `spacy_ag.synthetic`, so the tests are
hermetic; the shipped Brent grammars are compared with the reference grammars
only when the shared design folder is next to the repository.
"""
from __future__ import annotations

import dataclasses
import json
import subprocess
import sys
from pathlib import Path

import pytest
from typer.testing import CliRunner

from spacy_ag import cli
from spacy_ag.train import progress
from spacy_ag.cli import app
from spacy_ag.config import SCHEMA, ConfigError, build_model, load_training_config, parse_overrides
from spacy_ag.grammar import Grammar, expand_corpus_class, read_grammar, validate
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_gold, write_raw
from conftest import assert_one_error_line, engine_config

REPO = Path(__file__).resolve().parents[2]
SHARED = REPO.parent / "shared"
REFERENCE_GRAMMARS = SHARED / "design" / "reference-grammars"
BRENT = SHARED / "data" / "brent" / "br-phono.txt"

UNIGRAM = """\
# unigram segmentation over the corpus characters
1 1 Sentence --> Word+
Word --> Char+
1 1 Char --> [:corpus:]
"""


@pytest.fixture()
def runner():
    return CliRunner()


def run(runner, *args, **kwargs):
    return runner.invoke(app, [str(a) for a in args], **kwargs)


@pytest.fixture()
def data(tmp_path):
    """A tiny corpus (40 utterances over 6 words), its grammar and a config."""
    lexicon = make_lexicon(6, alphabet="abcdefg", min_len=2, max_len=4, seed=1)
    utterances = generate_corpus(lexicon, 40, mean_words=2.5, seed=2)
    write_gold(tmp_path / "gold.txt", utterances)
    write_raw(tmp_path / "raw.txt", utterances)
    (tmp_path / "grammars").mkdir()
    (tmp_path / "grammars" / "unigram.lt").write_text(UNIGRAM, encoding="utf8")
    config = tmp_path / "tiny.cfg"
    config.write_text(engine_config(iterations=8, checkpoint_every=5), encoding="utf8")
    return {"dir": tmp_path, "config": config, "raw": tmp_path / "raw.txt", "gold": tmp_path / "gold.txt",
            "utterances": utterances}


# ---------------------------------------------------------------- check-grammar


def test_check_grammar_summary(runner, tmp_path):
    grammar = tmp_path / "g.lt"
    grammar.write_text("""\
# two adapted nonterminals, one with its own a and b
1 1 Sentence --> Colloc+
1 0.5 20 Colloc --> Word+
Word --> Char+
1 1 Char --> a
1 1 Char --> b
""", encoding="utf8")
    result = run(runner, "check-grammar", grammar, "--default-a", "0.0001", "--default-b", "10000")
    assert result.exit_code == 0, result.output
    out = result.stdout
    lines = {line.split()[0]: line for line in out.splitlines() if line.strip()}
    assert lines["Start"].split()[-1] == "Sentence"
    assert "7:" in lines["Nonterminals"]
    assert lines["Adapted"].split()[-1] == "2"
    adapted = {line.split()[0]: line.split()[1:] for line in out.splitlines() if "a=" in line}
    assert adapted == {"Colloc": ["a=0.5", "b=20"], "Word": ["a=0.0001", "b=10000"]}
    counts = {line.split()[0]: line.split()[1] for line in out.splitlines() if line.endswith("rules")
              or line.endswith("rule")}
    assert counts == {"Sentence": "1", "Colloc": "1", "Word": "1", "Char": "2", "Colloc+": "2", "Word+": "2",
                      "Char+": "2"}
    assert lines["Terminals"].split()[1] == "2"
    assert lines["Rules"].split()[-1] == "11"  # 5 rules + 3 dummies x 2
    assert "✔" in out


def test_check_grammar_corpus_coverage(runner, tmp_path):
    grammar = tmp_path / "g.lt"
    grammar.write_text("1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> a\n1 1 Char --> b\n",
                       encoding="utf8")
    corpus = tmp_path / "corpus.txt"
    corpus.write_text("ab ba\naab\nabc\n", encoding="utf8")
    line = assert_one_error_line(run(runner, "check-grammar", grammar, "--corpus", corpus), "'c'")
    assert f"{corpus}:3" in line
    corpus.write_text("ab ba\naab\n", encoding="utf8")
    ok = run(runner, "check-grammar", grammar, "--corpus", corpus)
    assert ok.exit_code == 0 and "covers" in ok.stdout


def test_check_grammar_errors_are_one_line(runner, tmp_path):
    bad = tmp_path / "bad.lt"
    bad.write_text("1 1 Sentence --> Word+\nWord Char+\n1 1 Char --> a\n", encoding="utf8")
    assert_one_error_line(run(runner, "check-grammar", bad), f"{bad}:2", "-->")
    recursive = tmp_path / "rec.lt"
    recursive.write_text("Sentence --> Sentence a\nSentence --> a\n", encoding="utf8")
    assert_one_error_line(run(runner, "check-grammar", recursive), str(recursive))
    assert_one_error_line(run(runner, "check-grammar", tmp_path / "missing.lt"), "missing.lt")
    assert_one_error_line(run(runner, "check-grammar", bad, "--mode", "words"), "--mode")


def test_check_grammar_expand(runner, tmp_path):
    grammar = tmp_path / "g.lt"
    grammar.write_text(UNIGRAM, encoding="utf8")
    corpus = tmp_path / "c.txt"
    corpus.write_text("abc\nca b\n", encoding="utf8")
    result = run(runner, "check-grammar", grammar, "--corpus", corpus, "--expand")
    assert result.exit_code == 0, result.output
    text = result.stdout
    assert "#" not in text and "[:corpus:]" not in text
    assert "1 1 Word+ --> Word Word+" in text
    assert sorted(line.split()[-1] for line in text.splitlines() if " Char --> " in line) == ["a", "b", "c"]
    again = read_grammar(text, default_a=0.5, default_b=7)  # every line states its numbers
    expected = expand_corpus_class(read_grammar(grammar), "abc")
    assert again.equivalent(expected)


def test_check_grammar_from_config(runner, data):
    """A training config as GRAMMAR: its grammar settings (default a/b) and corpus are used."""
    result = run(runner, "check-grammar", data["config"], "--corpus", data["raw"])
    assert result.exit_code == 0, result.output
    assert "a=0.0001  b=10000" in result.stdout and "covers" in result.stdout
    alphabet = sorted(set(data["raw"].read_text(encoding="utf8")) - {"\n"})
    assert f"Terminals     {len(alphabet)} " in result.stdout


# ---------------------------------------------------------------- shipped grammars and configs

SHIPPED = sorted((REPO / "configs" / "grammars").glob("*.lt"))
# engine configs; configs/pipeline-*.cfg are spaCy pipeline configs (tests/integration/test_pipeline_training.py)
CONFIGS = sorted(p for p in (REPO / "configs").glob("*.cfg") if not p.name.startswith("pipeline-"))


def test_configs_are_shipped():
    names = {p.name for p in SHIPPED} | {p.name for p in CONFIGS}
    for stem in ("brent-unigram", "brent-colloc", "brent-collocsyll", "chinese-unigram", "chinese-colloc"):
        assert f"{stem}.lt" in names and f"{stem}.cfg" in names


@pytest.mark.parametrize("path", SHIPPED, ids=lambda p: p.name)
def test_shipped_grammar_validates(path):
    grammar = validate(read_grammar(path, default_a=1e-4, default_b=1e4))
    assert "Word" in grammar.adaptors
    assert all(ad.a == 1e-4 and ad.b == 1e4 for ad in grammar.adaptors.values())


@pytest.mark.parametrize("path", CONFIGS, ids=lambda p: p.name)
def test_shipped_config_loads(path):
    cfg = load_training_config(path, {"training.iterations": 10})
    assert cfg.grammar_path.exists()
    assert cfg.corpus_gold and cfg.training.iterations == 10
    model = build_model(cfg)
    # function-word grammars segment at Word and their function-word categories (docs/algorithms.md 2.7)
    expected = {"Word"} | {nt for nt in model.grammar.nonterminals
                           if nt.startswith("FuncWord") and nt[len("FuncWord"):].lstrip("R").isdigit()}
    assert set(model.segment_categories) == expected
    if "brent" in path.name:
        s = cfg.sampler
        # J&G09's settings, but for the initialisation measured to climb fastest (an online pass for
        # unigram and colloc, incremental for collocsyll); the literal setting is the -jg09 config beside it
        best_init = {"brent-unigram.cfg": "online", "brent-colloc.cfg": "online", "brent-collocsyll.cfg": "incremental"}
        assert (s.collapsed, s.init, s.label_resampling) == (True, best_init.get(path.name, "batch"), True)
        jg09 = path.with_name(path.stem + "-jg09.cfg")
        if path.name in best_init:
            assert load_training_config(jg09).sampler == dataclasses.replace(s, init="batch")
        if s.init == "online":  # the pass is that of the online config of the same grammar
            online = load_training_config(path.with_name(path.stem + "-online.cfg")).online
            assert cfg.online == dataclasses.replace(online, workers=cfg.online.workers)
        assert (s.beta_e, s.beta_f, s.gamma_shape, s.gamma_scale) == (1.0, 1.0, 0.1, 10.0)
        assert load_training_config(path).training.iterations == 2000
        assert cfg.split_at is None
    else:
        assert cfg.split_at and "。" in cfg.split_at


def _renamed(grammar: Grammar, names) -> Grammar:
    from dataclasses import replace

    def rename(symbol):
        return names.get(symbol, symbol)

    rules = [replace(r, parent=rename(r.parent), children=tuple(rename(c) for c in r.children))
             for r in grammar.rules]
    return Grammar(rename(grammar.start), rules, {rename(k): v for k, v in grammar.adaptors.items()})


@pytest.mark.skipif(not REFERENCE_GRAMMARS.is_dir(), reason="shared reference grammars not available")
@pytest.mark.parametrize("ours, reference, dummies", [
    ("brent-unigram", "unigram", {"Word+": "Words", "Phoneme+": "Phonemes"}),
    ("brent-colloc", "colloc", {"Colloc+": "Collocs", "Word+": "Words", "Phoneme+": "Phonemes"}),
    ("brent-collocsyll", "collocsyll", {"Colloc2+": "Colloc2s", "Colloc1+": "Colloc1s", "Word+": "Words",
                                        "Consonant+": "Consonants", "Vowel+": "Vowels"}),
])
def test_brent_grammars_equal_the_references(ours, reference, dummies):
    """Same rules, weights, start and adaptors once the shorthand dummies get the reference's names
    and [:corpus:] is expanded with the 50 Brent phonemes."""
    ref = read_grammar(REFERENCE_GRAMMARS / f"{reference}.lt", default_a=1e-4, default_b=1e4)
    alphabet = sorted({t for r in ref.rules for t in r.children if t not in ref.nonterminals})
    if BRENT.exists():
        assert alphabet == sorted(set(BRENT.read_text(encoding="utf8")) - {" ", "\n"})
    ours_g = read_grammar(REPO / "configs" / "grammars" / f"{ours}.lt", default_a=1e-4, default_b=1e4)
    ours_g = _renamed(expand_corpus_class(ours_g, alphabet), dummies)
    assert ours_g.equivalent(ref)


# ---------------------------------------------------------------- config errors


def test_config_errors(runner, data, tmp_path):
    cfg = data["config"]
    out = tmp_path / "out"
    assert_one_error_line(run(runner, "train", cfg, "-o", out, "--paths.train", data["raw"],
                              "--training.iterations", "ten"),
                          str(cfg), "training.iterations", "integer", "'ten'")
    assert_one_error_line(run(runner, "train", cfg, "-o", out, "--paths.train", data["raw"],
                              "--training.iteration", "10"), str(cfg), "training.iteration")
    assert_one_error_line(run(runner, "train", cfg, "-o", out, "--paths.train", data["raw"],
                              "--sampler.init", "lazy"), "sampler.init", "batch")
    assert_one_error_line(run(runner, "train", cfg, "-o", out, "--nosuch.key", "1"), "nosuch")
    assert_one_error_line(run(runner, "train", cfg, "-o", out), "corpus.path", "--paths.train")
    assert_one_error_line(run(runner, "train", cfg, "--paths.train", data["raw"]), "--output")
    assert_one_error_line(run(runner, "train", cfg, "-o", out, "--paths.train", tmp_path / "nope.txt"),
                          "nope.txt")
    assert_one_error_line(run(runner, "train", tmp_path / "nope.cfg", "-o", out), "nope.cfg")
    assert_one_error_line(run(runner, "train", cfg, "-o", out, "--paths.train", data["raw"], "stray"),
                          "stray")
    bad = tmp_path / "bad.cfg"
    bad.write_text(cfg.read_text(encoding="utf8") + "\n[training.extra]\nx = 1\n[model]\nx = 1\n",
                   encoding="utf8")
    assert_one_error_line(run(runner, "train", bad, "-o", out, "--paths.train", data["raw"]), str(bad))
    assert not out.exists()


def test_config_loading(data):
    cfg = load_training_config(data["config"], ["--paths.train", str(data["raw"]), "--training.chains=2",
                                                "--grammar.split_at", "punctuation"])
    assert cfg.train_path == data["raw"] and cfg.training.chains == 2
    assert cfg.grammar_path == data["dir"] / "grammars" / "unigram.lt"
    assert cfg.sampler.init == "batch" and cfg.training.sample_every == 2
    assert "，" in cfg.split_at
    assert parse_overrides(["--a.b", "1e-4", "--c.d", "x y", "--e.f=true"]) == {"a.b": 1e-4, "c.d": "x y",
                                                                                  "e.f": True}
    for overrides, fragment in [({"training.burn_in": 8}, "burn_in"), ({"grammar.default_a": 2}, "[0, 1]"),
                                ({"corpus.gold": "yes"}, "true or false"),
                                ({"grammar.mode": "tokens", "corpus.gold": True}, "corpus.gold")]:
        with pytest.raises(ConfigError, match=r"tiny\.cfg") as err:
            load_training_config(data["config"], {"paths.train": str(data["raw"]), **overrides})
        assert fragment in str(err.value) and "\n" not in str(err.value)


# ---------------------------------------------------------------- train, segment, parse


def test_train_segment_parse(runner, data, tmp_path):
    out = tmp_path / "out"
    eval_at = ["--training.eval_at", "[5]"] if "eval_at" in SCHEMA["training"] else []
    result = run(runner, "train", data["config"], "--output", out, "--paths.train", data["raw"],
                 "--paths.gold", data["gold"], "--training.iterations", "6", "--training.eval_every", "3",
                 *eval_at)
    assert result.exit_code == 0, result.output
    for name in ("model/arrays.npz", "model/header.json", "model/grammar.lt", "trace.jsonl", "segmentation.txt", "scores.json",
                 "config.cfg", "checkpoints/chain-0.npz"):
        assert (out / name).exists(), name
    trace = [json.loads(line) for line in (out / "trace.jsonl").read_text(encoding="utf8").splitlines()]
    assert [t["iteration"] for t in trace] == [1, 2, 3, 4, 5, 6]
    assert all(t["chain"] == 0 and "log_posterior" in t and "tables" in t for t in trace)
    assert "token_f" in trace[2] and "token_f" in trace[5] and "token_f" not in trace[0]
    assert ("token_f" in trace[4]) == bool(eval_at)
    segmentation = (out / "segmentation.txt").read_text(encoding="utf8").splitlines()
    assert len(segmentation) == len(data["utterances"])
    for line, words in zip(segmentation, data["utterances"]):
        assert line.replace(" ", "") == "".join(words) and "  " not in line
    scores = json.loads((out / "scores.json").read_text(encoding="utf8"))
    assert 0 <= scores["token_f"] <= 1 and scores["n_utterances"] == len(data["utterances"])
    assert "token" in result.stdout and "boundary_all" in result.stdout
    saved = load_training_config(out / "config.cfg")
    assert saved.training.iterations == 6 and saved.grammar_path.exists()

    texts = tmp_path / "new.txt"
    first = "".join(data["utterances"][0])
    texts.write_text(f"{first}\n\n{first}zz{first}\n", encoding="utf8")
    seg = run(runner, "segment", out / "model", texts)
    assert seg.exit_code == 0, seg.output
    lines = seg.stdout.split("\n")[:-1]
    assert len(lines) == 3 and lines[1] == ""
    assert lines[0].replace(" ", "") == first
    assert lines[2].replace(" ", "") == f"{first}zz{first}" and " z z " in f" {lines[2]} "
    # stdin, the training output directory as MODEL, and --output
    piped = run(runner, "segment", out, "-", "--output", tmp_path / "seg.txt", input=f"{first}\n")
    assert piped.exit_code == 0, piped.output
    assert (tmp_path / "seg.txt").read_text(encoding="utf8") == lines[0] + "\n"
    assert_one_error_line(run(runner, "segment", out / "model", texts, "--category", "Nope"), "Nope")

    parsed = run(runner, "parse", out / "model", texts)
    assert parsed.exit_code == 0, parsed.output
    trees = parsed.stdout.split("\n")[:-1]
    assert len(trees) == 3 and trees[0].startswith("(Sentence (Word ") and trees[1] == ""
    assert trees[2] == "(no parse)"
    assert "⚠" in parsed.stderr and f"{texts}:3" in parsed.stderr and "'z'" in parsed.stderr
    full = run(runner, "parse", out / "model", texts, "--full")
    assert "(Char " in full.stdout.splitlines()[0] and "(Char+ " in full.stdout.splitlines()[0]

    assert_one_error_line(run(runner, "segment", tmp_path / "nomodel", texts), "nomodel")
    (tmp_path / "broken").mkdir()
    (tmp_path / "broken" / "state.npz").write_bytes(b"not a zip file")
    assert_one_error_line(run(runner, "parse", tmp_path / "broken", texts), "state.npz")
    for name in ("header.json", "grammar.lt", "arrays.npz"):
        (tmp_path / "broken" / name).write_bytes(b"not a model file")
    assert_one_error_line(run(runner, "parse", tmp_path / "broken", texts), "broken")


def test_train_split_at_with_gold_corpus(runner, tmp_path):
    """Chinese-style: punctuation are hard boundaries, the train file is gold, scores with and without it."""
    lexicon = make_lexicon(5, alphabet="甲乙丙丁戊己", min_len=1, max_len=3, seed=3)
    utterances = generate_corpus(lexicon, 30, mean_words=3, seed=4)
    utterances = [u[:2] + ["，"] + u[2:] + ["。"] if len(u) > 2 else u + ["。"] for u in utterances]
    write_gold(tmp_path / "gold.txt", [["  ".join(u)] for u in utterances])  # two spaces, as in PKU
    (tmp_path / "g.lt").write_text(UNIGRAM, encoding="utf8")
    (tmp_path / "c.cfg").write_text("""\
[paths]
train = "gold.txt"

[grammar]
path = "g.lt"
split_at = "punctuation"

[corpus]
path = ${paths.train}
gold = true

[training]
iterations = 4
sample_every = 1
eval_every = 2
""", encoding="utf8")
    out = tmp_path / "out"
    result = run(runner, "train", tmp_path / "c.cfg", "-o", out, "--paths.train", tmp_path / "gold.txt")
    assert result.exit_code == 0, result.output
    segmentation = (out / "segmentation.txt").read_text(encoding="utf8").splitlines()
    for line, words in zip(segmentation, utterances):
        assert line.replace(" ", "") == "".join(words)
        assert line.endswith(" 。") and ("，" not in line or " ， " in line)
    scores = json.loads((out / "scores.json").read_text(encoding="utf8"))
    assert scores["without_punctuation"]["n_gold_tokens"] < scores["n_gold_tokens"]
    assert "without punctuation" in result.stdout
    trace = [json.loads(line) for line in (out / "trace.jsonl").read_text(encoding="utf8").splitlines()]
    assert "token_f" in trace[1]


def test_resume_after_interrupt_matches_uninterrupted_run(runner, data, tmp_path, monkeypatch):
    args = ["--paths.train", data["raw"], "--training.iterations", "12", "--training.sample_every", "2",
            "--training.checkpoint_every", "5"]
    fresh = tmp_path / "fresh"
    assert run(runner, "train", data["config"], "-o", fresh, *args).exit_code == 0

    # Ctrl-C after iteration 9 (a sample was kept at 8; the periodic checkpoint is at 5)
    original = progress.TraceLog.__call__

    def interrupted(self, line):
        original(self, line)
        if line["iteration"] == 9:
            raise KeyboardInterrupt

    stopped = tmp_path / "stopped"
    monkeypatch.setattr(progress.TraceLog, "__call__", interrupted)
    result = run(runner, "train", data["config"], "-o", stopped, *args)
    assert result.exit_code == 130, result.output
    message = result.stderr.strip().splitlines()[-1]
    assert str(stopped / "checkpoints") in message and "--resume" in message and "Traceback" not in result.output
    assert not (stopped / "model").exists() and not (stopped / "segmentation.txt").exists()
    seen = []

    def recording(self, line):
        seen.append(line["iteration"])
        original(self, line)

    monkeypatch.setattr(progress.TraceLog, "__call__", recording)
    resumed = run(runner, "train", data["config"], "-o", stopped, *args, "--resume")
    assert resumed.exit_code == 0, resumed.output
    assert seen == [10, 11, 12]  # continued after the interruption, not from scratch or from iteration 5
    assert (stopped / "segmentation.txt").read_text() == (fresh / "segmentation.txt").read_text()

    def trace(path):
        lines = [json.loads(x) for x in (path / "trace.jsonl").read_text().splitlines()]
        return [(t["iteration"], t["log_posterior"], t["tables"], t["a"], t["b"]) for t in lines]

    assert trace(stopped) == trace(fresh)
    assert [t[0] for t in trace(fresh)] == list(range(1, 13))


def test_resume_needs_checkpoints(runner, data, tmp_path):
    assert_one_error_line(run(runner, "train", data["config"], "-o", tmp_path / "new", "--paths.train",
                              data["raw"], "--resume"), "--resume", "checkpoints")


# ---------------------------------------------------------------- evaluate


def test_evaluate_worked_example(runner, tmp_path):
    """docs/algorithms.md 5.2: gold `ba kiro mu`, predicted `bakiro mu`."""
    pred, gold = tmp_path / "pred.txt", tmp_path / "gold.txt"
    pred.write_text("bakiro mu\n", encoding="utf8")
    gold.write_text("ba kiro mu\n", encoding="utf8")
    result = run(runner, "evaluate", pred, gold, "--json", tmp_path / "s.json")
    assert result.exit_code == 0, result.output
    rows = {line.split()[0]: line.split()[1:] for line in result.stdout.splitlines() if line.strip()}
    assert rows["token"] == ["0.5000", "0.3333", "0.4000"]
    assert rows["boundary"] == ["1.0000", "0.5000", "0.6667"]
    assert rows["type"][:2] == ["0.5000", "0.3333"]
    scores = json.loads((tmp_path / "s.json").read_text(encoding="utf8"))
    assert scores["token_f"] == pytest.approx(0.4) and scores["boundary_f"] == pytest.approx(2 / 3)
    assert scores["boundary_all_p"] == pytest.approx(1.0) and scores["boundary_all_r"] == pytest.approx(3 / 4)


def test_evaluate_no_punct_and_errors(runner, tmp_path):
    pred, gold = tmp_path / "pred.txt", tmp_path / "gold.txt"
    pred.write_text("我们 ， 走。\n", encoding="utf8")
    gold.write_text("我们  ，  走  。\n", encoding="utf8")
    result = run(runner, "evaluate", pred, gold, "--no-punct")
    assert result.exit_code == 0 and "without punctuation" in result.stdout
    gold.write_text("我们  ，  跑  。\n", encoding="utf8")
    assert_one_error_line(run(runner, "evaluate", pred, gold), f"{pred}:1")
    assert_one_error_line(run(runner, "evaluate", pred, tmp_path / "none.txt"), "none.txt")


# ---------------------------------------------------------------- demo and python -m


def test_demo(runner, tmp_path):
    result = run(runner, "demo", "--output", tmp_path / "demo", "--iterations", "10", "--chains", "1")
    assert result.exit_code == 0, result.output
    for name in ("corpus/raw.txt", "corpus/gold.txt", "config.cfg", "grammar.lt", "training/model/arrays.npz"):
        assert (tmp_path / "demo" / name).exists(), name
    assert len((tmp_path / "demo" / "corpus" / "gold.txt").read_text().splitlines()) == 1000
    scores = json.loads((tmp_path / "demo" / "training" / "scores.json").read_text())
    assert scores["token_f"] > 0.6
    assert "token" in result.stdout


def test_python_m_reports_errors_without_traceback(tmp_path):
    proc = subprocess.run([sys.executable, "-m", "spacy_ag", "evaluate", str(tmp_path / "a"), str(tmp_path / "b")],
                          capture_output=True, text=True, cwd=REPO)
    assert proc.returncode == 1
    assert proc.stderr.strip().startswith("✘ ") and len(proc.stderr.strip().splitlines()) == 1
    helped = subprocess.run([sys.executable, "-m", "spacy_ag", "--help"], capture_output=True, text=True, cwd=REPO)
    assert helped.returncode == 0 and "check-grammar" in helped.stdout
