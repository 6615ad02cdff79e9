"""Kernels of the hybrid variational algorithm (docs/algorithms.md 4.3-4.9, 4.11, 4.15).

One minibatch is: `estep` (parallel: inside chart of every sentence under
G', S trees drawn into flat records, the state only read), `absorb`
(sequential: records become f, g and h counts; new subtrees join their
grammatons), `decay` (Eqs. 9-10) and `refresh_weights` (Eqs. 11-13 and 6-8:
the next G'); `minibatch` runs the four in one call, `minibatches` several
minibatches in a row. Every u minibatches
`prune` and re-derivation (`rederive_draws` in parallel, then
`rederive_apply`) refine the truncation. Batch variational
Bayes is the same code with one minibatch of the whole corpus and step size 1.
"""
import math

import numpy as np
from numba import prange

from ..kernel_environment import kernel

from .analyses import free_tree
from .borrowed import borrowed
from .chart import (
    REC_CACHED, REC_RULE, REC_TERM, inside_weighted, new_chart, records_room, sample_records, trie_need,
)
from .expectations import expected_log_theta, stick_terms
from .grammatons import (
    NEXT_RANK, adopt_subtree, count_label, count_productions, entries_by_rank, entries_of_all_adaptors,
    find_entry, merge_entries, new_table_node, remove_entry, same_derivation, with_new_entries, yield_node,
)
from .rng import seeded_rng, splitmix64, stream_seed, stream_seeds
from .sampler import need_nodes
from .state import (
    OPEN, RULE, TAB_FREE, TAB_HWM, TABLE, TERM, alloc_node, link_built_children, room_ok, tables_taken_since,
    yield_length, yield_terms,
)

NEG_INF = -np.inf
OK, UNPARSEABLE, OVERFLOW = 0, 1, 2


@kernel(cache=True)
def estep_sentence(G, S, V, words, sent_ptr, batch, seeds, rec, rec_ptr, samp_len, scores, status, b):
    """Parse sentence batch[b] under G' and draw samp_len.shape[1] trees (see `estep`).

    Shapes: as `estep`; b: the position in batch."""
    n_samples = samp_len.shape[1]
    d = batch[b]
    w = words[sent_ptr[d]:sent_ptr[d + 1]]
    n = w.shape[0]
    m = n + 1
    chart, scale, ynode, window = new_chart(G, n)
    logz = inside_weighted(G, S, w, n, V.rho, chart, scale, ynode, window, G.start, -1, 1.0, V.lw)
    if logz == NEG_INF:
        status[b] = UNPARSEABLE
        return
    status[b] = OK
    rng = seeded_rng(seeds[b])
    r0, r_end = rec_ptr[b], rec_ptr[b + 1]
    tasks = np.empty((r_end - r0 + 8, 3), np.int64)
    buf = np.empty((m + 2, 3), np.int64)
    for s in range(n_samples):
        count, lr = sample_records(G, S, w, n, V.rho, chart, scale, ynode, window, G.start, -1, V.lw, rng,
                                   tasks, buf, rec, r0, r_end)
        if count < 0:
            status[b] = OVERFLOW
            return
        samp_len[b, s] = count
        scores[b, s] = lr
        r0 += count


@kernel(cache=True)
def estep(G, S, V, words, sent_ptr, batch, seeds, rec, rec_ptr, samp_len, scores, status):
    """Parse every sentence of the batch under G' and draw samp_len.shape[1] trees each, in parallel.

    Sentence b's trees go to rec[rec_ptr[b]:rec_ptr[b+1]] (lengths in
    samp_len[b], log weights in scores[b]); status[b] says OK, UNPARSEABLE or
    OVERFLOW (records did not fit: the caller enlarges and repeats). Each
    sentence has its own random stream, so results do not depend on threads.
    Sentences go to the threads longest first; with numba's parallel chunk size
    at 1 (`sharded_estep.one_item_at_a_time`) each thread takes the next when done, so
    the long ones do not all land on one thread.

    Shapes: words (n_terminals,) int32; sent_ptr (n_sentences + 1,) int64; batch (B,) int64 sentence indices;
    seeds (B,) uint64; rec (records, REC_WIDTH) int32 (`chart` on tree records); rec_ptr (B + 1,) int64;
    samp_len (B, samples) int64, scores (B, samples) float64 and status (B,) int64, written (`Draws`)."""
    G, S, V = borrowed((G, S, V))
    longest_first = np.argsort(sent_ptr[batch] - sent_ptr[batch + 1], kind="mergesort")
    _estep_parallel(G, S, V, words, sent_ptr, batch, seeds, rec, rec_ptr, samp_len, scores, status, longest_first)


