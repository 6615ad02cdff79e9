"""The model API: learning, reproducibility, checkpoints, saving, new text."""
import numpy as np
import pytest

from spacy_ag.runs.online_learner import OnlineSettings
from spacy_ag.evaluation import segmentation_scores
from spacy_ag.model import AdaptorGrammar
from spacy_ag.serialize import ModelFileError, state_arrays
from spacy_ag.synthetic import generate_corpus, make_lexicon
from spacy_ag.runs.signals import TrainingInterrupted

UNIGRAM = """
# unigram word segmentation (Goldwater et al.), our shorthand
1 1 Sentence --> Word+
1 0.0001 10000 Word --> Char+
1 1 Char --> [:corpus:]
"""

COLLOC = """
1 1 Sentence --> Colloc+
1 0.0001 10000 Colloc --> Word+
1 0.0001 10000 Word --> Char+
1 1 Char --> [:corpus:]
"""


@pytest.fixture(scope="module")
def gold():
    lexicon = make_lexicon(40, alphabet="abcdefghijklmnop", seed=7)
    return generate_corpus(lexicon, 400, seed=11)


def raw(utterances):
    return ["".join(u) for u in utterances]


def states_equal(a, b):
    return all(np.array_equal(x, y) for x, y in zip(state_arrays(a).values(), state_arrays(b).values()))


def test_recovers_generated_lexicon(gold):
    model = AdaptorGrammar(UNIGRAM).fit(raw(gold), iterations=60, seed=1, sample_every=5)
    scores = segmentation_scores(model.training_segmentation(), gold)
    assert scores["token_f"] > 0.8, scores
    learned = {entry["yield"] for entry in model.cache(top=15)}
    true_words = {w for u in gold for w in u}
    assert len(learned & true_words) >= 12


def test_seeded_runs_are_identical_and_seeds_differ(gold):
    runs = [AdaptorGrammar(COLLOC).fit(raw(gold[:150]), iterations=8, seed=s, sample_every=2)
            for s in (5, 5, 6)]
    lp = [[line["log_posterior"] for line in r.trace] for r in runs]
    assert lp[0] == lp[1]
    assert states_equal(runs[0].state, runs[1].state)
    assert runs[0].training_segmentation() == runs[1].training_segmentation()
    assert lp[0] != lp[2]


def test_resume_after_interrupt_equals_uninterrupted_run(gold, tmp_path):
    texts = raw(gold[:150])
    options = dict(iterations=12, seed=3, sample_every=2, checkpoint_every=5)
    reference = AdaptorGrammar(COLLOC).fit(texts, **options)

    def interrupt(line):
        if line["iteration"] == 8:
            raise KeyboardInterrupt

    with pytest.raises(TrainingInterrupted):
        AdaptorGrammar(COLLOC).fit(texts, checkpoint_dir=tmp_path, callback=interrupt, **options)
    resumed = AdaptorGrammar(COLLOC).fit(texts, checkpoint_dir=tmp_path, resume=True, **options)
    assert [l["log_posterior"] for l in resumed.trace] == [l["log_posterior"] for l in reference.trace]
    assert states_equal(resumed.state, reference.state)
    assert resumed.training_segmentation() == reference.training_segmentation()


def test_resume_refuses_a_checkpoint_of_another_corpus(gold, tmp_path):
    AdaptorGrammar(UNIGRAM).fit(raw(gold[:50]), iterations=2, checkpoint_dir=tmp_path)
    with pytest.raises(ValueError, match="another corpus"):
        AdaptorGrammar(UNIGRAM).fit(raw(gold[50:100]), iterations=3, checkpoint_dir=tmp_path, resume=True)


def test_two_chains_pool_their_samples(gold):
    model = AdaptorGrammar(UNIGRAM).fit(raw(gold[:100]), iterations=6, chains=2, seed=2,
                                        sample_every=2, workers=2)
    assert model.marginals.n_samples == 2 * 2  # iterations 4 and 6 after the default burn-in of 3
    assert {line["chain"] for line in model.trace} == {0, 1}
    one = AdaptorGrammar(UNIGRAM).fit(raw(gold[:100]), iterations=6, chains=1, seed=3, sample_every=2)
    # chain 1 of the pair is seeded seed + 1: it equals a single chain seeded 3
    assert [l["log_posterior"] for l in model.trace if l["chain"] == 1] == \
        [l["log_posterior"] for l in one.trace]


