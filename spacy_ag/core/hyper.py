"""Log posterior of the state (3.14) and slice sampling of a and b (3.13)."""
import math

import numpy as np
from ..kernel_environment import kernel

from .borrowed import borrowed
from .rng import uniform, uniform_pos
from .state import OPEN, TAB_HWM


@kernel(cache=True)
def size_histogram(S, ad):
    """(sizes, multiplicities) of the open tables of adaptor `ad`.

    Shapes: returns sizes (n_sizes,) int64, the distinct customer counts in rising order, and mult (n_sizes,)
    int64, how many tables have each."""
    max_size = 0
    for k in range(S.counters[TAB_HWM]):
        if S.tab_state[k] == OPEN and S.tab_adaptor[k] == ad and S.tab_count[k] > max_size:
            max_size = S.tab_count[k]
    hist = np.zeros(max_size + 1, np.int64)
    for k in range(S.counters[TAB_HWM]):
        if S.tab_state[k] == OPEN and S.tab_adaptor[k] == ad:
            hist[S.tab_count[k]] += 1
    n_sizes = 0
    for s in range(max_size + 1):
        if hist[s] > 0:
            n_sizes += 1
    sizes = np.empty(n_sizes, np.int64)
    mult = np.empty(n_sizes, np.int64)
    n_sizes = 0
    for s in range(max_size + 1):
        if hist[s] > 0:
            sizes[n_sizes] = s
            mult[n_sizes] = hist[s]
            n_sizes += 1
    return sizes, mult


@kernel(cache=True)
def _log_rising_tables(m, a, b):
    """sum_{k=0}^{m-1} log(b + k a)."""
    if m <= 2000 or a < 1e-8:
        t = 0.0
        for k in range(m):
            t += math.log(b + k * a)
        return t
    return m * math.log(a) + math.lgamma(m + b / a) - math.lgamma(b / a)


@kernel(cache=True)
def _log_table_sizes(sizes, mult, a):
    """sum over tables of sum_{j=1}^{n_k - 1} log(j - a).

    Shapes: sizes, mult (n_sizes,) int64 (`size_histogram`)."""
    t = 0.0
    for i in range(sizes.shape[0]):
        n = sizes[i]
        if n <= 30:
            v = 0.0
            for j in range(1, n):
                v += math.log(j - a)
        else:
            v = math.lgamma(n - a) - math.lgamma(1.0 - a)
        t += mult[i] * v
    return t


@kernel(cache=True)
def log_seating(sizes, mult, a, b):
    """log PY(seating | a, b) of one restaurant (1.2).

    Shapes: sizes, mult (n_sizes,) int64 (`size_histogram`)."""
    m = 0
    n = 0
    for i in range(sizes.shape[0]):
        m += mult[i]
        n += mult[i] * sizes[i]
    if n == 0:
        return 0.0
    return (_log_rising_tables(m, a, b) + _log_table_sizes(sizes, mult, a)
            + math.lgamma(b) - math.lgamma(b + n))


@kernel(cache=True)
def log_beta_pdf(x, e, f):
    """log density of Beta(e, f) at x in (0, 1): the prior of a discount a."""
    return ((e - 1.0) * math.log(x) + (f - 1.0) * math.log(1.0 - x)
            + math.lgamma(e + f) - math.lgamma(e) - math.lgamma(f))


@kernel(cache=True)
def log_gamma_pdf(x, shape, scale):
    """log density of Gamma(shape, scale) at x > 0: the prior of a concentration b."""
    return (shape - 1.0) * math.log(x) - x / scale - shape * math.log(scale) - math.lgamma(shape)


@kernel(cache=True)
def log_rules(G, S, collapsed):
    """The rule part of the log posterior: collapsed Dirichlet-multinomial or fixed theta."""
    t = 0.0
    if collapsed:
        for A in range(G.n_nt):
            t += math.lgamma(G.nt_alpha_sum[A]) - math.lgamma(G.nt_alpha_sum[A] + S.fA[A])
        for r in range(G.rule_parent.shape[0]):
            t += math.lgamma(G.rule_alpha[r] + S.f[r]) - math.lgamma(G.rule_alpha[r])
    else:
        for r in range(G.rule_parent.shape[0]):
            if S.f[r] > 0:
                t += S.f[r] * math.log(G.rule_theta[r])
    return t


@kernel(cache=True)
def log_posterior(G, S, collapsed):
    """log P(analyses | alpha, a, b) (3.14)."""
    G, S = borrowed((G, S))
    t = log_rules(G, S, collapsed)
    for ad in range(S.ad_a.shape[0]):
        sizes, mult = size_histogram(S, ad)
        t += log_seating(sizes, mult, S.ad_a[ad], S.ad_b[ad])
    return t


