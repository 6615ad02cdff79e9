"""Segmentation at a set of categories: with function words, the words are the yields of the
outermost Word and FuncWord nodes (docs/algorithms.md 2.7). Made-up corpus: a small vocabulary of
content words, each utterance led by one or two of three short function words."""
import random
from typing import List

import pytest

from spacy_ag import AdaptorGrammar
from spacy_ag.evaluation import spans_from_words
from spacy_ag.grammar import GrammarError, category_names, parse_grammar_text
from spacy_ag.tree import Tree

FUNCTION_WORDS = ["ka", "mo", "te"]
CONTENT_WORDS = ["pirolu", "bensa", "dugavi", "lorim", "sefaku", "nodre", "tupali", "gesmo"]

GRAMMAR = """\
1 1 Sentence --> Colloc+
Colloc --> (FuncWords) Word+
FuncWords --> FuncWord+
FuncWord --> Chars
Word --> Chars
1 1 Chars --> Char+
1 1 Char --> [:corpus:]
"""


def made_up_corpus(n: int, seed: int) -> List[List[str]]:
    rng = random.Random(seed)
    out = []
    for _ in range(n):
        words = rng.sample(FUNCTION_WORDS, rng.choice([1, 2]))
        words += rng.sample(CONTENT_WORDS, rng.choice([1, 2]))
        out.append(words)
    return out


def outermost(tree: Tree, labels) -> List[str]:
    """Python reference: yields of the outermost nodes with a label in `labels`; uncovered
    terminals are words of one character."""
    if tree.label in labels:
        return ["".join(tree.leaves())]
    out: List[str] = []
    for child in tree.children:
        out.extend(outermost(child, labels) if isinstance(child, Tree) else [child])
    return out


@pytest.fixture(scope="module")
def trained():
    grammar = parse_grammar_text(GRAMMAR, default_a=0.0001, default_b=100)
    model = AdaptorGrammar(grammar, segment_category="Word, FuncWord")
    sentences = made_up_corpus(300, seed=3)
    model.fit(["".join(words) for words in sentences], iterations=40, seed=2)
    return model, sentences


def test_category_names():
    assert category_names("Word") == ("Word",)
    assert category_names(" Word, FuncWord1,Word ,") == ("Word", "FuncWord1")
    assert category_names(["FuncWord", "Word"]) == ("FuncWord", "Word")
    with pytest.raises(ValueError):
        category_names(" , ")


def test_unknown_category_is_named():
    grammar = parse_grammar_text(GRAMMAR)
    with pytest.raises(GrammarError, match=r"'FuncWrod' is not a nonterminal"):
        AdaptorGrammar(grammar, segment_category="Word,FuncWrod")


def test_segment_matches_outermost_nodes_of_the_set(trained):
    model, sentences = trained
    texts = ["".join(words) for words in sentences[:60]]
    trees = model.parse(texts)
    for labels in (("Word",), ("FuncWord",), ("Word", "FuncWord")):
        got = model.segment(texts, ",".join(labels))
        assert got == [outermost(tree, labels) for tree in trees]
    # the set is the model's default, and at Word alone the function words fall apart
    assert model.segment(texts) == model.segment(texts, "Word,FuncWord")
    assert model.segment(texts, "Word") != model.segment(texts)


def function_word_recall(predicted: List[List[str]], gold: List[List[str]]) -> float:
    """Share of the gold function-word tokens that are predicted words."""
    found = total = 0
    for pred, words in zip(predicted, gold):
        got = set(spans_from_words(pred))
        for w, span in zip(words, spans_from_words(words)):
            if w in FUNCTION_WORDS:
                total += 1
                found += span in got
    return found / total


def test_function_words_are_learned_as_words(trained):
    model, sentences = trained
    texts = ["".join(words) for words in sentences]
    assert function_word_recall(model.segment(texts), sentences) > 0.9
    assert function_word_recall(model.segment(texts, "Word"), sentences) < 0.1
    # the maximum-marginal training segmentation is read at the whole set as well
    assert function_word_recall(model.training_segmentation(), sentences) > 0.9


def test_category_set_survives_save_and_load(trained, tmp_path):
    model, sentences = trained
    model.save(tmp_path / "model")
    loaded = AdaptorGrammar.load(tmp_path / "model")
    assert loaded.segment_category == "Word,FuncWord"
    texts = ["".join(words) for words in sentences[:20]]
    assert loaded.segment(texts) == model.segment(texts)


def test_segmenter_component_takes_the_set(trained, tmp_path):
    """A spaCy tokenizer over the function-word grammar, segment_category given as a set."""
    import spacy
    from spacy.training import Example

    _, sentences = trained
    (tmp_path / "funcwords.lt").write_text(GRAMMAR, encoding="utf8")
    texts = ["".join(words) for words in sentences]
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {
        "@tokenizers": "spacy-ag.Segmenter.v1", "grammar": str(tmp_path / "funcwords.lt"),
        "segment_category": "Word,FuncWord", "default_b": 100.0, "iterations": 40, "seed": 2}}})
    nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in texts])
    predicted = [[token.text for token in doc] for doc in nlp.pipe(texts)]
    assert function_word_recall(predicted, sentences) > 0.9
    nlp.to_disk(tmp_path / "nlp")
    reloaded = spacy.load(tmp_path / "nlp")
    assert [[t.text for t in doc] for doc in reloaded.pipe(texts[:30])] == predicted[:30]
    with pytest.raises(GrammarError, match="FuncWrod"):
        spacy.blank("xx", config={"nlp": {"tokenizer": {
            "@tokenizers": "spacy-ag.Segmenter.v1", "grammar": str(tmp_path / "funcwords.lt"),
            "segment_category": "Word,FuncWrod", "iterations": 2}}}).initialize(
            lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in texts[:5]])
