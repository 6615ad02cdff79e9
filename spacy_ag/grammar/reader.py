"""Read grammar files into a `Grammar` (docs/algorithms.md 1.6, 1.7).

Two syntaxes map onto the one model of `rules.py`, so every check in
`checks.py` serves both:

* py-cfg (`[w [a [b]]] Parent --> children`), read as Mark Johnson's py-cfg
  reads it, plus our extensions: `#` comment lines, the `Y+`, `(Y)`,
  `(Y+)`, `Y?`, `Y*` shorthand, `@ NT key=value` adaptor directives and the `[:corpus:]`
  character class. Where py-cfg silently guesses we stop with an error: a
  weight w <= 0 (py-cfg uses the default), an unclosed `[` class, and a
  right-hand-side symbol that clearly misspells a nonterminal (py-cfg makes it
  a terminal);
* PyAdaGram (NLTK `A -> B "c"`, `%` comments, `@ NT K concentration discount`).

Mistakes are reported as one-line `GrammarError`s naming the file, the line and
the fix, because grammar files are hand-written and a stack trace helps no one.
"""
from __future__ import annotations

import difflib
import itertools
import math
import os
import re
from dataclasses import dataclass, replace
from typing import Dict, Iterable, List, NamedTuple, Optional, Sequence, Set, Tuple, Union

from ..errors import Errors
from ..settings import DEFAULT_A, DEFAULT_B
from .checks import close_nonterminal, did_you_mean, likely_typo, never_a_parent, validate
from .rules import CORPUS_CLASS, Adaptor, Grammar, GrammarError, Rule

ARROW = "-->"
PYADAGRAM_ARROW = "->"
FORMATS = ("auto", "pycfg", "pyadagram")
TEXT_SOURCE = "<string>"
RULE_SHAPE = "`[w [a [b]]] Parent --> children`"
_FIELDS = ("weight w", "discount a", "concentration b")

PathOrText = Union[str, "os.PathLike[str]"]

_TOKEN = re.compile(r"\S+")  # the tokens of str.split(), with their positions
_NAMED_CLASS = re.compile(r"\[:([^\[\]:]*):\]")
_CLASS_NAMES = (CORPUS_CLASS[2:-2],)


class Line(NamedTuple):
    """One physical line and the file it came from (messages name both)."""

    source: str
    number: int
    text: str

    def error(self, message: str, column: Optional[int] = None) -> GrammarError:
        return GrammarError(message, self.source, self.number, column)


@dataclass(frozen=True)
class _Options:
    default_weight: float
    default_a: float
    default_b: float
    start: Optional[str]
    main: str  # the file whose lines need no Rule.source


# ------------------------------------------------------------------ public API


def read_grammar(
    path_or_text: PathOrText,
    *,
    fmt: str = "auto",
    default_weight: float = 1.0,
    default_a: float = DEFAULT_A,
    default_b: float = DEFAULT_B,
    alphabet: Optional[Iterable[str]] = None,
    source: Optional[str] = None,
    extra_rule_files: Sequence[PathOrText] = (),
    start: Optional[str] = None,
) -> Grammar:
    """Read a grammar file (or grammar text) and check its structure.

    `path_or_text` is a path, or the grammar itself when it is a string that
    contains a newline or an arrow. The defaults play the role of py-cfg's
    `-w -a -b` flags. `alphabet` expands `[:corpus:]` rules at once;
    `extra_rule_files` are read as more lines of the same grammar in the same
    format (PyAdaGram keeps its terminal rules in `voc.dat`). `source` names
    text input in messages; `start` overrides "parent of the first rule".
    """
    if _is_path(path_or_text):
        path = os.fspath(path_or_text)
        text, source = _read_file(path), source or path
    else:
        text = str(path_or_text)
    extra = [(os.fspath(p), _read_file(os.fspath(p))) for p in extra_rule_files]
    return parse_grammar_text(
        text, fmt=fmt, default_weight=default_weight, default_a=default_a, default_b=default_b,
        alphabet=alphabet, source=source, extra_texts=extra, start=start,
    )


