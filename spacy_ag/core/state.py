"""The sampler state as flat arrays: a node pool, tables, a yield trie, counts.

Trees (the top part of every sentence's analysis and every table's label) live
in one pool of nodes linked as first-child / next-sibling lists. An adapted
node is a TABLE node pointing at a table; the table owns its label (a RULE
node). A table whose last customer leaves is only marked CLOSED, keeping its
label, so that a rejected Metropolis-Hastings proposal can reopen it: this is
the New/Join bookkeeping of docs/algorithms.md 3.7 without copying trees. Closed
tables and dead nodes are freed once the step is decided.

Table yields are nodes of a trie over terminal ids, stored in an
open-addressing hash table keyed by (parent trie node, terminal). All open
tables with one yield form a linked list, which gives the cache options of a
span in O(1) once the span's trie node is known.

Kernels never grow arrays: before each sentence they check the worst case it
can need and hand control back to Python, which grows the arrays and resumes.

The arrays of `State` (allocated by `new_state`; `grow` enlarges the node, table and
trie pools and the hash table). N, T, Y: the capacities of the node pool, the table
pool and the trie (they grow); H: the hash table's slots, a power of two at least 16,
at most half used; A adaptors, R rules and n_nt nonterminals of the compiled grammar;
D sentences (0 in the online learner's state). Ids of nodes, tables and trie nodes
index these pools; -1 stands for none. Counts are marked "count".

    field        shape    dtype    meaning
    node_kind    (N,)     int8     TERM 0, RULE 1, TABLE 2
    node_sym     (N,)     int32    TERM: terminal id; RULE: nonterminal id; TABLE: the adapted nonterminal
    node_rule    (N,)     int32    RULE: rule id (an original rule, `compiled.rule_parent`); else -1
    node_table   (N,)     int32    TABLE: table id, or -1 for a NEW node (a proposal's new table, whose label hangs
                                   below it as node_child until `add` opens the table); else -1
    node_child   (N,)     int32    first child node, -1 for none
    node_sib     (N,)     int32    next sibling node, -1 for the last child
    node_aux     (N,)     int32    TABLE: trie node of the span's yield (its table's tab_yield); else -1
    node_free    (N,)     int32    node_free[:counters[NODE_FREE]]: freed nodes, reused last in, first out
    tab_adaptor  (T,)     int32    adaptor index of the table
    tab_count    (T,)     int64    count. MCMC: customers of an OPEN table; variational: U, the uses of the entry
                                   inside other entries' labels (`grammatons`); 0 when FREE
    tab_label    (T,)     int32    root node (RULE) of the table's label; -1 when FREE
    tab_yield    (T,)     int32    trie node of the label's yield (stale once the table is FREE)
    tab_state    (T,)     int8     FREE 0, OPEN 1, CLOSED 2 (CLOSED only within one sampling step)
    tab_next     (T,)     int32    next OPEN table with the same yield (the list starts at trie_head); -1 for the
                                   last, and for a table on no list
    tab_prev     (T,)     int32    previous table of that list; -1 for the first, and off the list
    tab_free     (T,)     int32    tab_free[:counters[TAB_FREE]]: freed tables, reused last in, first out
    tab_mark     (T,)     int8     0, except 1 on a CLOSED table `equal_trees` has matched, during one call
    ht_key       (H,)     int64    key of a trie node: parent trie node * n_term + last terminal; -1: empty
    ht_val       (H,)     int32    the trie node of the slot's key; -1: empty
    trie_parent  (Y,)     int32    the yield without its last terminal (a smaller id); -1 for the root 0
    trie_term    (Y,)     int32    terminal id of the yield's last terminal; -1 for the root
    trie_head    (Y,)     int32    first OPEN table whose yield this is (linked by tab_next), -1 for none
    ad_m         (A,)     int64    count: OPEN tables of the adaptor (MCMC)
    ad_n         (A,)     int64    count: customers of the adaptor, the sum of its tab_count (MCMC)
    ad_a         (A,)     float64  Pitman-Yor discount a, in [0, 1)
    ad_b         (A,)     float64  Pitman-Yor concentration b > 0
    f            (R,)     int64    count: uses of each rule in the analyses and the table labels (MCMC); N_rule, the
                                   uses inside the entries' labels (variational)
    fA           (n_nt,)  int64    count: f summed over the rules of each parent nonterminal
    sent_root    (D,)     int32    root node (a RULE node of the start symbol) of sentence d's analysis, -1
    counters     (8,)     int64    slots NODE_HWM, NODE_FREE, TAB_HWM, TAB_FREE, N_TRIE, HT_USED (below); slots 6
                                   and 7 are unused
    rng          (4,)     uint64   xoshiro256** state of the chain's random stream (`rng`)

Counters: NODE_HWM, TAB_HWM: nodes and tables ever handed out (ids below are in use or
free; the next fresh id); NODE_FREE, TAB_FREE: lengths of the free lists; N_TRIE: trie
nodes in use (ids 0..N_TRIE-1, node 0 the empty yield); HT_USED: used hash slots, one
per trie node but the root (N_TRIE - 1).
"""
from __future__ import annotations

