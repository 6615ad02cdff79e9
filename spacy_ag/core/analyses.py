"""Adding, removing, scoring, comparing and freeing analyses (docs/algorithms.md 3.7-3.9).

All walks use explicit stacks. `add` and `remove` return the log of the exact
conditional probability of the analysis given the rest of the state; `log_r`
returns its log weight under the static approximating PCFG G' (3.8).

The functions a sweep calls once per sentence are inlined into their callers
(`inline="always"`): a real call passes the grammar and state tuples as some
sixty arrays, about 3.5 KB of arguments copied each time.
"""
import math

import numpy as np
from ..kernel_environment import kernel

from .state import (
    CLOSED, OPEN, RULE, TABLE, TERM,
    alloc_table, free_node, free_table, link_table, push_children, unlink_table,
)


@kernel(cache=True)
def theta_hat(G, S, r, collapsed):
    """Rule probability: collapsed Dirichlet predictive, or fixed (3.2)."""
    if collapsed:
        A = G.rule_parent[r]
        return (S.f[r] + G.rule_alpha[r]) / (S.fA[A] + G.nt_alpha_sum[A])
    return G.rule_theta[r]


@kernel(cache=True)
def new_table_weight(S, ad):
    """lambda_A: the probability of opening a new table."""
    return (S.ad_m[ad] * S.ad_a[ad] + S.ad_b[ad]) / (S.ad_n[ad] + S.ad_b[ad])


@kernel(cache=True)
def log_new_table(S, ad):
    """log lambda_A, the log probability of opening a new table of adaptor `ad` (`new_table_weight`)."""
    return math.log(new_table_weight(S, ad))


@kernel(cache=True)
def table_weight(S, k):
    """omega_{A,k}: the probability of joining table k."""
    ad = S.tab_adaptor[k]
    return (S.tab_count[k] - S.ad_a[ad]) / (S.ad_n[ad] + S.ad_b[ad])


@kernel(cache=True, inline="always")
def fill_rho(G, S, rho, collapsed, skip_ad, inv_temp):
    """theta' of every original rule under the current state (3.3), tempered.

    Rules of adapted parents carry lambda_A, except for the adaptor `skip_ad`,
    which table-label resampling treats as unadapted.

    Shapes: rho (R,) float64, written."""
    n_ad = S.ad_m.shape[0]
    lam = np.empty(n_ad)
    for ad in range(n_ad):
        lam[ad] = new_table_weight(S, ad)
    for r in range(rho.shape[0]):
        w = theta_hat(G, S, r, collapsed)
        ad = G.sym_adaptor[G.rule_parent[r]]
        if ad >= 0 and ad != skip_ad:
            w *= lam[ad]
        # called once per sentence: no log and exp unless tempered
        rho[r] = w if inv_temp == 1.0 else w ** inv_temp


@kernel(cache=True, inline="always")
def add(G, S, root, collapsed, stack):
    """Insert an analysis; NEW table nodes open tables, CLOSED ones reopen.

    Shapes: stack int32, room for the nodes of the walk (callers give 2 N + 16, or twice a tree's worst case)."""
    lp = 0.0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        x = stack[top]
        kind = S.node_kind[x]
        if kind == TERM:
            continue
        if kind == RULE:
            r = S.node_rule[x]
            lp += math.log(theta_hat(G, S, r, collapsed))
            S.f[r] += 1
            S.fA[G.rule_parent[r]] += 1
            top = push_children(S, x, stack, top)
            continue
        k = S.node_table[x]
        ad = G.sym_adaptor[S.node_sym[x]]
        if k >= 0 and S.tab_state[k] == OPEN:
            lp += math.log(table_weight(S, k))
            S.tab_count[k] += 1
            S.ad_n[ad] += 1
            continue
        if k < 0:  # a NEW node from a proposal: the label becomes the table's
            k = alloc_table(S)
            S.tab_adaptor[k] = ad
            S.tab_label[k] = S.node_child[x]
            S.tab_yield[k] = S.node_aux[x]
            S.node_child[x] = -1
            S.node_table[x] = k
        label = S.tab_label[k]
        r = S.node_rule[label]
        lp += log_new_table(S, ad) + math.log(theta_hat(G, S, r, collapsed))
        S.tab_state[k] = OPEN
        S.tab_count[k] = 1
        S.ad_m[ad] += 1
        S.ad_n[ad] += 1
        S.f[r] += 1
        S.fA[G.rule_parent[r]] += 1
        link_table(S, k)
        top = push_children(S, label, stack, top)
    return lp


@kernel(cache=True, inline="always")
def remove(G, S, root, collapsed, stack):
    """Take an analysis out; tables losing their last customer become CLOSED.

    Shapes: stack int32, as in `add`."""
    lp = 0.0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        x = stack[top]
        kind = S.node_kind[x]
        if kind == TERM:
            continue
        if kind == RULE:
            r = S.node_rule[x]
            S.f[r] -= 1
            S.fA[G.rule_parent[r]] -= 1
            lp += math.log(theta_hat(G, S, r, collapsed))
            top = push_children(S, x, stack, top)
            continue
        k = S.node_table[x]
        ad = S.tab_adaptor[k]
        S.tab_count[k] -= 1
        S.ad_n[ad] -= 1
        if S.tab_count[k] > 0:
            lp += math.log(table_weight(S, k))
            continue
        label = S.tab_label[k]
        r = S.node_rule[label]
        S.ad_m[ad] -= 1
        S.f[r] -= 1
        S.fA[G.rule_parent[r]] -= 1
        unlink_table(S, k)
        S.tab_state[k] = CLOSED
        lp += log_new_table(S, ad) + math.log(theta_hat(G, S, r, collapsed))
        top = push_children(S, label, stack, top)
    return lp


