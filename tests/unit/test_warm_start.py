"""The warm start of a chain from an online pass (`[sampler] init = "online"`, runs/warm_start.py).

The chain's first state must be one the sampler can run on (the counts of its
trees, tables pointing at open tables of their adaptor, labels spelling their
yields: `check_state`), each sentence's analysis must spell the sentence, and the
online model's lexicon must carry over: one table per grammaton entry, shared by
all its uses, so that a known lexicon is recovered before the first sweep.
"""
from __future__ import annotations

from dataclasses import replace

import numpy as np
import pytest

from spacy_ag.runs.mcmc_chain import Chain, SamplerSettings, pack_corpus
from spacy_ag.core.compiled import CompiledGrammar
from spacy_ag.core.hyper import log_posterior
from spacy_ag.runs.warm_start import warm_start
from spacy_ag.evaluation import segmentation_scores
from spacy_ag.grammar import parse_grammar_text
from spacy_ag.model import AdaptorGrammar
from spacy_ag.serialize import state_arrays
from spacy_ag.settings import OnlineSettings
from spacy_ag.core.state_checks import check_state
from spacy_ag.synthetic import generate_corpus, make_lexicon
from spacy_ag.runs.marginal_decoding import words_from_key

ALPHABET = "abcdefgh"
GRAMMAR = ("1 1 Sentence --> Colloc+\nColloc --> Word+\nWord --> Char+\n"
           + "".join(f"1 1 Char --> {c}\n" for c in ALPHABET))
ONLINE = OnlineSettings(batch_size=10, tau=16.0, kappa=0.8, refine_every=10, samples=5, workers=1)


@pytest.fixture(scope="module")
def corpus():
    lexicon = make_lexicon(25, alphabet=ALPHABET, min_len=2, max_len=5, seed=7)
    return generate_corpus(lexicon, 300, mean_words=3.0, seed=8, collocations=5)


def _chain(corpus, init="batch", seed=3):
    compiled = CompiledGrammar(parse_grammar_text(GRAMMAR, default_a=1e-4, default_b=100.0))
    sentences = [list("".join(u)) for u in corpus]
    words, sent_ptr = pack_corpus(compiled, sentences)
    return Chain(compiled, words, sent_ptr, SamplerSettings(init=init), seed=seed)


def _segmentation(chain, corpus):
    """The words of the chain's current analyses (yields of Word)."""
    keys = chain.segmentation_keys(chain.compiled.symbol_mask(["Word"]))
    return [words_from_key(list("".join(u)), k) for u, k in zip(corpus, keys)]


def test_the_warm_state_is_a_valid_mcmc_state_whose_analyses_spell_the_sentences(corpus):
    chain = _chain(corpus)
    warm_start(chain, ONLINE)
    check_state(chain.compiled, chain.state, None, "<warm start>")
    pred = _segmentation(chain, corpus)
    assert ["".join(p) for p in pred] == ["".join(u) for u in corpus]
    assert np.isfinite(log_posterior(chain.G, chain.state, True))
    for _ in range(2):  # the sampler runs on it, and keeps it valid
        chain.step()
    check_state(chain.compiled, chain.state, None, "<two sweeps after the warm start>")


def test_entries_become_shared_tables_and_the_lexicon_is_there_before_any_sweep(corpus):
    warm, cold = _chain(corpus), _chain(corpus)
    warm_start(warm, ONLINE)
    cold.initialize()
    word = list(warm.compiled.adapted).index("Word")
    # batch initialisation opens a table per adapted node; the warm start one per entry it reuses
    assert cold.state.ad_m[word] == cold.state.ad_n[word]
    assert warm.state.ad_m[word] < 0.5 * warm.state.ad_n[word]
    gold = [list(u) for u in corpus]
    f_warm = segmentation_scores(_segmentation(warm, corpus), gold)["token_f"]
    f_cold = segmentation_scores(_segmentation(cold, corpus), gold)["token_f"]
    assert f_warm > 0.4 and f_warm > f_cold + 0.3  # (.51 against .06 here)


def test_the_warm_start_is_reproducible_and_depends_on_the_seed(corpus):
    runs = []
    for seed in (3, 3, 4):
        chain = _chain(corpus, seed=seed)
        warm_start(chain, ONLINE)
        runs.append(state_arrays(chain.state))
    assert all(np.array_equal(runs[0][k], runs[1][k]) for k in runs[0])
    assert not all(np.array_equal(runs[0][k], runs[2][k]) for k in runs[0] if runs[0][k].shape == runs[2][k].shape)


def test_fit_with_init_online_trains_resumes_and_decodes(corpus, tmp_path):
    texts = ["".join(u) for u in corpus]
    gold = [list(u) for u in corpus]

    def model():
        return AdaptorGrammar(parse_grammar_text(GRAMMAR, default_a=1e-4, default_b=100.0),
                              sampler=SamplerSettings(init="online"), online=replace(ONLINE))

    whole = model().fit(texts, iterations=4, seed=5, gold=gold, eval_at=(1,), checkpoint_every=0)
    assert whole.trace[0]["token_f"] > 0.45  # one sweep after the warm start (.55 here; batch initialisation: .39)
    model().fit(texts, iterations=2, seed=5, checkpoint_dir=tmp_path, checkpoint_every=2)
    resumed = model().fit(texts, iterations=4, seed=5, checkpoint_dir=tmp_path, checkpoint_every=2, resume=True)
    assert resumed.segment(texts) == whole.segment(texts)
    assert [l["log_posterior"] for l in resumed.trace] == [l["log_posterior"] for l in whole.trace]