def parse_grammar_text(
    text: str,
    *,
    fmt: str = "auto",
    default_weight: float = 1.0,
    default_a: float = DEFAULT_A,
    default_b: float = DEFAULT_B,
    alphabet: Optional[Iterable[str]] = None,
    source: Optional[str] = None,
    extra_texts: Sequence[Tuple[str, str]] = (),
    start: Optional[str] = None,
) -> Grammar:
    """Parse grammar text; `extra_texts` are (name, text) pairs of more rules."""
    name = source or TEXT_SOURCE
    options = _make_options(default_weight, default_a, default_b, start, name)
    main = _split_lines(name, text)
    lines = main + [line for extra_name, extra_text in extra_texts for line in _split_lines(extra_name, extra_text)]
    parse = _parse_pycfg if _resolve_format(fmt, main) == "pycfg" else _parse_pyadagram
    grammar = parse(lines, options)
    if alphabet is not None:
        grammar = _expand_class(grammar, alphabet)
    return validate(grammar)


def detect_format(text: str) -> str:
    """"pyadagram" if any line looks like PyAdaGram syntax, else "pycfg".

    A line counts as PyAdaGram if it is a `%` comment, has a `->` token or is
    `@ NT n n n`; lines with a py-cfg `-->` arrow never count, so a py-cfg
    terminal such as `%` or `->` cannot trigger a false detection.
    """
    return _detect(_split_lines(TEXT_SOURCE, text))


def expand_corpus_class(grammar: Grammar, alphabet: Iterable[str]) -> Grammar:
    """Replace each `P --> [:corpus:]` rule by one rule per alphabet symbol.

    The alphabet is sorted so the rule order (hence symbol ids and runs) does
    not depend on how the caller collected it. Each new rule keeps the class
    rule's weight and line; a symbol that an explicit rule of the same parent
    already produces gets the weights added, as repeated py-cfg rules do.
    """
    return validate(_expand_class(grammar, alphabet))


# --------------------------------------------------------------------- shared


def _make_options(weight: float, a: float, b: float, start: Optional[str], main: str) -> _Options:
    if not (math.isfinite(weight) and weight > 0):
        raise GrammarError(Errors.E302.format(weight=weight))
    if not 0.0 <= a <= 1.0:
        raise GrammarError(Errors.E303.format(a=a))
    if not (math.isfinite(b) and b > 0):
        raise GrammarError(Errors.E304.format(b=b))
    return _Options(float(weight), float(a), float(b), start, main)


def _is_path(value: PathOrText) -> bool:
    """Grammar text always has an arrow or a newline (or is empty); a path never does."""
    if isinstance(value, os.PathLike):
        return True
    return bool(value) and "\n" not in value and PYADAGRAM_ARROW not in value


def _read_file(path: str) -> str:
    try:
        with open(path, encoding="utf-8-sig") as handle:
            return handle.read()
    except FileNotFoundError:
        raise GrammarError(Errors.E326, path) from None
    except (OSError, UnicodeDecodeError) as error:
        raise GrammarError(Errors.E327.format(error=error), path) from None


def _split_lines(source: str, text: str) -> List[Line]:
    """Split on newlines only: other Unicode line breaks may be terminals."""
    return [Line(source, number, raw.rstrip("\r")) for number, raw in enumerate(text.split("\n"), 1)]


def _resolve_format(fmt: str, lines: List[Line]) -> str:
    if fmt not in FORMATS:
        raise GrammarError(Errors.E305.format(fmt=fmt, formats=', '.join(FORMATS)))
    return _detect(lines) if fmt == "auto" else fmt


def _detect(lines: List[Line]) -> str:
    for line in lines:
        tokens = line.text.split()
        if not tokens or _arrow_index(tokens) is not None:
            continue
        if tokens[0].startswith("%") or PYADAGRAM_ARROW in tokens or _is_pyadagram_adaptor(tokens):
            return "pyadagram"
    return "pycfg"


def is_number_token(token: str) -> bool:
    try:
        float(token)
    except ValueError:
        return False
    return True


