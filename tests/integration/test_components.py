"""spaCy integration: the segmenter tokenizer, ag_parser, the scorer and the reader.

Everything is trained on tiny generated corpora (spacy_ag.synthetic) with few
iterations; the fixtures are module-scoped so each model is fitted once.
"""
from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
import warnings

import numpy as np
import pytest
import spacy
from spacy.language import Language
from spacy.tokens import Doc, DocBin
from spacy.training import Example
from spacy.util import make_tempdir, registry

from spacy_ag.components import AGParser, Segmenter, SegmentedCorpus, score_segmentation
from spacy_ag.components.segmenter import words_and_spaces
from spacy_ag.corpus import DEFAULT_PUNCTUATION
from spacy_ag.serialize import ModelFileError
from spacy_ag.synthetic import generate_corpus, make_lexicon, write_gold

ALPHABET = "abcdefghijk"
SEGMENTER = {"@tokenizers": "spacy-ag.Segmenter.v1", "iterations": 40, "seed": 1}


def _gold_corpus():
    lexicon = make_lexicon(25, alphabet=ALPHABET, min_len=2, max_len=5, seed=11)
    gold = generate_corpus(lexicon, 250, mean_words=4.0, seed=12)
    # punctuation is a hard boundary: put some commas between words
    for i, utt in enumerate(gold):
        if i % 3 == 0 and len(utt) > 1:
            utt.insert(1, ",")
    return gold


@pytest.fixture(scope="module")
def gold():
    return _gold_corpus()


@pytest.fixture(scope="module")
def raw(gold):
    return ["".join(u) for u in gold]


def _raw_examples(nlp, texts):
    return lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in texts]


def _gold_examples(nlp, gold):
    return [Example(nlp.make_doc("".join(u)), Doc(nlp.vocab, words=u, spaces=[False] * len(u))) for u in gold]


@pytest.fixture(scope="module")
def seg_nlp(raw):
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": dict(SEGMENTER)}})
    with warnings.catch_warnings():
        warnings.simplefilter("error")  # fitting must not warn (no "unfitted" fallback noise)
        nlp.initialize(_raw_examples(nlp, raw))
    return nlp


@pytest.fixture(scope="module")
def full_nlp(raw):
    """Segmenter + ag_parser in doc mode (colloc) + ag_parser in token mode (morph)."""
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": dict(SEGMENTER)}})
    nlp.add_pipe("ag_parser", config={"grammar": "colloc", "iterations": 15, "seed": 2})
    nlp.add_pipe("ag_parser", name="ag_morph",
                 config={"grammar": "morph", "mode": "token", "spans_key": "morph", "iterations": 10})
    nlp.initialize(_raw_examples(nlp, raw))
    return nlp


def _words(doc):
    return [t.text for t in doc]


def _annotations(doc):
    """Everything the components write, in comparable form."""
    out = {"words": [(t.text, t.whitespace_) for t in doc], "ag_tree": doc._.ag_tree,
           "tokens": [(t._.ag_tree, t._.ag_morphs) for t in doc]}
    for key, group in doc.spans.items():
        out[key] = ([(s.start, s.end, s.label_) for s in group], dict(group.attrs))
    return out


# ---------------------------------------------------------------- registration


def test_registered_names():
    assert registry.get("tokenizers", "spacy-ag.Segmenter.v1")
    assert registry.get("scorers", "spacy-ag.segmentation_scorer.v1")() is score_segmentation
    assert registry.get("readers", "spacy-ag.SegmentedCorpus.v1")
    assert "ag_parser" in Language.factories
    nlp = spacy.blank("xx")
    assert isinstance(nlp.add_pipe("ag_parser"), AGParser)


# ---------------------------------------------------------------- segmenter


def test_segmenter_recovers_words(seg_nlp, gold, tmp_path):
    path = tmp_path / "gold.txt"
    write_gold(path, gold)
    examples = list(SegmentedCorpus(path)(seg_nlp))
    assert len(examples) == len(gold)
    scores = seg_nlp.evaluate(examples)
    for key in ("token_acc", "token_p", "token_r", "token_f", "boundary_p", "boundary_r", "boundary_f",
                "lexicon_p", "lexicon_r", "lexicon_f"):
        assert 0.0 <= scores[key] <= 1.0, key
    assert scores["token_f"] > 0.7
    assert scores["boundary_f"] > 0.8
    # the same numbers through the registered reader and scorer
    reader = registry.resolve({"c": {"@readers": "spacy-ag.SegmentedCorpus.v1", "path": str(path)}})["c"]
    assert seg_nlp.evaluate(list(reader(seg_nlp)))["token_f"] == pytest.approx(scores["token_f"])


