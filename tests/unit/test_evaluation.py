"""Segmentation metrics of docs/algorithms.md §5.2 (test vector A.6) and file scoring."""
import pytest

from spacy_ag.corpus import DEFAULT_PUNCTUATION
from spacy_ag.evaluation import (
    evaluate_files,
    format_scores,
    main,
    read_segmented,
    segmentation_scores,
    spans_from_words,
    words_from_boundaries,
)


def test_worked_example_a6():
    s = segmentation_scores([["bakiro", "mu"]], [["ba", "kiro", "mu"]])
    assert s["token_p"] == pytest.approx(1 / 2)
    assert s["token_r"] == pytest.approx(1 / 3)
    assert s["token_f"] == pytest.approx(0.4)
    assert s["boundary_p"] == pytest.approx(1.0)
    assert s["boundary_r"] == pytest.approx(1 / 2)
    assert s["boundary_f"] == pytest.approx(2 / 3)
    assert s["type_p"] == pytest.approx(1 / 2)
    assert s["type_r"] == pytest.approx(1 / 3)
    assert s["type_f"] == pytest.approx(0.4)
    # with edges: predicted {0,6,8}, gold {0,2,6,8}
    assert s["boundary_all_p"] == pytest.approx(1.0)
    assert s["boundary_all_r"] == pytest.approx(3 / 4)
    assert (s["n_utterances"], s["n_pred_tokens"], s["n_gold_tokens"]) == (1, 2, 3)


def test_strings_are_split_on_whitespace():
    assert segmentation_scores(["bakiro mu"], ["ba kiro mu"]) == segmentation_scores(
        [["bakiro", "mu"]], [["ba", "kiro", "mu"]])


def test_perfect_segmentation_scores_one():
    gold = [["ba", "kiro", "mu"], ["pe", "N3", "gOt"], ["hi"]]
    s = segmentation_scores(gold, gold)
    for k in ("token", "boundary", "boundary_all", "type"):
        for m in "prf":
            assert s[f"{k}_{m}"] == 1.0, k + m


def test_micro_average_over_utterances():
    # utterance 1 all wrong at token level (0/1 vs 2 gold), utterance 2 right (3/3)
    s = segmentation_scores([["abcd"], ["a", "b", "c"]], [["ab", "cd"], ["a", "b", "c"]])
    assert s["token_p"] == pytest.approx(3 / 4)  # micro: 3 correct / 4 predicted
    assert s["token_r"] == pytest.approx(3 / 5)
    # boundaries: pred {} and {1,2}; gold {2} and {1,2}
    assert s["boundary_p"] == pytest.approx(1.0)
    assert s["boundary_r"] == pytest.approx(2 / 3)


def test_boundary_noedge_vs_all_single_word_utterances():
    # No internal boundaries anywhere: noedge is 0/0 -> 0, with edges it is perfect.
    s = segmentation_scores([["abc"], ["de"]], [["abc"], ["de"]])
    assert (s["boundary_p"], s["boundary_r"], s["boundary_f"]) == (0.0, 0.0, 0.0)
    assert s["boundary_all_f"] == 1.0
    assert s["token_f"] == 1.0


def test_types_are_corpus_level_sets():
    # "ab" predicted twice and gold has it once: types count once each.
    s = segmentation_scores([["ab", "ab"], ["x", "y"]], [["ab", "ab"], ["xy"]])
    # pred lexicon {ab, x, y}, gold {ab, xy}
    assert s["type_p"] == pytest.approx(1 / 3)
    assert s["type_r"] == pytest.approx(1 / 2)
    assert (s["n_pred_types"], s["n_gold_types"]) == (3, 2)


def test_exclude_drops_single_char_tokens_from_tokens_and_types():
    gold = [["我们", "去", "，", "好"]]
    pred = [["我", "们去", "，", "好"]]
    full = segmentation_scores(pred, gold)
    assert full["token_p"] == pytest.approx(2 / 4) and full["token_r"] == pytest.approx(2 / 4)
    nop = segmentation_scores(pred, gold, exclude=DEFAULT_PUNCTUATION)
    assert (nop["n_pred_tokens"], nop["n_gold_tokens"]) == (3, 3)
    assert nop["token_p"] == pytest.approx(1 / 3) and nop["token_r"] == pytest.approx(1 / 3)
    assert nop["n_gold_types"] == 3 and "，" not in str(nop)
    # boundaries are not affected by exclude
    assert nop["boundary_f"] == full["boundary_f"]
    # a multi-character token containing an excluded char still counts
    s = segmentation_scores([["a,b"]], [["a,b"]], exclude={","})
    assert s["n_gold_tokens"] == 1


