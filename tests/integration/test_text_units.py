"""Text units: extended grapheme clusters (UAX #29) as terminals, control characters, lone surrogates.

The texts are written here: Thai, Hindi, Vietnamese (precomposed NFC and
decomposed NFD), Korean jamo, emoji sequences and flags, and the reported
cases (``"yúwa\\u0301nt"``, a ZWJ family, a NUL byte, a lone surrogate). The
models are fitted with a few sweeps on made-up sentences of these words, so
the tests check structure (no cut inside a cluster, the text spelled back,
one clear error), never segmentation quality.
"""
from __future__ import annotations

import os
import random
import subprocess
import sys
import unicodedata
from pathlib import Path

import numpy as np
import pytest
import spacy
from spacy.training import Example
from typer.testing import CliRunner

from conftest import UNIGRAM, assert_one_error_line
from spacy_ag.cli import app
from spacy_ag.corpus import iter_lines, read_corpus
from spacy_ag.errors import TextError
from spacy_ag.model import AdaptorGrammar
from spacy_ag.settings import FittedGrammarSettings, GrammarSettings, SettingError, TopicModelSettings, check
from spacy_ag.text_units import (
    UNITS, alnum_runs, check_text, graphemes, is_control, terminal_spans, terminals, text_units,
)

REPO = Path(__file__).resolve().parents[2]

NFC = unicodedata.normalize("NFC", "tiếng Việt")
NFD = unicodedata.normalize("NFD", "tiếng Việt")
FAMILY = "\U0001F468\u200d\U0001F469\u200d\U0001F467"  # 👨‍👩‍👧: five code points
FLAG_FR = "\U0001F1EB\U0001F1F7"                       # 🇫🇷
REPORTED = "yúwa\u0301nt"                               # a precomposed and a combining accent

#: Made-up words of several scripts; every one has clusters of more than one code point.
WORDS = ["tiếng", unicodedata.normalize("NFD", "Việt"), "น้ำ", "ที่", "हिन्दी", "क्षत्रिय", FAMILY, FLAG_FR,
         "yúwa\u0301nt", "\u1112\u1161\u11ab", "👍🏽", "❤️"]


def cuts(pieces):
    """Offsets between consecutive pieces (and the ends)."""
    out, pos = {0}, 0
    for p in pieces:
        pos += len(p)
        out.add(pos)
    return out


def utterances(n=60, seed=3):
    rng = random.Random(seed)
    return ["".join(rng.choice(WORDS) for _ in range(rng.randint(1, 4))) for _ in range(n)]


# ---------------------------------------------------------------- cluster boundaries


@pytest.mark.parametrize("text, clusters", [
    (REPORTED, ["y", "ú", "w", "a\u0301", "n", "t"]),
    (FAMILY, [FAMILY]),
    (FLAG_FR, [FLAG_FR]),
    (FLAG_FR + "\U0001F1E9\U0001F1EA", [FLAG_FR, "\U0001F1E9\U0001F1EA"]),  # GB12/13: pairs
    (FLAG_FR + "\U0001F1E9", [FLAG_FR, "\U0001F1E9"]),
    ("👍🏽!", ["👍🏽", "!"]),                                   # emoji modifier: Extend
    ("❤️x", ["❤️", "x"]),                                     # variation selector: Extend
    ("a\u200d" + FAMILY[0], ["a\u200d", FAMILY[0]]),         # GB11 needs a pictograph before the ZWJ
    # Thai: vowel signs above/below and tone marks are Mn (Extend), SARA AM is a SpacingMark;
    # SARA AA and the leading vowels are letters of their own
    ("น้ำ", ["น้ำ"]),
    ("ที่", ["ที่"]),
    ("ภาษาไทย", ["ภ", "า", "ษ", "า", "ไ", "ท", "ย"]),
    # Devanagari: vowel signs (Mc, Mn) and nukta extend; virama + consonant joins (GB9c)
    ("हिन्दी", ["हि", "न्दी"]),
    ("क्षत्रिय", ["क्ष", "त्रि", "य"]),
    ("नमस्ते", ["न", "म", "स्ते"]),
    ("क\u200c\u094dष", ["क\u200c\u094d", "ष"]),             # ZWNJ prevents the conjunct
    # Vietnamese, precomposed and decomposed: the same ten letters
    (NFC, ["t", "i", "ế", "n", "g", " ", "V", "i", "ệ", "t"]),
    (NFD, ["t", "i", "e\u0302\u0301", "n", "g", " ", "V", "i", "e\u0323\u0302", "t"]),
    # Hangul: L V T jamo sequences and precomposed syllables (GB6-GB8)
    ("\u1112\u1161\u11ab\u1100\u116e\u11a8", ["\u1112\u1161\u11ab", "\u1100\u116e\u11a8"]),
    ("\u1100\u1100\u1161", ["\u1100\u1100\u1161"]),
    ("\uac00\u11a8", ["\uac00\u11a8"]),                      # LV T
    ("\uac01\u1161", ["\uac01", "\u1161"]),                  # LVT does not take a V
    ("한국어", ["한", "국", "어"]),
    # CR LF is one cluster; controls break on both sides, even before a combining mark
    ("a\r\nb", ["a", "\r\n", "b"]),
    ("\n\r", ["\n", "\r"]),
    ("a\x00\u0301b", ["a", "\x00", "\u0301", "b"]),
    ("\u0600\u0661", ["\u0600\u0661"]),                      # Prepend
    ("", []),
])
def test_grapheme_clusters(text, clusters):
    assert graphemes(text) == clusters
    assert "".join(graphemes(text)) == text


