"""Inside chart, top-down sampling and Viterbi parsing (ALGORITHMS.md 3.5, 3.6).

The inside chart is linear with one log scale per cell: every cell is divided
by its largest entry and that entry's log is kept in `scale`, so sentences of
hundreds of characters never underflow while the inner loops stay
multiply-add. Cache options (one per open table whose yield is the span's
string) are looked up through the yield trie.
"""
import math

import numpy as np
from numba import njit

from .compiled import KIND_INTERMEDIATE, KIND_PSEUDO
from .rng import uniform
from .state import RULE, TABLE, TERM, alloc_node, trie_child, trie_insert
from .analyses import table_weight

NEG_INF = -np.inf


@njit(cache=True)
def span_yields(S, words, n, n_term, ynode):
    """ynode[i, j] = trie node of words[i:j], or -1 if no table ever had that yield."""
    for i in range(n):
        node = 0
        for j in range(i + 1, n + 1):
            if node >= 0:
                t = words[j - 1]
                node = trie_child(S, node, t, n_term) if t >= 0 else -1
            ynode[i, j] = node


@njit(cache=True)
def inside(G, S, words, n, rho, chart, scale, ynode, start, skip_ad, inv_temp):
    """Fill the chart for words[:n]; return log Z (-inf if unparseable)."""
    n_sym = G.n_sym
    n_bin = G.bin_parent.shape[0]
    n_ad = G.adaptor_nt.shape[0]
    cache = np.zeros(n_ad)
    span_yields(S, words, n, G.n_term, ynode)
    for length in range(1, n + 1):
        for i in range(0, n - length + 1):
            j = i + length
            cell = chart[i, j]
            cell[:] = 0.0
            cs = NEG_INF
            if length == 1:
                t = words[i]
                if t >= 0:
                    for q in range(G.lex_ptr[t], G.lex_ptr[t + 1]):
                        r = G.lex_rule[q]
                        cell[G.lex_parent[q]] += 1.0 if r < 0 else rho[r]
                    cs = 0.0
            else:
                for s in range(i + 1, j):
                    c = scale[i, s] + scale[s, j]
                    if c > cs:
                        cs = c
                if cs > NEG_INF:
                    for s in range(i + 1, j):
                        c = scale[i, s] + scale[s, j]
                        if c == NEG_INF:
                            continue
                        fct = math.exp(c - cs)
                        left = chart[i, s]
                        right = chart[s, j]
                        for q in range(n_bin):
                            lv = left[G.bin_left[q]]
                            if lv == 0.0:
                                continue
                            rv = right[G.bin_right[q]]
                            if rv == 0.0:
                                continue
                            r = G.bin_rule[q]
                            w = 1.0 if r < 0 else rho[r]
                            cell[G.bin_parent[q]] += w * lv * rv * fct
            # cached subtrees of this span
            y = ynode[i, j]
            if y >= 0 and S.trie_head[y] >= 0:
                cache[:] = 0.0
                k = S.trie_head[y]
                while k >= 0:
                    ad = S.tab_adaptor[k]
                    if ad != skip_ad:
                        cache[ad] += math.exp(inv_temp * math.log(table_weight(S, k)))
                    k = S.tab_next[k]
                cmax = cache.max()
                if cmax > 0.0:
                    bmax = cell.max()
                    lb = cs + math.log(bmax) if bmax > 0.0 else NEG_INF
                    ns = max(lb, math.log(cmax))
                    if bmax > 0.0:
                        cell *= math.exp(cs - ns)
                    for ad in range(n_ad):
                        if cache[ad] > 0.0:
                            cell[G.adaptor_nt[ad]] += cache[ad] * math.exp(-ns)
                    cs = ns
            # unary closure, children first
            for q in range(G.un_parent.shape[0]):
                v = cell[G.un_child[q]]
                if v != 0.0:
                    cell[G.un_parent[q]] += rho[G.un_rule[q]] * v
            m = 0.0
            for x in range(n_sym):
                if cell[x] > m:
                    m = cell[x]
            if m > 0.0 and cs > NEG_INF:
                cell /= m
                scale[i, j] = cs + math.log(m)
            else:
                cell[:] = 0.0
                scale[i, j] = NEG_INF
    v = chart[0, n, start]
    if v <= 0.0:
        return NEG_INF
    return math.log(v) + scale[0, n]


@njit(cache=True)
def _new_child(S, sym, G, words, pos, tasks, n_tasks):
    """A node for child `sym` at words[pos:...]: TERM at once, or queued for expansion."""
    if G.sym_kind[sym] == KIND_PSEUDO:
        return alloc_node(S, TERM, G.pseudo_term[sym], -1), n_tasks
    x = alloc_node(S, RULE, sym, -1)
    return x, n_tasks


