"""E-step of the InfVocLDA adaptor grammar (docs/algorithms.md 2.4 with the online algorithm of 4).

The grammar is `DOC -> TOPIC_i`, `@TOPIC_i -> WORD`, `WORD -> CHARS`,
`CHARS -> CHAR | CHAR CHARS`, `CHAR -> c`. Every word token is a sentence,
and each word has exactly one derivation below `TOPIC_i`, so a chart is not
needed: the weight of token w under topic i in G' is

    P_i(w) = sum of exp(E log pi) over the entries of TOPIC_i spelling w
             + exp(E log rho_i + E log theta(TOPIC_i -> WORD) + log base(w)),

the same quantities the general kernels use. The topic proportions of a
document are local variational parameters (as in online LDA): a few
fixed-point iterations per document, with the grammatons fixed, give each
token's topic distribution; S trees are then drawn per token and counted into
f, g and h exactly like the general E-step (4.5), so the grammatons, updates,
pruning and hyperparameter steps are shared with word segmentation.

The arrays of `TopicRules` (built by `spacy_ag.topics.topic_model.topic_rules` from the
compiled topic grammar): the rule, nonterminal and adaptor ids the topic kernels
use, all int64. K topics, A adaptors (the K topics, and WORD when it is adapted),
n_term terminals (characters). Rule ids index `GrammarArrays.rule_*` and the
per-rule arrays of `Variational`; fields of shape (1,) hold one id.

    field          shape      dtype  meaning
    doc_topic      (K,)       int64  rule DOC -> TOPIC_i of topic i
    topic_word     (K,)       int64  rule TOPIC_i -> WORD of topic i
    topic_nt       (K,)       int64  nonterminal id of TOPIC_i
    topic_adaptor  (K,)       int64  adaptor index of TOPIC_i
    adaptor_topic  (A,)       int64  topic of each adaptor index; -1 for WORD (the shared lexicon)
    sent_doc       (1,)       int64  rule SENT -> DOC
    word_chars     (1,)       int64  rule WORD -> CHARS
    chars_more     (1,)       int64  rule CHARS -> CHAR CHARS
    chars_last     (1,)       int64  rule CHARS -> CHAR
    char_rule      (n_term,)  int64  rule CHAR -> t of each terminal t; -1 for a terminal without one
    nts            (3,)       int64  nonterminal ids of WORD, CHARS and CHAR
    word_adaptor   (1,)       int64  adaptor index of WORD, the shared lexicon; -1 when WORD is not adapted
"""
from collections import namedtuple

import math

import numpy as np
from numba import prange

from ..kernel_environment import kernel

from .borrowed import borrowed
from .expectations import digamma
from .grammatons import create_entry, new_table_node, yield_node
from .rng import seeded_rng, uniform
from .state import RULE, TERM, alloc_node, room_ok, trie_child

TopicRules = namedtuple(
    "TopicRules",
    [
        "doc_topic",  # rule DOC -> TOPIC_i, per topic
        "topic_word",  # rule TOPIC_i -> WORD, per topic
        "topic_nt",  # nonterminal TOPIC_i, per topic
        "topic_adaptor",  # adaptor index of TOPIC_i, per topic
        "adaptor_topic",  # topic of an adaptor index (-1 for WORD when it is adapted)
        "sent_doc",  # rule SENT -> DOC (array of one)
        "word_chars",  # rule WORD -> CHARS, its nonterminals WORD, CHARS, CHAR (arrays of one)
        "chars_more",
        "chars_last",
        "char_rule",  # rule CHAR -> t, per terminal
        "nts",  # [WORD, CHARS, CHAR]
        "word_adaptor",  # adaptor index of WORD, the shared lexicon, or -1 when WORD is not adapted (array of one)
    ],
)


@kernel(cache=True)
def base_log_weight(R, lrho, chars):
    """log weight of spelling `chars` from the base: WORD -> CHARS, the CHARS chain, CHAR -> c.

    Shapes: lrho (rules,) float64; chars (n,) int32, the word's terminal ids."""
    n = chars.shape[0]
    lw = lrho[R.word_chars[0]] + (n - 1) * lrho[R.chars_more[0]] + lrho[R.chars_last[0]]
    for p in range(n):
        lw += lrho[R.char_rule[chars[p]]]
    return lw