def test_nfc_and_nfd_give_the_same_letters():
    assert [unicodedata.normalize("NFC", g) for g in graphemes(NFD)] == graphemes(NFC)


def test_text_units_whitespace_and_codepoints():
    # UAX #29 would attach the accent to the space; here whitespace is always a unit of its own
    assert graphemes(" \u0301") == [" \u0301"]
    assert text_units(" \u0301a") == [" ", "\u0301", "a"]
    assert text_units("a\r\nb") == ["a", "\r", "\n", "b"]
    assert text_units(REPORTED, "codepoints") == list(REPORTED)
    assert terminals(NFD) == [g for g in graphemes(NFD) if g != " "]
    assert terminals("bakiro mu pe", "graphemes") == terminals("bakiro mu pe", "codepoints") == list("bakiromupe")
    text = "ab " + FAMILY + "\tन्दी"
    assert [text[a:b] for a, b in terminal_spans(text)] == terminals(text)
    assert [text[a:b] for a, b in terminal_spans(text, "codepoints")] == terminals(text, "codepoints")
    assert is_control("\x00") and is_control("\x1b") and is_control("\x9f")
    assert not is_control("\t") and not is_control("\x85") and not is_control("a") and not is_control("\u200b")


def test_lone_surrogate_is_one_clear_error():
    assert check_text(NFD) is NFD
    with pytest.raises(TextError) as err:
        check_text("ab\ud800cd", "input.txt:4")
    message = str(err.value)
    assert message.startswith("[E110] input.txt:4: lone surrogate U+D800 at character 3")
    assert "\n" not in message and err.value.code == "E110"
    for call in (lambda: text_units("x\udfff"), lambda: terminals("x\udc80", "codepoints"),
                 lambda: read_corpus(["ok", "b\ud800"], source="t.txt")):
        with pytest.raises(TextError, match=r"\[E110\].*lone surrogate"):
            call()
    with pytest.raises(TextError, match=r"t\.txt:2: lone surrogate"):
        read_corpus(["ok", "b\ud800"], source="t.txt")


def test_the_units_setting():
    for cls in (GrammarSettings, FittedGrammarSettings, TopicModelSettings):
        # a component knows nlp.lang, so its default is the units of the language (resolve_units)
        expected = "auto" if cls is FittedGrammarSettings else "graphemes"
        assert check(cls, {"path": "g"} if cls is GrammarSettings else {}, "x").units == expected
        with pytest.raises(SettingError, match="units must be one of"):
            check(cls, {"units": "bytes"}, "x")
    assert UNITS == ("graphemes", "codepoints", "alnum-runs")
    with pytest.raises(TextError, match=r"\[E112\] unknown text units 'bytes'"):
        AdaptorGrammar(UNIGRAM, units="bytes")


