"""wordseg's formats: tagged and prepared text in, its segmented output out, its scores (docs/input-formats.md).

The expected scores of `test_evaluate_agrees_with_wordseg_eval_worked_by_hand`
are counted by hand from wordseg-eval's definitions (wordseg/evaluate.py):
token spans, word-internal boundaries (boundary_noedge), boundaries with both
utterance edges (boundary_all) and the sets of word types, each P = c/pred,
R = c/gold, F = 2c/(pred + gold), printed with 4 significant digits.
"""
from __future__ import annotations

import json
from pathlib import Path

import pytest
import spacy
from typer.testing import CliRunner

from spacy_ag.cli import app
from spacy_ag.components.readers import SegmentedCorpus, TextCorpus
from spacy_ag.errors import TextError
from spacy_ag.evaluation import evaluate_files
from spacy_ag.input_formats import parse_wordseg_line, read_gold_words, wordseg_units
from spacy_ag.synthetic import generate_corpus, make_lexicon
from conftest import assert_one_error_line

REPO = Path(__file__).resolve().parents[2]
BRENT = REPO / "configs" / "brent-unigram.cfg"
#: A short run of the shipped Brent config: batch initialisation, 4 sweeps, no checkpoints.
SHORT = ("--training.iterations", 4, "--training.checkpoint_every", 0, "--training.eval_every", 0,
         "--sampler.init", "batch")


def run(*args, input=None):
    return CliRunner().invoke(app, [str(a) for a in args], input=input)


def tagged_line(words, syllables=()) -> str:
    """wordseg's tagged text of a list of words (each a list of units); `syllables`: the indices of
    words cut into two syllables after their first unit."""
    out = []
    for i, units in enumerate(words):
        if i in syllables and len(units) > 1:
            out.append(" ".join(units[:1]) + " ;esyll " + " ".join(units[1:]) + " ;esyll ;eword")
        else:
            out.append(" ".join(units) + " ;esyll ;eword")
    return " ".join(out)


@pytest.fixture(scope="module")
def corpus(tmp_path_factory):
    """60 utterances of one-character units as tagged, prepared, gold and raw text (line 31 blank)."""
    root = tmp_path_factory.mktemp("wordseg")
    lexicon = make_lexicon(8, alphabet="abdegiklmnoptu", min_len=2, max_len=4, seed=5)
    gold = generate_corpus(lexicon, 60, mean_words=3.0, seed=6)
    gold = gold[:30] + [[]] + gold[30:]
    files = {
        "tags.txt": [tagged_line([list(w) for w in u], syllables={0}) for u in gold],
        "prep.txt": [" ".join(" ".join(w) for w in u) for u in gold],
        "gold.txt": [" ".join(u) for u in gold],
        "raw.txt": ["".join(u) for u in gold],
    }
    for name, lines in files.items():
        (root / name).write_text("\n".join(lines) + "\n", encoding="utf8")
    return {"root": root, "gold": gold}


@pytest.fixture(scope="module")
def trained(corpus):
    """configs/brent-unigram.cfg trained on the tagged text."""
    out = corpus["root"] / "tags-out"
    result = run("train", BRENT, "--paths.train", corpus["root"] / "tags.txt", "--corpus.format", "wordseg-tags",
                 "--output", out, *SHORT)
    assert result.exit_code == 0, result.output
    return out


def test_tagged_and_prepared_lines():
    u = parse_wordseg_line("y u ;esyll ;eword w a ;esyll n t ;esyll ;eword", "wordseg-tags")
    assert u.units == ["y", "u", "w", "a", "n", "t"] and u.words == ["yu", "want"]
    assert parse_wordseg_line("hh ax ;eword l ow", "wordseg-tags").words == ["hhax", "low"]  # no closing tag
    assert parse_wordseg_line("", "wordseg-tags") == ([], [])
    assert parse_wordseg_line("hh ax  l ow", "wordseg-prepared") == (["hh", "ax", "l", "ow"], None)
    with pytest.raises(TextError, match=r"\[E151\] f.txt:4: a ';eword' tag in wordseg prepared text"):
        parse_wordseg_line("y u ;eword", "wordseg-prepared", "f.txt", 4)
    assert wordseg_units("p o ;esyll ;eword l i m r ;esyll ;eword") == wordseg_units("p o l i m r") == list("polimr")