@kernel(cache=True)
def lexicon_entry(S, R, y):
    """The entry of the shared lexicon (an adapted WORD) spelling yield node y, or -1."""
    if y < 0 or R.word_adaptor[0] < 0:
        return -1
    k = S.trie_head[y]
    while k >= 0 and S.tab_adaptor[k] != R.word_adaptor[0]:
        k = S.tab_next[k]
    return k


@kernel(cache=True)
def word_log_weight(S, V, R, chars, y):
    """log weight of WORD spelling `chars` (yield node y, or -1 if it has none): the base, plus the
    word's lexicon entry when WORD is adapted.

    Shapes: chars (n,) int32, the word's terminal ids."""
    lw = base_log_weight(R, V.lrho, chars)
    k = lexicon_entry(S, R, y)
    if k >= 0 and V.lw[k] > -np.inf:
        m = max(lw, V.lw[k])
        lw = m + math.log(math.exp(lw - m) + math.exp(V.lw[k] - m))
    return lw


@kernel(cache=True)
def word_topic_log_weights(G, S, V, R, chars, out):
    """out[i] = log P_i(w) under G' for every topic i.

    Returns the word's trie node, or -1 if no entry has that yield.

    Shapes: chars (n,) int32, the word's terminal ids; out (K,) float64, written."""
    K = R.topic_nt.shape[0]
    y = 0
    for p in range(chars.shape[0]):
        y = trie_child(S, y, chars[p], G.n_term)
        if y < 0:
            break
    base = word_log_weight(S, V, R, chars, y)
    for i in range(K):
        out[i] = V.lrho[R.topic_word[i]] + base
    if y >= 0:
        k = S.trie_head[y]
        while k >= 0:
            i = R.adaptor_topic[S.tab_adaptor[k]]
            if i >= 0 and V.lw[k] > -np.inf:
                m = max(out[i], V.lw[k])
                out[i] = m + math.log(math.exp(out[i] - m) + math.exp(V.lw[k] - m))
            k = S.tab_next[k]
    return y


@kernel(cache=True)
def _responsibilities(gamma, logp, weights, phi, elog, scaled, total):
    """phi_t,i proportional to exp(E log theta_i) P_i(w_t) under Dirichlet(gamma); total = sum_t phi_t.

    weights[t, i] = P_i(w_t) / max_j P_j(w_t) (`relative_weights` of the log weights logp), so an
    iteration takes K exponentials, not T x K. elog, scaled and total: (K,) work arrays (the fixed
    point calls this many times per document).

    Shapes: gamma (K,) float64; logp, weights (T, K) float64 for the document's T tokens; phi (T, K) float64,
    written."""
    T, K = weights.shape
    psi_sum = digamma(gamma.sum())
    top = -np.inf
    for i in range(K):
        elog[i] = digamma(gamma[i]) - psi_sum
        top = max(top, elog[i])
        total[i] = 0.0
    for i in range(K):
        scaled[i] = math.exp(elog[i] - top)  # exp(E log theta_i), the largest 1
    for t in range(T):
        z = 0.0
        for i in range(K):
            phi[t, i] = scaled[i] * weights[t, i]
            z += phi[t, i]
        if not z > 1e-280:  # the products underflowed (a tiny gamma_i): the same in log space
            m = -np.inf
            for i in range(K):
                m = max(m, elog[i] + logp[t, i])
            z = 0.0
            for i in range(K):
                phi[t, i] = math.exp(elog[i] + logp[t, i] - m)
                z += phi[t, i]
        inv = 1.0 / z
        for i in range(K):
            phi[t, i] *= inv
            total[i] += phi[t, i]


@kernel(cache=True)
def document_word_weights(G, S, V, R, chars, tok_ptr, t0, t1):
    """log P_i(w) of the tokens t0..t1 of a document (one row each), and each token's yield node.

    Shapes: chars (characters,) int32, every token's terminal ids; tok_ptr (tokens + 1,) int64, token t is
    chars[tok_ptr[t]:tok_ptr[t+1]]; returns logp (t1 - t0, K) float64 and ys (t1 - t0,) int64 trie nodes,
    -1 for none."""
    logp = np.empty((t1 - t0, R.topic_nt.shape[0]))
    ys = np.empty(t1 - t0, np.int64)
    for t in range(t0, t1):
        ys[t - t0] = word_topic_log_weights(G, S, V, R, chars[tok_ptr[t]:tok_ptr[t + 1]], logp[t - t0])
    return logp, ys


