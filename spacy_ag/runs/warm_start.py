"""Warm start of an MCMC chain from an online model (`[sampler] init = "online"`, docs/algorithms.md 3.11).

One online pass learns in seconds what the first tens of sweeps learn from a
batch initialisation. The driver runs the pass, then has each sentence's
first draw under the final G' seated as the chain's first analysis
(`spacy_ag.core.seating.seat_draws`), a batch of sentences at a time.
"""
from __future__ import annotations

import numpy as np

from ..core.seating import seat_draws
from ..settings import OnlineSettings
from .mcmc_chain import UnparseableSentence
from .online_learner import OnlineLearner

#: Sentences drawn at a time when the chain's first analyses are seated (bounds the records in memory).
DRAW_BATCH = 2000


def warm_start(chain, settings: OnlineSettings) -> OnlineLearner:
    """Initialise `chain` (a fresh `Chain`) from `settings.passes` online passes over its corpus.

    The learner has the chain's seed; each sentence's first analysis is the first of the trees
    its E-step draws under the final G' (random streams -1, -2, ...: the pass used 1, 2, ...).
    """
    words, sent_ptr, n = chain.words, chain.sent_ptr, chain.n_sentences
    learner = OnlineLearner(chain.compiled, settings, seed=chain.seed)
    for epoch in range(settings.passes):
        order = learner.shuffled(n, epoch)
        for i in range(0, n, settings.batch_size):
            learner.step(words, sent_ptr, order[i:i + settings.batch_size], settings.corpus_size or n)
    entry_table = np.full(learner.state.tab_count.shape[0], -1, np.int64)
    for i in range(0, n, DRAW_BATCH):
        batch = np.arange(i, min(n, i + DRAW_BATCH), dtype=np.int64)
        rec, rec_ptr, samp_len, _, status = learner.sample(words, sent_ptr, batch, -1 - i // DRAW_BATCH)
        pos = 0
        while pos < len(batch):
            new_pos = seat_draws(chain.G, learner.state, chain.state, words, sent_ptr, batch, rec, rec_ptr,
                                 samp_len, status, pos, chain.settings.collapsed, chain.max_unary, entry_table)
            if new_pos < 0:
                raise UnparseableSentence(-new_pos - 1)
            if new_pos == pos:
                chain._grow(chain.max_len)
            pos = new_pos
    return learner
