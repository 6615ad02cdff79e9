"""Re-derivation of grammaton entries (docs/algorithms.md 4.9) and the E-step's counting of repeated trees.

Re-derivation draws every entry on the threads, where it also decides which
draws equal the entry's derivation already; the serial phase applies the
rest. These tests hold each shortcut to the slow path it replaces: the
threads' verdict to building the tree and comparing it, the counting of one
tree drawn several times to counting every draw, and the serial phase to
the entries it was given (not a newcomer that took a freed table).
"""
import numpy as np
import pytest

from spacy_ag.core.grammatons import NEXT_RANK, entries_by_rank, fit_capacity, same_derivation
from spacy_ag.runs.online_learner import OnlineLearner, OnlineSettings
from spacy_ag.core.state import OPEN, State, grow, yield_terms
from spacy_ag.core.variational import (
    UNCHANGED, _draw_is_label, _rederive_draw, absorb, copies_of_samples, materialize, rederive_apply,
    rederive_draws, rederive_layout,
)
from test_variational import check_grammatons, colloc, run_passes  # noqa: F401  (fixture; tests/unit is on the path)

SETTINGS = OnlineSettings(batch_size=10, tau=4, kappa=0.7, samples=4, refine_every=0,
                          truncation={"Colloc": 40, "Word": 40})


def trained(compiled, words, ptr, seed):
    learner = OnlineLearner(compiled, SETTINGS, seed=seed)
    run_passes(learner, words, ptr, 1, 10)
    return learner


def roomy_copies(G, S, V):
    """Copies of the state and the statistics, with room for a few more trees and entries."""
    T = grow(S._replace(**{name: getattr(S, name).copy() for name in State._fields}), 2000, 200, 2000, G.n_term)
    W = V._replace(**{name: getattr(V, name).copy() for name in V._fields})
    return T, fit_capacity(W, T.tab_count.shape[0])


def layout(learner, ad):
    entries = entries_by_rank(learner.state, learner.V, ad)
    rec_ptr = np.empty(len(entries) + 1, np.int64)
    longest = int(rederive_layout(learner.G, learner.state, entries, learner.compiled.max_unary_chain, rec_ptr))
    return entries, rec_ptr, longest, np.empty((int(rec_ptr[-1]), 6), np.int32)


def test_the_threads_verdict_unchanged_is_what_building_the_tree_finds(colloc):
    compiled, words, ptr = colloc
    G = compiled.arrays
    verdicts = {True: 0, False: 0}
    for seed in (1, 2):
        learner = trained(compiled, words, ptr, seed)
        S, V = learner.state, learner.V
        for ad in G.adaptor_order:
            entries, rec_ptr, longest, rec = layout(learner, ad)
            counts = np.empty(len(entries), np.int64)
            stack = np.empty(int(np.diff(rec_ptr).max()) + 2, np.int32)
            for e in range(len(entries)):
                _rederive_draw(G, S, V, entries, np.uint64(seed), longest, rec, rec_ptr, counts, e)
                assert counts[e] >= 0
                r0, r1 = rec_ptr[e], rec_ptr[e] + counts[e]
                k = entries[e]
                verdict = _draw_is_label(G, S, rec, r0, r1, S.tab_label[k], ad, stack)
                # the slow path, on copies: build the tree (finding or adding lower entries), compare
                T, W = roomy_copies(G, S, V)
                terms = np.empty(longest + 1, np.int32)
                yield_terms(T, T.tab_yield[k], terms)
                built = np.empty(int(r1 - r0) + 16, np.int32)
                walk = np.empty(4 * int(T.node_kind.shape[0]) + 16, np.int32)
                new = materialize(G, T, W, rec, r0, r1, terms, 0.0, 1, walk, built)
                assert verdict == same_derivation(T, new, T.tab_label[k], walk), (seed, ad, e)
                verdicts[verdict] += 1
            # the parallel kernel gives the same verdicts as the draws one by one
            parallel = np.empty(len(entries), np.int64)
            rederive_draws(G, S, V, entries, np.uint64(seed), longest, rec, rec_ptr, parallel)
            changed = parallel >= 0
            assert ((parallel == UNCHANGED) | changed).all()
    assert verdicts[True] > 20 and verdicts[False] > 20, verdicts