@njit(cache=True)
def sample_tree(G, S, words, n, rho, chart, scale, ynode, start, skip_ad, inv_temp, rng, tasks, buf):
    """Draw one analysis from the chart; return (root node, log r of the draw).

    Adapted nodes expanded from the base become TABLE nodes with table -1
    (NEW) whose child is the label; `add` turns them into tables.
    """
    n_term = G.n_term
    logr = 0.0
    root = alloc_node(S, RULE, start, -1)
    tasks[0, 0] = root
    tasks[0, 1] = start
    tasks[0, 2] = 0
    tasks[0, 3] = n
    n_tasks = 1
    while n_tasks > 0:
        n_tasks -= 1
        x = tasks[n_tasks, 0]
        X = tasks[n_tasks, 1]
        i = tasks[n_tasks, 2]
        j = tasks[n_tasks, 3]
        sc = scale[i, j]
        total = chart[i, j, X]
        u = uniform(rng) * total
        ad = G.sym_adaptor[X]
        cache_on = ad >= 0 and ad != skip_ad
        choice = -1  # 0 table, 1 unary, 2 lexical, 3 binary
        c_q = -1
        c_s = -1
        last_choice = -1
        last_q = -1
        last_s = -1
        # 1. cached tables
        if cache_on:
            y = ynode[i, j]
            if y >= 0:
                k = S.trie_head[y]
                while k >= 0:
                    if S.tab_adaptor[k] == ad:
                        w = math.exp(inv_temp * math.log(table_weight(S, k)) - sc)
                        if w > 0.0:
                            last_choice, last_q = 0, k
                            u -= w
                            if u <= 0.0:
                                choice, c_q = 0, k
                                break
                    k = S.tab_next[k]
        # 2. unary rules
        if choice < 0:
            for p in range(G.un_ptr[X], G.un_ptr[X + 1]):
                q = G.un_by_parent[p]
                w = rho[G.un_rule[q]] * chart[i, j, G.un_child[q]]
                if w > 0.0:
                    last_choice, last_q = 1, q
                    u -= w
                    if u <= 0.0:
                        choice, c_q = 1, q
                        break
        # 3. lexical rules
        if choice < 0 and j - i == 1:
            t = words[i]
            for q in range(G.lex_ptr[t], G.lex_ptr[t + 1]):
                if G.lex_parent[q] != X:
                    continue
                r = G.lex_rule[q]
                w = (1.0 if r < 0 else rho[r]) * math.exp(-sc)
                if w > 0.0:
                    last_choice, last_q = 2, q
                    u -= w
                    if u <= 0.0:
                        choice, c_q = 2, q
                        break
        # 4. binary rules and split points
        if choice < 0:
            for q in range(G.bin_ptr[X], G.bin_ptr[X + 1]):
                r = G.bin_rule[q]
                rw = 1.0 if r < 0 else rho[r]
                L = G.bin_left[q]
                R = G.bin_right[q]
                for s in range(i + 1, j):
                    lv = chart[i, s, L]
                    rv = chart[s, j, R]
                    if lv == 0.0 or rv == 0.0:
                        continue
                    w = rw * lv * rv * math.exp(scale[i, s] + scale[s, j] - sc)
                    last_choice, last_q, last_s = 3, q, s
                    u -= w
                    if u <= 0.0:
                        choice, c_q, c_s = 3, q, s
                        break
                if choice >= 0:
                    break
        if choice < 0:  # rounding: take the last option with positive weight
            choice, c_q, c_s = last_choice, last_q, last_s
        if choice == 0:
            S.node_kind[x] = TABLE
            S.node_table[x] = c_q
            S.node_aux[x] = ynode[i, j]
            logr += inv_temp * math.log(table_weight(S, c_q))
            continue
        if choice == 1:
            r = G.un_rule[c_q]
        elif choice == 2:
            r = G.lex_rule[c_q]
        else:
            r = G.bin_rule[c_q]
        logr += math.log(rho[r])
        owner = x
        if cache_on:  # a new table: x is its TABLE node, the label hangs below it
            y = ynode[i, j]
            if y < 0:
                y = 0
                for p in range(i, j):
                    y = trie_insert(S, y, words[p], n_term)
                    ynode[i, p + 1] = y
            S.node_kind[x] = TABLE
            S.node_aux[x] = y
            owner = alloc_node(S, RULE, X, r)
            S.node_child[x] = owner
        else:
            S.node_rule[x] = r
        # children, left to right, collected right to left into buf
        nb = 0
        if choice == 1:
            buf[0, 0] = G.un_child[c_q]
            buf[0, 1] = i
            buf[0, 2] = j
            nb = 1
        elif choice == 2:
            buf[0, 0] = -1 - words[i]
            buf[0, 1] = i
            buf[0, 2] = j
            nb = 1
        else:
            buf[0, 0] = G.bin_right[c_q]
            buf[0, 1] = c_s
            buf[0, 2] = j
            nb = 1
            cur = G.bin_left[c_q]
            end = c_s
            while G.sym_kind[cur] == KIND_INTERMEDIATE:
                q2 = G.sym_bin[cur]
                L2 = G.bin_left[q2]
                R2 = G.bin_right[q2]
                u2 = uniform(rng) * chart[i, end, cur]
                s2 = -1
                last2 = -1
                for s in range(i + 1, end):
                    lv = chart[i, s, L2]
                    rv = chart[s, end, R2]
                    if lv == 0.0 or rv == 0.0:
                        continue
                    last2 = s
                    u2 -= lv * rv * math.exp(scale[i, s] + scale[s, end] - scale[i, end])
                    if u2 <= 0.0:
                        s2 = s
                        break
                if s2 < 0:
                    s2 = last2
                buf[nb, 0] = R2
                buf[nb, 1] = s2
                buf[nb, 2] = end
                nb += 1
                cur = L2
                end = s2
            buf[nb, 0] = cur
            buf[nb, 1] = i
            buf[nb, 2] = end
            nb += 1
        prev = -1
        for b in range(nb - 1, -1, -1):
            sym = buf[b, 0]
            if sym < 0:
                c = alloc_node(S, TERM, -1 - sym, -1)
            elif G.sym_kind[sym] == KIND_PSEUDO:
                c = alloc_node(S, TERM, G.pseudo_term[sym], -1)
            else:
                c = alloc_node(S, RULE, sym, -1)
                tasks[n_tasks, 0] = c
                tasks[n_tasks, 1] = sym
                tasks[n_tasks, 2] = buf[b, 1]
                tasks[n_tasks, 3] = buf[b, 2]
                n_tasks += 1
            if prev < 0:
                S.node_child[owner] = c
            else:
                S.node_sib[prev] = c
            prev = c
    return root, logr
