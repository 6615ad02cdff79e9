"""Inside chart, top-down sampling and Viterbi parsing (docs/algorithms.md 3.5, 3.6).

The inside chart is linear with one log scale per cell: every cell is divided
by the power of two just above its largest entry and that power's log is kept
in `scale`, so sentences of hundreds of characters never underflow while the
inner loops stay multiply-add, and combining two cells takes a table lookup
instead of an exp. Cache options (one per open table whose yield is the
span's string) are looked up through the yield trie.

Charts are banded (docs/algorithms.md 3.5, `compiled` on spans): chart[i, d]
is the span (i, i + d) for d <= width, and chart[i, width + 1] the span
(i, n) when that is longer, the only long spans a banded grammar can cover.
A full chart is the case width = n.

The chart arrays: `new_chart(G, n_max)` makes them for texts of up to n_max
terminals; width = chart_width(G, n_max), the band, or n_max for a full chart;
n_sym chart symbols. A chart of at most FULL_CHART_BYTES holds every row, and
row i of a text is stored at i. A larger one is filled and drawn in blocks of
B = chart_block(G, n_max) rows (docs/algorithms.md 3.5): its first V = B +
width + 1 rows are a window holding rows base .. base + V - 1 of the text (row
i at i - base), and after them come width + 1 saved rows per block but the last,
the rows right of each block, kept by `inside` for `_window_at`. rows =
chart_rows(G, n_max, B): n_max + 1 for a whole chart.

    field   shape                          dtype    meaning
    chart   (rows, width + 2, n_sym)       float64  inside weights: chart[i, d, X] of symbol X over the span from i
                                                    of length d <= width, chart[i, width + 1, X] over the suffix
                                                    from i when longer; the weight is the entry times exp(scale) of
                                                    its cell, 0 when X does not derive the span
    scale   (rows, width + 2)              float64  log scale of each cell, a whole multiple of ln 2; -inf: nothing
                                                    derives the span
    ynode   (V, width + 2)                 int32    trie node of the span's string (`span_yields`; `sample_tree`
                                                    adds the ones it creates), -1 if no table ever had that yield;
                                                    always -1 in the column width + 1
    window  (3,)                           int64    base, the text's row stored first; B, rows per block; V, the
                                                    window's rows
    vchart  (n_max + 1, width + 2, n_sym)  float64  the Viterbi chart (`new_viterbi_chart`, `viterbi_chart`): the
                                                    best log weight of each item, -inf for none; no scale; always
                                                    whole

Tree records (`sample_records`): a tree drawn without touching the state (the
variational E-step, re-derivation), as rows of rec, REC_WIDTH = 6 columns, in
preorder (a node, then its children's subtrees left to right; a REC_NEW record is
followed by its label, a REC_RULE record of the same span). A sentence's trees
follow each other; `materialize` builds them into pool nodes.

    field      shape       dtype  meaning
    rec[:, 0]  (records,)  int32  kind: REC_TERM 0, REC_RULE 1, REC_CACHED 2 (a reused table), REC_NEW 3 (an adapted
                                  node expanded from the base)
    rec[:, 1]  (records,)  int32  the node's nonterminal (a user symbol); -1 for REC_TERM
    rec[:, 2]  (records,)  int32  REC_TERM: terminal id; REC_RULE: rule id; REC_CACHED: table id; REC_NEW: -1
    rec[:, 3]  (records,)  int32  number of children: REC_RULE the rule's children (terminals included), REC_NEW 1
                                  (its label), else 0
    rec[:, 4]  (records,)  int32  start of the node's span (a terminal position in the sentence)
    rec[:, 5]  (records,)  int32  end of the span (exclusive)
"""
import math

import numpy as np
from ..kernel_environment import kernel

from .compiled import KIND_INTERMEDIATE, KIND_PSEUDO, NO_SPAN_LIMIT
from .rng import uniform
from .state import RULE, TABLE, TERM, alloc_node, trie_child, trie_insert
from .analyses import table_weight