@kernel(cache=True)
def draw_records(G, S, V, words, sent_ptr, batch, seeds, samples, record_factor):
    """`estep` into records sized `record_factor` per terminal and tree, doubled until they fit
    (the size does not change the draws). Returns (rec, rec_ptr, samp_len, scores, status,
    the record factor that sufficed); callers run it inside `sharded_estep.one_item_at_a_time`.

    Shapes: words, sent_ptr, batch, seeds as in `estep`; returns the arrays of `sharded_estep.Draws`, then an int."""
    n = batch.shape[0]
    while True:
        rec_ptr = np.zeros(n + 1, np.int64)
        for b in range(n):
            rec_ptr[b + 1] = rec_ptr[b] + samples * (record_factor * (sent_ptr[batch[b] + 1] - sent_ptr[batch[b]]) + 16)
        rec = np.empty((rec_ptr[n], 6), np.int32)
        samp_len = np.zeros((n, samples), np.int64)
        scores = np.zeros((n, samples))
        status = np.zeros(n, np.int64)
        estep(G, S, V, words, sent_ptr, batch, seeds, rec, rec_ptr, samp_len, scores, status)
        if not (status == OVERFLOW).any():
            return rec, rec_ptr, samp_len, scores, status, record_factor
        record_factor *= 2


@kernel(cache=True)
def minibatch(G, S, V, words, sent_ptr, batch, stream_key, samples, record_factor, stack, built, need, eps, scale,
              corr, ordered, ptr):
    """One minibatch of Algorithm 2 in one call (without the refinement): `draw_records` with the
    sentences' seeds `stream_seeds(stream_key, len(batch))`, then `absorb` with weight 1 / samples,
    `decay` and `refresh_weights`. One call instead of four saves their dispatch and the Python
    between them, a large share of a small minibatch's time; the seeds and the log likelihood are
    made here for the same reason (docs/performance.md). `ordered`, `ptr`:
    the stick order of the entries before (as `entries_of_all_adaptors` gives it).

    Returns (pos, `batch_loglik`, the draws as `draw_records` gives them, the stick order after):
    pos is -1 - b if sentence batch[b] has no parse (nothing counted), else how far `absorb` got;
    below len(batch) the pools need growing (`need`), and the caller absorbs the rest, then
    decays and refreshes.

    Shapes: words, sent_ptr, batch as in `estep`; stream_key uint64; stack int32, room for a tree's walk; built
    int32, room for a tree's records; need (4,) int64; ordered (open entries,) int64 and ptr (A + 1,) int64."""
    seeds = stream_seeds(stream_key, batch.shape[0])
    rec, rec_ptr, samp_len, scores, status, record_factor = draw_records(
        G, S, V, words, sent_ptr, batch, seeds, samples, record_factor)
    for b in range(batch.shape[0]):
        if status[b] == UNPARSEABLE:
            return -1 - b, 0.0, rec, rec_ptr, samp_len, scores, status, record_factor, ordered, ptr
    first_rank, free_before, hwm_before = V.counters[NEXT_RANK], S.counters[TAB_FREE], S.counters[TAB_HWM]
    pos = absorb(G, S, V, words, sent_ptr, batch, rec, rec_ptr, samp_len, status, 1.0 / samples, 0, stack, built,
                 need)
    if pos == batch.shape[0]:
        decay(S, V, eps, scale)
        joined = tables_taken_since(S, free_before, hwm_before)  # absorbing only adds entries
        ordered, ptr = with_new_entries(S, V, ordered, ptr, first_rank, joined)
        refresh_weights_in_order(G, S, V, corr, ordered, ptr)
    return pos, batch_loglik(scores, status), rec, rec_ptr, samp_len, scores, status, record_factor, ordered, ptr


