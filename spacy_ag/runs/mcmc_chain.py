"""One Markov chain: the Python driver around the compiled kernels.

A chain owns a sampler state and a corpus encoded as terminal ids. Each call
of `step` runs one full iteration (3.10) as a handful of kernel calls; the
only Python work per iteration is growing pools when a kernel asks for it.
"""
from __future__ import annotations

import itertools
import resource
import time
from typing import Dict, List, Optional, Sequence

import numpy as np

from ..settings import SamplerSettings
from ..core.analyses import SAME_ANALYSIS, SAME_VALUE
from ..core.compiled import CompiledGrammar
from ..core.hyper import log_hyper_prior, log_posterior, sample_hyperparameters
from ..core.rng import make_rng, shuffle
from ..core.chart import tables_need, trie_need
from ..core.sampler import (
    ACCEPTED, LABEL_ACCEPTED, LABEL_REJECTED, LABEL_UNCHANGED, N_STATS, REJECTED, UNCHANGED,
    Workspace, add_all, initialize, need_nodes, open_tables, resample_labels, sweep, tables_in_yield_order,
)
from ..core.segmentation import corpus_marks
from ..core.state import State, grow, new_state


class UnparseableSentence(ValueError):
    def __init__(self, index: int):
        super().__init__(f"sentence {index + 1} has no parse under the grammar")
        self.index = index


def pack_corpus(compiled: CompiledGrammar, sentences: Sequence[Sequence[str]]):
    """Flat terminal ids and sentence offsets; unknown terminals are reported by the caller."""
    lengths = np.array([len(s) for s in sentences], dtype=np.int64)
    sent_ptr = np.zeros(len(sentences) + 1, dtype=np.int64)
    np.cumsum(lengths, out=sent_ptr[1:])
    # map over dict.get runs in C: a Python generator here would take most of the time of packing a stream
    ids = map(compiled.term_index.get, itertools.chain.from_iterable(sentences), itertools.repeat(-1))
    words = np.fromiter(ids, dtype=np.int32, count=int(sent_ptr[-1]))
    return words, sent_ptr


