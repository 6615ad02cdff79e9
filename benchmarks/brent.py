"""Brent word-segmentation benchmark against the py-cfg reference figures.

Runs one chain per seed (each in its own process, so its peak memory is its
own), records token F of the current sample at the checkpoint sweeps and the
mean seconds per sweep, and, with --chains > 1, the maximum-marginal F pooled
over chains. Writes JSON.

    python benchmarks/brent.py --data ../shared/data/brent/br-phono.txt \
        --grammar ../shared/design/reference-grammars/unigram.lt \
        --iterations 1400 --checkpoints 20,100,300,1400 --seeds 1,2,3 --json unigram.json
"""
from __future__ import annotations

import argparse
import json
import multiprocessing
import resource
import statistics
import time
from pathlib import Path

from spacy_ag.core.chain import SamplerSettings
from spacy_ag.corpus import read_corpus
from spacy_ag.evaluation import segmentation_scores
from spacy_ag.model import AdaptorGrammar


def build(args) -> AdaptorGrammar:
    return AdaptorGrammar(args.grammar, segment_category=args.category, default_a=1e-4,
                          default_b=1e4, sampler=SamplerSettings(init=args.init))


def run_seed(args, seed: int) -> dict:
    corpus = read_corpus(args.data, gold=True)
    gold = corpus.gold_words
    checkpoints = {int(c) for c in args.checkpoints.split(",")}
    model = build(args)
    scores, seconds = {}, []

    def on_iteration(line):
        seconds.append(line["seconds"])
        if "token_f" in line:
            scores[line["iteration"]] = line["token_f"]

    started = time.perf_counter()
    model.fit(corpus, iterations=args.iterations, seed=seed, chains=1, gold=gold,
              eval_at=sorted(checkpoints), callback=on_iteration, checkpoint_every=0,
              sample_every=args.sample_every, burn_in=args.burn_in)
    total = time.perf_counter() - started
    return {
        "seed": seed,
        "token_f": {str(c): scores.get(c) for c in sorted(checkpoints)},
        "seconds_per_sweep": statistics.mean(seconds[1:]) if len(seconds) > 1 else seconds[0],
        "seconds_first_sweep": seconds[0],
        "wall_seconds": total,
        "final_log_posterior": model.trace[-1]["log_posterior"],
        "final_tables": model.trace[-1]["tables"],
        "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "max_marginal": segmentation_scores(model.training_segmentation(), gold),
    }


def _child(args, seed, queue):
    queue.put(run_seed(args, seed))


def run_isolated(args, seed: int) -> dict:
    """A fresh process per seed, so that peak RSS is one run's."""
    ctx = multiprocessing.get_context("spawn")
    queue = ctx.Queue()
    proc = ctx.Process(target=_child, args=(args, seed, queue))
    proc.start()
    result = queue.get()
    proc.join()
    return result


def run_multichain(args) -> dict:
    corpus = read_corpus(args.data, gold=True)
    model = build(args)
    started = time.perf_counter()
    model.fit(corpus, iterations=args.iterations, seed=args.chain_seed, chains=args.chains,
              sample_every=args.sample_every, burn_in=args.burn_in, checkpoint_every=0)
    return {
        "chains": args.chains,
        "iterations": args.iterations,
        "wall_seconds": time.perf_counter() - started,
        "n_samples": model.marginals.n_samples,
        "max_marginal": segmentation_scores(model.training_segmentation(), corpus.gold_words),
    }


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="gold-segmented Brent file (br-phono.txt)")
    p.add_argument("--grammar", required=True, help="py-cfg grammar file")
    p.add_argument("--category", default="Word")
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--checkpoints", default="20,100,300")
    p.add_argument("--seeds", default="1,2,3")
    p.add_argument("--init", default="batch", choices=["batch", "incremental"])
    p.add_argument("--chains", type=int, default=1, help="> 1: also a pooled max-marginal run")
    p.add_argument("--chain-seed", type=int, default=1)
    p.add_argument("--sample-every", type=int, default=10)
    p.add_argument("--burn-in", type=int, default=None)
    p.add_argument("--json", required=True)
    args = p.parse_args()

    out = {"data": args.data, "grammar": args.grammar, "iterations": args.iterations, "runs": []}
    if args.seeds:
        for seed in (int(s) for s in args.seeds.split(",")):
            result = run_isolated(args, seed)
            print(json.dumps({k: result[k] for k in ("seed", "token_f", "seconds_per_sweep", "peak_rss_mb")}),
                  flush=True)
            out["runs"].append(result)
        out["mean_token_f"] = {
            c: statistics.mean(r["token_f"][c] for r in out["runs"]) for c in out["runs"][0]["token_f"]
        }
        out["mean_seconds_per_sweep"] = statistics.mean(r["seconds_per_sweep"] for r in out["runs"])
        out["max_peak_rss_mb"] = max(r["peak_rss_mb"] for r in out["runs"])
    if args.chains > 1:
        out["multichain"] = run_multichain(args)
        print(json.dumps(out["multichain"]["max_marginal"]), flush=True)
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2))


if __name__ == "__main__":
    main()
