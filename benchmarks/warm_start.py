"""Token F of an MCMC chain against CPU seconds, for three first analyses (not a test).

    python benchmarks/warm_start.py --seeds 1,2 --sweeps 300 --json out/warm_start.json --plot out/warm_start.png

Why: a chain's first analyses decide how long it burns in. Batch initialisation
(J&G09, py-cfg -D) draws every sentence from the base PCFG; incremental
initialisation draws each from the state built so far; the warm start
(`[sampler] init = "online"`, spacy_ag/runs/warm_start.py) first makes one online
pass (Zhai et al. 2014) and draws each sentence from the online model. This
measures what each costs and buys, on the same chain settings and seeds.

How: `configs/brent-<grammar>-jg09.cfg` (J&G09's sampler settings), one chain per
seed, with `sampler.init` set to each of `--inits`; the warm start's pass uses the
[online] section of `configs/brent-<grammar>-online.cfg`. Token F of the current
analyses is taken at the checkpoints (`eval_at`), and the process CPU seconds at
every sweep's end, counted from just before training starts, so that the
initialisation (and the online pass) are on the clock; the log posterior (with the
hyperparameters' prior) at the checkpoints says whether a start buys F at the cost of posterior. Each run is a process of
its own (`--only`), so the kernels' compilation is not counted: a first short run
compiles and caches them.
"""
from __future__ import annotations

import argparse
import json
import statistics
import subprocess
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
INITS = ("batch", "incremental", "online")
sys.path.insert(0, str(ROOT / "benchmarks"))
from mixing import seeds_of  # noqa: E402  (seed lists such as 1,2 or 1-12)


def run_one(grammar: str, data: str, init: str, seed: int, sweeps: int, checkpoints) -> dict:
    """One chain in this process: F at the checkpoints and CPU seconds after every sweep."""
    import dataclasses

    from spacy_ag.config import build_model, load_training_config
    from spacy_ag.corpus import read_corpus

    cfg = load_training_config(ROOT / "configs" / f"brent-{grammar}-jg09.cfg", {"sampler.init": init})
    online = load_training_config(ROOT / "configs" / f"brent-{grammar}-online.cfg").online
    cfg = dataclasses.replace(cfg, online=dataclasses.replace(online, workers=1))
    corpus = read_corpus(data, gold=True)
    # compile the kernels outside the clock, the refinement's too (the first fit fixes a model's
    # alphabet: a model of its own)
    warm_up = dataclasses.replace(cfg, online=dataclasses.replace(cfg.online, refine_every=1))
    build_model(warm_up).fit(["".join(s) for s in corpus.sentences[:20]], iterations=1, seed=seed,
                             checkpoint_every=0)
    model = build_model(cfg)
    cpu = []
    token_f, log_posterior = {}, {}

    def on_sweep(line):
        cpu.append(time.process_time() - started)
        if "token_f" in line:
            token_f[str(line["iteration"])] = line["token_f"]
            log_posterior[str(line["iteration"])] = line["log_posterior"] + line["log_prior"]

    started = time.process_time()
    model.fit(corpus, iterations=sweeps, chains=1, seed=seed, burn_in=sweeps - 1, checkpoint_every=0,
              gold=corpus.gold_words, eval_at=list(checkpoints), callback=on_sweep, workers=1)
    return {"init": init, "seed": seed, "token_f": token_f, "log_posterior": log_posterior,
            "cpu_seconds": {str(c): cpu[c - 1] for c in checkpoints if c <= len(cpu)},
            "first_sweep_cpu": cpu[0] if cpu else None}


def summary(runs, inits, checkpoints) -> dict:
    out = {}
    for init in inits:
        mine = [r for r in runs if r["init"] == init]
        out[init] = {str(c): {key: statistics.mean(r[key][str(c)] for r in mine)
                              for key in ("token_f", "log_posterior", "cpu_seconds")}
                     for c in checkpoints if all(str(c) in r["token_f"] for r in mine)}
    return out


def plot(result: dict, out: str) -> None:
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt

    fig, ax = plt.subplots(figsize=(6, 4))
    for init, points in result["summary"].items():
        xs = [p["cpu_seconds"] for p in points.values()]
        ys = [p["token_f"] for p in points.values()]
        ax.plot(xs, ys, marker="o", label=init)
    ax.set_xscale("log")
    ax.set_xlabel("CPU seconds (initialisation included)")
    ax.set_ylabel(f"token F (mean of seeds {result['seeds']})")
    ax.set_title(f"Brent {result['grammar']}: first analyses")
    ax.grid(True, alpha=0.3)
    ax.legend()
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=str(SHARED / "data/brent/br-phono.txt"))
    p.add_argument("--grammar", default="colloc", choices=("unigram", "colloc"))
    p.add_argument("--inits", default=",".join(INITS))
    p.add_argument("--seeds", default="1,2", help="e.g. 1,2 or 1-4")
    p.add_argument("--sweeps", type=int, default=300)
    p.add_argument("--checkpoints", default="1,2,5,10,20,50,100,200,300")
    p.add_argument("--json", required=True)
    p.add_argument("--plot")
    p.add_argument("--only", help=argparse.SUPPRESS)  # "init,seed": run one chain, print its JSON
    args = p.parse_args()
    checkpoints = [int(c) for c in args.checkpoints.split(",") if int(c) <= args.sweeps]
    if args.only:
        init, seed = args.only.split(",")
        print(json.dumps(run_one(args.grammar, args.data, init, int(seed), args.sweeps, checkpoints)))
        return
    inits = args.inits.split(",")
    runs = []
    for seed in seeds_of(args.seeds):
        for init in inits:
            cmd = [sys.executable, __file__, "--only", f"{init},{seed}", "--json", args.json,
                   "--data", args.data, "--grammar", args.grammar, "--sweeps", str(args.sweeps),
                   "--checkpoints", args.checkpoints]
            out = subprocess.run(cmd, check=True, capture_output=True, text=True).stdout
            runs.append(json.loads(out.strip().splitlines()[-1]))
            r = runs[-1]
            print(f"{init} seed {seed}: " + ", ".join(f"{c}: F {r['token_f'][str(c)]:.3f} at "
                                                      f"{r['cpu_seconds'][str(c)]:.1f} s" for c in checkpoints),
                  file=sys.stderr)
    result = {"grammar": args.grammar, "data": args.data, "seeds": args.seeds, "sweeps": args.sweeps,
              "config": f"configs/brent-{args.grammar}-jg09.cfg, [online] of configs/brent-{args.grammar}-online.cfg",
              "runs": runs, "summary": summary(runs, inits, checkpoints)}
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1))
    if args.plot:
        plot(result, args.plot)


if __name__ == "__main__":
    main()
