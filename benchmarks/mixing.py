"""Our collocation chain beside py-cfg's, sweep by sweep, over several seeds (not a test).

    python benchmarks/mixing.py --grammar colloc --seeds 1,2,3 --sweeps 300 --json out/mixing.json
    python benchmarks/mixing.py --systems ours --seeds 1-12 --sweeps 300 --json out/ours.json

Why: the two engines target the same posterior; over 12 seeds ours looked
slower to burn in (token F about .011 lower after 20 sweeps), over 40 seeds
and 44 py-cfg runs the gap is -.003 +- .002 (docs/benchmarks.md). py-cfg cannot repeat a
seed (address-ordered containers, under ASLR), so every run is a fresh
sample: give enough seeds, and read each mean with its standard error.
Comparing the means alone cannot say why two chains differ. This records,
for both engines and every seed, what the chain looks like after each
sweep: the log posterior, the tables and the
PY hyperparameters a and b of each adaptor, and the token F of the
segmentation at the checkpoints, so that trajectories can be set side by side.

How:
* ours: `configs/brent-<grammar>-jg09.cfg` (J&G09's literal settings, the ones
  py-cfg is run with), one chain, `--seed` S; the trace line of every sweep;
  token F of the current analyses at each checkpoint (`eval_at`).
* py-cfg: the same flags as benchmarks/sweeps.py (-D -E -w 1 -R -1 -e 1 -f 1
  -g 10 -h 0.1 -a 0.0001 -b 10000), -r S, on the reference grammar, with
  `-d 10` so that its trace (-F) lists (parent pym pyn pya pyb) for every
  adaptor, and `-x 1 -X CMD`, which writes a trace line after every sweep and
  pipes every sweep's parses to CMD, an awk filter keeping those of every G-th
  sweep (G = the greatest common divisor of the checkpoints); a parse's words
  are the yields of its `--word` nodes. py-cfg's
  trace line `It` describes the state after `It` sweeps. py-cfg shuffles the
  utterances with std::random_shuffle, which draws from rand(), and rand() is
  never seeded: all its runs, whatever -r, visit the utterances in one sequence
  of orders. For independent seeds, give `--pycfg` a build with the line
  `srand(rand_init);` added after `mt_init_genrand(rand_init);` in py-cfg.cc.
* summary: the mean over seeds of token F at each checkpoint, for each engine,
  and ours minus py-cfg.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time
from functools import reduce
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"
sys.path.insert(0, str(ROOT / "benchmarks"))
from sweeps import GRAMMARS, PYCFG_FLAGS  # noqa: E402  (the grammar pairs and py-cfg's flags)

_TRACE_ADAPTOR = re.compile(r"(\S+) (\d+) (\d+) (\S+) (\S+)")


def seeds_of(spec: str):
    out = []
    for part in spec.split(","):
        lo, _, hi = part.partition("-")
        out.extend(range(int(lo), int(hi or lo) + 1))
    return out


def mean_and_sem(values) -> dict:
    """The mean over seeds and its standard error (seed to seed, token F spreads by about .01, so
    12 seeds leave an error of about .003 on each engine's mean)."""
    sem = statistics.stdev(values) / math.sqrt(len(values)) if len(values) > 1 else float("nan")
    return {"mean": statistics.mean(values), "sem": sem, "seeds": len(values)}


def difference(a: dict, b: dict) -> dict:
    return {"mean": a["mean"] - b["mean"], "sem": math.hypot(a["sem"], b["sem"])}


def run_ours(name: str, data: str, seed: int, sweeps: int, checkpoints) -> dict:
    from spacy_ag.config import build_model, load_training_config
    from spacy_ag.corpus import read_corpus

    cfg = load_training_config(ROOT / "configs" / GRAMMARS[name][0])
    corpus = read_corpus(data, gold=True)
    lines = []
    started = time.process_time()
    build_model(cfg).fit(corpus, iterations=sweeps, chains=1, seed=seed, burn_in=sweeps - 1,
                         checkpoint_every=0, gold=corpus.gold_words, eval_at=list(checkpoints),
                         callback=lines.append)
    by_sweep = [{"sweep": l["iteration"], "neg_log_posterior": -l["log_posterior"] - l["log_prior"],
                 "tables": l["tables"], "a": l["a"], "b": l["b"]} for l in lines]
    token_f = {str(l["iteration"]): l["token_f"] for l in lines if "token_f" in l}
    return {"by_sweep": by_sweep, "token_f": token_f, "cpu_seconds": time.process_time() - started}


def _segmentations(text: str, word: str):
    """Each dump of the parses file (dumps are separated by an empty line) as lists of words."""
    dumps, current = [], []
    for line in text.split("\n"):
        if line.strip():
            current.append(line)
        elif current:
            dumps.append([_words(l, word) for l in current])
            current = []
    if current:
        dumps.append([_words(l, word) for l in current])
    return dumps


def _words(tree: str, word: str):
    """Yields of the outermost `word` nodes of a bracketed py-cfg parse, left to right (a token
    right after "(" is a category, `Word#3` is a Word)."""
    out, stack, current = [], [], None
    # py-cfg writes the phonemes "(" and ")" as \( and \)
    tokens = re.findall(r"\\.|\(|\)|[^\s()\\]+", tree)
    i = 0
    while i < len(tokens):
        tok = tokens[i]
        if tok == "(":
            cat = tokens[i + 1]
            stack.append(cat)
            if current is None and cat.split("#")[0] == word:
                current = (len(stack), [])
            i += 2
            continue
        if tok == ")":
            if current is not None and len(stack) == current[0]:
                out.append("".join(current[1]))
                current = None
            stack.pop()
        elif current is not None:
            current[1].append(tok[1:] if tok.startswith("\\") else tok)
        i += 1
    return out


def run_pycfg(binary: str, grammar: Path, lines, seed: int, sweeps: int, checkpoints, word: str) -> dict:
    from spacy_ag.evaluation import segmentation_scores

    every = reduce(math.gcd, checkpoints)
    gold = [l.split() for l in lines]
    with tempfile.TemporaryDirectory() as tmp:
        text, trace, parses = Path(tmp, "in.yld"), Path(tmp, "trace.txt"), Path(tmp, "parses.txt")
        text.write_text("".join(" ".join(l.replace(" ", "")) + "\n" for l in lines))
        # a trace line after every sweep (-x 1), but the parses only of every `every`-th sweep
        keep = (f"awk 'BEGIN {{ k = 0 }} $0 == \"\" {{ k++; if (k % {every} == 0) print \"\"; next }} "
                f"k % {every} == 0' > {parses}")
        cmd = [binary, *PYCFG_FLAGS, "-r", str(seed), "-n", str(sweeps + 1), "-d", "10", "-F", str(trace),
               "-x", "1", "-X", keep, str(grammar)]
        started = time.time()
        with open(text) as stdin:
            subprocess.run(cmd, stdin=stdin, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL, check=True)
        wall = time.time() - started
        by_sweep = []
        for row in trace.read_text().splitlines():
            if not row.strip() or row.startswith("#"):
                continue
            cols = row.split("\t")
            entry = {"sweep": int(cols[0]), "neg_log_posterior": float(cols[3]), "tables": {}, "a": {}, "b": {}}
            for parent, pym, _pyn, pya, pyb in _TRACE_ADAPTOR.findall(cols[-1]):
                entry["tables"][parent] = int(pym)
                entry["a"][parent] = float(pya)
                entry["b"][parent] = float(pyb)
            if entry["sweep"] <= sweeps:
                by_sweep.append(entry)
        dumps = _segmentations(parses.read_text(), word)
    token_f = {}
    for c in checkpoints:
        k = c // every  # dump k holds the parses after k * every sweeps
        if k < len(dumps) and len(dumps[k]) == len(gold):
            token_f[str(c)] = segmentation_scores(dumps[k], gold)["token_f"]
    return {"by_sweep": by_sweep, "token_f": token_f, "wall_seconds": wall, "command": " ".join(cmd)}


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=str(SHARED / "data/brent/br-phono.txt"))
    p.add_argument("--grammar", default="colloc", choices=sorted(GRAMMARS))
    p.add_argument("--seeds", default="1,2,3", help="e.g. 1,2,3 or 1-12")
    p.add_argument("--sweeps", type=int, default=300)
    p.add_argument("--checkpoints", default="20,100,300")
    p.add_argument("--systems", default="ours,pycfg")
    p.add_argument("--pycfg", default="/work/pycfg/py-cfg",
                   help="the py-cfg binary (a build seeding rand() gives each seed its own orders)")
    p.add_argument("--pycfg-grammars", default=str(SHARED / "design/reference-grammars"))
    p.add_argument("--word", default="Word", help="the category whose yields are words")
    p.add_argument("--json", required=True)
    args = p.parse_args()
    os.environ.setdefault("NUMBA_CACHE_DIR", str(Path(tempfile.gettempdir()) / "spacy-ag-mixing-numba"))
    sys.path.insert(0, str(ROOT))
    checkpoints = sorted({int(c) for c in args.checkpoints.split(",") if c and int(c) <= args.sweeps})
    with open(args.data, encoding="utf8") as f:
        lines = [l.strip() for l in f if l.strip()]
    systems = args.systems.split(",")
    runs = {s: {} for s in systems}
    out = {"grammar": args.grammar, "sweeps": args.sweeps, "checkpoints": checkpoints, "runs": runs}
    for seed in seeds_of(args.seeds):
        if "ours" in systems:
            runs["ours"][str(seed)] = run_ours(args.grammar, args.data, seed, args.sweeps, checkpoints)
        if "pycfg" in systems:
            runs["pycfg"][str(seed)] = run_pycfg(args.pycfg, Path(args.pycfg_grammars) / GRAMMARS[args.grammar][1],
                                                 lines, seed, args.sweeps, checkpoints, args.word)
        print(json.dumps({s: runs[s][str(seed)]["token_f"] for s in systems}), flush=True)
        summary = {}
        for s in systems:
            summary[s] = {str(c): mean_and_sem([r["token_f"][str(c)] for r in runs[s].values()
                                                if str(c) in r["token_f"]]) for c in checkpoints}
        if len(systems) == 2:
            summary["ours_minus_pycfg"] = {c: difference(summary["ours"][c], summary["pycfg"][c])
                                           for c in summary["ours"]}
        out["summary"] = summary
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=1))
    print(json.dumps(out["summary"]))


if __name__ == "__main__":
    main()
