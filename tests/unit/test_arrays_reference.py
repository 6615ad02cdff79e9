"""docs/arrays.md is what scripts/arrays_reference.py writes, and its tables match the arrays the code allocates."""
from __future__ import annotations

import importlib.util
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from spacy_ag.core.compiled import CompiledGrammar
from spacy_ag.runs.sharded_estep import Draws
from spacy_ag.core.grammatons import Variational, fit_capacity, new_variational
from spacy_ag.core.rng import make_rng
from spacy_ag.core.sampler import Workspace, need_nodes
from spacy_ag.core.chart import chart_block, chart_rows, chart_width
from spacy_ag.core.state import State, grow, new_state
from spacy_ag.core.topic_draws import TopicRules
from spacy_ag.grammar.reader import parse_grammar_text
from spacy_ag.topics.topic_grammar import topic_grammar
from spacy_ag.topics.topic_model import topic_rules

REPO = Path(__file__).resolve().parents[2]

# pseudo symbols (the terminals inside longer rules), intermediate symbols (shared prefixes of
# long rules), unary chains, two adaptors, an unbounded suffix chain and a max_span
GRAMMAR = """\
1 1 S --> Words
1 1 Words --> Word
1 1 Words --> Word Words
Word --> Syl
Word --> Syl x Syl y
Word --> Syl x Syl Syl
@ Word max_span=6
Syl --> C
Syl --> C V
1 1 C --> b
1 1 C --> d
1 1 V --> a
"""


def _generator():
    spec = importlib.util.spec_from_file_location("arrays_reference", REPO / "scripts" / "arrays_reference.py")
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


GEN = _generator()


def table_of(path: str, owner=None, index: int = 0):
    structure = next(s for s in GEN.STRUCTURES if s.path == path and s.owner == owner)
    return GEN.tables(structure)[index]


def check(rows, fields, value_of, symbols):
    """Each row's field, in order, with the dtype and the shape (evaluated over `symbols`) of its value."""
    assert [r.field for r in rows] == list(fields)
    for r in rows:
        value = value_of(r.field)
        if r.shape == "scalar":
            assert isinstance(value, (int, np.integer)) and r.dtype == "int", r.field
            continue
        assert value.dtype == np.dtype(r.dtype), (r.field, value.dtype, r.dtype)
        assert value.shape == eval(r.shape, {}, dict(symbols)), (r.field, value.shape, r.shape)


def test_committed_reference_is_up_to_date():
    committed = (REPO / "docs" / "arrays.md").read_text(encoding="utf8")
    assert committed == GEN.render(), "docs/arrays.md is out of date: run python scripts/arrays_reference.py"


def test_check_mode_agrees_with_the_committed_file():
    done = subprocess.run([sys.executable, str(REPO / "scripts" / "arrays_reference.py"), "--check"],
                          capture_output=True, text=True, cwd=REPO)
    assert done.returncode == 0, done.stderr


def test_a_table_survives_formatting():
    rows = table_of("spacy_ag/core/state.py")
    assert GEN.parse_table(GEN.format_table(rows).split("\n")) == rows


def test_a_misaligned_table_line_is_refused():
    with pytest.raises(ValueError, match="out of its columns"):
        GEN.parse_table(["    field  shape  dtype  meaning", "    ab     (N,)  int8   x"])


def compiled_grammar():
    return CompiledGrammar(parse_grammar_text(GRAMMAR, fmt="pycfg"))


def grammar_symbols(compiled):
    G = compiled.arrays
    rules = compiled.grammar.rules
    kinds = G.sym_kind
    return dict(
        R=len(rules), C=sum(len(r.children) for r in rules), n_nt=G.n_nt, n_sym=G.n_sym, n_term=G.n_term,
        A=len(compiled.adapted),
        L=sum(len(r.children) == 1 and r.children[0] in compiled.term_index for r in rules) + int((kinds == 1).sum()),
        U=sum(len(r.children) == 1 and r.children[0] in compiled.nt_index for r in rules),
        B=sum(len(r.children) >= 2 for r in rules) + int((kinds == 2).sum()),
        n_suffix=int(G.sym_suffix.sum()),
    )


def test_grammar_arrays_table():
    compiled = compiled_grammar()
    G = compiled.arrays
    assert (G.sym_kind == 1).any() and (G.sym_kind == 2).any() and G.band > 0  # every kind of symbol, banded
    check(table_of("spacy_ag/core/compiled.py"), G._fields, lambda f: getattr(G, f), grammar_symbols(compiled))


def test_state_table_before_and_after_growing():
    compiled = compiled_grammar()
    G = compiled.arrays
    a, b = compiled.adaptor_params()
    S = new_state(G.rule_parent.shape[0], G.n_nt, len(a), 5, a, b, make_rng(1), node_cap=100, tab_cap=40, trie_cap=60)
    rows = table_of("spacy_ag/core/state.py")
    for state in (S, grow(S, 500, 70, 200, G.n_term)):
        symbols = dict(N=state.node_kind.shape[0], T=state.tab_count.shape[0], Y=state.trie_parent.shape[0],
                       H=state.ht_key.shape[0], A=len(a), R=G.rule_parent.shape[0], n_nt=G.n_nt, D=5)
        check(rows, State._fields, lambda f: getattr(state, f), symbols)
    assert state.node_kind.shape[0] > 100 and state.ht_key.shape[0] > S.ht_key.shape[0]


def test_variational_table_before_and_after_fitting_the_pool():
    compiled = compiled_grammar()
    G = compiled.arrays
    rows = table_of("spacy_ag/core/grammatons.py")
    for T in (16, 100):
        V = fit_capacity(new_variational(G.rule_alpha, G.adaptor_nt.shape[0], 16), T)
        check(rows, Variational._fields, lambda f: getattr(V, f), dict(T=T, R=G.rule_parent.shape[0],
                                                                       A=G.adaptor_nt.shape[0]))


def test_topic_rules_table():
    compiled = CompiledGrammar(topic_grammar(3, "abc", word_adapted=True))
    R = topic_rules(compiled)
    check(table_of("spacy_ag/core/topic_draws.py"), TopicRules._fields, lambda f: getattr(R, f),
          dict(K=3, A=len(compiled.adapted), n_term=len(compiled.terminals)))


def test_workspace_table():
    compiled = compiled_grammar()
    G = compiled.arrays
    max_len = 9
    ws = Workspace(compiled, max_len)
    rows = table_of("spacy_ag/core/sampler.py", "Workspace")
    symbols = dict(max_len=max_len, R=G.rule_parent.shape[0], n_sym=G.n_sym, W=int(chart_width(G, max_len)),
                   M=int(need_nodes(G, max_len, compiled.max_unary_chain)) + 8,
                   C=int(chart_rows(G, max_len, chart_block(G, max_len))), V=int(ws.window[2]))
    check(rows, list(vars(ws)), lambda f: getattr(ws, f), symbols)


def test_draws_table_names_its_fields():
    assert [r.field for r in table_of("spacy_ag/runs/sharded_estep.py", "Draws")] == list(Draws._fields)