def test_a_table_freed_and_taken_within_the_pass_keeps_its_new_entry(colloc):
    """A Colloc entry merged away frees its table; a Word entry that the pass creates later may
    take it. The draw made for the Colloc entry must not be applied to that Word entry (it once
    was, giving a Word a Colloc derivation until the Word pass re-derived it). The draws are
    applied here without the threads' verdicts, so that every one goes through the serial phase."""
    compiled, words, ptr = colloc
    G = compiled.arrays
    taken = 0
    for seed in range(1, 7):
        learner = trained(compiled, words, ptr, seed)
        ad = int(G.adaptor_order[0])
        entries, rec_ptr, longest, rec = layout(learner, ad)
        counts = np.empty(len(entries), np.int64)
        for e in range(len(entries)):
            _rederive_draw(G, learner.state, learner.V, entries, np.uint64(seed), longest, rec, rec_ptr, counts, e)
        first_new_rank = int(learner.V.counters[NEXT_RANK])
        learner._workspace(longest)
        stats = np.zeros(2, np.int64)
        learner.drive(lambda pos, need: rederive_apply(
            G, learner.state, learner.V, entries, first_new_rank, pos, rec, rec_ptr, counts, learner.terms,
            learner.stack, learner.built, stats, need), len(entries))
        S, V = learner.state, learner.V
        check_grammatons(G, S)  # every label is a derivation of its own adaptor's nonterminal
        taken += sum(1 for k in entries if S.tab_state[k] == OPEN and V.rank[k] >= first_new_rank)
    assert taken > 0  # the case arose


def test_copies_of_samples_counts_each_tree_at_its_first_draw():
    rows = {"a": [[1, 2, 3, 1, 0, 2]], "b": [[1, 2, 4, 1, 0, 2]], "c": [[0, 5, 1, 0, 0, 1], [0, 5, 2, 0, 1, 2]]}
    order = ["a", "b", "a", "c", "a", "b"]
    rec = np.array([row for name in order for row in rows[name]], np.int32)
    rec = np.concatenate([np.full((3, 6), 9, np.int32), rec])  # the sentence's records start at 3
    lengths = np.array([len(rows[name]) for name in order], np.int64)
    copies = np.empty(len(order), np.int64)
    copies_of_samples(rec, 3, lengths, copies)
    assert copies.tolist() == [3, 2, 0, 1, 0, 0]


def test_counting_a_repeated_tree_once_gives_the_counts_of_every_draw(colloc):
    """absorb counts a tree drawn m times once, adding the weight m times: the statistics are
    those of counting each draw, bit for bit, and the grammatons the same."""
    compiled, words, ptr = colloc
    G = compiled.arrays
    learner = trained(compiled, words, ptr, 3)
    batch = np.arange(40, dtype=np.int64)
    rec, rec_ptr, samp_len, _, status = learner.sample(words, ptr, batch, 99)
    repeated = 0
    for b in range(len(batch)):
        copies = np.empty(samp_len.shape[1], np.int64)
        copies_of_samples(rec, rec_ptr[b], samp_len[b], copies)
        repeated += int((copies == 0).sum())
    assert repeated > 20

    def counts(one_sample_per_call):
        S, V = roomy_copies(G, learner.state, learner.V)
        stack = np.empty(4 * S.node_kind.shape[0] + 16, np.int32)
        built = np.empty(4 * S.node_kind.shape[0] + 16, np.int32)
        need = np.zeros(4, np.int64)
        w = 1.0 / samp_len.shape[1]
        if not one_sample_per_call:
            assert absorb(G, S, V, words, ptr, batch, rec, rec_ptr, samp_len, status, w, 0, stack, built,
                          need) == len(batch)
        else:  # every draw its own "sentence" of one sample: nothing to recognise as repeated
            for b in range(len(batch)):
                r = rec_ptr[b]
                for s in range(samp_len.shape[1]):
                    one_ptr = np.array([r, r + samp_len[b, s]], np.int64)
                    assert absorb(G, S, V, words, ptr, batch[b:b + 1], rec, one_ptr, samp_len[b:b + 1, s:s + 1],
                                  status[b:b + 1], w, 0, stack, built, need) == 1
                    r += samp_len[b, s]
        open_ = S.tab_state == OPEN
        return V.f_batch[open_].copy(), V.g_batch.copy(), np.flatnonzero(open_), S.f.copy(), S.tab_count.copy()

    once, every = counts(False), counts(True)
    for a, b in zip(once, every):
        assert np.array_equal(a, b)
    assert once[1].sum() > 0
