"""Word-internal grammars for morphology (docs/algorithms.md 2.5, [JGG06] §4.2), generated as text.

The grammars are *generated* rather than only shipped as files because the
hidden-class grammar has one copy of every adapted nonterminal per class, and
the number of classes ``C`` is a setting: writing ``Word_1 .. Word_C`` by hand
invites typos that the reader cannot catch (a misspelt ``Stem_3`` is just
another nonterminal). The files ``configs/morphology/grammars/*.lt`` are this
module's output (``spacy-ag morph-grammar KIND --classes 6``), and a test checks
that they stay equal to it.

Kinds (start symbol ``Word``; the terminals are a word's characters):

* ``stem-suffix``: ``Word -> Stem (Suffix)`` ([JGG06]; Word, Stem and
  Suffix adapted);
* ``prefix-stem-suffix``: ``Word -> (Prefix) Stem (Suffix)``;
* ``submorphs``: ``Word -> Morph+``, ``Morph -> SubMorph+``, ``SubMorph ->
  Char+`` (Morph and SubMorph adapted; after Sirts & Goldwater 2013). Any
  number of morphs per word, and a morph is built from reusable pieces, so a
  new stem is not spelt letter by letter. It is the variant for word lists
  with compounds and several affixes per word (the Morpho Challenge words),
  where the one-boundary grammars above undersegment;
* ``prefix-stem-suffix-submorphs`` (PrStSu+SM of MorphAGram, Eskander et al.
  2016, 2020): ``Word -> (Prefix) Stem (Suffix)``, ``Prefix -> PrefixMorph+``,
  ``Suffix -> SuffixMorph+``, and every morph (``PrefixMorph``, ``Stem``,
  ``SuffixMorph``) built from shared ``SubMorph`` pieces; everything but
  ``Word`` adapted. Language-independent: any number of affixes on either side,
  while the stem stays one unit;

each with ``classes = C`` hidden morphological classes: ``Word -> Word_c``
(``Word`` unadapted, one rule per class) and every other nonterminal ``X``
replaced by ``X_c``, so that a class has its own stems and suffixes, as
[JGG06] did with ``C = 6``. The class of a word is the ``c`` of the ``Word_c``
that expands it (`spacy_ag.morphology.analysis.morph_class`).

Every adapted nonterminal gets ``a`` and ``b`` on its rule lines (default
``a = 0``, ``b = 500``, the paper's CRP settings); sampling them is a sampler
setting (``sample_hyper``), not part of the grammar. ``Char+``, ``(X)`` and
``[:corpus:]`` are this project's shorthand (docs/algorithms.md 1.6, 1.7.2): the
alphabet is the training words' characters.
"""
from __future__ import annotations

from typing import Dict, List, Optional, Tuple

from ..errors import Errors

__all__ = [
    "KINDS",
    "MORPH_LEVELS",
    "GRAMMAR_NAMES",
    "grammar_name",
    "morphology_grammar",
    "parse_grammar_name",
]

#: Rules per kind: (parent, right-hand side, adapted). ``(X)`` is optional, ``X+`` one or more.
KINDS: Dict[str, Tuple[Tuple[str, str, bool], ...]] = {
    "stem-suffix": (
        ("Word", "Stem (Suffix)", True),
        ("Stem", "Char+", True),
        ("Suffix", "Char+", True),
    ),
    "prefix-stem-suffix": (
        ("Word", "(Prefix) Stem (Suffix)", True),
        ("Prefix", "Char+", True),
        ("Stem", "Char+", True),
        ("Suffix", "Char+", True),
    ),
    "submorphs": (
        ("Word", "Morph+", False),
        ("Morph", "SubMorph+", True),
        ("SubMorph", "Char+", True),
    ),
    "prefix-stem-suffix-submorphs": (
        ("Word", "(Prefix) Stem (Suffix)", False),
        ("Prefix", "PrefixMorph+", True),
        ("PrefixMorph", "SubMorph+", True),
        ("Stem", "SubMorph+", True),
        ("Suffix", "SuffixMorph+", True),
        ("SuffixMorph", "SubMorph+", True),
        ("SubMorph", "Char+", True),
    ),
}

