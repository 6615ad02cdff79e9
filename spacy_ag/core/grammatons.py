"""Truncated grammatons stored in the sampler state's tables (docs/algorithms.md 4.1, 4.5, 4.10).

A grammaton entry of adapted `c` is a subtree with a fixed derivation and a
known yield: exactly what an MCMC table is. So the variational engine keeps
its entries as tables of the same `State`: the label (derivation) lives in
the node pool, lower entries are referenced by TABLE nodes, the yield trie
gives the chart its cache options. Per entry:

* `S.tab_count[k]` is U: uses of entry k inside the labels of other entries;
* `S.f[r]` is N_rule: uses of rule r inside all labels;
* `V.ft[k]` is the decayed sentence count f~, `V.rank[k]` its stick position
  (smaller first), `V.lw[k]` its E log pi, the cache weight of G'.

Entries are never duplicated: a new subtree equal to an entry (same adaptor,
yield and derivation) is that entry.

The arrays of `Variational` (allocated by `new_variational`; `fit_capacity` lengthens
the per-table ones with the state's table pool). T: the capacity of the state's table
pool (the per-table arrays are indexed by table id k, as `State.tab_*`); R rules, A
adaptors of the compiled grammar. Counts here are weighted (1 / samples per drawn tree)
and decayed, hence floats.

    field     shape  dtype    meaning
    ft        (T,)   float64  count: the entry's decayed sentence count f~ (Eq. 9), the uses of entry k by the
                              corpus's sentences at corpus scale; 0 for a table that is no entry
    lw        (T,)   float64  E_q[log pi_k], the entry's log cache weight in G' (Eq. 7); -inf for a table that is no
                              entry, and for a new entry until the next `refresh_weights`
    rank      (T,)   int64    stick position key: the entries of one adaptor are in stick order by rising rank
                              (handed out from counters[NEXT_RANK])
    f_batch   (T,)   float64  count: this minibatch's f and h counts of the entry, weighted; zeroed by `decay`
    alpha     (R,)   float64  Dirichlet pseudo-count of the rule (the grammar's weight, then Newton steps, 4.8)
    gt        (R,)   float64  count: the rule's decayed count g~ (Eq. 10)
    g_batch   (R,)   float64  count: this minibatch's uses of the rule, weighted; zeroed by `decay`
    gamma     (R,)   float64  Dirichlet parameter of q(theta) (Eq. 11): alpha + corr * gt + State.f
    lrho      (R,)   float64  log weight of the rule in G': E_q[log theta_r], plus E_q[log rho_c] when its parent is
                              adapted (Eqs. 6-8)
    rho       (R,)   float64  exp(lrho): the rule weights the inside pass takes
    elog_rho  (A,)   float64  E_q[log rho_c]: the log mass of drawing from the adaptor's base
    counters  (4,)   int64    slot NEXT_RANK (0): the next rank to hand out; slots 1-3 are unused
"""
from collections import namedtuple

import numpy as np
from ..kernel_environment import kernel

from .analyses import SAME_TABLES, equal_trees, free_tree
from .state import (
    OPEN, RULE, TABLE, TAB_HWM, alloc_node, alloc_table, free_table, link_table, push_children,
    trie_insert, unlink_table,
)

Variational = namedtuple(
    "Variational",
    [
        # per table id
        "ft",  # decayed sentence counts f~ (Eq. 9)
        "lw",  # E_q[log pi] of the entry: its cache weight in G'
        "rank",  # stick position key: entries of an adaptor are ordered by it
        "f_batch",  # this minibatch's f and h counts
        # per rule
        "alpha",  # Dirichlet pseudo-counts (updated by Newton steps, 4.8)
        "gt",  # decayed rule counts g~ (Eq. 10)
        "g_batch",
        "gamma",  # Dirichlet parameters of q (Eq. 11)
        "lrho",  # log weight of the rule in G' (E log theta, plus E log rho_c for adapted parents)
        "rho",
        # per adaptor
        "elog_rho",  # E_q[log rho_c]: the mass of drawing from the base
        "counters",  # [next rank]
    ],
)

NEXT_RANK = 0
_TABLE_FIELDS = ("ft", "lw", "rank", "f_batch")


