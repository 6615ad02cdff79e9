"""F and held-out likelihood against inside-algorithm calls and seconds: mcmc, vb and online (not a test).

    python benchmarks/online.py --data ../shared/data/brent/br-phono.txt --grammar unigram \
        --mode online --passes 1 --seed 1 --json out/online.json --plot out/online.png
    python benchmarks/online.py --plot fig2.png --compare mcmc.json vb.json online.json

The data set is recognised from the file (``--dataset`` overrides):

* ``brent``: ``br-phono.txt``, one gold-segmented utterance per line. A
  seeded random ``--heldout-fraction`` of the utterances (default 0.1) is
  held out; the model trains on the rest (with 0 it trains on everything,
  as [ZBC14] did, and no held-out likelihood is computed).
* ``pku``: a gold-segmented SIGHAN 2005 file (the shared data has only the
  PKU test gold, ``sighan2005/gold/pku_test_gold.utf8``), split 70/30 by a
  seeded random permutation of its lines (``--heldout-fraction`` 0.3);
  punctuation (`DEFAULT_PUNCTUATION`) is a hard boundary and a word of its
  own, both in training and in scoring.

``--limit N`` keeps the first N lines before splitting. Training text is the
gold text with the spaces removed.

Measured (``final`` and each point of ``curve``):

* ``token_f``, ``boundary_f``, ``lexicon_f``: segmentation of the training
  lines against their gold words, whole lines (for PKU punctuation tokens
  count; ``token_f_no_punct`` leaves them out). vb/online: the most probable
  parse of every training sentence under the current G'. mcmc: the curve
  holds the F of the current sample (for PKU scored per punctuation-free
  chunk, as the chain scores it); ``final`` is the maximum-marginal
  segmentation over the kept samples (second half, every 10th sweep), and
  ``final.sample_token_f`` the last sample's F.
* ``inside_calls``: vb/online as counted by the learner (one per sentence
  of every minibatch plus the re-derivation parses at each refinement).
  mcmc: one per sentence at initialisation, one per sentence per sweep, and
  one per table-label proposal (label_accepted + label_rejected +
  label_unchanged).
* ``wall_seconds``: training time only, cumulative. vb/online: wall clock
  from the call to ``fit`` minus the time spent evaluating (the engine's
  segmentation and scoring at evaluation points and this script's held-out
  likelihood). mcmc: setup and initialisation (until the first sweep's trace
  line, less that sweep) plus the sweep times the chain reports (sentence
  resampling, label resampling, hyperparameters; the per-sweep log posterior
  and evaluation are outside). Numba compilation is not included: a small
  warm-up fit (``warmup_seconds``) runs first in the same process.
* ``peak_rss_mb``: peak resident memory of the process so far (warm-up
  included).
* ``heldout_loglik``: docs/algorithms.md 4.15 on the held-out lines
  (``AdaptorGrammar.heldout_loglik``). vb/online: at the final point and at
  every ``--heldout-every``-th curve point (default: about 5 points in all),
  null elsewhere. mcmc: final point only (the chain's state is not visible
  mid-run). ``final`` also has ``heldout_token_f``/``heldout_boundary_f``:
  the held-out lines segmented by the final model.

Evaluation points: online every ``--eval-every`` minibatches (default about
20 per pass) and at the end of every pass; vb every iteration; mcmc at about
30 log-spaced sweeps. ``workers`` sets the E-step threads of vb/online
(``OnlineSettings.workers``; 0 = all cores); mcmc runs one chain in this
process and ignores it.

``--plot OUT.png`` draws token F against inside calls (log scale) and against
seconds, one line per JSON file (this run and ``--compare`` files), like
Figure 2 of Zhai, Boyd-Graber & Cohen (2014); it needs matplotlib, which is
not a dependency of spacy-ag.
"""
from __future__ import annotations