# ---------------------------------------------------------------- corpus


def test_corpus_terminals_are_clusters_and_controls_are_boundaries(tmp_path):
    corpus = read_corpus([NFD, REPORTED + "\x00" + FAMILY, "", "क्षत्रिय"])
    assert corpus.sentences[0] == tuple(terminals(NFD))
    assert corpus.sentences[1] == ("y", "ú", "w", "a\u0301", "n", "t")
    assert corpus.sentences[2] == (FAMILY,)
    assert [p.boundary for p in corpus.pieces[1]] == [False, True, False]
    assert "\x00" not in corpus.alphabet() and "\u0301" not in corpus.alphabet()
    assert corpus.reassemble([list(s) for s in corpus.sentences])[1] == list(corpus.sentences[1]) + ["\x00", FAMILY]
    assert corpus.units == "graphemes"
    old = read_corpus([REPORTED], units="codepoints")
    assert old.sentences == [tuple(REPORTED)] and "\u0301" in old.alphabet()
    # a file with an encoded lone surrogate is not UTF-8: one coded line naming it
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"fine\nab\xed\xa0\x80cd\n")
    with pytest.raises(TextError, match=r"\[E111\] .*bad\.txt:2: not valid UTF-8 \(byte 0xed: an encoded lone "
                                        r"surrogate U\+D800 at column 3\)"):
        list(iter_lines(bad))
    crlf = tmp_path / "crlf.txt"
    crlf.write_bytes("น้ำ\r\nहिन्दी\r\n".encode("utf8"))
    assert read_corpus(crlf).sentences == [("น้ำ",), ("हि", "न्दी")]


# ---------------------------------------------------------------- the model


@pytest.fixture(scope="module")
def texts():
    return utterances()


@pytest.fixture(scope="module")
def model(texts):
    return AdaptorGrammar(UNIGRAM).fit(texts, iterations=6, seed=1)


def test_segment_never_cuts_a_cluster_and_spells_the_text(model, texts):
    assert model.units == "graphemes"
    assert "\u0301" not in model.compiled.term_index and FAMILY in model.compiled.term_index
    new = texts[:20] + [NFC, NFD, "क्षत्रिय हिन्दी\x00น้ำ" + FAMILY, REPORTED + "\x00\x00" + FLAG_FR, "\x00"]
    for text, words in zip(new, model.segment(new)):
        bare = "".join(text.split())
        assert "".join(words) == bare
        assert cuts(words) <= cuts(graphemes(bare)), (text, words)
        assert words.count("\x00") == text.count("\x00")  # a control character is a word of its own
    for words in model.training_segmentation():
        assert cuts(words) <= cuts(graphemes("".join(words)))
    with pytest.raises(TextError, match=r"\[E110\]"):
        model.segment(["ok", "b\ud800"])
    assert model.parse(["x\x00y"]) == [None]
    tree = model.parse([texts[0]])[0]
    assert tree is not None and "".join(tree.leaves()) == texts[0]


def test_units_are_saved_and_old_archives_read_code_points(model, texts, tmp_path):
    from spacy_ag.archive import archive_bytes

    model.save(tmp_path / "m")
    loaded = AdaptorGrammar.load(tmp_path / "m")
    assert loaded.units == "graphemes" and loaded.segment(texts[:5]) == model.segment(texts[:5])
    meta = model._meta()
    del meta["units"]  # as written before the setting existed
    old = AdaptorGrammar.from_bytes(archive_bytes("model", model._grammar_text(), model._arrays(), meta))
    assert old.units == "codepoints"


def test_codepoints_keep_the_old_behaviour(texts):
    cp = AdaptorGrammar(UNIGRAM, units="codepoints").fit(texts, iterations=2, seed=1)
    assert "\u0301" in cp.compiled.term_index and FAMILY not in cp.compiled.term_index
    assert cp._terminals(REPORTED) == list(REPORTED)
    for text, words in zip(texts, cp.segment(texts)):
        assert "".join(words) == text
    with pytest.raises(TextError, match=r"\[E113\].*read as graphemes"):
        cp.fit(read_corpus(texts), iterations=1)


