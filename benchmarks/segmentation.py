"""Word-segmentation benchmark on Brent against the py-cfg reference (not a test).

    python benchmarks/segmentation.py --data ../shared/data/brent/br-phono.txt \
        --grammar unigram --iterations 1400 --seed 1 --checkpoints 20,100,300,1400 --json out.json

Measures, for one seed (run it once per seed):
* compile_seconds: numba compilation of every kernel, in a separate process
  with an empty cache; the run itself then loads the compiled kernels;
* seconds_per_sweep: median over sweeps (all chains), compilation excluded;
* peak_rss_mb: peak resident memory of this process and of chain processes;
* checkpoints: token, boundary and lexicon F of the sample at each checkpoint
  (mean over chains; per chain in `per_chain`);
* final: maximum-marginal scores over the kept samples of all chains, and the
  average token F of the individual kept samples.
"""
from __future__ import annotations

import argparse
import json
import os
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
GRAMMARS = {
    "unigram": ROOT / "configs/grammars/brent-unigram.lt",
    "colloc": ROOT / "configs/grammars/brent-colloc.lt",
    "colloc-syll": ROOT / "configs/grammars/brent-collocsyll.lt",
}
# Johnson & Goldwater (2009): adaptors start at a = 1e-4, b = 1e4
GRAMMAR_OPTIONS = {"default_a": 1e-4, "default_b": 1e4}

WARM_UP = """
import sys
from spacy_ag.model import AdaptorGrammar
m = AdaptorGrammar(sys.argv[1], default_a=1e-4, default_b=1e4)
texts = [l.replace(" ", "") for l in open(sys.argv[2], encoding="utf8").read().split("\\n")[:50] if l.strip()]
m.fit(texts, iterations=3, chains=1, sample_every=1)
m.segment(texts[:2]); m.parse(texts[:2])
import resource; print(resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024)
"""


def compile_kernels(grammar: Path, data: str):
    """Seconds (and peak MB) to compile every kernel from an empty cache, in a child process."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", WARM_UP, str(grammar), data], check=True,
                          capture_output=True, text=True,
                          env={**os.environ, "PYTHONPATH": str(ROOT) + os.pathsep + os.environ.get("PYTHONPATH", "")})
    return time.perf_counter() - started, float(done.stdout.split()[-1])


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", required=True, help="gold-segmented Brent file (br-phono.txt)")
    p.add_argument("--grammar", default="unigram", choices=sorted(GRAMMARS))
    p.add_argument("--grammar-file", help="another py-cfg grammar instead of the shipped one")
    p.add_argument("--iterations", type=int, default=300)
    p.add_argument("--chains", type=int, default=1)
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--checkpoints", default="20,100,300")
    p.add_argument("--burn-in", type=int, default=None, help="default: half the iterations")
    p.add_argument("--sample-every", type=int, default=10)
    p.add_argument("--init", default="batch", choices=["batch", "incremental"])
    # py-cfg's -g 10 -h 0.1 is shape 0.1, scale 10 (docs/algorithms.md 3.13); the other reading of
    # J&G09's "Gamma(10, 0.1)" is --gamma-shape 10 --gamma-scale 0.1
    p.add_argument("--gamma-shape", type=float, default=0.1, help="Gamma prior on b: shape")
    p.add_argument("--gamma-scale", type=float, default=10.0, help="Gamma prior on b: scale")
    p.add_argument("--json", required=True)
    args = p.parse_args()

    grammar = Path(args.grammar_file) if args.grammar_file else GRAMMARS[args.grammar]
    cache = tempfile.mkdtemp(prefix="spacy-ag-numba-")
    os.environ["NUMBA_CACHE_DIR"] = cache  # before numba is imported: a cold, private cache
    compile_seconds, compile_rss = compile_kernels(grammar, args.data)

    sys.path.insert(0, str(ROOT))
    from spacy_ag.runs.mcmc_chain import SamplerSettings
    from spacy_ag.corpus import read_corpus
    from spacy_ag.evaluation import segmentation_scores
    from spacy_ag.model import AdaptorGrammar
    from spacy_ag.settings import TrainingSettings

    corpus = read_corpus(args.data, gold=True)
    checkpoints = sorted({int(c) for c in args.checkpoints.split(",") if c})
    training = TrainingSettings(iterations=args.iterations, burn_in=args.burn_in,
                                sample_every=args.sample_every)
    kept = [it for it in range(1, args.iterations + 1) if training.keeps_sample(it)]
    sampler = SamplerSettings(init=args.init, gamma_shape=args.gamma_shape, gamma_scale=args.gamma_scale)
    model = AdaptorGrammar(grammar, sampler=sampler, **GRAMMAR_OPTIONS)
    lines = []
    started = time.perf_counter()
    model.fit(corpus, iterations=args.iterations, chains=args.chains, seed=args.seed,
              burn_in=args.burn_in, sample_every=args.sample_every, checkpoint_every=0,
              gold=corpus.gold_words, eval_at=sorted(set(checkpoints) | set(kept)),
              callback=lines.append)
    wall = time.perf_counter() - started

    def at(iteration):
        rows = [l for l in lines if l["iteration"] == iteration and "token_f" in l]
        if not rows:
            return None
        keys = ("token_f", "boundary_f", "lexicon_f")
        return {**{k: statistics.mean(r[k] for r in rows) for k in keys},
                "per_chain": [{k: r[k] for k in ("chain",) + keys} for r in sorted(rows, key=lambda r: r["chain"])]}

    final = None
    if model.marginals.n_samples:
        mm = segmentation_scores(model.training_segmentation(), corpus.gold_words)
        samples = [l["token_f"] for l in lines if l["iteration"] in kept and "token_f" in l]
        final = {"n_samples": model.marginals.n_samples, "token_f": mm["token_f"],
                 "boundary_f": mm["boundary_f"], "lexicon_f": mm["type_f"],
                 "sample_average_token_f": statistics.mean(samples) if samples else None}
    last = [l for l in lines if l["iteration"] == args.iterations]
    out = {
        "data": args.data, "grammar": str(grammar), "iterations": args.iterations,
        "chains": args.chains, "seed": args.seed, "init": args.init,
        "b_prior": {"shape": args.gamma_shape, "scale": args.gamma_scale},
        "seconds_per_sweep": statistics.median(l["seconds"] for l in lines),
        "compile_seconds": compile_seconds,
        "wall_seconds": wall,
        # this process and every chain process (each reports its own peak)
        "peak_rss_mb": max([resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024]
                           + [l["peak_rss_mb"] for l in lines]),
        "compile_peak_rss_mb": compile_rss,
        "checkpoints": {str(c): at(c) for c in checkpoints},
        "final": final,
        "final_state": [{k: l[k] for k in ("chain", "log_posterior", "tables", "a", "b")} for l in last],
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2))
    summary = {c: (v["token_f"] if v else None) for c, v in out["checkpoints"].items()}
    print(json.dumps({"seconds_per_sweep": out["seconds_per_sweep"], "compile_seconds": compile_seconds,
                      "peak_rss_mb": out["peak_rss_mb"], "token_f": summary,
                      "final": final and final["token_f"]}))


if __name__ == "__main__":
    main()