def new_variational(alpha: np.ndarray, n_adaptors: int, tab_cap: int) -> Variational:
    n_rules = alpha.shape[0]
    return Variational(
        ft=np.zeros(tab_cap), lw=np.full(tab_cap, -np.inf), rank=np.zeros(tab_cap, np.int64),
        f_batch=np.zeros(tab_cap), alpha=alpha.astype(np.float64).copy(), gt=np.zeros(n_rules),
        g_batch=np.zeros(n_rules), gamma=alpha.astype(np.float64).copy(), lrho=np.zeros(n_rules),
        rho=np.ones(n_rules), elog_rho=np.zeros(n_adaptors), counters=np.zeros(4, np.int64),
    )


def fit_capacity(V: Variational, tab_cap: int) -> Variational:
    """Per-table arrays as long as the state's table pool (which grows on demand)."""
    if V.ft.shape[0] >= tab_cap:
        return V
    changes = {}
    for name in _TABLE_FIELDS:
        old = getattr(V, name)
        new = np.full(tab_cap, -np.inf if name == "lw" else 0, dtype=old.dtype)
        new[: old.shape[0]] = old
        changes[name] = new
    return V._replace(**changes)


@kernel(cache=True)
def count_productions(G, S, root, sign, stack, table_uses, rule_uses):
    """Add `sign` times the one-level productions of a tree (rules down to its TABLE references)
    to N_rule (S.f) and to U (S.tab_count); with non-empty `table_uses` / `rule_uses`, also
    count each use there (+1 per table reference and per rule).

    Shapes: stack int32, room for the tree's nodes; table_uses (T,) float64 and rule_uses (R,) float64, or both
    (0,)."""
    tally = table_uses.shape[0] > 0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        x = stack[top]
        kind = S.node_kind[x]
        if kind == TABLE:
            k = S.node_table[x]
            S.tab_count[k] += sign
            if tally:
                table_uses[k] += 1.0
        elif kind == RULE:
            r = S.node_rule[x]
            S.f[r] += sign
            S.fA[G.rule_parent[r]] += sign
            if tally:
                rule_uses[r] += 1.0
            top = push_children(S, x, stack, top)


@kernel(cache=True)
def count_label(G, S, label, sign, stack):
    """Add (sign=1) or remove (-1) a label's one-level productions to N_rule and to U.

    Shapes: stack int32, room for the label's nodes."""
    count_productions(G, S, label, sign, stack, np.empty(0), np.empty(0))


@kernel(cache=True)
def same_derivation(S, x, y, stack):
    """Equal trees, with TABLE nodes equal when they reference the same entry.

    Shapes: stack int32, room for two nodes per node of the trees."""
    return equal_trees(S, x, y, stack, stack[:0], SAME_TABLES)


@kernel(cache=True)
def find_entry(S, ad, y, label, skip, stack):
    """The entry of adaptor `ad` with yield node `y` and this derivation (other than `skip`), or -1.

    Shapes: stack int32, as `same_derivation`."""
    k = S.trie_head[y]
    while k >= 0:
        if k != skip and S.tab_adaptor[k] == ad and same_derivation(S, S.tab_label[k], label, stack):
            return k
        k = S.tab_next[k]
    return -1


@kernel(cache=True)
def create_entry(G, S, V, ad, y, label, stack):
    """Append a new entry (f~ = 0) at the end of its grammaton.

    Shapes: stack int32, room for the label's nodes."""
    k = alloc_table(S)
    S.tab_adaptor[k] = ad
    S.tab_label[k] = label
    S.tab_yield[k] = y
    S.tab_state[k] = OPEN
    S.tab_count[k] = 0
    link_table(S, k)
    count_label(G, S, label, 1, stack)
    V.ft[k] = 0.0
    V.f_batch[k] = 0.0
    V.lw[k] = -np.inf
    V.rank[k] = V.counters[NEXT_RANK]
    V.counters[NEXT_RANK] += 1
    return k