@kernel(cache=True, inline="always")
def log_r(G, S, root, rho, inv_temp, stack):
    """log weight of an analysis under G' of the current (static) state (3.8).

    A reference to a CLOSED table is scored as a new table, every time it
    occurs (the Join case of 3.8).

    Shapes: rho (R,) float64, theta' of every rule (`fill_rho`); stack int32, as in `add`."""
    lr = 0.0
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        x = stack[top]
        kind = S.node_kind[x]
        if kind == TERM:
            continue
        if kind == RULE:
            lr += math.log(rho[S.node_rule[x]])
            top = push_children(S, x, stack, top)
            continue
        k = S.node_table[x]
        if k >= 0 and S.tab_state[k] == OPEN:
            lr += inv_temp * math.log(table_weight(S, k))
            continue
        label = S.node_child[x] if k < 0 else S.tab_label[k]
        stack[top] = label
        top += 1
    return lr


#: How `equal_trees` compares TABLE nodes.
#: SAME_TABLES: the same table (two derivations of one grammaton entry, 4.9).
#: SAME_ANALYSIS: a proposal against the removed analysis (3.9): an existing table only itself, a NEW
#: node a CLOSED table with an equal label; a closed table matched twice means the old analysis shared
#: it, which no proposal can reproduce.
#: SAME_VALUE: as py-cfg compares trees (3.12): as many customers now (a NEW node and a CLOSED table
#: have none) and equal labels, so that another table of the same dish and count is no change.
SAME_TABLES, SAME_ANALYSIS, SAME_VALUE = 0, 1, 2


@kernel(cache=True, inline="always")
def _table_count_and_label(S, x):
    """A table node's customers now (0 for a NEW node or a CLOSED table) and its label."""
    k = S.node_table[x]
    if k < 0:
        return 0, S.node_child[x]
    return (S.tab_count[k] if S.tab_state[k] == OPEN else 0), S.tab_label[k]


@kernel(cache=True, inline="always")
def equal_trees(S, x, y, stack, marked, mode):
    """True if the trees under x and y are equal, TABLE nodes compared as `mode` says.

    `marked` holds the CLOSED tables SAME_ANALYSIS matched (their `tab_mark` is cleared on return);
    the other modes leave it alone.

    Shapes: stack int32, room for two nodes per node of the trees; marked (T + 1,) int32 for SAME_ANALYSIS, any
    int32 array (empty) for the other modes."""
    n_marked = 0
    equal = True
    stack[0] = x
    stack[1] = y
    top = 2
    while top > 0 and equal:
        top -= 2
        a, b = stack[top], stack[top + 1]
        kind = S.node_kind[a]
        if kind != S.node_kind[b]:
            equal = False
        elif kind == TERM:
            equal = S.node_sym[a] == S.node_sym[b]
        elif kind == RULE:
            if S.node_rule[a] != S.node_rule[b]:
                equal = False
            else:
                ca, cb = S.node_child[a], S.node_child[b]
                while ca >= 0 and cb >= 0:
                    stack[top] = ca
                    stack[top + 1] = cb
                    top += 2
                    ca, cb = S.node_sib[ca], S.node_sib[cb]
                equal = ca < 0 and cb < 0
        else:
            ka, kb = S.node_table[a], S.node_table[b]
            if ka == kb and (ka >= 0 or mode == SAME_TABLES):
                continue
            if mode == SAME_TABLES:
                equal = False
            elif mode == SAME_ANALYSIS:
                if ka >= 0 or S.tab_state[kb] != CLOSED or S.tab_mark[kb] != 0:
                    equal = False
                else:
                    S.tab_mark[kb] = 1
                    marked[n_marked] = kb
                    n_marked += 1
                    stack[top] = S.node_child[a]
                    stack[top + 1] = S.tab_label[kb]
                    top += 2
            else:
                na, la = _table_count_and_label(S, a)
                nb, lb = _table_count_and_label(S, b)
                if na != nb:
                    equal = False
                else:
                    stack[top] = la
                    stack[top + 1] = lb
                    top += 2
    for i in range(n_marked):
        S.tab_mark[marked[i]] = 0
    return equal


@kernel(cache=True, inline="always")
def free_tree(S, root, stack):
    """Return the nodes of a discarded analysis, and its CLOSED tables, to the pools.

    Shapes: stack int32, as in `add`."""
    stack[0] = root
    top = 1
    while top > 0:
        top -= 1
        x = stack[top]
        if S.node_kind[x] == TABLE:
            k = S.node_table[x]
            if k < 0:
                stack[top] = S.node_child[x]
                top += 1
            elif S.tab_state[k] == CLOSED:
                stack[top] = S.tab_label[k]
                top += 1
                free_table(S, k)
        else:
            top = push_children(S, x, stack, top)
        free_node(S, x)