def test_ascii_results_are_bit_identical():
    rng = random.Random(0)
    lexicon = ["ba", "kiro", "mu", "pe", "N3", "gOt", "zEf", "&p", "NOp"]
    ascii_texts = ["".join(rng.choice(lexicon) for _ in range(rng.randint(1, 4))) for _ in range(40)]
    g = AdaptorGrammar(UNIGRAM, units="graphemes").fit(ascii_texts, iterations=5, seed=2)
    c = AdaptorGrammar(UNIGRAM, units="codepoints").fit(ascii_texts, iterations=5, seed=2)
    assert g.segment(ascii_texts) == c.segment(ascii_texts)
    assert g.training_segmentation() == c.training_segmentation()
    a, b = g._arrays(), c._arrays()
    assert a.keys() == b.keys() and all(np.array_equal(a[k], b[k]) for k in a)


def test_grammar_text_keeps_cluster_terminals(model):
    from spacy_ag.grammar import parse_grammar_text, write_pycfg

    text = write_pycfg(model.grammar, include_options=True)
    back = parse_grammar_text(text, fmt="pycfg", source="x", start=model.grammar.start)
    assert sorted(back.terminals) == sorted(model.grammar.terminals)
    assert {FAMILY, "न्दी", "e\u0323\u0302"} <= set(back.terminals)


def test_uncovered_cluster_is_named_with_its_code_points():
    grammar = "1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> a\n"
    with pytest.raises(ValueError, match=r"character 'a\u0301' \(U\+0061 U\+0301\)"):
        AdaptorGrammar(grammar).fit(["a\u0301"], iterations=1)


# ---------------------------------------------------------------- spaCy


def _examples(nlp, texts):
    return lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in texts]


@pytest.fixture(scope="module")
def seg_nlp(texts):
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1",
                                                          "iterations": 5, "seed": 1, "boundary_chars": ""}}})
    nlp.initialize(_examples(nlp, texts))
    return nlp


def test_segmenter_keeps_clusters_whole_and_the_text_identical(seg_nlp, texts):
    new = texts[:10] + [NFC + " " + NFD, "  क्षत्रिय\n" + FAMILY + "\x00" + REPORTED + " ", "\x00", "🇫🇷🇩🇪 🇫"]
    for text, doc in zip(new, seg_nlp.pipe(new)):
        assert doc.text == text
        assert cuts(t.text_with_ws for t in doc) <= cuts(text_units(text)), [t.text for t in doc]
        assert sum(t.text == "\x00" for t in doc) == text.count("\x00")
        assert seg_nlp(text).text == text


@pytest.mark.parametrize("text", ["ab\ud800", "\udcff", NFC + "\ud83d"])
def test_lone_surrogate_through_nlp(seg_nlp, text):
    with pytest.raises(TextError) as err:
        seg_nlp(text)
    assert str(err.value).startswith("[E110] text: lone surrogate") and "\n" not in str(err.value)
    with pytest.raises(TextError, match=r"\[E110\]"):
        list(seg_nlp.pipe(["fine", text]))


def test_unfitted_segmenter_falls_back_to_clusters():
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1"}}})
    with pytest.warns(UserWarning, match="not fitted"):
        doc = nlp(REPORTED + " " + FAMILY)
    assert [t.text for t in doc] == ["y", "ú", "w", "a\u0301", "n", "t", FAMILY]
    with pytest.raises(TextError, match=r"\[E110\]"):
        nlp("\ud800")
    cp = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1",
                                                         "units": "codepoints"}}})
    with pytest.warns(UserWarning):
        assert len(cp(REPORTED)) == len(REPORTED)


def test_segmenter_settings_choose_the_units(texts):
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1", "iterations": 2,
                                                          "boundary_chars": "", "units": "codepoints"}}})
    nlp.initialize(_examples(nlp, texts[:20]))
    assert nlp.tokenizer.model.units == "codepoints"
    restored = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1"}}})
    restored.tokenizer.from_bytes(nlp.tokenizer.to_bytes())
    assert restored.tokenizer.model.units == "codepoints"  # a model keeps the units it was trained on


