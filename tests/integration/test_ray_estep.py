"""The online and vb E-step on Ray workers (`spacy_ag.runs.ray_estep`), and the sharded E-step under it.

The model trained with ``backend="ray"`` equals the local backend's bit for
bit, whatever the number of workers; the workers really draw at the same
time; a worker killed mid-run is restarted and the model is still the same;
two raylets stand in for two nodes. The tests that need Ray skip with the
reason when it is not installed (``pip install spacy-ag[ray]``).
"""
from __future__ import annotations

import hashlib
import os
import signal

import numba
import numpy as np
import pytest

from spacy_ag.runs import online_learner as online_module
from spacy_ag.runs.sharded_estep import (
    YieldTrie, compact, distinct, draw_trees, estep_templates, estep_view, estep_weights, merge_shards, pack_shard,
    split_batch,
)
from spacy_ag.core.state import N_TRIE
from spacy_ag.runs.online_learner import OnlineLearner
from spacy_ag.core.variational import absorb, absorb_distinct
from spacy_ag.model import AdaptorGrammar
from spacy_ag.runs.ray_estep import watch_estep
from spacy_ag.serialize import state_arrays
from spacy_ag.settings import OnlineSettings
from spacy_ag.synthetic import generate_corpus, make_lexicon
from conftest import UNIGRAM, record_numba_threads, run_driver

#: two passes in minibatches of 40 utterances, pruned and re-derived every 3 minibatches
SETTINGS = dict(batch_size=40, tau=4.0, kappa=0.7, samples=4, refine_every=3, passes=2, truncation={"Word": 30})


@pytest.fixture(scope="module")
def texts():
    lexicon = make_lexicon(15, alphabet="abcdefghij", min_len=2, max_len=4, seed=5)
    return ["".join(words) for words in generate_corpus(lexicon, 400, mean_words=3, seed=6)]


def train(texts, mode="online", **fit):
    model = AdaptorGrammar(UNIGRAM, inference=mode, online=OnlineSettings(**SETTINGS, workers=1),
                           default_a=0.0, default_b=10.0)
    return model.fit(texts, seed=3, **fit)


@pytest.fixture(scope="module")
def reference(texts):
    return train(texts)


def fingerprint(model):
    arrays = state_arrays(model.state)
    arrays.update({f"vb_{k}": getattr(model.variational, k) for k in model.variational._fields})
    return {k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest() for k, v in sorted(arrays.items())}


def without_time(trace):
    return [{k: v for k, v in line.items() if k not in ("seconds", "peak_rss_mb")} for line in trace]


# ---------------------------------------------------------------------------
# the sharded E-step, without Ray


