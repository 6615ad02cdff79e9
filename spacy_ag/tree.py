"""Parse trees as plain Python objects, and their bracketed (py-cfg) form."""
from __future__ import annotations

from dataclasses import dataclass, field
from typing import Iterator, List, Optional, Union


@dataclass
class Tree:
    label: str
    children: List[Union["Tree", str]] = field(default_factory=list)
    start: int = 0
    end: int = 0
    adapted: bool = False
    #: True when the subtree is a reused cache entry (a table of the adaptor).
    cached: bool = False
    #: For a cached subtree, how often the training corpus used its table: the table's customers
    #: (MCMC) or its expected uses (vb, online); None otherwise.
    customers: Optional[Union[int, float]] = None

    def leaves(self) -> List[str]:
        out: List[str] = []
        for c in self.children:
            out.extend(c.leaves() if isinstance(c, Tree) else [c])
        return out

    def subtrees(self) -> Iterator["Tree"]:
        """Preorder traversal."""
        yield self
        for c in self.children:
            if isinstance(c, Tree):
                yield from c.subtrees()

    def spans(self, label: str) -> List[str]:
        """Yields of the outermost nodes labelled `label` (as strings)."""
        if self.label == label:
            return ["".join(self.leaves())]
        out: List[str] = []
        for c in self.children:
            if isinstance(c, Tree):
                out.extend(c.spans(label))
        return out

    def bracketed(self, compact: bool = False) -> str:
        """py-cfg's bracketed form; `compact` keeps only adapted nodes and the root (py-cfg -C)."""
        return _bracket(self, compact, is_root=True)

    def __str__(self) -> str:
        return self.bracketed()


def _bracket(tree: Tree, compact: bool, is_root: bool) -> str:
    parts: List[str] = []
    for c in tree.children:
        if isinstance(c, Tree):
            parts.append(_bracket(c, compact, False))
        else:
            parts.append(c)
    inner = " ".join(p for p in parts if p)
    if compact and not (tree.adapted or is_root):
        return inner
    return f"({tree.label} {inner})"