@kernel(cache=True)
def relative_weights(logp):
    """P_i(w_t) / max_j P_j(w_t) from the log weights, in (0, 1], and each row's max (T,)."""
    T, K = logp.shape
    weights = np.empty((T, K))
    top = np.empty(T)
    for t in range(T):
        m = -np.inf
        for i in range(K):
            m = max(m, logp[t, i])
        top[t] = m
        for i in range(K):
            weights[t, i] = math.exp(logp[t, i] - m)
    return weights, top


@kernel(cache=True)
def document_topics(alpha, logp, iterations, gamma, phi):
    """Local mean-field for one document: gamma = alpha + sum_t phi_t with
    phi_t,i proportional to exp(E log theta_i) P_i(w_t). Returns the log likelihood
    sum_t log sum_i E[theta_i] P_i(w_t) at the end.

    Shapes: alpha (K,) float64; logp (T, K) float64 (`document_word_weights`); gamma (K,) and phi (T, K)
    float64, written."""
    T, K = logp.shape
    elog, scaled, total = np.empty(K), np.empty(K), np.empty(K)
    weights, top = relative_weights(logp)
    for i in range(K):
        gamma[i] = alpha[i] + T / K
    for _ in range(iterations):
        _responsibilities(gamma, logp, weights, phi, elog, scaled, total)
        change = 0.0
        for i in range(K):
            new = alpha[i] + total[i]
            change = max(change, abs(new - gamma[i]))
            gamma[i] = new
        if change < 1e-3:
            break
    _responsibilities(gamma, logp, weights, phi, elog, scaled, total)  # final responsibilities from the final gamma
    loglik = 0.0
    norm = gamma.sum()
    for t in range(T):
        z = 0.0
        for i in range(K):
            z += gamma[i] / norm * weights[t, i]
        loglik += top[t] + math.log(z)
    return loglik


@kernel(cache=True)
def infer_documents(G, S, V, R, chars, tok_ptr, doc_ptr, alpha, iterations, gammas, phis, logliks):
    """Topic proportions (gammas), token responsibilities (phis, one row per token) and
    log likelihoods of documents, with the grammatons fixed; documents run in parallel.

    Shapes: chars, tok_ptr as in `document_word_weights`; doc_ptr (D + 1,) int64, document d's tokens are
    doc_ptr[d]:doc_ptr[d+1]; alpha (K,) float64; gammas (D, K), phis (tokens, K) and logliks (D,) float64,
    written."""
    G, S, V, R = borrowed((G, S, V, R))
    _infer_parallel(G, S, V, R, chars, tok_ptr, doc_ptr, alpha, iterations, gammas, phis, logliks)


@kernel(cache=True, parallel=True)
def _infer_parallel(G, S, V, R, chars, tok_ptr, doc_ptr, alpha, iterations, gammas, phis, logliks):
    """`infer_documents`' parallel loop over the documents.

    Shapes: as `infer_documents`."""
    for d in prange(doc_ptr.shape[0] - 1):
        t0, t1 = doc_ptr[d], doc_ptr[d + 1]
        logp, _ = document_word_weights(G, S, V, R, chars, tok_ptr, t0, t1)
        logliks[d] = document_topics(alpha, logp, iterations, gammas[d], phis[t0:t1])


@kernel(cache=True)
def derivation_label(S, R, topic, chars, lexicon):
    """The derivation of a word under TOPIC_topic, as pool nodes: down to the characters, or,
    with a lexicon entry (>= 0), to a reference to it.

    Shapes: chars (n,) int32, the word's terminal ids."""
    root = alloc_node(S, RULE, R.topic_nt[topic], R.topic_word[topic])
    S.node_child[root] = new_table_node(S, R.nts[0], lexicon) if lexicon >= 0 else spelling_label(S, R, chars)
    return root