@kernel(cache=True)
def minibatches(G, S, V, words, sent_ptr, items, batch_ptr, seed_key, first_stream, samples, record_factor, stack,
                built, need, eps, scale, corr):
    """Consecutive minibatches in one call, minibatch j being items[batch_ptr[j]:batch_ptr[j+1]] done
    as `minibatch` does it with eps[j], scale[j], corr[j] and the stream key of E-step number
    first_stream + j under the learner's `seed_key` (`stream_seed`); at least one.

    Returns (done, pos, logliks, the draws and record factor as `minibatch` gives them): done is
    how many minibatches were finished whole; below their number, minibatch `done` stopped as
    `minibatch` stops (pos < 0: no parse; else the pools need growing) and the draws are its own.

    Shapes: words, sent_ptr as in `estep`; items (sentences of all the minibatches,) int64; batch_ptr
    (n_minibatches + 1,) int64; seed_key uint64; eps, scale, corr (n_minibatches,) float64; stack, built, need as
    in `minibatch`; returns logliks (n_minibatches,) float64 among the rest."""
    n = batch_ptr.shape[0] - 1
    logliks = np.zeros(n)
    ptr = np.empty(G.adaptor_nt.shape[0] + 1, np.int64)
    ordered = entries_of_all_adaptors(S, V, G.adaptor_nt.shape[0], ptr)  # then kept up to date
    j = 0
    while True:
        batch = items[batch_ptr[j]:batch_ptr[j + 1]]
        pos, logliks[j], rec, rec_ptr, samp_len, scores, status, record_factor, ordered, ptr = minibatch(
            G, S, V, words, sent_ptr, batch, stream_seed(seed_key, first_stream + j), samples, record_factor, stack,
            built, need, eps[j], scale[j], corr[j], ordered, ptr)
        if pos != batch.shape[0]:
            return j, pos, logliks, rec, rec_ptr, samp_len, scores, status, record_factor
        j += 1
        if j == n:
            return n, pos, logliks, rec, rec_ptr, samp_len, scores, status, record_factor


@kernel(cache=True)
def batch_loglik(scores, status):
    """A minibatch's log likelihood (4.15): per parsed sentence the best log weight among its
    drawn trees, summed in sentence order. scores: (sentences, samples); status: (sentences,)."""
    total = 0.0
    for b in range(status.shape[0]):
        if status[b] == OK:
            total += scores[b].max()
    return total


@kernel(cache=True, parallel=True)
def _estep_parallel(G, S, V, words, sent_ptr, batch, seeds, rec, rec_ptr, samp_len, scores, status, order):
    """`estep`'s parallel loop: sentence batch[order[i]] on whichever thread takes item i.

    Shapes: as `estep`; order (B,) int64, positions in batch, longest sentence first."""
    for i in prange(order.shape[0]):
        estep_sentence(G, S, V, words, sent_ptr, batch, seeds, rec, rec_ptr, samp_len, scores, status, order[i])


@kernel(cache=True)
def materialize(G, S, V, rec, r0, r1, words, weight, copies, stack, built):
    """Turn the records of one tree into pool nodes; return its root.

    Adds `weight` to g of every rule used and to f of every entry used (4.5),
    `copies` times over, as often as the tree was drawn: one addition per draw keeps
    the sums what counting each draw gives, bit for bit. Each base-expanded adapted
    subtree is resolved, children first, to an equal existing entry or a new one
    (its h counts go to f of that entry).

    Shapes: rec (records, REC_WIDTH) int32, the tree is rec[r0:r1]; words (the sentence or yield,) int32, which
    the records' spans index; stack int32, room for a label's walk; built int32, room for the tree's records."""
    top = 0
    for r in range(r1 - 1, r0 - 1, -1):
        kind = rec[r, 0]
        if kind == REC_TERM:
            x = alloc_node(S, TERM, rec[r, 2], -1)
        elif kind == REC_CACHED:
            k = rec[r, 2]
            x = new_table_node(S, rec[r, 1], k)
            _add(V.f_batch, k, weight, copies)
        elif kind == REC_RULE:
            rule = rec[r, 2]
            x = alloc_node(S, RULE, rec[r, 1], rule)
            _add(V.g_batch, rule, weight, copies)
            top = link_built_children(S, x, built, top, rec[r, 3])
        else:  # REC_NEW: its label is on top
            top -= 1
            y = yield_node(S, words, rec[r, 4], rec[r, 5], G.n_term)
            k = adopt_subtree(G, S, V, rec[r, 1], built[top], y, stack)
            _add(V.f_batch, k, weight, copies)
            x = new_table_node(S, rec[r, 1], k)
        built[top] = x
        top += 1
    return built[0]


@kernel(cache=True, inline="always")
def _add(counts, i, weight, copies):
    """counts[i] += weight, `copies` times: one addition per draw keeps the sums bit for bit those of counting each
    draw (see `materialize`).

    Shapes: counts (T,) or (R,) float64."""
    for _ in range(copies):
        counts[i] += weight


@kernel(cache=True)
def copies_of_samples(rec, r0, lengths, copies):
    """copies[s]: how many of the trees drawn for one sentence equal tree s, counted at the first
    of them (0 at the others). The trees' records start at rec[r0] and follow each other;
    lengths: (samples,). Most of the trees drawn for a short sentence are one tree.

    Shapes: rec (records, REC_WIDTH) int32; lengths (samples,) int64; copies (samples,) int64, written."""
    n = lengths.shape[0]
    start = np.empty(n, np.int64)
    at = r0
    for s in range(n):
        start[s] = at
        at += lengths[s]
        copies[s] = 1
        for t in range(s):
            if copies[t] > 0 and lengths[t] == lengths[s] and _same_records(rec, start[t], start[s], lengths[s]):
                copies[t] += 1
                copies[s] = 0
                break