@pytest.mark.parametrize("shards", [1, 2, 3, 7])
def test_shards_drawn_apart_merge_to_the_whole_minibatch(texts, reference, shards):
    learner = OnlineLearner(reference.compiled, reference.online, 3, state=reference.state,
                            variational=reference.variational)
    words, ptr = reference._pack_batch([list(t) for t in texts[:50]])
    batch = np.arange(5, 45, dtype=np.int64)
    seeds = np.arange(100, 140, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    G, S, V = learner.G, learner.state, learner.V
    whole, _ = draw_trees(G, S, V, words, ptr, batch, seeds, 4, 4)
    parts, distinct_parts = [], []
    ranges = split_batch(ptr, batch, shards)
    assert [r[0] for r in ranges][0] == 0 and ranges[-1][1] == len(batch)
    assert all(a[1] == b[0] for a, b in zip(ranges, ranges[1:]))
    template_S, template_V = estep_templates(G)
    weights = estep_weights(S, V)
    trie = YieldTrie(G.n_term)
    assert trie.extend(0, weights["trie_parent"], weights["trie_term"])
    for start, end in ranges:  # as a worker draws: from the weights alone, records compacted
        w, p = pack_shard(words, ptr, batch, start, end)
        S_view, V_view = estep_view(template_S, template_V, weights, trie)
        part, _ = draw_trees(G, S_view, V_view, w, p, np.arange(end - start, dtype=np.int64), seeds[start:end], 4, 1)
        parts.append(compact(part))
        distinct_parts.append(distinct(part))
    merged = merge_shards(parts)
    for got, want in zip(merge_shards(distinct_parts), distinct(whole)):
        assert np.array_equal(got, want)
    for name in ("samp_len", "scores", "status"):
        assert np.array_equal(getattr(merged, name), getattr(whole, name)), name
    for b in range(len(batch)):  # the records, tree by tree (the padding between sentences differs)
        n = whole.samp_len[b].sum()
        assert np.array_equal(merged.rec[merged.rec_ptr[b]:merged.rec_ptr[b] + n],
                              whole.rec[whole.rec_ptr[b]:whole.rec_ptr[b] + n])


def hashed(trie):
    return sorted((int(k), int(v)) for k, v in zip(trie.ht_key, trie.ht_val) if k != -1)


def test_a_yield_trie_grown_by_new_nodes_equals_the_whole_trie(reference):
    S, n_term = reference.state, reference.compiled.arrays.n_term
    n = int(S.counters[N_TRIE])
    assert n > 40
    whole = YieldTrie(n_term)
    whole.replace(S.trie_parent[:n], S.trie_term[:n])
    grown = YieldTrie(n_term)
    for first, end in zip([0, 1, 2, 9, 30], [1, 2, 9, 30, n]):  # as minibatches add nodes
        weights = estep_weights(S._replace(counters=np.where(np.arange(len(S.counters)) == N_TRIE, end, S.counters)),
                                reference.variational, trie_from=first)
        assert grown.extend(int(weights["trie_from"][0]), weights["trie_parent"], weights["trie_term"])
    assert grown.size == whole.size == n
    assert np.array_equal(grown.parent[:n], S.trie_parent[:n]) and np.array_equal(grown.term[:n], S.trie_term[:n])
    assert hashed(grown) == hashed(whole) == sorted(
        (int(S.trie_parent[y]) * n_term + int(S.trie_term[y]), y) for y in range(1, n))
    # a copy that does not end where the new nodes start takes none of them
    assert not grown.extend(n - 5, S.trie_parent[n - 5:n], S.trie_term[n - 5:n])
    assert grown.size == n and hashed(grown) == hashed(whole)
    grown.replace(S.trie_parent[:10], S.trie_term[:10])
    assert grown.size == 10 and len(hashed(grown)) == 9


def trees_of(rec, r, lengths):
    """The trees of one sentence as bytes, in order, from its records starting at rec[r]."""
    out = []
    for length in lengths:
        out.append(rec[r:r + length].tobytes())
        r += length
    return out


def test_distinct_draws_keep_each_tree_once_with_its_count_and_count_as_the_full_draws(texts, reference):
    learner = OnlineLearner(reference.compiled, reference.online, 3, state=reference.state,
                            variational=reference.variational)
    words, ptr = reference._pack_batch([list(t) for t in texts[:80]])
    batch = np.arange(80, dtype=np.int64)
    seeds = np.arange(80, dtype=np.uint64) * np.uint64(0x9E3779B97F4A7C15)
    full, _ = draw_trees(learner.G, learner.state, learner.V, words, ptr, batch, seeds, 6, 4)
    kept = distinct(full)
    repeats = 0
    for b in range(len(batch)):  # brute force: the trees in order of first draw, each with how often it was drawn
        trees = trees_of(full.rec, full.rec_ptr[b], full.samp_len[b])
        firsts = [t for i, t in enumerate(trees) if t not in trees[:i]]
        got = trees_of(kept.rec, kept.rec_ptr[b], kept.tree_len[b])
        assert [t for t, c in zip(got, kept.copies[b]) if c > 0] == firsts
        assert [c for c in kept.copies[b] if c > 0] == [trees.count(t) for t in firsts]
        assert all(length == 0 for length, c in zip(kept.tree_len[b], kept.copies[b]) if c == 0)
        repeats += len(trees) - len(firsts)
    assert repeats > 0 and kept.rec_ptr[-1] < full.samp_len.sum()
    # counted: the same state as the full draws give, bit for bit
    states = []
    for count in ("full", "distinct"):
        other = OnlineLearner(reference.compiled, reference.online, 3, state=copy_of(reference.state),
                              variational=copy_of(reference.variational))
        other._room_for(ptr, batch)
        if count == "full":
            step = lambda pos, need: absorb(other.G, other.state, other.V, words, ptr, batch, full.rec, full.rec_ptr,  # noqa: E731
                                            full.samp_len, full.status, 1 / 6, pos, other.stack, other.built, need)
        else:
            step = lambda pos, need: absorb_distinct(  # noqa: E731
                other.G, other.state, other.V, words, ptr, batch, kept.rec, kept.rec_ptr, kept.tree_len, kept.copies,
                kept.status, 1 / 6, pos, other.stack, other.built, need)
        other.drive(step, len(batch))
        states.append(fingerprint_of(other.state, other.V))
    assert states[0] == states[1]
    assert states[0] != fingerprint_of(learner.state, learner.V)  # the draws were counted


def copy_of(arrays):
    return type(arrays)(*(np.copy(a) if isinstance(a, np.ndarray) else a for a in arrays))


def fingerprint_of(state, V):
    arrays = state_arrays(state)
    arrays.update({f"vb_{k}": getattr(V, k) for k in V._fields})
    return {k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest() for k, v in sorted(arrays.items())}


def test_the_parallel_local_estep_runs_on_two_threads_with_the_one_thread_result(texts, reference, monkeypatch):
    if numba.config.NUMBA_NUM_THREADS < 2:
        pytest.skip("numba has one thread here")
    threads_seen = record_numba_threads(monkeypatch, online_module, "minibatches")
    monkeypatch.setattr(online_module, "PARALLEL_MIN_ENTRIES", 0)
    model = AdaptorGrammar(UNIGRAM, inference="online", online=OnlineSettings(**SETTINGS, workers=2),
                           default_a=0.0, default_b=10.0).fit(texts, seed=3)
    assert threads_seen and set(threads_seen) == {2}
    assert fingerprint(model) == fingerprint(reference)
    assert without_time(model.trace) == without_time(reference.trace)


# ---------------------------------------------------------------------------
# on a Ray cluster


def test_ray_estep_equals_local_for_one_and_two_workers_drawing_at_once(cluster, texts, reference):
    for workers in (1, 2):
        events = []
        with watch_estep(events.append):
            got = train(texts, backend="ray", workers=workers)
        assert fingerprint(got) == fingerprint(reference), f"{workers} workers"
        assert without_time(got.trace) == without_time(reference.trace)
        assert got.training_segmentation() == reference.training_segmentation()
        closing = [e for e in events if e["event"] == "closing"]
        assert len(closing) == 1 and len(closing[0]["workers"]) == workers
        stats = closing[0]["stats"]
        assert stats["minibatches"] == 2 * 10 and stats["bytes_sent"] > 0 and stats["bytes_received"] > 0
    reports = closing[0]["workers"]
    assert len({w["pid"] for w in reports}) == 2 and all(w["spans"] for w in reports)
    (a, b) = (sorted(w["spans"]) for w in reports)
    overlapping = sum(1 for s in a for t in b if s[0] < t[1] and t[0] < s[1])
    assert overlapping > 0, "the two workers never drew at the same time"


def test_batch_vb_on_ray_equals_local(cluster, texts):
    assert fingerprint(train(texts, mode="vb", backend="ray", workers=2)) == fingerprint(train(texts, mode="vb"))


def test_a_stream_trained_on_ray_equals_the_local_stream(cluster, texts):
    def stream_model(**fit):
        model = AdaptorGrammar(UNIGRAM, inference="online", online=OnlineSettings(**SETTINGS, workers=1),
                               default_a=0.0, default_b=10.0)
        return model.fit_stream(lambda: iter(texts), passes=2, seed=3, shuffle_buffer=50, **fit)

    assert fingerprint(stream_model(backend="ray", workers=2)) == fingerprint(stream_model())


def test_a_killed_estep_worker_is_restarted_and_the_model_is_unchanged(cluster, texts, reference):
    events, killed = [], []

    def kill_a_worker(line):
        if line["minibatch"] >= 6 and not killed:
            workers = next(e["workers"] for e in events if e["event"] == "started")
            pid = workers.where()[1][1]
            os.kill(pid, signal.SIGKILL)
            killed.append(pid)

    with watch_estep(events.append):
        got = train(texts, backend="ray", workers=2, callback=kill_a_worker)
    assert killed, "no trace line came before the end of the run"
    workers = next(e for e in events if e["event"] == "closing")["workers"]
    pids = {w["pid"] for w in workers}
    assert killed[0] not in pids and len(pids) == 2  # the lost worker runs again, in a new process
    # the new process had no copy of the yield trie: it fetched the whole trie once, the other never
    assert sorted(w["whole_tries"] for w in workers) == [0, 1]
    assert fingerprint(got) == fingerprint(reference)


#: A driver of its own for the two-raylet cluster: trains online, prints what the test compares.
TWO_NODE_DRIVER = """
import hashlib, json, sys
import numpy as np
from spacy_ag.model import AdaptorGrammar
from spacy_ag.runs.ray_estep import watch_estep
from spacy_ag.settings import OnlineSettings
from spacy_ag.serialize import state_arrays
address, settings, grammar, texts = json.loads(sys.stdin.read())
events = []
model = AdaptorGrammar(grammar, inference="online", online=OnlineSettings(**settings, workers=1),
                       default_a=0.0, default_b=10.0)
with watch_estep(events.append):
    model.fit(texts, seed=3, backend="ray", ray_address=address, workers=2)
arrays = state_arrays(model.state)
arrays.update({f"vb_{k}": getattr(model.variational, k) for k in model.variational._fields})
closing = next(e for e in events if e["event"] == "closing")
print(json.dumps({"nodes": sorted({w["node"] for w in closing["workers"]}),
                  "state": {k: hashlib.sha256(np.ascontiguousarray(v).tobytes()).hexdigest()
                            for k, v in sorted(arrays.items())}}))
"""


def test_estep_on_two_raylets_equals_local(texts, reference, two_raylets):
    got = run_driver(TWO_NODE_DRIVER, [two_raylets, SETTINGS, UNIGRAM, texts])
    assert len(got["nodes"]) == 2  # one CPU per raylet: one worker on each
    assert got["state"] == fingerprint(reference)
