"""E-step speed with 1 and 2 (or more) worker threads (issue 4: "with 2 workers the E-step runs at
least 1.7x faster than with 1").

Trains one online pass on Brent (paper settings), then times only the E-step
(`OnlineLearner.sample`: inside charts and S sampled trees of every sentence,
in minibatches of --batch sentences) with each worker count, alternating the
counts over --repeats rounds and keeping the best time of each. The sampled
records are compared across worker counts: they must be identical.

    python benchmarks/estep_workers.py --data ../shared/data/brent/br-phono.txt --grammar colloc --json estep.json
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from spacy_ag.runs.mcmc_chain import pack_corpus  # noqa: E402
from spacy_ag.runs.online_learner import OnlineLearner, OnlineSettings  # noqa: E402
from spacy_ag.corpus import read_corpus  # noqa: E402
from spacy_ag.model import AdaptorGrammar  # noqa: E402

PAPER = {"unigram": dict(batch_size=20, tau=128.0, kappa=0.6, truncation={"Word": 1500}),
         "colloc": dict(batch_size=5, tau=256.0, kappa=0.8, truncation={"Word": 1500, "Colloc": 3000})}


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--grammar", choices=sorted(PAPER), default="colloc")
    ap.add_argument("--batch", type=int, default=256, help="sentences per E-step call")
    ap.add_argument("--workers", default="1,2")
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    corpus = read_corpus(args.data, gold=True)
    model = AdaptorGrammar(REPO / "configs" / "grammars" / f"brent-{args.grammar}.lt", inference="online",
                           default_a=0.0, default_b=1e4, online=OnlineSettings(update_b=False, **PAPER[args.grammar]))
    model.fit(corpus, seed=args.seed)
    words, ptr = pack_corpus(model.compiled, corpus.sentences)
    n = len(ptr) - 1
    times, records = {}, {}
    for _ in range(args.repeats):
        for w in [int(x) for x in args.workers.split(",")]:
            learner = OnlineLearner(model.compiled, OnlineSettings(workers=w), args.seed, state=model.state,
                                    variational=model.variational, progress=model.progress)
            out = []
            started = time.perf_counter()
            for start in range(0, n, args.batch):
                batch = np.arange(start, min(n, start + args.batch), dtype=np.int64)
                rec, rec_ptr, samp_len, scores, status = learner.sample(words, ptr, batch, start)
                out.append(scores)
            times.setdefault(w, []).append(time.perf_counter() - started)
            records[w] = np.concatenate(out)
    counts = sorted(times)
    identical = all(np.array_equal(records[counts[0]], records[w]) for w in counts)
    best = {w: min(t) for w, t in times.items()}
    result = {"grammar": args.grammar, "batch": args.batch, "sentences": n, "seconds": times, "best": best,
              "speedup": {w: best[counts[0]] / best[w] for w in counts}, "identical_results": identical,
              "load_average": os.getloadavg()}
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf8")
    print(json.dumps({k: result[k] for k in ("best", "speedup", "identical_results", "load_average")}))


if __name__ == "__main__":
    main()