@kernel(cache=True)
def spelling_label(S, R, chars):
    """WORD -> CHARS -> ... -> the characters, as pool nodes (a word spelled by the base).

    Shapes: chars (n,) int32, the word's terminal ids."""
    word_nt, chars_nt, char_nt = R.nts[0], R.nts[1], R.nts[2]
    word = alloc_node(S, RULE, word_nt, R.word_chars[0])
    parent = word
    prev_char = -1
    n = chars.shape[0]
    for p in range(n):
        rule = R.chars_last[0] if p == n - 1 else R.chars_more[0]
        node = alloc_node(S, RULE, chars_nt, rule)
        if prev_char < 0:
            S.node_child[parent] = node
        else:
            S.node_sib[prev_char] = node
        ch = alloc_node(S, RULE, char_nt, R.char_rule[chars[p]])
        S.node_child[node] = ch
        S.node_child[ch] = alloc_node(S, TERM, chars[p], -1)
        parent = node
        prev_char = ch
    return word


@kernel(cache=True)
def draw_documents(G, S, V, R, chars, tok_ptr, doc_ptr, docs, seeds, alpha, iterations, n_samples, tok_start,
                   topics, entries, logliks):
    """Local E-step and S draws per token of every document of `docs`, in parallel (4.4, 4.5);
    the state is only read.

    Document b's draws go to topics[r] and entries[r] for r from tok_start[b] * n_samples, token
    by token, S each: the topic drawn, and the entry of that topic drawn, or -1 for a draw from
    the base. logliks[b] is the document's log likelihood. Each document has its own random
    stream (seeds[b]), so the draws do not depend on the number of threads; they are what the
    sequential loop drew too, since the entries that `absorb_document_draws` creates have weight
    zero until the next G'.

    Shapes: chars, tok_ptr, doc_ptr as in `infer_documents`; docs (B,) int64 document indices; seeds (B,)
    uint64; alpha (K,) float64; tok_start (B + 1,) int64, the tokens of the documents before b; topics
    (tok_start[B] * n_samples,) int32, written; entries (the same,) int64, written: the entry drawn, -1 for a
    spelling from the base, -2 - e for the base's draw of lexicon entry e; logliks (B,) float64, written."""
    G, S, V, R = borrowed((G, S, V, R))
    _draw_documents_parallel(G, S, V, R, chars, tok_ptr, doc_ptr, docs, seeds, alpha, iterations, n_samples,
                             tok_start, topics, entries, logliks)


@kernel(cache=True, parallel=True)
def _draw_documents_parallel(G, S, V, R, chars, tok_ptr, doc_ptr, docs, seeds, alpha, iterations, n_samples,
                             tok_start, topics, entries, logliks):
    """`draw_documents`' parallel loop over the documents.

    Shapes: as `draw_documents`."""
    for b in prange(docs.shape[0]):
        _draw_document(G, S, V, R, chars, tok_ptr, doc_ptr, docs, seeds, alpha, iterations, n_samples, tok_start,
                       topics, entries, logliks, b)


@kernel(cache=True)
def _draw_document(G, S, V, R, chars, tok_ptr, doc_ptr, docs, seeds, alpha, iterations, n_samples, tok_start,
                   topics, entries, logliks, b):
    """Document docs[b]'s local E-step (`document_topics`) and its tokens' draws (see `draw_documents`).

    Shapes: as `draw_documents`."""
    K = R.topic_nt.shape[0]
    d = docs[b]
    t0, t1 = doc_ptr[d], doc_ptr[d + 1]
    logp, ys = document_word_weights(G, S, V, R, chars, tok_ptr, t0, t1)
    phi = np.empty((t1 - t0, K))
    gamma = np.empty(K)
    logliks[b] = document_topics(alpha, logp, iterations, gamma, phi)
    rng = seeded_rng(seeds[b])
    r = tok_start[b] * n_samples
    for t in range(t0, t1):
        for _ in range(n_samples):
            u = uniform(rng)
            i = K - 1
            for q in range(K):
                u -= phi[t - t0, q]
                if u <= 0.0:
                    i = q
                    break
            # an entry of TOPIC_i spelling the word, or a draw from the base
            u = uniform(rng)
            chosen = -1
            y = ys[t - t0]
            if y >= 0:
                k = S.trie_head[y]
                while k >= 0:
                    if S.tab_adaptor[k] == R.topic_adaptor[i] and V.lw[k] > -np.inf:
                        u -= math.exp(V.lw[k] - logp[t - t0, i])
                        if u <= 0.0:
                            chosen = k
                            break
                    k = S.tab_next[k]
            if chosen < 0:  # from the base: the word's lexicon entry (coded -2 - entry) or its spelling (-1)
                lexicon = lexicon_entry(S, R, y)
                if lexicon >= 0 and V.lw[lexicon] > -np.inf:
                    word = chars[tok_ptr[t]:tok_ptr[t + 1]]
                    if uniform(rng) < math.exp(V.lw[lexicon] - word_log_weight(S, V, R, word, y)):
                        chosen = -2 - lexicon
            topics[r] = i
            entries[r] = chosen
            r += 1