def test_save_load_gives_identical_output(gold, tmp_path):
    model = AdaptorGrammar(COLLOC).fit(raw(gold[:200]), iterations=15, seed=4)
    texts = raw(gold[200:230]) + ["zz" + raw(gold[0:1])[0]]  # 'z' was never seen
    model.save(tmp_path / "m")
    loaded = AdaptorGrammar.load(tmp_path / "m")
    assert loaded.segment(texts) == model.segment(texts)
    assert [t.bracketed() for t in loaded.parse(texts[:30])] == [t.bracketed() for t in model.parse(texts[:30])]
    assert states_equal(loaded.state, model.state)


def test_segment_keeps_every_character(gold):
    model = AdaptorGrammar(UNIGRAM).fit(raw(gold[:100]), iterations=5, seed=1)
    text = "ab\u4e2dcd ef"  # an unseen character and a space
    words = model.segment([text])[0]
    assert "".join(words) == text.replace(" ", "")
    assert "\u4e2d" in words


def test_parse_tree_spells_the_text_and_marks_adapted_nodes(gold):
    model = AdaptorGrammar(COLLOC).fit(raw(gold[:100]), iterations=5, seed=1)
    text = raw(gold[3:4])[0]
    tree = model.parse([text])[0]
    assert "".join(tree.leaves()) == text
    assert tree.label == "Sentence"
    labels = {t.label for t in tree.subtrees() if t.adapted}
    assert labels <= {"Colloc", "Word"} and "Word" in {t.label for t in tree.subtrees()}
    compact = tree.bracketed(compact=True)
    assert compact.startswith("(Sentence (Colloc (Word ") and "Char" not in compact


def test_long_sentence_parses_without_underflow():
    rng = np.random.default_rng(0)
    alphabet = [chr(0x4E00 + i) for i in range(60)]
    texts = ["".join(rng.choice(alphabet, size=20)) for _ in range(30)]
    model = AdaptorGrammar(UNIGRAM).fit(texts, iterations=2, seed=0)
    long_text = "".join(rng.choice(alphabet, size=500))
    tree = model.parse([long_text])[0]
    assert tree is not None and "".join(tree.leaves()) == long_text
    assert "".join(model.segment([long_text])[0]) == long_text


def test_damaged_or_foreign_model_files_name_the_file(gold, tmp_path):
    model = AdaptorGrammar(UNIGRAM).fit(raw(gold[:30]), iterations=1)
    model.save(tmp_path / "m")
    state_file = tmp_path / "m" / "arrays.npz"
    state_file.write_bytes(state_file.read_bytes()[:200])
    with pytest.raises(ModelFileError, match="arrays.npz"):
        AdaptorGrammar.load(tmp_path / "m")
    with pytest.raises(ModelFileError, match="no such model directory"):
        AdaptorGrammar.load(tmp_path / "missing")


def test_unparseable_training_sentence_names_its_line():
    grammar = """
1 1 Sentence --> Word Word
1 0 10 Word --> Char+
1 1 Char --> [:corpus:]
"""
    with pytest.raises(ValueError, match=r"<texts>:2: this sentence has no parse"):
        AdaptorGrammar(grammar).fit(["abc", "a", "abcd"], iterations=1)


@pytest.mark.parametrize("batch_size", [1, 3])
def test_unparseable_sentence_in_an_online_minibatch_names_its_line(batch_size):
    """The one-call minibatch stops before counting anything and names the sentence, wherever it
    falls in its minibatch."""
    grammar = """
1 1 Sentence --> Word Word
1 0 10 Word --> Char+
1 1 Char --> [:corpus:]
"""
    model = AdaptorGrammar(grammar, inference="online", online=OnlineSettings(batch_size=batch_size, passes=1))
    with pytest.raises(ValueError, match=r"<texts>:3: this sentence has no parse"):
        model.fit(["abc", "ab", "a", "abcd"], seed=1)
