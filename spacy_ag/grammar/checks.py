"""Checks that a `Grammar` describes a model the samplers can use.

The reader calls `validate` on every grammar it builds (structure); users call
it again with their corpus (coverage), because a character that no rule can
produce makes a sentence unparseable and should be reported before training
rather than as a zero-probability parse hours later. Every failure is one
`GrammarError` line: file, line, problem and fix (docs/algorithms.md 1.5, 1.7, 3.4).
"""
from __future__ import annotations

import difflib
import math
from collections import deque
from typing import Dict, Iterable, Iterator, List, Optional, Set, Tuple

from ..errors import Errors
from .rules import CORPUS_CLASS, Grammar, GrammarError, Rule

MODES = ("chars", "tokens")
_MAX_LISTED = 5


def validate(
    grammar: Grammar,
    corpus_lines: Optional[Iterable[str]] = None,
    corpus_path: Optional[str] = None,
    *,
    mode: str = "chars",
) -> Grammar:
    """Raise `GrammarError` for the first mistake found; return the grammar.

    Without a corpus only the structure is checked. With `corpus_lines` and/or
    `corpus_path` (lines are read from the path when not given; the path then
    only names them in messages) every corpus terminal must be produced by
    some rule. `mode` is "chars" (each non-whitespace code point is a
    terminal) or "tokens" (whitespace-separated tokens).
    """
    check_structure(grammar)
    if corpus_lines is not None or corpus_path is not None:
        check_coverage(grammar, corpus_lines, corpus_path, mode=mode)
    return grammar


# --------------------------------------------------------------------- helpers


def _fail(grammar: Grammar, message: str, rule: Optional[Rule] = None) -> GrammarError:
    """Build the error for `message`, located at `rule` when there is one."""
    path = (rule.source if rule is not None else None) or grammar.path or "<grammar>"
    line = rule.line if rule is not None and rule.line > 0 else None
    return GrammarError(message, path, line)


def _first_rule(grammar: Grammar, symbol: str) -> Optional[Rule]:
    return next((rule for rule in grammar.rules if rule.parent == symbol), None)


def _listing(names: List[str]) -> str:
    """A short comma list for messages, so they stay on one readable line."""
    shown = ", ".join(names[:_MAX_LISTED])
    return shown + (f" and {len(names) - _MAX_LISTED} more" if len(names) > _MAX_LISTED else "")


# ------------------------------------------------------------------ spelling

#: How similar (difflib ratio) a symbol must be to a nonterminal for a hint.
_HINT_CUTOFF = 0.75


def shorthand_core(token: str) -> str:
    """`token` without shorthand decoration: `(Y)`, `(Y+)`, `Y+`, `Y*`, `Y?` -> `Y`."""
    core = token
    if len(core) > 2 and core[0] == "(" and core[-1] == ")":
        core = core[1:-1]
    if len(core) > 1 and core[-1] in "+*?":
        core = core[:-1]
    return core


def _user_names(nonterminals: Iterable[str]) -> List[str]:
    """Nonterminals a user can mean: not the `Y+` dummies of the shorthand."""
    return [symbol for symbol in nonterminals if not symbol.endswith("+")]


def close_nonterminal(symbol: str, nonterminals: Iterable[str]) -> Optional[str]:
    """The nonterminal `symbol` (or its shorthand core) most likely misspells, if any."""
    names = _user_names(nonterminals)
    core = shorthand_core(symbol)
    if core in names:
        return core
    if len(core) < 2:  # one-character terminals (phonemes, characters) are never typos
        return None
    found = difflib.get_close_matches(core, names, n=1, cutoff=_HINT_CUTOFF)
    return found[0] if found else None


def _one_edit(first: str, second: str) -> bool:
    """True iff the strings differ by exactly one insertion, deletion,
    substitution or swap of two neighbouring characters."""
    if first == second or abs(len(first) - len(second)) > 1:
        return False
    if len(first) == len(second):
        diff = [i for i, (x, y) in enumerate(zip(first, second)) if x != y]
        return len(diff) == 1 or (
            len(diff) == 2 and diff[1] == diff[0] + 1
            and first[diff[0]] == second[diff[1]] and first[diff[1]] == second[diff[0]]
        )
    short, long_ = sorted((first, second), key=len)
    i = next((i for i, (x, y) in enumerate(zip(short, long_)) if x != y), len(short))
    return short[i:] == long_[i + 1:]


