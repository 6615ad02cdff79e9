"""Scale-out on Ray, measured (issue 16): chains and the online E-step with 1 and 2 Ray workers.

    python benchmarks/scale.py --json scale.json                 # both parts, 10M-character stream
    python benchmarks/scale.py --part chains --sweeps 40 --json chains.json
    python benchmarks/scale.py --part estep --chars 2000000 --json estep.json

Part ``chains``: Brent (``--data``), the unigram grammar, 2 chains x
``--sweeps`` sweeps, seed 1, on the local backend (1 and 2 processes) and on
a local Ray cluster of 2 CPUs (1 and 2 chains at once). Reports wall seconds,
the Ray speed-up (1 worker / 2 workers), Ray's overhead against local
processes, and whether every run gave the same model.

Part ``estep``: a generated stream of ``--chars`` characters (a made-up
lexicon of 5,000 words, Zipfian, written to a temporary file and read back
lazily), one online pass with the unigram grammar in minibatches of
``--batch-size`` utterances, on the local backend (E-step on 1 and 2
threads) and on Ray with 1 and 2 E-step workers. Reports wall seconds, the speed-up, bytes sent to and
received from the workers per minibatch, the time the workers spent drawing,
peak memory, and whether the three models are identical.

``estimate_32_nodes``: from these measurements, a run on 32 nodes of 2 CPUs
each (64 workers) over a network of ``--bandwidth`` bytes per second: per
minibatch the driver's serial work, the workers' draws divided by 64, and the
weights sent once to each node plus the shards and records through the
driver's link. docs/benchmarks.md (Scale-out on Ray) quotes it.

Each Ray part starts its own cluster (``ray.init(num_cpus=2)``); numba's
compilation is kept out of the timings by a warm-up run of each backend.
"""
from __future__ import annotations

import argparse
import dataclasses
import hashlib
import itertools
import json
import os
import resource
import sys
import tempfile
import time
from pathlib import Path
from typing import Dict, Iterator, List

import numpy as np

REPO = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(REPO))

from spacy_ag.model import AdaptorGrammar  # noqa: E402
from spacy_ag.runs.ray_estep import watch_estep  # noqa: E402
from spacy_ag.serialize import state_arrays  # noqa: E402
from spacy_ag.settings import OnlineSettings  # noqa: E402
from spacy_ag.synthetic import iter_corpus, make_lexicon  # noqa: E402

UNIGRAM_FILE = REPO / "configs" / "grammars" / "brent-unigram.lt"
#: the unigram grammar over the stream's own characters
STREAM_GRAMMAR = "1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n"