def _is_pyadagram_adaptor(tokens: List[str]) -> bool:
    return len(tokens) == 5 and tokens[0] == "@" and all(is_number_token(t) for t in tokens[2:])


def _number(line: Line, token: str, what: str) -> float:
    try:
        value = float(token)
    except ValueError:
        raise line.error(Errors.E328.format(what=what, token=token)) from None
    if not math.isfinite(value):
        raise line.error(Errors.E306.format(what=what, token=token))
    return value


def _weight(line: Line, token: str, parent: str) -> float:
    """The weight field: a finite number > 0 (py-cfg silently reads w <= 0 as
    the default weight, which turns a typo into a different model)."""
    try:
        value = float(token)
    except ValueError:
        raise line.error(Errors.E329.format(token=token)) from None
    if not math.isfinite(value):
        raise line.error(Errors.E307.format(token=token, parent=parent))
    if not value > 0:
        raise line.error(Errors.E308.format(token=token, parent=parent))
    return value


def _class_problem(token: str) -> Optional[str]:
    """What is wrong with a right-hand-side token that opens a character class.

    `[:name:]` tokens are classes (only `[:corpus:]` exists); any other token
    that starts with `[` and has no `]` is an unclosed class. A lone `[` and
    tokens such as `[x]` are terminals (Brent has the phoneme `[`).
    """
    if token == CORPUS_CLASS or len(token) < 2 or token[0] != "[":
        return None
    named = _NAMED_CLASS.fullmatch(token)
    if named:
        close = difflib.get_close_matches(named.group(1), _CLASS_NAMES, n=1, cutoff=0.6)
        if close:
            return Errors.E350.format(token=token, close=close[0])
        return Errors.E351.format(token=token, CORPUS_CLASS=CORPUS_CLASS)
    if token.startswith("[:"):
        if "]" in token:
            return Errors.E352.format(token=token, CORPUS_CLASS=CORPUS_CLASS)
        name = token[2:].rstrip(":")
        known = not name or difflib.get_close_matches(name, _CLASS_NAMES, n=1, cutoff=0.6)
        if known:
            return Errors.E353.format(token=token, CORPUS_CLASS=CORPUS_CLASS)
        return Errors.E354.format(token=token, CORPUS_CLASS=CORPUS_CLASS)
    if "]" not in token:
        return Errors.E355.format(token=token, CORPUS_CLASS=CORPUS_CLASS)
    return None


def _check_classes(line: Line, spans: Sequence[Tuple[int, str]]) -> None:
    """Raise at line:column for the first right-hand-side token that is a bad class."""
    for start, token in spans:
        problem = _class_problem(token)
        if problem:
            raise line.error(problem, column=start + 1)


def _check_a_b(line: Line, a: Optional[float], b: Optional[float], adapted: bool = False) -> None:
    """py-cfg aborts unless 0 <= a <= 1 and b > 0; adaptor lines also need a < 1."""
    if a is not None and (not 0.0 <= a <= 1.0 or (adapted and a == 1.0)):
        bound = "[0, 1) (a = 1 means unadapted)" if adapted else "[0, 1]"
        raise line.error(Errors.E309.format(a=a, bound=bound))
    if b is not None and not b > 0:
        raise line.error(Errors.E310.format(b=b))


def _rule(parent: str, children: Tuple[str, ...], weight: float, where: Line, options: _Options) -> Rule:
    source = None if where.source == options.main else where.source
    return Rule(parent, children, weight, where.number, source)


def _merge_duplicates(rules: List[Rule], add_weights: bool) -> List[Rule]:
    """One rule per (parent, children), at its first position."""
    merged: Dict[Tuple[str, Tuple[str, ...]], Rule] = {}
    for rule in rules:
        key = (rule.parent, rule.children)
        if key not in merged:
            merged[key] = rule
        elif add_weights:
            merged[key] = replace(merged[key], weight=merged[key].weight + rule.weight)
    return list(merged.values())


def _no_rules(options: _Options) -> GrammarError:
    return GrammarError(Errors.E300.format(RULE_SHAPE=RULE_SHAPE), options.main)


