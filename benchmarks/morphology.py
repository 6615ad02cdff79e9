"""Benchmark of unsupervised morphology: spacy-ag against Morfessor 2.0 Baseline (not a test).

    pip install morfessor        # the benchmark environment only; not a spacy-ag dependency
    python benchmarks/morphology.py \
        --gold ../shared/data/morpho/morphochallenge2010/goldstd_trainset.segmentation.eng \
        --extra-words ../shared/data/brent/br-text.txt \
        --json /tmp/bench/morphology.json

What it does (issue 6, item 4):

1. The word list: the words of the gold file (first column only; the
   analyses stay hidden) followed by the words of ``--extra-words`` (a word
   list or running text), as *types* (each distinct word once; ``--units
   tokens`` keeps repeats), read with `spacy_ag.morphology.words.read_words`.
   Both systems get exactly this list, in this order, each word with count 1
   (tokens: once per occurrence).
2. spacy-ag: the morphology grammar ``--grammar`` (`spacy_ag.morphology.grammars`,
   with ``--classes``, ``--a``, ``--b``) fitted by MCMC on the characters of
   the words (``--iterations``, ``--chains``, ``--seed``; hyperparameters
   sampled only with ``--sample-hyper``). The gold words are training
   words, so they are decoded as the papers decode their training data: by
   maximum marginal over the samples kept after burn-in (docs/algorithms.md
   3.15, every 10th iteration of the second half), at the set of the
   grammar's morph nonterminals (``Morph``; ``PrefixMorph,Stem,SuffixMorph``
   of PrStSu+SM; class-indexed copies included). The most probable parse
   under the final state (`spacy_ag.morphology.analyse_words`) is reported
   too, as ``viterbi_boundary_*``. Numba compiles its kernels in a warm-up
   fit on ten words first, so ``seconds`` (fit plus analysis) excludes
   compilation; the warm-up is ``compile_seconds``.
3. Morfessor 2.0 Baseline with its defaults (``train_batch``: recursive
   splitting, corpus weight 1), trained on the same list; the gold words
   are segmented with ``viterbi_segment``. ``seconds`` is training plus
   segmentation. Its word order is shuffled with Python's ``random``,
   seeded with ``--seed``.
4. Both are scored with `spacy_ag.morphology.gold.morph_boundary_scores`:
   Morpho-Challenge-style boundary precision, recall and F (word-internal
   boundaries, micro-averaged, each word against its best-matching gold
   alternative).
5. The analyses of ``--show`` words (20 frequent English verb forms by
   default; those not in the word list are skipped) by both systems.

The JSON has ``spacy_ag`` and ``morfessor`` (``boundary_p``, ``boundary_r``,
``boundary_f``, ``seconds`` and the counts), ``data`` (the files and the
number of words), ``settings``, ``analyses`` and the machine's load average.
"""
from __future__ import annotations

import argparse
import json
import os
import sys
import time
from pathlib import Path
from typing import Dict, List, Sequence

VERBS = ("walking jumped talked played wanted looked needed going goes wants looking playing sitting eating "
         "coming gets likes liked trying finished").split()


def generated_words(gold: Dict[str, List[List[str]]], n: int, seed: int) -> List[str]:
    """n distinct new words: the first morph of one gold analysis (a stem, in suffixing languages)
    followed by the remaining morphs of another. Both systems get them, so neither learns from
    a word list the other lacks; their analyses are never scored."""
    import random

    rng = random.Random(seed)
    analyses = [a for alternatives in gold.values() for a in alternatives[:1] if len(a) > 1]
    stems = [a[0] for a in analyses]
    endings = ["".join(a[1:]) for a in analyses]
    out: Dict[str, None] = {}
    for _ in range(50 * n):
        if len(out) >= n:
            break
        word = rng.choice(stems) + rng.choice(endings)
        if word not in gold:
            out.setdefault(word, None)
    return list(out)


def train_spacy_ag(words: Sequence[str], args) -> Dict:
    from spacy_ag.runs.mcmc_chain import SamplerSettings
    from spacy_ag.grammar import read_grammar
    from spacy_ag.model import AdaptorGrammar
    from spacy_ag.morphology import MORPH_LEVELS, morphology_grammar
    from spacy_ag.morphology.analysis import label_matches

    text = morphology_grammar(args.grammar, classes=args.classes or None, a=args.a, b=args.b)
    sampler = SamplerSettings(sample_hyper=args.sample_hyper)
    levels = MORPH_LEVELS[args.grammar]
    grammar = read_grammar(text, source=f"<{args.grammar}>")
    # every morph nonterminal, class-indexed ones included (Stem_3): the words' morphs are their yields
    category = ",".join(nt for nt in grammar.nonterminals if label_matches(nt, levels))

    def model():
        return AdaptorGrammar(grammar, segment_category=category, sampler=sampler)

    t0 = time.perf_counter()
    model().fit(list(words[:10]), iterations=2, seed=args.seed)  # compile (or load) the kernels
    compile_seconds = time.perf_counter() - t0
    ag = model()
    t0 = time.perf_counter()
    ag.fit(list(words), iterations=args.iterations, chains=args.chains, seed=args.seed)
    fit_seconds = time.perf_counter() - t0
    marginal = dict(zip(words, ag.training_segmentation()))
    return {"model": ag, "levels": levels, "fit_seconds": fit_seconds, "marginal": marginal,
            "compile_seconds": compile_seconds, "grammar_text": text}