from collections import namedtuple

import numpy as np
from ..kernel_environment import kernel

TERM, RULE, TABLE = 0, 1, 2
FREE, OPEN, CLOSED = 0, 1, 2

# counters
NODE_HWM, NODE_FREE, TAB_HWM, TAB_FREE, N_TRIE, HT_USED = 0, 1, 2, 3, 4, 5
N_COUNTERS = 8

State = namedtuple(
    "State",
    [
        "node_kind", "node_sym", "node_rule", "node_table", "node_child", "node_sib", "node_aux",
        "node_free",
        "tab_adaptor", "tab_count", "tab_label", "tab_yield", "tab_state", "tab_next", "tab_prev",
        "tab_free", "tab_mark",
        "ht_key", "ht_val", "trie_parent", "trie_term", "trie_head",
        "ad_m", "ad_n", "ad_a", "ad_b",
        "f", "fA",
        "sent_root",
        "counters",
        "rng",
    ],
)

_GROUPS = {
    "node": ["node_kind", "node_sym", "node_rule", "node_table", "node_child", "node_sib", "node_aux", "node_free"],
    "tab": ["tab_adaptor", "tab_count", "tab_label", "tab_yield", "tab_state", "tab_next", "tab_prev",
            "tab_free", "tab_mark"],
    "trie": ["trie_parent", "trie_term", "trie_head"],
}


def new_state(n_rules, n_nt, n_adaptors, n_sentences, a, b, rng, node_cap=1024, tab_cap=256,
              trie_cap=1024) -> State:
    """An empty state: no analyses, no tables, a trie holding only its root."""
    ht_cap = 1 << max(4, int(np.ceil(np.log2(trie_cap * 2))))
    s = State(
        node_kind=np.zeros(node_cap, np.int8),
        node_sym=np.zeros(node_cap, np.int32),
        node_rule=np.full(node_cap, -1, np.int32),
        node_table=np.full(node_cap, -1, np.int32),
        node_child=np.full(node_cap, -1, np.int32),
        node_sib=np.full(node_cap, -1, np.int32),
        node_aux=np.full(node_cap, -1, np.int32),
        node_free=np.zeros(node_cap, np.int32),
        tab_adaptor=np.zeros(tab_cap, np.int32),
        tab_count=np.zeros(tab_cap, np.int64),
        tab_label=np.full(tab_cap, -1, np.int32),
        tab_yield=np.full(tab_cap, -1, np.int32),
        tab_state=np.zeros(tab_cap, np.int8),
        tab_next=np.full(tab_cap, -1, np.int32),
        tab_prev=np.full(tab_cap, -1, np.int32),
        tab_free=np.zeros(tab_cap, np.int32),
        tab_mark=np.zeros(tab_cap, np.int8),
        ht_key=np.full(ht_cap, -1, np.int64),
        ht_val=np.full(ht_cap, -1, np.int32),
        trie_parent=np.full(trie_cap, -1, np.int32),
        trie_term=np.full(trie_cap, -1, np.int32),
        trie_head=np.full(trie_cap, -1, np.int32),
        ad_m=np.zeros(n_adaptors, np.int64),
        ad_n=np.zeros(n_adaptors, np.int64),
        ad_a=np.array(a, dtype=np.float64).copy(),
        ad_b=np.array(b, dtype=np.float64).copy(),
        f=np.zeros(n_rules, np.int64),
        fA=np.zeros(n_nt, np.int64),
        sent_root=np.full(n_sentences, -1, np.int32),
        counters=np.zeros(N_COUNTERS, np.int64),
        rng=np.array(rng, dtype=np.uint64).copy(),
    )
    s.counters[N_TRIE] = 1  # the root (empty yield)
    return s


def _grown(arr, new_len, fill):
    out = np.full(new_len, fill, dtype=arr.dtype)
    out[: arr.shape[0]] = arr
    return out


_FILL = {"node_rule": -1, "node_table": -1, "node_child": -1, "node_sib": -1, "node_aux": -1,
         "tab_label": -1, "tab_yield": -1, "tab_next": -1, "tab_prev": -1,
         "trie_parent": -1, "trie_term": -1, "trie_head": -1}


