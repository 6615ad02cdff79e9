"""Collapsed Gibbs sampling of the InfVocLDA grammar: the topic model's MCMC mode (docs/algorithms.md 2.4, 3.17).

Why a second training mode: on de-news the online hybrid algorithm's topics
stay well below a converged collapsed Gibbs sampler's by the field's
coherence measures, whatever its knobs (README). With a = 0 each topic is a
Dirichlet process over words with the character base G0 of the grammar
(`WORD -> CHARS`, `CHARS -> CHAR CHARS | CHAR`, `CHAR -> c`), and the
predictive of word w under topic k with the tables integrated out is
(n_kw + b G0(w)) / (n_k + b). A token's topic is then drawn as in LDA's
collapsed sampler, with the prior b G0(w) in place of a symmetric eta:

    p(z_t = k | rest) ∝ (n_dk + alpha_k) (n_kw + b G0(w)) / (n_k + b).

G0's rule probabilities are learned from the tables, as in every adaptor
grammar: given n_kw customers the number of tables has the Antoniak
distribution, drawn exactly (`table_counts`), and the rules' probabilities
are set to their Dirichlet posterior means given the tables' spellings.
The document prior alpha is asymmetric and fitted by Minka's fixed point
(Wallach, Mimno & McCallum 2009: an asymmetric alpha is what makes LDA's
topics robust).

The arrays (allocated by `spacy_ag.topics.gibbs`: `gibbs_corpus` packs the corpus,
`run_gibbs` the sampler's state): N tokens, D documents, W word types, K topics, and
the spellings of the types, P characters in all. Counts of tables are drawn and summed
as floats.

    field           shape     dtype    meaning
    word            (N,)      int32    word-type id of each token, 0..W-1
    doc             (N,)      int32    document of each token, 0..D-1
    doc_length      (D,)      int64    count: tokens of each document
    z               (N,)      int32    topic of each token, 0..K-1
    ndk             (D, K)    int32    count: tokens of document d with topic k (n_dk)
    nwk             (W, K)    int32    count: tokens of word type w with topic k (n_kw)
    nk              (K,)      int64    count: tokens with topic k (n_k)
    alpha           (K,)      float64  the asymmetric Dirichlet prior of the documents' topic proportions
    b               (K,)      float64  concentration b_k of each topic's Dirichlet process
    base            (W,)      float64  G0(w) of each word type: its spelling's probability under the base rules, or
                                       with an adapted WORD the shared lexicon's predictive
    spelled         (W,)      float64  the spelling's probability under the base rules alone (`base_probabilities`)
    word_tables     (W,)      float64  count: the topics' tables of word type w, summed over the topics
                                       (`table_counts`)
    topic_tables    (K,)      float64  count: the tables of topic k
    lexicon_tables  (W,)      float64  count: the shared lexicon's tables of word type w (with an adapted WORD;
                                       `lexicon_tables`)
    spell           (P,)      int32    the terminal ids of every type's spelling, concatenated
    spell_ptr       (W + 1,)  int64    type w is spelled spell[spell_ptr[w]:spell_ptr[w+1]]
    rng             (4,)      uint64   xoshiro256** state of the sampler's random stream (`rng.make_rng`)
"""
import math

import numpy as np
from numba import prange

from ..kernel_environment import kernel

from .borrowed import borrowed
from .grammatons import create_entry, yield_node
from .hyper import log_gamma_pdf
from .rng import seeded_rng, splitmix64, uniform, uniform_pos
from .state import room_ok
from .topic_draws import derivation_label, document_word_weights, lexicon_entry, relative_weights, spelling_label


@kernel(cache=True)
def topic_weights(ndk, nwk, inv_norm, alpha, b, base_w, d, w, out):
    """out[k] = the cumulative sums of (n_dk + alpha_k) (n_kw + b_k G0(w)) / (n_k + b_k) over k, for
    a token of word type w in document d whose own counts are already taken out; base_w = G0(w) and
    inv_norm[k] = 1 / (n_k + b_k), kept up to date by the caller (a division per topic and token
    would cost more than the rest of the sum).

    Shapes: ndk (D, K) int32, nwk (W, K) int32 (the module docstring); inv_norm, alpha, b (K,) float64; out (K,)
    float64, written."""
    total = 0.0
    for k in range(inv_norm.shape[0]):
        total += (ndk[d, k] + alpha[k]) * (nwk[w, k] + b[k] * base_w) * inv_norm[k]
        out[k] = total
    return total


