"""Pictures of adaptor-grammar trees: inline SVG, one self-contained HTML page, inline in Jupyter.

A bracketed tree is ambiguous for our corpora (the Brent phoneme alphabet has
``(`` and ``)`` among its symbols), so the pictures draw every terminal as a
leaf box of its own, text escaped, never as brackets. What the pictures show:

* terminals: grey boxes along the bottom, in text order (a character the
  page could not show, such as a control character, is written ``U+XXXX``);
* nonterminals: white boxes; adapted nonterminals (those with a Pitman-Yor
  cache) orange, with a thicker outline;
* a reused cached subtree (a table of the adaptor, the tree's ``cached``
  node): a deeper orange box with a badge ``×n`` (how often the training
  corpus used that table: customers for MCMC, expected uses for a
  variational model) and a shaded band over everything it covers.

Compact trees (the default of ``spacy-ag parse`` and of ``ag_parser``) keep
only the root and the adapted nodes, as py-cfg's ``-C``; full trees every
nonterminal. The same drawing comes from two places:

* `TreePageTask`: ``spacy-ag parse MODEL INPUT --svg PAGE.html``, one tree
  per input line, from the model's `spacy_ag.tree.Tree`;
* `tree_pictures` / `render_tree`: Docs processed by ``ag_parser``, from the
  span group it writes (``doc.spans["ag"]`` and its attrs). `TreePictures`
  shows itself inline in Jupyter (``_repr_html_``), and ``render_tree(doc,
  jupyter=True)`` displays it as ``displacy.render`` does.

Every page and fragment is self-contained: inline SVG with inline styles, no
script, no font, stylesheet or image fetched from anywhere.
"""
from __future__ import annotations

import html
import unicodedata
from dataclasses import dataclass, field
from pathlib import Path
from typing import Iterable, List, Optional, Sequence, Tuple, Union

__all__ = ["DrawnNode", "TreePageTask", "TreePictures", "drawn_from_doc", "drawn_from_tree", "render_tree",
           "tree_page", "tree_pictures", "tree_svg"]

# ---------------------------------------------------------------------------------------------- geometry
FONT_SIZE = 12
#: Width of one character cell of the monospace font at FONT_SIZE (about 0.6 em in common monospace fonts).
CELL = 7.4
PAD_X, BOX_H = 6, 20
GAP = 8  # between neighbouring subtrees
LEVEL_H = 46  # between the tops of two levels
MARGIN = 10
BADGE_H = 14
FONT = "DejaVu Sans Mono, Menlo, Consolas, monospace"

# ---------------------------------------------------------------------------------------------- styles
#: (fill, stroke, stroke width) of each kind of box; the legend shows the same.
PLAIN = ("#ffffff", "#616161", 1)
ADAPTED = ("#ffe0b2", "#e65100", 2)
CACHED = ("#ffb74d", "#bf360c", 2.5)
TERMINAL = ("#eceff1", "#90a4ae", 1)
BADGE_FILL, BAND_FILL = "#bf360c", "#ff9800"


@dataclass
class DrawnNode:
    """A nonterminal as drawn: its children are nodes and terminal strings, in text order."""

    label: str
    adapted: bool = False
    cached: bool = False
    customers: Optional[Union[int, float]] = None
    children: List[Union["DrawnNode", str]] = field(default_factory=list)


# ---------------------------------------------------------------------------------------------- sources
def drawn_from_tree(tree, compact: bool = True) -> DrawnNode:
    """The drawing of a `spacy_ag.tree.Tree`; `compact` keeps the root and the adapted nodes only,
    splicing the children of the others into their parent (the nodes ``ag_parser`` keeps)."""

    def children(node) -> List[Union[DrawnNode, str]]:
        out: List[Union[DrawnNode, str]] = []
        for child in node.children:
            if isinstance(child, str):
                out.append(child)
            elif compact and not child.adapted:
                out.extend(children(child))
            else:
                out.append(convert(child))
        return out

    def convert(node) -> DrawnNode:
        return DrawnNode(node.label, bool(node.adapted), bool(node.cached), node.customers, children(node))

    return convert(tree)


