"""Morphology (issue 6): generated grammars, recovery of a generated language, Morpho Challenge
scoring, the ag_parser's token extensions through DocBin and multiprocessing, and the CLI."""
from __future__ import annotations

import json
import pickle
from pathlib import Path

import pytest
import spacy
from spacy.tokens import DocBin
from typer.testing import CliRunner

from spacy_ag.cli import app
from spacy_ag.runs.mcmc_chain import SamplerSettings
from spacy_ag.grammar import read_grammar
from spacy_ag.model import AdaptorGrammar
from spacy_ag.morphology import (
    GRAMMAR_NAMES, MORPH_LEVELS, analyse_words, format_morphs, morph_boundary_scores, morph_class,
    morphology_grammar, morphs_at, parse_grammar_name, parse_levels, read_gold_segmentation,
    read_predicted_segmentation, read_words, word_units,
)
from spacy_ag.tree import Tree

ROOT = Path(__file__).resolve().parents[2]

# A made-up language: 15 stems, each with the same 5 endings (one of them empty).
STEMS = ["bak", "dul", "fim", "gor", "hep", "jat", "kel", "lom", "nup", "pir", "rad", "sof", "tig", "vun", "wes"]
ENDINGS = ["", "a", "ing", "ed", "es"]
WORDS = [s + e for s in STEMS for e in ENDINGS]
GOLD = {s + e: [[s, e] if e else [s]] for s in STEMS for e in ENDINGS}

# Two paradigms for the hidden classes: stems of class A take -ing/-ed, stems of class B -o/-us.
CLASS_A = ["bak", "dul", "fim", "gor", "hep", "jat", "kel", "lom"]
CLASS_B = ["nup", "pir", "rad", "sof", "tig", "vun", "wes", "zor"]
PARADIGM_WORDS = [s + e for s in CLASS_A for e in ("", "ing", "ed")] + [s + e for s in CLASS_B for e in ("", "o", "us")]


def fit(words, kind, *, classes=None, b=500.0, iterations=100, seed=1):
    grammar = read_grammar(morphology_grammar(kind, classes=classes, b=b))
    model = AdaptorGrammar(grammar, segment_category="Word", sampler=SamplerSettings(sample_hyper=False))
    return model.fit(list(words), iterations=iterations, seed=seed)


@pytest.fixture(scope="module")
def stem_suffix_model():
    return fit(WORDS, "stem-suffix")


# ---------------------------------------------------------------- grammars


def test_classes_grammar_is_generated_from_c():
    g = read_grammar(morphology_grammar("stem-suffix", classes=3))
    assert g.start == "Word" and "Word" not in g.adaptors  # Word -> Word_c is not adapted
    word_rules = sorted(r.children for r in g.rules if r.parent == "Word")
    assert word_rules == [("Word_1",), ("Word_2",), ("Word_3",)]
    for c in (1, 2, 3):
        assert sorted(r.children for r in g.rules if r.parent == f"Word_{c}") == [(f"Stem_{c}",), (f"Stem_{c}", f"Suffix_{c}")]
        for nt in (f"Word_{c}", f"Stem_{c}", f"Suffix_{c}"):
            assert (g.adaptors[nt].a, g.adaptors[nt].b) == (0.0, 500.0)
    assert not any(nt.endswith("_4") for nt in g.nonterminals)
    # one shared character distribution, not one per class
    assert sorted(r.children for r in g.rules if r.parent == "Stem_2") == [("Char+",)]


def test_prefix_and_submorph_grammars():
    pss = read_grammar(morphology_grammar("prefix-stem-suffix", a=0.5, b=10))
    assert sorted(r.children for r in pss.rules if r.parent == "Word") == [
        ("Prefix", "Stem"), ("Prefix", "Stem", "Suffix"), ("Stem",), ("Stem", "Suffix")]
    assert pss.adaptors["Prefix"].a == 0.5 and pss.adaptors["Prefix"].b == 10.0
    sub = read_grammar(morphology_grammar("submorphs"))
    assert set(sub.adaptors) == {"Morph", "SubMorph"}
    with pytest.raises(ValueError, match="unknown morphology grammar 'stem'"):
        morphology_grammar("stem")
    with pytest.raises(ValueError, match="classes"):
        morphology_grammar("stem-suffix", classes=-2)