@pytest.mark.parametrize("mode, grammar", [("doc", "unigram"), ("token", "morph")])
def test_parser_offsets_are_character_offsets_of_clusters(texts, mode, grammar):
    # the segmenter as tokenizer: spaCy's default one would cut the ZWJ family into five tokens
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1",
                                                          "iterations": 2, "boundary_chars": ""}}})
    nlp.add_pipe("ag_parser", config={"grammar": grammar, "mode": mode, "iterations": 3, "compact": False})
    train = [" ".join(WORDS[i % len(WORDS)] for i in range(k, k + 3)) for k in range(len(WORDS))]
    nlp.initialize(_examples(nlp, train))
    text = "हिन्दी " + WORDS[1] + " " + FAMILY + REPORTED  # clusters seen in training (NFD Việt)
    doc = nlp(text)
    group = doc.spans["ag"]
    assert len(group) > 0
    allowed = cuts(text_units(text))
    for start, end in zip(group.attrs["start_char"], group.attrs["end_char"]):
        assert start in allowed and end in allowed and start < end
        assert not doc.text[start].isspace() and not doc.text[end - 1].isspace()
    if mode == "doc":
        roots = [i for i, p in enumerate(group.attrs["parent"]) if p == -1]
        assert [(group.attrs["start_char"][i], group.attrs["end_char"][i]) for i in roots] == [(0, len(text))]


def test_topics_spell_words_with_clusters():
    from spacy_ag.topics import TopicModel

    rng = random.Random(5)
    docs = [[rng.choice(WORDS[:8]) for _ in range(6)] for _ in range(30)]
    tm = TopicModel(2).fit(docs, passes=1, seed=0)
    index = tm.compiled.term_index
    assert tm.units == "graphemes" and FAMILY in index and "e\u0323\u0302" in index and "\u0302" not in index
    for topic in range(2):
        assert {word for word, _ in tm.top_words(topic, 5)} <= set(WORDS[:8])
    again = TopicModel.from_bytes(tm.to_bytes())
    assert again.units == "graphemes"
    assert np.allclose(again.infer(docs[:3]), tm.infer(docs[:3]))
    cp = TopicModel(2, units="codepoints").fit(docs[:10], passes=1)
    assert FAMILY not in cp.compiled.term_index and "\u200d" in cp.compiled.term_index


# ---------------------------------------------------------------- the command line


@pytest.fixture(scope="module")
def model_dir(model, tmp_path_factory):
    path = tmp_path_factory.mktemp("units") / "model"
    model.save(path)
    return path


def test_cli_segment_keeps_clusters(model_dir, tmp_path):
    lines = [NFD, "क्षत्रिय\x00" + FAMILY + "न्दी", REPORTED + " " + FLAG_FR, ""]
    source = tmp_path / "input.txt"
    source.write_text("\n".join(lines) + "\n", encoding="utf8")
    result = CliRunner().invoke(app, ["segment", str(model_dir), str(source)])
    assert result.exit_code == 0, result.output
    out = result.stdout.split("\n")[:len(lines)]
    for line, printed in zip(lines, out):
        words = printed.split(" ") if printed else []
        assert "".join(words) == "".join(line.split())
        assert cuts(words) <= cuts(graphemes("".join(line.split())))
    assert out[1].split(" ").count("\x00") == 1


def test_cli_segment_lone_surrogate_is_one_line(model_dir, tmp_path):
    source = tmp_path / "input.txt"
    source.write_bytes("น้ำ\n".encode("utf8") + b"ab\xed\xa0\x80\n")
    result = CliRunner().invoke(app, ["segment", str(model_dir), str(source)])
    assert_one_error_line(result, "[E111]", "input.txt:2", "lone surrogate U+D800")
    # text decoded with surrogateescape (stdin of a C locale, or PYTHONIOENCODING below) holds real lone
    # surrogates: the same one line, exit 1, no traceback
    env = {**os.environ, "PYTHONIOENCODING": "utf-8:surrogateescape"}
    env.pop("SPACY_AG_DEBUG", None)
    proc = subprocess.run([sys.executable, "-m", "spacy_ag", "segment", str(model_dir), "-"],
                          input="น้ำ\n".encode("utf8") + b"ab\xff\n", capture_output=True, env=env, cwd=REPO)
    err = proc.stderr.decode("utf8", "replace").strip().splitlines()
    assert proc.returncode == 1 and len(err) == 1, proc.stderr
    assert "[E110]" in err[0] and "-:2: lone surrogate U+DCFF" in err[0] and "Traceback" not in err[0]