@kernel(cache=True)
def _target_a(sizes, mult, a, b, e, f):
    """The slice sampler's target for a: log PY(seating | a, b) + log Beta(a | e, f); -inf outside (0, 1).

    Shapes: sizes, mult (n_sizes,) int64 (`size_histogram`)."""
    if a <= 0.0 or a >= 1.0:
        return -np.inf
    return log_seating(sizes, mult, a, b) + log_beta_pdf(a, e, f)


@kernel(cache=True)
def _target_log_b(sizes, mult, a, eta, shape, scale):
    """The slice sampler's target for eta = log b: log PY(seating | a, b) + log Gamma(b | shape, scale) + eta (the
    Jacobian of b = exp(eta)); -inf where b underflows or overflows.

    Shapes: sizes, mult (n_sizes,) int64 (`size_histogram`)."""
    b = math.exp(eta)
    if b <= 1e-20 or not np.isfinite(b):
        return -np.inf
    return log_seating(sizes, mult, a, b) + log_gamma_pdf(b, shape, scale) + eta


@kernel(cache=True)
def _slice_a(rng, sizes, mult, a, b, e, f, iterations):
    """Stepping-out and shrinkage slice sampler (Neal 2003) on (0, 1).

    Shapes: rng (4,) uint64; sizes, mult (n_sizes,) int64 (`size_histogram`)."""
    x = a
    for _ in range(iterations):
        logy = _target_a(sizes, mult, x, b, e, f) + math.log(uniform_pos(rng))
        w = 0.1
        lo = x - w * uniform(rng)
        hi = lo + w
        while lo > 0.0 and _target_a(sizes, mult, lo, b, e, f) > logy:
            lo -= w
        while hi < 1.0 and _target_a(sizes, mult, hi, b, e, f) > logy:
            hi += w
        lo = max(lo, 0.0)
        hi = min(hi, 1.0)
        for _ in range(200):
            cand = lo + (hi - lo) * uniform(rng)
            if _target_a(sizes, mult, cand, b, e, f) > logy:
                x = cand
                break
            if cand < x:
                lo = cand
            else:
                hi = cand
    return x


@kernel(cache=True)
def _slice_log_b(rng, sizes, mult, a, b, shape, scale, iterations):
    """The same slice sampler on eta = log b (no lower bound to hit).

    Shapes: rng (4,) uint64; sizes, mult (n_sizes,) int64 (`size_histogram`)."""
    x = math.log(b)
    for _ in range(iterations):
        logy = _target_log_b(sizes, mult, a, x, shape, scale) + math.log(uniform_pos(rng))
        w = 1.0
        lo = x - w * uniform(rng)
        hi = lo + w
        steps = 0
        while steps < 50 and _target_log_b(sizes, mult, a, lo, shape, scale) > logy:
            lo -= w
            steps += 1
        steps = 0
        while steps < 50 and _target_log_b(sizes, mult, a, hi, shape, scale) > logy:
            hi += w
            steps += 1
        for _ in range(200):
            cand = lo + (hi - lo) * uniform(rng)
            if _target_log_b(sizes, mult, a, cand, shape, scale) > logy:
                x = cand
                break
            if cand < x:
                lo = cand
            else:
                hi = cand
    return math.exp(x)


@kernel(cache=True)
def sample_hyperparameters(S, sample_a, beta_e, beta_f, gamma_shape, gamma_scale, rounds, iterations):
    """py-cfg's schedule: `rounds` of (b, a), then b once more, per adaptor with customers."""
    S = borrowed(S)
    for ad in range(S.ad_a.shape[0]):
        if S.ad_n[ad] == 0:
            continue
        sizes, mult = size_histogram(S, ad)
        a = S.ad_a[ad]
        b = S.ad_b[ad]
        do_a = sample_a and a > 0.0
        for _ in range(rounds):
            b = _slice_log_b(S.rng, sizes, mult, a, b, gamma_shape, gamma_scale, iterations)
            if do_a:
                a = _slice_a(S.rng, sizes, mult, a, b, beta_e, beta_f, iterations)
        b = _slice_log_b(S.rng, sizes, mult, a, b, gamma_shape, gamma_scale, iterations)
        S.ad_a[ad] = a
        S.ad_b[ad] = b


@kernel(cache=True)
def log_hyper_prior(S, sample_a, beta_e, beta_f, gamma_shape, gamma_scale):
    """log prior of every adaptor's hyperparameters: Beta(beta_e, beta_f) of a (when a is sampled and positive) and
    Gamma(gamma_shape, gamma_scale) of b, the trace's `log_prior`."""
    t = 0.0
    for ad in range(S.ad_a.shape[0]):
        if sample_a and S.ad_a[ad] > 0.0:
            t += log_beta_pdf(S.ad_a[ad], beta_e, beta_f)
        t += log_gamma_pdf(S.ad_b[ad], gamma_shape, gamma_scale)
    return t
