"""benchmarks/topic_stream.py: the <unk> spelling model is a distribution over strings, and the stream's
chunking and first-seen bookkeeping (on generated data)."""
import importlib.util
import itertools
import math
from pathlib import Path

import pytest

SCRIPT = Path(__file__).resolve().parents[2] / "benchmarks" / "topic_stream.py"


@pytest.fixture(scope="module")
def stream():
    spec = importlib.util.spec_from_file_location("topic_stream", SCRIPT)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def strings(alphabet, max_length):
    for n in range(1, max_length + 1):
        for chars in itertools.product(alphabet, repeat=n):
            yield "".join(chars)


def test_spelling_model_sums_to_one_over_strings(stream):
    # 'c' never occurs in the fitting tokens: add-one still gives it mass
    model = stream.SpellingModel({"a": 5, "b": 3, "ab": 1}, alphabet="abc")
    assert model.stop == pytest.approx(9 / 10)
    L = 7
    total = sum(math.exp(model.log_prob(w)) for w in strings("abc", L))
    assert total == pytest.approx(1 - (1 - model.stop) ** L, rel=1e-9)
    assert 1 - total < 1e-6
    assert model.log_prob("") == -math.inf and model.log_prob("ad") == -math.inf


def test_spelling_model_renormalised_outside_the_vocabulary(stream):
    vocabulary = {"a", "ab", "ba", "abc"}
    model = stream.SpellingModel({"a": 5, "b": 3, "ab": 1}, alphabet="abc", exclude=vocabulary)
    assert model.excluded_mass == pytest.approx(sum(math.exp(model.log_prob(v)) for v in vocabulary))
    outside = sum(math.exp(model.log_prob_outside(w)) for w in strings("abc", 7) if w not in vocabulary)
    assert outside == pytest.approx(1.0, abs=1e-5)
    assert model.log_prob_outside("c") > model.log_prob("c")


def test_chunks_are_whole_minibatches_and_cover_the_stream(stream):
    bounds = stream.chunk_bounds(n_docs=523, batch_size=50, chunks=4)  # 11 minibatches, the last of 23
    assert bounds == [(0, 100), (100, 250), (250, 400), (400, 523)]
    assert stream.chunk_bounds(100, 50, 2) == [(0, 50), (50, 100)]
    with pytest.raises(ValueError):
        stream.chunk_bounds(100, 50, 3)


def test_first_seen_and_top_list_counts(stream):
    docs = [["tax", "vote"], ["vote", "kohl"], ["tax", "euro"], ["euro", "blair", "kohl"], ["blair"]]
    bounds = [(0, 2), (2, 4), (4, 5)]
    first = stream.first_occurrences(docs)
    assert first == {"tax": 0, "vote": 0, "kohl": 1, "euro": 2, "blair": 3}
    first_chunk = {w: stream.chunk_of(i, bounds) for w, i in first.items()}
    assert first_chunk == {"tax": 0, "vote": 0, "kohl": 0, "euro": 1, "blair": 1}
    topics = [["euro", "tax"], ["blair", "euro"]]
    counts = stream.top_list_counts(topics, first_chunk, chunk=1, fixed={"tax", "vote", "euro"})
    assert counts["slots"] == 4
    assert counts["entered_this_chunk"] == {"slots": 3, "words": ["blair", "euro"]}
    assert counts["not_in_first_chunk"] == {"slots": 3, "words": {"blair": 1, "euro": 1}}
    assert counts["outside_dict"] == {"slots": 1, "distinct": 1}
    later = stream.top_list_counts(topics, first_chunk, chunk=2, fixed=set())
    assert later["entered_this_chunk"]["slots"] == 0 and later["not_in_first_chunk"]["slots"] == 3


def test_selection_prefers_documents_outside_the_vocabulary(stream):
    heldout = [["a", "b", "c"], ["x", "y", "a", "b"], ["z"], ["x", "y", "z", "a"], ["a", "a"]]
    assert stream.select_documents(heldout, {"a", "b", "c"}, fraction=0.5) == [1, 3]
    halves = stream.completion_halves([["a", "b", "c"], ["x", "é"]], spellable=lambda w: w != "é")
    assert halves == {"observed": [["a"], ["x"]], "scored": [["b", "c"], []], "unspellable_tokens": 1}
