"""The InfVocLDA grammar of a number of topics and an alphabet (docs/algorithms.md 2.4).

Generated, never written by hand: documents choose topics (`DOC -> TOPIC_i`,
whose Dirichlet pseudo-count is LDA's alpha), adapted topics draw words
(`@TOPIC_i -> WORD`, a Pitman-Yor cache per topic over an unbounded
vocabulary), and words are spelled from characters, so an unseen word gets
probability from its spelling. The per-document rules `DOC_j -> _j TOPIC_i`
of the paper become one `DOC` whose proportions are fitted per document
(local variational parameters, as in online LDA), which keeps the grammar
independent of the number of documents.
"""
from __future__ import annotations

from typing import Iterable, Optional

from ..errors import Errors
from ..grammar import Grammar, parse_grammar_text
from ..text_units import graphemes


def topic_grammar_text(n_topics: int, alphabet: Iterable[str], *, alpha: float = 0.1, a: float = 0.0,
                       b: float = 10.0, truncation: Optional[int] = 3000, word_adapted: bool = False) -> str:
    """py-cfg text of the topic grammar (weights, then a and b; `1 1` = unadapted)."""
    if n_topics < 1:
        raise ValueError(Errors.E413.format(n_topics=n_topics))
    chars = sorted(set(alphabet))
    if not chars:
        raise ValueError(Errors.E414)
    # a character is a text unit (spacy_ag.text_units): a code point or a grapheme cluster, never a space
    bad = [c for c in chars if not isinstance(c, str) or len(graphemes(c)) != 1 or any(ch.isspace() for ch in c)]
    if bad:
        raise ValueError(Errors.E415.format(bad=bad[:3]))
    lines = [f"# InfVocLDA topic grammar: {n_topics} topics over {len(chars)} characters (docs/algorithms.md 2.4)",
             "1 1 SENT --> DOC"]
    lines += [f"{alpha!r} 1 DOC --> TOPIC_{i}" for i in range(n_topics)]
    lines += [f"1 {a!r} {b!r} TOPIC_{i} --> WORD" for i in range(n_topics)]
    if truncation:
        lines += [f"@ TOPIC_{i} K={int(truncation)}" for i in range(n_topics)]
    lines.append("1 0 100 WORD --> CHARS" if word_adapted else "1 1 WORD --> CHARS")
    lines += ["1 1 CHARS --> CHAR", "1 1 CHARS --> CHAR CHARS"]
    lines += [f"1 1 CHAR --> {c}" for c in chars]
    return "\n".join(lines) + "\n"


def topic_grammar(n_topics: int, alphabet: Iterable[str], **options) -> Grammar:
    text = topic_grammar_text(n_topics, alphabet, **options)
    return parse_grammar_text(text, fmt="pycfg", source=f"<topic grammar, {n_topics} topics>", start="SENT")