@kernel(cache=True, inline="always")
def _same_records(rec, a, b, length):
    """Whether the records rec[a:a+length] and rec[b:b+length] are equal, column by column.

    Shapes: rec (records, REC_WIDTH) int32."""
    for i in range(length):
        for c in range(rec.shape[1]):
            if rec[a + i, c] != rec[b + i, c]:
                return False
    return True


@kernel(cache=True)
def absorb(G, S, V, words, sent_ptr, batch, rec, rec_ptr, samp_len, status, weight, pos, stack, built, need):
    """Count the sampled trees of batch[pos:]; return how far it got. Stopping early means the
    pools need growing: `need` then holds the (nodes, tables, trie nodes) the next tree asks and,
    in need[3], which of sentence batch[pos]'s trees comes next; pass the same `need` again.

    Shapes: words, sent_ptr, batch, rec, rec_ptr, samp_len, status as in `estep`; stack, built int32 as in
    `minibatch`; need (4,) int64, need[3] 0 at the start of a batch."""
    G, S, V = borrowed((G, S, V))
    copies = np.empty(samp_len.shape[1], np.int64)
    while pos < batch.shape[0]:
        if status[pos] != OK:
            pos += 1
            continue
        d = batch[pos]
        copies_of_samples(rec, rec_ptr[pos], samp_len[pos], copies)
        if not _absorb_trees(G, S, V, rec, rec_ptr[pos], samp_len[pos], copies, words[sent_ptr[d]:sent_ptr[d + 1]],
                             weight, stack, built, need):
            return pos
        pos += 1
    return pos


@kernel(cache=True)
def absorb_distinct(G, S, V, words, sent_ptr, batch, rec, rec_ptr, tree_len, copies, status, weight, pos, stack,
                    built, need):
    """`absorb` of draws without their repeated trees (`distinct_trees`): the same counts, in the
    same order, as `absorb` of the full draws gives; returns how far it got (see `absorb`).

    Shapes: as `absorb`, with tree_len and copies (B, samples) int64 in place of samp_len."""
    G, S, V = borrowed((G, S, V))
    while pos < batch.shape[0]:
        if status[pos] != OK:
            pos += 1
            continue
        d = batch[pos]
        if not _absorb_trees(G, S, V, rec, rec_ptr[pos], tree_len[pos], copies[pos],
                             words[sent_ptr[d]:sent_ptr[d + 1]], weight, stack, built, need):
            return pos
        pos += 1
    return pos


@kernel(cache=True, inline="always")
def _absorb_trees(G, S, V, rec, r, lengths, copies, w, weight, stack, built, need):
    """Count one sentence's trees from tree need[3] on, whose records start at rec[r] (lengths:
    (samples,)): each tree `copies` says was drawn (0: a repeat, counted at its first), as often as
    it was drawn. Returns False, with need set as `absorb` says, when the pools may not hold the
    next tree: checking one tree at a time keeps the pools at what a tree needs, not all samples.

    Shapes: rec (records, REC_WIDTH) int32; copies (samples,) int64; w (the sentence,) int32; stack, built int32;
    need (4,) int64."""
    n = w.shape[0]
    for s in range(lengths.shape[0]):
        r1 = r + lengths[s]
        if s >= need[3] and copies[s] > 0:
            tables, trie = records_room(G, n, rec, r, r1)
            if not room_ok(S, lengths[s], tables, trie):
                need[0], need[1], need[2], need[3] = lengths[s], tables, trie, s
                return False
            root = materialize(G, S, V, rec, r, r1, w, weight, copies[s], stack, built)
            free_tree(S, root, stack)
        r = r1
    need[3] = 0
    return True


