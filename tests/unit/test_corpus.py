"""Corpus reading (docs/algorithms.md §1.7.3), punctuation chunking and synthetic data."""
import pytest

from spacy_ag.corpus import DEFAULT_PUNCTUATION, Corpus, iter_lines, read_corpus, split_chunks
from spacy_ag.evaluation import segmentation_scores
from spacy_ag.synthetic import generate_corpus, iter_corpus, make_lexicon, write_gold, write_raw


def _write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


# ---------------------------------------------------------------- modes

def test_chars_mode_ignores_whitespace():
    c = read_corpus(["ba kiro", "mu"])
    assert c.sentences == [tuple("bakiro"), tuple("mu")]
    assert c.lines == [1, 2]
    assert c.alphabet() == sorted(set("bakiromu"))
    assert c.gold_words is None
    assert len(c) == 2


def test_chars_mode_gold_keeps_words():
    c = read_corpus(["ba kiro mu", "pe N3 gOt"], gold=True)
    assert c.sentences[0] == tuple("bakiromu")
    assert c.gold_words == [["ba", "kiro", "mu"], ["pe", "N3", "gOt"]]


def test_tokens_mode_like_py_cfg():
    c = read_corpus(["y u w a n t", "D 6  b U k", "ab cd"], mode="tokens")
    assert c.sentences == [("y", "u", "w", "a", "n", "t"), ("D", "6", "b", "U", "k"), ("ab", "cd")]
    assert "ab" in c.alphabet()
    with pytest.raises(ValueError, match="gold"):
        read_corpus(["a b"], mode="tokens", gold=True)
    with pytest.raises(ValueError, match="mode"):
        read_corpus(["a b"], mode="words")


def test_blank_lines_skipped_but_line_numbers_kept():
    c = read_corpus(["ab", "", "   ", "cd"], gold=True)
    assert c.sentences == [("a", "b"), ("c", "d")]
    assert c.lines == [1, 4]
    assert c.utterance_lines == [1, 2, 3, 4]
    assert c.gold_words == [["ab"], [], [], ["cd"]]
    assert c.first_line_of("c") == 4
    assert c.first_line_of("a") == 1
    assert c.first_line_of("z") is None
    # reassembly gives one (possibly empty) utterance per source line
    assert c.reassemble([["a", "b"], ["cd"]]) == [["a", "b"], [], [], ["cd"]]


def test_cjk_crlf_bom_file(tmp_path):
    f = _write(tmp_path / "zh.txt", "\ufeff我们  去\u3000了\r\n\r\n好的\r\n")
    c = read_corpus(f, gold=True)
    assert c.path == str(f)
    assert c.sentences == [tuple("我们去了"), tuple("好的")]
    assert c.lines == [1, 3]
    assert c.gold_words == [["我们", "去", "了"], [], ["好的"]]
    assert "\ufeff" not in c.alphabet() and "\r" not in c.alphabet()
    assert list(iter_lines(f)) == [(1, "我们  去\u3000了"), (2, ""), (3, "好的")]


def test_source_name_and_hand_built_corpus():
    c = read_corpus(["ab"], source="mem")
    assert c.path == "mem"
    h = Corpus(sentences=[("a", "b")], lines=[7])
    assert h.utterance_lines == [7] and h.alphabet() == ["a", "b"]
    assert h.reassemble([["ab"]]) == [["ab"]]


def test_missing_file_and_bad_utf8(tmp_path):
    with pytest.raises(FileNotFoundError, match="nope.txt"):
        read_corpus(tmp_path / "nope.txt")
    bad = tmp_path / "bad.txt"
    bad.write_bytes(b"ok\nfine\ncaf\xe9\n")
    with pytest.raises(ValueError, match=r"bad\.txt:3: not valid UTF-8"):
        read_corpus(bad)


# ---------------------------------------------------------------- split_at

def test_split_chunks_flags_and_round_trip():
    text = "“你好，世界。”好"
    chunks = split_chunks(text, DEFAULT_PUNCTUATION)
    assert chunks == [("“", True), ("你好", False), ("，", True), ("世界", False),
                      ("。", True), ("”", True), ("好", False)]
    assert "".join(t for t, _ in chunks) == text
    assert split_chunks("", DEFAULT_PUNCTUATION) == []
    assert split_chunks(("a", ",", "b"), {","}) == [(("a",), False), ((",",), True), (("b",), False)]


def test_default_punctuation_contents():
    for ch in "，。、；：？！“”‘’（）《》【】—…·「」『』" + ".,;:?!\"'()[]{}-":
        assert ch in DEFAULT_PUNCTUATION, ch
    assert "我" not in DEFAULT_PUNCTUATION and "a" not in DEFAULT_PUNCTUATION


