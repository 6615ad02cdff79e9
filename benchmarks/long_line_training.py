"""Time and peak memory of training on one unbroken line of 30k to 300k characters (not a test).

    python benchmarks/long_line_training.py --json /tmp/bench/long-line-training.json

Why: a line without boundaries (an unspaced page, a transcript without pauses) is one sentence to
the sampler. Its inside chart is banded (docs/algorithms.md 3.5) and, past 64 MB, filled and drawn
in blocks, and the pools reserve what one tree over it can add; training memory then grows about
linearly with the line, at a few KB per character. The same script runs on older checkouts (put
one first on PYTHONPATH) to compare.

How: each length is a line of made-up words (a synthetic lexicon over 26 letters), written to a
file; `spacy-ag train configs/brent-unigram.cfg` (the shipped unigram config, with its online warm
start) trains 2 iterations on it in a fresh process, after a first run on a short line has loaded
the kernels. `seconds` is the process's wall time, `peak_mb` its peak resident memory (from
wait4), `exit` its exit status and `last_line` the last line it printed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
CONFIG = REPO / "configs" / "brent-unigram.cfg"


def make_line(length: int, seed: int) -> str:
    from spacy_ag.synthetic import generate_corpus, make_lexicon

    lexicon = make_lexicon(2000, alphabet="abcdefghijklmnopqrstuvwxyz", seed=seed)
    text = ""
    chunk = 0
    while len(text) < length:
        text += "".join("".join(u) for u in generate_corpus(lexicon, 500, seed=seed + chunk))
        chunk += 1
    return text[:length]


def train(path: Path, out: Path, timeout: float) -> dict:
    """Run the training command; its wall time, peak memory and outcome."""
    cmd = [sys.executable, "-m", "spacy_ag", "train", str(CONFIG), "--paths.train", str(path),
           "--corpus.gold", "false", "--training.iterations", "2", "--output", str(out)]
    log = out.with_suffix(".log")
    started = time.perf_counter()
    with open(log, "w") as sink:
        proc = subprocess.Popen(cmd, stdout=sink, stderr=subprocess.STDOUT)
        timer = threading.Timer(timeout, proc.kill)
        timer.start()
        _, status, usage = os.wait4(proc.pid, 0)  # the child's own peak, which Popen.wait would not give
        timer.cancel()
    seconds = time.perf_counter() - started
    lines = [line for line in log.read_text().splitlines() if line.strip()]
    return {"seconds": round(seconds, 2), "exit": os.waitstatus_to_exitcode(status),
            "peak_mb": round(usage.ru_maxrss / 1024, 1), "last_line": lines[-1] if lines else ""}


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", default="30000,100000,300000")
    parser.add_argument("--seed", type=int, default=1)
    parser.add_argument("--timeout", type=float, default=900.0, help="seconds before a length is given up")
    parser.add_argument("--json", help="write the results here")
    args = parser.parse_args()
    results = []
    with tempfile.TemporaryDirectory() as tmp:
        tmp = Path(tmp)
        for length in [200] + [int(x) for x in args.lengths.split(",")]:
            path = tmp / f"line-{length}.txt"
            path.write_text(make_line(length, args.seed) + "\n", encoding="utf8")
            row = {"length": length, **train(path, tmp / f"out-{length}", args.timeout)}
            if length == 200:
                continue  # loads (or compiles) the kernels
            results.append(row)
            print(json.dumps(row), flush=True)
    report = {"benchmark": "long_line_training", "date": time.strftime("%Y-%m-%d"), "config": str(CONFIG.name),
              "machine": platform.machine(), "cpus": os.cpu_count(), "results": results}
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=1) + "\n", encoding="utf8")


if __name__ == "__main__":
    main()