def grow(state: State, need_nodes: int, need_tables: int, need_trie: int, n_term: int) -> State:
    """Double whichever pools cannot hold the requested worst case."""
    changes = {}
    c = state.counters
    for group, need, used in (
        ("node", need_nodes, c[NODE_HWM]),
        ("tab", need_tables, c[TAB_HWM]),
        ("trie", need_trie, c[N_TRIE]),
    ):
        cap = getattr(state, _GROUPS[group][0]).shape[0]
        if used + need > cap:
            new_cap = max(2 * cap, int(used + need) + 16)
            for name in _GROUPS[group]:
                changes[name] = _grown(getattr(state, name), new_cap, _FILL.get(name, 0))
    state = state._replace(**changes)
    ht_cap = state.ht_key.shape[0]
    if 2 * (c[HT_USED] + need_trie) > ht_cap:
        new_cap = ht_cap
        while 2 * (c[HT_USED] + need_trie) > new_cap:
            new_cap *= 2
        keys = np.full(new_cap, -1, np.int64)
        vals = np.full(new_cap, -1, np.int32)
        rehash(state.ht_key, state.ht_val, keys, vals)
        state = state._replace(ht_key=keys, ht_val=vals)
    return state


def has_room(state: State, need_nodes: int, need_tables: int, need_trie: int) -> bool:
    return bool(room_ok(state, need_nodes, need_tables, need_trie))


@kernel(cache=True)
def room_ok(S, need_nodes, need_tables, need_trie):
    """Whether the pools hold `need_nodes` more nodes, `need_tables` more tables and `need_trie`
    more trie nodes with the hash table at most half full: the check a kernel makes before each
    item, returning to Python (which calls `grow`) when it fails, since kernels never grow arrays."""
    c = S.counters
    if c[NODE_HWM] + need_nodes > S.node_kind.shape[0]:
        return False
    if c[TAB_HWM] + need_tables > S.tab_count.shape[0]:
        return False
    if c[N_TRIE] + need_trie > S.trie_parent.shape[0]:
        return False
    if 2 * (c[HT_USED] + need_trie) > S.ht_key.shape[0]:
        return False
    return True


# ---------------------------------------------------------------------------
# allocation


@kernel(cache=True)
def alloc_node(S, kind, sym, rule):
    """A node (kind, sym, rule) without table, children, sibling or yield: the last freed one,
    else a fresh one at NODE_HWM. The caller has checked the room (`room_ok`)."""
    c = S.counters
    if c[NODE_FREE] > 0:
        c[NODE_FREE] -= 1
        x = S.node_free[c[NODE_FREE]]
    else:
        x = c[NODE_HWM]
        c[NODE_HWM] += 1
    S.node_kind[x] = kind
    S.node_sym[x] = sym
    S.node_rule[x] = rule
    S.node_table[x] = -1
    S.node_child[x] = -1
    S.node_sib[x] = -1
    S.node_aux[x] = -1
    return x


@kernel(cache=True, inline="always")
def link_built_children(S, x, built, top, n):
    """Hang the last n nodes of the stack `built` under x, built[top - 1] first (trees read from
    records are built children first, right to left); returns the new top.

    Shapes: built (at least top,) int32 or int64, node ids."""
    prev = -1
    for c in range(n):
        child = built[top - 1 - c]
        if prev < 0:
            S.node_child[x] = child
        else:
            S.node_sib[prev] = child
        prev = child
    return top - n


@kernel(cache=True)
def free_node(S, x):
    """Put node x on the free list; its fields keep their values until `alloc_node` reuses it."""
    c = S.counters
    S.node_free[c[NODE_FREE]] = x
    c[NODE_FREE] += 1


@kernel(cache=True)
def alloc_table(S):
    """A table id: the last freed one, else a fresh one at TAB_HWM; the caller sets its fields."""
    c = S.counters
    if c[TAB_FREE] > 0:
        c[TAB_FREE] -= 1
        return S.tab_free[c[TAB_FREE]]
    k = c[TAB_HWM]
    c[TAB_HWM] += 1
    return k


@kernel(cache=True)
def tables_taken_since(S, free_before, hwm_before):
    """The tables `alloc_table` handed out since the counters TAB_FREE and TAB_HWM were
    free_before and hwm_before, in the order it handed them out: the top of the free list first,
    then fresh ones. Exact only if no table was freed in between (callers check what they get).

    Returns (n_reused + n_fresh,) int64 table ids."""
    c = S.counters
    n_reused = max(free_before - c[TAB_FREE], 0)
    n_fresh = max(c[TAB_HWM] - hwm_before, 0)
    out = np.empty(n_reused + n_fresh, np.int64)
    for i in range(n_reused):
        out[i] = S.tab_free[free_before - 1 - i]
    for i in range(n_fresh):
        out[n_reused + i] = hwm_before + i
    return out