def _parser_spans_key() -> str:
    from ..settings import ParserSettings

    return ParserSettings.spans_key


def drawn_from_doc(doc, spans_key: Optional[str] = None) -> List[DrawnNode]:
    """The trees ``ag_parser`` stored in `doc` (one in doc mode, one per token in token mode).

    The nodes come from the span group `spans_key` (``ag_parser``'s ``spans_key``, "ag" by
    default) and its attrs: parent, adapted, cached, customers, the exact character offsets; the
    terminals are the text units (``units``) of each root's text, without whitespace.
    """
    from ..errors import Errors, SpacyAgError
    from ..text_units import DEFAULT_UNITS, terminal_spans

    key = spans_key or _parser_spans_key()
    if key not in doc.spans:
        raise SpacyAgError(Errors.E145.format(key=key))
    group = doc.spans[key]
    attrs = group.attrs
    if len(group) and not all(name in attrs for name in ("parent", "start_char", "end_char")):
        raise SpacyAgError(Errors.E145.format(key=key))
    n = len(group)
    units = attrs.get("units") or DEFAULT_UNITS
    parents = list(attrs.get("parent", []))
    starts, ends = list(attrs.get("start_char", [])), list(attrs.get("end_char", []))
    flags = {name: list(attrs.get(name) or [None] * n) for name in ("adapted", "cached", "customers")}
    nodes = [DrawnNode(group[i].label_, bool(flags["adapted"][i]), bool(flags["cached"][i]), flags["customers"][i])
             for i in range(n)]
    kids: List[List[int]] = [[] for _ in range(n)]
    roots: List[int] = []
    for i, parent in enumerate(parents):
        (kids[parent] if parent >= 0 else roots).append(i)
    for root in roots:
        text = doc.text[starts[root]:ends[root]]
        terminals = [(starts[root] + s, starts[root] + e) for s, e in terminal_spans(text, units)]
        stack = [root]
        while stack:
            i = stack.pop()
            inner = sorted(kids[i], key=lambda k: starts[k])
            pending = list(inner)
            for s, e in terminals:
                if s < starts[i] or s >= ends[i]:
                    continue
                while pending and ends[pending[0]] <= s:
                    nodes[i].children.append(nodes[pending.pop(0)])
                if pending and starts[pending[0]] <= s:
                    continue  # under a child node
                nodes[i].children.append(doc.text[s:e])
            nodes[i].children.extend(nodes[k] for k in pending)
            stack.extend(inner)
    return [nodes[r] for r in roots]


# ---------------------------------------------------------------------------------------------- text
def _cells(text: str) -> int:
    """Character cells `text` takes in a monospace font: wide characters two, combining marks none."""
    width = 0
    for ch in text:
        if unicodedata.combining(ch) or unicodedata.category(ch) in ("Mn", "Me", "Cf"):
            continue
        width += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return width


def _visible(text: str) -> str:
    """`text` with every character a page cannot show (controls, separators, unassigned, surrogates)
    written as U+XXXX, so every terminal has a visible, distinct face."""
    out = []
    for ch in text:
        category = unicodedata.category(ch)
        if category in ("Cc", "Cs", "Cn", "Co", "Zl", "Zp", "Zs") or (category == "Cf" and len(text) == 1):
            out.append(f"U+{ord(ch):04X}")
        else:
            out.append(ch)
    return "".join(out)


def _esc(text: str) -> str:
    return html.escape(text, quote=True)


def _count(value: Union[int, float]) -> str:
    return str(value) if isinstance(value, int) else f"{value:.1f}"


