"""One MCMC sweep, initialization and table-label resampling, all in compiled code.

Every kernel works through a range of sentences (or tables) and stops early,
returning how far it got, when the pools might not hold the worst case of the
next item; the Python driver grows the pools and calls again. Nothing else
returns to Python inside a sweep.
"""
import math

import numpy as np
from ..kernel_environment import kernel

from .analyses import SAME_ANALYSIS, add, equal_trees, fill_rho, free_tree, log_r, remove
from .borrowed import borrowed
from .chart import inside, new_chart, sample_tree, tables_need, trie_need
from .rng import shuffle, uniform_pos
from .state import N_TRIE, OPEN, TAB_HWM, room_ok, yield_terms

# stats slots
ACCEPTED, REJECTED, UNCHANGED, LABEL_ACCEPTED, LABEL_REJECTED, LABEL_UNCHANGED = 0, 1, 2, 3, 4, 5
N_STATS = 8
UNPARSEABLE = -1


@kernel(cache=True)
def need_nodes(G, n, max_unary):
    """Worst-case nodes of one analysis of n terminals. Its leaves (terminals and reused tables)
    cover at least one terminal each and its branching nodes are fewer than its leaves; above each
    stands a chain of at most max_unary unary rules (and a lexical rule above a terminal); and each
    new table adds a label node, at most G.adaptor_depth per terminal (`tables_need`)."""
    return n * (max_unary + 2) + n * (max_unary + 1) + n * G.adaptor_depth + 8


class Workspace:
    """Scratch arrays sized for the longest sentence, reused across kernels.

    The MCMC kernels (`sweep`, `initialize`, `resample_labels`) take these arrays; a
    kernel reads only the part a sentence of n <= max_len terminals needs. R rules and
    n_sym chart symbols of the compiled grammar; W = chart_width(G, max_len) (the band,
    or max_len for a full chart); M = need_nodes(G, max_len, max_unary_chain) + 8; C =
    chart_rows(G, max_len, chart_block(G, max_len)) chart rows (max_len + 1 unless the longest
    sentence's chart is filled in blocks) and V <= C of them the window (see chart.py).

        field    shape                        dtype    meaning
        max_len  scalar                       int      the longest sentence, in terminals
        rho      (R,)                         float64  theta' of every rule under the current state (`fill_rho`),
                                                       tempered: the rule weights of the inside pass
        chart    (C, W + 2, n_sym)            float64  the inside chart (see chart.py)
        scale    (C, W + 2)                   float64  the chart's log scales (see chart.py)
        ynode    (V, W + 2)                   int32    trie node of each span's string (see chart.py)
        window   (3,)                         int64    the chart's first row in the window, rows per block, the
                                                       window's rows V (see chart.py)
        tasks    (M, 4)                       int32    `sample_tree`'s stack of items to expand: (pool node, symbol,
                                                       start, end)
        buf      (max_len + 3, 3)             int32    the children of one chosen chart rule, rightmost first:
                                                       (symbol, start, end), symbol -1 - t for terminal t
        terms    (max_len + 1,)               int32    the terminal ids of one table's yield (label resampling)
    """

    def __init__(self, compiled, max_len):
        G = compiled.arrays
        m = max_len + 1
        self.max_len = max_len
        self.rho = np.zeros(G.rule_parent.shape[0])
        self.chart, self.scale, self.ynode, self.window = new_chart(G, max_len)
        self.tasks = np.zeros((int(need_nodes(G, max_len, compiled.max_unary_chain)) + 8, 4), np.int32)
        self.buf = np.zeros((m + 2, 3), np.int32)
        self.terms = np.zeros(m, np.int32)


@kernel(cache=True, inline="always")
def _decide(G, S, new, old, lp_old, lr_old, lr_new, collapsed, inv_temp, use_mh, stack, marked,
            equality=SAME_ANALYSIS):
    """The Metropolis-Hastings test (3.9) between a removed analysis and a proposal.

    On return exactly one of them is in the state and the other is freed;
    the result says which (ACCEPTED: the proposal) and whether they were equal
    (`equal_trees` in the mode `equality`).

    Shapes: stack (2 N + 16,) int32, a walk's stack; marked (T + 1,) int32, the CLOSED tables `equal_trees`
    matched."""
    if equal_trees(S, new, old, stack, marked, equality):
        add(G, S, old, collapsed, stack)
        free_tree(S, new, stack)
        return UNCHANGED
    lp_new = add(G, S, new, collapsed, stack)
    log_acc = inv_temp * (lp_new - lp_old) + (lr_old - lr_new)
    if (not use_mh) or math.log(uniform_pos(S.rng)) < min(0.0, log_acc):
        free_tree(S, old, stack)
        return ACCEPTED
    remove(G, S, new, collapsed, stack)
    add(G, S, old, collapsed, stack)
    free_tree(S, new, stack)
    return REJECTED


