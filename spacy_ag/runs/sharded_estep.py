"""The E-step of one minibatch split into shards that other processes draw (the Ray E-step).

The E-step only reads the grammar, the weights of G' and the part of the
state that finds cached subtrees by their yield; it writes nothing but its
own records. So a worker that holds the compiled grammar needs, per
minibatch, only `estep_weights` (the nodes the yield trie gained, the
tables' lists and the rule and entry weights: a few arrays, no analyses),
plus its shard of sentences and their seeds. Each sentence's random stream is seeded
by its position in the whole minibatch, so `merge_shards` of the shards'
draws equals `draw_trees` of the whole minibatch, bit for bit, whatever the
number of shards. A worker leaves out the trees that repeat an earlier one of
the same sentence (`distinct`), and the driver counts the merged trees
(`absorb_distinct`) as it counts its own full draws (`absorb`).
"""
from __future__ import annotations

from contextlib import contextmanager
from typing import Dict, List, NamedTuple, Sequence, Tuple

import numba
import numpy as np

from ..core.grammatons import Variational, new_variational
from ..core.rng import make_rng
from ..core.state import N_TRIE, TAB_HWM, State, new_state, rehash
from ..core.variational import distinct_trees, draw_records

#: The state arrays a worker receives, per trie node, per table and per adaptor: what `estep` reads
#: with the entries' weights given, but the trie's hash table, which the worker's `YieldTrie` keeps
#: from trie_parent and trie_term. The rest of the state stays empty. The trie only grows during a
#: run, so its parent and terminal go out as the nodes added since the last minibatch.
ESTEP_TRIE_FIELDS = ("trie_parent", "trie_term")
ESTEP_YIELD_FIELDS = ("trie_head",)
ESTEP_TABLE_FIELDS = ("tab_adaptor", "tab_next")
ESTEP_ADAPTOR_FIELDS = ("ad_a", "ad_b", "ad_n")


class Draws(NamedTuple):
    """Trees drawn for the sentences of a minibatch (or of one shard of it).

    What `variational.draw_records` returns. B sentences (batch[b] is sentence b's index
    into sent_ptr), `samples` trees drawn per sentence, and the records of all trees
    (`chart` on tree records; before `compact`, each sentence's room is larger than its
    trees). `DistinctDraws` has the same rec, rec_ptr, scores and status, the repeated
    trees left out, with tree_len and copies (B, samples) int64 in place of samp_len.

        field     shape         dtype    meaning
        rec       (records, 6)  int32    the trees' records (`chart`), sentence after sentence, tree after tree
        rec_ptr   (B + 1,)      int64    sentence b's records are rec[rec_ptr[b]:rec_ptr[b+1]] (its trees, then
                                         unused room)
        samp_len  (B, samples)  int64    the number of records of each tree
        scores    (B, samples)  float64  the log weight of each tree under G'
        status    (B,)          int64    OK 0, UNPARSEABLE 1 (no trees), OVERFLOW 2 (only inside `draw_records`,
                                         which enlarges the records and draws again)
    """

    rec: np.ndarray
    rec_ptr: np.ndarray
    samp_len: np.ndarray
    scores: np.ndarray
    status: np.ndarray


class DistinctDraws(NamedTuple):
    """`Draws` without each sentence's repeated trees (`variational.distinct_trees`).

    rec, rec_ptr: as in `Draws`, the distinct trees only; tree_len, copies: (sentences, samples)
    records of each tree and how often it was drawn, both 0 for a tree that repeats an earlier one;
    scores, status: as in `Draws`.
    """

    rec: np.ndarray
    rec_ptr: np.ndarray
    tree_len: np.ndarray
    copies: np.ndarray
    scores: np.ndarray
    status: np.ndarray


def draw_trees(G, S, V, words, sent_ptr, batch, seeds, samples: int, record_factor: int) -> Tuple[Draws, int]:
    """`samples` trees for each sentence of `batch`; returns the draws and the record factor that
    sufficed (`draw_records`)."""
    with one_item_at_a_time():
        *draws, record_factor = draw_records(G, S, V, words, sent_ptr, batch, seeds, samples, record_factor)
    return Draws(*draws), record_factor