# ---------------------------------------------------------------------------------------------- layout
@dataclass
class _Box:
    kind: str  # "node" or "terminal"
    text: str
    x: float  # centre
    y: float  # top
    w: float
    node: Optional[DrawnNode] = None
    parent: Optional["_Box"] = None
    span: Tuple[float, float] = (0.0, 0.0)  # left and right edges of everything below


def _box_width(text: str, badge: str = "") -> float:
    width = _cells(text) * CELL + 2 * PAD_X
    if badge:
        width += _cells(badge) * CELL * 0.85 + PAD_X
    return max(width, 2 * PAD_X + CELL)


def _badge(node: DrawnNode) -> str:
    return f"×{_count(node.customers)}" if node.cached and node.customers is not None else ""


def _depth(node: DrawnNode) -> int:
    return 1 + max((_depth(c) for c in node.children if isinstance(c, DrawnNode)), default=0)


def _layout(root: DrawnNode) -> Tuple[List[_Box], float, float]:
    """Boxes of the tree: nonterminals by depth, terminals on one row below them, each parent
    centred over its children; returns (boxes, width, height)."""
    leaf_y = MARGIN + _depth(root) * LEVEL_H
    boxes: List[_Box] = []

    def place(item: Union[DrawnNode, str], depth: int, left: float, parent: Optional[_Box]) -> _Box:
        if isinstance(item, str):
            face = _visible(item)
            w = _box_width(face)
            box = _Box("terminal", face, left + w / 2, leaf_y, w, parent=parent, span=(left, left + w))
            boxes.append(box)
            return box
        w = _box_width(item.label, _badge(item))
        box = _Box("node", item.label, 0.0, MARGIN + depth * LEVEL_H, w, node=item, parent=parent)
        boxes.append(box)
        # lay the children out from `left`, then shift them right if the label is wider
        first_child = len(boxes)
        x = left
        placed = []
        for child in item.children:
            child_box = place(child, depth + 1, x, box)
            placed.append(child_box)
            x = child_box.span[1] + GAP
        inner = (x - GAP - left) if placed else 0.0
        shift = max(0.0, (w - inner) / 2)
        if shift:
            for b in boxes[first_child:]:
                b.x += shift
                b.span = (b.span[0] + shift, b.span[1] + shift)
        if placed:
            box.x = (placed[0].x + placed[-1].x) / 2
            right = max(left + inner + 2 * shift, box.x + w / 2)
        else:
            box.x = left + w / 2
            right = left + w
        box.span = (left, right)
        return box

    top = place(root, 0, MARGIN, None)
    return boxes, top.span[1] + MARGIN, leaf_y + BOX_H + MARGIN


def _rect(x: float, y: float, w: float, h: float, style: Tuple[str, str, float], rx: float = 4, extra: str = "") -> str:
    fill, stroke, width = style
    return (f'<rect x="{x:.1f}" y="{y:.1f}" width="{w:.1f}" height="{h:.1f}" rx="{rx}" fill="{fill}" '
            f'stroke="{stroke}" stroke-width="{width}"{extra}/>')


def _text(x: float, y: float, text: str, *, size: float = FONT_SIZE, fill: str = "#212121", weight: str = "normal") -> str:
    return (f'<text x="{x:.1f}" y="{y:.1f}" text-anchor="middle" font-family="{FONT}" font-size="{size}" '
            f'font-weight="{weight}" fill="{fill}">{_esc(text)}</text>')


def _yield_of(node: DrawnNode) -> str:
    return "".join(c if isinstance(c, str) else _yield_of(c) for c in node.children)