@kernel(cache=True, inline="always")
def _mh_step(G, S, words, n, d, collapsed, inv_temp, use_mh, rho, chart, scale, ynode, window, tasks, buf,
             stack, marked, stats):
    """Resample sentence d (3.9): take its analysis out, draw a proposal from G' of the rest, keep one of the two
    (`_decide`) and count the outcome in stats. False, with the old analysis back, if the sentence has no parse.

    Shapes: words (n,) int32, the sentence; the Workspace arrays (`Workspace`); stack (2 N + 16,) int32;
    marked (T + 1,) int32; stats (N_STATS,) int64, counts per outcome slot (ACCEPTED, ...)."""
    old = S.sent_root[d]
    lp_old = remove(G, S, old, collapsed, stack)
    fill_rho(G, S, rho, collapsed, -1, inv_temp)
    lr_old = log_r(G, S, old, rho, inv_temp, stack)
    logz = inside(G, S, words, n, rho, chart, scale, ynode, window, G.start, -1, inv_temp)
    if logz == -np.inf:
        add(G, S, old, collapsed, stack)
        return False
    new, lr_new = sample_tree(G, S, words, n, rho, chart, scale, ynode, window, G.start, -1, inv_temp,
                              S.rng, tasks, buf)
    outcome = _decide(G, S, new, old, lp_old, lr_old, lr_new, collapsed, inv_temp, use_mh, stack,
                      marked)
    if outcome == ACCEPTED:
        S.sent_root[d] = new
    stats[outcome] += 1
    return True


@kernel(cache=True)
def sweep(G, S, words, sent_ptr, order, pos, collapsed, inv_temp, use_mh, max_unary, rho, chart,
          scale, ynode, window, tasks, buf, stats):
    """Resample the sentences order[pos:]; return the next position, or -(d+1) if d fails.

    Shapes: words (n_terminals,) int32, the corpus's terminal ids; sent_ptr (n_sentences + 1,) int64, sentence d
    is words[sent_ptr[d]:sent_ptr[d+1]]; order (n_sentences,) int64, the sentences in the order of the sweep;
    rho, chart, scale, ynode, window, tasks, buf: the `Workspace`; stats (N_STATS,) int64 counts, added to."""
    G, S, words, rho, chart, scale, ynode, window, tasks, buf = borrowed(
        (G, S, words, rho, chart, scale, ynode, window, tasks, buf))
    stack = np.empty(2 * S.node_kind.shape[0] + 16, np.int32)
    marked = np.empty(S.tab_count.shape[0] + 1, np.int32)
    while pos < order.shape[0]:
        d = order[pos]
        n = sent_ptr[d + 1] - sent_ptr[d]
        if not room_ok(S, need_nodes(G, n, max_unary), tables_need(G, n), trie_need(G, n)):
            return pos
        w = words[sent_ptr[d]:sent_ptr[d + 1]]
        if not _mh_step(G, S, w, n, d, collapsed, inv_temp, use_mh, rho, chart, scale, ynode, window,
                        tasks, buf, stack, marked, stats):
            return -(d + 1)
        pos += 1
    return pos


@kernel(cache=True)
def initialize(G, S, words, sent_ptr, order, pos, incremental, collapsed, max_unary, rho, chart,
               scale, ynode, window, tasks, buf):
    """Sample a first analysis for order[pos:] (3.11).

    Batch: every sentence is drawn from the base PCFG of the empty state and
    nothing is added (call `add_all` afterwards). Incremental: each sentence
    is drawn from G' of the state so far and added at once.

    Shapes: words, sent_ptr, order as in `sweep`; rho, chart, scale, ynode, window, tasks, buf: the `Workspace`."""
    G, S, words, rho, chart, scale, ynode, window, tasks, buf = borrowed(
        (G, S, words, rho, chart, scale, ynode, window, tasks, buf))
    stack = np.empty(2 * S.node_kind.shape[0] + 16, np.int32)
    if not incremental:
        fill_rho(G, S, rho, collapsed, -1, 1.0)
    while pos < order.shape[0]:
        d = order[pos]
        n = sent_ptr[d + 1] - sent_ptr[d]
        if not room_ok(S, need_nodes(G, n, max_unary), tables_need(G, n), trie_need(G, n)):
            return pos
        w = words[sent_ptr[d]:sent_ptr[d + 1]]
        if incremental:
            fill_rho(G, S, rho, collapsed, -1, 1.0)
        logz = inside(G, S, w, n, rho, chart, scale, ynode, window, G.start, -1, 1.0)
        if logz == -np.inf:
            return -(d + 1)
        root, _ = sample_tree(G, S, w, n, rho, chart, scale, ynode, window, G.start, -1, 1.0, S.rng, tasks, buf)
        S.sent_root[d] = root
        if incremental:
            add(G, S, root, collapsed, stack)
        pos += 1
    return pos