@kernel(cache=True, inline="always")
def draw_index(cumulative, u):
    """The first index whose cumulative weight exceeds u (u uniform on [0, total)).

    Shapes: cumulative (K,) float64, rising."""
    for j in range(cumulative.shape[0]):
        if u < cumulative[j]:
            return j
    return cumulative.shape[0] - 1


@kernel(cache=True)
def gibbs_sweep(word, doc, z, ndk, nwk, nk, alpha, b, base, rng):
    """Redraw every token's topic once, in corpus order, from its full conditional; b (K,) holds
    every topic's concentration.

    Shapes: word, doc, z, ndk, nwk, nk, alpha, b, base, rng as in the module docstring; z and the counts updated."""
    K = nk.shape[0]
    cumulative = np.empty(K)
    inv_norm = np.empty(K)
    for k in range(K):
        inv_norm[k] = 1.0 / (nk[k] + b[k])
    for t in range(word.shape[0]):
        w, d, k = word[t], doc[t], z[t]
        ndk[d, k] -= 1
        nwk[w, k] -= 1
        nk[k] -= 1
        inv_norm[k] = 1.0 / (nk[k] + b[k])
        k = draw_index(cumulative, uniform(rng) * topic_weights(ndk, nwk, inv_norm, alpha, b, base[w], d, w,
                                                                 cumulative))
        z[t] = k
        ndk[d, k] += 1
        nwk[w, k] += 1
        nk[k] += 1
        inv_norm[k] = 1.0 / (nk[k] + b[k])


@kernel(cache=True)
def antoniak(customers, weight, rng):
    """The number of tables of `customers` in a DP restaurant whose base gives the dish `weight`
    (b G0(w)): customer i + 1 opens a table with probability weight / (weight + i).

    Shapes: rng (4,) uint64."""
    tables = 1 if customers > 0 else 0
    for i in range(1, customers):
        if uniform(rng) * (weight + i) < weight:
            tables += 1
    return tables


@kernel(cache=True)
def table_counts(nwk, b, base, rng, word_tables, topic_tables):
    """Draw the tables behind every count n_kw of the topics' DP(b_k, base) restaurants; their sums
    go to word_tables (W,) and topic_tables (K,).

    Shapes: nwk (W, K) int32; b (K,), base (W,) float64; rng (4,) uint64; word_tables (W,) and topic_tables
    (K,) float64, written."""
    W, K = nwk.shape
    topic_tables[:] = 0
    for w in range(W):
        word_tables[w] = 0
        for k in range(K):
            if nwk[w, k] > 0:
                t = antoniak(nwk[w, k], b[k] * base[w], rng)
                word_tables[w] += t
                topic_tables[k] += t


@kernel(cache=True)
def lexicon_tables(word_tables, b, spelled, rng, out):
    """Draw the tables of the shared lexicon (an adapted WORD, DP(b, G0)) whose customers are the
    topics' tables: out[w] for word_tables[w] customers of dish w.

    Shapes: word_tables, spelled (W,) float64; rng (4,) uint64; out (W,) float64, written."""
    for w in range(word_tables.shape[0]):
        out[w] = antoniak(int(word_tables[w]), b * spelled[w], rng)


@kernel(cache=True)
def _log_target_b(eta, customers, tables, shape, scale):
    """log p(b | tables) + eta at b = exp(eta): the Dirichlet-process restaurants' seating terms
    sum_r [t_r log b + lgamma(b) - lgamma(b + n_r)] under a Gamma(shape, scale) prior.

    Shapes: customers (R,) int64 or float64, tables (R,) float64, one entry per restaurant."""
    b = math.exp(eta)
    if not (b > 1e-20 and b < 1e300):
        return -np.inf
    out = log_gamma_pdf(b, shape, scale) + eta
    for r in range(customers.shape[0]):
        if customers[r] > 0:
            out += tables[r] * eta + math.lgamma(b) - math.lgamma(b + customers[r])
    return out