NEG_INF = -np.inf
LN2 = math.log(2.0)
INV_LN2 = 1.0 / LN2
EMPTY = -(1 << 62)
# 2**-d for the split factors of the inside pass; past the end the factor is 0
POW2_NEG = np.ldexp(1.0, -np.arange(1100))
# records of a tree drawn without touching the state (the parallel variational E-step)
REC_TERM, REC_RULE, REC_CACHED, REC_NEW = 0, 1, 2, 3
REC_WIDTH = 6  # kind, symbol, value (terminal, rule or table), number of children, start, end
#: Largest chart kept whole; a text whose chart would be larger is filled and drawn in blocks.
FULL_CHART_BYTES = 64 << 20


@kernel(cache=True, inline="always")
def _exponent_sum(left, right):
    """The integer k with left + right = k ln 2, or EMPTY if either side is empty.

    Inside scales are whole multiples of ln 2, so combining two cells needs a
    table lookup instead of an exp.
    """
    if left == NEG_INF or right == NEG_INF:
        return EMPTY
    return np.int64(math.floor((left + right) * INV_LN2 + 0.5))


@kernel(cache=True, inline="always")
def _pow2(k):
    """2**k, from the table when k <= 0."""
    if k <= 0:
        return POW2_NEG[-k] if -k < POW2_NEG.shape[0] else 0.0
    return math.ldexp(1.0, k)


@kernel(cache=True)
def chart_width(G, n):
    """Band width of the chart of n terminals: the longest bounded span, or n for a full chart."""
    return min(n, G.band) if G.band > 0 else n


@kernel(cache=True)
def chart_block(G, n):
    """Rows per block of the chart of n terminals: all of them (a full chart) while it takes at most
    FULL_CHART_BYTES, else about sqrt(n (width + 1)), which makes the window and the saved
    boundaries about equally large (docs/algorithms.md 3.5)."""
    width = chart_width(G, n)
    if (n + 1) * (width + 2) * (G.n_sym + 2) * 8 <= FULL_CHART_BYTES:
        return max(n, 1)
    return max(width + 1, int(math.ceil(math.sqrt(n * (width + 1.0)))))


