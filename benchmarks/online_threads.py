"""One online pass over Brent on 1 and 2 threads: the whole pass, at the paper's settings (issue 16).

    python benchmarks/online_threads.py --data ../shared/data/brent/br-phono.txt --grammar colloc \
        --rounds 8 --json out/online_threads.json

Each round trains the whole pass (`AdaptorGrammar.fit`, minibatches of 5 for
the collocation grammar) once per thread count, the order alternating from
round to round, after a warm-up fit that compiles every kernel. The models
must be identical: the JSON says so (`identical_models`, a digest of the
statistics, the weights and the segmentation), with each model's token F.

Two shared vCPUs do not always give two cores' worth: each round also times a
loop of pure arithmetic (`numba.prange`, no memory traffic) on 1 and 2
threads, the most the machine gave at that moment (`ceiling`). Reported:
every time, the best and the median per thread count, and the speed-ups of
the best and of the medians, beside the ceiling's, and what a parallel
launch costs inside a kernel right after serial work (`launch_us`: the
threads may have to be woken; each minibatch has two such launches). ``--parts`` adds the
seconds of each kernel of the learner in the last round (wrapped timers:
slightly slower passes).
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import statistics
import sys
import time
from collections import defaultdict
from pathlib import Path

import numba
import numpy as np
from numba import njit, prange

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

import spacy_ag.runs.online_learner as online_module  # noqa: E402
from spacy_ag.runs.online_learner import OnlineSettings  # noqa: E402
from spacy_ag.corpus import read_corpus  # noqa: E402
from spacy_ag.evaluation import segmentation_scores  # noqa: E402
from spacy_ag.model import AdaptorGrammar  # noqa: E402

sys.path.insert(0, str(REPO / "benchmarks"))
from estep_workers import PAPER  # noqa: E402

#: `minibatches` is the E-step, the counts and the new weights of the minibatches up to a refinement in
#: one call; the others run in the refinement (and absorb, decay and refresh_weights after the pools grew)
KERNELS = ("minibatches", "absorb", "decay", "refresh_weights", "prune", "rederive_draws", "rederive_apply")


@njit(parallel=True, cache=True)
def arithmetic(out, n):
    """Pure arithmetic on the threads: what two threads can give here and now."""
    for i in prange(out.shape[0]):
        x = 0.0
        for j in range(n):
            x += np.sin(i + j * 0.001)
        out[i] = x


def ceiling_seconds(threads: int) -> float:
    numba.set_num_threads(threads)
    out = np.empty(64)
    started = time.perf_counter()
    arithmetic(out, 200_000)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return time.perf_counter() - started


@njit(parallel=True, cache=True)
def two_items(out):
    for i in prange(2):
        out[i] += 1.0


@njit(cache=True)
def serial_work(n):
    x = 0.0
    for i in range(n):
        x += (i * 0.5) % 3.0
    return x


@njit(cache=True)
def work_then_launch(out, n, repeats):
    """`repeats` times serial work, then a parallel launch, in one kernel, as the E-step and the
    digammas follow serial work inside `minibatches`."""
    x = 0.0
    for _ in range(repeats):
        x += serial_work(n)
        two_items(out)
    return x


@njit(cache=True)
def work_alone(n, repeats):
    x = 0.0
    for _ in range(repeats):
        x += serial_work(n)
    return x


def launch_microseconds(threads: int, repeats: int = 1000, tries: int = 5) -> float:
    """What a parallel launch of two trivial items costs inside a kernel right after ~15 us of serial
    work, as the pass's launches come (the threads may have to be woken): the best of `tries` of
    `repeats` (work + launch) minus the best of as many of the work alone, per launch."""
    numba.set_num_threads(threads)
    out = np.zeros(2)
    both, alone = [], []
    for _ in range(tries):
        started = time.perf_counter()
        work_then_launch(out, 2_000, repeats)
        both.append(time.perf_counter() - started)
        started = time.perf_counter()
        work_alone(2_000, repeats)
        alone.append(time.perf_counter() - started)
    numba.set_num_threads(numba.config.NUMBA_NUM_THREADS)
    return max(min(both) - min(alone), 0.0) / repeats * 1e6


def model_digest(model: AdaptorGrammar) -> str:
    V = model.variational
    digest = hashlib.sha256()
    for values in (V.gt, np.sort(V.ft), np.sort(V.lw)):
        digest.update(np.ascontiguousarray(values).tobytes())
    digest.update(repr(model.training_segmentation()).encode())
    return digest.hexdigest()[:16]


def timed_kernels(parts):
    """Wrap the learner's kernels with timers adding to `parts`; returns the undo."""
    originals = {name: getattr(online_module, name) for name in KERNELS}

    def wrap(name, kernel):
        def timed(*args):
            started = time.perf_counter()
            try:
                return kernel(*args)
            finally:
                parts[name] += time.perf_counter() - started
        return timed

    for name, kernel in originals.items():
        setattr(online_module, name, wrap(name, kernel))
    return lambda: [setattr(online_module, name, kernel) for name, kernel in originals.items()]


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--data", required=True)
    ap.add_argument("--grammar", choices=sorted(PAPER), default="colloc")
    ap.add_argument("--rounds", type=int, default=8)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--parts", action="store_true", help="time each kernel in the last round")
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    if args.parts and args.rounds < 2:
        ap.error("--parts times the last round with wrapped kernels and leaves it out of the speed-ups: "
                 "give --rounds 2 or more")
    corpus = read_corpus(args.data, gold=True)
    texts = ["".join(s) for s in corpus.sentences]

    def fit(workers, lines):
        model = AdaptorGrammar(REPO / "configs" / "grammars" / f"brent-{args.grammar}.lt", inference="online",
                               default_a=0.0, default_b=1e4,
                               online=OnlineSettings(update_b=False, workers=workers, **PAPER[args.grammar]))
        started = time.perf_counter()
        model.fit(lines, seed=args.seed)
        return time.perf_counter() - started, model

    for workers in (1, 2):
        fit(workers, texts[:300])  # compiles every kernel
    ceiling_seconds(1)
    launch_microseconds(1, 10, 1)
    seconds, ceiling, digests, token_f, parts = defaultdict(list), defaultdict(list), {}, {}, {}
    launch = defaultdict(list)
    for r in range(args.rounds):
        last = args.parts and r == args.rounds - 1
        for workers in ((1, 2) if r % 2 == 0 else (2, 1)):
            ceiling[workers].append(ceiling_seconds(workers))
            launch[workers].append(launch_microseconds(workers))
            kernel_seconds = defaultdict(float)
            undo = timed_kernels(kernel_seconds) if last else None
            took, model = fit(workers, texts)
            if undo:
                undo()
                parts[workers] = {"total": took, **kernel_seconds, "rest": took - sum(kernel_seconds.values())}
            else:
                seconds[workers].append(took)
            digests.setdefault(workers, set()).add(model_digest(model))
            token_f[workers] = segmentation_scores(model.training_segmentation(), corpus.gold_words)["token_f"]
            print(f"round {r + 1}: {workers} thread(s) {took:.2f} s", file=sys.stderr, flush=True)
    best = {w: min(t) for w, t in seconds.items()}
    median = {w: statistics.median(t) for w, t in seconds.items()}
    result = {
        "grammar": args.grammar, "settings": PAPER[args.grammar], "sentences": len(texts), "seed": args.seed,
        "threading_layer": numba.threading_layer(), "seconds": seconds,
        "best": best, "median": median,
        "speedup_best": best[1] / best[2], "speedup_median": median[1] / median[2],
        "per_round_speedup": [a / b for a, b in zip(seconds[1], seconds[2])],
        "ceiling_seconds": ceiling,
        "ceiling_speedup_best": min(ceiling[1]) / min(ceiling[2]),
        "ceiling_per_round": [a / b for a, b in zip(ceiling[1], ceiling[2])],
        "launch_us_median": {w: statistics.median(t) for w, t in launch.items()}, "launch_us": launch,
        "identical_models": len(digests[1] | digests[2]) == 1, "token_f": token_f,
        "parts": parts, "load_average": os.getloadavg(),
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf8")
    print(json.dumps({k: result[k] for k in ("best", "median", "speedup_best", "speedup_median",
                                             "ceiling_speedup_best", "launch_us_median", "identical_models",
                                             "token_f")}))


if __name__ == "__main__":
    main()
