"""A run of text too long to parse is refused with one line before any work, never a hang or a MemoryError."""
from __future__ import annotations

import time

import pytest
from typer.testing import CliRunner

from spacy_ag import AdaptorGrammar
from spacy_ag.cli import app
from spacy_ag.errors import TextError
from spacy_ag.model import MAX_RUN_TERMINALS
from spacy_ag.synthetic import generate_corpus, make_lexicon
from conftest import assert_one_error_line

UNIGRAM = "1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n"


@pytest.fixture(scope="module")
def model():
    texts = ["".join(u) for u in generate_corpus(make_lexicon(12, seed=1), 60, seed=2)]
    return AdaptorGrammar(UNIGRAM).fit(texts, iterations=3), texts


def test_a_too_long_run_is_refused_at_once(model):
    m, texts = model
    long = ("".join(texts) * 100)[:74_000]
    for call in (lambda: m.segment([long]), lambda: m.parse([long[:MAX_RUN_TERMINALS + 1]]),
                 lambda: m.heldout_loglik([long[:5000]]), lambda: AdaptorGrammar(UNIGRAM).fit([long[:5000]])):
        started = time.perf_counter()
        with pytest.raises(TextError, match=r"\[E120\].*too long to parse.*split such lines"):
            call()
        assert time.perf_counter() - started < 1.0
    # the same text with boundaries is fine: only unbroken runs count
    spaced = " ".join(long[i:i + 40] for i in range(0, 4000, 40))
    words = m.segment([spaced])[0]
    assert "".join(words) == spaced.replace(" ", "")


def test_cli_says_so_in_one_line(model, tmp_path):
    m, texts = model
    m.save(tmp_path / "m")
    (tmp_path / "long.txt").write_text("".join(texts) * 20 + "\n", encoding="utf8")
    result = CliRunner().invoke(app, ["segment", str(tmp_path / "m"), str(tmp_path / "long.txt")])
    assert_one_error_line(result, "[E120]", "too long")