@kernel(cache=True)
def chart_rows(G, n, block):
    """Rows of the chart arrays for texts of up to n terminals in blocks of `block` rows: the window
    (a block and the width + 1 rows to its right), then width + 1 saved rows per block but the last."""
    width = chart_width(G, n)
    n_blocks = max(1, (n + block - 1) // block)
    return min(n + 1, block + width + 1) + (n_blocks - 1) * (width + 1)


@kernel(cache=True)
def new_chart(G, n):
    """(chart, scale, ynode, window) for texts of up to n terminals, in blocks of `chart_block` rows."""
    return new_chart_blocked(G, n, chart_block(G, n))


@kernel(cache=True)
def new_chart_blocked(G, n, block):
    """(chart, scale, ynode, window) for texts of up to n terminals in blocks of `block` rows (see the
    module docstring); the block size changes the memory, never a result.

    Shapes: returns chart (rows, width + 2, n_sym) float64 of zeros, scale (rows, width + 2) float64 of
    -inf, ynode (window rows, width + 2) int32 of -1 and window (3,) int64; rows = chart_rows(G, n, block),
    window rows = min(n + 1, block + width + 1); width = chart_width(G, n)."""
    width = chart_width(G, n)
    block = max(1, min(block, max(n, 1)))
    rows = chart_rows(G, n, block)
    window_rows = min(n + 1, block + width + 1)
    window = np.array([0, block, window_rows], np.int64)
    return (np.zeros((rows, width + 2, G.n_sym)), np.full((rows, width + 2), NEG_INF),
            np.full((window_rows, width + 2), -1, np.int32), window)


@kernel(cache=True)
def new_viterbi_chart(G, n):
    """(vchart, ynode) for the Viterbi pass over texts of up to n terminals, which needs no scale.

    Shapes: returns vchart (n + 1, width + 2, n_sym) float64 of zeros, ynode (n + 1, width + 2) int32 of -1."""
    width = chart_width(G, n)
    return np.zeros((n + 1, width + 2, G.n_sym)), np.full((n + 1, width + 2), -1, np.int32)


@kernel(cache=True)
def trie_need(G, n):
    """Most trie nodes one tree over n terminals can add: a new table adds at most one per terminal
    of its yield, and one terminal lies under at most G.adaptor_depth tables; nor more than one
    per span the band holds."""
    w = chart_width(G, n)
    return min(n * w - w * (w - 1) // 2, n * G.adaptor_depth) + 1


@kernel(cache=True)
def tables_need(G, n):
    """Most tables one tree over n terminals can open: one per adapted node, and one terminal lies
    under at most G.adaptor_depth of them."""
    return n * G.adaptor_depth + 1


@kernel(cache=True)
def records_room(G, n, rec, r0, r1):
    """(tables, trie nodes) that building the tree of records rec[r0:r1] over n terminals can add:
    a table per REC_NEW record (the only ones whose yields may be new) and a trie node per terminal
    under one, nor more than `trie_need`.

    Shapes: rec (records, REC_WIDTH) int32, tree records (module docstring)."""
    tables, terminals = 0, 0
    for r in range(r0, r1):
        if rec[r, 0] == REC_NEW:
            tables += 1
            terminals += rec[r, 5] - rec[r, 4]
    return tables, min(terminals + 1, trie_need(G, n))


@kernel(cache=True, inline="always")
def column(i, j, width):
    """Column of span (i, j): its length, or width + 1 for a suffix longer than the band."""
    d = j - i
    return d if d <= width else width + 1


@kernel(cache=True, inline="always")
def allowed(sym_span, sym_suffix, X, length, at_end):
    """Whether symbol X may cover a span of this length (at_end: the span ends the text).

    Takes the two arrays, not G: a helper called per cell with the whole grammar tuple is
    slow, since every call passes all of the tuple's arrays (docs/performance.md).

    Shapes: sym_span (n_sym,) int64, sym_suffix (n_sym,) int8 (`GrammarArrays`)."""
    return length <= sym_span[X] and (at_end or sym_suffix[X] == 0)


@kernel(cache=True, inline="always")
def mask_cell(cell, sym_span, suffix_syms, mask_span, length, at_end, zero):
    """Set to `zero` the symbols of a cell that may not cover its span; return whether the
    unary closure must check its parents too. Most cells need none of this (on Brent, none).

    Shapes: cell (n_sym,) float64, one cell of a chart or a Viterbi chart; sym_span (n_sym,) int64; suffix_syms
    (n_suffix,) int32."""
    masking = length > mask_span
    if masking:
        for x in range(cell.shape[0]):
            if length > sym_span[x]:
                cell[x] = zero
    if not at_end and suffix_syms.shape[0] > 0:
        masking = True
        for x in suffix_syms:
            cell[x] = zero
    return masking


@kernel(cache=True, inline="always")
def split_bounds(i, j, n, width, left_span, right_span):
    """First and last split s of span (i, j) whose parts (i, s) and (s, j) are stored and
    no longer than left_span and right_span."""
    hi = min(j - 1, i + min(left_span, width))
    right = right_span if j == n else min(right_span, width)
    lo = max(i + 1, j - right)
    return lo, hi


@kernel(cache=True)
def span_yields(S, words, n, n_term, ynode):
    """ynode[i, d] = trie node of words[i:i+d], or -1 if no table ever had that yield.

    Shapes: words (at least n,) int32 terminal ids, -1 for one the grammar does not know;
    ynode (n_max + 1, width + 2) int32."""
    for i in range(n):
        _row_yields(S, words, n, n_term, ynode, i, i)


@kernel(cache=True, inline="always")
def _row_yields(S, words, n, n_term, ynode, i, row):
    """ynode[row, d] = trie node of words[i:i+d] for the spans from i (see `span_yields`)."""
    width = ynode.shape[1] - 2
    node = 0
    for j in range(i + 1, min(n, i + width) + 1):
        if node >= 0:
            t = words[j - 1]
            node = trie_child(S, node, t, n_term) if t >= 0 else -1
        ynode[row, j - i] = node
    ynode[row, width + 1] = -1


@kernel(cache=True, inline="always")
def log_cache_weight(S, k, inv_temp, tab_lw):
    """Log weight of reusing table k: given in tab_lw (variational), else the tempered PY weight.

    The innermost loops of `inside_weighted` and `_choose` spell this out instead of calling
    it: there, a call taking the state would pass all of the state's arrays once per table,
    which costs more than the weight itself (docs/performance.md).

    Shapes: tab_lw (T,) float64 log weights per table, or (0,) for the MCMC weights."""
    if tab_lw.shape[0] > 0:
        return tab_lw[k]
    return inv_temp * math.log(table_weight(S, k))


@kernel(cache=True, inline="always")
def inside(G, S, words, n, rho, chart, scale, ynode, window, start, skip_ad, inv_temp):
    """Fill the chart for words[:n]; return log Z (-inf if unparseable).

    Shapes: words (at least n,) int32; rho (R,) float64 rule weights; chart, scale, ynode, window as in the
    module docstring, for texts of at least n terminals. start: the symbol to parse as; skip_ad: an adaptor
    whose tables are left out (-1: none); inv_temp: the inverse temperature of the tables' weights."""
    return inside_weighted(G, S, words, n, rho, chart, scale, ynode, window, start, skip_ad, inv_temp,
                           np.empty(0))


@kernel(cache=True)
def inside_weighted(G, S, words, n, rho, chart, scale, ynode, window, start, skip_ad, inv_temp, tab_lw):
    """`inside` with the cache weights given: tab_lw[k] is the log weight of table k
    (the variational engine's E log pi); an empty tab_lw means the MCMC weights.

    Blocks are filled from the last to the first; before each, the width + 1 rows right of it move
    from the window's top to its bottom and are saved for `_window_at` (none with one block).
    The window ends on block 0, where a draw starts.

    Shapes: as `inside`; tab_lw (T,) float64, or (0,)."""
    width = chart.shape[1] - 2
    block = window[1]
    n_blocks = max(1, (n + block - 1) // block)
    for blk in range(n_blocks - 1, -1, -1):
        lo = blk * block
        if blk < n_blocks - 1:
            _keep_boundary(chart, scale, window, block, width, blk, n - (lo + block))
        window[0] = lo
        _fill_rows(G, S, words, n, rho, chart, scale, ynode, lo, lo, min(n, lo + block), skip_ad, inv_temp, tab_lw)
    top = column(0, n, width)
    v = chart[0, top, start]
    if v <= 0.0:
        return NEG_INF
    return math.log(v) + scale[0, top]


@kernel(cache=True)
def _keep_boundary(chart, scale, window, block, width, blk, n_right):
    """Before block blk is filled: move the first rows of the block right of it (at the window's
    top) below the block's rows, and save them in slot blk of the saved rows.

    n_right: the rows from the block's end to the end of the text."""
    keep = min(width + 1, n_right)
    saved = window[2] + blk * (width + 1)
    for r in range(keep - 1, -1, -1):  # downwards: the two ranges overlap when block < width + 1
        chart[block + r] = chart[r]
        scale[block + r] = scale[r]
        chart[saved + r] = chart[r]
        scale[saved + r] = scale[r]


@kernel(cache=True)
def _window_at(G, S, words, n, rho, chart, scale, ynode, window, i, skip_ad, inv_temp, tab_lw):
    """Make the window, whose block does not hold row i, hold rows i .. i + width (what a draw of an
    item starting at i reads):
    refill the block of row i from the rows saved right of it. The refilled cells equal the inside
    pass's, since a draw changes no count the pass read (trie nodes it adds have no table yet)."""
    block = window[1]
    width = chart.shape[1] - 2
    blk = i // block
    lo = blk * block
    keep = min(width + 1, n - (lo + block))
    saved = window[2] + blk * (width + 1)
    for r in range(keep):
        chart[block + r] = chart[saved + r]
        scale[block + r] = scale[saved + r]
    window[0] = lo
    _fill_rows(G, S, words, n, rho, chart, scale, ynode, lo, lo, min(n, lo + block), skip_ad, inv_temp, tab_lw)


@kernel(cache=True)
def _fill_rows(G, S, words, n, rho, chart, scale, ynode, base, lo, hi, skip_ad, inv_temp, tab_lw):
    """Fill the cells of rows hi - 1 down to lo, each row's spans shortest first (what a cell reads,
    its row's shorter spans and the rows right of it, is then done). Row i is stored at i - base.

    Shapes: as `inside_weighted`; rows lo - base .. min(n, hi + width) - base of the window."""
    n_sym = G.n_sym
    n_bin = G.bin_parent.shape[0]
    n_ad = G.adaptor_nt.shape[0]
    sym_span, sym_suffix = G.sym_span, G.sym_suffix
    width = chart.shape[1] - 2
    cache = np.zeros(n_ad)
    n_tables = np.zeros(n_ad, np.int64)
    given = tab_lw.shape[0] > 0
    k_split = np.empty(width + 2, np.int64)
    for i in range(hi - 1, lo - 1, -1):
        ri = i - base
        _row_yields(S, words, n, G.n_term, ynode, i, ri)
        last = n - i if n - i <= width else width + 1
        for d in range(1, last + 1):
            j = i + d if d <= width else n
            length = j - i
            c = d
            at_end = j == n
            cell = chart[ri, c]
            for x in range(n_sym):
                cell[x] = 0.0
            # the cell holds its values divided by 2**kc; EMPTY: nothing derives this span
            kc = EMPTY
            if length == 1:
                t = words[i]
                if t >= 0:
                    for q in range(G.lex_ptr[t], G.lex_ptr[t + 1]):
                        r = G.lex_rule[q]
                        cell[G.lex_parent[q]] += 1.0 if r < 0 else rho[r]
                    kc = 0
            else:
                if at_end:
                    lo_s, hi_s = split_bounds(i, j, n, width, G.left_span, NO_SPAN_LIMIT)
                else:
                    lo_s, hi_s = split_bounds(i, j, n, width, G.inner_left_span, G.inner_right_span)
                for s in range(lo_s, hi_s + 1):
                    k = _exponent_sum(scale[ri, s - i], scale[s - base, column(s, j, width)])
                    k_split[s - i] = k
                    if k > kc:
                        kc = k
                if kc > EMPTY:
                    for s in range(lo_s, hi_s + 1):
                        dk = kc - k_split[s - i]
                        if dk >= POW2_NEG.shape[0]:
                            continue
                        fct = POW2_NEG[dk]
                        left = chart[ri, s - i]
                        right = chart[s - base, column(s, j, width)]
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
            y = ynode[ri, c]
            if y >= 0 and S.trie_head[y] >= 0:
                cache[:] = 0.0
                k = S.trie_head[y]
                if given or inv_temp != 1.0:
                    while k >= 0:
                        ad = S.tab_adaptor[k]
                        if ad != skip_ad:
                            if given:
                                cache[ad] += math.exp(tab_lw[k])
                            else:
                                cache[ad] += table_weight(S, k) ** inv_temp
                        k = S.tab_next[k]
                else:
                    # sum_k (n_k - a) / (n + b) over the span's tables, one division per adaptor
                    n_tables[:] = 0
                    while k >= 0:
                        ad = S.tab_adaptor[k]
                        cache[ad] += S.tab_count[k]
                        n_tables[ad] += 1
                        k = S.tab_next[k]
                    for ad in range(n_ad):
                        if n_tables[ad] > 0 and ad != skip_ad:
                            cache[ad] = ((cache[ad] - n_tables[ad] * S.ad_a[ad])
                                         / (S.ad_n[ad] + S.ad_b[ad]))
                        else:
                            cache[ad] = 0.0
                cmax = cache.max()
                if cmax > 0.0:
                    bmax = cell.max()
                    kn = math.frexp(cmax)[1]
                    if bmax > 0.0:
                        kn = max(kn, kc + math.frexp(bmax)[1])
                        f = math.ldexp(1.0, kc - kn)
                        for x in range(n_sym):
                            cell[x] *= f
                    for ad in range(n_ad):
                        if cache[ad] > 0.0:
                            cell[G.adaptor_nt[ad]] += math.ldexp(cache[ad], -kn)
                    kc = kn
            masking = mask_cell(cell, sym_span, G.suffix_syms, G.mask_span, length, at_end, 0.0)
            # unary closure, children first
            for q in range(G.un_parent.shape[0]):
                v = cell[G.un_child[q]]
                if v != 0.0 and (not masking
                                 or allowed(sym_span, sym_suffix, G.un_parent[q], length, at_end)):
                    cell[G.un_parent[q]] += rho[G.un_rule[q]] * v
            m = 0.0
            for x in range(n_sym):
                if cell[x] > m:
                    m = cell[x]
            if m > 0.0 and kc > EMPTY:
                e = math.frexp(m)[1]
                f = math.ldexp(1.0, -e)
                for x in range(n_sym):
                    cell[x] *= f
                scale[ri, c] = (kc + e) * LN2
            else:
                for x in range(n_sym):
                    cell[x] = 0.0
                scale[ri, c] = NEG_INF


@kernel(cache=True, inline="always")
def _choose(G, S, words, n, rho, chart, scale, ynode, base, X, i, j, cache_on, inv_temp, tab_lw, rng):
    """Draw how item (X, i, j) is built: (choice, index, split) with choice 0 = table
    `index`, 1 = unary chart rule, 2 = lexical chart rule, 3 = binary chart rule split at `split`.

    Shapes: as `inside_weighted`; rng (4,) uint64, the random stream. Row i is stored at i - base."""
    width = chart.shape[1] - 2
    c = column(i, j, width)
    ri = i - base
    sc = scale[ri, c]
    u = uniform(rng) * chart[ri, c, X]
    ad = G.sym_adaptor[X]
    last_choice, last_q, last_s = -1, -1, -1
    if cache_on:
        y = ynode[ri, c]
        if y >= 0:
            # untempered MCMC weights without a log and exp per table, unless exp(-sc) overflows
            fast = tab_lw.shape[0] == 0 and inv_temp == 1.0 and sc > -700.0
            a = S.ad_a[ad]
            per_customer = math.exp(-sc) / (S.ad_n[ad] + S.ad_b[ad]) if fast else 0.0
            k = S.trie_head[y]
            while k >= 0:
                if S.tab_adaptor[k] == ad:
                    if tab_lw.shape[0] > 0:
                        w = math.exp(tab_lw[k] - sc)
                    elif fast:
                        w = (S.tab_count[k] - a) * per_customer
                    else:
                        w = math.exp(inv_temp * math.log(table_weight(S, k)) - sc)
                    if w > 0.0:
                        last_choice, last_q = 0, k
                        u -= w
                        if u <= 0.0:
                            return 0, k, -1
                k = S.tab_next[k]
    for p in range(G.un_ptr[X], G.un_ptr[X + 1]):
        q = G.un_by_parent[p]
        w = rho[G.un_rule[q]] * chart[ri, c, G.un_child[q]]
        if w > 0.0:
            last_choice, last_q = 1, q
            u -= w
            if u <= 0.0:
                return 1, q, -1
    if j - i == 1:
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
                    return 2, q, -1
    kc = _exponent_sum(sc, 0.0)
    for q in range(G.bin_ptr[X], G.bin_ptr[X + 1]):
        r = G.bin_rule[q]
        rw = 1.0 if r < 0 else rho[r]
        L = G.bin_left[q]
        R = G.bin_right[q]
        lo, hi = split_bounds(i, j, n, width, G.sym_span[L], G.sym_span[R])
        for s in range(lo, hi + 1):
            cr = column(s, j, width)
            lv = chart[ri, s - i, L]
            rv = chart[s - base, cr, R]
            if lv == 0.0 or rv == 0.0:
                continue
            w = rw * lv * rv * _pow2(_exponent_sum(scale[ri, s - i], scale[s - base, cr]) - kc)
            last_choice, last_q, last_s = 3, q, s
            u -= w
            if u <= 0.0:
                return 3, q, s
    # rounding: take the last option with positive weight
    return last_choice, last_q, last_s


@kernel(cache=True)
def _chosen_rule(G, choice, q):
    """The rule id of chart rule q of the kind `choice` (1 unary, 2 lexical, 3 binary): -1 for the rule of a
    pseudo or an intermediate symbol."""
    if choice == 1:
        return G.un_rule[q]
    if choice == 2:
        return G.lex_rule[q]
    return G.bin_rule[q]


@kernel(cache=True, inline="always")
def _child_spans(G, words, chart, scale, base, i, j, choice, q, s, buf, rng):
    """Children of a chosen chart rule as buf[:nb] = (symbol, start, end), rightmost first.

    Intermediate symbols of binarization are expanded here (their splits drawn
    from the chart), so only user symbols, pseudo-terminals and terminals
    (symbol -1 - t) come out.

    Shapes: words (at least j,) int32; chart, scale as in the module docstring; buf (at least j - i + 3, 3) int32
    or int64; rng (4,) uint64. Row i is stored at i - base."""
    if choice == 1:
        buf[0, 0] = G.un_child[q]
        buf[0, 1] = i
        buf[0, 2] = j
        return 1
    if choice == 2:
        buf[0, 0] = -1 - words[i]
        buf[0, 1] = i
        buf[0, 2] = j
        return 1
    buf[0, 0] = G.bin_right[q]
    buf[0, 1] = s
    buf[0, 2] = j
    nb = 1
    cur = G.bin_left[q]
    end = s
    while G.sym_kind[cur] == KIND_INTERMEDIATE:
        # an intermediate is a left child, so its span (i, end) and its parts lie in the band
        q2 = G.sym_bin[cur]
        L2 = G.bin_left[q2]
        R2 = G.bin_right[q2]
        ri = i - base
        u2 = uniform(rng) * chart[ri, end - i, cur]
        k_end = _exponent_sum(scale[ri, end - i], 0.0)
        s2 = -1
        last2 = -1
        lo = max(i + 1, end - G.sym_span[R2])
        for s3 in range(lo, min(end - 1, i + G.sym_span[L2]) + 1):
            lv = chart[ri, s3 - i, L2]
            rv = chart[s3 - base, end - s3, R2]
            if lv == 0.0 or rv == 0.0:
                continue
            last2 = s3
            u2 -= lv * rv * _pow2(_exponent_sum(scale[ri, s3 - i], scale[s3 - base, end - s3]) - k_end)
            if u2 <= 0.0:
                s2 = s3
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
    return nb + 1


@kernel(cache=True, inline="always")
def sample_tree(G, S, words, n, rho, chart, scale, ynode, window, start, skip_ad, inv_temp, rng, tasks, buf):
    """Draw one analysis from the chart; return (root node, log r of the draw).

    Adapted nodes expanded from the base become TABLE nodes with table -1
    (NEW) whose child is the label; `add` turns them into tables.

    Shapes: as `inside`; rng (4,) uint64; tasks (at least need_nodes(G, n, max_unary) + 8, 4) int32, the stack
    of (pool node, symbol, start, end) to expand; buf (at least n + 3, 3) int32 (`Workspace`)."""
    return sample_tree_weighted(G, S, words, n, rho, chart, scale, ynode, window, start, skip_ad, inv_temp,
                                np.empty(0), rng, tasks, buf)


@kernel(cache=True)
def sample_tree_weighted(G, S, words, n, rho, chart, scale, ynode, window, start, skip_ad, inv_temp, tab_lw,
                         rng, tasks, buf):
    """`sample_tree` with given cache weights (see `inside_weighted`).

    Items are drawn in preorder, leftmost child first, so their starts never decrease and the
    window moves right only (`_window_at`).

    Shapes: as `sample_tree`; tab_lw (T,) float64, or (0,)."""
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
        ad = G.sym_adaptor[X]
        cache_on = ad >= 0 and ad != skip_ad
        if not window[0] <= i < window[0] + window[1]:  # tested here: a call passes the whole grammar and state
            _window_at(G, S, words, n, rho, chart, scale, ynode, window, i, skip_ad, inv_temp, tab_lw)
        base = window[0]
        choice, c_q, c_s = _choose(G, S, words, n, rho, chart, scale, ynode, base, X, i, j, cache_on, inv_temp,
                                   tab_lw, rng)
        if choice == 0:
            S.node_kind[x] = TABLE
            S.node_table[x] = c_q
            S.node_aux[x] = ynode[i - base, j - i]  # a cached span is bounded, so in the band
            logr += log_cache_weight(S, c_q, inv_temp, tab_lw)
            continue
        r = _chosen_rule(G, choice, c_q)
        logr += math.log(rho[r])
        owner = x
        if cache_on:  # a new table: x is its TABLE node, the label hangs below it
            y = ynode[i - base, j - i]
            if y < 0:
                y = 0
                for p in range(i, j):
                    y = trie_insert(S, y, words[p], n_term)
                    ynode[i - base, p + 1 - i] = y
            S.node_kind[x] = TABLE
            S.node_aux[x] = y
            owner = alloc_node(S, RULE, X, r)
            S.node_child[x] = owner
        else:
            S.node_rule[x] = r
        nb = _child_spans(G, words, chart, scale, base, i, j, choice, c_q, c_s, buf, rng)
        # children, left to right, collected right to left into buf
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



@kernel(cache=True)
def sample_records(G, S, words, n, rho, chart, scale, ynode, window, start, skip_ad, tab_lw, rng, tasks, buf,
                   rec, r0, r_end):
    """Draw one tree as preorder records rec[r0:]; return (records written, log weight).

    Reads the state only, so many sentences can be sampled in parallel. A
    base-expanded adapted node is a REC_NEW record followed by its label (a
    REC_RULE record of the same span). Returns -1 records if rec[r0:r_end]
    is too small.

    Shapes: as `inside_weighted`; rng (4,) uint64; tasks (at least r_end - r0 + 8, 3) int64, the stack of
    (symbol, start, end) to expand; buf (n + 3, 3) int64; rec (records, REC_WIDTH) int32, tree records (module
    docstring). Returns (int, float64)."""
    logr = 0.0
    tasks[0, 0] = start
    tasks[0, 1] = 0
    tasks[0, 2] = n
    n_tasks = 1
    r = r0
    while n_tasks > 0:
        n_tasks -= 1
        X = tasks[n_tasks, 0]
        i = tasks[n_tasks, 1]
        j = tasks[n_tasks, 2]
        if r + 2 > r_end:
            return -1, logr
        if X < 0 or G.sym_kind[X] == KIND_PSEUDO:
            rec[r, 0] = REC_TERM
            rec[r, 1] = -1
            rec[r, 2] = -1 - X if X < 0 else G.pseudo_term[X]
            rec[r, 3] = 0
            rec[r, 4] = i
            rec[r, 5] = j
            r += 1
            continue
        ad = G.sym_adaptor[X]
        cache_on = ad >= 0 and ad != skip_ad
        if not window[0] <= i < window[0] + window[1]:
            _window_at(G, S, words, n, rho, chart, scale, ynode, window, i, skip_ad, 1.0, tab_lw)
        base = window[0]
        choice, c_q, c_s = _choose(G, S, words, n, rho, chart, scale, ynode, base, X, i, j, cache_on, 1.0,
                                   tab_lw, rng)
        rec[r, 1] = X
        rec[r, 4] = i
        rec[r, 5] = j
        if choice == 0:
            rec[r, 0] = REC_CACHED
            rec[r, 2] = c_q
            rec[r, 3] = 0
            logr += tab_lw[c_q]
            r += 1
            continue
        rule = _chosen_rule(G, choice, c_q)
        logr += math.log(rho[rule])
        if cache_on:
            rec[r, 0] = REC_NEW
            rec[r, 2] = -1
            rec[r, 3] = 1
            r += 1
            rec[r, 1] = X
            rec[r, 4] = i
            rec[r, 5] = j
        nb = _child_spans(G, words, chart, scale, base, i, j, choice, c_q, c_s, buf, rng)
        rec[r, 0] = REC_RULE
        rec[r, 2] = rule
        rec[r, 3] = nb
        r += 1
        for b in range(nb):  # rightmost first, so the leftmost is expanded next
            tasks[n_tasks, 0] = buf[b, 0]
            tasks[n_tasks, 1] = buf[b, 1]
            tasks[n_tasks, 2] = buf[b, 2]
            n_tasks += 1
    return r - r0, logr