# ---------------------------------------------------------------------- py-cfg


@dataclass(frozen=True)
class _RuleLine:
    where: Line
    weight: Optional[float]
    a: Optional[float]
    b: Optional[float]
    parent: str
    rhs: Tuple[str, ...]


@dataclass(frozen=True)
class _Directive:
    where: Line
    symbol: str
    settings: Dict[str, float]


def _parse_pycfg(lines: List[Line], options: _Options) -> Grammar:
    items = [item for item in map(_pycfg_item, lines) if item is not None]
    rule_lines = [item for item in items if isinstance(item, _RuleLine)]
    if not rule_lines:
        raise _no_rules(options)
    parents = list(dict.fromkeys(item.parent for item in rule_lines))
    rules = _merge_duplicates(_expand_rule_lines(rule_lines, set(parents), options), add_weights=True)
    adaptors = _pycfg_adaptors(rule_lines, parents, options)
    _apply_directives([item for item in items if isinstance(item, _Directive)], adaptors, parents)
    _check_plus_parents(rules, parents, adaptors, rule_lines)
    _check_typos(rule_lines, set(parents))
    return Grammar(options.start or parents[0], rules, adaptors, options.main)


def _arrow_index(tokens: List[str]) -> Optional[int]:
    """Index of the first token starting with `-->` (`-->d` is arrow + child)."""
    return next((i for i, token in enumerate(tokens) if token.startswith(ARROW)), None)


def _pycfg_item(line: Line) -> Union[_RuleLine, _Directive, None]:
    spans = [(match.start(), match.group()) for match in _TOKEN.finditer(line.text)]
    tokens = [token for _, token in spans]
    if not tokens or tokens[0].startswith("#"):
        return None
    arrow = _arrow_index(tokens)
    if tokens[0] == "@" and arrow is None:
        return _parse_directive(line, tokens)
    if arrow is None:
        raise _missing_arrow(line, tokens)
    return _parse_rule_line(line, spans, arrow)


def _missing_arrow(line: Line, tokens: List[str]) -> GrammarError:
    if any(ARROW in token for token in tokens):
        return line.error(Errors.E311.format(RULE_SHAPE=RULE_SHAPE))
    if PYADAGRAM_ARROW in tokens:
        return line.error(Errors.E312)
    return line.error(Errors.E301.format(RULE_SHAPE=RULE_SHAPE))


def _parse_rule_line(line: Line, spans: List[Tuple[int, str]], arrow: int) -> _RuleLine:
    tokens = [token for _, token in spans]
    head, glued = tokens[:arrow], tokens[arrow][len(ARROW):]
    rhs_spans = ([(spans[arrow][0] + len(ARROW), glued)] if glued else []) + spans[arrow + 1:]
    rhs = tuple(token for _, token in rhs_spans)
    if not head or is_number_token(head[-1]):
        raise line.error(Errors.E313.format(RULE_SHAPE=RULE_SHAPE))
    *fields, parent = head
    if len(fields) > 3:
        raise line.error(Errors.E314.format(parent=parent, n_fields=len(fields)))
    numbers = [_weight(line, fields[0], parent)] if fields else []
    numbers += [_number(line, token, what) for token, what in zip(fields[1:], _FIELDS[1:])]
    weight, a, b = numbers + [None] * (3 - len(numbers))
    _check_a_b(line, a, b)
    if not rhs:
        raise line.error(Errors.E315.format(parent=parent))
    _check_classes(line, rhs_spans)
    return _RuleLine(line, weight, a, b, parent, rhs)


def _parse_directive(line: Line, tokens: List[str]) -> _Directive:
    example = "`@ Word K=1500 a=0 b=100`"
    if len(tokens) < 2 or "=" in tokens[1]:
        raise line.error(Errors.E316.format(example=example))
    settings: Dict[str, float] = {}
    for token in tokens[2:]:
        key, sep, value = token.partition("=")
        if not (sep and key and value):
            raise line.error(Errors.E330.format(token=token, example=example))
        settings[key] = _number(line, value, key)
    if not settings:
        raise line.error(Errors.E317.format(symbol=tokens[1], example=example))
    _check_a_b(line, settings.get("a"), settings.get("b"), adapted=True)
    span = settings.get("max_span")
    if span is not None and not (span >= 1 and float(span).is_integer()):
        raise line.error(Errors.E318.format(span=span))
    return _Directive(line, tokens[1], settings)


