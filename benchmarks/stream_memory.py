"""Memory of online training streamed from a file of 1M to 10M+ characters (not a test).

    python benchmarks/stream_memory.py --chars 1000000 10000000 --json /tmp/bench/stream_memory.json

Why: `spacy-ag train` with ``inference.stream = true`` reads its corpus lazily, checkpoints, and
writes the segmentation line by line, so its memory must not grow with the corpus: a 10M-character
run should peak where a 1M-character one does.

How: for each size, a gold corpus is generated into a temporary folder line by line
(`spacy_ag.synthetic.iter_corpus`: a made-up lexicon of `--words` words, Zipfian frequencies), and
a fresh process trains on it as a streamed config does (`spacy_ag.train.engine._train_stream`'s
steps: the counting pass, `AdaptorGrammar.fit_stream` with checkpoints, then `segment_lines` into
`write_segmentation`, scored against the generated gold). The config is
configs/brent-unigram-online.cfg (grammar configs/grammars/brent-unigram.lt, whose `[:corpus:]` class
takes the generated alphabet) with ``inference.stream = true``, a truncation of twice the lexicon
and the benchmark's seed and checkpoint interval as overrides. Resident memory (VmRSS) is read
at every trace line (every `refine_every` = 50 minibatches); `rss_at_mb` gives the samples nearest
10%, 50% and 100% of the stream's minibatches, `peak_*_mb` the process's VmHWM after training and
after writing. Checkpoints are counted and measured as they are written.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

REPO = Path(__file__).resolve().parent.parent

CONFIG = REPO / "configs" / "brent-unigram-online.cfg"


def status_mb(field: str) -> float:
    """A /proc/self/status figure (VmRSS: now, VmHWM: the peak) in MB."""
    with open("/proc/self/status") as status:
        return next(int(line.split()[1]) for line in status if line.startswith(field)) / 1024


def child(overrides: str) -> dict:
    """Runs in its own process: train on the streamed file, write and score the segmentation."""
    from spacy_ag.config import build_model, load_training_config
    from spacy_ag.corpus import iter_lines
    from spacy_ag.runs.online_runner import VariationalRun
    from spacy_ag.train.engine import segment_lines, write_segmentation

    cfg = load_training_config(CONFIG, json.loads(overrides))
    out, o, t = cfg.output, cfg.online, cfg.training
    checkpoints = {"count": 0, "bytes": []}
    save = VariationalRun.save_checkpoint

    def counted_save(run):  # instrumentation only: the run saves as it always does
        save(run)
        checkpoints["count"] += 1
        checkpoints["bytes"].append(os.path.getsize(run.checkpoint))

    VariationalRun.save_checkpoint = counted_save

    def texts():
        return ("".join(text.split()) for _, text in iter_lines(cfg.train_path))

    started = time.perf_counter()
    model = build_model(cfg)
    lines = chars = 0
    alphabet = set()
    for text in texts():  # the engine's counting pass
        alphabet.update(model._terminals(text))
        lines += bool(text)
        chars += len(text)
    model.prepare_alphabet(alphabet)
    counted = time.perf_counter()

    samples = []

    def on_line(line):
        samples.append((line["minibatch"], status_mb("VmRSS")))

    model.fit_stream(texts, passes=o.passes, corpus_size=o.corpus_size or lines, seed=t.seed, callback=on_line,
                     shuffle_buffer=cfg.shuffle_buffer, checkpoint_dir=out / "checkpoints",
                     checkpoint_every=t.checkpoint_every)
    trained = time.perf_counter()
    peak_training = status_mb("VmHWM")
    model.save(out / "model")
    gold = (text.split() for _, text in iter_lines(cfg.train_path))
    scores = write_segmentation(out / "segmentation.txt", segment_lines(model, texts()), gold, str(cfg.train_path))
    written = time.perf_counter()

    minibatches = model.progress["minibatches"]

    def rss_at(fraction):
        return min(samples, key=lambda s: abs(s[0] - fraction * minibatches))[1]

    return {
        "characters": chars, "lines": lines, "minibatches": minibatches,
        "seconds": {"counting_pass": counted - started, "training": trained - counted,
                    "segmentation_and_scores": written - trained, "total": written - started},
        "rss_at_mb": {"10%": rss_at(0.1), "50%": rss_at(0.5), "100%": rss_at(1.0)},
        "rss_samples": len(samples), "rss_sampled_max_mb": max(s[1] for s in samples),
        "peak_training_mb": peak_training, "peak_total_mb": status_mb("VmHWM"),
        "checkpoints": {"count": checkpoints["count"], "bytes_last": checkpoints["bytes"][-1],
                        "bytes_max": max(checkpoints["bytes"])},
        "grammaton": model.trace[-1].get("grammaton"),
        "token_f": scores["token_f"], "boundary_f": scores["boundary_f"], "type_f": scores["type_f"],
    }


def generate(path: Path, n_chars: int, words: int, seed: int) -> float:
    """Write the gold corpus line by line; returns the seconds it took."""
    from spacy_ag.synthetic import iter_corpus, make_lexicon, write_gold

    started = time.perf_counter()
    write_gold(path, iter_corpus(make_lexicon(words, seed=seed), n_chars, mean_words=3.5, seed=seed + 1))
    return time.perf_counter() - started


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--chars", type=int, nargs="+", default=[1_000_000, 10_000_000])
    ap.add_argument("--words", type=int, default=3000, help="lexicon size of the generated corpus")
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--checkpoint-every", type=int, default=50)
    ap.add_argument("--grammar", default=str(REPO / "configs" / "grammars" / "brent-unigram.lt"))
    ap.add_argument("--json", required=True)
    ap.add_argument("--child", help=argparse.SUPPRESS)
    args = ap.parse_args()
    if args.child:
        json.dump(child(args.child), sys.stdout)
        return
    runs = []
    with tempfile.TemporaryDirectory(prefix="stream-memory-") as tmp:
        for n_chars in args.chars:
            folder = Path(tmp) / str(n_chars)
            folder.mkdir()
            gold = folder / "gold.txt"
            generating = generate(gold, n_chars, args.words, args.seed)
            overrides = {"paths.train": str(gold), "paths.output": str(folder / "out"), "grammar.path": args.grammar,
                         "inference.stream": True, "online.truncation": {"Word": 2 * args.words},
                         "training.seed": args.seed, "training.checkpoint_every": args.checkpoint_every}
            env = dict(os.environ, PYTHONPATH=os.pathsep.join([str(REPO), os.environ.get("PYTHONPATH", "")]))
            done = subprocess.run([sys.executable, __file__, "--json", "-", "--child", json.dumps(overrides)],
                                  env=env, check=True, capture_output=True, text=True)
            run = {"target_characters": n_chars, "file_bytes": gold.stat().st_size,
                   "generation_seconds": generating, **json.loads(done.stdout)}
            runs.append(run)
            print(json.dumps({k: run[k] for k in ("characters", "lines", "minibatches", "rss_at_mb",
                                                   "peak_total_mb", "token_f")}), file=sys.stderr)
    summary = {"benchmark": "stream_memory", "config": os.path.relpath(CONFIG, REPO), "words": args.words,
               "seed": args.seed, "checkpoint_every": args.checkpoint_every,
               "grammar": os.path.relpath(args.grammar, REPO), "python": platform.python_version(),
               "cpus": os.cpu_count(), "runs": runs}
    if len(runs) > 1:
        small, large = min(runs, key=lambda r: r["characters"]), max(runs, key=lambda r: r["characters"])
        summary["peak_ratio_largest_to_smallest"] = large["peak_total_mb"] / small["peak_total_mb"]
        summary["characters_ratio"] = large["characters"] / small["characters"]
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(summary, indent=2) + "\n", encoding="utf8")
    print(json.dumps(summary, indent=2))


if __name__ == "__main__":
    main()
