"""Train a small model of every kind with fixed seeds, save them, print the SHA-256 of every saved file.

    python scripts/model_fingerprint.py OUT_DIR > fingerprint.txt

Why: a change that only moves or renames code must leave every model the same bit for bit. Run
this on the commit before and the commit after (put each checkout first on PYTHONPATH) and compare
the two listings: MCMC (two chains), online, and topic models by Gibbs sampling and online, each on
generated text.
"""
from __future__ import annotations

import hashlib
import sys
from pathlib import Path

from spacy_ag import AdaptorGrammar, TopicModel
from spacy_ag.synthetic import generate_corpus, make_lexicon

GRAMMAR = "1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n"


def main(out: Path) -> None:
    out.mkdir(parents=True, exist_ok=True)
    lexicon = make_lexicon(30, alphabet="abcdefghij", seed=1)
    texts = ["".join(u) for u in generate_corpus(lexicon, 150, seed=2)]
    AdaptorGrammar(GRAMMAR).fit(texts, iterations=30, chains=2, seed=3).save(out / "mcmc")
    AdaptorGrammar(GRAMMAR, inference="online").fit(texts, seed=4).save(out / "online")
    docs = [t.split() if " " in t else [t[i:i + 3] for i in range(0, len(t), 3)] for t in texts]
    TopicModel(3).fit(docs, seed=5).save(out / "topics_gibbs")
    TopicModel(3, inference="online").fit(docs, seed=6).save(out / "topics_online")
    for path in sorted(out.rglob("*")):
        if path.is_file():
            print(hashlib.sha256(path.read_bytes()).hexdigest()[:16], path.relative_to(out).as_posix())


if __name__ == "__main__":
    if len(sys.argv) != 2:
        sys.exit("usage: python scripts/model_fingerprint.py OUT_DIR")
    main(Path(sys.argv[1]))