@kernel(cache=True)
def sample_concentration(b, customers, tables, shape, scale, rng, iterations):
    """Redraw the concentration b shared by DP restaurants with customers (R,) and tables (R,), by
    slice sampling log b (stepping out, then shrinkage; Neal 2003), as the MCMC engine samples an
    adaptor's b (3.13). Returns the new b.

    Shapes: customers (R,) int64 or float64, tables (R,) float64; rng (4,) uint64."""
    x = math.log(b)
    for _ in range(iterations):
        level = _log_target_b(x, customers, tables, shape, scale) + math.log(uniform_pos(rng))
        lo = x - uniform(rng)
        hi = lo + 1.0
        steps = 0
        while steps < 50 and _log_target_b(lo, customers, tables, shape, scale) > level:
            lo -= 1.0
            steps += 1
        steps = 0
        while steps < 50 and _log_target_b(hi, customers, tables, shape, scale) > level:
            hi += 1.0
            steps += 1
        for _ in range(200):
            candidate = lo + (hi - lo) * uniform(rng)
            if _log_target_b(candidate, customers, tables, shape, scale) > level:
                x = candidate
                break
            if candidate < x:
                lo = candidate
            else:
                hi = candidate
    return math.exp(x)


@kernel(cache=True)
def spelling_counts(spell, spell_ptr, word_tables, n_char):
    """Uses of the base's rules by the tables: (CHARS -> CHAR CHARS, CHARS -> CHAR, per character).

    Shapes: spell (P,) int32, spell_ptr (W + 1,) int64, word_tables (W,) float64; returns two floats and
    (n_char,) float64."""
    more = 0.0
    last = 0.0
    chars = np.zeros(n_char)
    for w in range(spell_ptr.shape[0] - 1):
        n = spell_ptr[w + 1] - spell_ptr[w]
        more += word_tables[w] * (n - 1)
        last += word_tables[w]
        for p in range(spell_ptr[w], spell_ptr[w + 1]):
            chars[spell[p]] += word_tables[w]
    return more, last, chars


@kernel(cache=True)
def base_probabilities(spell, spell_ptr, word_tables, prior_more, prior_last, prior_chars, out):
    """out[w] = G0(w) with the base's rule probabilities at their posterior means given the
    tables (Dirichlet priors prior_more, prior_last for the CHARS rules, prior_chars (C,) for
    CHAR -> c).

    Shapes: spell (P,) int32, spell_ptr (W + 1,) int64, word_tables (W,) float64, prior_chars (C,) float64; out
    (W,) float64, written."""
    more, last, chars = spelling_counts(spell, spell_ptr, word_tables, prior_chars.shape[0])
    l_more = math.log((prior_more + more) / (prior_more + prior_last + more + last))
    l_last = math.log((prior_last + last) / (prior_more + prior_last + more + last))
    total = prior_chars.sum() + chars.sum()
    l_char = np.log((prior_chars + chars) / total)
    for w in range(spell_ptr.shape[0] - 1):
        n = spell_ptr[w + 1] - spell_ptr[w]
        lw = (n - 1) * l_more + l_last
        for p in range(spell_ptr[w], spell_ptr[w + 1]):
            lw += l_char[spell[p]]
        out[w] = math.exp(lw)


@kernel(cache=True)
def optimize_alpha(ndk, doc_length, alpha, iterations):
    """Minka's fixed point for an asymmetric Dirichlet alpha (K,) from the documents' topic counts,
    in place: alpha_k <- alpha_k sum_d [psi(n_dk + alpha_k) - psi(alpha_k)]
                                 / sum_d [psi(n_d + alpha_0) - psi(alpha_0)].
    Each digamma difference is sum_{i < n} 1 / (x + i), so with the counts binned once (documents with
    at least n tokens, and with at least n tokens of topic k) an iteration costs K x the longest
    document instead of D x K digammas (Wallach's histogram form).

    Shapes: ndk (D, K) int32; doc_length (D,) int64; alpha (K,) float64, updated."""
    D, K = ndk.shape
    longest = 0
    for d in range(D):
        longest = max(longest, doc_length[d])
    with_topic = np.zeros((K, longest + 2))  # [k, n]: documents with exactly, then at least, n tokens of k
    with_length = np.zeros(longest + 2)
    for d in range(D):
        with_length[doc_length[d]] += 1
        for k in range(K):
            with_topic[k, ndk[d, k]] += 1
    for n in range(longest - 1, -1, -1):
        with_length[n] += with_length[n + 1]
        for k in range(K):
            with_topic[k, n] += with_topic[k, n + 1]
    new = np.empty(K)
    for _ in range(iterations):
        a0 = alpha.sum()
        den = 0.0
        for n in range(1, longest + 1):
            den += with_length[n] / (a0 + n - 1)
        for k in range(K):
            num = 0.0
            for n in range(1, longest + 1):
                if with_topic[k, n] == 0:
                    break
                num += with_topic[k, n] / (alpha[k] + n - 1)
            new[k] = max(alpha[k] * num / den, 1e-6) if den > 0 else alpha[k]
        alpha[:] = new


