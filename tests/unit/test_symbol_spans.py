"""Symbol spans by widest paths and strongly connected components: the same answer as the fixed-point rounds
they replace (quadratic), on random grammars with recursion of every kind and on a deep 40,000-rule grammar.
Their time against the grammar's size is measured by benchmarks/grammar_compile.py."""
import random

from spacy_ag.core.compiled import NO_SPAN_LIMIT, symbol_spans


def rounds_oracle(n_sym, start, lex, unary, binary, limits):
    """The former definition: relax every rule until nothing changes; still growing after n_sym
    rounds means recursion (quadratic, but plainly the fixed point)."""
    down = [0] * n_sym
    down[start] = limits.get(start, NO_SPAN_LIMIT)
    edges = [(p, c) for p, c, _ in unary] + [(p, c) for p, l, r, _ in binary for c in (l, r)]
    changed = True
    while changed:
        changed = False
        for p, c in edges:
            value = min(limits.get(c, NO_SPAN_LIMIT), max(down[c], down[p]))
            if value > down[c]:
                down[c], changed = value, True
    up = [0] * n_sym
    for _, p, _ in lex:
        up[p] = 1
    for round_ in range(3 * n_sym + 3):
        grown = set()
        for p, c, _ in unary:
            if up[c] > up[p]:
                up[p] = up[c]
                grown.add(p)
        for p, l, r, _ in binary:
            value = min(NO_SPAN_LIMIT, up[l] + up[r])
            if value > up[p]:
                up[p] = value
                grown.add(p)
        if not grown:
            break
        if round_ >= n_sym:
            for x in grown:
                up[x] = NO_SPAN_LIMIT
    return [min(d, u) for d, u in zip(down, up)], up


def random_grammar(rng, n_sym):
    lex = [(0, p, 0) for p in range(n_sym) if rng.random() < 0.3]
    unary = [(rng.randrange(n_sym), rng.randrange(n_sym), 0) for _ in range(rng.randrange(2 * n_sym))]
    binary = [(rng.randrange(n_sym), rng.randrange(n_sym), rng.randrange(n_sym), 0)
              for _ in range(rng.randrange(2 * n_sym))]
    limits = {s: rng.randrange(1, 9) for s in range(n_sym) if rng.random() < 0.3}
    return lex, unary, binary, limits


def test_spans_equal_the_fixed_point_on_random_recursive_grammars():
    rng = random.Random(7)
    kinds = set()
    for case in range(3000):
        n_sym = rng.randrange(1, 12)
        lex, unary, binary, limits = random_grammar(rng, n_sym)
        start = rng.randrange(n_sym)
        expected = rounds_oracle(n_sym, start, lex, unary, binary, limits)
        assert symbol_spans(n_sym, start, lex, unary, binary, limits) == expected, (case, n_sym, start, lex,
                                                                                    unary, binary, limits)
        kinds.update("unbounded" if u == NO_SPAN_LIMIT else "zero" if u == 0 else "bounded" for u in expected[1])
    assert kinds == {"unbounded", "zero", "bounded"}  # the cases really cover recursion and dead symbols


def test_a_deep_grammar_of_40000_rules():
    # a chain of 20,000 symbols, each with a lexical rule and a binary rule over the next: deep, no recursion
    n_sym = 20_001
    lex = [(0, p, 0) for p in range(n_sym)]
    binary = [(p, p + 1, n_sym - 1, 0) for p in range(n_sym - 1)]
    unary = [(p, p + 1, 0) for p in range(n_sym - 1)]
    spans, built = symbol_spans(n_sym, 0, lex, unary, binary, {0: 50})
    assert built[n_sym - 1] == 1 and built[0] == n_sym and spans[0] == 50