@kernel(cache=True)
def distinct_trees(rec, rec_ptr, samp_len, status):
    """The draws of a minibatch without each sentence's repeated trees, for `absorb_distinct`:
    (rec, rec_ptr, tree_len, copies), tree_len[b, s] the records of tree s of sentence b (0 for a
    repeat), copies[b, s] how often it was drawn (`copies_of_samples`; 0 for a repeat). Most of
    the trees drawn for a short sentence are one tree, so a Ray worker sends a fraction of the
    records (docs/performance.md). Sentences not OK keep none.

    Shapes: rec (records, REC_WIDTH) int32, rec_ptr (B + 1,) int64, samp_len (B, samples) int64, status (B,)
    int64 (`Draws`); returns rec (kept records, REC_WIDTH) of rec's dtype, rec_ptr (B + 1,) int64, tree_len and
    copies (B, samples) int64."""
    n, samples = samp_len.shape
    tree_len = np.zeros((n, samples), np.int64)
    copies = np.zeros((n, samples), np.int64)
    out_ptr = np.zeros(n + 1, np.int64)
    for b in range(n):
        kept = 0
        if status[b] == OK:
            copies_of_samples(rec, rec_ptr[b], samp_len[b], copies[b])
            for s in range(samples):
                if copies[b, s] > 0:
                    tree_len[b, s] = samp_len[b, s]
                    kept += samp_len[b, s]
        out_ptr[b + 1] = out_ptr[b] + kept
    out = np.empty((out_ptr[n], rec.shape[1]), rec.dtype)
    for b in range(n):
        r, o = rec_ptr[b], out_ptr[b]
        for s in range(samples):
            length = samp_len[b, s]
            if copies[b, s] > 0:
                out[o:o + length] = rec[r:r + length]
                o += length
            r += length
    return out, out_ptr, tree_len, copies


@kernel(cache=True)
def decay(S, V, eps, scale):
    """f~ and g~ after a minibatch (Eqs. 9-10); `scale` is D / |B|."""
    for k in range(S.counters[TAB_HWM]):
        if S.tab_state[k] == OPEN:
            V.ft[k] = (1.0 - eps) * V.ft[k] + eps * scale * V.f_batch[k]
        V.f_batch[k] = 0.0
    for r in range(V.gt.shape[0]):
        V.gt[r] = (1.0 - eps) * V.gt[r] + eps * scale * V.g_batch[r]
        V.g_batch[r] = 0.0


@kernel(cache=True)
def stick_parameters(S, V, ad, corr):
    """The entries of `ad` in stick order with their nu1, nu2 (Eqs. 12-13).

    Shapes: returns entries (m,) int64 table ids, nu1 and nu2 (m,) float64."""
    entries = entries_by_rank(S, V, ad)
    nu1, nu2 = np.empty(entries.shape[0]), np.empty(entries.shape[0])
    stick_nus(S, V, ad, entries, corr, nu1, nu2)
    return entries, nu1, nu2


@kernel(cache=True)
def stick_nus(S, V, ad, entries, corr, nu1, nu2):
    """nu1, nu2 (Eqs. 12-13) of the entries of `ad`, given in stick order.

    Shapes: entries (m,) int64 table ids; nu1, nu2 (m,) float64, written."""
    a = S.ad_a[ad]
    b = S.ad_b[ad]
    tail = 0.0
    for p in range(entries.shape[0] - 1, -1, -1):
        k = entries[p]
        F = corr * V.ft[k] + S.tab_count[k]
        nu1[p] = 1.0 - a + F
        nu2[p] = b + (p + 1) * a + tail
        tail += F


@kernel(cache=True)
def refresh_weights(G, S, V, corr):
    """gamma and nu from the statistics (Eqs. 11-13), then the weights of G' (Eqs. 6-8).

    `corr` multiplies the decayed statistics (1 without bias correction).
    """
    ptr = np.empty(G.adaptor_nt.shape[0] + 1, np.int64)
    refresh_weights_in_order(G, S, V, corr, entries_of_all_adaptors(S, V, G.adaptor_nt.shape[0], ptr), ptr)


@kernel(cache=True)
def refresh_weights_in_order(G, S, V, corr, ordered, ptr):
    """`refresh_weights` given the stick order of the entries (as `entries_of_all_adaptors`).

    Shapes: ordered (open entries,) int64 table ids, adaptor ad's ordered[ptr[ad]:ptr[ad+1]]; ptr (A + 1,) int64."""
    G, S, V = borrowed((G, S, V))
    n_rules = V.gamma.shape[0]
    for r in range(n_rules):
        V.gamma[r] = V.alpha[r] + corr * V.gt[r] + S.f[r]
    elog_theta = np.empty(n_rules)
    expected_log_theta(V.gamma, G.rule_parent, G.n_nt, elog_theta)
    n_ad = G.adaptor_nt.shape[0]
    m = ordered.shape[0]
    nu1, nu2 = np.empty(m), np.empty(m)
    for ad in range(n_ad):
        a, b = ptr[ad], ptr[ad + 1]
        stick_nus(S, V, ad, ordered[a:b], corr, nu1[a:b], nu2[a:b])
    log_pi, log_rest = np.empty(m), np.empty(m)
    stick_terms(nu1, nu2, log_pi, log_rest)  # every adaptor's digammas in one parallel launch
    for ad in range(n_ad):
        rest = 0.0  # as stick_expectations: the sums over earlier sticks in stick order
        for p in range(ptr[ad], ptr[ad + 1]):
            V.lw[ordered[p]] = log_pi[p] + rest
            rest += log_rest[p]
        V.elog_rho[ad] = rest
    for r in range(n_rules):
        lw = elog_theta[r]
        ad = G.sym_adaptor[G.rule_parent[r]]
        if ad >= 0:
            lw += V.elog_rho[ad]
        V.lrho[r] = lw
        V.rho[r] = math.exp(lw)