def likely_typo(symbol: str, nonterminals: Iterable[str]) -> Optional[str]:
    """The nonterminal that the terminal `symbol` clearly misspells, or None.

    Clearly means: the symbol (without shorthand decoration) starts with an
    uppercase letter, has at least three characters, and is one edit away
    from a nonterminal of at least three characters. Phonemes, characters and
    lowercase words are never taken for typos.
    """
    core = shorthand_core(symbol)
    if len(core) < 3 or not core[0].isupper():
        return None
    names = [name for name in _user_names(nonterminals) if len(name) >= 3 and _one_edit(core, name)]
    if not names:
        return None
    ranked = difflib.get_close_matches(core, names, n=1, cutoff=0.0)
    return ranked[0] if ranked else names[0]


def respelled(symbol: str, nonterminal: str) -> str:
    """`symbol` with its shorthand core replaced by `nonterminal` (`Phonem+` -> `Phoneme+`)."""
    core = shorthand_core(symbol)
    start = symbol.index(core)
    return symbol[:start] + nonterminal + symbol[start + len(core):]


def did_you_mean(symbol: str, nonterminal: Optional[str], note: Optional[str] = None) -> str:
    """`; did you mean "X"? (write X+; note)`: the respelled token when it has
    shorthand, and `note`, in brackets; "" without a nonterminal."""
    if nonterminal is None:
        return ""
    fixed = respelled(symbol, nonterminal)
    notes = ([f"write {fixed}"] if fixed != nonterminal else []) + ([note] if note else [])
    return f'; did you mean "{nonterminal}"?' + (f" ({'; '.join(notes)})" if notes else "")


def never_a_parent(symbol: str) -> str:
    """The start of a message about a right-hand-side symbol no rule defines."""
    core = shorthand_core(symbol)
    if core == symbol:
        return f"unknown symbol {symbol!r}: no rule has it as parent, so it is a terminal"
    return f"unknown symbol {symbol!r}: no rule has {core} as parent, so {symbol} is a terminal"


def _edges(grammar: Grammar, unary_only: bool = False) -> Dict[str, List[Tuple[str, Rule]]]:
    """Parent -> [(child nonterminal, rule)], the graph the cycle checks walk."""
    parents = set(grammar.nonterminals)
    graph: Dict[str, List[Tuple[str, Rule]]] = {symbol: [] for symbol in parents}
    for rule in grammar.rules:
        if unary_only and len(rule.children) != 1:
            continue
        for child in dict.fromkeys(rule.children):
            if child in parents:
                graph[rule.parent].append((child, rule))
    return graph


def _cycle_through(graph: Dict[str, List[Tuple[str, Rule]]], start: str) -> Optional[List[Tuple[str, Rule]]]:
    """Shortest path start -> ... -> start as [(symbol, rule used to leave it)]."""
    previous: Dict[str, Tuple[str, Rule]] = {}
    queue = deque([start])
    while queue:
        symbol = queue.popleft()
        for child, rule in graph[symbol]:
            if child == start:
                path = [(symbol, rule)]
                while path[0][0] != start:
                    path.insert(0, previous[path[0][0]])
                return path
            if child not in previous:
                previous[child] = (symbol, rule)
                queue.append(child)
    return None


def _format_cycle(path: List[Tuple[str, Rule]]) -> str:
    return " -> ".join([symbol for symbol, _ in path] + [path[0][0]])


# ------------------------------------------------------------------- structure


def check_structure(grammar: Grammar) -> None:
    """The load-time checks of docs/algorithms.md 1.5 and 3.4, in the order that
    gives the most specific message first."""
    _check_symbols(grammar)
    _check_rules(grammar)
    _check_adaptors(grammar)
    _check_reachable(grammar)
    _check_productive(grammar)
    _check_adapted_recursion(grammar)
    _check_unary_cycles(grammar)


def _check_symbols(grammar: Grammar) -> None:
    if not grammar.rules:
        raise _fail(grammar, Errors.E360)
    parents = {rule.parent for rule in grammar.rules}
    if grammar.start not in parents:
        hint = close_nonterminal(grammar.start, parents)
        fix = f'did you mean "{hint}"? Or ' if hint else ""
        raise _fail(
            grammar,
            Errors.E361.format(start=grammar.start, fix=fix, listing=_listing(sorted(parents))),
        )
    if CORPUS_CLASS in parents:
        raise _fail(grammar, Errors.E362.format(CORPUS_CLASS=CORPUS_CLASS), _first_rule(grammar, CORPUS_CLASS))


