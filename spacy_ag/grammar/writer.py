"""Write a `Grammar` as plain py-cfg text (docs/algorithms.md 1.7.1).

The output is what py-cfg itself reads (no comments, shorthand already
expanded) and reading it back with `read_grammar` gives an equivalent grammar
whatever `-a`/`-b` defaults the reader uses: every line states its weight, and
its parent's a (and b when adapted), so nothing depends on defaults.
"""
from __future__ import annotations

from typing import List

from ..errors import Errors
from .reader import ARROW, is_number_token, shorthand_item
from .rules import Grammar, GrammarError, Rule


def write_pycfg(grammar: Grammar, *, include_options: bool = False) -> str:
    """The grammar as py-cfg lines `w a b Parent --> children`.

    The start symbol's rules come first (py-cfg takes the first parent as the
    start). Adaptor options such as K have no py-cfg field; with
    `include_options` they are appended as `@ NT key=value` directives, which
    only our reader understands. An unexpanded `[:corpus:]` rule is written
    as is (also ours only).
    """
    _check_writable(grammar)
    ordered = [r for r in grammar.rules if r.parent == grammar.start]
    ordered += [r for r in grammar.rules if r.parent != grammar.start]
    lines = [_rule_line(grammar, rule) for rule in ordered]
    if include_options:
        lines += _directive_lines(grammar)
    return "\n".join(lines) + "\n"


def _number(value: float) -> str:
    """Shortest text that reads back as the same float ("1", "0.1", "1e-05")."""
    if float(value).is_integer() and abs(value) < 1e15:
        return str(int(value))
    return repr(float(value))


def _rule_line(grammar: Grammar, rule: Rule) -> str:
    adaptor = grammar.adaptors.get(rule.parent)
    fields = [_number(rule.weight)]
    fields += [_number(adaptor.a), _number(adaptor.b)] if adaptor else ["1"]
    return " ".join(fields + [rule.parent, ARROW] + list(rule.children))


def _directive_lines(grammar: Grammar) -> List[str]:
    lines = []
    for symbol, adaptor in grammar.adaptors.items():
        if adaptor.options:
            settings = " ".join(f"{key}={_number(value)}" for key, value in adaptor.options.items())
            lines.append(f"@ {symbol} {settings}")
    return lines


def _check_writable(grammar: Grammar) -> None:
    """Refuse symbols that py-cfg text cannot carry or that would read back
    as something else (a number as parent, a terminal that looks like shorthand)."""
    parents = set(grammar.nonterminals)
    for rule in grammar.rules:
        for symbol in (rule.parent,) + rule.children:
            if not symbol or any(char.isspace() for char in symbol) or symbol.startswith(ARROW):
                raise GrammarError(Errors.E346.format(symbol=symbol), grammar.path)
        if is_number_token(rule.parent):
            raise GrammarError(Errors.E345.format(parent=rule.parent),
                               grammar.path)
        for child in rule.children:
            if child not in parents and _reads_as_shorthand(child, parents):
                raise GrammarError(Errors.E347.format(child=child), grammar.path)


def _reads_as_shorthand(token: str, parents: set) -> bool:
    symbol, optional = shorthand_item(token, parents)
    return optional or (symbol.endswith("+") and symbol[:-1] in parents)
