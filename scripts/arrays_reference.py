"""Write docs/arrays.md, the field tables of the kernels' arrays, from the docstrings that hold them.

    python scripts/arrays_reference.py            # rewrite docs/arrays.md
    python scripts/arrays_reference.py --check    # exit 1 if the committed file differs

The kernels of `spacy_ag.core` pass their data as namedtuples of flat arrays (the
sampler state, the compiled grammar, the variational statistics, ...). Each structure's
table (field, shape, dtype, meaning) lives in the docstring of the module or class that
defines it, beside the code that allocates the arrays; this script collects them, with
the paragraphs around them, so that the reference cannot drift from the docstrings:
tests/unit/test_arrays_reference.py fails when the committed file is not what this script
writes, and checks every table against the arrays the code allocates.

A table in a docstring is an indented block whose first line is the header
``field  shape  dtype  meaning``; each row starts with its field at the header's first
column, continuation lines of a meaning start at the meaning column. A structure's
section in docs/arrays.md is its docstring from the paragraph before its first table to
the end.
"""
from __future__ import annotations

import ast
import re
import sys
import textwrap
from pathlib import Path
from typing import List, NamedTuple, Optional, Sequence, Tuple

REPO = Path(__file__).resolve().parent.parent
REFERENCE = REPO / "docs" / "arrays.md"

HEADER = re.compile(r"^( *)field( +)shape( +)dtype( +)meaning$")


class Structure(NamedTuple):
    title: str
    path: str  # relative to the repository
    owner: Optional[str]  # a class whose docstring holds the table; None: the module docstring


#: The structures, in the order of docs/arrays.md.
STRUCTURES: Sequence[Structure] = (
    Structure("`GrammarArrays`: the compiled grammar", "spacy_ag/core/compiled.py", None),
    Structure("`State`: the sampler state, grammatons included", "spacy_ag/core/state.py", None),
    Structure("`Variational`: the variational statistics", "spacy_ag/core/grammatons.py", None),
    Structure("`Workspace`: the MCMC scratch arrays", "spacy_ag/core/sampler.py", "Workspace"),
    Structure("Charts and tree records", "spacy_ag/core/chart.py", None),
    Structure("Viterbi items", "spacy_ag/core/viterbi.py", None),
    Structure("`Draws`: the trees of an E-step", "spacy_ag/runs/sharded_estep.py", "Draws"),
    Structure("`TopicRules`: the topic grammar's rule ids", "spacy_ag/core/topic_draws.py", None),
    Structure("Collapsed Gibbs sampling of topics", "spacy_ag/core/topic_gibbs.py", None),
)


class Row(NamedTuple):
    field: str
    shape: str
    dtype: str
    meaning: str


def docstring(structure: Structure) -> str:
    tree = ast.parse((REPO / structure.path).read_text(encoding="utf8"))
    if structure.owner is None:
        return ast.get_docstring(tree, clean=True) or ""
    for node in tree.body:
        if isinstance(node, ast.ClassDef) and node.name == structure.owner:
            return ast.get_docstring(node, clean=True) or ""
    raise LookupError(f"{structure.path} has no class {structure.owner}")


def parse_table(lines: List[str]) -> List[Row]:
    """The rows of a table given as its lines, the header first."""
    match = HEADER.match(lines[0])
    indent = len(match.group(1))
    shape_at = indent + len("field") + len(match.group(2))
    dtype_at = shape_at + len("shape") + len(match.group(3))
    meaning_at = dtype_at + len("dtype") + len(match.group(4))
    rows: List[List[str]] = []
    for line in lines[1:]:
        starts = (indent, shape_at, dtype_at, meaning_at)
        aligned = all(line[at - 1:at] == " " and line[at:at + 1] not in ("", " ") for at in starts[1:])
        if line[:meaning_at].strip() and not line[:indent].strip() and line[indent:indent + 1] != " " and aligned:
            rows.append([line[indent:shape_at].strip(), line[shape_at:dtype_at].strip(),
                         line[dtype_at:meaning_at].strip(), line[meaning_at:].strip()])
        elif rows and not line[:meaning_at].strip():
            rows[-1][3] += " " + line[meaning_at:].strip()
        else:
            raise ValueError(f"a table line out of its columns: {line!r}")
    return [Row(*row) for row in rows]


