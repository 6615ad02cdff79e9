"""Newton steps for the variational hyperparameters (docs/algorithms.md 4.8).

Run after each pruning: the Dirichlet pseudo-counts alpha of every
nonterminal, the concentration b of every adaptor and, on request, the
discount a. Each maximises the part of the ELBO that involves it with q
fixed; steps are halved until the parameters stay in their domain.
"""

import numpy as np
from ..kernel_environment import kernel

from .expectations import digamma, expected_log_theta
from .variational import stick_parameters


@kernel(cache=True)
def trigamma(x):
    """psi'(x) for x > 0: recurrence up to x >= 12, then the asymptotic series."""
    acc = 0.0
    while x < 12.0:
        acc += 1.0 / (x * x)
        x += 1.0
    inv = 1.0 / x
    inv2 = inv * inv
    return acc + inv + 0.5 * inv2 + inv * inv2 * (1.0 / 6 - inv2 * (1.0 / 30 - inv2 * (1.0 / 42 - inv2 / 30)))


@kernel(cache=True)
def update_alpha(G, V, iterations, fixed):
    """Newton steps on the alpha of every nonterminal A with fixed[A] false (diagonal plus
    rank-one Hessian, inverted exactly).

    Shapes: fixed (n_nt,) bool."""
    n_rules = V.alpha.shape[0]
    elog = np.empty(n_rules)
    expected_log_theta(V.gamma, G.rule_parent, G.n_nt, elog)
    by_parent = np.argsort(G.rule_parent, kind="mergesort")
    ptr = np.zeros(G.n_nt + 1, np.int64)
    for r in range(n_rules):
        ptr[G.rule_parent[r] + 1] += 1
    for A in range(G.n_nt):
        ptr[A + 1] += ptr[A]
    for A in range(G.n_nt):
        if fixed[A]:
            continue
        rules = by_parent[ptr[A]:ptr[A + 1]]
        if rules.shape[0] < 2:
            continue
        for _ in range(iterations):
            total = 0.0
            for r in rules:
                total += V.alpha[r]
            z = trigamma(total)
            grad = np.empty(rules.shape[0])
            q = np.empty(rules.shape[0])
            sum_gq = 0.0
            sum_invq = 0.0
            for p in range(rules.shape[0]):
                r = rules[p]
                grad[p] = digamma(total) - digamma(V.alpha[r]) + elog[r]
                q[p] = -trigamma(V.alpha[r])
                sum_gq += grad[p] / q[p]
                sum_invq += 1.0 / q[p]
            c = sum_gq / (1.0 / z + sum_invq)
            step = 1.0
            while step > 1e-8:
                ok = True
                for p in range(rules.shape[0]):
                    if V.alpha[rules[p]] - step * (grad[p] - c) / q[p] <= 0.0:
                        ok = False
                        break
                if ok:
                    break
                step *= 0.5
            change = 0.0
            for p in range(rules.shape[0]):
                delta = step * (grad[p] - c) / q[p]
                V.alpha[rules[p]] -= delta
                change = max(change, abs(delta) / V.alpha[rules[p]])
            if change < 1e-6:
                break


@kernel(cache=True)
def _log1m_expectations(S, V, ad, corr):
    """E_q[log V_i] and E_q[log(1 - V_i)] of the sticks of adaptor `ad`, in stick order.

    Shapes: returns two (entries of `ad`,) float64."""
    _, nu1, nu2 = stick_parameters(S, V, ad, corr)
    m = nu1.shape[0]
    elog_v = np.empty(m)
    elog_1mv = np.empty(m)
    for p in range(m):
        t = digamma(nu1[p] + nu2[p])
        elog_v[p] = digamma(nu1[p]) - t
        elog_1mv[p] = digamma(nu2[p]) - t
    return elog_v, elog_1mv


@kernel(cache=True)
def update_concentration(S, V, ad, corr, iterations):
    """Newton on b_c: d/db = sum_i psi(1+b+(i-1)a) - psi(b+ia) + E log(1-V_i)."""
    elog_v, elog_1mv = _log1m_expectations(S, V, ad, corr)
    m = elog_v.shape[0]
    if m == 0:
        return
    a = S.ad_a[ad]
    b = S.ad_b[ad]
    for _ in range(iterations):
        g = 0.0
        h = 0.0
        for p in range(m):
            i = p + 1
            g += digamma(1.0 + b + (i - 1) * a) - digamma(b + i * a) + elog_1mv[p]
            h += trigamma(1.0 + b + (i - 1) * a) - trigamma(b + i * a)
        if h >= 0.0:  # not concave here: a gradient step instead
            step = g * b * 0.1
        else:
            step = -g / h
        while b + step <= 0.0:
            step *= 0.5
        b += step
        if abs(step) < 1e-8 * b:
            break
    S.ad_b[ad] = b


@kernel(cache=True)
def _discount_derivative(a, b, elog_v, elog_1mv):
    """The derivative in a of the discount's part of the ELBO (4.8), at discount a and concentration b.

    Shapes: elog_v, elog_1mv (m,) float64 (`_log1m_expectations`)."""
    g = 0.0
    for p in range(elog_v.shape[0]):
        i = p + 1
        g += ((i - 1) * digamma(1.0 + b + (i - 1) * a) + digamma(1.0 - a) - i * digamma(b + i * a)
              - elog_v[p] + i * elog_1mv[p])
    return g


@kernel(cache=True)
def update_discount(S, V, ad, corr, iterations):
    """The discount a_c in [0, 1) where the derivative of 4.8 vanishes (bisection: it is monotone
    in practice; at the bounds the maximum sits on the boundary)."""
    elog_v, elog_1mv = _log1m_expectations(S, V, ad, corr)
    m = elog_v.shape[0]
    if m == 0:
        return
    b = S.ad_b[ad]
    lo, hi = 0.0, 0.999
    a = S.ad_a[ad]

    if b <= 0.0:
        lo = -b + 1e-6
        if lo >= hi:
            return
    d_lo = _discount_derivative(lo, b, elog_v, elog_1mv)
    d_hi = _discount_derivative(hi, b, elog_v, elog_1mv)
    if d_lo <= 0.0:
        a = lo
    elif d_hi >= 0.0:
        a = hi
    else:
        for _ in range(iterations):
            mid = 0.5 * (lo + hi)
            if _discount_derivative(mid, b, elog_v, elog_1mv) > 0.0:
                lo = mid
            else:
                hi = mid
        a = 0.5 * (lo + hi)
    S.ad_a[ad] = a