def analyse_spacy_ag(trained: Dict, words: Sequence[str]) -> Dict[str, List[str]]:
    """Most probable parse of each word under the final state."""
    from spacy_ag.morphology import analyse_words

    return {w: morphs for w, (morphs, _) in zip(words, analyse_words(trained["model"], words, trained["levels"]))}


def run_morfessor(train_words: Sequence[str], words: Sequence[str], seed: int) -> Dict:
    import random

    random.seed(seed)  # Morfessor shuffles the words with Python's global random generator
    try:
        import morfessor
    except ImportError:
        sys.exit("benchmarks/morphology.py: Morfessor is not installed; run `pip install morfessor` in the "
                 "benchmark environment (it is not a spacy-ag dependency)")
    t0 = time.perf_counter()
    model = morfessor.BaselineModel()
    model.load_data([(1, w) for w in train_words])
    model.train_batch()
    train_seconds = time.perf_counter() - t0
    analyses = {w: list(model.viterbi_segment(w)[0]) for w in dict.fromkeys(words)}
    return {"analyses": analyses, "train_seconds": train_seconds,
            "seconds": time.perf_counter() - t0, "version": morfessor.__version__}


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--gold", required=True, type=Path, help="Morpho Challenge gold segmentation file")
    ap.add_argument("--extra-words", type=Path, action="append", default=[],
                    help="More training words: a word list or running text (repeatable)")
    ap.add_argument("--json", required=True, type=Path, help="Write the results here")
    ap.add_argument("--generated-words", type=int, default=0,
                    help="add this many words made from the gold analyses: the first morph of one analysis "
                         "followed by the other morphs of another (for languages without a word list here)")
    ap.add_argument("--units", choices=("types", "tokens"), default="types")
    ap.add_argument("--grammar", default="submorphs",
                    help="stem-suffix, prefix-stem-suffix, submorphs or prefix-stem-suffix-submorphs")
    ap.add_argument("--classes", type=int, default=0, help="hidden classes (0: none)")
    ap.add_argument("--a", type=float, default=0.8, help="PY discount of the adapted nonterminals")
    ap.add_argument("--b", type=float, default=10.0, help="PY concentration of the adapted nonterminals")
    ap.add_argument("--sample-hyper", action="store_true", help="slice-sample a and b during training")
    ap.add_argument("--iterations", type=int, default=300)
    ap.add_argument("--chains", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--show", nargs="*", default=VERBS, help="words whose analyses are reported")
    ap.add_argument("--skip-morfessor", action="store_true")
    args = ap.parse_args(argv)

    from spacy_ag.morphology import morph_boundary_scores, read_gold_segmentation, read_words

    gold = read_gold_segmentation(args.gold)
    words = read_words([args.gold, *args.extra_words], units=args.units)
    gold_words = list(gold)
    if args.generated_words:
        words = list(dict.fromkeys(words + generated_words(gold, args.generated_words, args.seed)))
    show = [w for w in args.show if w in set(words)]

    trained = train_spacy_ag(words, args)
    t0 = time.perf_counter()
    viterbi = analyse_spacy_ag(trained, list(dict.fromkeys(gold_words + show)))
    ag_seconds = trained["fit_seconds"] + time.perf_counter() - t0
    ag_analyses = trained["marginal"]
    viterbi_scores = morph_boundary_scores(viterbi, gold)
    results: Dict = {
        "spacy_ag": {**morph_boundary_scores(ag_analyses, gold), "seconds": ag_seconds,
                     "decoding": "max-marginal",
                     **{f"viterbi_{k}": viterbi_scores[k] for k in ("boundary_p", "boundary_r", "boundary_f")},
                     "fit_seconds": trained["fit_seconds"], "compile_seconds": trained["compile_seconds"],
                     "grammar": args.grammar, "classes": args.classes, "a": args.a, "b": args.b,
                     "sample_hyper": args.sample_hyper, "iterations": args.iterations, "chains": args.chains,
                     "seed": args.seed,
                     "tables": trained["model"].trace[-1].get("tables") if trained["model"].trace else None},
        "data": {"gold": str(args.gold), "extra_words": [str(p) for p in args.extra_words], "units": args.units,
                 "generated_words": args.generated_words,
                 "n_training_words": len(words), "n_gold_words": len(gold_words)},
        "analyses": {"spacy_ag": {w: "+".join(ag_analyses[w]) for w in show}},
    }
    if not args.skip_morfessor:
        morf = run_morfessor(words, gold_words + show, args.seed)
        results["morfessor"] = {**morph_boundary_scores(morf["analyses"], gold), "seconds": morf["seconds"],
                                "train_seconds": morf["train_seconds"], "version": morf["version"]}
        results["analyses"]["morfessor"] = {w: "+".join(morf["analyses"][w]) for w in show}
    results["load_average"] = os.getloadavg()
    args.json.parent.mkdir(parents=True, exist_ok=True)
    args.json.write_text(json.dumps(results, indent=2) + "\n", encoding="utf8")
    for name in ("spacy_ag", "morfessor"):
        if name in results:
            r = results[name]
            print(f"{name:9}  P {r['boundary_p']:.4f}  R {r['boundary_r']:.4f}  F {r['boundary_f']:.4f}  "
                  f"{r['seconds']:.1f} s")
    return 0


if __name__ == "__main__":
    sys.exit(main())