def _expand_rule_lines(rule_lines: List[_RuleLine], parents: Set[str], options: _Options) -> List[Rule]:
    """Rules of every line after shorthand expansion, then the `Y+` dummies."""
    rules: List[Rule] = []
    dummies: Dict[str, Line] = {}
    for item in rule_lines:
        weight = item.weight if item.weight is not None else options.default_weight
        for children in _expand_shorthand(item.rhs, parents, dummies, item.where):
            rules.append(_rule(item.parent, children, weight, item.where, options))
    for symbol, where in dummies.items():
        base = symbol[:-1]
        rules.append(_rule(symbol, (base,), options.default_weight, where, options))
        rules.append(_rule(symbol, (base, symbol), options.default_weight, where, options))
    return rules


def shorthand_item(token: str, parents: Set[str]) -> Tuple[str, bool]:
    """(symbol, optional) for one right-hand-side token.

    `(Y)` and `Y?` (optional), `(Y+)` and `Y*` (zero or more) are shorthand
    only when Y is a parent; otherwise the token is a literal terminal (Brent
    has the phonemes `(`, `)` and `*`).
    """
    if token in parents:
        return token, False
    if len(token) > 2 and token[0] == "(" and token[-1] == ")":
        core = token[1:-1]
        if core in parents or (core.endswith("+") and core[:-1] in parents):
            return core, True
    if len(token) > 1 and token[-1] in "?*" and token[:-1] in parents:
        return (token[:-1] if token[-1] == "?" else token[:-1] + "+"), True
    return token, False


def _expand_shorthand(rhs: Tuple[str, ...], parents: Set[str], dummies: Dict[str, Line],
                      where: Line) -> List[Tuple[str, ...]]:
    """Every keep/drop combination of the optional items, without duplicates
    (two optional `Syllable`s give the middle rule twice; its weight is not
    doubled, docs/algorithms.md 7 item 12) and without the empty one."""
    choices = []
    for token in rhs:
        symbol, optional = shorthand_item(token, parents)
        if symbol.endswith("+") and symbol[:-1] in parents and symbol not in parents:
            dummies.setdefault(symbol, where)
        choices.append(((symbol,), ()) if optional else ((symbol,),))
    expansions = dict.fromkeys(tuple(itertools.chain.from_iterable(combo)) for combo in itertools.product(*choices))
    expansions.pop((), None)
    return list(expansions)


def _pycfg_adaptors(rule_lines: List[_RuleLine], parents: List[str], options: _Options) -> Dict[str, Adaptor]:
    """py-cfg's rule: a line records a or b for its parent only when it differs
    from the default; the last recorded value wins; adapted iff a != 1."""
    recorded_a: Dict[str, float] = {}
    recorded_b: Dict[str, float] = {}
    for item in rule_lines:
        if item.a is not None and item.a != options.default_a:
            recorded_a[item.parent] = item.a
        if item.b is not None and item.b != options.default_b:
            recorded_b[item.parent] = item.b
    adaptors = {}
    for parent in parents:
        a = recorded_a.get(parent, options.default_a)
        if a != 1.0:
            adaptors[parent] = Adaptor(a, recorded_b.get(parent, options.default_b))
    return adaptors