def _check_rules(grammar: Grammar) -> None:
    for rule in grammar.rules:
        if not rule.children:
            raise _fail(grammar, Errors.E366.format(parent=rule.parent), rule)
        if CORPUS_CLASS in rule.children and len(rule.children) > 1:
            raise _fail(grammar, Errors.E367.format(CORPUS_CLASS=CORPUS_CLASS), rule)
        if not (math.isfinite(rule.weight) and rule.weight > 0):
            raise _fail(grammar, Errors.E368.format(weight=rule.weight, parent=rule.parent), rule)


def _check_adaptors(grammar: Grammar) -> None:
    parents = set(grammar.nonterminals)
    first_rule: Dict[str, Rule] = {}  # one pass, not one scan of the rules per adaptor (20,000 topics)
    for rule in grammar.rules:
        first_rule.setdefault(rule.parent, rule)
    for symbol, adaptor in grammar.adaptors.items():
        if symbol not in parents:
            hint = close_nonterminal(symbol, parents)
            fix = f'did you mean "{hint}"? Otherwise ' if hint else ""
            raise _fail(grammar, Errors.E369.format(symbol=symbol, fix=fix))
        rule = first_rule.get(symbol)
        if not 0.0 <= adaptor.a < 1.0:
            raise _fail(grammar, Errors.E370.format(a=adaptor.a, symbol=symbol), rule)
        if not (math.isfinite(adaptor.b) and adaptor.b > 0):
            raise _fail(grammar, Errors.E371.format(b=adaptor.b, symbol=symbol), rule)


def _check_reachable(grammar: Grammar) -> None:
    graph = _edges(grammar)
    seen: Set[str] = {grammar.start}
    queue = deque([grammar.start])
    while queue:
        for child, _ in graph[queue.popleft()]:
            if child not in seen:
                seen.add(child)
                queue.append(child)
    unreachable = [symbol for symbol in grammar.nonterminals if symbol not in seen]
    if unreachable:
        _misspelt_unreachable(grammar, unreachable)
        symbol = unreachable[0]
        also = f" (also unreachable: {_listing(unreachable[1:])})" if len(unreachable) > 1 else ""
        raise _fail(
            grammar,
            Errors.E363.format(symbol=symbol, start=grammar.start, also=also),
            _first_rule(grammar, symbol),
        )


def _misspelt_unreachable(grammar: Grammar, unreachable: List[str]) -> None:
    """An unreachable nonterminal is often one whose every use is misspelt
    (`Phonem+` for `Phoneme+`): report the misspelling, at its own line."""
    parents = set(grammar.nonterminals)
    for rule in grammar.rules:
        for child in rule.children:
            if child in parents or child == CORPUS_CLASS:
                continue
            hint = close_nonterminal(child, unreachable)
            if hint is None:
                continue
            first = _first_rule(grammar, hint)
            at = ""
            if first is not None and first.line:
                at = f" ({first.source}:{first.line})" if first.source else f" (line {first.line})"
            raise _fail(
                grammar,
                Errors.E372.format(never_a_parent=never_a_parent(child), hint=hint, at=at, start=grammar.start,
                                   suggestion=did_you_mean(child, hint)),
                rule,
            )


def _check_productive(grammar: Grammar) -> None:
    parents = set(grammar.nonterminals)
    productive: Set[str] = set()
    changed = True
    while changed:
        changed = False
        for rule in grammar.rules:
            if rule.parent not in productive and all(
                child in productive or child not in parents for child in rule.children
            ):
                productive.add(rule.parent)
                changed = True
    dead = [symbol for symbol in grammar.nonterminals if symbol not in productive]
    if dead:
        symbol = dead[0]
        also = f" (nor do {_listing(dead[1:])})" if len(dead) > 1 else ""
        raise _fail(
            grammar,
            Errors.E364.format(symbol=symbol, also=also),
            _first_rule(grammar, symbol),
        )


def _check_adapted_recursion(grammar: Grammar) -> None:
    graph = _edges(grammar)
    for symbol in grammar.nonterminals:
        if not grammar.is_adapted(symbol):
            continue
        cycle = _cycle_through(graph, symbol)
        if cycle:
            raise _fail(
                grammar,
                Errors.E373.format(symbol=symbol, cycle=_format_cycle(cycle)),
                cycle[0][1],
            )


