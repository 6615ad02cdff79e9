"""Inputs of any length: with spans a line is parsed whole in linear time; where a grammar cannot
be banded, or the charts would not fit, the line is refused with one line before any work."""
from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

import spacy_ag.model
from spacy_ag import AdaptorGrammar
from spacy_ag.cli import app
from spacy_ag.errors import TextError
from spacy_ag.grammar import GrammarError
from spacy_ag.model import MAX_RUN_TERMINALS
from spacy_ag.settings import AUTO_MAX_SPAN
from spacy_ag.synthetic import generate_corpus, make_lexicon
from conftest import UNIGRAM, assert_one_error_line

# Sentence is a left child of itself: its spans are unbounded anywhere, so the chart stays full
LEFT_RECURSIVE = ("1 1 Sentence --> Word\n1 1 Sentence --> Sentence Word\nWord --> Char+\n"
                  "1 1 Char --> [:corpus:]\n")


@pytest.fixture(scope="module")
def texts():
    return ["".join(u) for u in generate_corpus(make_lexicon(12, seed=1), 60, seed=2)]


@pytest.fixture(scope="module")
def model(texts):
    return AdaptorGrammar(UNIGRAM).fit(texts, iterations=3)


def test_the_span_is_fixed_at_training_and_saved(model, texts, tmp_path):
    assert AUTO_MAX_SPAN > max(len(t) for t in texts)
    assert model.grammar.adaptors["Word"].options["max_span"] == AUTO_MAX_SPAN
    assert model.compiled.arrays.band == AUTO_MAX_SPAN
    model.save(tmp_path / "m")
    assert f"@ Word max_span={AUTO_MAX_SPAN}" in (tmp_path / "m" / "grammar.lt").read_text()
    assert AdaptorGrammar.load(tmp_path / "m").compiled.arrays.band == AUTO_MAX_SPAN


def test_setting_and_directive_give_the_span(texts):
    m = AdaptorGrammar(UNIGRAM, max_span=5).fit(texts, iterations=1)
    assert m.compiled.arrays.band == 5
    long_line = "".join(texts)
    assert all(len(w) <= 5 for words in m.segment([long_line[:3000]]) for w in words)
    # the grammar's own directive wins over the setting
    m = AdaptorGrammar(UNIGRAM + "@ Word max_span=7\n", max_span=5).fit(texts, iterations=1)
    assert m.grammar.adaptors["Word"].options["max_span"] == 7 and m.compiled.arrays.band == 7
    with pytest.raises(ValueError, match="max_span"):
        AdaptorGrammar(UNIGRAM, max_span=0)


@pytest.mark.parametrize("value", ["0", "2.5", "-3"])
def test_a_bad_span_directive_names_its_line(value):
    with pytest.raises(GrammarError, match=r":4: max_span=.*whole number of terminals") as err:
        AdaptorGrammar(UNIGRAM + f"@ Word max_span={value}\n")
    assert err.value.code == "E318" and str(err.value).startswith("[E318] ")


def test_long_lines_are_parsed_whole(model, texts):
    long = ("".join(texts) * 100)[:74_000]
    words = model.segment([long])[0]
    assert "".join(words) == long
    assert max(len(w) for w in words) <= model.compiled.arrays.band
    tree = model.parse([long[:3000]])[0]
    assert "".join(tree.leaves()) == long[:3000]
    assert model.heldout_loglik([long[:5000]])["heldout_sentences"] == 1
    # training on one long line works too, with the span capped
    m = AdaptorGrammar(UNIGRAM).fit([long[:5000]], iterations=2)
    assert "".join(m.segment([long[:5000]])[0]) == long[:5000]


def test_a_full_chart_grammar_refuses_a_too_long_run_at_once(texts):
    m = AdaptorGrammar(LEFT_RECURSIVE).fit(texts, iterations=2)
    assert m.compiled.arrays.band == 0
    long = ("".join(texts) * 20)[:MAX_RUN_TERMINALS + 1]
    for call in (lambda: m.segment([long]), lambda: m.parse([long]), lambda: m.heldout_loglik([long]),
                 lambda: AdaptorGrammar(LEFT_RECURSIVE).fit([long])):
        started = time.perf_counter()
        with pytest.raises(TextError, match=r"\[E120\].*too long to parse.*max_span.*split such lines"):
            call()
        assert time.perf_counter() - started < 1.0
    # the same text with boundaries is fine: only unbroken runs count
    spaced = " ".join(long[i:i + 40] for i in range(0, 1000, 40))
    assert "".join(m.segment([spaced])[0]) == spaced.replace(" ", "")


def test_charts_past_the_memory_limit_are_refused(model, texts, monkeypatch):
    monkeypatch.setattr(spacy_ag.model, "MAX_CHART_BYTES", 2 ** 20)
    long = ("".join(texts) * 20)[:20_000]
    with pytest.raises(TextError, match=r"\[E121\].*GiB of charts"):
        model.segment([long])


def test_cli_says_so_in_one_line(texts, tmp_path):
    AdaptorGrammar(LEFT_RECURSIVE).fit(texts, iterations=2).save(tmp_path / "m")
    (tmp_path / "long.txt").write_text("".join(texts) * 20 + "\n", encoding="utf8")
    result = CliRunner().invoke(app, ["segment", str(tmp_path / "m"), str(tmp_path / "long.txt")])
    assert_one_error_line(result, "[E120]", "too long")


def test_training_a_line_past_the_free_memory_is_refused_up_front(texts, monkeypatch):
    from spacy_ag.runs.memory_budget import training_bytes

    long = ("".join(texts) * 40)[:20_000]
    model = AdaptorGrammar(UNIGRAM)
    model._prepare(model.read_corpus([long]))
    need = training_bytes(model.compiled, len(long), 10, 3)
    assert need < 200 << 20  # a 20,000-terminal line: blocked charts, pools for one tree, ten draws
    assert training_bytes(model.compiled, 10 * len(long), 10, 3) < 11 * need  # linear in the line's length
    monkeypatch.setattr(spacy_ag.model, "available_bytes", lambda: 1 << 20)
    for inference in ("mcmc", "online"):
        started = time.perf_counter()
        with pytest.raises(TextError, match=r"\[E122\] <texts>: line 2 has 20000 terminals.*more than the"):
            AdaptorGrammar(UNIGRAM, inference=inference).fit(["ab", long], iterations=2)
        assert time.perf_counter() - started < 5.0
    monkeypatch.setattr(spacy_ag.model, "available_bytes", lambda: None)  # unknown: no refusal
    AdaptorGrammar(UNIGRAM).fit([long[:3000]], iterations=1)