@kernel(cache=True)
def remove_entry(G, S, V, k, stack):
    """Drop an unreferenced entry: its productions leave N_rule and U, its nodes the pool.

    Shapes: stack int32, room for the label's nodes."""
    label = S.tab_label[k]
    count_label(G, S, label, -1, stack)
    free_tree(S, label, stack)
    unlink_table(S, k)
    V.ft[k] = 0.0
    V.f_batch[k] = 0.0
    V.lw[k] = -np.inf
    free_table(S, k)


@kernel(cache=True)
def entries_of_all_adaptors(S, V, n_ad, ptr):
    """Every adaptor's entries in stick order, in one scan of the tables: adaptor ad's are
    out[ptr[ad]:ptr[ad+1]], as `entries_by_rank(S, V, ad)` gives them (which scans every table
    per adaptor: K scans of the whole pool for a K-topic model). ptr: (n_ad + 1,).

    Returns (open tables,) int64 table ids."""
    n_tab = S.counters[TAB_HWM]
    ptr[:] = 0
    for k in range(n_tab):
        if S.tab_state[k] == OPEN:
            ptr[S.tab_adaptor[k] + 1] += 1
    for ad in range(n_ad):
        ptr[ad + 1] += ptr[ad]
    m = ptr[n_ad]
    out = np.empty(m, np.int64)
    cursor = ptr[:n_ad].copy()
    if m == 0:
        return out
    # Ranks are distinct (one counter hands them out), so the entries are placed by rank in a
    # table of the rank span (at most the entries since the last pruning renumbered them) and
    # read back in order: no sort. A span out of proportion, or a repeated rank, as only an
    # edited model file could have, takes the sort.
    lo, hi = np.iinfo(np.int64).max, np.iinfo(np.int64).min
    for k in range(n_tab):
        if S.tab_state[k] == OPEN:
            lo = min(lo, V.rank[k])
            hi = max(hi, V.rank[k])
    if hi - lo < 4 * m + 1024:
        by_rank = np.full(hi - lo + 1, -1, np.int64)
        distinct = True
        for k in range(n_tab):
            if S.tab_state[k] == OPEN:
                if by_rank[V.rank[k] - lo] >= 0:
                    distinct = False
                by_rank[V.rank[k] - lo] = k
        if distinct:
            for k in by_rank:
                if k >= 0:
                    ad = S.tab_adaptor[k]
                    out[cursor[ad]] = k
                    cursor[ad] += 1
            return out
    keys = np.empty(m, np.int64)
    for k in range(n_tab):
        if S.tab_state[k] == OPEN:
            ad = S.tab_adaptor[k]
            out[cursor[ad]] = k
            keys[cursor[ad]] = V.rank[k]
            cursor[ad] += 1
    for ad in range(n_ad):
        a, b = ptr[ad], ptr[ad + 1]
        out[a:b] = out[a:b][np.argsort(keys[a:b], kind="mergesort")]
    return out


@kernel(cache=True)
def with_new_entries(S, V, ordered, ptr, first_rank, joined):
    """The stick order `ordered` (adaptor ad's entries ordered[ptr[ad]:ptr[ad+1]], as
    `entries_of_all_adaptors` gave them) after entries were only created, not removed: those
    ranked first_rank or later join the end of their adaptor's, in rank order (`create_entry`
    ranks each after all others). `joined`: the tables they took, in the order they were created
    (`tables_taken_since`). Returns (ordered, ptr), new arrays if any joined.

    Placing all the entries by rank anew, or scanning all tables for the new ones, is serial work
    that grows with the grammatons, while a minibatch adds few entries (docs/performance.md).
    An entry's rank is below NEXT_RANK when
    it is given (and in a model file, `state_checks`), so the older entries rank below first_rank,
    and n_new open tables ranked first_rank or later, in rising rank, are the new entries; if
    `joined` is not that, the order is made anew.

    Shapes: ordered (m,) int64; ptr (A + 1,) int64; joined (n_joined,) int64 table ids; returns
    ordered (m + n_new,) int64 and ptr (A + 1,) int64."""
    n_new = V.counters[NEXT_RANK] - first_rank
    if n_new == 0:
        return ordered, ptr
    n_ad = ptr.shape[0] - 1
    if not _the_new_entries(S, V, joined, n_new, first_rank):
        out_ptr = np.empty(n_ad + 1, np.int64)
        return entries_of_all_adaptors(S, V, n_ad, out_ptr), out_ptr
    out_ptr = ptr.copy()
    for k in joined:
        out_ptr[S.tab_adaptor[k] + 1:] += 1
    out = np.empty(out_ptr[n_ad], np.int64)
    cursor = np.empty(n_ad, np.int64)
    for ad in range(n_ad):
        out[out_ptr[ad]:out_ptr[ad] + ptr[ad + 1] - ptr[ad]] = ordered[ptr[ad]:ptr[ad + 1]]
        cursor[ad] = out_ptr[ad] + ptr[ad + 1] - ptr[ad]
    for k in joined:
        ad = S.tab_adaptor[k]
        out[cursor[ad]] = k
        cursor[ad] += 1
    return out, out_ptr


