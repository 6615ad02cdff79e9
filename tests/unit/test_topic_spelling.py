"""`topics.spelling.SpelledTypes`: packing from type ids equals spelling every token."""
from __future__ import annotations

import random

import numpy as np

from spacy_ag.topics.spelling import SpelledTypes


def _reference(docs, term_index):
    """Spell every token: (ids, token offsets, document offsets, dropped)."""
    ids, tok_len, doc_len, dropped = [], [], [], 0
    for doc in docs:
        n = 0
        for token in doc:
            codes = [term_index.get(c, -1) for c in token]
            if not codes or min(codes) < 0:
                dropped += bool(codes)
                continue
            ids.extend(codes)
            tok_len.append(len(codes))
            n += 1
        doc_len.append(n)
    return (np.array(ids, np.int32), np.concatenate([[0], np.cumsum(tok_len)]),
            np.concatenate([[0], np.cumsum(doc_len)]), dropped)


def test_minibatches_pack_as_if_every_token_were_spelled():
    rng = random.Random(3)
    term_index = {c: i for i, c in enumerate("abcdefgh")}
    vocab = ["".join(rng.choice("abcdefghXY") for _ in range(rng.randint(1, 9))) for _ in range(700)] + [""]
    types = SpelledTypes(term_index, list)
    for batch in range(6):  # the arrays grow past their first capacity, and types come back
        docs = [[rng.choice(vocab) for _ in range(rng.randint(0, 40))] for _ in range(30)]
        got = types.pack(docs)
        want = _reference(docs, term_index)
        for g, w in zip(got[:3], want[:3]):
            assert np.array_equal(g, w)
        assert got[3] == want[3] > 0
    assert len(types) > 256 and types._used > 1024
