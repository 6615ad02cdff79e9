"""Time and peak memory of segmenting one unbroken line of 1k to 100k characters (not a test).

    python benchmarks/lengths.py --json /tmp/bench/lengths.json
    python benchmarks/lengths.py --train ../shared/data/sighan2005/testing/pku_test.utf8 \
        --grammar configs/grammars/chinese-unigram.lt --json /tmp/bench/lengths-pku.json

Why: a line without boundaries (a page of unspaced Chinese, a speech transcript without pauses) is
parsed whole. With spans on the adapted nonterminals (`max_span`, docs/algorithms.md 3.5) the chart is
banded and the time and memory grow linearly with the length; before, they grew with its cube and
square. The same script runs on older checkouts (put one first on PYTHONPATH), which refuse or fail
on long lines; those outcomes are recorded as they come.

How: a model is trained by MCMC on a made-up corpus (a synthetic lexicon; `--train` takes a real
file instead, one utterance per line, spaces removed). Each length is then segmented in a fresh
process that loads the saved model and first segments a short line, so kernel loading is not timed;
`seconds` is the wall time of `AdaptorGrammar.segment` on the long line, `peak_mb` the process's
peak resident memory and `added_mb` its growth during that call. The long lines are made of the
training text repeated, cut to length.
"""
from __future__ import annotations

import argparse
import json
import platform
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent
UNIGRAM = "1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n"


def peak_mb() -> float:
    """This process's peak resident memory. VmHWM, not ru_maxrss: a child started by fork and exec
    keeps its parent's ru_maxrss, but gets a fresh VmHWM."""
    try:
        with open("/proc/self/status") as status:
            return next(int(line.split()[1]) for line in status if line.startswith("VmHWM")) / 1024
    except (OSError, StopIteration):
        return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def child(model_dir: str, text_file: str, length: int) -> dict:
    """Runs in its own process: load, warm up, segment one line of `length` characters."""
    from spacy_ag import AdaptorGrammar

    model = AdaptorGrammar.load(model_dir)
    text = Path(text_file).read_text(encoding="utf8")
    line = (text * (length // max(1, len(text)) + 1))[:length]
    model.segment([line[:20]])
    before = peak_mb()
    started = time.perf_counter()
    try:
        words = model.segment([line])[0]
    except Exception as err:  # older checkouts refuse long lines: record what the user gets
        return {"length": length, "outcome": f"{type(err).__name__}: {err}"[:300],
                "seconds": time.perf_counter() - started, "peak_mb": peak_mb()}
    seconds = time.perf_counter() - started
    assert "".join(words) == line
    return {"length": length, "outcome": "segmented", "seconds": seconds, "peak_mb": peak_mb(),
            "added_mb": max(0.0, peak_mb() - before), "words": len(words),
            "longest_word": max(len(w) for w in words)}


def training_lines(args) -> list:
    if args.train:
        lines = Path(args.train).read_text(encoding="utf8").splitlines()
        return ["".join(line.split()) for line in lines if line.strip()][:args.lines]
    from spacy_ag.synthetic import generate_corpus, make_lexicon

    return ["".join(u) for u in generate_corpus(make_lexicon(200, seed=1), args.lines, seed=2)]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--lengths", default="1000,5000,20000,100000")
    parser.add_argument("--grammar", help="grammar file (default: the unigram grammar over characters)")
    parser.add_argument("--train", help="training file, one utterance per line (default: made-up text)")
    parser.add_argument("--lines", type=int, default=2000, help="training lines")
    parser.add_argument("--iterations", type=int, default=20)
    parser.add_argument("--timeout", type=float, default=600.0, help="seconds before a length is given up")
    parser.add_argument("--json", help="write the results here")
    parser.add_argument("--child", nargs=3, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.child:
        print(json.dumps(child(args.child[0], args.child[1], int(args.child[2]))))
        return

    from spacy_ag import AdaptorGrammar

    lines = training_lines(args)
    with tempfile.TemporaryDirectory() as tmp:
        grammar = args.grammar or UNIGRAM
        model = AdaptorGrammar(grammar).fit(lines, iterations=args.iterations, seed=1)
        model.save(Path(tmp) / "model")
        text_file = Path(tmp) / "text.txt"
        text_file.write_text("".join(lines), encoding="utf8")
        results = []
        for length in (int(x) for x in args.lengths.split(",")):
            command = [sys.executable, __file__, "--child", str(Path(tmp) / "model"), str(text_file), str(length)]
            started = time.perf_counter()
            try:
                run = subprocess.run(command, capture_output=True, text=True, timeout=args.timeout)
                out = run.stdout.strip().splitlines()
                result = json.loads(out[-1]) if run.returncode == 0 and out else {
                    "length": length, "outcome": f"exit {run.returncode}: {run.stderr.strip()[-300:]}"}
            except subprocess.TimeoutExpired:
                result = {"length": length, "outcome": f"killed after {args.timeout:.0f} s"}
            result["process_seconds"] = time.perf_counter() - started
            results.append(result)
            print(json.dumps(result), flush=True)
    arrays = model.compiled.arrays
    report = {
        "grammar": args.grammar or "unigram over characters",
        "training": {"file": args.train or "synthetic", "lines": len(lines), "iterations": args.iterations},
        "band": int(getattr(arrays, "band", 0)),
        "results": results,
        "machine": {"python": platform.python_version(), "platform": platform.platform()},
        "command": " ".join(sys.argv),
    }
    if args.json:
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(report, indent=2), encoding="utf8")


if __name__ == "__main__":
    main()