def blocks(text: str) -> List[Tuple[str, object]]:
    """The docstring as ("text", lines) and ("table", rows) blocks, split at blank lines."""
    out: List[Tuple[str, object]] = []
    for chunk in re.split(r"\n\s*\n", text.strip("\n")):
        lines = chunk.split("\n")
        if HEADER.match(lines[0]):
            out.append(("table", parse_table(lines)))
        else:
            out.append(("text", lines))
    return out


def tables(structure: Structure) -> List[List[Row]]:
    return [rows for kind, rows in blocks(docstring(structure)) if kind == "table"]


def format_table(rows: Sequence[Row], indent: int = 4, width: int = 116) -> str:
    """A table as a docstring holds it (the inverse of `parse_table`)."""
    widths = [max(len(name), *(len(getattr(r, name)) for r in rows)) + 2 for name in ("field", "shape", "dtype")]
    meaning_at = indent + sum(widths)
    head = " " * indent + "".join(h.ljust(w) for h, w in zip(("field", "shape", "dtype"), widths)) + "meaning"
    out = [head]
    for row in rows:
        start = " " * indent + "".join(v.ljust(w) for v, w in zip(row[:3], widths))
        wrapped = textwrap.wrap(row.meaning, width - meaning_at) or [""]
        out.append(start + wrapped[0])
        out.extend(" " * meaning_at + more for more in wrapped[1:])
    return "\n".join(out)


def _cell(text: str) -> str:
    return text.replace("|", "\\|").replace("*", "\\*")


def markdown_table(rows: Sequence[Row]) -> str:
    out = ["| field | shape | dtype | meaning |", "|---|---|---|---|"]
    out += [f"| `{r.field}` | `{r.shape}` | {r.dtype} | {_cell(r.meaning)} |" for r in rows]
    return "\n".join(out)


def section(structure: Structure) -> str:
    parts = blocks(docstring(structure))
    first = next(i for i, (kind, _) in enumerate(parts) if kind == "table")
    start = first - 1 if first > 0 and parts[first - 1][0] == "text" else first
    where = structure.path + (f", `{structure.owner}`" if structure.owner else "")
    out = [f"## {structure.title}", "", f"Source: [{where}](../{structure.path})."]
    for kind, content in parts[start:]:
        out.append("")
        if kind == "table":
            out.append(markdown_table(content))
        else:
            text = "\n".join(content)
            out.append(textwrap.dedent(text) if not text.startswith(" ") else "```\n" + textwrap.dedent(text) + "\n```")
    return "\n".join(out)


INTRO = """\
# The kernels' arrays

*Written by `scripts/arrays_reference.py` from the docstrings beside the code that allocates
these arrays; edit those, then run the script.*

The numba kernels of `spacy_ag/core/` take their data as namedtuples of flat numpy arrays:
the compiled grammar `G`, the sampler state `S`, the variational statistics `V` and the
topic grammar's rule ids `R`, plus scratch and result arrays. Each table gives every field's
shape (the symbols are defined above the table), its dtype (the one the kernels are compiled
for) and its meaning: what indexes each axis, the units, the sentinel values (-1 for none),
and which fields are counts. Kernels that take other arrays name their shapes in their
docstrings ("Shapes: ...")."""


def render() -> str:
    body = [INTRO] + [section(s) for s in STRUCTURES]
    return "\n\n".join(body) + "\n"


def main(argv: Sequence[str]) -> int:
    text = render()
    if "--check" in argv:
        if REFERENCE.read_text(encoding="utf8") != text:
            print(f"{REFERENCE} is out of date: run python scripts/arrays_reference.py", file=sys.stderr)
            return 1
        return 0
    REFERENCE.write_text(text, encoding="utf8")
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