def test_engine_config_trains_on_tagged_and_prepared_text_as_on_gold_text(corpus, trained):
    """The tagged file trains exactly as the gold text it encodes (same terminals, same seed), and is
    scored against its ;eword words; so does the prepared file with paths.gold."""
    root = corpus["root"]
    from_gold = root / "gold-out"
    result = run("train", BRENT, "--paths.train", root / "gold.txt", "--output", from_gold, *SHORT)
    assert result.exit_code == 0, result.output
    from_prepared = root / "prep-out"
    result = run("train", BRENT, "--paths.train", root / "prep.txt", "--corpus.format", "wordseg-prepared",
                 "--paths.gold", root / "gold.txt", "--output", from_prepared, *SHORT)
    assert result.exit_code == 0, result.output
    segmentation = (trained / "segmentation.txt").read_text(encoding="utf8")
    assert segmentation == (from_gold / "segmentation.txt").read_text(encoding="utf8")
    assert segmentation == (from_prepared / "segmentation.txt").read_text(encoding="utf8")
    arrays = (trained / "model" / "arrays.npz").read_bytes()
    assert arrays == (from_gold / "model" / "arrays.npz").read_bytes()
    assert [line.replace(" ", "") for line in segmentation.splitlines()] == \
        (root / "raw.txt").read_text(encoding="utf8").splitlines()
    scores = evaluate_files(trained / "segmentation.txt", root / "gold.txt")
    saved = (trained / "scores.json").read_text(encoding="utf8")
    assert saved == (from_gold / "scores.json").read_text(encoding="utf8")
    assert json.loads(saved)["token_f"] == pytest.approx(scores["token_f"])
    assert json.loads(saved)["n_gold_tokens"] == sum(len(u) for u in corpus["gold"])


def test_a_streamed_run_reads_tagged_text_as_gold_text(corpus, tmp_path):
    """inference.stream reads the file line by line: the tagged file, its segmentation and scores are
    those of the gold text."""
    online = REPO / "configs" / "brent-unigram-online.cfg"
    args = ("--inference.stream", "true", "--online.batch_size", 20, "--training.checkpoint_every", 0)
    for name, extra in (("tags.txt", ("--corpus.format", "wordseg-tags")), ("gold.txt", ())):
        result = run("train", online, "--paths.train", corpus["root"] / name, *extra, *args, "--output",
                     tmp_path / name)
        assert result.exit_code == 0, result.output
    for output in ("segmentation.txt", "scores.json"):
        assert (tmp_path / "tags.txt" / output).read_bytes() == (tmp_path / "gold.txt" / output).read_bytes()
    assert json.loads((tmp_path / "tags.txt" / "scores.json").read_text())["n_utterances"] == 61


def test_units_of_several_characters(tmp_path):
    """grammar.mode = "chars" refuses them; "tokens" keeps each one terminal, and segment --format
    wordseg never puts a boundary inside one."""
    words = [["sh", "ii"], ["k", "aa", "t"], ["dh", "ax"], ["d", "oo", "g"]]
    lines = [tagged_line([words[(i + j) % 4] for j in range(1 + i % 3)]) for i in range(40)]
    tagged = tmp_path / "tags.txt"
    tagged.write_text("\n".join(lines) + "\n", encoding="utf8")
    assert_one_error_line(run("train", BRENT, "--paths.train", tagged, "--corpus.format", "wordseg-tags",
                              "--output", tmp_path / "o", *SHORT), "[E152]", "tags.txt:1:", "'sh'",
                          "grammar.mode")
    out = tmp_path / "tokens"
    result = run("train", BRENT, "--paths.train", tagged, "--corpus.format", "wordseg-tags", "--grammar.mode",
                 "tokens", "--output", out, *SHORT)
    assert result.exit_code == 0, result.output
    prepared = tmp_path / "prep.txt"
    prepared.write_text("\n".join(" ".join(wordseg_units(line)) for line in lines) + "\n", encoding="utf8")
    segmented = run("segment", out, prepared, "--format", "wordseg")
    assert segmented.exit_code == 0, segmented.output
    for line, prepared_line in zip(segmented.stdout.splitlines(), prepared.read_text().splitlines()):
        unit_ends, pos = set(), 0
        for unit in prepared_line.split():
            pos += len(unit)
            unit_ends.add(pos)
        word_ends, pos = set(), 0
        for word in line.split(" "):
            pos += len(word)
            word_ends.add(pos)
        assert line.replace(" ", "") == prepared_line.replace(" ", "") and word_ends <= unit_ends, line
    # the model reads the units of tagged gold; gold words alone do not show them
    gold = tmp_path / "gold.txt"
    gold.write_text("\n".join(" ".join(w) for w in read_gold_words(tagged, "wordseg-tags", fix="")) + "\n")
    by_tags = run("evaluate", out, tagged, "--gold-format", "wordseg-tags", "--wordseg")
    (tmp_path / "seg.txt").write_text(segmented.stdout, encoding="utf8")
    by_file = run("evaluate", tmp_path / "seg.txt", gold, "--wordseg")
    assert by_tags.exit_code == 0 and by_tags.stdout == by_file.stdout, by_tags.output
    assert_one_error_line(run("evaluate", out, gold), "[E154]", "--gold-format wordseg-tags")


