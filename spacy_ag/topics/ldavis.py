"""The inputs of pyLDAvis for a topic model, so its topics can be explored in the tool topic
modellers already use (``pyLDAvis.prepare(**data)``).

pyLDAvis wants a topic-term matrix over a fixed vocabulary whose rows sum to 1. Our topics have an
unbounded vocabulary: each topic also spells words afresh from characters. So the vocabulary is
the words of the documents given, and row i is P_i(w) under the topics (cached words and
character base together, `word_probabilities`) renormalised over that vocabulary. The other inputs
are the documents' fitted proportions E_q[theta], their lengths and the word frequencies, counted
over the same tokens.

`offline_ldavis_page` renders them as one self-contained page, the topics in our order and
numbered as ours.
"""
from __future__ import annotations

from collections import Counter
from typing import Dict, List, Optional, Sequence, Tuple


__all__ = ["offline_ldavis_page", "pyldavis_data"]


def pyldavis_data(model, docs: Sequence[Sequence[str]]) -> Dict[str, object]:
    """The keyword arguments of ``pyLDAvis.prepare`` for `model` (a fitted TopicModel) on `docs`.

    RETURNS (dict): topic_term_dists (K x V, rows sum to 1), doc_topic_dists (D x K), doc_lengths
        (D), vocab (V words, most frequent first), term_frequency (V), all as lists.
    Tokens the model cannot spell (a character it never saw) are left out of every count.
    """
    docs = [[w for w in doc if model.can_spell(w)] for doc in docs]
    frequency = Counter(w for doc in docs for w in doc)
    vocab: List[str] = sorted(frequency, key=lambda w: (-frequency[w], w))
    if not vocab:
        raise ValueError(Errors.E419)
    probs = model.word_probabilities(vocab)
    topic_term = probs / probs.sum(axis=1, keepdims=True)
    return {
        "topic_term_dists": topic_term.tolist(),
        "doc_topic_dists": model.infer(docs).tolist(),
        "doc_lengths": [len(doc) for doc in docs],
        "vocab": vocab,
        "term_frequency": [frequency[w] for w in vocab],
    }


# ---------------------------------------------------------------------------------------------- the page
#: Edits of LDAvis's script (pyLDAvis 3.x, ``ldavis.v3.0.0.js``) so that the page numbers the topics
#: as `spacy-ag topics` and `tag-topics` do, from 0. LDAvis numbers them 1..K internally and uses 0
#: for "no topic selected" (and pyLDAvis's ``start_index=0`` breaks its selection, pyLDAvis issue
#: 265), so the data keeps 1..K and only what the page shows is shifted: the circles' labels, the
#: bar chart's title, and the "Selected Topic" box (which reads and writes through a property that
#: shows k - 1 for LDAvis's k, and nothing for 0). The page address (#topic=k) keeps LDAvis's k.
_OUR_NUMBERING_EDITS = (
    ("                return d.topics;\n", "                return d.topics - 1;\n"),
    ('" Most Relevant Terms for Topic " + topics + " ("', '" Most Relevant Terms for Topic " + (topics - 1) + " ("'),
    ("            topicInput.id = topicID;\n",
     "            topicInput.id = topicID;\n"
     "            // spacy-ag: the box shows our topic numbers (from 0) for LDAvis's 1..K, nothing for its 0\n"
     "            (function(input) {\n"
     "                var own = Object.getOwnPropertyDescriptor(HTMLInputElement.prototype, \"value\");\n"
     "                Object.defineProperty(input, \"value\", {\n"
     "                    configurable: true,\n"
     "                    get: function() {\n"
     "                        var shown = own.get.call(this).trim();\n"
     "                        return shown === \"\" ? \"0\" : String(Number(shown) + 1);\n"
     "                    },\n"
     "                    set: function(k) { own.set.call(this, Number(k) > 0 ? String(Number(k) - 1) : \"\"); }\n"
     "                });\n"
     "                input.value = 0;\n"
     "            })(topicInput);\n"),
)
LDAVIS_ELEMENT_ID = "ldavis_spacy_ag"


def _script_text(text: str) -> str:
    """`text` safe inside an HTML <script> element: no "</script" nor "<!--" can end or confuse it."""
    import re

    return re.sub(r"<(/script|!--)", r"<\\\1", text, flags=re.IGNORECASE)


def _numbered_as_ours(script: str) -> Optional[str]:
    """LDAvis's script with `_OUR_NUMBERING_EDITS` made, or None if it is not the script they fit
    (each edit must match exactly once)."""
    for old, new in _OUR_NUMBERING_EDITS:
        if script.count(old) != 1:
            return None
        script = script.replace(old, new)
    return script


def offline_ldavis_page(pyldavis, data: Dict[str, object], title: str = "spacy-ag topics") -> Tuple[str, bool]:
    """The pyLDAvis page of `data` (`pyldavis_data`) as one self-contained HTML file.

    pyLDAvis's own page loads d3 and LDAvis from the network; this one inlines the copies that the
    installed pyLDAvis package ships (its ``js/`` folder: d3, LDAvis's script and stylesheet), so
    it opens offline. The topics keep our order (``sort_topics=False``; pyLDAvis would sort them
    by size) and are shown numbered from 0, as `spacy-ag topics` prints them.

    RETURNS (Tuple[str, bool]): the page, and whether its numbers are ours (False only with a
        pyLDAvis whose script the numbering edits do not fit: the page then numbers from 1).
    """
    import json
    from html import escape
    from pathlib import Path

    from ..errors import Errors, SpacyAgError

    from pyLDAvis import urls

    files = {}
    for what, path in (("d3 script", urls.D3_LOCAL), ("LDAvis script", urls.LDAVIS_LOCAL),
                       ("LDAvis stylesheet", urls.LDAVIS_CSS_LOCAL)):
        if not Path(path).is_file():
            raise SpacyAgError(Errors.E147.format(path=path, what=what))
        files[what] = Path(path).read_text(encoding="utf8")
    ldavis = _numbered_as_ours(files["LDAvis script"])
    ours = ldavis is not None
    prepared = pyldavis.prepare(**data, n_jobs=1, sort_topics=False)
    # JSON inside a script: <, > and & as escapes, so no word of the vocabulary can end the element
    vis = (prepared.to_json().replace("<", "\\u003c").replace(">", "\\u003e").replace("&", "\\u0026"))
    note = ("Topics are numbered as <code>spacy-ag topics</code> prints them, from 0." if ours else
            "Topics are numbered by LDAvis, from 1: its topic k is topic k - 1 of <code>spacy-ag topics</code>.")
    page = (
        "<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
        f"<title>{escape(title)}</title>\n"
        f"<style>\n{files['LDAvis stylesheet']}\n</style>\n"
        f"<script>\n{_script_text(files['d3 script'])}\n</script>\n"
        f"<script>\n{_script_text(ldavis if ours else files['LDAvis script'])}\n</script>\n"
        "</head>\n<body style=\"background-color:white\">\n"
        f"<p style=\"font-family:sans-serif;font-size:13px\">{escape(title)}: {len(data['topic_term_dists'])} "
        f"topics over {len(data['vocab'])} words. {note}</p>\n"
        f"<div id=\"{LDAVIS_ELEMENT_ID}\" style=\"background-color:white;\"></div>\n"
        f"<script>\nnew LDAvis(\"#{LDAVIS_ELEMENT_ID}\", {vis});\n</script>\n"
        "</body>\n</html>\n")
    return page, ours
