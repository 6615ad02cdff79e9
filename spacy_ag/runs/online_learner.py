"""The hybrid online learner: the Python driver around the variational kernels (docs/algorithms.md 4.11).

`OnlineLearner.step` is one minibatch of Algorithm 2, `steps` several in a
row (one kernel call up to each refinement). Everything the learner
knows is in two namedtuples of arrays (the `State` holding the grammatons
and the `Variational` statistics) plus a few counters, so it saves, resumes
and continues like an MCMC chain. Batch variational Bayes is the same loop
with the whole corpus as one minibatch and step size 1.
"""
from __future__ import annotations

import resource
import time
from contextlib import contextmanager
from typing import Dict, Optional, Sequence, Tuple

import numba
import numpy as np

from ..settings import OnlineSettings
from .mcmc_chain import UnparseableSentence
from ..core.compiled import CompiledGrammar
from .sharded_estep import draw_trees, one_item_at_a_time
from ..core.grammatons import NEXT_RANK, Variational, entries_by_rank, fit_capacity, new_variational
from ..core.rng import make_rng, shuffle, stream_seed, stream_seeds
from ..core.sampler import need_nodes
from ..core.state import State, grow, new_state
from ..core.variational import (
    OK, UNPARSEABLE, absorb, absorb_distinct, batch_loglik, decay, grammaton_sizes, longest_entry, merge_duplicates,
    minibatches, prune, rank_by_counts, refresh_weights, rederive_apply, rederive_draws, rederive_layout,
    sentence_statistics_from_analyses,
)
from ..core.vhyper import update_alpha, update_concentration, update_discount

_MASK = (1 << 64) - 1
#: Entries of one adaptor below which re-derivation draws on one thread.
PARALLEL_MIN_ENTRIES = 64


def mix_seeds(*values: int) -> int:
    """A 64-bit seed from integers (splitmix64 steps), for per-sentence random streams
    (`rng.stream_seeds` gives the last step for many values at once)."""
    x = 0x243F6A8885A308D3
    for v in values:
        z = ((x ^ (int(v) & _MASK)) + 0x9E3779B97F4A7C15) & _MASK
        z = ((z ^ (z >> 30)) * 0xBF58476D1CE4E5B9) & _MASK
        z = ((z ^ (z >> 27)) * 0x94D049BB133111EB) & _MASK
        x = z ^ (z >> 31)
    return x


