"""The Chinese default (docs/algorithms.md 2.8): three collocation levels over words of learned
length, with numbers and Latin words as single terminals (units = "alnum-runs").

Made-up corpus: words of one to three Han characters drawn at random from a block of the CJK
range (no real words), numbers followed by a counter character, and a Latin abbreviation, in
utterances cut by a full-width comma."""
import random
from pathlib import Path
from typing import List

import pytest
import spacy
from spacy.training import Example

from spacy_ag.components.segmenter import BUILTIN_GRAMMARS
from spacy_ag.evaluation import segmentation_scores
from spacy_ag.grammar import parse_grammar_text, read_grammar
from spacy_ag.text_units import text_units

REPO = Path(__file__).resolve().parents[2]
FULL_WIDTH_DIGITS = "０１２３４５６７８９"


def made_up_lexicon(seed: int) -> List[str]:
    rng = random.Random(seed)
    chars = [chr(cp) for cp in rng.sample(range(0x5000, 0x5400), 60)]
    words = set()
    while len(words) < 40:
        length = rng.choices([1, 2, 3], weights=[2, 6, 1])[0]
        words.add("".join(rng.sample(chars, length)))
    return sorted(words)


def made_up_corpus(n: int, seed: int) -> List[List[str]]:
    """Utterances as gold words; a number with its counter ("１９９８年") is one word."""
    rng = random.Random(seed)
    lexicon = made_up_lexicon(seed)
    weights = [1.0 / (rank + 1) for rank in range(len(lexicon))]
    out = []
    for _ in range(n):
        words: List[str] = []
        for phrase in range(rng.choice([1, 2])):
            if phrase:
                words.append("，")
            words += rng.choices(lexicon, weights, k=rng.randint(2, 5))
            if rng.random() < 0.3:
                number = "".join(rng.choice(FULL_WIDTH_DIGITS) for _ in range(rng.randint(1, 4)))
                words.insert(rng.randrange(len(words) + 1), number + "年")
            if rng.random() < 0.1:
                words.append("ＷＴＯ")
        out.append(words)
    return out


def rule_set(grammar):
    return sorted((r.parent, r.children, r.weight) for r in grammar.rules), sorted(grammar.adaptors)


def test_builtin_colloc3_is_the_shipped_grammar():
    shipped = read_grammar(REPO / "configs" / "grammars" / "chinese-colloc3.lt", default_a=1e-4, default_b=1e4)
    builtin = parse_grammar_text(BUILTIN_GRAMMARS["colloc3"], default_a=1e-4, default_b=1e4)
    assert rule_set(builtin) == rule_set(shipped)
    assert sorted(builtin.adaptors) == ["Colloc", "Colloc2", "Colloc3", "Word"]
    lengths = sorted(len(r.children) for r in builtin.rules if r.parent == "Word")
    assert lengths == [1, 2, 3, 4, 5]  # one rule per length 1-4, then Char Char Char Char Chars


@pytest.fixture(scope="module")
def gold():
    return made_up_corpus(250, seed=4)


@pytest.fixture(scope="module")
def nlp(gold):
    nlp = spacy.blank("zh", config={"nlp": {"tokenizer": {
        "@tokenizers": "spacy-ag.Segmenter.v1", "grammar": "colloc3", "units": "alnum-runs",
        "iterations": 30, "seed": 3}}})
    texts = ["".join(words) for words in gold]
    nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in texts])
    return nlp


def test_colloc3_recovers_the_lexicon_and_keeps_numbers_whole(nlp, gold):
    texts = ["".join(words) for words in gold]
    predicted = [[t.text for t in doc] for doc in nlp.pipe(texts)]
    scores = segmentation_scores(predicted, gold)
    assert scores["token_f"] > 0.97, scores  # 1.0 here; the unigram grammar gets .96, graphemes .91
    for text, words in zip(texts, predicted):
        assert "".join(words) == text
        units = text_units(text, "alnum-runs")
        numbers = [u for u in units if u[0] in FULL_WIDTH_DIGITS or u[0] == "Ｗ"]
        assert all(any(n in w for w in words) for n in numbers), (text, words)  # never cut inside
        assert "，" in words or "，" not in text  # punctuation is a word of its own


def test_colloc3_segmenter_round_trip(nlp, gold):
    texts = ["".join(words) for words in gold[:40]]
    restored = spacy.blank("zh", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1"}}})
    restored.tokenizer.from_bytes(nlp.tokenizer.to_bytes())
    assert restored.tokenizer.model.units == "alnum-runs"
    assert [[t.text for t in restored(t)] for t in texts] == [[t.text for t in nlp(t)] for t in texts]
