"""Unsegmented text read as gold words stops a run with one coded line (E170, E171) before it trains."""
from __future__ import annotations

import pytest
from typer.testing import CliRunner

from spacy_ag.cli import app
from spacy_ag.errors import TrainingLayerError
from spacy_ag.synthetic import generate_corpus, make_lexicon
from spacy_ag.train.inputs import GOLD_CHECK_LINES, GOLD_SINGLE_WORD_SHARE, check_gold_words
from conftest import assert_one_error_line

GRAMMAR = "1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n"

CONFIG = """\
[paths]
train = null
gold = null
output = null

[grammar]
path = "unigram.lt"

[corpus]
path = ${{paths.train}}
gold = true

[inference]
mode = "{mode}"
stream = {stream}

[training]
iterations = 4
"""


@pytest.fixture()
def files(tmp_path):
    utterances = generate_corpus(make_lexicon(30, seed=1), 200, mean_words=3.0, seed=2)
    (tmp_path / "unigram.lt").write_text(GRAMMAR, encoding="utf8")
    (tmp_path / "gold.txt").write_text("".join(" ".join(u) + "\n" for u in utterances), encoding="utf8")
    (tmp_path / "raw.txt").write_text("".join("".join(u) + "\n" for u in utterances), encoding="utf8")
    for mode, stream in (("mcmc", "false"), ("online", "true")):
        (tmp_path / f"{mode}.cfg").write_text(CONFIG.format(mode=mode, stream=stream), encoding="utf8")
    return tmp_path


@pytest.mark.parametrize("mode", ["mcmc", "online"])  # online: a streamed run, which reads the file lazily
def test_unsegmented_training_file_with_gold_true(files, mode):
    out = files / "out"
    result = CliRunner().invoke(app, ["train", str(files / f"{mode}.cfg"), "--output", str(out),
                                      "--paths.train", str(files / "raw.txt")])
    assert_one_error_line(result, "E170", str(files / "raw.txt"), "--corpus.gold false", "of its first 200")
    assert not out.exists()  # stopped before the run wrote anything


@pytest.mark.parametrize("mode", ["mcmc", "online"])
def test_unsegmented_paths_gold(files, mode):
    result = CliRunner().invoke(app, ["train", str(files / f"{mode}.cfg"), "--output", str(files / "out"),
                                      "--paths.train", str(files / "raw.txt"), "--corpus.gold", "false",
                                      "--paths.gold", str(files / "raw.txt")])
    assert_one_error_line(result, "E171", "paths.gold", "words separated by spaces")


def test_threshold_and_limit():
    """Gold words of a segmentation corpus pass (Brent has a fifth of single-word utterances); a
    file where at least 95% of the lines are one word does not; blank lines do not count, and only
    the first GOLD_CHECK_LINES lines are read."""
    brent_like = [["yu", "want", "tu"]] * 79 + [["bUk"]] * 21 + [[]] * 50
    check_gold_words(brent_like, "brent.txt", in_corpus=True)
    below = int(GOLD_SINGLE_WORD_SHARE * 100) - 1
    check_gold_words([["a"]] * below + [["a", "b"]] * (100 - below), "x.txt", in_corpus=True)
    with pytest.raises(TrainingLayerError, match=r"E170.*95 of its first 100"):
        check_gold_words([["a"]] * 95 + [["a", "b"]] * 5, "x.txt", in_corpus=True)
    with pytest.raises(TrainingLayerError, match="E171"):
        check_gold_words([["abc"]] * 3, "g.txt", in_corpus=False)
    # a segmented file whose tail is one word per line: only its first lines are read
    check_gold_words([["a", "b"]] * GOLD_CHECK_LINES + [["a"]] * (3 * GOLD_CHECK_LINES), "x.txt", in_corpus=True)
    check_gold_words([], "empty.txt", in_corpus=True)  # nothing to judge (an empty corpus has its own line)