@pytest.mark.parametrize("name, kind, classes, a, b", [
    ("stem-suffix.lt", "stem-suffix", None, 0.0, 500.0),
    ("stem-suffix-classes6.lt", "stem-suffix", 6, 0.0, 500.0),
    ("prefix-stem-suffix.lt", "prefix-stem-suffix", None, 0.0, 500.0),
    ("submorphs.lt", "submorphs", None, 0.8, 10.0),
    ("prefix-stem-suffix-submorphs.lt", "prefix-stem-suffix-submorphs", None, 0.8, 10.0),
])
def test_shipped_grammar_files_are_the_generators_output(name, kind, classes, a, b):
    text = (ROOT / "configs" / "morphology" / "grammars" / name).read_text(encoding="utf8")
    assert text == morphology_grammar(kind, classes=classes, a=a, b=b)


def test_grammar_names():
    assert parse_grammar_name("stem-suffix-classes") == ("stem-suffix", True)
    assert parse_grammar_name("prefix-stem-suffix") == ("prefix-stem-suffix", False)
    assert parse_grammar_name("unigram") is None and parse_grammar_name("foo-classes") is None
    assert "stem-suffix-classes" in GRAMMAR_NAMES


# ---------------------------------------------------------------- analyses


def test_morphs_at_levels_class_index_and_uncovered_runs():
    tree = Tree("Word", [Tree("Word_2", [Tree("Prefix_2", ["u", "n"]), Tree("Stem_2", ["d", "o"]),
                                          Tree("Suffix_2", ["i", "n", "g"])])])
    assert morphs_at(tree, ["Prefix", "Stem", "Suffix"]) == ["un", "do", "ing"]
    assert morphs_at(tree, ["Stem", "Suffix"]) == ["un", "do", "ing"]  # the prefix is kept as a run
    assert morphs_at(tree, ["Stem"]) == ["un", "do", "ing"]
    assert morphs_at(tree, ["Stem_1"]) == ["undoing"]  # an exact label matches only itself
    assert morph_class(tree) == 2
    assert morph_class(Tree("Word", [Tree("Stem", ["a"])])) is None
    assert format_morphs(["walk", "ing"]) == "walk+ing"
    assert parse_levels("Stem, Suffix") == ("Stem", "Suffix")
    with pytest.raises(ValueError, match="--level"):
        parse_levels(" , ")


def test_generated_language_is_recovered(stem_suffix_model):
    analyses = analyse_words(stem_suffix_model, WORDS, MORPH_LEVELS["stem-suffix"])
    scores = morph_boundary_scores({w: m for w, (m, _) in zip(WORDS, analyses)}, GOLD)
    assert scores["boundary_f"] >= 0.9, scores
    assert scores["word_accuracy"] >= 0.9
    # a word never seen in training, made of a known stem and ending, is analysed too
    (morphs, klass), = analyse_words(stem_suffix_model, ["zaming"], ("Stem", "Suffix"))
    assert "".join(morphs) == "zaming" and klass is None


PREFIXES = ["", "re", "un"]
AFFIXED_WORDS = [p + s + e for p in PREFIXES for s in STEMS[:10] for e in ENDINGS]
AFFIXED_GOLD = {p + s + e: [[m for m in (p, s, e) if m]] for p in PREFIXES for s in STEMS[:10] for e in ENDINGS}


def test_prefix_stem_suffix_submorphs_finds_both_edges():
    """PrStSu+SM: prefixes and suffixes recovered, decoded by maximum marginal at the morph set."""
    grammar = read_grammar(morphology_grammar("prefix-stem-suffix-submorphs", a=0.5, b=10))
    levels = MORPH_LEVELS["prefix-stem-suffix-submorphs"]
    model = AdaptorGrammar(grammar, segment_category=",".join(levels), sampler=SamplerSettings(sample_hyper=False))
    model.fit(AFFIXED_WORDS, iterations=150, seed=1)
    marginal = {w: morphs for w, morphs in zip(AFFIXED_WORDS, model.training_segmentation())}
    assert morph_boundary_scores(marginal, AFFIXED_GOLD)["boundary_f"] >= 0.85
    viterbi = {w: m for w, (m, _) in zip(AFFIXED_WORDS, analyse_words(model, AFFIXED_WORDS, levels))}
    assert morph_boundary_scores(viterbi, AFFIXED_GOLD)["boundary_f"] >= 0.85