@kernel(cache=True)
def _absorb_word(G, S, V, R, word, y, lexicon, w, stack):
    """Count a base draw of WORD with weight w: a use of the lexicon entry `lexicon`, or (-1) the
    spelling's rules, and with an adapted WORD a use of the word's lexicon entry, made if new.
    Returns the lexicon entry, or -1 when WORD is not adapted.

    Shapes: word (n,) int32 terminal ids; stack int32, room for a label's walk."""
    if lexicon < 0:
        n = word.shape[0]
        V.g_batch[R.word_chars[0]] += w
        V.g_batch[R.chars_more[0]] += w * (n - 1)
        V.g_batch[R.chars_last[0]] += w
        for p in range(n):
            V.g_batch[R.char_rule[word[p]]] += w
        if R.word_adaptor[0] < 0:
            return -1
        lexicon = lexicon_entry(S, R, y)
        if lexicon < 0:
            lexicon = create_entry(G, S, V, R.word_adaptor[0], y, spelling_label(S, R, word), stack)
    V.f_batch[lexicon] += w
    return lexicon


@kernel(cache=True)
def absorb_document_draws(G, S, V, R, chars, tok_ptr, doc_ptr, docs, n_samples, tok_start, topics, entries,
                          logliks, pos, stack, result, need):
    """f/g/h counts of the draws of documents docs[pos:], in order; a base draw whose word has no
    entry under its topic yet creates one (4.5).

    result[0] accumulates the documents' log likelihood, result[1] the tokens.
    Returns the next position; stopping early means the pools need the (nodes, tables, trie
    nodes) written to `need`.

    Shapes: chars, tok_ptr, doc_ptr, docs, tok_start, topics, entries, logliks as in `draw_documents`; stack
    int32, room for a label's walk; result (2,) float64, added to; need (3,) int64."""
    G, S, V, R = borrowed((G, S, V, R))
    K = R.topic_nt.shape[0]
    w = 1.0 / n_samples
    while pos < docs.shape[0]:
        d = docs[pos]
        t0, t1 = doc_ptr[d], doc_ptr[d + 1]
        n_chars = tok_ptr[t1] - tok_ptr[t0]
        draws = min(n_samples, K)  # new entries per token: at most one per topic drawn (and its lexicon entry)
        nodes, tables = draws * (3 * n_chars + 3 * (t1 - t0)) + 8, 2 * draws * (t1 - t0) + 1
        if not room_ok(S, nodes, tables, n_chars + 1):
            need[0], need[1], need[2] = nodes, tables, n_chars + 1
            return pos
        result[0] += logliks[pos]
        result[1] += t1 - t0
        r = tok_start[pos] * n_samples
        for t in range(t0, t1):
            word = chars[tok_ptr[t]:tok_ptr[t + 1]]
            for _ in range(n_samples):
                i = topics[r]
                chosen = entries[r]
                r += 1
                V.g_batch[R.sent_doc[0]] += w
                V.g_batch[R.doc_topic[i]] += w
                if chosen < 0:
                    V.g_batch[R.topic_word[i]] += w
                    y = yield_node(S, word, 0, word.shape[0], G.n_term)
                    lexicon = _absorb_word(G, S, V, R, word, y, -2 - chosen if chosen <= -2 else -1, w, stack)
                    k = S.trie_head[y]  # the word's derivation under a topic is unique: same topic, same entry
                    while k >= 0 and S.tab_adaptor[k] != R.topic_adaptor[i]:
                        k = S.tab_next[k]
                    if k < 0:
                        k = create_entry(G, S, V, R.topic_adaptor[i], y, derivation_label(S, R, i, word, lexicon),
                                         stack)
                    chosen = k
                V.f_batch[chosen] += w
        pos += 1
    return pos