@kernel(cache=True)
def free_table(S, k):
    """Mark table k FREE (no customers, no label) and put it on the free list; the caller has
    already taken it off its yield's list."""
    c = S.counters
    S.tab_state[k] = FREE
    S.tab_count[k] = 0
    S.tab_label[k] = -1
    S.tab_free[c[TAB_FREE]] = k
    c[TAB_FREE] += 1


@kernel(cache=True)
def push_children(S, x, stack, top):
    """Push the children of pool node x on a walk's stack; return the new top.

    Shapes: stack (room for top + the children,) int32, node ids."""
    c = S.node_child[x]
    while c >= 0:
        stack[top] = c
        top += 1
        c = S.node_sib[c]
    return top


# ---------------------------------------------------------------------------
# the yield trie


@kernel(cache=True, inline="always")
def _slot(key, mask):
    """Home slot of a trie key: Fibonacci hashing (the key times 2**64 / golden ratio), bits 29 up,
    masked to the table's size (mask = H - 1)."""
    h = np.uint64(key) * np.uint64(0x9E3779B97F4A7C15)
    return np.int64((h >> np.uint64(29)) & np.uint64(mask))


@kernel(cache=True)
def trie_child(S, node, term, n_term):
    """The trie node extending `node` by `term`, or -1."""
    key = np.int64(node) * n_term + term
    mask = S.ht_key.shape[0] - 1
    i = _slot(key, mask)
    while True:
        k = S.ht_key[i]
        if k == key:
            return S.ht_val[i]
        if k == -1:
            return -1
        i = (i + 1) & mask


@kernel(cache=True)
def trie_insert(S, node, term, n_term):
    """The child of `node` by `term`, created if absent (room was checked by the caller)."""
    key = np.int64(node) * n_term + term
    mask = S.ht_key.shape[0] - 1
    i = _slot(key, mask)
    while True:
        k = S.ht_key[i]
        if k == key:
            return S.ht_val[i]
        if k == -1:
            break
        i = (i + 1) & mask
    c = S.counters
    child = c[N_TRIE]
    c[N_TRIE] += 1
    c[HT_USED] += 1
    S.ht_key[i] = key
    S.ht_val[i] = child
    S.trie_parent[child] = node
    S.trie_term[child] = term
    S.trie_head[child] = -1
    return child


@kernel(cache=True)
def rehash(old_keys, old_vals, keys, vals):
    """Insert every key of old_keys (-1: none) with its value into the hash table (keys, vals) by
    linear probing: a grown table (`grow`), or a worker's copy of the trie (`sharded_estep.YieldTrie`).

    Shapes: old_keys (m,) int64, old_vals (m,) int32; keys (H,) int64 and vals (H,) int32, H a power
    of two with room for the m keys."""
    mask = keys.shape[0] - 1
    for j in range(old_keys.shape[0]):
        key = old_keys[j]
        if key == -1:
            continue
        i = _slot(key, mask)
        while keys[i] != -1:
            i = (i + 1) & mask
        keys[i] = key
        vals[i] = old_vals[j]


@kernel(cache=True)
def yield_length(S, y):
    """The number of terminals of trie node y's yield (its depth in the trie)."""
    n = 0
    while y > 0:
        n += 1
        y = S.trie_parent[y]
    return n


@kernel(cache=True)
def yield_terms(S, y, out):
    """Write the terminals of trie node `y` into out[:len]; return len.

    Shapes: out (at least len,) int32, terminal ids."""
    n = yield_length(S, y)
    p = n
    while y > 0:
        p -= 1
        out[p] = S.trie_term[y]
        y = S.trie_parent[y]
    return n


# ---------------------------------------------------------------------------
# tables in the yield lists


@kernel(cache=True)
def link_table(S, k):
    """Put table k first on the list of the OPEN tables of its yield (trie_head), where the chart
    finds the cache options of a span."""
    y = S.tab_yield[k]
    head = S.trie_head[y]
    S.tab_prev[k] = -1
    S.tab_next[k] = head
    if head >= 0:
        S.tab_prev[head] = k
    S.trie_head[y] = k


@kernel(cache=True)
def unlink_table(S, k):
    """Take table k off its yield's list (it closes or is removed)."""
    prev, nxt = S.tab_prev[k], S.tab_next[k]
    if prev >= 0:
        S.tab_next[prev] = nxt
    else:
        S.trie_head[S.tab_yield[k]] = nxt
    if nxt >= 0:
        S.tab_prev[nxt] = prev
    S.tab_next[k] = -1
    S.tab_prev[k] = -1
