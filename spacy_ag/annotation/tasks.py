"""What `spacy-ag segment`, `parse` and `tag-topics` do to one batch of numbered lines.

The command's options travel as a small frozen task, and applying a task to
a batch is the same function wherever it runs: the single-file command, the
directory runner on this machine and a Ray actor. That is what makes the
output of a corpus the same whatever backend or number of workers annotated
it. A task gives back the output lines (one per input line) and the warnings
(each naming the file and line), so whoever runs it decides where they go.
A worker that gets the model as bytes (`to_bytes`) rebuilds it with the
task's `load`.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import List, Optional, Sequence, Tuple

from ..errors import Errors

__all__ = ["Batch", "Parse", "SEGMENT_FORMATS", "Segment", "TagTopics", "TaskOutput"]

#: Numbered lines of one input, 1-based as in the file.
Batch = Sequence[Tuple[int, str]]
#: (output lines, one per input line; warnings)
TaskOutput = Tuple[List[str], List[str]]


def _adaptor_grammar(data: bytes):
    from ..model import AdaptorGrammar

    return AdaptorGrammar.from_bytes(data, "<the model sent to the worker>")


#: How `Segment` reads a line: plain text, or wordseg's prepared or tagged text (units separated by
#: spaces, tags dropped), whose words it writes as wordseg does: units joined, words separated by spaces.
SEGMENT_FORMATS = ("text", "wordseg")


@dataclass(frozen=True)
class Segment:
    """`spacy-ag segment`: the words of each line joined by spaces, or with `level` each word's morphs.

    With ``format="wordseg"`` a line is wordseg's prepared (or tagged) text:
    its units are the terminals, whatever the model's mode, so a word
    boundary only falls between units, and the output is wordseg's segmented
    text, which wordseg-eval scores. A plain-text line that holds a
    ``;eword`` token is refused (E150).
    """

    category: Optional[str] = None
    level: Optional[str] = None
    batch_size: int = 1000
    format: str = "text"
    label = "segmenting"
    load = staticmethod(_adaptor_grammar)

    @property
    def done(self) -> str:
        """What the output is, for the closing message."""
        return "Segmentation" if self.level is None else "Analyses"

    def check(self, model) -> None:
        """Fail on options the model cannot serve, before any line is read."""
        if self.format not in SEGMENT_FORMATS:
            raise ValueError(Errors.E461.format(formats=', '.join(SEGMENT_FORMATS), format=self.format))
        if self.level is not None and self.format != "text":
            raise ValueError(Errors.E462)
        if self.category is not None:
            from ..grammar import check_categories

            check_categories(model.grammar, self.category, "--category")
        if self.level is not None:
            from ..morphology.analysis import label_matches, parse_levels

            unknown = [name for name in parse_levels(self.level)
                       if not any(label_matches(nt, [name]) for nt in model.grammar.nonterminals)]
            if unknown:
                raise ValueError(Errors.E515.format(unknown=",".join(unknown), example=unknown[0],
                                                    nonterminals=", ".join(model.grammar.nonterminals)))

    def __call__(self, model, batch: Batch, source: str) -> TaskOutput:
        if self.level is not None:
            return self._levels(model, batch), []
        from ..input_formats import has_wordseg_tags, wordseg_units
        from ..text_units import check_text

        texts = [check_text(text, f"{source}:{number}") for number, text in batch]
        if self.format == "wordseg":
            texts = [wordseg_units(text) for text in texts]
        else:
            for number, text in batch:
                if has_wordseg_tags(text):
                    from ..errors import TextError

                    raise TextError(Errors.E150.format(path=source, line=number, expected="plain text",
                                                       fix="--format wordseg reads wordseg's tagged and prepared "
                                                           "text"))
        return [" ".join(words) for words in model.segment(texts, self.category)], []

    def _levels(self, model, batch: Batch) -> List[str]:
        """Every word of every line as its morphs (`spacy_ag.morphology.analysis`)."""
        from ..morphology.analysis import analyse_words, format_morphs, parse_levels

        lines = [text.split() for _, text in batch]
        analyses = iter(analyse_words(model, [w for words in lines for w in words], parse_levels(self.level)))
        return [" ".join(format_morphs(next(analyses)[0]) for _ in words) for words in lines]


@dataclass(frozen=True)
class Parse:
    """`spacy-ag parse`: the most probable tree of each line, bracketed; `(no parse)` and a warning when none."""

    compact: bool = True
    batch_size: int = 200
    label = "parsing"
    done = "Trees"
    load = staticmethod(_adaptor_grammar)

    def check(self, model) -> None:
        """Parsing takes no option the model could refuse."""

    def __call__(self, model, batch: Batch, source: str) -> TaskOutput:
        from ..text_units import check_text

        texts = [model._terminals(check_text(text, f"{source}:{number}")) for number, text in batch]
        trees = iter(model.parse([t for t in texts if t]))
        known = model.compiled.term_index
        out: List[str] = []
        warnings: List[str] = []
        for (number, _), terms in zip(batch, texts):
            if not terms:
                out.append("")
                continue
            tree = next(trees)
            if tree is not None:
                out.append(tree.bracketed(compact=self.compact))
                continue
            out.append("(no parse)")
            unknown = sorted({t for t in terms if t not in known})
            why = (f"{len(unknown)} symbol(s) the grammar does not know: "
                   + " ".join(repr(t) for t in unknown[:5])) if unknown else "the grammar has no parse"
            warnings.append(f"{source}:{number}: no parse ({why})")
        return out, warnings


@dataclass(frozen=True)
class TagTopics:
    """`spacy-ag tag-topics`: a line's most probable topic, a tab, and its topic proportions E_q[theta].

    A line is one document, its tokens separated by whitespace (as the topic
    model was trained); a blank line is no document and stays blank. The
    proportions of a document depend on that document alone, so batches do
    not change them.
    """

    batch_size: int = 500
    label = "tagging"
    done = "Topics"

    @staticmethod
    def load(data: bytes):
        from ..topics import TopicModel

        return TopicModel.from_bytes(data, "<the topic model sent to the worker>")

    def check(self, model) -> None:
        """Tagging takes no option the model could refuse."""

    def __call__(self, model, batch: Batch, source: str) -> TaskOutput:
        from ..text_units import check_text

        docs = [check_text(text, f"{source}:{number}").split() for number, text in batch]
        proportions = iter(model.infer([d for d in docs if d]) if any(docs) else [])
        out = []
        for doc in docs:
            if not doc:
                out.append("")
                continue
            theta = next(proportions)
            out.append(f"{int(theta.argmax())}\t" + " ".join(f"{p:.4f}" for p in theta))
        return out, []