def test_wordseg_tags_read_as_text_are_refused_with_one_line(corpus, tmp_path):
    root = corpus["root"]
    late = tmp_path / "late.txt"  # plain on line 1, tags from line 2
    late.write_text("abab\n" + (root / "tags.txt").read_text(encoding="utf8"), encoding="utf8")
    assert_one_error_line(run("train", BRENT, "--paths.train", late, "--output", tmp_path / "o", *SHORT),
                          "[E150]", "late.txt:2:", "gold-segmented text (corpus.gold = true)",
                          "--corpus.format wordseg-tags")
    assert_one_error_line(run("train", BRENT, "--paths.train", root / "raw.txt", "--corpus.gold", "false",
                              "--paths.gold", late, "--output", tmp_path / "o", *SHORT),
                          "[E150]", "late.txt:2:", "wordseg-prep --gold")
    assert_one_error_line(run("evaluate", root / "gold.txt", late), "[E150]", "--gold-format wordseg-tags")
    assert_one_error_line(run("evaluate", late, root / "gold.txt"), "[E150]", "--format wordseg")
    assert_one_error_line(run("segment", tmp_path / "none", late), "[E060]")
    with pytest.raises(TextError, match=r"\[E150\] .*late.txt:2: .*format = \"wordseg-tags\""):
        list(SegmentedCorpus(late)(spacy.blank("xx")))


def test_segment_writes_wordseg_output_that_evaluate_scores_like_wordseg_eval(corpus, trained, tmp_path):
    """prepared or tagged text in, wordseg's segmented text out: the same words as segmenting the raw
    text, and the same scores against the gold text as against the tagged text."""
    root = corpus["root"]
    outputs = {}
    for name, args in (("prep", ("prep.txt", "--format", "wordseg")), ("tags", ("tags.txt", "--format", "wordseg")),
                       ("raw", ("raw.txt",))):
        result = run("segment", trained, root / args[0], *args[1:], "--output", tmp_path / f"{name}.seg")
        assert result.exit_code == 0, result.output
        outputs[name] = (tmp_path / f"{name}.seg").read_text(encoding="utf8")
    assert outputs["prep"] == outputs["tags"] == outputs["raw"]
    lines = outputs["prep"].splitlines()
    assert len(lines) == 61 and lines[30] == ""
    assert [line.replace(" ", "") for line in lines] == (root / "raw.txt").read_text().splitlines()
    against_gold = run("evaluate", tmp_path / "prep.seg", root / "gold.txt", "--wordseg")
    against_tags = run("evaluate", tmp_path / "prep.seg", root / "tags.txt", "--gold-format", "wordseg-tags",
                       "--wordseg")
    by_model = run("evaluate", trained, root / "tags.txt", "--gold-format", "wordseg-tags", "--wordseg")
    assert against_gold.exit_code == 0, against_gold.output
    assert against_gold.stdout == against_tags.stdout == by_model.stdout
    table = run("evaluate", tmp_path / "prep.seg", root / "tags.txt", "--gold-format", "wordseg-tags")
    scores = evaluate_files(tmp_path / "prep.seg", root / "gold.txt")
    assert f"token         {scores['token_p']:6.4f}  {scores['token_r']:6.4f}  {scores['token_f']:6.4f}" in table.stdout
    assert f"token_fscore\t{'%.4g' % scores['token_f']}" in against_gold.stdout.splitlines()