def test_character_mismatch_names_utterance():
    with pytest.raises(ValueError, match=r"utterance 2: .*'abd'.*'abc'"):
        segmentation_scores([["x"], ["ab", "d"]], [["x"], ["abc"]])
    with pytest.raises(ValueError, match="2 predicted utterances but 1 gold"):
        segmentation_scores([["a"], ["b"]], [["a"]])


def test_zero_over_zero_and_empty_utterances():
    s = segmentation_scores([[], []], [[], []])
    assert all(s[f"{k}_{m}"] == 0.0 for k in ("token", "boundary", "boundary_all", "type") for m in "prf")
    s = segmentation_scores([[], ["ab"]], [[], ["ab"]])
    assert s["token_f"] == 1.0 and s["boundary_all_p"] == 1.0


def test_spans_and_boundaries_helpers():
    assert spans_from_words(["ba", "kiro", "mu"]) == [(0, 2), (2, 6), (6, 8)]
    assert spans_from_words([]) == []
    with pytest.raises(ValueError):
        spans_from_words(["a", ""])
    assert words_from_boundaries("bakiromu", [2, 6]) == ["ba", "kiro", "mu"]
    assert words_from_boundaries("bakiromu", [0, 6, 8, 6]) == ["bakiro", "mu"]
    assert words_from_boundaries("abc", []) == ["abc"]
    assert words_from_boundaries("", []) == []
    with pytest.raises(ValueError):
        words_from_boundaries("abc", [4])


def test_format_scores_table():
    text = format_scores(segmentation_scores(["bakiro mu"], ["ba kiro mu"]))
    lines = text.splitlines()
    assert lines[0].split() == ["P", "R", "F"]
    assert lines[1].split() == ["token", "0.5000", "0.3333", "0.4000"]
    assert [l.split()[0] for l in lines[1:5]] == ["token", "boundary", "boundary_all", "type"]
    assert len({len(l) for l in lines[:5]}) == 1  # aligned


def _write(path, text, encoding="utf-8"):
    path.write_bytes(text.encode(encoding))
    return path


def test_read_segmented_formats(tmp_path):
    # BOM, CRLF, PKU two-space separators, U+3000, a blank line, no final newline
    f = _write(tmp_path / "g.txt", "\ufeff我们  去\r\n\r\n好\u3000的 ！\r\nab")
    assert read_segmented(f) == [["我们", "去"], [], ["好", "的", "！"], ["ab"]]
    assert read_segmented(f, drop_empty=True) == [["我们", "去"], ["好", "的", "！"], ["ab"]]
    g = _write(tmp_path / "h.txt", "a|b||c\n")
    assert read_segmented(g, sep="|") == [["a", "b", "c"]]


def test_evaluate_files(tmp_path):
    gold = _write(tmp_path / "gold.txt", "ba kiro mu\r\n\r\npe N3 gOt\r\n")
    pred = _write(tmp_path / "pred.txt", "bakiro mu\n\npe N3 gOt\n")
    s = evaluate_files(pred, gold)
    assert s["n_utterances"] == 3
    assert s["token_p"] == pytest.approx(4 / 5)
    assert s["token_r"] == pytest.approx(4 / 6)


def test_evaluate_files_errors(tmp_path):
    gold = _write(tmp_path / "gold.txt", "ab c\n\nde\n")
    short = _write(tmp_path / "short.txt", "abc\nde\n")
    with pytest.raises(ValueError, match=r"short\.txt has 2 lines but .*gold\.txt has 3"):
        evaluate_files(short, gold)
    # dropping blank lines in both files aligns them
    assert evaluate_files(short, gold, drop_empty=True)["n_utterances"] == 2
    bad = _write(tmp_path / "bad.txt", "abc\n\ndf\n")
    with pytest.raises(ValueError, match=r"bad\.txt:3: characters 'df' differ from .*gold\.txt:3: 'de'"):
        evaluate_files(bad, gold)
    with pytest.raises(FileNotFoundError, match="missing.txt"):
        evaluate_files(tmp_path / "missing.txt", gold)
    latin = _write(tmp_path / "latin.txt", "abc\n\ncaf\xe9\n", encoding="latin-1")
    with pytest.raises(ValueError, match=r"latin\.txt:3: not valid UTF-8"):
        evaluate_files(latin, gold)


def test_cli(tmp_path, capsys):
    gold = _write(tmp_path / "gold.txt", "我们 去 ， 好\n")
    pred = _write(tmp_path / "pred.txt", "我 们去 ， 好\n")
    assert main([str(pred), str(gold), "--no-punct"]) == 0
    out = capsys.readouterr().out
    assert "token" in out and "without punctuation" in out
    assert main([str(pred), str(tmp_path / "nope.txt")]) == 1
    assert "nope.txt" in capsys.readouterr().err