@kernel(cache=True)
def _the_new_entries(S, V, joined, n_new, first_rank):
    """True if `joined` are n_new open tables ranked first_rank or later, in rising rank.

    Shapes: joined (n_joined,) int64 table ids."""
    if joined.shape[0] != n_new:
        return False
    last = first_rank - 1
    for k in joined:
        if S.tab_state[k] != OPEN or V.rank[k] <= last:
            return False
        last = V.rank[k]
    return True


@kernel(cache=True)
def entries_by_rank(S, V, ad):
    """The entries of adaptor `ad` in stick order.

    Shapes: returns (entries of `ad`,) int64 table ids."""
    n_tab = S.counters[TAB_HWM]
    count = 0
    for k in range(n_tab):
        if S.tab_state[k] == OPEN and S.tab_adaptor[k] == ad:
            count += 1
    out = np.empty(count, np.int64)
    keys = np.empty(count, np.int64)
    count = 0
    for k in range(n_tab):
        if S.tab_state[k] == OPEN and S.tab_adaptor[k] == ad:
            out[count] = k
            keys[count] = V.rank[k]
            count += 1
    return out[np.argsort(keys, kind="mergesort")]


@kernel(cache=True)
def merge_entries(G, S, V, keep, drop, stack):
    """Fold entry `drop` into the equal entry `keep`: statistics add, references move.

    Shapes: stack int32, room for the nodes of the largest label."""
    V.ft[keep] += V.ft[drop]
    V.f_batch[keep] += V.f_batch[drop]
    n_tab = S.counters[TAB_HWM]
    for t in range(n_tab):
        if S.tab_count[drop] == 0:  # every reference has moved (tab_count counts them)
            break
        if S.tab_state[t] != OPEN or t == drop:
            continue
        stack[0] = S.tab_label[t]
        top = 1
        while top > 0:
            top -= 1
            x = stack[top]
            if S.node_kind[x] == TABLE:
                if S.node_table[x] == drop:
                    S.node_table[x] = keep
                    S.tab_count[keep] += 1
                    S.tab_count[drop] -= 1
            elif S.node_kind[x] == RULE:
                top = push_children(S, x, stack, top)
    remove_entry(G, S, V, drop, stack)


@kernel(cache=True)
def yield_node(S, words, i, j, n_term):
    """The trie node of words[i:j], inserting the nodes it lacks (room was checked by the caller).

    Shapes: words (at least j,) int32 terminal ids."""
    y = 0
    for p in range(i, j):
        y = trie_insert(S, y, words[p], n_term)
    return y


@kernel(cache=True)
def adopt_subtree(G, S, V, X, label, y, stack):
    """The entry for a base-expanded adapted subtree: an equal existing entry, or a new one.

    Shapes: stack int32, room for two nodes per node of the label."""
    ad = G.sym_adaptor[X]
    k = find_entry(S, ad, y, label, -1, stack)
    if k >= 0:
        free_tree(S, label, stack)
        return k
    return create_entry(G, S, V, ad, y, label, stack)


@kernel(cache=True)
def new_table_node(S, X, k):
    """A TABLE node of nonterminal X referencing entry (table) k, with its yield."""
    x = alloc_node(S, TABLE, X, -1)
    S.node_table[x] = k
    S.node_aux[x] = S.tab_yield[k]
    return x