#: The worked example: predicted and gold segmentations of three utterances.
PREDICTED = ["po lim rro", "dega nuz", "vuz ga nuz"]
GOLD = ["po limr ro", "de ga nuz", "vuz ga nuz"]
#: Counted by hand. Tokens: 8 predicted, 9 gold, 5 right (po; nuz; vuz ga nuz). Internal boundaries:
#: predicted {2,5} {4} {3,5} = 5, gold {2,6} {2,4} {3,5} = 6, right 1 + 1 + 2 = 4; with the two edges
#: of each utterance 11, 12 and 10. Types: {po lim rro dega nuz vuz ga} against {po limr ro de ga nuz
#: vuz}: 7, 7, 4 in common.
WORDSEG_EVAL_OUTPUT = """\
token_precision\t0.625
token_recall\t0.5556
token_fscore\t0.5882
type_precision\t0.5714
type_recall\t0.5714
type_fscore\t0.5714
boundary_all_precision\t0.9091
boundary_all_recall\t0.8333
boundary_all_fscore\t0.8696
boundary_noedge_precision\t0.8
boundary_noedge_recall\t0.6667
boundary_noedge_fscore\t0.7273
"""


def test_evaluate_agrees_with_wordseg_eval_worked_by_hand(tmp_path):
    pred, gold = tmp_path / "pred.txt", tmp_path / "gold.txt"
    # wordseg-eval strips each line and leaves the blank lines of each file out, wherever they are
    pred.write_text(f"{PREDICTED[0]}\n\n  {PREDICTED[1]} \n{PREDICTED[2]}\n", encoding="utf8")
    gold.write_text("\n".join(GOLD) + "\n\n", encoding="utf8")
    result = run("evaluate", pred, gold, "--wordseg", "--json", tmp_path / "s.json")
    assert result.exit_code == 0, result.output
    assert result.stdout == WORDSEG_EVAL_OUTPUT
    assert_one_error_line(run("evaluate", pred, gold), "pred.txt:2:", "gold.txt:2:")  # line by line: misaligned
    table = run("evaluate", pred, gold, "--drop-empty")
    assert table.exit_code == 0, table.output
    assert table.stdout.splitlines()[1:5] == [
        "token         0.6250  0.5556  0.5882",
        "boundary      0.8000  0.6667  0.7273",
        "boundary_all  0.9091  0.8333  0.8696",
        "type          0.5714  0.5714  0.5714",
    ]
    tagged = tmp_path / "gold-tags.txt"
    tagged.write_text("\n".join(tagged_line([list(w) for w in line.split()], syllables={1}) for line in GOLD) + "\n")
    assert run("evaluate", pred, tagged, "--gold-format", "wordseg-tags", "--wordseg").stdout == WORDSEG_EVAL_OUTPUT
    # no word-internal boundary anywhere: wordseg-eval's boundary_noedge scores are None, ours 0
    whole = tmp_path / "whole.txt"
    whole.write_text("ab\nc\n", encoding="utf8")
    lines = run("evaluate", whole, whole, "--wordseg").stdout.splitlines()
    assert lines[0] == "token_precision\t1" and lines[-3:] == [f"boundary_noedge_{m}\tNone" for m in
                                                                  ("precision", "recall", "fscore")]
    assert "boundary      0.0000  0.0000  0.0000" in run("evaluate", whole, whole).stdout


def test_pipeline_readers_take_wordseg_formats(corpus, tmp_path):
    root = corpus["root"]
    nlp = spacy.blank("xx")
    raw = [line for line in (root / "raw.txt").read_text().splitlines() if line]
    for fmt, name in (("wordseg-tags", "tags.txt"), ("wordseg-prepared", "prep.txt")):
        assert [eg.reference.text for eg in TextCorpus(root / name, format=fmt)(nlp)] == raw
    gold = [[t.text for t in eg.reference] for eg in SegmentedCorpus(root / "tags.txt", format="wordseg-tags")(nlp)]
    assert gold == [[t.text for t in eg.reference] for eg in SegmentedCorpus(root / "gold.txt")(nlp)]
    assert gold == [u for u in corpus["gold"] if u]
    multi = tmp_path / "multi.txt"
    multi.write_text("a b ;eword\nsh ii ;eword\n", encoding="utf8")
    with pytest.raises(TextError, match=r"\[E152\] .*multi.txt:2: the unit 'sh' is 2 characters.*segmenter"):
        list(TextCorpus(multi, format="wordseg-tags")(nlp))