class Chain:
    def __init__(self, compiled: CompiledGrammar, words: np.ndarray, sent_ptr: np.ndarray,
                 settings: SamplerSettings, seed: int, state: Optional[State] = None,
                 iteration: int = 0):
        self.compiled = compiled
        self.G = compiled.arrays
        self.words = words
        self.sent_ptr = sent_ptr
        self.settings = settings
        self.seed = seed
        self.n_sentences = len(sent_ptr) - 1
        lengths = np.diff(sent_ptr)
        self.max_len = int(lengths.max()) if len(lengths) else 1
        self.max_unary = compiled.max_unary_chain
        self.ws = Workspace(compiled, self.max_len)
        self.iteration = iteration
        if state is None:
            a, b = compiled.adaptor_params()
            G = self.G
            total = int(sent_ptr[-1])
            state = new_state(
                G.rule_parent.shape[0], G.n_nt, G.adaptor_nt.shape[0], self.n_sentences, a, b,
                # a first guess at the pools; kernels ask for more when needed
                make_rng(seed), node_cap=max(1024, 2 * total), tab_cap=max(256, total // 4),
                trie_cap=max(1024, total),
            )
        self.state = state

    # ------------------------------------------------------------------
    def _grow(self, n: int):
        self.state = grow(self.state, need_nodes(self.G, n, self.max_unary), tables_need(self.G, n),
                          trie_need(self.G, n), self.G.n_term)

    def _drive(self, kernel, n_items: int, *args):
        """Call `kernel(pos)` until it has covered all items, growing pools in between."""
        pos = 0
        while pos < n_items:
            new_pos = kernel(pos, *args)
            if new_pos < 0:
                raise UnparseableSentence(-new_pos - 1)
            if new_pos == pos:
                self._grow(self.max_len)
            pos = new_pos

    def initialize(self):
        s, ws, G = self.settings, self.ws, self.G
        order = np.arange(self.n_sentences, dtype=np.int64)
        incremental = s.init == "incremental"
        self._drive(lambda pos: initialize(
            G, self.state, self.words, self.sent_ptr, order, pos, incremental, s.collapsed,
            self.max_unary, ws.rho, ws.chart, ws.scale, ws.ynode, ws.window, ws.tasks, ws.buf), len(order))
        if not incremental:
            self._drive(lambda pos: add_all(G, self.state, order, pos, s.collapsed, self.max_unary,
                                            self.sent_ptr), len(order))

    def step(self) -> Dict:
        """One iteration: every sentence, then table labels, then hyperparameters."""
        s, ws, G = self.settings, self.ws, self.G
        started = time.perf_counter()
        self.iteration += 1
        it = self.iteration
        temp = s.temperature(it)
        inv_temp = 1.0 / temp
        stats = np.zeros(N_STATS, np.int64)
        order = np.arange(self.n_sentences, dtype=np.int64)
        if s.random_order:
            shuffle(self.state.rng, order)
        self._drive(lambda pos: sweep(
            G, self.state, self.words, self.sent_ptr, order, pos, s.collapsed, inv_temp, s.mh,
            self.max_unary, ws.rho, ws.chart, ws.scale, ws.ynode, ws.window, ws.tasks, ws.buf, stats), len(order))
        if s.label_resampling:
            if s.label_order == "yield":
                passes = [tables_in_yield_order(self.state, G.n_term)]
            else:  # lazily: each adaptor's tables are listed after the pass over the one above
                passes = (open_tables(self.state, ad, self.state.rng) for ad in G.adaptor_order)
            for tables in passes:
                self._drive(lambda pos: resample_labels(
                    G, self.state, tables, pos, s.collapsed, inv_temp, self.max_unary, ws.rho,
                    ws.chart, ws.scale, ws.ynode, ws.window, ws.tasks, ws.buf, ws.terms, stats,
                    SAME_VALUE if s.label_equality == "value" else SAME_ANALYSIS), len(tables))
        if s.sample_hyper and it >= s.hyper_start:
            sample_hyperparameters(self.state, s.sample_a, s.beta_e, s.beta_f, s.gamma_shape,
                                   s.gamma_scale, s.hyper_rounds, s.hyper_iterations)
        return self.trace_line(stats, time.perf_counter() - started, temp)

    def trace_line(self, stats, seconds, temp=1.0) -> Dict:
        s, st = self.settings, self.state
        log_p = float(log_posterior(self.G, st, s.collapsed))
        log_prior = float(log_hyper_prior(st, s.sample_a, s.beta_e, s.beta_f, s.gamma_shape,
                                          s.gamma_scale)) if s.sample_hyper else 0.0
        proposals = int(stats[ACCEPTED] + stats[REJECTED] + stats[UNCHANGED])
        names = self.compiled.adapted
        return {
            "iteration": self.iteration,
            "log_posterior": log_p,
            "log_prior": log_prior,
            "temperature": temp,
            "accepted": int(stats[ACCEPTED]),
            "rejected": int(stats[REJECTED]),
            "unchanged": int(stats[UNCHANGED]),
            "acceptance_rate": (proposals - int(stats[REJECTED])) / proposals if proposals else 1.0,
            "label_accepted": int(stats[LABEL_ACCEPTED]),
            "label_rejected": int(stats[LABEL_REJECTED]),
            "label_unchanged": int(stats[LABEL_UNCHANGED]),
            "tables": {n: int(st.ad_m[i]) for i, n in enumerate(names)},
            "customers": {n: int(st.ad_n[i]) for i, n in enumerate(names)},
            "a": {n: float(st.ad_a[i]) for i, n in enumerate(names)},
            "b": {n: float(st.ad_b[i]) for i, n in enumerate(names)},
            "seconds": seconds,
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }

    # ------------------------------------------------------------------
    def boundary_marks(self, seg_mask: np.ndarray) -> np.ndarray:
        marks = np.zeros(int(self.sent_ptr[-1]) + self.n_sentences, np.uint8)
        corpus_marks(self.state, self.sent_ptr, seg_mask, marks)
        return marks

    def segmentation_keys(self, seg_mask: np.ndarray) -> List[bytes]:
        """One hashable key per sentence: its boundary marks."""
        marks = self.boundary_marks(seg_mask)
        ptr = self.sent_ptr
        return [marks[ptr[d] + d: ptr[d + 1] + d + 1].tobytes() for d in range(self.n_sentences)]