TRICKY = ["", " ", "  ", "\n", "\t\n ", "abc", " abc", "abc ", "abc  def", "abc   def",
          "abc\ndef", "abc \n def\n", "  abc\n\n def  ", "abc,def", ",", ",,abc!!", "(abc)", "abc。def、",
          "xyz", "abc汉字def", "a\u3000b", "abc\r\ndef", "a b c d e f", "ab\u200bcd", "☃abc☃"]


@pytest.mark.parametrize("text", TRICKY)
def test_text_is_preserved(seg_nlp, text):
    for doc in (seg_nlp(text), seg_nlp.make_doc(text), next(seg_nlp.tokenizer.pipe([text]))):
        assert doc.text == text
        for token in doc:
            # a token is whitespace or has none; boundary and unseen characters stand alone
            assert token.text.isspace() or not any(c.isspace() for c in token.text)
            if any(c in DEFAULT_PUNCTUATION or c not in ALPHABET for c in token.text) and not token.is_space:
                assert len(token.text) == 1, token.text


def test_boundaries_and_unseen_characters(seg_nlp):
    model = seg_nlp.tokenizer.model
    assert "," not in model.compiled.term_index  # punctuation was split off in training
    doc = seg_nlp("abc,def xyz")
    assert "," in _words(doc) and {"x", "y", "z"} <= set(_words(doc))
    assert not any("," in t.text and len(t.text) > 1 for t in doc)


def test_boundary_chars_are_configurable():
    """Phoneme strings: '(' and ')' are Brent vowels, so they must not be boundaries there."""
    texts = ["D6(bUk", "(bUk", "D6(", "lUk(D6"] * 10
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {**SEGMENTER, "iterations": 5, "boundary_chars": ""}}})
    nlp.initialize(_raw_examples(nlp, texts))
    assert "(" in nlp.tokenizer.model.compiled.term_index
    assert any("(" in t.text and len(t.text) > 1 for t in nlp("D6(bUk lUk("))
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {**SEGMENTER, "iterations": 5, "boundary_chars": "U"}}})
    nlp.initialize(_raw_examples(nlp, texts))
    assert "U" not in nlp.tokenizer.model.compiled.term_index and "(" in nlp.tokenizer.model.compiled.term_index
    assert [t.text for t in nlp("bUk") if "U" in t.text] == ["U"]


def test_pipe_matches_call(seg_nlp, raw):
    texts = raw[:23] + ["", "  ab  cd\n"]
    piped = list(seg_nlp.tokenizer.pipe(texts, batch_size=7))
    assert [_words(d) for d in piped] == [_words(seg_nlp.tokenizer(t)) for t in texts]
    assert [d.text for d in piped] == texts
    assert [_words(d) for d in seg_nlp.pipe(texts)] == [_words(d) for d in piped]


def test_words_and_spaces():
    assert words_and_spaces(["a", "b"], " a  b\n") == ([" ", "a", " ", "b", "\n"], [False, True, False, False, False])
    assert words_and_spaces([], "") == ([], [])
    with pytest.raises(ValueError):
        words_and_spaces(["a", "c"], "a b")


def test_unfitted_segmenter_falls_back_to_characters():
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": dict(SEGMENTER)}})
    with pytest.warns(UserWarning, match="not fitted"):
        doc = nlp("ab c\n")
    assert _words(doc) == ["a", "b", "c", "\n"] and doc.text == "ab c\n"
    with pytest.warns(UserWarning, match="without examples"):
        nlp.initialize()
    assert not nlp.tokenizer.is_fitted


def test_initialize_keeps_a_fitted_segmenter_unless_refit(raw):
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {**SEGMENTER, "iterations": 3}}})
    nlp.tokenizer.initialize(_raw_examples(nlp, raw[:50]))
    first = nlp.tokenizer.model
    nlp.tokenizer.initialize(_raw_examples(nlp, raw[:50]))
    assert nlp.tokenizer.model is first
    nlp.tokenizer.initialize(_raw_examples(nlp, raw[:50]), refit=True)
    assert nlp.tokenizer.model is not first