def _apply_directives(directives: List[_Directive], adaptors: Dict[str, Adaptor], parents: List[str]) -> None:
    """`@ NT key=value`: a and b override the rule lines, other keys are options."""
    known = set(parents)
    for directive in directives:
        symbol, where = directive.symbol, directive.where
        if symbol not in known:
            hint = close_nonterminal(symbol, parents)
            spelling = f'did you mean "{hint}"?' if hint else "check the spelling"
            raise where.error(Errors.E331.format(symbol=symbol, spelling=spelling))
        adaptor = adaptors.get(symbol)
        if adaptor is None:
            raise where.error(Errors.E332.format(symbol=symbol))
        for key, value in directive.settings.items():
            if key == "a":
                adaptor.a = value
            elif key == "b":
                adaptor.b = value
            else:
                adaptor.options[key] = value


def _check_plus_parents(rules: List[Rule], parents: List[str], adaptors: Dict[str, Adaptor],
                        rule_lines: List[_RuleLine]) -> None:
    """Names ending in `+` belong to the shorthand. A file may still define
    `Y+` itself if it is exactly the dummy (`Y+ --> Y`, `Y+ --> Y Y+`,
    unadapted), which is what `write_pycfg` prints for expanded grammars."""
    for parent in parents:
        if not parent.endswith("+"):
            continue
        base = parent[:-1]
        shapes = {rule.children for rule in rules if rule.parent == parent}
        if base in parents and shapes == {(base,), (base, parent)} and parent not in adaptors:
            continue
        where = next(item.where for item in rule_lines if item.parent == parent)
        raise where.error(Errors.E319.format(parent=parent, base=base))


def _check_typos(rule_lines: List[_RuleLine], parents: Set[str]) -> None:
    """A right-hand-side symbol that no rule defines is a terminal in py-cfg;
    one that is clearly a misspelt nonterminal (`Phonem+`, `Wrod`; see
    `checks.likely_typo`) is reported instead of silently becoming one."""
    for item in rule_lines:
        for token in item.rhs:
            symbol, _ = shorthand_item(token, parents)
            if symbol in parents or symbol == CORPUS_CLASS or (symbol.endswith("+") and symbol[:-1] in parents):
                continue
            hint = likely_typo(token, parents)
            if hint is not None:
                note = f"to keep {token} as a terminal, rename the nonterminal {hint}"
                raise item.where.error(
                    Errors.E340.format(never_a_parent=never_a_parent(token), hint=hint,
                                       suggestion=did_you_mean(token, hint, note))
                )


# ------------------------------------------------------------------- PyAdaGram

_PYADAGRAM_TOKEN = re.compile(r"\"[^\"]*\"|'[^']*'|\S+")


@dataclass(frozen=True)
class _Production:
    where: Line
    parent: str
    rhs: Tuple[str, ...]  # raw tokens, terminals still quoted


def _parse_pyadagram(lines: List[Line], options: _Options) -> Grammar:
    """NLTK-style rules; weights are PyAdaGram's Dirichlet pseudo-counts 1/|R_A|.

    Repeated productions (e.g. terminal rules present both in the grammar file
    and in voc.dat) are kept once.
    """
    productions: List[_Production] = []
    adaptor_lines: List[Tuple[Line, str, Adaptor]] = []
    for line in lines:
        spans = [(match.start(), match.group()) for match in _PYADAGRAM_TOKEN.finditer(line.text)]
        tokens = [token for _, token in spans]
        if not tokens or tokens[0].startswith("%"):
            continue
        if tokens[0] == "@":
            adaptor_lines.append(_pyadagram_adaptor(line, tokens))
        else:
            productions.extend(_pyadagram_productions(line, tokens))
            _check_classes(line, spans[2:])  # quoted terminals start with a quote, never with [
    if not productions:
        raise _no_rules(options)
    parents = list(dict.fromkeys(p.parent for p in productions))
    rules = _merge_duplicates([_pyadagram_rule(p, set(parents), options) for p in productions], add_weights=False)
    sizes: Dict[str, int] = {}
    for rule in rules:
        sizes[rule.parent] = sizes.get(rule.parent, 0) + 1
    rules = [replace(rule, weight=1.0 / sizes[rule.parent]) for rule in rules]
    adaptors: Dict[str, Adaptor] = {}
    for where, symbol, adaptor in adaptor_lines:
        if symbol not in parents:
            hint = close_nonterminal(symbol, parents)
            spelling = f' (did you mean "{hint}"?)' if hint else ""
            raise where.error(Errors.E333.format(symbol=symbol, spelling=spelling))
        adaptors[symbol] = adaptor
    return Grammar(options.start or parents[0], rules, adaptors, options.main)


