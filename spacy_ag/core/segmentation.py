"""Reading segmentations off analyses (docs/algorithms.md 5.1).

Words are the yields of the outermost nodes of the segmentation category, a
set of symbols given as a mask (`seg_mask[X] == 1`: Word, and with function
words FuncWord1-3 too);
characters covered by no such node become one-character words. A
segmentation is written as boundary marks: marks[p] = 1 when a word starts at
p (marks[0] and marks[n] are always 1).
"""
import numpy as np
from ..kernel_environment import kernel

from .state import TABLE, TERM


@kernel(cache=True)
def mark_words(S, root, seg_mask, offset, marks, stack):
    """Mark the word boundaries of the pool tree `root` laid at words[offset:].

    Returns the position after the tree's last terminal.

    Shapes: seg_mask (n_sym,) uint8; marks uint8, one slot per terminal and text (as `corpus_marks`), written
    where 1; stack int64, room for two entries per node of the tree (an entry is node * 2, + 1 on leaving it)."""
    pos = offset
    inside = 0
    stack[0] = root * 2
    top = 1
    while top > 0:
        top -= 1
        entry = stack[top]
        x = entry >> 1
        if entry & 1:  # leaving a segmentation node
            inside -= 1
            if inside == 0:
                marks[pos] = 1
            continue
        kind = S.node_kind[x]
        if kind == TERM:
            if inside == 0:
                marks[pos] = 1
                marks[pos + 1] = 1
            pos += 1
            continue
        if seg_mask[S.node_sym[x]]:
            if inside == 0:
                marks[pos] = 1
            inside += 1
            stack[top] = x * 2 + 1
            top += 1
        if kind == TABLE:
            stack[top] = S.tab_label[S.node_table[x]] * 2
            top += 1
            continue
        first = top
        c = S.node_child[x]
        while c >= 0:
            stack[top] = c * 2
            top += 1
            c = S.node_sib[c]
        # reverse so that the leftmost child is popped first
        a, b = first, top - 1
        while a < b:
            tmp = stack[a]
            stack[a] = stack[b]
            stack[b] = tmp
            a += 1
            b -= 1
    return pos


@kernel(cache=True)
def corpus_marks(S, sent_ptr, seg_mask, marks):
    """Boundary marks of every sentence's current analysis.

    marks has one slot per character plus one per sentence (its end).

    Shapes: sent_ptr (D + 1,) int64; seg_mask (n_sym,) uint8; marks (n_terminals + D,) uint8, sentence d's
    slots are marks[sent_ptr[d] + d:sent_ptr[d+1] + d + 1]."""
    stack = np.empty(2 * S.node_kind.shape[0] + 16, np.int64)
    marks[:] = 0
    for d in range(sent_ptr.shape[0] - 1):
        offset = sent_ptr[d] + d
        mark_words(S, S.sent_root[d], seg_mask, offset, marks, stack)