@kernel(cache=True)
def collapsed_log_joint(ndk, nwk, nk, alpha, b, base):
    """log p(z, w | alpha, b (K,), G0) with the documents' proportions and the topics integrated out:
    the trace of a run, and the target whose ratios `topic_weights` gives.

    Shapes: ndk (D, K) int32, nwk (W, K) int32, nk (K,) int64; alpha, b (K,) float64; base (W,) float64."""
    D, K = ndk.shape
    a0 = alpha.sum()
    out = 0.0
    for d in range(D):
        n = 0
        for k in range(K):
            if ndk[d, k] > 0:
                out += math.lgamma(ndk[d, k] + alpha[k]) - math.lgamma(alpha[k])
            n += ndk[d, k]
        out += math.lgamma(a0) - math.lgamma(n + a0)
    for k in range(K):
        out += math.lgamma(b[k]) - math.lgamma(nk[k] + b[k])
    for w in range(nwk.shape[0]):
        for k in range(K):
            if nwk[w, k] > 0:
                out += math.lgamma(nwk[w, k] + b[k] * base[w]) - math.lgamma(b[k] * base[w])
    return out


@kernel(cache=True)
def random_topics(z, n_topics, rng):
    """The sampler's starting point: every token's topic uniform at random.

    Shapes: z (N,) int32, written; rng (4,) uint64."""
    for t in range(z.shape[0]):
        z[t] = min(int(uniform(rng) * n_topics), n_topics - 1)


@kernel(cache=True)
def entries_from_counts(G, S, V, R, spell, spell_ptr, nwk, word_tables, pos, stack, need):
    """Hand a sample to the variational state: an entry of TOPIC_k for every word w with n_kw > 0,
    its f~ set to n_kw, and with a shared lexicon an entry of WORD for every word with topic tables
    (word_tables (W,)), which the topic entries reference. spell / spell_ptr: every word type's
    terminal ids. Starts at word type `pos` and returns the next one; stopping early means the
    pools need what `need` says.

    Shapes: spell (P,) int32, spell_ptr (W + 1,) int64; nwk (W, K) int32; word_tables (W,) float64; stack int32,
    room for a label's walk; need (3,) int64."""
    W, K = nwk.shape
    while pos < W:
        word = spell[spell_ptr[pos]:spell_ptr[pos + 1]]
        n = word.shape[0]
        nodes = (K + 1) * (3 * n + 2) + 8  # a spelled label per topic, or references and one lexicon label
        if not room_ok(S, nodes, K + 2, n + 1):
            need[0], need[1], need[2] = nodes, K + 2, n + 1
            return pos
        y = yield_node(S, word, 0, n, G.n_term)
        lexicon = -1
        if R.word_adaptor[0] >= 0 and word_tables[pos] > 0:
            lexicon = lexicon_entry(S, R, y)
            if lexicon < 0:
                lexicon = create_entry(G, S, V, R.word_adaptor[0], y, spelling_label(S, R, word), stack)
        for k in range(K):
            if nwk[pos, k] <= 0:
                continue
            e = S.trie_head[y]
            while e >= 0 and S.tab_adaptor[e] != R.topic_adaptor[k]:
                e = S.tab_next[e]
            if e < 0:
                e = create_entry(G, S, V, R.topic_adaptor[k], y, derivation_label(S, R, k, word, lexicon), stack)
            V.ft[e] = nwk[pos, k]
        if lexicon >= 0:  # its customers are the topics' tables; each topic entry's reference counts one
            V.ft[lexicon] = max(0.0, word_tables[pos] - S.tab_count[lexicon])
        pos += 1
    return pos