def _pyadagram_adaptor(line: Line, tokens: List[str]) -> Tuple[Line, str, Adaptor]:
    """`@ NT K concentration discount`: note the b-before-a order (docs/algorithms.md 0.2)."""
    if len(tokens) != 5:
        raise line.error(Errors.E320)
    truncation = _number(line, tokens[2], "truncation K")
    b = _number(line, tokens[3], "concentration")
    a = _number(line, tokens[4], "discount")
    _check_a_b(line, a, b, adapted=True)
    if truncation < 1:
        raise line.error(Errors.E321.format(truncation=tokens[2]))
    return line, tokens[1], Adaptor(a, b, {"K": truncation})


def _pyadagram_productions(line: Line, tokens: List[str]) -> List[_Production]:
    if _arrow_index(tokens) is not None:
        raise line.error(Errors.E322)
    if len(tokens) < 2 or tokens[1] != PYADAGRAM_ARROW or tokens[0][0] in "\"'":
        raise line.error(Errors.E323)
    productions = []
    alternatives: List[List[str]] = [[]]
    for token in tokens[2:]:
        if token == "|":
            alternatives.append([])
        else:
            alternatives[-1].append(token)
    for rhs in alternatives:
        if not rhs:
            raise line.error(Errors.E334.format(parent=tokens[0]))
        productions.append(_Production(line, tokens[0], tuple(rhs)))
    return productions


def _pyadagram_rule(production: _Production, parents: Set[str], options: _Options) -> Rule:
    children = tuple(_pyadagram_child(production.where, token, parents) for token in production.rhs)
    return _rule(production.parent, children, 1.0, production.where, options)


def _pyadagram_child(where: Line, token: str, parents: Set[str]) -> str:
    if token[0] in "\"'":
        terminal = token[1:-1]
        if len(token) < 2 or token[-1] != token[0]:
            raise where.error(Errors.E335.format(token=token))
        if not terminal or any(char.isspace() for char in terminal):
            raise where.error(Errors.E336.format(token=token))
        if terminal in parents:
            raise where.error(Errors.E337.format(token=token, terminal=terminal))
        return terminal
    if token != CORPUS_CLASS and token not in parents:
        hint = close_nonterminal(token, parents)
        spelling = f'did you mean "{hint}"? Otherwise ' if hint else ""
        raise where.error(Errors.E324.format(token=token, spelling=spelling))
    return token


# ------------------------------------------------------------ character class


def _expand_class(grammar: Grammar, alphabet: Iterable[str]) -> Grammar:
    if not any(rule.children == (CORPUS_CLASS,) for rule in grammar.rules):
        return grammar
    letters = _checked_alphabet(grammar, alphabet)
    rules: List[Rule] = []
    for rule in grammar.rules:
        if rule.children == (CORPUS_CLASS,):
            rules.extend(replace(rule, children=(letter,)) for letter in letters)
        else:
            rules.append(rule)
    adaptors = {symbol: Adaptor(ad.a, ad.b, dict(ad.options)) for symbol, ad in grammar.adaptors.items()}
    return Grammar(grammar.start, _merge_duplicates(rules, add_weights=True), adaptors, grammar.path)


def _checked_alphabet(grammar: Grammar, alphabet: Iterable[str]) -> List[str]:
    letters = sorted(set(alphabet))
    where = grammar.path or "<grammar>"
    if not letters:
        raise GrammarError(Errors.E325.format(CORPUS_CLASS=CORPUS_CLASS), where)
    parents = set(grammar.nonterminals)
    for letter in letters:
        if not isinstance(letter, str) or not letter or any(char.isspace() for char in letter):
            raise GrammarError(Errors.E338.format(letter=letter), where)
        if letter in parents:
            raise GrammarError(Errors.E339.format(letter=letter), where)
    return letters
