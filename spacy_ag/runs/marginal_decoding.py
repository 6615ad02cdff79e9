"""Maximum-marginal decoding of MCMC samples (docs/algorithms.md 3.15).

Every kept sample adds, per sentence, one count to the segmentation it
holds (a key of boundary marks); the decoded segmentation of a sentence is
its most frequent key, pooled over the chains. The counts travel with the
chain checkpoints (`to_json`), so a resumed run decodes what an
uninterrupted one would.
"""
from __future__ import annotations

from typing import Dict, List, Sequence

import numpy as np

__all__ = ["MarginalCounts", "words_from_key"]


class MarginalCounts:
    """How often each segmentation of each sentence was sampled (3.15)."""

    def __init__(self, n_sentences: int):
        self.counts: List[Dict[bytes, int]] = [dict() for _ in range(n_sentences)]
        self.n_samples = 0

    def add(self, keys: Sequence[bytes]) -> None:
        for table, key in zip(self.counts, keys):
            table[key] = table.get(key, 0) + 1
        self.n_samples += 1

    def merge(self, other: "MarginalCounts") -> None:
        for table, more in zip(self.counts, other.counts):
            for key, n in more.items():
                table[key] = table.get(key, 0) + n
        self.n_samples += other.n_samples

    def best(self) -> List[bytes]:
        """The most frequent segmentation per sentence; ties go to the first seen."""
        return [max(t.items(), key=lambda kv: kv[1])[0] if t else b"" for t in self.counts]

    def to_json(self) -> Dict:
        return {"n_samples": self.n_samples,
                "counts": [[[k.hex(), n] for k, n in t.items()] for t in self.counts]}

    @classmethod
    def from_json(cls, data: Dict) -> "MarginalCounts":
        out = cls(len(data["counts"]))
        out.n_samples = data["n_samples"]
        out.counts = [{bytes.fromhex(k): n for k, n in t} for t in data["counts"]]
        return out


def words_from_key(text: Sequence[str], key: bytes) -> List[str]:
    """Cut a sentence at the boundary marks of a segmentation key."""
    marks = np.frombuffer(key, dtype=np.uint8)
    words, start = [], 0
    for p in range(1, len(text) + 1):
        if p == len(text) or marks[p]:
            words.append("".join(text[start:p]))
            start = p
    return words