def test_chinese_pipeline_with_zh_defaults():
    text = ["我们喜欢学习中文", "学习中文很有意思", "我们很喜欢"] * 5
    nlp = spacy.blank("zh", config={"nlp": {"tokenizer": {**SEGMENTER, "iterations": 5}}})
    nlp.initialize(_raw_examples(nlp, text))  # [initialize.tokenizer] has pkuseg_* keys for zh
    doc = nlp("我们喜欢中文。你呢？")
    assert doc.text == "我们喜欢中文。你呢？"
    assert "。" in _words(doc) and "你" in _words(doc)


def test_segmenter_serialization(seg_nlp, raw):
    tok = seg_nlp.tokenizer
    data = tok.to_bytes()
    fresh = Segmenter(seg_nlp.vocab, **tok.cfg).from_bytes(data)
    assert fresh.to_bytes() == data
    texts = raw[:20] + ["abc, xyz"]
    assert [_words(fresh(t)) for t in texts] == [_words(tok(t)) for t in texts]
    assert not Segmenter(seg_nlp.vocab).from_bytes(data, exclude=["model"]).is_fitted
    with make_tempdir() as d:
        tok.to_disk(d / "tok")
        assert (d / "tok" / "model" / "arrays.npz").exists() and (d / "tok" / "cfg").exists()
        again = Segmenter(seg_nlp.vocab, **tok.cfg).from_disk(d / "tok")
        assert [_words(again(t)) for t in texts] == [_words(tok(t)) for t in texts]
        assert again.to_bytes() == data
        tok.to_disk(d / "nomodel", exclude=["model"])
        assert not (d / "nomodel" / "model").exists()


# ---------------------------------------------------------------- scorer and reader


def test_scorer_worked_example():
    nlp = spacy.blank("xx")
    pred = Doc(nlp.vocab, words=["bakiro", "mu"], spaces=[False, False])
    gold = Doc(nlp.vocab, words=["ba", "kiro", "mu"], spaces=[False, False, False])
    s = registry.get("scorers", "spacy-ag.segmentation_scorer.v1")()([Example(pred, gold)])
    assert (s["token_p"], s["token_r"], s["token_f"]) == pytest.approx((1 / 2, 1 / 3, 0.4))
    assert (s["boundary_p"], s["boundary_r"], s["boundary_f"]) == pytest.approx((1.0, 0.5, 2 / 3))
    assert (s["lexicon_p"], s["lexicon_r"]) == pytest.approx((1 / 2, 1 / 3))
    assert score_segmentation([])["token_f"] is None and score_segmentation([])["boundary_f"] is None


def test_segmented_corpus_reader(tmp_path):
    path = tmp_path / "g.txt"
    path.write_text("ba kiro mu\n\n  N3 gOt \nzEf\n", encoding="utf8")
    nlp = spacy.blank("xx")
    examples = list(SegmentedCorpus(path)(nlp))
    assert [[t.text for t in eg.reference] for eg in examples] == [["ba", "kiro", "mu"], ["N3", "gOt"], ["zEf"]]
    assert all(eg.reference.text == eg.predicted.text for eg in examples)
    assert not any(t.whitespace_ for eg in examples for t in eg.reference)
    assert len(list(SegmentedCorpus(path, limit=2)(nlp))) == 2
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        list(SegmentedCorpus(tmp_path / "missing.txt")(nlp))


# ---------------------------------------------------------------- parser


def _check_tree_group(doc, group):
    attrs = group.attrs
    n = len(group)
    assert all(len(attrs[k]) == n for k in ("parent", "adapted", "cached", "start_char", "end_char"))
    for i, span in enumerate(group):
        start, end, parent = attrs["start_char"][i], attrs["end_char"][i], attrs["parent"][i]
        # the span is the smallest token span covering the node's exact characters
        assert span.start_char <= start < end <= span.end_char
        expanded = doc.char_span(start, end, alignment_mode="expand")
        assert (expanded.start, expanded.end) == (span.start, span.end)
        assert -1 <= parent < i  # preorder: parents first
        if parent >= 0:
            assert attrs["start_char"][parent] <= start and end <= attrs["end_char"][parent]
        assert isinstance(attrs["adapted"][i], bool) and isinstance(attrs["cached"][i], bool)


