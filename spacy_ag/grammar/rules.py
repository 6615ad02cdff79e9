"""The in-memory grammar: what a grammar file means, independent of its syntax.

Every reader (py-cfg, PyAdaGram, our extensions) produces a `Grammar`; the
compiler (`spacy_ag.core.compiled`) turns it into flat arrays. Keeping this
layer free of parsing details lets both formats share every check.
"""
from __future__ import annotations

from collections import Counter
from dataclasses import dataclass, field
from typing import Dict, List, Optional, Sequence, Tuple, Union

from ..errors import Errors, SpacyAgError, with_place

#: The right-hand-side token that expands to every character of the corpus.
CORPUS_CLASS = "[:corpus:]"


class GrammarError(SpacyAgError):
    """A mistake in a grammar file, reported as one line: file, line (column), problem, fix."""

    code = "E100"

    def __init__(self, message: str, path: Optional[str] = None, line: Optional[int] = None,
                 column: Optional[int] = None):
        where = ""
        if path is not None:
            where = f"{path}: "
            if line is not None:
                where = f"{path}:{line}:{column}: " if column is not None else f"{path}:{line}: "
        super().__init__(with_place(where, message))
        self.path = path
        self.line = line
        #: 1-based column (code points) for syntax errors inside a line, else None.
        self.column = column


@dataclass(frozen=True)
class Rule:
    parent: str
    children: Tuple[str, ...]
    #: Dirichlet pseudo-count (collapsed theta) or relative weight (fixed theta).
    weight: float = 1.0
    #: 1-based line of the grammar file the rule came from (0: generated).
    line: int = 0
    #: File the line belongs to when it is not `Grammar.path` (extra rule files,
    #: e.g. PyAdaGram's voc.dat); ignored by equality so it never changes the model.
    source: Optional[str] = field(default=None, compare=False, repr=False)


@dataclass
class Adaptor:
    """Pitman-Yor parameters of one adapted nonterminal (a = discount, b = concentration)."""

    a: float
    b: float
    #: Extra settings from `@ NT key=value` directives (e.g. K for variational truncation).
    options: Dict[str, float] = field(default_factory=dict)


@dataclass
class Grammar:
    start: str
    rules: List[Rule]
    adaptors: Dict[str, Adaptor]
    path: Optional[str] = None

    @property
    def nonterminals(self) -> List[str]:
        """Parents in order of first appearance (the start symbol first)."""
        seen: Dict[str, None] = {self.start: None}
        for rule in self.rules:
            seen.setdefault(rule.parent, None)
        return list(seen)

    @property
    def terminals(self) -> List[str]:
        """Right-hand-side symbols that are not parents, in order of first appearance."""
        parents = set(self.nonterminals)
        seen: Dict[str, None] = {}
        for rule in self.rules:
            for child in rule.children:
                if child not in parents:
                    seen.setdefault(child, None)
        return list(seen)

    def is_adapted(self, symbol: str) -> bool:
        return symbol in self.adaptors

    def rules_of(self, parent: str) -> List[Rule]:
        """The rules whose left-hand side is `parent`, in file order."""
        return [rule for rule in self.rules if rule.parent == parent]

    def equivalent(self, other: "Grammar") -> bool:
        """Same model: start, rules with weights (in any order) and adaptors.

        File positions and rule order are ignored, so a grammar written with
        `write_pycfg` and read back compares equivalent to the original.
        """
        def key(grammar: "Grammar"):
            rules = Counter((r.parent, r.children, r.weight) for r in grammar.rules)
            return grammar.start, rules, grammar.adaptors

        return key(self) == key(other)


def category_names(spec: Union[str, Sequence[str]]) -> Tuple[str, ...]:
    """The nonterminals of a segmentation category: one name, or several joined by commas
    ("Word,FuncWord1"). A function word is a word, so a grammar with function words is
    segmented at the set {Word, FuncWord1, ...}: the words are the yields of the outermost
    nodes of any of them."""
    names = spec.split(",") if isinstance(spec, str) else list(spec)
    out = tuple(dict.fromkeys(name.strip() for name in names if name.strip()))
    if not out:
        raise ValueError(Errors.E348.format(spec=spec))
    return out


def check_categories(grammar: "Grammar", spec: Union[str, Sequence[str]], what: str = "segmentation category"
                     ) -> Tuple[str, ...]:
    """`category_names(spec)`, each checked to be a nonterminal of the grammar."""
    names = category_names(spec)
    unknown = [name for name in names if name not in grammar.nonterminals]
    if unknown:
        raise GrammarError(Errors.E349.format(what=what, unknown=", ".join(map(repr, unknown)),
                                              nonterminals=", ".join(grammar.nonterminals)), grammar.path)
    return names


def with_max_span(grammar: Grammar, span: int) -> Grammar:
    """The grammar with `max_span = span` on every adapted nonterminal that has none
    (the grammar itself if all have one)."""
    if all("max_span" in adaptor.options for adaptor in grammar.adaptors.values()):
        return grammar
    adaptors = {symbol: Adaptor(adaptor.a, adaptor.b, {"max_span": float(span), **adaptor.options})
                for symbol, adaptor in grammar.adaptors.items()}
    return Grammar(grammar.start, list(grammar.rules), adaptors, grammar.path)