@contextmanager
def one_item_at_a_time():
    """numba's parallel chunk size at 1 inside the block: each thread takes the next item of a parallel
    loop when done, not a fixed share (the E-step's next sentence, longest first, see `estep`; the
    next slice of re-derivation draws): a thread slowed by long items or by a neighbour on a shared
    machine does not hold the other one up."""
    chunksize = numba.set_parallel_chunksize(1)
    try:
        yield
    finally:
        numba.set_parallel_chunksize(chunksize)


def compact(draws: Draws) -> Draws:
    """The same draws without the unused room after each sentence's records (what crosses the network)."""
    used = draws.samp_len.sum(axis=1)
    rec_ptr = np.zeros(len(used) + 1, np.int64)
    np.cumsum(used, out=rec_ptr[1:])
    rows = np.repeat(draws.rec_ptr[:-1] - rec_ptr[:-1], used) + np.arange(int(rec_ptr[-1]))
    return draws._replace(rec=draws.rec[rows], rec_ptr=rec_ptr)


def distinct(draws: Draws) -> DistinctDraws:
    """The draws without each sentence's repeated trees, counted instead (what a Ray worker sends)."""
    rec, rec_ptr, tree_len, copies = distinct_trees(draws.rec, draws.rec_ptr, draws.samp_len, draws.status)
    return DistinctDraws(rec, rec_ptr, tree_len, copies, draws.scores, draws.status)


def estep_weights(S: State, V: Variational, trie_from: int = 0) -> Dict[str, np.ndarray]:
    """What a worker needs to draw under the current G' (sent once per minibatch): the yield trie's
    nodes from `trie_from` on (the worker has the others, `YieldTrie`), the entries at each yield and
    the tables' lists in their order (the cache weights are summed in it), the rule and entry
    weights, each cut at its high-water mark."""
    n_trie, hwm = int(S.counters[N_TRIE]), max(1, int(S.counters[TAB_HWM]))
    out = {name: getattr(S, name)[trie_from:n_trie] for name in ESTEP_TRIE_FIELDS}
    out["trie_from"] = np.array([trie_from], np.int64)
    out.update({name: getattr(S, name)[:n_trie] for name in ESTEP_YIELD_FIELDS})
    out.update({name: getattr(S, name)[:hwm] for name in ESTEP_TABLE_FIELDS})
    out.update({name: getattr(S, name) for name in ESTEP_ADAPTOR_FIELDS})
    out.update(rho=V.rho, lw=V.lw[:hwm])
    return out


class YieldTrie:
    """A worker's copy of the driver's yield trie and its hash table, grown by the nodes each
    minibatch adds (the trie never loses a node during a run), so that neither the whole trie
    crosses the network nor the worker hashes it again at every minibatch."""

    def __init__(self, n_term: int):
        self.n_term = n_term
        self.size = 0
        self.parent = np.full(16, -1, np.int32)
        self.term = np.full(16, -1, np.int32)
        self.ht_key = np.full(16, -1, np.int64)
        self.ht_val = np.full(16, -1, np.int32)

    def extend(self, first: int, parent: np.ndarray, term: np.ndarray) -> bool:
        """Add the nodes first, first + 1, ...; False, and nothing added, unless the copy ends at
        `first` (a new or restarted worker, or one that had no shard of some minibatch)."""
        if first != self.size:
            return False
        end = first + len(parent)
        if end > len(self.parent):
            cap = max(2 * len(self.parent), end)
            self.parent = np.concatenate([self.parent[:first], np.full(cap - first, -1, np.int32)])
            self.term = np.concatenate([self.term[:first], np.full(cap - first, -1, np.int32)])
        self.parent[first:end] = parent
        self.term[first:end] = term
        new = np.arange(max(1, first), end, dtype=np.int32)  # node 0, the empty yield, is not hashed
        if 2 * end > len(self.ht_key):  # keep the load under a half, as `grow` does
            self.ht_key = np.full(1 << int(np.ceil(np.log2(2 * end))), -1, np.int64)
            self.ht_val = np.full(len(self.ht_key), -1, np.int32)
            new = np.arange(1, end, dtype=np.int32)
        rehash(self.parent[new].astype(np.int64) * self.n_term + self.term[new], new, self.ht_key, self.ht_val)
        self.size = end
        return True

    def replace(self, parent: np.ndarray, term: np.ndarray) -> None:
        """The whole trie instead of the copy."""
        self.size = 0
        self.ht_key[:] = -1
        self.extend(0, parent, term)


