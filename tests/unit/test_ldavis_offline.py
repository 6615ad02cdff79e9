"""The pyLDAvis page of `spacy-ag topics --ldavis` and `export-ldavis --html`: offline, numbered as ours."""
from __future__ import annotations

import json
import math
import random
import re
from pathlib import Path

import pytest
from typer.testing import CliRunner

pyLDAvis = pytest.importorskip("pyLDAvis")
from pyLDAvis import urls  # noqa: E402

from spacy_ag.cli import app  # noqa: E402
from spacy_ag.topics import ldavis as ldavis_module  # noqa: E402
from conftest import assert_one_error_line  # noqa: E402

CONFIG = """\
[paths]
train = "{docs}"

[corpus]
path = ${{paths.train}}
heldout_fraction = 0.2

[topics]
n_topics = 3
sweeps = 30
inference = "gibbs"

[training]
seed = 0
"""
DATA = re.compile(r'new LDAvis\("#ldavis_spacy_ag", (\{.*\})\);', re.S)


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


@pytest.fixture(scope="module")
def trained(tmp_path_factory):
    """A topic model of three topics with disjoint vocabularies; one topic has three times the documents,
    so pyLDAvis's own order (by size) would differ from ours."""
    root = tmp_path_factory.mktemp("ldavis")
    rng = random.Random(1)
    vocab = [["".join(rng.choice("abcdefghijkl") for _ in range(rng.randint(3, 5))) for _ in range(6)]
             for _ in range(3)]
    topics = [0, 1, 2, 2, 2]
    docs = [" ".join(rng.choice(vocab[topics[d % 5]]) for _ in range(15)) for d in range(100)]
    (root / "docs.txt").write_text("\n".join(docs) + "\n", encoding="utf8")
    (root / "topics.cfg").write_text(CONFIG.format(docs=root / "docs.txt"), encoding="utf8")
    result = _run("train", root / "topics.cfg", "--output", root / "out")
    assert result.exit_code == 0, result.output
    return root


def _printed_topics(output: str):
    """`spacy-ag topics`' lines: {topic number: [its words, best first]}."""
    out = {}
    for line in output.splitlines():
        if line.startswith("topic "):
            fields = line.split()
            out[int(fields[1])] = fields[2::2]
    return out


def _assert_offline(page: str) -> None:
    assert not re.search(r"<script[^>]*\bsrc=|<link\b|\b(src|href)=[\"']?https?://|@import|url\(\s*[\"']?(https?:)?//",
                         page)
    # the installed package's d3, LDAvis script and stylesheet, inlined
    assert Path(urls.D3_LOCAL).read_text(encoding="utf8") in page
    assert Path(urls.LDAVIS_CSS_LOCAL).read_text(encoding="utf8") in page
    assert "var LDAvis = function(to_select, data_or_file_name, color1, color2)" in page


def test_topics_ldavis_page_is_offline_and_numbered_as_ours(trained):
    model = trained / "out" / "model"
    page_path = trained / "topics.html"
    result = _run("topics", model, "--ldavis", page_path, "--docs", trained / "docs.txt", "--top", 4)
    assert result.exit_code == 0, result.output
    assert "self-contained; topics numbered from 0" in result.output
    printed = _printed_topics(result.stdout)
    assert sorted(printed) == [0, 1, 2]  # ours count from 0
    page = page_path.read_text(encoding="utf8")
    _assert_offline(page)
    data = json.loads(DATA.search(page).group(1))
    # our order, not pyLDAvis's order by size: LDAvis's topic k is our topic k - 1
    assert data["topic.order"] == [1, 2, 3] and data["mdsDat"]["topics"] == [1, 2, 3]
    sizes = data["mdsDat"]["Freq"]
    assert sizes != sorted(sizes, reverse=True)  # sorting by size would have moved them
    # and the page shows k - 1: the circles, the bar chart's title and the topic box
    for edit in ("return d.topics - 1;", '" Most Relevant Terms for Topic " + (topics - 1) + " ("',
                 "Object.defineProperty(input, \"value\""):
        assert page.count(edit) == 1, edit
    assert "from 0." in page
    # what the page shows as topic i is what `spacy-ag topics` prints as topic i
    tinfo = data["tinfo"]
    for ours, words in printed.items():
        rows = [(lp, term) for term, cat, lp in zip(tinfo["Term"], tinfo["Category"], tinfo["logprob"])
                if cat == f"Topic{ours + 1}"]
        shown = [term for _, term in sorted(rows, reverse=True)][:6]
        assert set(words[:3]) <= set(shown), (ours, words, shown)
        for other in set(printed) - {ours}:
            assert len(set(printed[other][:3]) & set(shown)) <= 1


def test_export_ldavis_html_is_the_same_offline_page(trained):
    model = trained / "out" / "model"
    result = _run("export-ldavis", model, trained / "docs.txt", "--output", trained / "vis.json", "--html",
                  trained / "vis.html")
    assert result.exit_code == 0, result.output
    page = (trained / "vis.html").read_text(encoding="utf8")
    _assert_offline(page)
    exported = json.loads((trained / "vis.json").read_text(encoding="utf8"))
    data = json.loads(DATA.search(page).group(1))
    # row k of the exported matrix is LDAvis's topic k + 1 (logprob rounded to 4 decimals by pyLDAvis)
    vocab = {w: i for i, w in enumerate(exported["vocab"])}
    tinfo = data["tinfo"]
    checked = 0
    for term, category, logprob in zip(tinfo["Term"], tinfo["Category"], tinfo["logprob"]):
        if category.startswith("Topic"):
            k = int(category[len("Topic"):])
            assert math.exp(logprob) == pytest.approx(exported["topic_term_dists"][k - 1][vocab[term]], rel=1e-3)
            checked += 1
    assert checked >= 3 * 6


def test_vocabulary_cannot_break_out_of_the_script(trained):
    data = {"topic_term_dists": [[0.5, 0.5], [0.9, 0.1]], "doc_topic_dists": [[0.5, 0.5], [0.2, 0.8]],
            "doc_lengths": [2, 2], "vocab": ["</script><b>", "a&b"], "term_frequency": [2, 2]}
    page, ours = ldavis_module.offline_ldavis_page(pyLDAvis, data)
    assert ours and "</script><b>" not in page and "a&b" not in page
    assert json.loads(DATA.search(page).group(1))["tinfo"]["Term"].count("</script><b>") >= 1


def test_an_unknown_ldavis_script_is_numbered_by_ldavis_and_said_so(trained, monkeypatch):
    monkeypatch.setattr(ldavis_module, "_OUR_NUMBERING_EDITS", (("no such line in ldavis.js", "x"),))
    result = _run("topics", trained / "out" / "model", "--ldavis", trained / "plain.html", "--docs",
                  trained / "docs.txt")
    assert result.exit_code == 0, result.output
    assert "numbers the topics from 1" in result.stderr
    page = (trained / "plain.html").read_text(encoding="utf8")
    _assert_offline(page)
    assert "return d.topics;" in page and "its topic k is topic k - 1" in page


def test_a_missing_pyldavis_script_is_one_coded_line(trained, monkeypatch):
    monkeypatch.setattr(urls, "D3_LOCAL", str(trained / "gone" / "d3.v5.min.js"))
    result = _run("topics", trained / "out" / "model", "--ldavis", trained / "none.html", "--docs",
                  trained / "docs.txt")
    assert_one_error_line(result, "[E147]", "d3 script")
    assert not (trained / "none.html").exists()
