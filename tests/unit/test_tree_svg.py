"""Pictures of trees (`spacy_ag.components.tree_pictures`): `spacy-ag parse --svg` and Docs of ag_parser.

A collocation grammar is fitted on a generated corpus whose alphabet holds
``(``, ``)``, ``<``, ``>``, ``&`` and ``"``, the characters a bracketed tree or
a careless page would garble.
"""
from __future__ import annotations

import re
import sys
import types
import xml.etree.ElementTree as ET

import pytest
import spacy
from spacy.training import Example
from typer.testing import CliRunner

from spacy_ag.cli import app
from spacy_ag.components.tree_pictures import TreePictures, render_tree, tree_pictures
from spacy_ag.errors import SpacyAgError
from spacy_ag.synthetic import generate_corpus, make_lexicon
from conftest import assert_one_error_line

ALPHABET = 'ab(<&)>"'
SVG = re.compile(r'<svg class="ag-tree".*?</svg>', re.S)


@pytest.fixture(scope="module")
def fitted(tmp_path_factory):
    """(nlp with a fitted colloc ag_parser, its saved model directory, the training texts, a folder)."""
    root = tmp_path_factory.mktemp("tree_svg")
    lexicon = make_lexicon(12, alphabet=ALPHABET, min_len=2, max_len=4, seed=3)
    texts = ["".join(words) for words in generate_corpus(lexicon, 120, mean_words=3.0, seed=5)]
    nlp = spacy.blank("xx")
    nlp.add_pipe("ag_parser", config={"grammar": "colloc", "iterations": 12, "seed": 1})
    nlp.initialize(lambda: [Example(nlp.make_doc(t), nlp.make_doc(t)) for t in texts])
    model_dir = root / "model"
    nlp.get_pipe("ag_parser").model.save(model_dir)
    return nlp, model_dir, texts, root


def _run(*args):
    return CliRunner().invoke(app, [str(a) for a in args])


def _terminal_faces(svg: str):
    """The text of every terminal box, in drawing order (the SVG parsed as XML: it must be well formed)."""
    ns = {"s": "http://www.w3.org/2000/svg"}
    root = ET.fromstring(svg)
    return [g.find("s:text", ns).text for g in root.iter("{http://www.w3.org/2000/svg}g")
            if g.get("class") == "terminal"]


def _node_classes(svg: str):
    ns = {"s": "http://www.w3.org/2000/svg"}
    root = ET.fromstring(svg)
    out = []
    for g in root.iter("{http://www.w3.org/2000/svg}g"):
        classes = (g.get("class") or "").split()
        if "node" in classes:
            badge = g.find("s:g[@class='uses']/s:text", ns)
            out.append((g.find("s:text", ns).text, set(classes), badge.text if badge is not None else None))
    return out


def _preorder(tree, compact=True, is_root=True):
    """(label, adapted, cached, customers) of the nodes drawn, in preorder."""
    out = []
    if is_root or tree.adapted or not compact:
        out.append((tree.label, tree.adapted, tree.cached, tree.customers))
    for child in tree.children:
        if not isinstance(child, str):
            out.extend(_preorder(child, compact, False))
    return out