class OnlineLearner:
    """Grammatons plus variational statistics, updated one minibatch at a time."""

    def __init__(self, compiled: CompiledGrammar, settings: OnlineSettings, seed: int = 0,
                 state: Optional[State] = None, variational: Optional[Variational] = None,
                 progress: Optional[Dict] = None):
        self.compiled = compiled
        self.G = compiled.arrays
        self.settings = settings
        self.seed = int(seed)
        G = self.G
        n_ad = G.adaptor_nt.shape[0]
        if state is None:
            a, b = compiled.adaptor_params()
            state = new_state(G.rule_parent.shape[0], G.n_nt, n_ad, 0, a, b, make_rng(seed),
                              node_cap=4096, tab_cap=1024, trie_cap=4096)
        if variational is None:
            variational = new_variational(G.rule_alpha, n_ad, state.tab_count.shape[0])
            refresh_weights(G, state, variational, 1.0)
        self.state = state
        self.V = fit_capacity(variational, state.tab_count.shape[0])
        progress = progress or {}
        self.minibatches = int(progress.get("minibatches", 0))
        self.seen = int(progress.get("seen", 0))
        self.inside_calls = int(progress.get("inside_calls", 0))
        self.keep_prod = float(progress.get("keep_prod", 1.0))  # prod of (1 - eps) for bias correction
        self.record_factor = 4
        self.max_len = max(1, int(longest_entry(self.state)))  # entries may come from longer text
        self._work_len = 0
        self.truncation = np.array([self._truncation(name) for name in compiled.adapted], np.int64)
        #: nonterminals whose Dirichlet prior the Newton steps leave alone
        self.alpha_fixed = np.zeros(G.n_nt, np.bool_)
        #: draws the E-step elsewhere (`spacy_ag.runs.ray_estep.RayEStep`); None: here, on `workers` threads
        self.remote_estep = None

    # ------------------------------------------------------------------ settings
    def _truncation(self, name: str) -> int:
        if name in self.settings.truncation:
            return int(self.settings.truncation[name])
        options = self.compiled.grammar.adaptors[name].options
        return int(options.get("K", self.settings.default_truncation))

    def progress(self) -> Dict:
        return {"minibatches": self.minibatches, "seen": self.seen, "inside_calls": self.inside_calls,
                "keep_prod": self.keep_prod}

    def step_size(self, l: int) -> float:
        s = self.settings
        return float((s.tau + l) ** (-s.kappa)) if s.kappa > 0 else 1.0

    def correction(self) -> float:
        s = self.settings
        if s.statistics_scale == "tau_kappa" and s.kappa > 0:
            return float(s.tau ** s.kappa)
        if s.statistics_scale == "bias" and self.keep_prod < 1.0:
            return 1.0 / (1.0 - self.keep_prod)
        return 1.0

    # ------------------------------------------------------------------ warm start
    @classmethod
    def from_mcmc(cls, compiled: CompiledGrammar, settings: OnlineSettings, state: State, seed: int = 0):
        """Continue an MCMC state variationally: tables become grammaton entries (4.12)."""
        state = state._replace(**{name: getattr(state, name).copy() for name in State._fields})
        G = compiled.arrays
        V = new_variational(G.rule_alpha, G.adaptor_nt.shape[0], state.tab_count.shape[0])
        stack = np.empty(2 * state.node_kind.shape[0] + 16, np.int32)
        sentence_statistics_from_analyses(G, state, V, stack)
        merge_duplicates(G, state, V, stack)
        rank_by_counts(G, state, V)
        learner = cls(compiled, settings, seed, state=state, variational=V,
                      progress={"seen": state.sent_root.shape[0]})
        refresh_weights(G, learner.state, learner.V, 1.0)
        return learner

    # ------------------------------------------------------------------ pools
    def _workspace(self, max_len: int):
        if max_len <= self._work_len:
            return
        self._work_len = max(max_len, 2 * self._work_len)
        per_tree = int(need_nodes(self.G, self._work_len, self.compiled.max_unary_chain)) + 16
        self.stack = np.empty(2 * per_tree + 16, np.int32)
        self.built = np.empty(per_tree, np.int32)
        self.terms = np.empty(self._work_len + 1, np.int32)

    def _room_for(self, sent_ptr: np.ndarray, items: np.ndarray) -> None:
        """A workspace for the longest of these sentences and of all seen before (and the entries)."""
        self.max_len = max(self.max_len, int((sent_ptr[items + 1] - sent_ptr[items]).max()))
        self._workspace(self.max_len)

    def drive(self, kernel, n_items: int, pos: int = 0, need: Optional[np.ndarray] = None) -> None:
        """Call `kernel(pos, need)` until it has covered n_items; when it stops early, grow the pools
        by exactly what its room check wrote to `need` (nodes, tables, trie nodes) and call again.
        `need`: the array of a kernel that stopped inside a sentence (need[3], `absorb`), to go on there."""
        need = np.zeros(4, np.int64) if need is None else need
        while pos < n_items:
            new_pos = kernel(pos, need)
            if new_pos == pos:
                self.state = grow(self.state, int(need[0]), int(need[1]), int(need[2]), self.G.n_term)
                self.V = fit_capacity(self.V, self.state.tab_count.shape[0])
            pos = new_pos

    # ------------------------------------------------------------------ E-step
    def sample(self, words: np.ndarray, sent_ptr: np.ndarray, batch: np.ndarray, stream: int):
        """Draw `samples` trees for each sentence of `batch` under the current G' (in parallel).

        Returns `Draws` (records, record offsets, tree lengths, tree log weights, status). With
        `remote_estep` set (the Ray backend), its workers draw, with the same result.
        """
        seeds = self._seeds(stream, len(batch))
        if self.remote_estep is not None:
            return self.remote_estep.draw(self, words, sent_ptr, batch, seeds)
        with self._threads(True):
            draws, self.record_factor = draw_trees(self.G, self.state, self.V, words, sent_ptr, batch, seeds,
                                                   self.settings.samples, self.record_factor)
        return draws

    def _seeds(self, stream: int, n: int) -> np.ndarray:
        """The seeds of the n sentences' random streams in E-step number `stream`: mix_seeds(seed, stream, i)."""
        return stream_seeds(np.uint64(stream_seed(self._seed_key(), stream)), n)

    def _seed_key(self) -> np.uint64:
        """mix_seeds(seed): E-step number `stream`'s key is `stream_seed(_seed_key(), stream)`, which is
        mix_seeds(seed, stream), made here and in the `minibatches` kernel alike."""
        return np.uint64(mix_seeds(self.seed))

    @contextmanager
    def _threads(self, worth_it: bool):
        """Run the parallel kernels of the block on `workers` threads if the work is worth the
        hand-offs, else on one; the results are the same either way (per-item random streams)."""
        workers = max(1, min(self.settings.workers or numba.config.NUMBA_NUM_THREADS,
                             numba.config.NUMBA_NUM_THREADS))
        threads = numba.get_num_threads()
        wanted = workers if worth_it else 1
        if wanted == threads:  # nested blocks and one-thread runs: nothing to switch
            yield
            return
        numba.set_num_threads(wanted)
        try:
            yield
        finally:
            numba.set_num_threads(threads)

    # ------------------------------------------------------------------ one minibatch
    def step(self, words: np.ndarray, sent_ptr: np.ndarray, batch: np.ndarray,
             corpus_size: Optional[int] = None) -> Dict:
        """One minibatch of Algorithm 2 over the sentences `batch` (indices into sent_ptr).

        Raises `UnparseableSentence` with the index of a sentence that has no parse.
        """
        batch = np.asarray(batch, dtype=np.int64)
        if not len(batch):
            return {}
        return self.steps(words, sent_ptr, [batch], corpus_size)

    def steps(self, words: np.ndarray, sent_ptr: np.ndarray, batches: Sequence[np.ndarray],
              corpus_size: Optional[int] = None) -> Dict:
        """Minibatches one after another (none empty), each as `step` does it; returns the trace
        line of the last, its `seconds` those of the whole call.

        Locally the minibatches up to each refinement run in one kernel call (`minibatches`):
        the Python around one call per minibatch is a large share of a small minibatch's time
        (docs/performance.md). A refinement's line is returned only if it is the last.
        """
        started = time.perf_counter()
        line: Dict = {}
        with self._threads(True):
            j, u = 0, self.settings.refine_every
            while j < len(batches):
                k = len(batches) - j
                if u:
                    k = min(k, u - self.minibatches % u)
                eps, loglik = self._collect(words, sent_ptr, batches[j:j + k], corpus_size)
                j += k
                line = self.end_minibatch(eps, started, loglik)
        return line

    def begin_minibatch(self, n_items: int, corpus_size: Optional[int]):
        """Count the minibatch; return its step size and D / |B|."""
        s = self.settings
        self.minibatches += 1
        self.seen += n_items
        eps = self.step_size(self.minibatches)
        self.keep_prod *= 1.0 - eps
        D = corpus_size or s.corpus_size or self.seen
        return eps, D / n_items

    def _begin_minibatches(self, batches, corpus_size) -> Tuple[np.ndarray, np.ndarray, np.ndarray]:
        """`begin_minibatch` of each, as the E-step of each counts: their step sizes, D / |B| and
        corrections."""
        n = len(batches)
        eps, scale, corr = np.empty(n), np.empty(n), np.empty(n)
        for j, batch in enumerate(batches):
            eps[j], scale[j] = self.begin_minibatch(len(batch), corpus_size)
            self.inside_calls += len(batch)
            corr[j] = self.correction()
        return eps, scale, corr

    def _collect(self, words, sent_ptr, batches, corpus_size) -> Tuple[float, float]:
        """E-step, counts and new weights of consecutive minibatches with no refinement among
        them; returns the last one's step size and log likelihood (4.15). Here in one kernel call
        (`minibatches`) unless the pools must grow; with the Ray E-step, one at a time, the draws
        coming from the workers and being counted here."""
        if self.remote_estep is not None:
            for batch in batches:
                eps, loglik = self._collect_remote(words, sent_ptr, batch, corpus_size)
            return eps, loglik
        s, G = self.settings, self.G
        done = 0
        while True:
            rest = batches[done:]
            n = len(rest)
            items = np.concatenate(rest).astype(np.int64, copy=False)
            batch_ptr = np.zeros(n + 1, np.int64)
            np.cumsum([len(b) for b in rest], out=batch_ptr[1:])
            self._room_for(sent_ptr, items)
            before = self.progress()  # to undo the minibatches after the one a call stops in
            eps, scale, corr = self._begin_minibatches(rest, corpus_size)
            first_stream = before["minibatches"] + 1
            need = np.zeros(4, np.int64)
            with one_item_at_a_time():
                n_done, pos, logliks, rec, rec_ptr, samp_len, scores, status, self.record_factor = minibatches(
                    G, self.state, self.V, words, sent_ptr, items, batch_ptr, self._seed_key(), first_stream,
                    s.samples, self.record_factor, self.stack, self.built, need, eps, scale, corr)
            if n_done == n:
                return float(eps[-1]), float(logliks[-1])
            for name, value in before.items():  # it stopped inside minibatch n_done
                setattr(self, name, value)
            self._begin_minibatches(rest[:n_done + 1], corpus_size)
            batch = rest[n_done]
            if pos < 0:
                raise UnparseableSentence(int(batch[-1 - pos]))
            self.drive(lambda pos, need: absorb(G, self.state, self.V, words, sent_ptr, batch, rec, rec_ptr,
                                                samp_len, status, 1.0 / s.samples, pos, self.stack, self.built,
                                                need), len(batch), pos, need)
            self.update_weights(float(eps[n_done]), float(scale[n_done]))
            done += n_done + 1
            if done == len(batches):
                return float(eps[n_done]), float(batch_loglik(scores, status))

    def _collect_remote(self, words, sent_ptr, batch, corpus_size) -> Tuple[float, float]:
        """One minibatch whose trees the Ray workers draw; returns its step size and log likelihood."""
        s, G = self.settings, self.G
        self._room_for(sent_ptr, batch)
        eps, scale = self.begin_minibatch(len(batch), corpus_size)
        self.inside_calls += len(batch)
        seeds = self._seeds(self.minibatches, len(batch))
        rec, rec_ptr, tree_len, copies, scores, status = self.remote_estep.draw(self, words, sent_ptr, batch, seeds,
                                                                                 repeats=False)
        bad = np.nonzero(status == UNPARSEABLE)[0]
        if len(bad):
            raise UnparseableSentence(int(batch[bad[0]]))
        self.drive(lambda pos, need: absorb_distinct(G, self.state, self.V, words, sent_ptr, batch, rec, rec_ptr,
                                                     tree_len, copies, status, 1.0 / s.samples, pos, self.stack,
                                                     self.built, need), len(batch))
        self.update_weights(eps, scale)
        return eps, float(batch_loglik(scores, status))

    def update_weights(self, eps: float, scale: float) -> None:
        """Decay the statistics, then the new weights of G' (Eqs. 9-13, 6-8)."""
        decay(self.state, self.V, eps, scale)
        refresh_weights(self.G, self.state, self.V, self.correction())

    def end_minibatch(self, eps: float, started: float, loglik: float) -> Dict:
        """The minibatch's trace line, and every u minibatches the refinement (Algorithm 2's tail)."""
        line = {"minibatch": self.minibatches, "step_size": eps, "sentences_seen": self.seen,
                "batch_loglik": loglik}
        if self.settings.refine_every and self.minibatches % self.settings.refine_every == 0:
            line.update(self.refine(eps))
        line["seconds"] = time.perf_counter() - started
        return line

    def refine(self, eps: float) -> Dict:
        """Prune, re-derive, update hyperparameters, then rebuild G' (4.9, 4.8)."""
        s, G = self.settings, self.G
        corr = self.correction()
        removed = prune(G, self.state, self.V, eps, self.truncation, self.stack)
        refresh_weights(G, self.state, self.V, corr)
        stats = np.zeros(2, np.int64)
        if s.rederive:
            for ad in G.adaptor_order:
                self._rederive(ad, stats)
            refresh_weights(G, self.state, self.V, corr)
        if s.update_alpha:
            update_alpha(G, self.V, s.hyper_iterations, self.alpha_fixed)
        for ad in range(G.adaptor_nt.shape[0]):
            if s.update_a:
                update_discount(self.state, self.V, ad, corr, 40)
            if s.update_b:
                update_concentration(self.state, self.V, ad, corr, s.hyper_iterations)
        refresh_weights(G, self.state, self.V, corr)
        return {"pruned": int(removed), "rederived": int(stats[0]), "merged": int(stats[1])}

    def _rederive(self, ad: int, stats: np.ndarray) -> None:
        """Re-derive every entry of adaptor `ad` (4.9): draws in parallel, then applied in stick order."""
        G = self.G
        entries = entries_by_rank(self.state, self.V, ad)
        rec_ptr = np.empty(len(entries) + 1, np.int64)
        longest = int(rederive_layout(self.G, self.state, entries, self.compiled.max_unary_chain, rec_ptr))
        rec = np.empty((int(rec_ptr[-1]), 6), np.int32)
        counts = np.empty(len(entries), np.int64)
        base = np.uint64(mix_seeds(self.seed, self.minibatches, 0x5EED, ad))
        with self._threads(len(entries) >= PARALLEL_MIN_ENTRIES), one_item_at_a_time():
            rederive_draws(G, self.state, self.V, entries, base, longest, rec, rec_ptr, counts)
        self.inside_calls += len(entries)
        self._workspace(longest)
        first_new_rank = int(self.V.counters[NEXT_RANK])
        self.drive(lambda pos, need: rederive_apply(G, self.state, self.V, entries, first_new_rank, pos, rec,
                                                    rec_ptr, counts, self.terms, self.stack, self.built, stats, need),
                   len(entries))

    # ------------------------------------------------------------------ reporting
    def grammaton_sizes(self) -> Dict[str, int]:
        sizes = np.zeros(self.G.adaptor_nt.shape[0], np.int64)
        grammaton_sizes(self.G, self.state, sizes)
        return {name: int(sizes[i]) for i, name in enumerate(self.compiled.adapted)}

    def summary(self) -> Dict:
        st = self.state
        names = self.compiled.adapted
        return {
            "minibatches": self.minibatches,
            "sentences_seen": self.seen,
            "inside_calls": self.inside_calls,
            "grammaton": self.grammaton_sizes(),
            "a": {n: float(st.ad_a[i]) for i, n in enumerate(names)},
            "b": {n: float(st.ad_b[i]) for i, n in enumerate(names)},
            "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        }

    def heldout(self, words: np.ndarray, sent_ptr: np.ndarray, batch_size: int = 256):
        """Held-out log likelihood (4.15): per sentence the best log weight under G' among the
        `samples` trees drawn; returns (sum over parseable sentences, number unparseable)."""
        n = len(sent_ptr) - 1
        total, unparseable = 0.0, 0
        for start in range(0, n, batch_size):
            batch = np.arange(start, min(n, start + batch_size), dtype=np.int64)
            self._workspace(int((sent_ptr[batch + 1] - sent_ptr[batch]).max()))
            _, _, _, scores, status = self.sample(words, sent_ptr, batch, -1 - start)
            total += batch_loglik(scores, status)
            unparseable += int((status != OK).sum())
        return total, unparseable

    def shuffled(self, n: int, epoch: int) -> np.ndarray:
        order = np.arange(n, dtype=np.int64)
        shuffle(make_rng(mix_seeds(self.seed, 0xE90C, epoch)), order)
        return order