def log(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


def fingerprint(model) -> str:
    arrays = state_arrays(model.state)
    if model.variational is not None:
        arrays.update({f"vb_{k}": getattr(model.variational, k) for k in model.variational._fields})
    digest = hashlib.sha256()
    for name in sorted(arrays):
        digest.update(name.encode() + np.ascontiguousarray(arrays[name]).tobytes())
    return digest.hexdigest()


def start_cluster():
    import ray

    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    return ray


# ---------------------------------------------------------------------------- chains


def chains_part(args) -> Dict:
    texts = ["".join(line.split()) for line in Path(args.data).read_text(encoding="utf8").splitlines() if line.strip()]
    options = dict(iterations=args.sweeps, chains=2, seed=1, sample_every=5, checkpoint_every=0)

    def run(backend: str, workers: int, iterations: int):
        model = AdaptorGrammar(UNIGRAM_FILE)
        started = time.perf_counter()
        model.fit(texts, **{**options, "iterations": iterations}, workers=workers, backend=backend)
        return time.perf_counter() - started, fingerprint(model)

    runs: Dict[str, Dict] = {}
    for backend in ("local", "ray"):
        ray = start_cluster() if backend == "ray" else None
        try:
            run(backend, 2, 2)  # warm-up: the workers load (or compile) the kernels
            for workers in (1, 2):
                seconds, digest = run(backend, workers, args.sweeps)
                runs[f"{backend}_{workers}"] = {"seconds": seconds, "model": digest}
                log(f"chains {backend} x{workers}: {seconds:.1f}s")
        finally:
            if ray is not None:
                ray.shutdown()
    return {
        "corpus": args.data, "utterances": len(texts), "grammar": str(UNIGRAM_FILE.relative_to(REPO)),
        "chains": 2, "sweeps": args.sweeps, "runs": runs,
        "ray_speedup": runs["ray_1"]["seconds"] / runs["ray_2"]["seconds"],
        "local_speedup": runs["local_1"]["seconds"] / runs["local_2"]["seconds"],
        "ray_overhead": runs["ray_2"]["seconds"] / runs["local_2"]["seconds"] - 1.0,
        "identical_models": len({r["model"] for r in runs.values()}) == 1,
        "seconds_per_sweep_per_chain": runs["ray_1"]["seconds"] / (2 * args.sweeps),
    }


# ---------------------------------------------------------------------------- online E-step


def write_stream(path: Path, chars: int, seed: int) -> Dict:
    """Unsegmented utterances from a 5,000-word lexicon until `chars` characters, drawn lazily."""
    lexicon = make_lexicon(5000, min_len=2, max_len=8, seed=seed)
    written, lines = 0, 0
    with open(path, "w", encoding="utf8") as f:
        for words in iter_corpus(lexicon, chars, mean_words=4, seed=seed + 1):
            text = "".join(words)
            f.write(text + "\n")
            written += len(text)
            lines += 1
    return {"characters": written, "lines": lines}


def read_stream(path: Path) -> Iterator[str]:
    with open(path, encoding="utf8") as f:
        for line in f:
            yield line.rstrip("\n")


def estep_part(args) -> Dict:
    folder = Path(tempfile.mkdtemp(prefix="sag-scale-"))
    stream = folder / "stream.txt"
    size = write_stream(stream, args.chars, args.seed)
    log(f"stream: {size['characters']:,} characters, {size['lines']:,} lines in {stream}")
    settings = OnlineSettings(batch_size=args.batch_size, tau=128.0, kappa=0.6, refine_every=50,
                              truncation={"Word": 10000}, update_b=False, workers=1)

    def run(backend: str, workers: int, limit: int = 0, threads: int = 1) -> Dict:
        texts = read_stream(stream)
        online = dataclasses.replace(settings, workers=threads)
        if limit:  # a warm-up: prune too, so that no kernel compiles inside a timed pass
            texts = itertools.islice(texts, limit)
            online = dataclasses.replace(online, refine_every=1)
        model = AdaptorGrammar(STREAM_GRAMMAR, inference="online", online=online, default_a=0.0, default_b=1e4)
        events: List[Dict] = []
        started = time.perf_counter()
        with watch_estep(events.append):
            model.partial_fit(texts, corpus_size=size["lines"], seed=args.seed, backend=backend, workers=workers)
        seconds = time.perf_counter() - started
        out = {"seconds": seconds, "model": fingerprint(model),
               "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
               "minibatches": model.progress["minibatches"]}
        closing = [e for e in events if e["event"] == "closing"]
        if closing:
            stats = closing[0]["stats"]
            spans = [s for w in closing[0]["workers"] for s in w["spans"]]
            out.update({
                **{f"{name}_per_minibatch": stats[name] / max(1, stats["minibatches"])
                   for name in ("bytes_sent", "bytes_received", "weights_bytes", "shard_bytes")},
                "worker_draw_seconds": sum(b - a for a, b in spans),
                "worker_pids": sorted({w["pid"] for w in closing[0]["workers"]}),
                "whole_trie_fetches": sum(w["whole_tries"] for w in closing[0]["workers"]),
            })
        return out

    runs: Dict[str, Dict] = {}
    warm = 3 * args.batch_size
    try:
        run("local", 1, warm)
        for threads in (1, 2):
            runs[f"local_threads_{threads}"] = run("local", 1, threads=threads)
            log(f"estep local, {threads} threads: {runs[f'local_threads_{threads}']['seconds']:.1f}s")
        ray = start_cluster()
        try:
            run("ray", 2, warm)
            for workers in (1, 2):
                runs[f"ray_{workers}"] = run("ray", workers)
                log(f"estep ray x{workers}: {runs[f'ray_{workers}']['seconds']:.1f}s")
        finally:
            ray.shutdown()
    finally:
        stream.unlink(missing_ok=True)
        folder.rmdir()
    one, two = runs["ray_1"], runs["ray_2"]
    minibatches = one["minibatches"]
    return {
        **size, "batch_size": args.batch_size, "grammar": "unigram over the stream's characters", "runs": runs,
        "ray_speedup": one["seconds"] / two["seconds"],
        "ray_overhead": one["seconds"] / runs["local_threads_1"]["seconds"] - 1.0,
        "local_threads_speedup": runs["local_threads_1"]["seconds"] / runs["local_threads_2"]["seconds"],
        "identical_models": len({r["model"] for r in runs.values()}) == 1,
        "per_minibatch": {
            "driver_seconds": (one["seconds"] - one["worker_draw_seconds"]) / minibatches,
            "draw_seconds_one_worker": one["worker_draw_seconds"] / minibatches,
            "bytes_sent": one["bytes_sent_per_minibatch"], "bytes_received": one["bytes_received_per_minibatch"],
            "weights_bytes": one["weights_bytes_per_minibatch"], "shard_bytes": one["shard_bytes_per_minibatch"],
        },
    }


# ---------------------------------------------------------------------------- 32 nodes


def estimate(result: Dict, nodes: int, cpus: int, bandwidth: float) -> Dict:
    """A 32-node run from the measurements (see the module docstring)."""
    out: Dict = {"nodes": nodes, "cpus_per_node": cpus, "bandwidth_bytes_per_second": bandwidth}
    workers = nodes * cpus
    if "estep" in result:
        e = result["estep"]
        m = e["per_minibatch"]
        # the weights once to each node (its workers share its object store), shards and records once
        comm = (m["weights_bytes"] * nodes + m["shard_bytes"] + m["bytes_received"]) / bandwidth
        draw = m["draw_seconds_one_worker"] / workers
        per_minibatch = m["driver_seconds"] + draw + comm
        out["online_estep"] = {
            "batch_size": e["batch_size"], "seconds_per_minibatch": per_minibatch,
            "communication_seconds_per_minibatch": comm, "driver_seconds_per_minibatch": m["driver_seconds"],
            "draw_seconds_per_minibatch": draw,
            "sentences_per_second": e["batch_size"] / per_minibatch,
            "one_machine_sentences_per_second": e["batch_size"] / (m["driver_seconds"] + m["draw_seconds_one_worker"]),
            "note": "the driver's serial work per minibatch (reading and packing the text, counting the draws, "
                    "decay, the weights of G', pruning) grows with the minibatch as the draws do, so it bounds "
                    "the speed-up at about (driver + draws) / driver, whatever the number of workers",
        }
    if "chains" in result:
        c = result["chains"]
        efficiency = c["ray_speedup"] / 2
        out["chains"] = {
            "chains_at_once": workers, "efficiency_per_added_worker": efficiency,
            "sweeps_per_hour_per_chain": 3600 / c["seconds_per_sweep_per_chain"],
            "note": "chains are independent until the driver pools them: each node runs its chains at the "
                    "measured efficiency; a checkpoint (a few MB) crosses the network every checkpoint_every sweeps",
        }
    return out


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--part", choices=["chains", "estep", "both"], default="both")
    ap.add_argument("--data", default=str(REPO.parent / "shared" / "data" / "brent" / "br-phono.txt"))
    ap.add_argument("--sweeps", type=int, default=40)
    ap.add_argument("--chars", type=int, default=10_000_000)
    ap.add_argument("--batch-size", type=int, default=2000)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--bandwidth", type=float, default=1.25e9, help="bytes per second (default: 10 Gbit/s)")
    ap.add_argument("--json", required=True)
    args = ap.parse_args()
    result: Dict = {"load_average_before": os.getloadavg(), "cpus": os.cpu_count()}
    if args.part in ("chains", "both"):
        result["chains"] = chains_part(args)
    if args.part in ("estep", "both"):
        result["estep"] = estep_part(args)
    result["estimate_32_nodes"] = estimate(result, 32, 2, args.bandwidth)
    result["load_average_after"] = os.getloadavg()
    Path(args.json).write_text(json.dumps(result, indent=1) + "\n", encoding="utf8")
    print(json.dumps(result, indent=1))


if __name__ == "__main__":
    main()