def tree_svg(root: DrawnNode, description: str = "") -> str:
    """One tree as an ``<svg class="ag-tree">`` element (inline styles: it looks the same in any page).

    Each box carries a tooltip (``<title>``) with what it is and, for a nonterminal, its yield.
    """
    boxes, width, height = _layout(root)
    parts = [f'<svg class="ag-tree" xmlns="http://www.w3.org/2000/svg" width="{width:.0f}" height="{height:.0f}" '
             f'viewBox="0 0 {width:.0f} {height:.0f}" role="img" aria-label="{_esc(description or "parse tree")}">']
    # shaded bands behind reused cached subtrees, then the edges, then the boxes on top
    for b in boxes:
        if b.kind == "node" and b.node.cached:
            parts.append(f'<rect class="cached-band" x="{b.span[0] - 3:.1f}" y="{b.y - 3:.1f}" '
                         f'width="{b.span[1] - b.span[0] + 6:.1f}" height="{height - MARGIN - b.y + 6:.1f}" '
                         f'rx="8" fill="{BAND_FILL}" fill-opacity="0.12" stroke="none"/>')
    for b in boxes:
        if b.parent is not None:
            parts.append(f'<line x1="{b.parent.x:.1f}" y1="{b.parent.y + BOX_H:.1f}" x2="{b.x:.1f}" y2="{b.y:.1f}" '
                         'stroke="#9e9e9e" stroke-width="1"/>')
    for b in boxes:
        left = b.x - b.w / 2
        if b.kind == "terminal":
            parts.append(f'<g class="terminal"><title>terminal {_esc(b.text)}</title>'
                         + _rect(left, b.y, b.w, BOX_H, TERMINAL, rx=0)
                         + _text(b.x, b.y + 14, b.text) + "</g>")
            continue
        node = b.node
        style = CACHED if node.cached else ADAPTED if node.adapted else PLAIN
        classes = "node" + (" adapted" if node.adapted else "") + (" cached" if node.cached else "")
        what = [node.label]
        if node.adapted:
            what.append("adapted")
        if node.cached:
            what.append("reused cached subtree" + (f", used {_count(node.customers)} times in training"
                                                   if node.customers is not None else ""))
        tip = f"{', '.join(what)}: {_visible(_yield_of(node))}"
        badge = _badge(node)
        label_x = b.x - (b.w - _box_width(node.label)) / 2 if badge else b.x
        body = _rect(left, b.y, b.w, BOX_H, style) + _text(label_x, b.y + 14, node.label, weight="bold")
        if badge:
            bw = _cells(badge) * CELL * 0.85 + 6
            bx = left + b.w - bw - 3
            body += (f'<g class="uses">{_rect(bx, b.y + 3, bw, BADGE_H, (BADGE_FILL, BADGE_FILL, 0), rx=7)}'
                     f'{_text(bx + bw / 2, b.y + 14, badge, size=FONT_SIZE * 0.85, fill="#ffffff")}</g>')
        parts.append(f'<g class="{classes}"><title>{_esc(tip)}</title>{body}</g>')
    parts.append("</svg>")
    return "".join(parts)


def _tree_svg_of(tree: DrawnNode) -> str:
    """`tree_svg` described by its yield: the same bytes from the CLI and from a Doc."""
    return tree_svg(tree, f"parse tree of {_short(_visible(_yield_of(tree)), 60)}")


# ---------------------------------------------------------------------------------------------- legend, page
def legend_svg(compact: bool = True) -> str:
    """The key of the pictures, as a small SVG of sample boxes."""
    rows = [(PLAIN, "nonterminal", 4, ""), (ADAPTED, "adapted nonterminal (its subtrees are cached)", 4, ""),
            (CACHED, "reused cached subtree; ×n: times the training corpus used it", 4, "×n"),
            (TERMINAL, "terminal (one text unit)", 0, "")]
    parts = [f'<svg class="ag-legend" xmlns="http://www.w3.org/2000/svg" width="560" height="{len(rows) * 24 + 8}" '
             'role="img" aria-label="legend">']
    for i, (style, words, rx, badge) in enumerate(rows):
        y = 4 + i * 24
        parts.append(_rect(4, y, 56, BOX_H, style, rx=rx))
        if badge:
            parts.append(_rect(36, y + 3, 21, BADGE_H, (BADGE_FILL, BADGE_FILL, 0), rx=7)
                         + _text(46.5, y + 14, badge, size=FONT_SIZE * 0.85, fill="#ffffff"))
        parts.append(f'<text x="70" y="{y + 14}" font-family="{FONT}" font-size="{FONT_SIZE}" fill="#212121">'
                     f"{_esc(words)}</text>")
    parts.append("</svg>")
    note = ("compact trees: only the root and the adapted nonterminals are drawn" if compact
            else "full trees: every nonterminal is drawn")
    return "".join(parts) + f'<p style="font:12px sans-serif;color:#555;margin:2px 0 12px 0">{_esc(note)}</p>'


