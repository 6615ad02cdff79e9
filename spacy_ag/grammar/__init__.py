"""Grammar files: the model (`rules`), reading (`reader`), checks and writing.

`describe` summarises a grammar for the `check-grammar` command and for logs,
so a user can see at a glance which nonterminals are adapted and with which
parameters before spending hours on a run.
"""
from __future__ import annotations

from typing import Any, Dict

from .checks import corpus_alphabet, has_corpus_class, require_expanded, validate
from .reader import detect_format, expand_corpus_class, parse_grammar_text, read_grammar
from .rules import (CORPUS_CLASS, Adaptor, Grammar, GrammarError, Rule, category_names, check_categories,
                    with_max_span)
from .writer import write_pycfg

__all__ = [
    "Adaptor",
    "CORPUS_CLASS",
    "Grammar",
    "GrammarError",
    "Rule",
    "category_names",
    "check_categories",
    "corpus_alphabet",
    "describe",
    "detect_format",
    "expand_corpus_class",
    "has_corpus_class",
    "parse_grammar_text",
    "read_grammar",
    "require_expanded",
    "validate",
    "with_max_span",
    "write_pycfg",
]


def describe(grammar: Grammar) -> Dict[str, Any]:
    """A JSON-ready summary: start, nonterminals, adapted ones with a/b (and
    options such as K), terminal count and rule counts per parent."""
    rules_per_parent: Dict[str, int] = {symbol: 0 for symbol in grammar.nonterminals}
    for rule in grammar.rules:
        rules_per_parent[rule.parent] += 1
    terminals = [t for t in grammar.terminals if t != CORPUS_CLASS]
    return {
        "path": grammar.path,
        "start": grammar.start,
        "nonterminals": grammar.nonterminals,
        "adapted": {
            symbol: {"a": adaptor.a, "b": adaptor.b, **adaptor.options}
            for symbol, adaptor in grammar.adaptors.items()
        },
        "terminals": len(terminals),
        "corpus_class": has_corpus_class(grammar),
        "rules": len(grammar.rules),
        "rules_per_parent": rules_per_parent,
    }
