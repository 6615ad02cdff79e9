"""Every array of a loaded model checked against its compiled grammar before a kernel sees it.

`spacy_ag.archive` makes sure the arrays are the ones the header lists, but
a header can be edited to match any arrays, and the numba kernels trust
their input completely: an index out of range is a write anywhere in memory,
a cycle in a sibling chain or in a yield list a loop without end, a NaN
hyperparameter a model that quietly parses every utterance as one word. So
`check_state` verifies what the kernels take for granted, as whole-array
numpy operations (no Python loop over nodes, no recursion; walks are
pointer-jumping passes, at most log2(pool size) of them):

* dtypes and shapes: every array 1-D of the dtype the kernels were compiled
  for, the pools of equal length, one `f` and variational rule entry per
  rule, one `ad_*` and `vb_elog_rho` entry per adaptor, ...;
* counters within the pools' capacities, free lists inside the used part
  and without repeats, a power-of-two yield hash table with room;
* every index inside the pool it points into (or -1 where -1 means none);
* numbers: Pitman-Yor a in [0, 1) and b > 0, counts >= 0, every float that
  feeds a log, exp or digamma finite and inside its domain;
* structure: the live nodes form trees (one parent each, no cycles, each
  hanging from a sentence analysis or an open table's label, none of them
  free), every RULE node's children spell its rule's right-hand side, every
  TABLE node points at an open table of its adaptor, the table labels refer
  to tables without cycles, the yield trie is a tree whose hash table finds
  every node, each open table sits exactly once in its yield's doubly linked
  list and its label spells a yield of the trie node's length;
* counts: f, fA and the tables' customer counts equal what the stored trees
  give (and, for an MCMC state, the tables and customers of every adaptor).

Every failure is one `ModelFileError` line naming the file, the array and
what is wrong. A Brent unigram model (400k nodes) is checked in about 0.1 s.
"""
from __future__ import annotations

from typing import Optional

import numpy as np

from .compiled import CompiledGrammar
from .grammatons import Variational
from .state import (
    CLOSED, FREE, HT_USED, N_COUNTERS, N_TRIE, NODE_FREE, NODE_HWM, OPEN, RULE, TAB_FREE, TAB_HWM, TABLE,
    TERM, State,
)
from ..errors import Errors, ModelFileError

__all__ = ["arrays_source", "check_state"]

#: dtypes the kernels are compiled for (see `spacy_ag.core.state.new_state`, `new_variational`)
STATE_DTYPES = {
    "node_kind": np.int8, "node_sym": np.int32, "node_rule": np.int32, "node_table": np.int32,
    "node_child": np.int32, "node_sib": np.int32, "node_aux": np.int32, "node_free": np.int32,
    "tab_adaptor": np.int32, "tab_count": np.int64, "tab_label": np.int32, "tab_yield": np.int32,
    "tab_state": np.int8, "tab_next": np.int32, "tab_prev": np.int32, "tab_free": np.int32, "tab_mark": np.int8,
    "ht_key": np.int64, "ht_val": np.int32, "trie_parent": np.int32, "trie_term": np.int32, "trie_head": np.int32,
    "ad_m": np.int64, "ad_n": np.int64, "ad_a": np.float64, "ad_b": np.float64, "f": np.int64, "fA": np.int64,
    "sent_root": np.int32, "counters": np.int64, "rng": np.uint64,
}
VARIATIONAL_DTYPES = {
    "ft": np.float64, "lw": np.float64, "rank": np.int64, "f_batch": np.float64, "alpha": np.float64,
    "gt": np.float64, "g_batch": np.float64, "gamma": np.float64, "lrho": np.float64, "rho": np.float64,
    "elog_rho": np.float64, "counters": np.int64,
}
NODE_FIELDS = ("node_kind", "node_sym", "node_rule", "node_table", "node_child", "node_sib", "node_aux", "node_free")
TABLE_FIELDS = ("tab_adaptor", "tab_count", "tab_label", "tab_yield", "tab_state", "tab_next", "tab_prev",
                "tab_free", "tab_mark")
TRIE_FIELDS = ("trie_parent", "trie_term", "trie_head")
COUNTER_NAMES = {NODE_HWM: "NODE_HWM", NODE_FREE: "NODE_FREE", TAB_HWM: "TAB_HWM", TAB_FREE: "TAB_FREE",
                 N_TRIE: "N_TRIE", HT_USED: "HT_USED"}
#: log weights are <= 0 up to rounding
LOG_TOLERANCE = 1e-9
_HASH = np.uint64(0x9E3779B97F4A7C15)