def _figure(caption: str, svg: Optional[str], missing: str = "(no parse)") -> str:
    inner = svg if svg is not None else f'<p style="font:12px sans-serif;color:#b71c1c">{_esc(missing)}</p>'
    return ('<figure class="ag-tree-figure" style="margin:0 0 18px 0;overflow-x:auto">'
            f'<figcaption style="font:13px sans-serif;color:#333;margin-bottom:4px">{_esc(caption)}</figcaption>'
            f"{inner}</figure>")


def tree_page(figures: Sequence[str], title: str, compact: bool = True) -> str:
    """A whole HTML page of `figures` (from `TreePictures.figures` or `TreePageTask`), with the legend."""
    return ("<!DOCTYPE html>\n<html lang=\"en\">\n<head>\n<meta charset=\"utf-8\">\n"
            f"<title>{_esc(title)}</title>\n</head>\n"
            '<body style="font-family:sans-serif;margin:16px;background:#fafafa">\n'
            f'<h1 style="font-size:18px">{_esc(title)}</h1>\n{legend_svg(compact)}\n'
            + "\n".join(figures) + "\n</body>\n</html>\n")


def _short(text: str, limit: int = 120) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[:limit - 1] + "…"


# ---------------------------------------------------------------------------------------------- Docs
class TreePictures:
    """The trees of some Docs, drawn. In Jupyter, an object of this class shows itself (``_repr_html_``);
    `html` is the fragment, `page` a whole HTML page, `save` writes that page."""

    def __init__(self, figures: List[str], svgs: List[str], compact: bool = True):
        self.figures = figures
        #: One ``<svg class="ag-tree">`` per tree, in order.
        self.svgs = svgs
        self.compact = compact

    @property
    def html(self) -> str:
        return f'<div class="spacy-ag-trees">{legend_svg(self.compact)}{"".join(self.figures)}</div>'

    def _repr_html_(self) -> str:
        return self.html

    def page(self, title: str = "spacy-ag trees") -> str:
        return tree_page(self.figures, title, self.compact)

    def save(self, path: Union[str, Path], title: str = "spacy-ag trees") -> Path:
        from ..archive import write_atomic_file

        path = Path(path)
        write_atomic_file(path, self.page(title).encode("utf8"))
        return path


def tree_pictures(docs, *, spans_key: Optional[str] = None) -> TreePictures:
    """The trees of a Doc (or of each Doc of an iterable) processed by ``ag_parser``, drawn.

    The picture of a Doc is the one ``spacy-ag parse --svg`` draws for its text with the same
    model and compactness (``ag_parser``'s ``compact``); a Doc without a tree shows ``(no parse)``.
    """
    from spacy.tokens import Doc

    docs = [docs] if isinstance(docs, Doc) else list(docs)
    figures, svgs = [], []
    compact = True
    key = spans_key or _parser_spans_key()
    for number, doc in enumerate(docs, 1):
        trees = drawn_from_doc(doc, key)
        attrs = doc.spans[key].attrs
        # the legend says "compact" when every node kept is a root or adapted (ag_parser's compact)
        compact = compact and all(adapted or parent < 0 for adapted, parent
                                  in zip(attrs.get("adapted", []), attrs.get("parent", [])))
        caption = f"doc {number}: {_short(doc.text)}" if len(docs) > 1 else _short(doc.text)
        if not trees:
            figures.append(_figure(caption, None))
            continue
        for i, tree in enumerate(trees):
            svg = _tree_svg_of(tree)
            svgs.append(svg)
            figures.append(_figure(caption if len(trees) == 1 else f"{caption} — token {i + 1}: {_yield_of(tree)}",
                                   svg))
    return TreePictures(figures, svgs, compact)