import argparse
import json
import math
import os
import random
import resource
import sys
import time
from pathlib import Path
from typing import Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
GRAMMAR_FILES = {
    ("brent", "unigram"): ROOT / "configs/grammars/brent-unigram.lt",
    ("brent", "colloc"): ROOT / "configs/grammars/brent-colloc.lt",
    ("pku", "unigram"): ROOT / "configs/grammars/chinese-unigram.lt",
    ("pku", "colloc"): ROOT / "configs/grammars/chinese-colloc.lt",
}
# [ZBC14] settings (tau and kappa for PKU are not given there: the Brent ones of the same grammar)
ONLINE_DEFAULTS = {
    ("brent", "unigram"): dict(batch_size=20, tau=128.0, kappa=0.6, refine_every=50, truncation={"Word": 1500}),
    ("brent", "colloc"): dict(batch_size=5, tau=256.0, kappa=0.8, refine_every=50,
                              truncation={"Word": 1500, "Colloc": 3000}),
    ("pku", "unigram"): dict(batch_size=100, tau=128.0, kappa=0.6, refine_every=100, truncation={"Word": 40000}),
    ("pku", "colloc"): dict(batch_size=100, tau=256.0, kappa=0.8, refine_every=100,
                            truncation={"Word": 40000, "Colloc": 120000}),
}
# vb/online: a = 0, b = 1e4, b not updated (measured best); mcmc: the configs' J&G09 starting values
VARIATIONAL_OPTIONS = {"default_a": 0.0, "default_b": 1e4}
MCMC_OPTIONS = {"default_a": 1e-4, "default_b": 1e4}
HELDOUT_FRACTION = {"brent": 0.1, "pku": 0.3}
KEYS = ("token_f", "boundary_f", "inside_calls", "wall_seconds", "peak_rss_mb", "heldout_loglik")


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def detect_dataset(path: str) -> str:
    if "sighan" in path.lower() or "pku" in Path(path).name.lower():
        return "pku"
    with open(path, encoding="utf8") as f:
        head = f.read(4096)
    return "brent" if head.isascii() else "pku"


def read_lines(path: str, limit: int) -> List[str]:
    from spacy_ag.corpus import iter_lines
    lines = [text for _, text in iter_lines(path) if text.strip()]
    return lines[:limit] if limit else lines


def split_lines(lines: List[str], fraction: float, seed: int):
    """(train, heldout): a seeded random `fraction` of the lines held out, both in file order."""
    n_out = int(round(len(lines) * fraction))
    order = list(range(len(lines)))
    random.Random(seed).shuffle(order)
    out = set(order[:n_out])
    return ([l for i, l in enumerate(lines) if i not in out], [l for i, l in enumerate(lines) if i in out])


def parse_truncation(text: Optional[str]) -> Optional[Dict[str, int]]:
    if not text:
        return None
    out = {}
    for item in text.split(","):
        name, _, k = item.partition("=")
        out[name.strip()] = int(k)
    return out


def mcmc_eval_points(sweeps: int, n: int = 30) -> List[int]:
    """About `n` log-spaced sweeps in [2, sweeps], always with the last (not 1: its gap holds the set-up)."""
    if sweeps < 2:
        return [sweeps]
    pts = {int(round(math.exp(math.log(2) + i * (math.log(sweeps) - math.log(2)) / (n - 1)))) for i in range(n)}
    return sorted({p for p in pts if 2 <= p <= sweeps} | {sweeps})


class Scorer:
    """Whole-line scores of per-sentence segmentations (reassembled), with and without punctuation."""

    def __init__(self, corpus, punctuation):
        self.corpus = corpus
        self.punctuation = punctuation

    def __call__(self, per_utterance) -> Dict[str, float]:
        from spacy_ag.evaluation import segmentation_scores
        s = segmentation_scores(per_utterance, self.corpus.gold_words)
        out = {"token_f": s["token_f"], "boundary_f": s["boundary_f"], "lexicon_f": s["type_f"]}
        if self.punctuation:
            out["token_f_no_punct"] = segmentation_scores(per_utterance, self.corpus.gold_words,
                                                          exclude=self.punctuation)["token_f"]
        return out

    def sentences(self, per_sentence) -> Dict[str, float]:
        return self(self.corpus.reassemble(per_sentence))


def forget_weights(ag) -> None:
    # AdaptorGrammar caches G' by the identity of its state and statistics, which the learner updates
    # in place: drop the cache so every evaluation sees the current G'.
    ag.__dict__.pop("_weights_cache", None)