def estep_templates(G) -> Tuple[State, Variational]:
    """A small empty state and statistics, whose arrays `estep_view` replaces (a worker keeps them)."""
    n_ad = G.adaptor_nt.shape[0]
    S = new_state(G.rule_parent.shape[0], G.n_nt, n_ad, 0, np.zeros(n_ad), np.ones(n_ad), make_rng(0),
                  node_cap=16, tab_cap=16, trie_cap=16)
    return S, new_variational(G.rule_alpha, n_ad, 16)


def estep_view(template_S: State, template_V: Variational, weights: Dict[str, np.ndarray], trie: YieldTrie):
    """A state and statistics holding `weights` and `trie` (already extended by the weights' nodes)
    in arrays of the same types as the templates' (a small `new_state` and `new_variational`), so
    the kernels compiled for a full state serve it."""
    S = template_S._replace(
        ht_key=trie.ht_key, ht_val=trie.ht_val, trie_parent=trie.parent[:trie.size], trie_term=trie.term[:trie.size],
        **{name: weights[name] for name in ESTEP_YIELD_FIELDS + ESTEP_TABLE_FIELDS + ESTEP_ADAPTOR_FIELDS})
    V = template_V._replace(rho=weights["rho"], lw=weights["lw"])
    return S, V


def split_batch(sent_ptr: np.ndarray, batch: np.ndarray, shards: int) -> List[Tuple[int, int]]:
    """Contiguous (start, end) ranges of `batch` with about equal terminals each (empty ones left out)."""
    lengths = (sent_ptr[batch + 1] - sent_ptr[batch]).astype(np.int64)
    cum = np.cumsum(lengths)
    total = int(cum[-1]) if len(cum) else 0
    cuts = [0] + [int(np.searchsorted(cum, total * (i + 1) / shards, side="left")) + 1
                  for i in range(shards - 1)] + [len(batch)]
    cuts = [min(max(c, 0), len(batch)) for c in cuts]
    return [(a, b) for a, b in zip(cuts, cuts[1:]) if b > a]


def pack_shard(words: np.ndarray, sent_ptr: np.ndarray, batch: np.ndarray, start: int, end: int):
    """The sentences batch[start:end] as their own (words, sent_ptr), to send to a worker."""
    ids = batch[start:end]
    lengths = sent_ptr[ids + 1] - sent_ptr[ids]
    ptr = np.zeros(len(ids) + 1, np.int64)
    np.cumsum(lengths, out=ptr[1:])
    at = np.repeat(sent_ptr[ids] - ptr[:-1], lengths) + np.arange(ptr[-1])
    return words[at], ptr


def merge_shards(parts: Sequence[Draws]) -> Draws:
    """The draws of consecutive shards as the draws of their minibatch (`Draws` or `DistinctDraws`)."""
    offsets = np.cumsum([0] + [len(p.rec) for p in parts])
    rec_ptr = np.concatenate([np.zeros(1, np.int64)] + [p.rec_ptr[1:] + offsets[i] for i, p in enumerate(parts)])
    rest = (np.concatenate([p[i] for p in parts]) for i in range(2, len(parts[0])))
    return type(parts[0])(np.concatenate([p.rec for p in parts]), rec_ptr, *rest)