@kernel(cache=True)
def prune(G, S, V, eps, truncation, stack):
    """Sort every grammaton by Lambda = f~ log(eps |z| + 1) and keep the first K (4.9).

    Top-down, so removing a higher entry frees the lower entries it used
    first; an entry still used by a kept entry stays even beyond K.
    Returns the number of entries removed.

    Shapes: truncation (A,) int64, K of each adaptor; stack int32, room for a label's walk."""
    G, S, V = borrowed((G, S, V))
    removed = 0
    ptr = np.empty(G.adaptor_nt.shape[0] + 1, np.int64)
    ordered = entries_of_all_adaptors(S, V, G.adaptor_nt.shape[0], ptr)  # pruning one adaptor changes
    for ad in G.adaptor_order:                                           # no other one's entries or ranks
        entries = ordered[ptr[ad]:ptr[ad + 1]]
        m = entries.shape[0]
        score = np.empty(m)
        for p in range(m):
            k = entries[p]
            score[p] = -V.ft[k] * math.log(eps * yield_length(S, S.tab_yield[k]) + 1.0)
        order = np.argsort(score, kind="mergesort")
        base = V.counters[NEXT_RANK]
        for idx in range(m):
            k = entries[order[idx]]
            if idx < truncation[ad] or S.tab_count[k] > 0:
                V.rank[k] = base + idx
            else:
                remove_entry(G, S, V, k, stack)
                removed += 1
        V.counters[NEXT_RANK] = base + m
    return removed


@kernel(cache=True)
def entry_seed(base, e):
    """The seed of entry e's random stream in one re-derivation pass: splitmix64 of (base, e), so
    that neighbouring streams share no state (seeded_rng(s) and seeded_rng(s + 1) would overlap)."""
    return splitmix64(np.uint64(base) + np.uint64(e + 1) * np.uint64(0x9E3779B97F4A7C15))


@kernel(cache=True)
def rederive_layout(G, S, entries, max_unary, rec_ptr):
    """rec_ptr[e]:rec_ptr[e+1] is the record room of entries[e]'s draw: the most nodes a tree
    over its yield can have. Returns the longest yield.

    Shapes: entries (m,) int64 table ids; rec_ptr (m + 1,) int64, written."""
    longest = 0
    rec_ptr[0] = 0
    for e in range(entries.shape[0]):
        n = yield_length(S, S.tab_yield[entries[e]])
        longest = max(longest, n)
        rec_ptr[e + 1] = rec_ptr[e] + need_nodes(G, n, max_unary) + 16
    return longest


#: counts[e] of an entry whose draw is its derivation already (see `rederive_draws`).
UNCHANGED = -2
#: Interleaved slices of the entries that re-derivation draws on the threads: entries of similar
#: rank have similar yields, so each slice gets its share of long and short ones.
REDERIVE_SLICES = 64


@kernel(cache=True)
def rederive_draws(G, S, V, entries, base, longest, rec, rec_ptr, counts):
    """Phase 1 of re-derivation (4.9): draw a new derivation of every entry of one adaptor from G'
    without that adaptor's entries, in parallel; the state is only read.

    Entry e's records go to rec[rec_ptr[e]:rec_ptr[e] + counts[e]]; counts[e] = -1: no draw (no
    parse, or no room); UNCHANGED: the draw is the entry's derivation, so applying it would change
    nothing (most draws: checked here, on the threads, rather than by building the tree in the
    serial phase). Each entry has its own random stream (`entry_seed(base, e)`), so the draws
    do not depend on the number of threads. Drawing every entry from the same G' is what the
    sequential loop did too: the entries that applying a draw creates have zero weight until the
    next `refresh_weights`, and merges touch only the skipped adaptor.

    Shapes: entries (m,) int64 table ids in stick order; base uint64; rec (rec_ptr[m], REC_WIDTH) int32;
    rec_ptr (m + 1,) int64 (`rederive_layout`); counts (m,) int64, written."""
    G, S, V = borrowed((G, S, V))
    _rederive_draws_parallel(G, S, V, entries, base, longest, rec, rec_ptr, counts)