@kernel(cache=True)
def add_all(G, S, order, pos, collapsed, max_unary, sent_ptr):
    """Add the stored first analyses (batch initialization): each adapted node opens a table.

    Shapes: order (n_sentences,) int64; sent_ptr (n_sentences + 1,) int64."""
    G, S = borrowed((G, S))
    stack = np.empty(2 * S.node_kind.shape[0] + 16, np.int32)
    while pos < order.shape[0]:
        d = order[pos]
        n = sent_ptr[d + 1] - sent_ptr[d]
        if not room_ok(S, 0, tables_need(G, n), 0):
            return pos
        add(G, S, S.sent_root[d], collapsed, stack)
        pos += 1
    return pos


@kernel(cache=True)
def open_tables(S, ad, rng):
    """The open tables of adaptor `ad` in a random order.

    Shapes: rng (4,) uint64; returns (open tables of `ad`,) int32 table ids."""
    count = 0
    for k in range(S.counters[TAB_HWM]):
        if S.tab_state[k] == OPEN and S.tab_adaptor[k] == ad:
            count += 1
    out = np.empty(count, np.int32)
    count = 0
    for k in range(S.counters[TAB_HWM]):
        if S.tab_state[k] == OPEN and S.tab_adaptor[k] == ad:
            out[count] = k
            count += 1
    shuffle(rng, out)
    return out


@kernel(cache=True)
def tables_in_yield_order(S, n_term):
    """The open tables of all adaptors in py-cfg's order (its yield trie, walked depth first):
    yields in the order of their terminals, each before its extensions, and the tables of one
    yield, whatever their adaptor, one after the other.

    Shapes: returns (open tables,) int32 table ids."""
    n = S.counters[N_TRIE]
    key = np.empty(n - 1, np.int64)
    for y in range(1, n):
        key[y - 1] = np.int64(S.trie_parent[y]) * n_term + S.trie_term[y]
    by_parent = np.argsort(key, kind="mergesort") + 1
    first = np.zeros(n + 1, np.int64)
    for y in range(1, n):
        first[S.trie_parent[y] + 1] += 1
    for y in range(n):
        first[y + 1] += first[y]
    out = np.empty(S.counters[TAB_HWM], np.int32)
    count = 0
    stack = np.empty(n, np.int64)
    top = 1
    stack[0] = 0
    while top > 0:
        top -= 1
        y = stack[top]
        k = S.trie_head[y]
        while k >= 0:
            if S.tab_state[k] == OPEN:
                out[count] = k
                count += 1
            k = S.tab_next[k]
        for i in range(first[y + 1] - 1, first[y] - 1, -1):
            stack[top] = by_parent[i]
            top += 1
    return out[:count]


@kernel(cache=True)
def resample_labels(G, S, tables, pos, collapsed, inv_temp, max_unary, rho, chart, scale, ynode, window,
                    tasks, buf, terms, stats, equality):
    """Table-label resampling (3.12) for tables[pos:], a new label equal to the old one (`equal_trees`
    in the mode `equality`) keeping the old; return the next position.

    Shapes: tables (m,) int32 table ids (`open_tables`, `tables_in_yield_order`); rho, chart, scale, ynode,
    tasks, buf, terms: the `Workspace`; stats (N_STATS,) int64 counts, added to."""
    G, S, rho, chart, scale, ynode, window, tasks, buf, terms = borrowed(
        (G, S, rho, chart, scale, ynode, window, tasks, buf, terms))
    stack = np.empty(2 * S.node_kind.shape[0] + 16, np.int32)
    marked = np.empty(S.tab_count.shape[0] + 1, np.int32)
    while pos < tables.shape[0]:
        k = tables[pos]
        if S.tab_state[k] != OPEN:  # closed by an earlier table's new label
            pos += 1
            continue
        n = yield_terms(S, S.tab_yield[k], terms)
        if not room_ok(S, need_nodes(G, n, max_unary), tables_need(G, n), trie_need(G, n)):
            return pos
        ad = S.tab_adaptor[k]
        A = G.adaptor_nt[ad]
        old = S.tab_label[k]
        lp_old = remove(G, S, old, collapsed, stack)
        fill_rho(G, S, rho, collapsed, ad, inv_temp)
        lr_old = log_r(G, S, old, rho, inv_temp, stack)
        inside(G, S, terms, n, rho, chart, scale, ynode, window, A, ad, inv_temp)
        new, lr_new = sample_tree(G, S, terms, n, rho, chart, scale, ynode, window, A, ad, inv_temp, S.rng,
                                  tasks, buf)
        outcome = _decide(G, S, new, old, lp_old, lr_old, lr_new, collapsed, inv_temp, True, stack,
                          marked, equality)
        if outcome == ACCEPTED:
            S.tab_label[k] = new
        stats[outcome + LABEL_ACCEPTED] += 1
        pos += 1
    return pos