def test_parser_doc_mode(full_nlp, gold):
    text = "".join(gold[0]) + "  " + " ".join(gold[1])
    doc = full_nlp(text)
    group = doc.spans["ag"]
    assert group[0].label_ == "Sentence" and group.attrs["parent"][0] == -1
    assert {s.label_ for s in group} <= {"Sentence", "Colloc", "Word"}
    _check_tree_group(doc, group)
    # the Word nodes tile the text without its whitespace
    words = [doc.text[s:e] for s, e, span in zip(group.attrs["start_char"], group.attrs["end_char"], group)
             if span.label_ == "Word"]
    assert "".join(words) == "".join(text.split())
    assert doc._.ag_tree.startswith("(Sentence (Colloc (Word ")
    assert all(group.attrs["adapted"][i] for i in range(1, len(group)))


def test_parser_token_mode(full_nlp):
    doc = full_nlp("abcdef ghij, xyz")
    for token in doc:
        if token.is_space or any(c not in ALPHABET + "," for c in token.text):
            assert token._.ag_morphs is None and token._.ag_tree is None  # unseen: no parse
            continue
        assert isinstance(token._.ag_morphs, list) and "".join(token._.ag_morphs) == token.text
        assert token._.ag_tree.startswith("(Word (Stem ")
    group = doc.spans["morph"]
    _check_tree_group(doc, group)
    assert all(len(span) == 1 for span in group)
    assert doc._.ag_tree is None  # "xyz" was never seen: the doc-mode parser has no tree
    doc = full_nlp("abcdef ghij")
    assert doc._.ag_tree is not None and len(doc.spans["morph"]) >= 2  # both parsers wrote


def test_parser_unparseable_and_empty(full_nlp):
    for text in ["", "   ", "xyz"]:
        doc = full_nlp(text)
        assert doc.text == text and len(doc.spans["ag"]) == 0 and doc._.ag_tree is None


def test_unfitted_parser_error():
    nlp = spacy.blank("xx")
    nlp.add_pipe("ag_parser")
    with pytest.raises(ValueError, match="no trained grammar"):
        nlp("abc")
    with pytest.raises(ValueError, match="mode"):
        spacy.blank("xx").add_pipe("ag_parser", config={"mode": "sentence"})


def test_docbin_roundtrip(full_nlp, raw):
    docs = list(full_nlp.pipe(raw[:10] + ["abc xyz,def"]))
    db = DocBin(store_user_data=True)
    for doc in docs:
        db.add(doc)
    back = list(DocBin().from_bytes(db.to_bytes()).get_docs(full_nlp.vocab))
    assert [_annotations(d) for d in back] == [_annotations(d) for d in docs]


def test_n_process_2(full_nlp, raw):
    texts = raw[:12] + ["abc xyz,def", ""]
    single = [_annotations(d) for d in full_nlp.pipe(texts)]
    multi = [_annotations(d) for d in full_nlp.pipe(texts, n_process=2, batch_size=4)]
    assert multi == single


def test_parser_serialization(full_nlp, raw):
    parser = full_nlp.get_pipe("ag_parser")
    data = parser.to_bytes()
    fresh = AGParser(full_nlp.vocab, "ag_parser", **parser.cfg).from_bytes(data)
    assert fresh.to_bytes() == data
    docs = [full_nlp.make_doc(t) for t in raw[:5]]
    assert [_annotations(fresh(full_nlp.make_doc(t))) for t in raw[:5]] == \
        [_annotations(parser(d)) for d in docs]
    assert not AGParser(full_nlp.vocab, **parser.cfg).from_bytes(data, exclude=["model"]).is_fitted
    with make_tempdir() as d:
        parser.to_disk(d / "p")
        again = AGParser(full_nlp.vocab, **parser.cfg).from_disk(d / "p")
        assert again.to_bytes() == data


def test_pipeline_to_disk_and_load(full_nlp, raw):
    texts = raw[:10] + ["abc,  xyz\n def "]
    expected = [_annotations(d) for d in full_nlp.pipe(texts)]
    with make_tempdir() as d:
        full_nlp.to_disk(d)
        nlp2 = spacy.load(d)
        assert [_annotations(doc) for doc in nlp2.pipe(texts)] == expected
        assert nlp2.to_bytes() == spacy.load(d).to_bytes()
        # bytes round trip of the whole pipeline
        nlp3 = spacy.blank("xx", config=nlp2.config).from_bytes(nlp2.to_bytes())
        assert [_annotations(doc) for doc in nlp3.pipe(texts)] == expected