#: The nonterminals whose yields are a word's morphs, per kind (the default ``--level``).
MORPH_LEVELS: Dict[str, Tuple[str, ...]] = {
    "stem-suffix": ("Stem", "Suffix"),
    "prefix-stem-suffix": ("Prefix", "Stem", "Suffix"),
    "submorphs": ("Morph",),
    "prefix-stem-suffix-submorphs": ("PrefixMorph", "Stem", "SuffixMorph"),
}

CLASSES_SUFFIX = "-classes"

#: Names the ``ag_parser`` component accepts as ``grammar`` (``-classes`` takes its ``classes`` setting).
GRAMMAR_NAMES: Tuple[str, ...] = tuple(k for kind in KINDS for k in (kind, kind + CLASSES_SUFFIX))


def parse_grammar_name(name: str) -> Optional[Tuple[str, bool]]:
    """``(kind, with_classes)`` for a morphology grammar name, None for any other name."""
    if name in KINDS:
        return name, False
    if name.endswith(CLASSES_SUFFIX) and name[: -len(CLASSES_SUFFIX)] in KINDS:
        return name[: -len(CLASSES_SUFFIX)], True
    return None


def grammar_name(kind: str, classes: Optional[int]) -> str:
    """Inverse of `parse_grammar_name`."""
    return kind + (CLASSES_SUFFIX if classes else "")


def _number(x: float) -> str:
    return f"{x:g}"


def morphology_grammar(kind: str = "stem-suffix", *, classes: Optional[int] = None, a: float = 0.0,
                       b: float = 500.0) -> str:
    """The grammar text (py-cfg format with our shorthand) of a morphology grammar.

    kind (str): One of `KINDS`.
    classes (Optional[int]): Number of hidden classes C (None or 0: no classes).
    a, b (float): Pitman-Yor discount and concentration of every adapted nonterminal.
    RETURNS (str): Grammar text for `spacy_ag.grammar.read_grammar`.
    """
    if kind not in KINDS:
        raise ValueError(Errors.E406.format(kind=kind, kinds=', '.join(KINDS)))
    if classes is not None and (isinstance(classes, bool) or not isinstance(classes, int) or classes < 0):
        raise ValueError(Errors.E407.format(classes=classes))
    if not 0.0 <= a < 1.0 or not b > 0.0:
        raise ValueError(Errors.E408.format(a=a, b=b))
    numbers = f"1 {_number(a)} {_number(b)}"
    header = [f"# Morphology grammar {grammar_name(kind, classes)!r}"
              + (f" with {classes} hidden classes" if classes else "")
              + " (docs/algorithms.md 2.5), generated by spacy_ag.morphology.grammars.",
              f"# Adapted nonterminals: a = {_number(a)}, b = {_number(b)}; `1 1` marks unadapted rules."]
    lines: List[str] = []
    indices = [f"_{c}" for c in range(1, classes + 1)] if classes else [""]
    if classes:
        lines += [f"1 1 Word --> Word{i}" for i in indices]
    names = {parent for parent, _, _ in KINDS[kind]}
    for i in indices:
        for parent, rhs, adapted in KINDS[kind]:
            rhs = " ".join(_indexed(item, names, i) for item in rhs.split())
            lines.append(f"{numbers if adapted else '1 1'} {parent}{i} --> {rhs}")
    lines.append("1 1 Char --> [:corpus:]")
    return "\n".join(header + lines) + "\n"


def _indexed(item: str, names, index: str) -> str:
    """``(Suffix)`` -> ``(Suffix_3)``: the class index goes inside the shorthand; Char is shared."""
    core = item.strip("()+*")
    return item.replace(core, core + index) if core in names else item