def render_tree(docs, *, page: bool = False, jupyter: Optional[bool] = None, spans_key: Optional[str] = None,
                title: str = "spacy-ag trees") -> Optional[str]:
    """The trees of `docs` as HTML, as ``displacy.render`` gives its pictures: a fragment (legend and
    one inline SVG per tree), or with `page` a whole page. In Jupyter (`jupyter` True, or None and
    running in a notebook) it is displayed instead, and None returned."""
    pictures = tree_pictures(docs, spans_key=spans_key)
    markup = pictures.page(title) if page else pictures.html
    if jupyter or (jupyter is None and _in_jupyter()):
        try:
            from IPython.display import HTML, display
        except ImportError:
            from ..errors import Errors, SpacyAgError

            raise SpacyAgError(Errors.E146) from None
        display(HTML(pictures.html))
        return None
    return markup


def _in_jupyter() -> bool:
    from spacy.util import is_in_jupyter

    return bool(is_in_jupyter())


# ---------------------------------------------------------------------------------------------- the CLI
class _RecordingModel:
    """A model whose `parse` also keeps the trees it returns (so the page needs no second parse)."""

    def __init__(self, model):
        self._model = model
        self.trees: List = []

    def __getattr__(self, name):
        return getattr(self._model, name)

    def parse(self, texts: Iterable):
        trees = self._model.parse(texts)
        self.trees.extend(trees)
        return trees


class TreePageTask:
    """``spacy-ag parse --svg PAGE``: the `Parse` task (`spacy_ag.annotation.tasks`) that also draws
    every line's tree; `write` then writes the page. An empty line gets no figure; a line without a
    parse a figure saying so."""

    def __init__(self, parse_task, page: Path, source: str):
        self.inner = parse_task
        self.page = Path(page)
        self.source = source
        self.compact = bool(getattr(parse_task, "compact", True))
        self.figures: List[str] = []
        self.trees = 0

    def __getattr__(self, name):  # label, done, batch_size, load, check: the Parse task's
        return getattr(self.inner, name)

    def check(self, model) -> None:
        """Refuse a directory INPUT (its trees would not fit one page), then the Parse task's checks."""
        if self.source != "-" and Path(self.source).is_dir():
            from ..errors import AnnotationError, Errors

            raise AnnotationError(Errors.E144.format(path=self.source))
        self.inner.check(model)

    def __call__(self, model, batch, source: str):
        recording = _RecordingModel(model)
        lines, messages = self.inner(recording, batch, source)
        parsed = [text for (_, text), line in zip(batch, lines) if line != ""]
        # the trees Parse made, one per non-empty line (parsed here only if it made them otherwise)
        trees = iter(recording.trees if len(recording.trees) == len(parsed) else model.parse(parsed))
        for (number, text), line in zip(batch, lines):
            if line == "":
                continue  # an empty line: nothing to parse, nothing drawn
            tree = next(trees)
            caption = f"line {number}: {_short(text)}"
            if tree is None:
                self.figures.append(_figure(caption, None))
                continue
            self.figures.append(_figure(caption, _tree_svg_of(drawn_from_tree(tree, self.compact))))
            self.trees += 1
        return lines, messages

    def write(self) -> int:
        """Write the page (atomically); returns the number of trees drawn."""
        from ..archive import write_atomic_file

        title = f"spacy-ag parse: {'stdin' if self.source == '-' else self.source}"
        write_atomic_file(self.page, tree_page(self.figures, title, self.compact).encode("utf8"))
        return self.trees