@kernel(cache=True)
def sample_document_topics(weights, alpha, sweeps, rng, theta):
    """E[theta] of one new document with the topics fixed, by collapsed Gibbs sampling of its tokens'
    topics: weights (T, K) are P_k(w_t) up to a factor per token; the tokens are seated one by one
    from their conditional, then `sweeps` sweeps redraw them, and theta (K,) gets the mean of
    (n_k + alpha_k) / (T + alpha_0) over the second half of the sweeps (the first is burn-in).

    Shapes: weights (T, K) float64; alpha (K,) float64; rng (4,) uint64; theta (K,) float64, written."""
    T, K = weights.shape
    a0 = alpha.sum()
    z = np.empty(T, np.int64)
    n = np.zeros(K)
    cumulative = np.empty(K)
    theta[:] = 0.0
    kept = 0
    for s in range(sweeps + 1):
        for t in range(T):
            if s > 0:
                n[z[t]] -= 1.0
            total = 0.0
            for k in range(K):
                total += (n[k] + alpha[k]) * weights[t, k]
                cumulative[k] = total
            k = draw_index(cumulative, uniform(rng) * total)
            z[t] = k
            n[k] += 1.0
        if 2 * s > sweeps or sweeps == 0:
            for k in range(K):
                theta[k] += (n[k] + alpha[k]) / (T + a0)
            kept += 1
    for k in range(K):
        theta[k] /= kept


@kernel(cache=True)
def infer_documents_gibbs(G, S, V, R, chars, tok_ptr, doc_ptr, alpha, sweeps, seed, thetas, phis, logliks):
    """E[theta] of every document (thetas (D, K)) by `sample_document_topics`, in parallel; phis
    (tokens, K) are the tokens' topic distributions given it, logliks (D,) sum_t log sum_k theta_k
    P_k(w_t). A document's random stream comes from `seed` and its own text, so it gets the same
    theta whichever documents are inferred with it and on however many threads.

    Shapes: chars, tok_ptr, doc_ptr, alpha as in `topics.infer_documents`; seed an integer; thetas (D, K), phis
    (tokens, K) and logliks (D,) float64, written."""
    G, S, V, R = borrowed((G, S, V, R))
    _infer_gibbs_parallel(G, S, V, R, chars, tok_ptr, doc_ptr, alpha, sweeps, np.uint64(seed), thetas, phis,
                          logliks)


@kernel(cache=True)
def text_seed(seed, chars, tok_ptr, t0, t1):
    """A 64-bit seed from `seed` and the characters of tokens t0..t1 (token boundaries included).

    Shapes: chars (characters,) int32 and tok_ptr (tokens + 1,) int64, as in `topics.infer_documents`."""
    x = seed
    for t in range(t0, t1):
        for p in range(tok_ptr[t], tok_ptr[t + 1]):
            x = splitmix64(x + np.uint64(chars[p]) + np.uint64(1))
        x = splitmix64(x ^ np.uint64(0x9E3779B97F4A7C15))
    return x


@kernel(cache=True, parallel=True)
def _infer_gibbs_parallel(G, S, V, R, chars, tok_ptr, doc_ptr, alpha, sweeps, seed, thetas, phis, logliks):
    """`infer_documents_gibbs`' parallel loop over the documents.

    Shapes: as `infer_documents_gibbs`, seed a uint64."""
    for d in prange(doc_ptr.shape[0] - 1):
        t0, t1 = doc_ptr[d], doc_ptr[d + 1]
        logp, _ = document_word_weights(G, S, V, R, chars, tok_ptr, t0, t1)
        weights, top = relative_weights(logp)
        rng = seeded_rng(text_seed(seed, chars, tok_ptr, t0, t1))
        sample_document_topics(weights, alpha, sweeps, rng, thetas[d])
        loglik = 0.0
        for t in range(t1 - t0):
            z = 0.0
            for k in range(alpha.shape[0]):
                phis[t0 + t, k] = thetas[d, k] * weights[t, k]
                z += phis[t0 + t, k]
            for k in range(alpha.shape[0]):
                phis[t0 + t, k] /= z
            loglik += top[t] + math.log(z)
        logliks[d] = loglik