@kernel(cache=True, parallel=True)
def _rederive_draws_parallel(G, S, V, entries, base, longest, rec, rec_ptr, counts):
    """`rederive_draws`' parallel loop: REDERIVE_SLICES interleaved slices of the entries, each slice on one thread
    with its own stack, each draw compared with the entry's label there.

    Shapes: as `rederive_draws`."""
    room = 1
    for e in range(entries.shape[0]):
        room = max(room, rec_ptr[e + 1] - rec_ptr[e])
    for first in prange(REDERIVE_SLICES):
        stack = np.empty(room + 2, np.int32)
        for e in range(first, entries.shape[0], REDERIVE_SLICES):
            _rederive_draw(G, S, V, entries, base, longest, rec, rec_ptr, counts, e)
            if counts[e] >= 0 and _draw_is_label(G, S, rec, rec_ptr[e], rec_ptr[e] + counts[e],
                                                 S.tab_label[entries[e]], S.tab_adaptor[entries[e]], stack):
                counts[e] = UNCHANGED


@kernel(cache=True)
def _rederive_draw(G, S, V, entries, base, longest, rec, rec_ptr, counts, e):
    """Draw entry e's new derivation into its records (see `rederive_draws`); counts[e] stays -1 without a parse.

    Shapes: as `rederive_draws`."""
    counts[e] = -1
    k = entries[e]
    terms = np.empty(longest + 1, np.int32)
    n = yield_terms(S, S.tab_yield[k], terms)
    ad = S.tab_adaptor[k]
    chart, scale, ynode, window = new_chart(G, n)
    if inside_weighted(G, S, terms, n, V.rho, chart, scale, ynode, window, G.adaptor_nt[ad], ad, 1.0,
                       V.lw) == NEG_INF:
        return
    r0, r1 = rec_ptr[e], rec_ptr[e + 1]
    tasks = np.empty((r1 - r0 + 8, 3), np.int64)
    buf = np.empty((n + 3, 3), np.int64)
    rng = seeded_rng(entry_seed(base, e))
    count, _ = sample_records(G, S, terms, n, V.rho, chart, scale, ynode, window, G.adaptor_nt[ad], ad, V.lw, rng,
                              tasks, buf, rec, r0, r1)
    counts[e] = count


@kernel(cache=True)
def _draw_is_label(G, S, rec, r0, r1, label, ad, stack):
    """True if the tree in records rec[r0:r1] is the derivation `label` of an entry of adaptor
    `ad`: what `materialize` would build from them equals it (`same_derivation`).

    Records are in preorder (a node, then its children's subtrees left to right; a REC_NEW
    subtree's label right after it), so one walk over them and the tree suffices. A REC_NEW
    subtree equals a table of the tree when it equals that table's label: `materialize` would
    find that entry, the only one with this derivation. Entries of `ad` itself (a recursive
    grammar) may merge while the draws are applied, so a draw reaching one counts as a change,
    and the serial phase decides. stack: (r1 - r0 + 2,) at least.

    Shapes: rec (records, REC_WIDTH) int32."""
    stack[0] = label
    top = 1
    for r in range(r0, r1):
        if top == 0:
            return False
        top -= 1
        x = stack[top]
        kind = rec[r, 0]
        if kind == REC_TERM:
            if S.node_kind[x] != TERM or S.node_sym[x] != rec[r, 2]:
                return False
        elif kind == REC_RULE:
            if S.node_kind[x] != RULE or S.node_rule[x] != rec[r, 2]:
                return False
            children = 0
            c = S.node_child[x]
            while c >= 0:
                children += 1
                c = S.node_sib[c]
            if children != rec[r, 3] or top + children > r1 - r:  # more nodes left than records
                return False
            c = S.node_child[x]
            for i in range(children):  # first child on top
                stack[top + children - 1 - i] = c
                c = S.node_sib[c]
            top += children
        else:
            if S.node_kind[x] != TABLE:
                return False
            k = S.node_table[x]
            if k < 0 or S.tab_adaptor[k] == ad:
                return False
            if kind == REC_CACHED:
                if k != rec[r, 2]:
                    return False
            else:  # REC_NEW: its label follows
                stack[top] = S.tab_label[k]
                top += 1
    return top == 0


