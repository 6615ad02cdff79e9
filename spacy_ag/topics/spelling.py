"""Word types spelled once: the character ids a minibatch of documents is packed from.

A stream's word types come back minibatch after minibatch, and spelling one
costs a grapheme split, so every type is spelled once, numbered in order of
first sight, and a minibatch is packed with numpy from its tokens' type ids.
"""
from __future__ import annotations

from typing import Callable, Dict, List, Sequence, Tuple

import numpy as np


class SpelledTypes:
    """The character ids of every word type seen, in flat growing arrays.

    Type t is spelled `codes[start[t]:start[t] + length[t]]`; `known[t]` says
    that it has characters and the grammar knows all of them (an unknown one
    has id -1).
    """

    def __init__(self, term_index: Dict[str, int], chars_of: Callable[[str], List[str]]):
        self._term_index = term_index
        self._chars_of = chars_of
        self.index: Dict[str, int] = {}
        self.codes = np.empty(1024, np.int32)
        self.start = np.empty(256, np.int64)
        self.length = np.empty(256, np.int64)
        self.known = np.empty(256, bool)
        self._used = 0  # of codes

    def __len__(self) -> int:
        return len(self.index)

    def _add(self, token: str) -> int:
        codes = [self._term_index.get(c, -1) for c in self._chars_of(token)]
        t = len(self.index)
        if t == self.start.shape[0]:
            for name in ("start", "length", "known"):
                old = getattr(self, name)
                setattr(self, name, np.concatenate([old, np.empty_like(old)]))
        while self._used + len(codes) > self.codes.shape[0]:
            self.codes = np.concatenate([self.codes, np.empty_like(self.codes)])
        self.codes[self._used:self._used + len(codes)] = codes
        self.start[t], self.length[t] = self._used, len(codes)
        self.known[t] = bool(codes) and min(codes) >= 0
        self._used += len(codes)
        self.index[token] = t
        return t

    def pack(self, docs: Sequence[Sequence[str]]) -> Tuple[np.ndarray, np.ndarray, np.ndarray, int]:
        """(character ids, token offsets, document offsets, tokens dropped) of the documents.

        Tokens with a character the grammar does not know are dropped (and counted); empty tokens
        are left out without being counted.
        """
        index, add = self.index, self._add
        types: List[int] = []
        per_doc = np.empty(len(docs), np.int64)
        for d, doc in enumerate(docs):
            ids = list(map(index.get, doc))
            if None in ids:  # types not seen before (a type new twice in one document is added once)
                ids = [t if t is not None else index.get(token) if token in index else add(token)
                       for t, token in zip(ids, doc)]
            types.extend(ids)
            per_doc[d] = len(ids)
        tids = np.array(types, np.int64)
        keep = self.known[tids]
        dropped = int(np.count_nonzero(~keep & (self.length[tids] > 0)))
        kept = tids[keep]
        tok_len = self.length[kept]
        tok_ptr = np.zeros(len(kept) + 1, np.int64)
        np.cumsum(tok_len, out=tok_ptr[1:])
        doc_of = np.repeat(np.arange(len(docs)), per_doc)[keep]
        doc_ptr = np.zeros(len(docs) + 1, np.int64)
        np.cumsum(np.bincount(doc_of, minlength=len(docs)), out=doc_ptr[1:])
        # character q of kept token j is codes[start[kept[j]] + q]
        offsets = np.arange(tok_ptr[-1]) + np.repeat(self.start[kept] - tok_ptr[:-1], tok_len)
        return self.codes[offsets], tok_ptr, doc_ptr, dropped
