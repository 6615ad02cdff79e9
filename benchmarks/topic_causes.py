"""Why the topics were poor: the same InfVocLDA model trained online and by collapsed Gibbs sampling,
one change at a time, over several seeds, beside tomotopy (not a test).

    python benchmarks/topic_causes.py --seeds 1,2,3 --json out/topic-causes.json
    python benchmarks/topic_causes.py --topics 50 --variants gibbs_lexicon_sampled_b,tomotopy_equal_time --json out/k50.json

Variants (de-news by default, K = 20, gensim's u_mass and c_npmi of every topic's top 10 words
over the whole corpus, `spacy_ag.topics.standard_coherence`):

* ``online``: ``TopicModel(n_topics=K, inference="online", word_adapted=False).fit(docs, passes=5,
  seed=s)``, the online defaults without the lexicon;
* ``gibbs_fixed_alpha``: ``inference="gibbs", alpha_every=0, sample_b=False``: the same model and
  priors (b = 10, alpha = 0.1 for every topic), trained by collapsed Gibbs sampling;
* ``gibbs_alpha``: and alpha fitted (asymmetric, Minka) every 10 sweeps;
* ``gibbs_lexicon``: and the topics draw their words through a shared lexicon (``word_adapted=True``);
* ``gibbs_sampled_b``: alpha fitted and b sampled after every sweep, no lexicon;
* ``gibbs_lexicon_sampled_b``: all three (``inference="gibbs", word_adapted=True``, the Gibbs defaults
  otherwise);
* ``online_lexicon``: ``word_adapted=True`` trained online;
* ``tomotopy``: ``tomotopy.LDAModel(k=K, seed=s)``, 1,000 iterations (its defaults otherwise);
* ``tomotopy_equal_time``: the same model, trained 10 iterations at a time for as long as the same
  seed's run of the last spacy-ag variant before it in ``--variants`` took (the comparison at equal
  wall time).

Every run is in this process, one after another, on one thread (numba's kernels compiled by a
warm-up first). Seconds are training wall seconds.
"""
from __future__ import annotations

import argparse
import json
import statistics
import sys
import time
from pathlib import Path
from typing import Dict, List

sys.path.insert(0, str(Path(__file__).resolve().parent.parent))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import numba  # noqa: E402

from spacy_ag.topics import TopicModel, default_topic_settings  # noqa: E402
from spacy_ag.topics.coherence import read_documents  # noqa: E402
from spacy_ag.topics.standard_coherence import topic_coherences  # noqa: E402

DENEWS = Path(__file__).resolve().parent.parent.parent / "shared" / "data" / "topics" / "de-news" / "doc.dat"
ONE_THREAD = default_topic_settings(workers=1)
VARIANTS = {
    "online": lambda K: (TopicModel(K, inference="online", word_adapted=False, online=ONE_THREAD), {"passes": 5}),
    "online_lexicon": lambda K: (TopicModel(K, inference="online", online=ONE_THREAD, word_adapted=True),
                                 {"passes": 5}),
    "gibbs_fixed_alpha": lambda K: (TopicModel(K, inference="gibbs", alpha_every=0, sample_b=False,
                                               word_adapted=False), {}),
    "gibbs_alpha": lambda K: (TopicModel(K, inference="gibbs", sample_b=False, word_adapted=False), {}),
    "gibbs_lexicon": lambda K: (TopicModel(K, inference="gibbs", sample_b=False, word_adapted=True), {}),
    "gibbs_sampled_b": lambda K: (TopicModel(K, inference="gibbs", word_adapted=False), {}),
    "gibbs_lexicon_sampled_b": lambda K: (TopicModel(K, inference="gibbs", word_adapted=True), {}),
}


def run_variant(name: str, docs, K: int, seed: int, budget: float = 0.0) -> Dict:
    """One training run and its coherences; `budget` is tomotopy_equal_time's wall seconds."""
    iterations = None
    if name.startswith("tomotopy"):
        import tomotopy as tp

        model = tp.LDAModel(k=K, seed=seed)
        for d in docs:
            model.add_doc(d)
        t0 = time.perf_counter()
        if name == "tomotopy":
            iterations = 1000
            model.train(iterations, workers=1)
        else:
            iterations = 0
            while time.perf_counter() - t0 < budget:
                model.train(10, workers=1)
                iterations += 10
        seconds = time.perf_counter() - t0
        topics = [[w for w, _ in model.get_topic_words(k, 10)] for k in range(K)]
    else:
        model, fit_args = VARIANTS[name](K)
        t0 = time.perf_counter()
        model.fit(docs, seed=seed, **fit_args)
        seconds = time.perf_counter() - t0
        topics = model.topics(10)
    c = topic_coherences(topics, docs, ("u_mass", "c_npmi"))
    return {"variant": name, "seed": seed, "seconds": seconds, "iterations": iterations, "u_mass": c["u_mass"],
            "c_npmi": c["c_npmi"], "topics": topics}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--corpus", default=str(DENEWS), help="one document per line, tokens separated by spaces")
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--lee", action="store_true", help="gensim's Lee corpus, preprocessed as topics_fair.py does")
    ap.add_argument("--seeds", default="1,2,3")
    ap.add_argument("--variants", default=",".join([*VARIANTS, "tomotopy"]),
                    help=f"comma-separated, from {', '.join([*VARIANTS, 'tomotopy', 'tomotopy_equal_time'])}")
    ap.add_argument("--json", required=True)
    args = ap.parse_args(argv)
    numba.set_num_threads(1)
    if args.lee:
        from topics_fair import lee_path, read_lee

        args.corpus = str(lee_path())
        docs = read_lee(lee_path(), 0)
    else:
        docs = [d for d in read_documents(Path(args.corpus)) if d]
    TopicModel(2, inference="gibbs", sweeps=2, word_adapted=True).fit(docs[:20])  # compile first
    TopicModel(2, inference="online", online=ONE_THREAD, word_adapted=True).fit(docs[:120])
    runs: List[Dict] = []
    budgets: Dict[int, float] = {}  # seed -> seconds of the last spacy-ag variant run
    for name in args.variants.split(","):
        if name == "tomotopy_equal_time" and not budgets:
            ap.error("tomotopy_equal_time needs a spacy-ag variant before it in --variants")
        for seed in (int(s) for s in args.seeds.split(",")):
            runs.append(run_variant(name, docs, args.topics, seed, budgets.get(seed, 0.0)))
            r = runs[-1]
            if not name.startswith("tomotopy"):
                budgets[seed] = r["seconds"]
            done = f" ({r['iterations']} iterations)" if r["iterations"] else ""
            print(f"{name:24} seed {seed}  {r['seconds']:6.1f} s{done}  u_mass {r['u_mass']:.3f}  "
                  f"c_npmi {r['c_npmi']:.4f}", flush=True)
    summary = {}
    for name in args.variants.split(","):
        mine = [r for r in runs if r["variant"] == name]
        summary[name] = {m: statistics.mean(r[m] for r in mine) for m in ("seconds", "u_mass", "c_npmi")}
        print(f"{name:24} mean over {len(mine)} seeds: u_mass {summary[name]['u_mass']:.3f}  "
              f"c_npmi {summary[name]['c_npmi']:.4f}  {summary[name]['seconds']:.1f} s")
    out = {"corpus": args.corpus, "topics": args.topics, "documents": len(docs), "runs": runs, "mean": summary}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=1) + "\n", encoding="utf8")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