def warm_up(args, grammar_file, split_at, sentences: List[str]) -> float:
    """Compile (or load) the kernels with a throwaway fit, segment and held-out likelihood."""
    from spacy_ag.runs.online_learner import OnlineSettings
    from spacy_ag.model import AdaptorGrammar
    started = time.perf_counter()
    texts = sentences[:30]
    if args.mode == "mcmc":
        ag = AdaptorGrammar(grammar_file, split_at=split_at, **MCMC_OPTIONS)
        ag.fit(texts, iterations=3, sample_every=1)
    else:
        ag = AdaptorGrammar(grammar_file, split_at=split_at, inference=args.mode, **VARIATIONAL_OPTIONS,
                            online=OnlineSettings(batch_size=5, refine_every=2, passes=1, workers=args.workers))
        ag.fit(texts)
    ag.segment(texts[:3])
    ag.heldout_loglik(texts[:3])
    return time.perf_counter() - started


def run(args) -> Dict:
    sys.path.insert(0, str(ROOT))
    import numba
    from spacy_ag.runs.mcmc_chain import SamplerSettings
    from spacy_ag.runs.online_learner import OnlineSettings
    from spacy_ag.train.engine import sentence_gold
    from spacy_ag.corpus import DEFAULT_PUNCTUATION, read_corpus
    from spacy_ag.model import AdaptorGrammar

    dataset = args.dataset if args.dataset != "auto" else detect_dataset(args.data)
    grammar_file = Path(args.grammar_file) if args.grammar_file else GRAMMAR_FILES[dataset, args.grammar]
    split_at = DEFAULT_PUNCTUATION if dataset == "pku" else None
    fraction = HELDOUT_FRACTION[dataset] if args.heldout_fraction is None else args.heldout_fraction
    lines = read_lines(args.data, args.limit)
    train_lines, test_lines = split_lines(lines, fraction, args.seed)
    corpus = read_corpus(train_lines, gold=True, split_at=split_at, source=args.data)
    test = read_corpus(test_lines, gold=True, split_at=split_at, source=args.data) if test_lines else None
    test_texts = ["".join(words) for words in test.gold_words] if test else []
    gold = sentence_gold(corpus, corpus.gold_words, args.data)
    scorer = Scorer(corpus, DEFAULT_PUNCTUATION if split_at else None)
    log(f"{dataset}: {len(train_lines)} training lines ({len(corpus)} sentences), {len(test_lines)} held out")

    warmup_seconds = warm_up(args, grammar_file, split_at, ["".join(s) for s in corpus.sentences])
    log(f"warm-up {warmup_seconds:.1f}s")

    settings = None
    if args.mode == "mcmc":
        ag = AdaptorGrammar(grammar_file, split_at=split_at, sampler=SamplerSettings(), **MCMC_OPTIONS)
    else:
        d = dict(ONLINE_DEFAULTS[dataset, args.grammar])
        for name in ("batch_size", "tau", "kappa", "refine_every"):
            if getattr(args, name) is not None:
                d[name] = getattr(args, name)
        d["truncation"] = parse_truncation(args.truncation) or d["truncation"]
        settings = OnlineSettings(**d, default_truncation=1500, update_b=False, passes=args.passes,
                                  workers=args.workers)
        ag = AdaptorGrammar(grammar_file, split_at=split_at, inference=args.mode, online=settings,
                            **VARIATIONAL_OPTIONS)

    curve: List[Dict] = []
    trace: List[Dict] = []
    load_before = os.getloadavg()

    if args.mode == "mcmc":
        points = mcmc_eval_points(args.passes)
        clock = {"t0": 0.0, "setup": None, "sweeps": 0.0, "labels": 0, "it": 0}

        def callback(line):
            now = time.perf_counter()
            trace.append(line)
            clock["labels"] += line["label_accepted"] + line["label_rejected"] + line["label_unchanged"]
            clock["sweeps"] += line["seconds"]
            clock["it"] = line["iteration"]
            if clock["setup"] is None:
                clock["setup"] = now - clock["t0"] - line["seconds"]
            if "token_f" in line:
                curve.append({
                    "iteration": line["iteration"], "token_f": line["token_f"], "boundary_f": line["boundary_f"],
                    "lexicon_f": line["lexicon_f"],
                    "inside_calls": len(corpus) * (1 + line["iteration"]) + clock["labels"],
                    "wall_seconds": clock["setup"] + clock["sweeps"], "peak_rss_mb": line["peak_rss_mb"],
                    "heldout_loglik": None})
                log(f"sweep {line['iteration']}: F {line['token_f']:.4f}  {curve[-1]['wall_seconds']:.1f}s")

        clock["t0"] = time.perf_counter()
        ag.fit(corpus, iterations=args.passes, seed=args.seed, gold=gold, eval_at=points, callback=callback)
        final_point = dict(curve[-1]) if curve else {}
    else:
        n_batches = math.ceil(len(corpus) / settings.batch_size) if args.mode == "online" else 1
        eval_every = args.eval_every or (max(1, n_batches // 20) if args.mode == "online" else 1)
        n_points = max(1, (n_batches // eval_every) * args.passes)
        heldout_every = args.heldout_every or max(1, round(n_points / 5))
        probe = {"entered": None, "segmentation": None}
        original = ag._segment_packed

        def timed_segment(*a, **k):
            probe["entered"] = time.perf_counter()
            out = original(*a, **k)
            probe["segmentation"] = out
            return out

        ag._segment_packed = timed_segment
        clock = {"t0": 0.0, "excluded": 0.0, "estep": 0.0}

        def callback(line):
            now = time.perf_counter()
            trace.append(line)
            clock["estep"] += line.get("estep_seconds", 0.0)
            if "token_f" not in line:
                return
            if probe["entered"] is not None:  # the engine's evaluation, just before this call
                clock["excluded"] += now - probe["entered"]
                probe["entered"] = None
            point = {"minibatch": line["minibatch"], "pass": line["pass"],
                     "sentences_seen": line["sentences_seen"], "inside_calls": line["inside_calls"],
                     "wall_seconds": now - clock["t0"] - clock["excluded"], "peak_rss_mb": line["peak_rss_mb"],
                     "grammaton": line.get("grammaton"), "b": line.get("b")}
            point.update(scorer.sentences(probe["segmentation"]))
            point["heldout_loglik"] = None
            if test_texts and len(curve) % heldout_every == heldout_every - 1:
                point["heldout_loglik"] = ag.heldout_loglik(test_texts)["heldout_loglik"]
            curve.append(point)
            forget_weights(ag)
            log(f"pass {line['pass']} minibatch {line['minibatch']}: F {point['token_f']:.4f} "
                f"inside {point['inside_calls']} {point['wall_seconds']:.1f}s")
            clock["excluded"] += time.perf_counter() - now

        clock["t0"] = time.perf_counter()
        ag.fit(corpus, seed=args.seed, gold=gold, eval_every=eval_every, callback=callback)
        ag._segment_packed = original
        final_point = dict(curve[-1]) if curve else {}

    forget_weights(ag)
    final = dict(final_point)
    final.update(scorer(ag.training_segmentation()))
    if args.mode == "mcmc":
        final["sample_token_f"] = final_point.get("token_f")
    if test_texts:
        held = ag.heldout_loglik(test_texts)
        final.update(held)
        hs = Scorer(test, scorer.punctuation)(ag.segment(test_texts))
        final.update({f"heldout_{k}": v for k, v in hs.items()})
        if curve:
            curve[-1]["heldout_loglik"] = held["heldout_loglik"]
    final["peak_rss_mb"] = peak_rss_mb()
    for key in KEYS:
        final.setdefault(key, None)

    label = args.label or f"{args.mode} ({args.grammar}, {dataset}" + (
        f", {args.workers} workers)" if args.mode != "mcmc" and args.workers else ")")
    return {
        "label": label, "data": args.data, "dataset": dataset, "grammar": args.grammar,
        "grammar_file": str(grammar_file), "mode": args.mode, "passes": args.passes, "seed": args.seed,
        "limit": args.limit, "heldout_fraction": fraction, "training_lines": len(train_lines),
        "training_sentences": len(corpus), "heldout_lines": len(test_lines),
        "workers": args.workers, "numba_threads": numba.config.NUMBA_NUM_THREADS,
        "estep_seconds": clock.get("estep") or None,
        "grammar_options": MCMC_OPTIONS if args.mode == "mcmc" else VARIATIONAL_OPTIONS,
        "settings": ag.sampler.to_dict() if args.mode == "mcmc" else settings.to_dict(),
        "warmup_seconds": warmup_seconds, "loadavg_before": load_before, "loadavg_after": os.getloadavg(),
        **{k: final[k] for k in KEYS},
        "final": final,
        "curve": curve,
    }


def plot(out: str, runs: Sequence[Dict]) -> None:
    try:
        import matplotlib
        import matplotlib.ticker
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print("--plot needs matplotlib, which spacy-ag does not install: pip install matplotlib", file=sys.stderr)
        return
    fig, (left, right) = plt.subplots(1, 2, figsize=(11, 4.2), sharey=True)
    for r in runs:
        pts = [p for p in r["curve"] if p.get("token_f") is not None]
        label = r.get("label") or r.get("mode")
        line, = left.plot([p["inside_calls"] for p in pts], [p["token_f"] for p in pts], marker=".", label=label)
        right.plot([p["wall_seconds"] for p in pts], [p["token_f"] for p in pts], marker=".",
                   color=line.get_color(), label=label)
    left.set_xscale("log")
    left.set_xlabel("inside-algorithm calls")
    right.set_xscale("log")
    right.set_xlabel("training seconds")
    left.set_ylabel("token F")
    for ax in (left, right):
        ax.grid(True, alpha=0.3)
        ax.xaxis.set_minor_formatter(matplotlib.ticker.NullFormatter())
    right.legend(loc="lower right", fontsize="small")
    fig.tight_layout()
    Path(out).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(out, dpi=120)
    print(f"wrote {out}", file=sys.stderr)


def main(argv: Optional[Sequence[str]] = None) -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--data", help="gold-segmented file (br-phono.txt or a SIGHAN gold file)")
    p.add_argument("--dataset", default="auto", choices=["auto", "brent", "pku"])
    p.add_argument("--grammar", default="unigram", choices=["unigram", "colloc"])
    p.add_argument("--grammar-file", help="another grammar instead of the shipped one")
    p.add_argument("--mode", default="online", choices=["mcmc", "vb", "online"])
    p.add_argument("--passes", type=int, default=1, help="online: passes; vb: iterations; mcmc: sweeps")
    p.add_argument("--workers", type=int, default=0, help="E-step threads of vb/online (0: all cores)")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--limit", type=int, default=0, help="use only the first N lines")
    p.add_argument("--heldout-fraction", type=float, default=None,
                   help="held-out share of the lines (default: brent 0.1, pku 0.3)")
    p.add_argument("--eval-every", type=int, default=0, help="online: minibatches between evaluations")
    p.add_argument("--heldout-every", type=int, default=0, help="vb/online: curve points between held-out "
                                                                 "likelihoods (default: about 5 in all)")
    p.add_argument("--batch-size", type=int)
    p.add_argument("--tau", type=float)
    p.add_argument("--kappa", type=float)
    p.add_argument("--refine-every", type=int)
    p.add_argument("--truncation", help="K per adapted nonterminal, e.g. Word=1500,Colloc=3000")
    p.add_argument("--label", help="legend label of this run")
    p.add_argument("--json", help="output JSON")
    p.add_argument("--plot", help="PNG of F against inside calls and seconds")
    p.add_argument("--compare", nargs="+", default=[], help="more JSON files to draw in --plot")
    args = p.parse_args(argv)
    if not args.data and not (args.plot and args.compare):
        p.error("--data is required (or give only --plot and --compare to draw existing results)")
    if args.data and not args.json:
        p.error("--json is required with --data")

    runs = []
    if args.data:
        out = run(args)
        Path(args.json).parent.mkdir(parents=True, exist_ok=True)
        Path(args.json).write_text(json.dumps(out, indent=2))
        print(json.dumps({k: out[k] for k in ("label",) + KEYS}))
        runs.append(out)
    runs += [json.loads(Path(f).read_text()) for f in args.compare]
    if args.plot:
        plot(args.plot, runs)


if __name__ == "__main__":
    main()
