"""Seating an online model's draws as an MCMC chain's first analyses: the kernels of the warm
start (docs/algorithms.md 3.11; the driver is `spacy_ag.runs.warm_start`).

Each sentence's first analysis is one tree drawn from the online model's G',
and the chain's tables are opened so that every grammaton entry the draws
reuse becomes one table whose customers are all its uses: the chain starts
from the online model's lexicon, with its counts, instead of one table per
adapted node.

A draw names grammaton entries of the online state (records `REC_CACHED`);
their derivations, nested entries included, are copied into the chain's pools.
"""
from __future__ import annotations

import numpy as np
from ..kernel_environment import kernel

from .analyses import add
from .borrowed import borrowed
from .chart import REC_CACHED, REC_RULE, REC_TERM, tables_need, trie_need
from .grammatons import yield_node
from .sampler import need_nodes
from .state import OPEN, RULE, TABLE, TERM, alloc_node, link_built_children, room_ok, yield_terms
from .variational import OK


@kernel(cache=True)
def _entry_node(G, So, Sc, k, entry_table, terms, work, top, pend, n_pend):
    """The chain's TABLE node for a use of online entry k; returns (node, top, n_pend).

    A customer of k's chain table if k has one; else a NEW node whose label is a
    copy of k's label, queued on `work` as (online node, chain node) pairs to copy
    their children, and remembered in `pend` so that `entry_table[k]` can name the
    table `add` opens for it.

    Shapes: entry_table (T of So,) int64, written; terms (at least the yield's length,) int32; work (rows, 2) and
    pend (rows, 2) int64, rows = need_nodes(G, n, max_unary) + 1 (`seat_draws`)."""
    X = G.adaptor_nt[So.tab_adaptor[k]]
    x = alloc_node(Sc, TABLE, X, -1)
    t = entry_table[k]
    if t >= 0 and Sc.tab_state[t] == OPEN:
        Sc.node_table[x] = t
        Sc.node_aux[x] = Sc.tab_yield[t]
        return x, top, n_pend
    n = yield_terms(So, So.tab_yield[k], terms)
    Sc.node_aux[x] = yield_node(Sc, terms, 0, n, G.n_term)
    src = So.tab_label[k]
    label = alloc_node(Sc, RULE, So.node_sym[src], So.node_rule[src])
    Sc.node_child[x] = label
    work[top, 0] = src
    work[top, 1] = label
    pend[n_pend, 0] = x
    pend[n_pend, 1] = k
    return x, top + 1, n_pend + 1


@kernel(cache=True)
def _copy_children(G, So, Sc, entry_table, terms, work, top, pend, n_pend):
    """Copy the queued (online node, chain node) pairs' subtrees; returns n_pend.

    Shapes: as `_entry_node`."""
    while top > 0:
        top -= 1
        src, dst = work[top, 0], work[top, 1]
        prev = -1
        c = So.node_child[src]
        while c >= 0:
            kind = So.node_kind[c]
            if kind == TERM:
                x = alloc_node(Sc, TERM, So.node_sym[c], -1)
            elif kind == RULE:
                x = alloc_node(Sc, RULE, So.node_sym[c], So.node_rule[c])
                work[top, 0] = c
                work[top, 1] = x
                top += 1
            else:
                x, top, n_pend = _entry_node(G, So, Sc, So.node_table[c], entry_table, terms, work, top, pend,
                                             n_pend)
            if prev < 0:
                Sc.node_child[dst] = x
            else:
                Sc.node_sib[prev] = x
            prev = x
            c = So.node_sib[c]
    return n_pend


@kernel(cache=True)
def _tree_from_records(G, So, Sc, rec, r0, r1, w, entry_table, terms, work, built, pend):
    """The chain-state tree of one drawn analysis (records r0:r1, as `materialize` reads them);
    returns (root, number of pending new tables in pend).

    Shapes: rec (records, REC_WIDTH) int32; w (n,) int32, the sentence; built (r1 - r0 + 1,) int64; the rest as
    `_entry_node`."""
    top = 0
    n_pend = 0
    for r in range(r1 - 1, r0 - 1, -1):
        kind = rec[r, 0]
        if kind == REC_TERM:
            x = alloc_node(Sc, TERM, rec[r, 2], -1)
        elif kind == REC_CACHED:
            x, n_work, n_pend = _entry_node(G, So, Sc, rec[r, 2], entry_table, terms, work, 0, pend, n_pend)
            n_pend = _copy_children(G, So, Sc, entry_table, terms, work, n_work, pend, n_pend)
        elif kind == REC_RULE:
            x = alloc_node(Sc, RULE, rec[r, 1], rec[r, 2])
            top = link_built_children(Sc, x, built, top, rec[r, 3])
        else:  # REC_NEW: a subtree the draw expanded from the base; its label is on top
            top -= 1
            x = alloc_node(Sc, TABLE, rec[r, 1], -1)
            Sc.node_child[x] = built[top]
            Sc.node_aux[x] = yield_node(Sc, w, rec[r, 4], rec[r, 5], G.n_term)
        built[top] = x
        top += 1
    return built[0], n_pend


@kernel(cache=True)
def seat_draws(G, So, Sc, words, sent_ptr, batch, rec, rec_ptr, samp_len, status, pos, collapsed, max_unary,
               entry_table):
    """Make the first draw of each sentence of batch[pos:] its analysis in the chain state Sc, and add it.

    So is the online state the draws name entries of; entry_table[k] is the chain table of online
    entry k (-1: none yet), updated as tables open. Returns the next position, pos unchanged when
    Sc needs growing, or -(d + 1) for a sentence d without a parse.

    Shapes: words (n_terminals,) int32, sent_ptr (n_sentences + 1,) int64, batch (B,) int64 sentence indices; rec,
    rec_ptr, samp_len, status as in `sharded_estep.Draws`; entry_table (T of So,) int64."""
    G, So, Sc = borrowed((G, So, Sc))
    stack = np.empty(2 * Sc.node_kind.shape[0] + 16, np.int32)
    while pos < batch.shape[0]:
        d = batch[pos]
        if status[pos] != OK:
            return -(d + 1)
        n = sent_ptr[d + 1] - sent_ptr[d]
        nodes = need_nodes(G, n, max_unary)
        if not room_ok(Sc, nodes, tables_need(G, n), trie_need(G, n)):
            return pos
        r0 = rec_ptr[pos]
        r1 = r0 + samp_len[pos, 0]
        terms = np.empty(n + 1, np.int32)
        work = np.empty((nodes + 1, 2), np.int64)
        built = np.empty(r1 - r0 + 1, np.int64)
        pend = np.empty((nodes + 1, 2), np.int64)
        root, n_pend = _tree_from_records(G, So, Sc, rec, r0, r1, words[sent_ptr[d]:sent_ptr[d + 1]], entry_table,
                                          terms, work, built, pend)
        Sc.sent_root[d] = root
        add(G, Sc, root, collapsed, stack)
        for i in range(n_pend):
            entry_table[pend[i, 1]] = Sc.node_table[pend[i, 0]]
        pos += 1
    return pos