# ---------------------------------------------------------------- numbers and Latin words as units


@pytest.mark.parametrize("text, units", [
    ("\uff12\uff10\uff10\uff11年春", ["\uff12\uff10\uff10\uff11", "年", "春"]),  # full-width digits
    ("共1.3万人", ["共", "1.3", "万", "人"]),
    ("占\uff19\uff10\uff05的", ["占", "\uff19\uff10\uff05", "的"]),               # ９０％
    ("3\uff0f4和1,000", ["3\uff0f4", "和", "1,000"]),                             # 3／4
    ("\uff11\uff0e\uff13亿", ["\uff11\uff0e\uff13", "亿"]),                     # １．３
    ("WTO与AM21B型", ["WTO", "与", "AM21B", "型"]),
    ("\uff21\uff22股", ["\uff21\uff22", "股"]),                                   # full-width ＡＢ
    ("5%5", ["5%", "5"]),            # a percent sign ends the number
    ("a.b, 3.", ["a", ".", "b", ",", " ", "3", "."]),  # a separator joins only between two digits
    ("café ok", ["café", " ", "ok"]),                # a Latin word keeps its accented letters
    ("x\u0301y", ["x\u0301y"]),                      # and a combining mark stays with its letter
    ("水\x00５", ["水", "\x00", "５"]),              # a control character ends a run
    ("", []),
])
def test_alnum_runs_are_one_unit(text, units):
    assert text_units(text, "alnum-runs") == units
    assert "".join(units) == text
    assert alnum_runs(text_units(text)) == units  # the same as runs joined over the graphemes


def test_alnum_runs_train_segment_and_round_trip(tmp_path):
    """Numbers and Latin words never get a boundary inside, and '．' splits only outside a number."""
    rng = random.Random(3)
    lexicon = ["山水", "木", "火车", "日月明", "\uff12\uff10\uff10\uff11年", "WTO", "人"]
    texts = ["".join(rng.choice(lexicon) for _ in range(rng.randint(2, 6))) for _ in range(120)]
    texts += ["\uff13\uff0e\uff15万人\uff0e山水"]
    split = frozenset("．，。")
    model = AdaptorGrammar(UNIGRAM, units="alnum-runs", split_at=split).fit(texts, iterations=8, seed=2)
    assert "\uff12\uff10\uff10\uff11" in model.compiled.term_index and "W" not in model.compiled.term_index
    segmented = model.segment(texts)
    for text, words in zip(texts, segmented):
        assert "".join(words) == text
        assert cuts(words) <= cuts(text_units(text, "alnum-runs")), (text, words)
    assert segmented[-1][-3:] == ["\uff0e", "山", "水"] or segmented[-1][-2:] == ["\uff0e", "山水"]
    assert "\uff13\uff0e\uff15" in "|".join(segmented[-1])  # ３．５ is one unit, so never split
    model.save(tmp_path / "m")
    restored = AdaptorGrammar.load(tmp_path / "m")
    assert restored.units == "alnum-runs" and restored.segment(texts) == segmented


@pytest.mark.parametrize("units", ["graphemes", "codepoints"])
def test_the_ascii_terminals_are_the_units_without_whitespace(units):
    """`terminals` takes a shortcut on ASCII text; it must drop exactly what `isspace` drops."""
    rng = random.Random(0)
    alphabet = [chr(c) for c in range(128)]
    for _ in range(300):
        text = "".join(rng.choice(alphabet) for _ in range(rng.randint(0, 40)))
        assert terminals(text, units) == [u for u in text_units(text, units) if not u.isspace()]