def test_hidden_classes_keep_a_stem_in_one_class():
    model = fit(PARADIGM_WORDS, "stem-suffix", classes=2, b=10.0, iterations=200, seed=1)
    analyses = dict(zip(PARADIGM_WORDS, analyse_words(model, PARADIGM_WORDS, ("Stem", "Suffix"))))
    gold = {w: [[w[:3], w[3:]] if len(w) > 3 else [w]] for w in PARADIGM_WORDS}
    assert morph_boundary_scores({w: m for w, (m, _) in analyses.items()}, gold)["boundary_f"] >= 0.9
    classes = {c for _, c in analyses.values()}
    assert classes <= {1, 2} and None not in classes
    for stem in CLASS_A + CLASS_B:  # the words of a stem share its class (Stem_c is class-specific)
        assert len({analyses[w][1] for w in PARADIGM_WORDS if w.startswith(stem)}) == 1, stem


# ---------------------------------------------------------------- Morpho Challenge scoring


GOLD_TEXT = ("walking\twalk:walk_V ing:+PCP1\n"
             "aims\taim:aim_V s:+PL, aim:aim_V s:+3SG\n"
             "aides-memoire\taides-memoire:aide-memoire_N ~:+PL\n"
             "actress'\tact:act_V r:or_s ess:ess_s ':+GEN\n"
             "ahead\ta:a_p head:head_N, ahead:ahead_A\n")


def test_gold_reader_and_best_matching_alternative(tmp_path):
    path = tmp_path / "gold.eng"
    path.write_text(GOLD_TEXT, encoding="utf8")
    gold = read_gold_segmentation(path)
    assert gold["aides-memoire"] == [["aides-memoire"]]  # ~ is an empty morph
    assert gold["actress'"] == [["act", "r", "ess", "'"]]
    assert gold["ahead"] == [["a", "head"], ["ahead"]]
    pred = {"walking": ["walk", "ing"], "aims": ["ai", "ms"], "aides-memoire": ["aides", "-", "memoire"],
            "actress'": ["actress", "'"], "ahead": ["ahead"]}
    s = morph_boundary_scores(pred, gold)
    # boundaries: walking 1/1 correct; aims 0 of 1 (gold 1); aides-memoire 0 of 2 (gold 0);
    # actress' 1 of 1 (gold 3); ahead matches the unsegmented alternative (0 and 0)
    assert (s["n_correct_boundaries"], s["n_pred_boundaries"], s["n_gold_boundaries"]) == (2, 5, 5)
    assert s["boundary_p"] == pytest.approx(0.4) and s["boundary_r"] == pytest.approx(0.4)
    assert s["boundary_f"] == pytest.approx(0.4)
    assert s["word_accuracy"] == pytest.approx(2 / 5)
    with pytest.raises(ValueError, match="'ahead'"):
        morph_boundary_scores({w: m for w, m in pred.items() if w != "ahead"}, gold)


def test_gold_reader_errors_name_file_and_line(tmp_path):
    path = tmp_path / "bad.eng"
    path.write_text("walking\twalk:walk_V ing:+PCP1\nrunning run ning\n", encoding="utf8")
    with pytest.raises(ValueError, match=r"bad.eng:2: expected `word<TAB>"):
        read_gold_segmentation(path)
    path.write_text("walking\twalk:walk_V in:+PCP1\n", encoding="utf8")
    with pytest.warns(UserWarning, match="do not spell"), pytest.raises(ValueError, match=r"bad.eng:1: no analysis"):
        read_gold_segmentation(path)


def test_predicted_file_forms_and_word_lists(tmp_path):
    path = tmp_path / "pred.txt"
    path.write_text("walk+ing\njump ed\nruns\tru:x ns:y\n", encoding="utf8")
    assert read_predicted_segmentation(path) == {"walking": ["walk", "ing"], "jumped": ["jump", "ed"],
                                                 "runs": ["ru", "ns"]}
    (tmp_path / "gold.eng").write_text(GOLD_TEXT, encoding="utf8")
    (tmp_path / "text.txt").write_text("the dog is walking\nthe dog\n", encoding="utf8")
    files = [tmp_path / "gold.eng", tmp_path / "text.txt"]
    assert read_words(files)[:6] == ["walking", "aims", "aides-memoire", "actress'", "ahead", "the"]
    assert len(read_words(files)) == 8 and len(read_words(files, units="tokens")) == 11
    assert word_units(["a", "b", "a"], "types") == ["a", "b"]


# made-up words in the Morpho Challenge 2010 Finnish file's form: Latin-1, and `\:` for a colon of the word
LATIN1_GOLD = ("k\u00e4velij\u00e4ll\u00e4\tk\u00e4veli:k\u00e4vell\u00e4_V j\u00e4:+AGT ll\u00e4:+ADE\n"
               "py\u00f6r\u00e4t\tpy\u00f6r\u00e4:py\u00f6r\u00e4_N t:+PL, py\u00f6r\u00e4t:py\u00f6r\u00e4t_N\n"
               "abc:n\tabc\\::abc n:+GEN\n")