def test_corrupted_and_mismatched_files(full_nlp):
    with make_tempdir() as d:
        full_nlp.to_disk(d)
        state = d / "tokenizer" / "model" / "arrays.npz"
        good = state.read_bytes()
        state.write_bytes(b"garbage")
        with pytest.raises(ModelFileError, match=str(state).replace("\\", "\\\\")):
            spacy.load(d)
        state.write_bytes(good)
        # a model written by a future format version
        header = d / "tokenizer" / "model" / "header.json"
        good_header = header.read_text()
        meta = json.loads(good_header)
        meta["format_version"] = 99
        header.write_text(json.dumps(meta))
        with pytest.raises(ModelFileError, match="format 99"):
            spacy.load(d)
        header.write_text(good_header)
        cfg = d / "ag_parser" / "cfg"
        data = json.loads(cfg.read_text())
        data["cfg_version"] = 99
        cfg.write_text(json.dumps(data))
        with pytest.raises(ModelFileError, match="ag_parser"):
            spacy.load(d)
    with pytest.raises(ModelFileError, match="tokenizer bytes|segmenter bytes"):
        full_nlp.tokenizer.from_bytes(full_nlp.tokenizer.to_bytes()[:-40])


def test_model_path_initialize(seg_nlp, tmp_path):
    seg_nlp.tokenizer.model.save(tmp_path / "m")
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": dict(SEGMENTER)}})
    nlp.tokenizer.initialize(model_path=str(tmp_path / "m"))
    assert _words(nlp("abcdef,ghij")) == _words(seg_nlp("abcdef,ghij"))


# ---------------------------------------------------------------- without importing spacy_ag


def test_entry_points_in_fresh_process_and_spawn(full_nlp, raw, tmp_path):
    full_nlp.to_disk(tmp_path / "pipe")
    texts = raw[:3] + ["abc, xyz"]
    expected = [_annotations(d) for d in full_nlp.pipe(texts)]
    script = textwrap.dedent(f"""
        import json, sys
        import spacy
        assert not any(m.startswith("spacy_ag") for m in sys.modules), "spacy_ag imported early"
        nlp = spacy.load({str(tmp_path / "pipe")!r})
        def annotations(doc):
            spans = {{k: [[[s.start, s.end, s.label_] for s in g], dict(g.attrs)] for k, g in doc.spans.items()}}
            return [[[t.text, t.whitespace_] for t in doc], doc._.ag_tree,
                    [[t._.ag_tree, t._.ag_morphs] for t in doc], spans]
        out = [annotations(d) for d in nlp.pipe({texts!r})]
        # the same under the spawn start method (macOS/Windows default): everything pickles
        import multiprocessing
        multiprocessing.set_start_method("spawn", force=True)
        assert [annotations(d) for d in nlp.pipe({texts!r}, n_process=2, batch_size=2)] == out
        blank = spacy.blank("xx")
        blank.add_pipe("ag_parser")
        zh = spacy.blank("zh", config={{"nlp": {{"tokenizer": {{"@tokenizers": "spacy-ag.Segmenter.v1"}}}}}})
        assert type(zh.tokenizer).__name__ == "Segmenter"
        print(json.dumps(out))
    """)
    env = {k: v for k, v in os.environ.items() if k != "PYTHONPATH"}
    run = subprocess.run([sys.executable, "-c", script], capture_output=True, text=True, cwd=tmp_path, env=env,
                         timeout=300)
    assert run.returncode == 0, run.stderr[-3000:]
    got = json.loads(run.stdout.strip().splitlines()[-1])
    assert len(got) == len(expected)
    for doc_out, exp in zip(got, expected):
        words, tree, tokens, spans = doc_out
        assert [tuple(w) for w in words] == exp["words"] and tree == exp["ag_tree"]
        assert [tuple(t) for t in tokens] == exp["tokens"]
        for key, (sp, attrs) in spans.items():
            assert [tuple(s) for s in sp] == exp[key][0] and attrs == exp[key][1]
