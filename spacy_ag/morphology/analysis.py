"""Reading a word's morphs and hidden class off its parse tree.

The morphology grammars (`spacy_ag.morphology.grammars`) name their morphs
``Prefix``, ``Stem`` and ``Suffix`` and, with hidden classes, ``Stem_3`` and
the like. Users ask for morphs by the *unindexed* name (``--level
Stem,Suffix``), so a level matches a label equal to it or equal to it plus
``_<digits>``: the class index is part of the model, not of what a morph is.

A word's segmentation at a set of levels is read like docs/algorithms.md 5.1 reads
words: the yields of the outermost nodes whose label matches a level, left to
right. Characters covered by no such node (for example the prefix of a
prefix-stem-suffix parse when only ``Stem,Suffix`` are asked for) are not
dropped but kept together as one morph per uncovered run, so the morphs
always spell the word and ``walk+ing`` can be joined back to ``walking``.
"""
from __future__ import annotations

import re
from typing import Iterable, List, Optional, Sequence, Tuple

from ..errors import Errors
from ..tree import Tree

__all__ = [
    "MORPH_SEPARATOR",
    "analyse_words",
    "format_morphs",
    "label_matches",
    "morph_class",
    "morphs_at",
    "parse_levels",
]

#: Joins morphs in the one-line form (``walk+ing``) printed by ``spacy-ag segment --level``.
MORPH_SEPARATOR = "+"

_CLASS_LABEL = re.compile(r"^(?P<base>.+)_(?P<index>\d+)$")


def parse_levels(value: str) -> Tuple[str, ...]:
    """``"Stem,Suffix"`` -> ``("Stem", "Suffix")`` (commas and/or spaces; no empty names)."""
    levels = tuple(p for p in re.split(r"[,\s]+", value.strip()) if p)
    if not levels:
        raise ValueError(Errors.E398.format(value=value))
    return levels


def label_matches(label: str, levels: Iterable[str]) -> bool:
    """True if ``label`` is one of ``levels``, or one of them plus a class index (``Stem_3``)."""
    levels = tuple(levels)
    if label in levels:
        return True
    m = _CLASS_LABEL.match(label)
    return bool(m) and m.group("base") in levels


def morphs_at(tree: Tree, levels: Sequence[str]) -> List[str]:
    """The morphs of a parsed word at the given levels (see the module doc).

    tree (Tree): The word's parse (its leaves are the word's characters).
    levels (Sequence[str]): Nonterminal names, unindexed (``Stem``) or exact (``Stem_2``).
    RETURNS (List[str]): Morphs that spell the word.
    """
    out: List[str] = []
    pending: List[str] = []  # characters of the current uncovered run
    todo: List = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, str):
            pending.append(node)
            continue
        if label_matches(node.label, levels):
            if pending:
                out.append("".join(pending))
                pending = []
            out.append("".join(node.leaves()))
            continue
        todo.extend(reversed(node.children))
    if pending:
        out.append("".join(pending))
    return out


def morph_class(tree: Tree, word_label: str = "Word") -> Optional[int]:
    """The hidden class ``c`` of the outermost ``Word_c`` node, or None if the grammar has no classes."""
    todo: List = [tree]
    while todo:
        node = todo.pop()
        if isinstance(node, str):
            continue
        m = _CLASS_LABEL.match(node.label)
        if m and m.group("base") == word_label:
            return int(m.group("index"))
        todo.extend(reversed(node.children))
    return None


def format_morphs(morphs: Sequence[str], separator: str = MORPH_SEPARATOR) -> str:
    """``["walk", "ing"]`` -> ``"walk+ing"``."""
    return separator.join(morphs)


def analyse_words(model, words: Sequence[str], levels: Sequence[str]) -> List[Tuple[List[str], Optional[int]]]:
    """(morphs, class) of each word under a trained model's most probable parse.

    model: An `AdaptorGrammar` over characters (``parse`` is all that is used).
    words (Sequence[str]): Words; each distinct word is parsed once.
    levels (Sequence[str]): The morph nonterminals (`morphs_at`).
    RETURNS: One pair per word; a word the grammar cannot parse (a character
        never seen in training) is one morph with class None.
    """
    distinct = list(dict.fromkeys(words))
    trees = model.parse(distinct) if distinct else []
    found = {}
    for word, tree in zip(distinct, trees):
        found[word] = ([word], None) if tree is None else (morphs_at(tree, levels), morph_class(tree))
    return [(list(found[w][0]), found[w][1]) for w in words]