@kernel(cache=True)
def rederive_apply(G, S, V, entries, first_new_rank, pos, rec, rec_ptr, counts, terms, stack, built, stats,
                   need):
    """Phase 2 of re-derivation, in stick order: an entry whose draw differs from its derivation
    takes the new one; lower subtrees of the draw that are not entries yet join their grammatons;
    an entry whose new derivation equals another entry is merged into the one earlier in stick
    order. stats: [changed, merged]. Returns the next position; stopping early means the pools
    need what `need` says (see `absorb`).

    An entry merged away frees its table, which a lower entry created later in the pass may take:
    a table ranked `first_new_rank` or later (V.counters[NEXT_RANK] when the pass began) is such a
    newcomer, not the entry the draw was made for, and is left alone.

    Shapes: entries, rec, rec_ptr, counts as in `rederive_draws`; terms (longest yield + 1,) int32; stack, built
    int32 as in `minibatch`; stats (2,) int64, added to; need (3,) int64."""
    G, S, V = borrowed((G, S, V))
    while pos < entries.shape[0]:
        k = entries[pos]
        count = counts[pos]
        if count < 0 or S.tab_state[k] != OPEN or V.rank[k] >= first_new_rank:
            pos += 1  # no draw, no change, or merged away earlier in this pass
            continue
        n = yield_terms(S, S.tab_yield[k], terms)
        if not room_ok(S, count, count, trie_need(G, n)):
            need[0], need[1], need[2] = count, count, trie_need(G, n)
            return pos
        new = materialize(G, S, V, rec, rec_ptr[pos], rec_ptr[pos] + count, terms, 0.0, 1, stack, built)
        old = S.tab_label[k]
        if same_derivation(S, new, old, stack):
            free_tree(S, new, stack)
            pos += 1
            continue
        stats[0] += 1
        ad = S.tab_adaptor[k]
        count_label(G, S, old, -1, stack)
        free_tree(S, old, stack)
        S.tab_label[k] = new
        count_label(G, S, new, 1, stack)
        other = find_entry(S, ad, S.tab_yield[k], new, k, stack)
        if other >= 0:
            stats[1] += 1
            if V.rank[other] < V.rank[k]:
                merge_entries(G, S, V, other, k, stack)
            else:
                merge_entries(G, S, V, k, other, stack)
        pos += 1
    return pos


@kernel(cache=True)
def sentence_statistics_from_analyses(G, S, V, stack):
    """Turn an MCMC state into a variational one (warm start, 4.12).

    The sentences' analyses are taken out: their rule uses become g~ and
    their table uses f~ (both at corpus scale); what remains in f and
    tab_count is exactly N_rule and U of the tables' labels.

    Shapes: stack int32, room for the walk of the largest analysis."""
    for d in range(S.sent_root.shape[0]):
        root = S.sent_root[d]
        if root >= 0:
            count_productions(G, S, root, -1, stack, V.ft, V.gt)
            free_tree(S, root, stack)
            S.sent_root[d] = -1


@kernel(cache=True)
def merge_duplicates(G, S, V, stack):
    """Merge tables with equal labels (MCMC may seat one dish at several tables),
    lowest adaptors first so that higher labels become comparable; returns merges.

    Shapes: stack int32, room for two nodes per node of the largest label."""
    merged = 0
    order = G.adaptor_order
    for o in range(order.shape[0] - 1, -1, -1):
        ad = order[o]
        entries = entries_by_rank(S, V, ad)
        for k in entries:
            if S.tab_state[k] != OPEN:
                continue
            other = find_entry(S, ad, S.tab_yield[k], S.tab_label[k], k, stack)
            while other >= 0:  # every copy of the dish
                merge_entries(G, S, V, k, other, stack)
                merged += 1
                other = find_entry(S, ad, S.tab_yield[k], S.tab_label[k], k, stack)
    return merged


@kernel(cache=True)
def rank_by_counts(G, S, V):
    """Stick order by decreasing f~ + U (after a warm start)."""
    for ad in range(G.adaptor_nt.shape[0]):
        entries = entries_by_rank(S, V, ad)
        key = np.empty(entries.shape[0])
        for p in range(entries.shape[0]):
            key[p] = -(V.ft[entries[p]] + S.tab_count[entries[p]])
        order = np.argsort(key, kind="mergesort")
        base = V.counters[NEXT_RANK]
        for idx in range(order.shape[0]):
            V.rank[entries[order[idx]]] = base + idx
        V.counters[NEXT_RANK] = base + order.shape[0]


@kernel(cache=True)
def longest_entry(S):
    """The longest yield of any entry: label walks and re-derivation buffers are sized by it."""
    longest = 0
    for k in range(S.counters[TAB_HWM]):
        if S.tab_state[k] == OPEN:
            longest = max(longest, yield_length(S, S.tab_yield[k]))
    return longest


@kernel(cache=True)
def grammaton_sizes(G, S, sizes):
    """Add each adaptor's number of entries (its OPEN tables) to sizes.

    Shapes: sizes (A,) int64."""
    for k in range(S.counters[TAB_HWM]):
        if S.tab_state[k] == OPEN:
            sizes[S.tab_adaptor[k]] += 1