def arrays_source(archive, source: str) -> str:
    """The file that held the arrays of `archive` read from `source`, for messages."""
    legacy = isinstance(archive.header, dict) and archive.header.get("format_version") == 1
    return f"{source}/{'state.npz' if legacy else 'arrays.npz'}"


def check_state(compiled: Optional[CompiledGrammar], state: State, variational: Optional[Variational],
                source: str, *, require_variational: bool = False) -> None:
    """Raise one `ModelFileError` if `state` (and `variational`, if any) is not a state the kernels
    can run on under `compiled`; `source` names the file in the message. Without variational
    statistics the state must be an MCMC state (exact table and customer counts per adaptor)."""
    if require_variational and variational is None:
        raise ModelFileError(Errors.E072.format(path=source, what="the variational statistics (vb_* arrays) "
                                                                  "are missing"))
    _Check(compiled, state, variational, source).run()


def _vb(name: str) -> str:
    return f"vb_{name}"


class _Check:
    def __init__(self, compiled, state, variational, source):
        self.compiled, self.S, self.V, self.src = compiled, state, variational, source

    # ------------------------------------------------------------------ messages
    def shape_error(self, name, arr, expected):
        raise ModelFileError(Errors.E067.format(path=self.src, name=name, found=_describe(arr), expected=expected))

    def counter_error(self, index, value, expected, name="counters"):
        label = COUNTER_NAMES.get(index, str(index)) if name == "counters" else "NEXT_RANK"
        raise ModelFileError(Errors.E068.format(path=self.src, name=name, counter=label, index=index,
                                                value=int(value), expected=expected))

    def value_error(self, name, arr, bad, expected, offset=0):
        """E069 for the first True of `bad`, a mask over arr[offset:] (arr is the whole array)."""
        i = int(np.flatnonzero(bad)[0])
        raise ModelFileError(Errors.E069.format(path=self.src, name=name, value=_scalar(arr[offset + i]),
                                                index=offset + i, expected=expected))

    def structure_error(self, name, index, problem):
        raise ModelFileError(Errors.E070.format(path=self.src, name=name, index=int(index), problem=problem))

    def count_error(self, name, arr, bad, expected_values):
        i = int(np.flatnonzero(bad)[0])
        raise ModelFileError(Errors.E071.format(path=self.src, name=name, found=_scalar(arr[i]), index=i,
                                                expected=_scalar(expected_values[i])))

    # ------------------------------------------------------------------ helpers
    def index_range(self, name, arr, lo, hi, what):
        """Every value of arr (an array or a prefix of it) in lo..hi-1."""
        bad = (arr < lo) | (arr >= hi)
        if bad.any():
            valid = f"{what} in {lo}..{hi - 1}" if hi > lo else f"{what}, of which there are none"
            self.value_error(name, arr, bad, valid)

    def numbers(self, name, arr, ok, expected):
        """Floats: `ok` is the mask of acceptable values (NaN must fail it)."""
        if not ok.all():
            self.value_error(name, arr, ~ok, expected)

    # ------------------------------------------------------------------ the checks
    def run(self):
        if self.compiled is None:
            raise ModelFileError(Errors.E072.format(path=self.src, what="the grammar is not compiled "
                                                    "(its [:corpus:] class was never expanded)"))
        G = self.compiled.arrays
        self.n_rules, self.n_nt, self.n_term = G.rule_parent.shape[0], G.n_nt, G.n_term
        self.n_ad = G.adaptor_nt.shape[0]
        self.shapes()
        self.counters()
        self.ranges()
        self.numbers_of_state()
        if self.V is not None:
            self.numbers_of_variational()
        self.trie()
        self.nodes()
        self.tables()
        self.counts()

    def shapes(self):
        S, V = self.S, self.V
        for name, dtype in STATE_DTYPES.items():
            arr = getattr(S, name)
            if not isinstance(arr, np.ndarray) or arr.ndim != 1 or arr.dtype != np.dtype(dtype):
                self.shape_error(name, arr, f"a 1-D array of {np.dtype(dtype).name}")
        same = {"node": (NODE_FIELDS, "node pool"), "tab": (TABLE_FIELDS, "table pool"),
                "trie": (TRIE_FIELDS, "yield trie"), "ht": (("ht_key", "ht_val"), "yield hash table")}
        for fields, what in same.values():
            n = getattr(S, fields[0]).shape[0]
            for name in fields:
                if getattr(S, name).shape[0] != n or n < 1:
                    self.shape_error(name, getattr(S, name), f"length {max(n, 1)}, that of the {what} "
                                                             f"({fields[0]})")
        H = S.ht_key.shape[0]
        if H < 16 or H & (H - 1):
            self.shape_error("ht_key", S.ht_key, "a power of two of at least 16 entries")
        per_grammar = {"f": (self.n_rules, "one per rule"), "fA": (self.n_nt, "one per nonterminal"),
                       "ad_m": (self.n_ad, "one per adaptor"), "ad_n": (self.n_ad, "one per adaptor"),
                       "ad_a": (self.n_ad, "one per adaptor"), "ad_b": (self.n_ad, "one per adaptor"),
                       "counters": (N_COUNTERS, "the sampler's counters"), "rng": (4, "a xoshiro256** state")}
        for name, (n, what) in per_grammar.items():
            if getattr(S, name).shape[0] != n:
                self.shape_error(name, getattr(S, name), f"{np.dtype(STATE_DTYPES[name]).str}[{n}] ({what})")
        if V is None:
            return
        K = S.tab_count.shape[0]
        for name, dtype in VARIATIONAL_DTYPES.items():
            arr = getattr(V, name)
            if not isinstance(arr, np.ndarray) or arr.ndim != 1 or arr.dtype != np.dtype(dtype):
                self.shape_error(_vb(name), arr, f"a 1-D array of {np.dtype(dtype).name}")
        per_table, per_rule = "one per table, as tab_count", "one per rule"
        lengths = {"ft": (K, per_table), "lw": (K, per_table), "rank": (K, per_table), "f_batch": (K, per_table),
                   "alpha": (self.n_rules, per_rule), "gt": (self.n_rules, per_rule),
                   "g_batch": (self.n_rules, per_rule), "gamma": (self.n_rules, per_rule),
                   "lrho": (self.n_rules, per_rule), "rho": (self.n_rules, per_rule),
                   "elog_rho": (self.n_ad, "one per adaptor"), "counters": (4, "the variational counters")}
        for name, (n, what) in lengths.items():
            arr = getattr(V, name)
            if arr.shape[0] != n:
                self.shape_error(_vb(name), arr, f"{arr.dtype.str}[{n}] ({what})")

    def counters(self):
        S = self.S
        c = S.counters
        N, K, M, H = S.node_kind.shape[0], S.tab_count.shape[0], S.trie_parent.shape[0], S.ht_key.shape[0]
        limits = [(NODE_HWM, 0, N, f"0..{N}, the node pool's size"),
                  (NODE_FREE, 0, int(c[NODE_HWM]), None),
                  (TAB_HWM, 0, K, f"0..{K}, the table pool's size"),
                  (TAB_FREE, 0, int(c[TAB_HWM]), None),
                  (N_TRIE, 1, M, f"1..{M}, the yield trie's size")]
        for index, lo, hi, expected in limits:
            if not lo <= c[index] <= hi:
                self.counter_error(index, c[index], expected or f"{lo}..{hi}, at most the used part of the pool")
        if c[HT_USED] != c[N_TRIE] - 1:
            self.counter_error(HT_USED, c[HT_USED], f"{int(c[N_TRIE]) - 1}: one hash entry per trie node but the root")
        if 2 * c[HT_USED] > H:
            self.counter_error(HT_USED, c[HT_USED], f"at most {H // 2}, half of the hash table")
        if self.V is not None and self.V.counters[0] < 0:
            self.counter_error(0, self.V.counters[0], "a stick position >= 0", name="vb_counters")

    def ranges(self):
        """Every index into a pool, in the pool (or -1 where that means none)."""
        S, c = self.S, self.S.counters
        N, K, M = S.node_kind.shape[0], S.tab_count.shape[0], S.trie_parent.shape[0]
        self.index_range("node_kind", S.node_kind, 0, 3, "a node kind (0 TERM, 1 RULE, 2 TABLE)")
        self.index_range("node_sym", S.node_sym, 0, max(self.n_nt, self.n_term), "a symbol id")
        self.index_range("node_rule", S.node_rule, -1, self.n_rules, "a rule id or -1")
        self.index_range("node_table", S.node_table, -1, K, "a table or -1")
        self.index_range("node_child", S.node_child, -1, N, "a node or -1")
        self.index_range("node_sib", S.node_sib, -1, N, "a node or -1")
        self.index_range("node_aux", S.node_aux, -1, M, "a trie node or -1")
        self.index_range("node_free", S.node_free[:c[NODE_FREE]], 0, int(c[NODE_HWM]), "a used node")
        hwm = int(c[TAB_HWM])
        self.index_range("tab_adaptor", S.tab_adaptor[:hwm], 0, self.n_ad, "an adaptor id")
        self.index_range("tab_label", S.tab_label, -1, N, "a node or -1")
        self.index_range("tab_yield", S.tab_yield, -1, M, "a trie node or -1")
        self.index_range("tab_state", S.tab_state, 0, 2, f"a table state ({FREE} FREE, {OPEN} OPEN; {CLOSED} CLOSED "
                                                          "never outlives a sampling step)")
        self.index_range("tab_next", S.tab_next, -1, K, "a table or -1")
        self.index_range("tab_prev", S.tab_prev, -1, K, "a table or -1")
        self.index_range("tab_free", S.tab_free[:c[TAB_FREE]], 0, hwm, "a used table")
        self.index_range("tab_mark", S.tab_mark, 0, 1, "0 (a mark only set during one comparison)")
        self.index_range("trie_parent", S.trie_parent, -1, M, "a trie node or -1")
        self.index_range("trie_term", S.trie_term, -1, self.n_term, "a terminal id or -1")
        self.index_range("trie_head", S.trie_head, -1, K, "a table or -1")
        self.index_range("ht_key", S.ht_key, -1, int(c[N_TRIE]) * self.n_term, "a trie key or -1")
        self.index_range("ht_val", S.ht_val, -1, M, "a trie node or -1")
        self.index_range("sent_root", S.sent_root, -1, N, "a node or -1")
        if (S.tab_state[hwm:] != FREE).any():
            self.value_error("tab_state", S.tab_state, S.tab_state[hwm:] != FREE,
                             f"{FREE} (FREE) beyond TAB_HWM = {hwm}", hwm)

    def numbers_of_state(self):
        S = self.S
        for name in ("tab_count", "ad_m", "ad_n", "f", "fA"):
            arr = getattr(S, name)
            self.numbers(name, arr, arr >= 0, "a count >= 0")
        a, b = S.ad_a, S.ad_b
        self.numbers("ad_a", a, np.isfinite(a) & (a >= 0.0) & (a < 1.0), "a Pitman-Yor discount a in [0, 1)")
        self.numbers("ad_b", b, np.isfinite(b) & (b > 0.0), "a finite Pitman-Yor concentration b > 0")
        if not S.rng.any():
            self.value_error("rng", S.rng, S.rng == 0, "a random generator state that is not all zeros")

    def numbers_of_variational(self):
        V, S = self.V, self.S
        K = S.tab_count.shape[0]
        open_ = (S.tab_state == OPEN) & (np.arange(K) < S.counters[TAB_HWM])
        for name in ("ft", "f_batch", "gt", "g_batch"):
            arr = getattr(V, name)
            self.numbers(_vb(name), arr, np.isfinite(arr) & (arr >= 0.0), "a finite count >= 0")
        for name in ("alpha", "gamma"):
            arr = getattr(V, name)
            self.numbers(_vb(name), arr, np.isfinite(arr) & (arr > 0.0), "a finite Dirichlet parameter > 0")
        for name in ("lrho", "elog_rho"):
            arr = getattr(V, name)
            self.numbers(_vb(name), arr, np.isfinite(arr) & (arr <= LOG_TOLERANCE), "a finite log weight <= 0")
        self.numbers("vb_rho", V.rho, np.isfinite(V.rho) & (V.rho >= 0.0) & (V.rho <= 1.0 + LOG_TOLERANCE),
                     "a rule weight in [0, 1]")
        lw = V.lw
        self.numbers("vb_lw", lw, (np.isfinite(lw) | ~open_) & ~np.isnan(lw) & (lw <= LOG_TOLERANCE),
                     "a log weight <= 0, finite for an open table")
        rank = V.rank
        self.numbers("vb_rank", rank, ~open_ | ((rank >= 0) & (rank < V.counters[0])),
                     f"a stick position in 0..{int(V.counters[0]) - 1} (vb_counters[0] - 1) for an open table")

    def trie(self):
        """The yield trie: a tree over trie nodes 0..N_TRIE-1 (parents before children), with every
        node but the root once in the hash table, where linear probing finds it."""
        S = self.S
        n_trie = int(S.counters[N_TRIE])
        T = self.n_term
        ids = np.arange(1, n_trie)
        parent, term = S.trie_parent[1:n_trie], S.trie_term[1:n_trie]
        bad = (parent < 0) | (parent >= ids)
        if bad.any():
            self.value_error("trie_parent", S.trie_parent, bad, "the trie node's parent, a smaller trie node id", 1)
        if (term < 0).any():
            self.value_error("trie_term", S.trie_term, term < 0, "the trie node's terminal id", 1)
        depth = np.zeros(n_trie, np.int64)
        if n_trie > 1:
            _, depth = _rank(np.concatenate([[-1], parent]).astype(np.int64))
        self.depth = depth
        keys = parent.astype(np.int64) * T + term
        occupied = S.ht_key != -1
        slots = np.flatnonzero(occupied)
        if slots.shape[0] != S.counters[HT_USED]:
            self.counter_error(HT_USED, S.counters[HT_USED], f"{slots.shape[0]}, the used slots of ht_key")
        vals = S.ht_val[slots]
        bad = (vals < 1) | (vals >= n_trie)
        if bad.any():
            self.value_error("ht_val", S.ht_val, np.isin(np.arange(S.ht_val.shape[0]), slots[bad]),
                             f"a trie node in 1..{n_trie - 1} for a used slot")
        seen = np.bincount(vals, minlength=n_trie)
        if (seen > 1).any():
            y = int(np.flatnonzero(seen > 1)[0])
            self.structure_error("ht_val", slots[np.flatnonzero(vals == y)[1]], f"trie node {y} is in the hash "
                                                                                f"table twice")
        wrong = S.ht_key[slots] != keys[vals - 1]
        if wrong.any():
            i = int(slots[np.flatnonzero(wrong)[0]])
            self.structure_error("ht_key", i, f"the key {int(S.ht_key[i])} is not (parent, terminal) of trie node "
                                              f"{int(S.ht_val[i])}")
        if np.unique(keys).shape[0] != keys.shape[0]:
            order = np.argsort(keys, kind="stable")
            dup = order[1:][keys[order[1:]] == keys[order[:-1]]]
            self.structure_error("trie_parent", int(dup[0]) + 1, "two trie nodes extend the same node by the same "
                                                                 "terminal")
        # linear probing from each key's home slot must not cross an empty slot
        H = S.ht_key.shape[0]
        home = ((S.ht_key[slots].astype(np.uint64) * _HASH) >> np.uint64(29)) & np.uint64(H - 1)
        home = home.astype(np.int64)
        empties = np.concatenate([[0], np.cumsum(~occupied)])

        def gaps(lo, hi):  # empty slots in lo..hi (inclusive)
            return empties[hi + 1] - empties[lo]

        wrap = home > slots
        n_gap = np.where(wrap, gaps(home, np.full_like(home, H - 1)) + gaps(np.zeros_like(home), slots),
                         gaps(np.minimum(home, slots), slots))
        if (n_gap > 0).any():
            i = int(slots[np.flatnonzero(n_gap > 0)[0]])
            self.structure_error("ht_key", i, "the key is out of reach of its hash slot (lookups would miss it)")

    def nodes(self):
        """The live nodes form trees hanging from the roots, and each tree spells its rules."""
        S, G = self.S, self.compiled.arrays
        c = S.counters
        N = S.node_kind.shape[0]
        hwm, n_free = int(c[NODE_HWM]), int(c[NODE_FREE])
        free = S.node_free[:n_free]
        live = np.zeros(N, bool)
        live[:hwm] = True
        if np.bincount(free, minlength=N).max(initial=0) > 1:
            x = int(np.flatnonzero(np.bincount(free, minlength=N) > 1)[0])
            self.structure_error("node_free", int(np.flatnonzero(free == x)[1]), f"node {x} is freed twice")
        live[free] = False
        self.live = live
        kind, sym, rule = S.node_kind, S.node_sym, S.node_rule
        child, sib = S.node_child, S.node_sib
        is_term, is_rule, is_table = live & (kind == TERM), live & (kind == RULE), live & (kind == TABLE)
        # kinds and symbols
        bad = is_term & (sym >= self.n_term)
        if bad.any():
            self.value_error("node_sym", sym, bad, f"a terminal id in 0..{self.n_term - 1} for a TERM node")
        bad = (is_rule | is_table) & (sym >= self.n_nt)
        if bad.any():
            self.value_error("node_sym", sym, bad, f"a nonterminal id in 0..{self.n_nt - 1} for a RULE or TABLE node")
        bad = is_rule & (rule < 0)
        if bad.any():
            self.value_error("node_rule", rule, bad, "a rule id for a RULE node")
        bad = is_rule & (G.rule_parent[np.maximum(rule, 0)] != sym)
        if bad.any():
            self.value_error("node_rule", rule, bad, "a rule of the node's symbol (node_sym)")
        bad = (is_term | is_table) & (child != -1)
        if bad.any():
            self.value_error("node_child", child, bad, "-1 for a TERM or TABLE node")
        ad_of_sym = G.sym_adaptor[np.minimum(sym, G.sym_adaptor.shape[0] - 1)]
        bad = is_table & (ad_of_sym < 0)
        if bad.any():
            self.value_error("node_sym", sym, bad, "an adapted nonterminal for a TABLE node")
        table = S.node_table
        K = S.tab_count.shape[0]
        open_ = (S.tab_state == OPEN) & (np.arange(K) < c[TAB_HWM])
        self.open = open_
        bad = is_table & ((table < 0) | ~open_[np.maximum(table, 0)])
        if bad.any():
            self.value_error("node_table", table, bad, "an open table for a TABLE node")
        bad = is_table & (S.tab_adaptor[np.maximum(table, 0)] != ad_of_sym)
        if bad.any():
            self.value_error("node_table", table, bad, "a table of the TABLE node's adaptor")
        bad = is_table & (S.node_aux != S.tab_yield[np.maximum(table, 0)])
        if bad.any():
            self.value_error("node_aux", S.node_aux, bad, "the yield (tab_yield) of the TABLE node's table")
        # links: every target a live node with one parent; roots without a parent
        links_from_child = np.flatnonzero(live & (child >= 0))
        links_from_sib = np.flatnonzero(live & (sib >= 0))
        for name, sources, arr in (("node_child", links_from_child, child), ("node_sib", links_from_sib, sib)):
            dead = ~live[arr[sources]]
            if dead.any():
                x = int(sources[np.flatnonzero(dead)[0]])
                self.structure_error(name, x, f"links to node {int(arr[x])}, which is "
                                              f"{'free' if arr[x] < hwm else 'beyond NODE_HWM'}")
        targets = np.concatenate([child[links_from_child], sib[links_from_sib]])
        indegree = np.bincount(targets, minlength=N)
        if (indegree > 1).any():
            y = int(np.flatnonzero(indegree > 1)[0])
            self.structure_error("node_child", y, "this node is linked from two places (a shared subtree or a cycle)")
        bad = open_ & (S.tab_label < 0)
        if bad.any():
            self.value_error("tab_label", S.tab_label, bad, "a label node for an open table")
        sent_at = np.flatnonzero(S.sent_root >= 0)
        label_at = np.flatnonzero(open_)
        sent_roots, labels = S.sent_root[sent_at].astype(np.int64), S.tab_label[label_at].astype(np.int64)
        for name, roots, at, kinds in (("sent_root", sent_roots, sent_at, (RULE, TABLE)),  # an adapted start
                                       ("tab_label", labels, label_at, (RULE,))):
            for problem, mask in (("a free node", ~live[roots]),
                                  (f"not a {' or '.join(('TERM', 'RULE', 'TABLE')[k] for k in kinds)} node",
                                   ~np.isin(kind[roots], kinds)),
                                  ("linked from another node", indegree[roots] > 0),
                                  ("a node with a sibling", sib[roots] != -1)):
                if mask.any():
                    i = int(at[np.flatnonzero(mask)[0]])
                    self.structure_error(name, i, f"the tree root {int(roots[np.flatnonzero(mask)[0]])} is {problem}")
        bad = sym[sent_roots] != G.start
        if bad.any():
            self.structure_error("sent_root", int(sent_at[np.flatnonzero(bad)[0]]), "the analysis root is not of "
                                                                                   "the start symbol")
        roots = np.concatenate([sent_roots, labels])
        at = np.concatenate([sent_at, label_at])
        order = np.argsort(roots, kind="stable")
        twice = np.flatnonzero(roots[order][1:] == roots[order][:-1])
        if twice.shape[0]:
            j = int(order[twice[0] + 1])
            self.structure_error("sent_root" if j < sent_at.shape[0] else "tab_label", int(at[j]),
                                 f"node {int(roots[j])} is the root of two trees")
        is_root = np.zeros(N, bool)
        is_root[roots] = True
        # parents, then the tree of every live node by pointer jumping (cycles never reach a root)
        parent = np.full(N, -1, np.int64)
        parent[child[links_from_child]] = links_from_child
        parent[sib[links_from_sib]] = links_from_sib
        top, _ = _rank(parent)
        lost = live & ~is_root[top]
        if lost.any():
            x = int(np.flatnonzero(lost)[0])
            if parent[top[x]] >= 0:
                self.structure_error("node_sib" if parent[x] >= 0 and sib[parent[x]] == x else "node_child", x,
                                     "this node lies on a cycle of child and sibling links")
            self.structure_error("node_free", x, "this node is neither free nor in any analysis or table label")
        self.top = top
        # children: the k-th node of a sibling chain is the k-th symbol of its parent's rule
        sib_parent = np.full(N, -1, np.int64)
        sib_parent[sib[links_from_sib]] = links_from_sib
        head, pos = _rank(sib_parent)
        owner = np.full(N, -1, np.int64)
        owner[child[links_from_child]] = links_from_child
        owner = np.where(live, owner[head], -1)
        has_owner = owner >= 0
        xs = np.flatnonzero(has_owner)
        r = rule[owner[xs]]
        arity = G.rule_child_ptr[r + 1] - G.rule_child_ptr[r]
        over = pos[xs] >= arity
        if over.any():
            x = int(owner[xs[np.flatnonzero(over)[0]]])
            self.structure_error("node_sib", x, f"node {x} has more children than its rule {int(rule[x])} has symbols")
        want = G.rule_children[G.rule_child_ptr[r] + pos[xs]]
        is_nt = want >= 0
        ok = np.where(is_nt, (kind[xs] != TERM) & (sym[xs] == want), (kind[xs] == TERM) & (sym[xs] == -(want + 1)))
        if not ok.all():
            x = int(xs[np.flatnonzero(~ok)[0]])
            self.structure_error("node_sym", x, f"node {x} is not the symbol that position {int(pos[x])} of its "
                                                f"parent's rule {int(rule[owner[x]])} asks for")
        n_children = np.bincount(owner[xs], minlength=N)
        rs = np.flatnonzero(is_rule)
        arity = G.rule_child_ptr[rule[rs] + 1] - G.rule_child_ptr[rule[rs]]
        short = n_children[rs] != arity
        if short.any():
            x = int(rs[np.flatnonzero(short)[0]])
            self.structure_error("node_child", x, f"the RULE node has {int(n_children[x])} children, its rule "
                                                  f"{int(rule[x])} has {int(arity[np.flatnonzero(short)[0]])} symbols")

    def tables(self):
        """Open tables: labels of their adaptor spelling their yield, in their yield's list, acyclic."""
        S, G = self.S, self.compiled.arrays
        c = S.counters
        K = S.tab_count.shape[0]
        hwm, n_free = int(c[TAB_HWM]), int(c[TAB_FREE])
        open_ = self.open
        n_trie = int(c[N_TRIE])
        free = S.tab_free[:n_free]
        counts = np.bincount(free, minlength=K)
        if counts.max(initial=0) > 1:
            k = int(np.flatnonzero(counts > 1)[0])
            self.structure_error("tab_free", int(np.flatnonzero(free == k)[1]), f"table {k} is freed twice")
        listed_open = open_[free]
        if listed_open.any():
            i = int(np.flatnonzero(listed_open)[0])
            self.structure_error("tab_free", i, f"table {int(free[i])} is free and open")
        unlisted = (np.arange(K) < hwm) & ~open_ & (counts == 0)
        if unlisted.any():
            self.structure_error("tab_state", int(np.flatnonzero(unlisted)[0]), "a FREE table missing from tab_free")
        ks = np.flatnonzero(open_)
        label = S.tab_label[ks]
        ad = S.tab_adaptor[ks]
        bad = S.node_sym[label] != G.adaptor_nt[ad]
        if bad.any():
            self.structure_error("tab_label", int(ks[np.flatnonzero(bad)[0]]), "the label is not a tree of the "
                                                                               "table's adapted nonterminal")
        y = S.tab_yield[ks]
        bad = (y < 1) | (y >= n_trie)
        if bad.any():
            self.value_error("tab_yield", S.tab_yield, np.isin(np.arange(K), ks[bad]),
                             f"a non-empty yield, a trie node in 1..{n_trie - 1}, for an open table")
        # the label spells as many terminals as the yield has: its own TERM nodes plus the yields of
        # the tables it uses (which are themselves checked the same way)
        N = S.node_kind.shape[0]
        live, top = self.live, self.top
        terms = np.bincount(top[live & (S.node_kind == TERM)], minlength=N)
        tnodes = np.flatnonzero(live & (S.node_kind == TABLE))
        used = S.node_table[tnodes]
        inner = np.bincount(top[tnodes], weights=self.depth[S.tab_yield[used]], minlength=N)
        length = terms[label] + inner[label].astype(np.int64)
        bad = length != self.depth[y]
        if bad.any():
            i = int(np.flatnonzero(bad)[0])
            self.structure_error("tab_yield", int(ks[i]), f"the table's label spells {int(length[i])} terminals, its "
                                                          f"yield {int(y[i])} has {int(self.depth[y[i]])}")
        # the yield lists: doubly linked, one per trie node, headed by trie_head, holding exactly the
        # open tables of that yield
        nxt, prv = S.tab_next[ks], S.tab_prev[ks]
        for name, links, back in (("tab_next", nxt, S.tab_prev), ("tab_prev", prv, S.tab_next)):
            has = links >= 0
            tgt = np.maximum(links, 0)
            bad = has & (~open_[tgt] | (S.tab_yield[tgt] != y) | (back[tgt] != ks))
            if bad.any():
                self.structure_error(name, int(ks[np.flatnonzero(bad)[0]]), "the table's yield list is broken "
                                                                            "(a link to another yield, a non-open "
                                                                            "table, or no link back)")
        heads = ks[prv < 0]
        bad = S.trie_head[S.tab_yield[heads]] != heads
        if bad.any():
            self.structure_error("trie_head", int(S.tab_yield[heads[np.flatnonzero(bad)[0]]]),
                                 f"the yield list does not start at its first table {int(heads[bad][0])}")
        head_of = S.trie_head[:n_trie]
        listed = np.flatnonzero(head_of >= 0)
        k0 = head_of[listed]
        bad = ~open_[k0] | (S.tab_yield[k0] != listed) | (S.tab_prev[k0] != -1)
        if bad.any():
            self.structure_error("trie_head", int(listed[np.flatnonzero(bad)[0]]), "the yield list starts at a table "
                                                                                  "that is not open, of another yield "
                                                                                  "or not first")
        if (S.trie_head[n_trie:] != -1).any():
            i = int(np.flatnonzero(S.trie_head[n_trie:] != -1)[0]) + n_trie
            self.structure_error("trie_head", i, "a yield list at an unused trie node")
        prev_all = np.full(K, -1, np.int64)
        prev_all[ks] = prv
        first, _ = _rank(prev_all)
        circular = open_ & (prev_all[first] >= 0)
        if circular.any():
            self.structure_error("tab_next", int(np.flatnonzero(circular)[0]), "the table's yield list is circular")
        # labels use tables: no table may (indirectly) use itself. A used table's yield is never longer
        # than the user's, and as long only when the label is a unary chain down to that one table; so
        # a cycle can only run through such one-table labels, where "uses" is a function: pointer jumping
        table_of_root = np.full(N, -1, np.int64)
        table_of_root[label] = ks
        src = table_of_root[top[tnodes]]
        inside = src >= 0
        src, dst = src[inside], used[inside].astype(np.int64)
        as_long = self.depth[S.tab_yield[dst]] == self.depth[S.tab_yield[src]]
        only_use = np.full(K, -1, np.int64)
        only_use[src[as_long]] = dst[as_long]
        last, _ = _rank(only_use)
        circular = open_ & (only_use[last] >= 0)
        if circular.any():
            self.structure_error("tab_label", int(np.flatnonzero(circular)[0]), "the table's label uses the table "
                                                                               "itself (through other tables)")

    def counts(self):
        """f, fA and the customers of every table equal what the trees say."""
        S, G = self.S, self.compiled.arrays
        live = self.live
        rs = live & (S.node_kind == RULE)
        f = np.bincount(S.node_rule[rs], minlength=self.n_rules)
        self._equal("f", S.f, f)
        self._equal("fA", S.fA, np.bincount(G.rule_parent[S.node_rule[rs]], minlength=self.n_nt))
        K = S.tab_count.shape[0]
        open_ = self.open
        refs = np.bincount(S.node_table[live & (S.node_kind == TABLE)], minlength=K)
        self._equal("tab_count", np.where(open_, S.tab_count, 0), np.where(open_, refs, 0), S.tab_count)
        if self.V is None:  # MCMC: every open table seats customers; m and n per adaptor are exact
            lonely = open_ & (S.tab_count < 1)
            if lonely.any():
                self.value_error("tab_count", S.tab_count, lonely, "at least one customer at an open table")
            ad = S.tab_adaptor[open_]
            self._equal("ad_m", S.ad_m, np.bincount(ad, minlength=self.n_ad))
            self._equal("ad_n", S.ad_n, np.bincount(ad, weights=S.tab_count[open_], minlength=self.n_ad)
                        .astype(np.int64))
        elif (S.sent_root >= 0).any():
            self.structure_error("sent_root", int(np.flatnonzero(S.sent_root >= 0)[0]),
                                 "a variational state keeps no sentence analyses")

    def _equal(self, name, found, expected, shown=None):
        bad = found != expected
        if bad.any():
            self.count_error(name, found if shown is None else shown, bad, expected)


def _rank(parent: np.ndarray):
    """For a forest given by parent pointers (-1 at the tops): each node's top and its distance to it,
    by pointer jumping (log2 passes). Nodes on a cycle end on the cycle, whose nodes have a parent."""
    n = parent.shape[0]
    top = np.where(parent >= 0, parent, np.arange(n)).astype(np.int64)
    dist = (parent >= 0).astype(np.int64)
    for _ in range(max(1, n).bit_length() + 1):
        nxt = top[top]
        if np.array_equal(nxt, top):
            break
        dist, top = dist + dist[top], nxt
    return top, dist


def _describe(arr) -> str:
    if not isinstance(arr, np.ndarray):
        return type(arr).__name__
    return f"{arr.dtype.str}{list(arr.shape)}"


def _scalar(value):
    value = value.item() if hasattr(value, "item") else value
    return repr(value) if isinstance(value, float) else value