def test_latin1_gold_and_escaped_colons(tmp_path):
    path = tmp_path / "gold.fin"
    path.write_bytes(LATIN1_GOLD.encode("latin-1"))
    with pytest.raises(UnicodeDecodeError):
        path.read_bytes().decode("utf-8")  # the test file is really not UTF-8
    gold = read_gold_segmentation(path)
    assert gold == {"k\u00e4velij\u00e4ll\u00e4": [["k\u00e4veli", "j\u00e4", "ll\u00e4"]],
                    "py\u00f6r\u00e4t": [["py\u00f6r\u00e4", "t"], ["py\u00f6r\u00e4t"]],
                    "abc:n": [["abc:", "n"]]}
    assert read_gold_segmentation(path, encoding="latin-1") == gold
    assert read_words(path) == list(gold)
    # the same text in UTF-8 reads the same; forcing UTF-8 on Latin-1 bytes is one line naming the line
    utf8 = tmp_path / "gold-utf8.fin"
    utf8.write_text(LATIN1_GOLD, encoding="utf8")
    assert read_gold_segmentation(utf8) == gold
    with pytest.raises(Exception, match=r"gold.fin:1"):
        read_gold_segmentation(path, encoding="utf-8")
    pred = tmp_path / "pred.fin"
    pred.write_bytes("k\u00e4veli+j\u00e4+ll\u00e4\npy\u00f6r\u00e4t\nabc:+n\n".encode("latin-1"))
    scores = morph_boundary_scores(read_predicted_segmentation(pred), gold)
    assert (scores["n_correct_boundaries"], scores["n_gold_boundaries"]) == (3, 3)


# ---------------------------------------------------------------- the spaCy component


def _morph_annotations(doc):
    return [(t.text, t._.ag_morphs, t._.ag_morph_class, t._.ag_morph_string, str(t.morph)) for t in doc]


@pytest.fixture(scope="module")
def morph_nlp():
    nlp = spacy.blank("xx")
    nlp.add_pipe("ag_parser", config={"grammar": "stem-suffix-classes", "classes": 2, "mode": "token",
                                      "train_on": "types", "set_morph": True, "iterations": 30, "seed": 1,
                                      "spans_key": "morph"})
    texts = [" ".join(PARADIGM_WORDS[i:i + 8]) for i in range(0, len(PARADIGM_WORDS), 8)] * 3

    def examples():
        from spacy.training import Example

        return [Example(nlp.make_doc(t), nlp.make_doc(t)) for t in texts]

    nlp.initialize(examples)
    return nlp


def test_parser_trains_on_types_and_annotates_tokens(morph_nlp):
    parser = morph_nlp.get_pipe("ag_parser")
    from spacy.training import Example

    doc = morph_nlp.make_doc("bak baking bak")
    assert parser.training_texts([Example(doc, doc)]) == ["bak", "baking"]
    assert morph_nlp.get_pipe("ag_parser").model.training_corpus is not None
    assert len(parser.model.training_corpus) == len(PARADIGM_WORDS)  # types: each word once
    doc = morph_nlp("baking wesus, qq")
    for token in doc[:2]:
        assert "".join(token._.ag_morphs) == token.text
        assert token._.ag_morph_string == "+".join(token._.ag_morphs)
        assert token._.ag_morph_class in (1, 2)
        assert token.morph.get("AgClass") == [str(token._.ag_morph_class)]
    for token in doc[2:]:  # "," and the unseen "qq" have no parse
        assert token._.ag_morphs is None and token._.ag_morph_class is None and token._.ag_morph_string is None
        assert str(token.morph) == ""


def test_parser_rejects_bad_morph_settings():
    nlp = spacy.blank("xx")
    with pytest.raises(ValueError, match="train_on"):
        nlp.add_pipe("ag_parser", config={"mode": "token", "train_on": "lemmas"})
    with pytest.raises(ValueError, match="classes"):
        nlp.add_pipe("ag_parser", name="p2", config={"grammar": "stem-suffix-classes", "classes": 0})