def test_split_at_corpus_and_reassembly_round_trip():
    gold = ["我们 去 ， 好 的 。", "", "“ 你好 ”", "没有"]
    c = read_corpus(gold, gold=True, split_at=DEFAULT_PUNCTUATION)
    # only non-punctuation chunks are parsed
    assert c.sentences == [tuple("我们去"), tuple("好的"), tuple("你好"), tuple("没有")]
    assert c.lines == [1, 1, 3, 4]
    assert "，" not in c.alphabet()
    assert [p.boundary for p in c.pieces[0]] == [False, True, False, True]
    # segment each chunk by its gold words, reassemble, compare with the gold lines
    gold_chunks = [["我们", "去"], ["好", "的"], ["你好"], ["没有"]]
    back = c.reassemble(gold_chunks)
    assert back == c.gold_words
    assert segmentation_scores(back, c.gold_words)["token_f"] == 1.0
    # a different chunk segmentation still reassembles to the full line
    assert c.reassemble([["我", "们去"], ["好的"], ["你", "好"], ["没", "有"]])[0] == [
        "我", "们去", "，", "好的", "。"]
    with pytest.raises(ValueError, match="1: segmentation"):
        c.reassemble([["我们"], ["好", "的"], ["你好"], ["没有"]])
    with pytest.raises(ValueError, match="segmentations"):
        c.reassemble([["我们去"]])


def test_split_at_tokens_mode():
    c = read_corpus(["a b , c"], mode="tokens", split_at={","})
    assert c.sentences == [("a", "b"), ("c",)]
    assert c.reassemble([["ab"], ["c"]]) == [["ab", ",", "c"]]


# ---------------------------------------------------------------- synthetic

def test_make_lexicon_distinct_and_deterministic():
    lex = make_lexicon(50, alphabet="abcdef", min_len=2, max_len=4, seed=3)
    assert len(lex) == 50 == len(set(lex))
    assert all(2 <= len(w) <= 4 and set(w) <= set("abcdef") for w in lex)
    assert lex == make_lexicon(50, alphabet="abcdef", min_len=2, max_len=4, seed=3)
    assert lex != make_lexicon(50, alphabet="abcdef", min_len=2, max_len=4, seed=4)
    assert sorted(make_lexicon(4, alphabet="ab", min_len=2, max_len=2)) == ["aa", "ab", "ba", "bb"]
    with pytest.raises(ValueError):
        make_lexicon(5, alphabet="ab", min_len=2, max_len=2)


def test_generate_corpus_deterministic_and_zipfian():
    lex = make_lexicon(30, seed=1)
    utts = generate_corpus(lex, 400, mean_words=4, zipf=1.1, seed=7)
    assert utts == generate_corpus(lex, 400, mean_words=4, zipf=1.1, seed=7)
    assert utts != generate_corpus(lex, 400, mean_words=4, zipf=1.1, seed=8)
    assert len(utts) == 400 and all(utts)
    tokens = [w for u in utts for w in u]
    assert set(tokens) <= set(lex)
    assert 3.5 < len(tokens) / len(utts) < 4.5
    assert tokens.count(lex[0]) > tokens.count(lex[-1])  # rank 1 beats rank 30


def test_generate_corpus_collocations():
    lex = make_lexicon(20, seed=2)
    pairs = [(lex[3], lex[5])]
    utts = generate_corpus(lex, 300, seed=0, collocations=pairs, colloc_prob=0.5)
    bigrams = sum(1 for u in utts for a, b in zip(u, u[1:]) if (a, b) == pairs[0])
    assert bigrams > 50
    auto = generate_corpus(lex, 50, seed=0, collocations=3)
    assert auto == generate_corpus(lex, 50, seed=0, collocations=3)


def test_iter_corpus_draws_lazily_up_to_the_characters_asked():
    lex = make_lexicon(30, seed=1)
    utts = list(iter_corpus(lex, 5000, seed=3, block=100))  # several blocks
    chars = [sum(map(len, u)) for u in utts]
    assert sum(chars) >= 5000 > sum(chars) - chars[-1]  # stops at the utterance that reaches it
    assert utts == list(iter_corpus(lex, 5000, seed=3, block=100))
    assert utts[:100] == generate_corpus(lex, 100, seed=(3, 0))
    assert utts[100:200] != utts[:100]  # each block has its own seed
    # a corpus far too large to hold yields its first utterance at once
    assert next(iter_corpus(lex, 10 ** 12, seed=3, block=100)) == utts[0]


def test_synthetic_files_round_trip(tmp_path):
    utts = generate_corpus(make_lexicon(10, seed=0), 20, seed=0)
    write_gold(tmp_path / "gold.txt", utts)
    write_raw(tmp_path / "raw.txt", utts)
    raw = read_corpus(tmp_path / "raw.txt")
    gold = read_corpus(tmp_path / "gold.txt", gold=True)
    assert raw.sentences == gold.sentences == [tuple("".join(u)) for u in utts]
    assert gold.gold_words == utts