def _check_unary_cycles(grammar: Grammar) -> None:
    graph = _edges(grammar, unary_only=True)
    for symbol in grammar.nonterminals:
        cycle = _cycle_through(graph, symbol)
        if cycle:
            lines = ", ".join(str(rule.line) for _, rule in cycle if rule.line)
            where = f" (lines {lines})" if lines else ""
            raise _fail(
                grammar,
                Errors.E374.format(cycle=_format_cycle(cycle), where=where),
                cycle[0][1],
            )


# -------------------------------------------------------------------- corpus


def corpus_terminals(text: str, mode: str = "chars", units: str = "graphemes") -> List[str]:
    """The terminals of one corpus line: text units ("chars"; `units` as in
    `spacy_ag.text_units`, control characters left out) or tokens."""
    if mode == "chars":
        from ..text_units import is_control, terminals

        return [unit for unit in terminals(text, units) if not is_control(unit)]
    if mode == "tokens":
        return text.split()
    raise ValueError(Errors.E341.format(MODES=MODES, mode=mode))


def corpus_alphabet(lines: Iterable[str], mode: str = "chars", units: str = "graphemes") -> List[str]:
    """Distinct terminals of a corpus, sorted, for `[:corpus:]` expansion."""
    found: Set[str] = set()
    for text in lines:
        found.update(corpus_terminals(text, mode, units))
    return sorted(found)


def has_corpus_class(grammar: Grammar) -> bool:
    return any(rule.children == (CORPUS_CLASS,) for rule in grammar.rules)


def require_expanded(grammar: Grammar) -> Grammar:
    """Refuse a grammar whose `[:corpus:]` rules were never expanded.

    Training code calls this before compiling: the class only means something
    once the corpus alphabet is known.
    """
    rule = next((r for r in grammar.rules if CORPUS_CLASS in r.children), None)
    if rule is not None:
        raise _fail(
            grammar,
            Errors.E365.format(parent=rule.parent, CORPUS_CLASS=CORPUS_CLASS),
            rule,
        )
    return grammar


def _read_corpus(corpus_lines: Optional[Iterable[str]], corpus_path: Optional[str]) -> Iterator[str]:
    if corpus_lines is not None:
        return iter(corpus_lines)
    if corpus_path is None:
        raise ValueError(Errors.E343)
    try:
        with open(corpus_path, encoding="utf-8-sig") as handle:
            return iter(handle.read().split("\n"))
    except OSError as error:
        raise GrammarError(Errors.E344.format(strerror=error.strerror), corpus_path) from None


def _lexical_parent(grammar: Grammar) -> str:
    """The parent with most single-terminal rules (Char, Phoneme), for hints."""
    parents = set(grammar.nonterminals)
    counts: Dict[str, int] = {}
    for rule in grammar.rules:
        if len(rule.children) == 1 and rule.children[0] not in parents:
            counts[rule.parent] = counts.get(rule.parent, 0) + 1
    return max(counts, key=counts.get) if counts else "Char"


def _describe_terminal(terminal: str, mode: str) -> str:
    if mode == "chars":  # a text unit may be several code points
        return f"character {terminal!r} ({' '.join(f'U+{ord(c):04X}' for c in terminal)})"
    return f"token {terminal!r}"


def check_coverage(
    grammar: Grammar,
    corpus_lines: Optional[Iterable[str]] = None,
    corpus_path: Optional[str] = None,
    *,
    mode: str = "chars",
) -> None:
    """Every terminal of the corpus must be produced by some rule."""
    lines = _read_corpus(corpus_lines, corpus_path)
    if has_corpus_class(grammar):
        return
    known = set(grammar.terminals)
    missing: Dict[str, int] = {}
    for number, text in enumerate(lines, 1):
        for terminal in corpus_terminals(text.rstrip("\r\n"), mode):
            if terminal not in known and terminal not in missing:
                missing[terminal] = number
    if missing:
        raise uncovered_error(grammar, missing, corpus_path or "<corpus>", mode)


def uncovered_error(grammar: Grammar, missing: Dict[str, int], source: str, mode: str) -> GrammarError:
    """The one-line error for corpus terminals that no rule produces (first one named)."""
    terminal, number = next(iter(missing.items()))
    parent = _lexical_parent(grammar)
    others = [repr(t) for t in list(missing)[1:]]
    also = f" ({len(others)} more uncovered: {_listing(others)})" if others else ""
    return GrammarError(
        Errors.E342.format(described=_describe_terminal(terminal, mode), grammar=grammar.path or 'the grammar',
                           also=also, parent=parent, terminal=terminal, CORPUS_CLASS=CORPUS_CLASS),
        source,
        number,
    )