@pytest.mark.parametrize("compact", [True, False])
def test_parse_svg_page_one_tree_per_line_escaped_and_marked(fitted, compact):
    nlp, model_dir, texts, root = fitted
    odd = "ab(<&" + ">" + '"'  # every character the page must escape, in one line
    lines = [texts[0], "", odd, texts[1]]
    assert set(odd) <= set("".join(texts))  # all known to the grammar: the line parses
    (root / "in.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    page_path = root / f"page-{compact}.html"
    result = _run("parse", model_dir, root / "in.txt", "--svg", page_path, "--compact" if compact else "--full")
    assert result.exit_code == 0, result.output
    assert "3 trees drawn" in result.stderr
    page = page_path.read_text(encoding="utf8")
    svgs = SVG.findall(page)
    # one tree per non-empty line, in order; the empty line gets none
    assert len(svgs) == 3 and page.count('<figure class="ag-tree-figure"') == 3
    assert [int(n) for n in re.findall(r"<figcaption[^>]*>line (\d+):", page)] == [1, 3, 4]
    model = nlp.get_pipe("ag_parser").model
    for line, svg in zip([texts[0], odd, texts[1]], svgs):
        # terminals: one box per character, in text order, the XML text unescaped back to the character
        assert _terminal_faces(svg) == list(line)
        tree = model.parse([line])[0]
        drawn = _node_classes(svg)
        expected = _preorder(tree, compact)
        assert [label for label, _, _ in drawn] == [label for label, _, _, _ in expected]
        for (label, classes, badge), (_, adapted, cached, customers) in zip(drawn, expected):
            assert ("adapted" in classes) == adapted and ("cached" in classes) == cached
            assert badge == (f"×{customers}" if cached else None)
        if line != odd:  # a training line reuses cached subtrees
            assert any("cached" in classes for _, classes, _ in drawn)
    odd_svg = svgs[1]
    assert "&lt;" in odd_svg and "&amp;" in odd_svg and "&gt;" in odd_svg and "&quot;" in odd_svg
    assert "(<&" not in page  # never the raw characters in markup
    # the bracketed trees still go to stdout
    assert result.stdout.splitlines()[0] == model.parse([texts[0]])[0].bracketed(compact=compact)
    # self-contained: no script, no stylesheet or image from anywhere
    assert not re.search(r"<script|<link|\bsrc=|\bhref=|url\(|@import", page)
    assert ("compact trees" in page) == compact


def test_doc_pictures_equal_the_command_line_ones(fitted):
    nlp, model_dir, texts, root = fitted
    lines = [texts[2], texts[3]]
    (root / "two.txt").write_text("\n".join(lines) + "\n", encoding="utf8")
    result = _run("parse", model_dir, root / "two.txt", "--svg", root / "two.html")
    assert result.exit_code == 0, result.output
    cli_svgs = SVG.findall((root / "two.html").read_text(encoding="utf8"))
    docs = list(nlp.pipe(lines))
    pictures = tree_pictures(docs)
    assert isinstance(pictures, TreePictures)
    assert pictures.svgs == cli_svgs
    # counts come from the span group's attrs
    attrs = docs[0].spans["ag"].attrs
    assert any(c is not None for c in attrs["customers"]) and attrs["units"] == "graphemes"
    # displaCy-like: a fragment, or a whole page
    fragment = render_tree(docs[0], jupyter=False)
    assert fragment.startswith('<div class="spacy-ag-trees">') and SVG.findall(fragment) == cli_svgs[:1]
    page = render_tree(docs, page=True, jupyter=False)
    assert page.startswith("<!DOCTYPE html>") and SVG.findall(page) == cli_svgs
    path = pictures.save(root / "docs.html")
    assert SVG.findall(path.read_text(encoding="utf8")) == cli_svgs


def test_jupyter_shows_the_pictures(fitted, monkeypatch):
    nlp, _, texts, _ = fitted
    doc = nlp(texts[4])
    pictures = tree_pictures(doc)
    html = pictures._repr_html_()
    assert html == pictures.html and len(SVG.findall(html)) == 1 and 'class="ag-legend"' in html
    shown = []
    ipython = types.ModuleType("IPython")
    display_module = types.ModuleType("IPython.display")
    display_module.HTML = lambda markup: ("HTML", markup)
    display_module.display = shown.append
    ipython.display = display_module
    monkeypatch.setitem(sys.modules, "IPython", ipython)
    monkeypatch.setitem(sys.modules, "IPython.display", display_module)
    assert render_tree(doc, jupyter=True) is None
    assert shown == [("HTML", html)]
    monkeypatch.setitem(sys.modules, "IPython", None)  # as if IPython were not installed
    monkeypatch.setitem(sys.modules, "IPython.display", None)
    with pytest.raises(SpacyAgError, match=r"\[E146\]"):
        render_tree(doc, jupyter=True)


def test_token_mode_and_docs_without_a_tree(fitted):
    nlp, model_dir, texts, _ = fitted
    token_nlp = spacy.blank("xx")
    token_nlp.add_pipe("ag_parser", config={"mode": "token", "spans_key": "tok", "model": str(model_dir)})
    doc = token_nlp(f"{texts[0]} {texts[1]}")
    pictures = tree_pictures(doc, spans_key="tok")
    parsed = [t.text for t in doc if t._.ag_tree is not None]  # one tree per token (spaCy splits off punctuation)
    assert len(parsed) >= 2 and "".join(parsed) == texts[0] + texts[1]
    assert [_terminal_faces(svg) for svg in pictures.svgs] == [list(text) for text in parsed]
    unknown = nlp("xyz")  # characters never seen in training: no parse
    assert "(no parse)" in tree_pictures(unknown).html and tree_pictures(unknown).svgs == []
    with pytest.raises(SpacyAgError, match=r"\[E145\].*'ag'"):
        tree_pictures(spacy.blank("xx")("no parser ran"))


def test_svg_refuses_a_directory_input(fitted):
    _, model_dir, texts, root = fitted
    folder = root / "folder"
    folder.mkdir(exist_ok=True)
    (folder / "a.txt").write_text(texts[0] + "\n", encoding="utf8")
    result = _run("parse", model_dir, folder, "--output", root / "out", "--svg", root / "dir.html")
    assert_one_error_line(result, "[E144]", str(folder))
    assert not (root / "dir.html").exists()