def test_token_extensions_survive_docbin_and_multiprocessing(morph_nlp):
    texts = ["baking fimed wesus", "nupo tig, lomed", "gor hep"]
    docs = list(morph_nlp.pipe(texts))
    expected = [_morph_annotations(d) for d in docs]
    assert any(a[2] is not None for doc in expected for a in doc)

    restored = list(DocBin(docs=docs, store_user_data=True).from_bytes(
        DocBin(docs=docs, store_user_data=True).to_bytes()).get_docs(morph_nlp.vocab))
    assert [_morph_annotations(d) for d in restored] == expected

    assert [_morph_annotations(d) for d in morph_nlp.pipe(texts, n_process=2, batch_size=1)] == expected
    # spawn (macOS, Windows) pickles the pipeline: the component must survive it
    clone = pickle.loads(pickle.dumps(morph_nlp.get_pipe("ag_parser")))
    assert [_morph_annotations(clone(morph_nlp.make_doc(t))) for t in texts] == expected


# ---------------------------------------------------------------- command line


def test_cli_segment_level_and_evaluate_morph(stem_suffix_model, tmp_path):
    runner = CliRunner()
    stem_suffix_model.save(tmp_path / "model")
    (tmp_path / "words.txt").write_text("baking\ndules sofed\n", encoding="utf8")
    result = runner.invoke(app, ["segment", str(tmp_path / "model"), str(tmp_path / "words.txt"),
                                 "--level", "Stem,Suffix"])
    assert result.exit_code == 0, result.output
    assert result.stdout == "bak+ing\ndul+es sof+ed\n"
    bad = runner.invoke(app, ["segment", str(tmp_path / "model"), str(tmp_path / "words.txt"), "--level", "Root"])
    assert bad.exit_code == 1 and "--level Root" in bad.output and len(bad.output.strip().splitlines()) == 1

    (tmp_path / "all.txt").write_text("\n".join(WORDS) + "\n", encoding="utf8")
    pred = tmp_path / "pred.txt"
    result = runner.invoke(app, ["segment", str(tmp_path / "model"), str(tmp_path / "all.txt"),
                                 "--level", "Stem,Suffix", "--output", str(pred)])
    assert result.exit_code == 0, result.output
    gold = tmp_path / "gold.eng"
    gold.write_text("".join(f"{w}\t{' '.join(f'{m}:x' for m in a[0])}\n" for w, a in GOLD.items()), encoding="utf8")
    result = runner.invoke(app, ["evaluate-morph", str(pred), str(gold), "--json", str(tmp_path / "s.json")])
    assert result.exit_code == 0, result.output
    scores = json.loads((tmp_path / "s.json").read_text())
    assert scores["boundary_f"] >= 0.9 and scores["n_words"] == len(WORDS)
    assert "boundary" in result.stdout

    gold.write_text("walking walk ing\n", encoding="utf8")
    result = runner.invoke(app, ["evaluate-morph", str(pred), str(gold)])
    assert result.exit_code == 1
    assert result.output.strip().startswith("✘") and f"{gold}:1:" in result.output


def test_cli_morph_grammar(tmp_path):
    result = CliRunner().invoke(app, ["morph-grammar", "stem-suffix", "--classes", "6"])
    assert result.exit_code == 0
    assert result.stdout == morphology_grammar("stem-suffix", classes=6)
    result = CliRunner().invoke(app, ["morph-grammar", "stems"])
    assert result.exit_code == 1 and "unknown morphology grammar 'stems'" in result.output


def test_shipped_morphology_configs_load(tmp_path):
    from spacy_ag.config import build_model, load_training_config

    words = tmp_path / "words.txt"
    words.write_text("\n".join(WORDS) + "\n", encoding="utf8")
    configs = ROOT / "configs" / "morphology"
    sub = load_training_config(configs / "submorphs.cfg", {"paths.train": str(words)})
    assert build_model(sub).segment_category == "Morph" and not sub.sampler.sample_hyper
    default = build_model(load_training_config(configs / "prefix-stem-suffix-submorphs.cfg",
                                               {"paths.train": str(words)}))
    assert default.segment_categories == ("PrefixMorph", "Stem", "SuffixMorph")
    assert {"Prefix", "PrefixMorph", "Stem", "Suffix", "SuffixMorph", "SubMorph"} == set(default.grammar.adaptors)
    model = default.fit(WORDS, iterations=5, seed=1)
    assert all("".join(m) == w for m, w in zip(model.segment(WORDS), WORDS))
    classes = build_model(load_training_config(configs / "stem-suffix-classes.cfg", {"paths.train": str(words)}))
    assert {f"Word_{c}" for c in range(1, 7)} <= set(classes.grammar.adaptors)
    nlp = spacy.util.load_model_from_config(spacy.util.load_config(configs / "pipeline-en.cfg"), auto_fill=True)
    parser = nlp.get_pipe("ag_parser")
    assert parser.cfg["mode"] == "token" and parser.cfg["train_on"] == "types"
    assert "Stem_6" in parser.load_grammar().adaptors
