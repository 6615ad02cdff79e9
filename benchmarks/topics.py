"""Topic coherence, held-out likelihood, time and memory: spacy-ag's InfVocLDA against gensim and tomotopy (not a test).

    python benchmarks/topics.py --data ../shared/data/topics/de-news/doc.dat \
        --topics 5 --passes 5 --seed 1 --json out/topics-k5.json --plot out/topics-k5.png
    python benchmarks/topics.py ... --systems gensim,tomotopy --limit 2000
    python benchmarks/topics.py ... --systems spacy_ag --stream-holdout 50

The corpus has one document per line (tokens separated by spaces, as
de-news' ``doc.dat``); ``--limit N`` keeps the first N documents. A seeded
random ``--heldout-fraction`` of them (default 0.1,
``spacy_ag.topics.coherence.split_heldout``) is held out; every system trains
on the same remaining documents with the same number of topics and passes,
visiting them in the same seeded order in each pass (the order of pass ``p``
is a permutation drawn from ``(seed, p)``).

Systems (each runs in a subprocess of its own, ``--only SYSTEM``, so that
``peak_rss_mb``, the peak resident memory of that process read from
``getrusage``, is not mixed with the others'):

* ``spacy_ag``: ``spacy_ag.topics.TopicModel`` (online variational
  InfVocLDA, unbounded vocabulary); one pass = one ``partial_fit`` over the
  training documents. Numba compilation is not timed: a warm-up model on a
  few documents runs first (``warmup_seconds``).
* ``gensim``: ``gensim.models.LdaModel``, online variational Bayes (Hoffman
  et al. 2010) with the same minibatch size and learning-rate schedule as
  spacy-ag (``chunksize`` = batch size, ``offset`` = tau, ``decay`` =
  kappa, ``update_every=1``) and ``alpha`` = spacy-ag's alpha; one pass =
  one ``update()`` over the training documents. Vocabulary: every training
  word (no frequency filtering, like the other two systems).
* ``tomotopy``: ``tomotopy.LDAModel`` (collapsed Gibbs sampling); one pass =
  ``--tomotopy-iterations`` (default 1) Gibbs sweeps over the training
  corpus, ``train(1)``; its alpha optimisation runs at tomotopy's default
  interval.

Measured per system, after every pass (``curve``) and at the end (top-level
keys, the last pass):

* ``pmi``, ``npmi``: coherence of every topic's top ``--top`` (10) words
  (docs/algorithms.md 5.4, ``spacy_ag.topics.coherence``: sliding windows of 10
  tokens, add-one smoothed pair counts), computed by the same function for
  all systems with the held-out documents as reference corpus (recorded in
  ``settings.coherence``).
* ``seconds``: wall seconds of training in that pass only (no evaluation, no
  corpus conversion: ``setup_seconds`` has that); ``seconds_per_pass`` is
  their mean.
* ``heldout``: held-out log likelihood per token where the system defines
  one; the definitions differ (spacy-ag: fitted document proportions with the
  topics fixed, log sum_i E[theta_i] P_i(w); gensim: the per-word variational
  bound of ``log_perplexity``; tomotopy: the log likelihood ``infer()``
  returns after Gibbs sampling of the held-out documents), and gensim and
  tomotopy skip held-out words missing from the training vocabulary while
  spacy-ag scores them, so the values are **not comparable across systems**.
* ``peak_rss_mb`` (and ``rss_after_load_mb``: the same process after loading
  the corpus and importing the system, before training).

``--stream-holdout N`` (spacy-ag only: gensim and tomotopy fix their
vocabulary before training, so a word first seen later cannot enter a
topic): N words are drawn (seeded) among the ``--stream-band`` (2000) most
frequent training words, their tokens are removed from the first half of the
training documents (in corpus order), and a fresh model streams the first
half and then the second half (two ``partial_fit`` calls). Reported: how many
of the N words are among some topic's top 50 at the end, and the same count
for N control words drawn from the same band that were not held out.

``--plot OUT.png`` draws PMI and NPMI against passes, one line per system
(Figure 3 of Zhai, Boyd-Graber & Cohen 2014); matplotlib, gensim and
tomotopy are benchmark-only packages, imported only when needed.
"""
from __future__ import annotations

import argparse
import json
import os
import platform
import random
import resource
import subprocess
import sys
import tempfile
import time
from collections import Counter
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from spacy_ag.topics.coherence import DEFINITION, coherence, read_documents, split_heldout  # noqa: E402

SYSTEMS = ("spacy_ag", "gensim", "tomotopy")
STREAM = "spacy_ag_stream"
PIP_NAMES = {"gensim": "gensim", "tomotopy": "tomotopy", "matplotlib": "matplotlib"}
HELDOUT_DEFINITIONS = {
    "spacy_ag": "TopicModel.heldout_loglik: sum over held-out tokens of log sum_i E[theta_i] P_i(w) with each "
                "document's proportions fitted with the topics fixed, divided by the number of scored tokens "
                "(every token whose characters are known; unseen words are scored through the base)",
    "gensim": "LdaModel.log_perplexity(heldout, total_docs=number of training documents): per-word variational "
              "lower bound (ELBO / tokens) of the held-out documents, the corpus-level terms scaled as for a "
              "training-size corpus (per_word_total_docs_heldout: gensim's default, all of them charged to the "
              "held-out documents); held-out words missing from the training dictionary are dropped",
    "tomotopy": "LDAModel.infer(heldout docs, iterations=--tomotopy-infer-iterations): sum of the per-document log "
                "likelihoods it returns, divided by the number of in-vocabulary held-out tokens (words missing "
                "from the training vocabulary are dropped)",
}
NOT_COMPARABLE = ("held-out figures use different definitions and token sets per system (see definition); "
                  "compare them within a system (across passes), not across systems")


class Missing(Exception):
    """A benchmark-only package is not installed."""


def log(msg: str) -> None:
    print(msg, file=sys.stderr, flush=True)


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def need(module: str):
    try:
        return __import__(module)
    except ImportError:
        raise Missing(f"{module} is not installed: pip install {PIP_NAMES.get(module, module)} "
                      f"(benchmark-only, not a dependency of spacy-ag)") from None


# ---------------------------------------------------------------------------
# data


def load(args) -> Dict:
    docs = read_documents(args.data, args.limit)
    train, heldout = split_heldout(docs, args.heldout_fraction, args.seed)
    return {"docs": docs, "train": train, "heldout": heldout}


def pass_order(n: int, seed: int, p: int) -> List[int]:
    order = list(range(n))
    random.Random(f"{seed}-{p}").shuffle(order)
    return order


def reference_description(args, data) -> str:
    toks = sum(len(d) for d in data["heldout"])
    return (f"held-out documents of {args.data}: {len(data['heldout'])} documents, {toks} tokens "
            f"(split_heldout fraction {args.heldout_fraction}, seed {args.seed})")


# ---------------------------------------------------------------------------
# the three systems: each returns (train_pass(p) -> None, topics(n) -> lists, heldout() -> float | None, info)


def setup_spacy_ag(args, data) -> Dict:
    from spacy_ag.topics import TopicModel
    settings = online_settings(args)
    # warm-up: compile (or load the cached) numba kernels outside the timed passes
    t0 = time.perf_counter()
    warm = TopicModel(n_topics=args.topics, alpha=args.alpha, online=settings, inference="online", word_adapted=False)
    warm.partial_fit(data["train"][:2 * settings.batch_size], seed=args.seed)
    warm.topics(args.top)
    warm.heldout_loglik(data["heldout"][:5])
    warmup = time.perf_counter() - t0
    del warm
    t0 = time.perf_counter()
    tm = TopicModel(n_topics=args.topics, alpha=args.alpha, online=settings, inference="online", word_adapted=False)
    train = data["train"]
    # the alphabet, and the expected number of tokens for b = "auto"
    tm.prepare(sorted({c for d in data["docs"] for t in d for c in t}), sum(len(d) for d in train))

    def train_pass(p: int) -> None:
        order = pass_order(len(train), args.seed, p)
        tm.partial_fit((train[i] for i in order), seed=args.seed + p, corpus_size=len(train))

    def heldout() -> Dict:
        h = tm.heldout_loglik(data["heldout"])
        return {"per_word": h["per_word"], "loglik": h["loglik"], "tokens": h["tokens"],
                "skipped_tokens": h.get("skipped_tokens")}

    def final() -> Dict:
        out = {"dropped_tokens": tm.dropped_tokens}
        try:
            out["vocabulary_size"] = tm.vocabulary_size()
        except Exception as exc:  # diagnostics only
            out["vocabulary_size"] = f"unavailable: {exc}"
        return out

    return {"train_pass": train_pass, "topics": tm.topics, "heldout": heldout, "final": final,
            "setup_seconds": time.perf_counter() - t0, "warmup_seconds": warmup,
            "config": {"model": "spacy_ag.topics.TopicModel (online variational InfVocLDA)",
                       "alpha": args.alpha, "online": settings.to_dict(),
                       "one_pass": "one partial_fit over the training documents in the pass order, "
                                   "corpus_size = number of training documents",
                       "topic_ranking": "TopicModel.top_words: expected stick-breaking weight E_q[pi]"}}


def online_settings(args):
    from spacy_ag.runs.online_learner import OnlineSettings
    from spacy_ag.topics import default_topic_settings
    base = default_topic_settings().to_dict()
    for key in ("batch_size", "tau", "kappa", "refine_every", "default_truncation"):
        value = getattr(args, key)
        if value is not None:
            base[key] = value
    base["workers"] = args.workers
    return OnlineSettings(**base)


def resolved_schedule(args) -> Dict:
    """The minibatch size and learning-rate schedule shared by spacy-ag and gensim."""
    s = online_settings(args)
    return {"batch_size": s.batch_size, "tau": s.tau, "kappa": s.kappa}


def setup_gensim(args, data) -> Dict:
    need("gensim")
    from gensim.corpora import Dictionary
    from gensim.models import LdaModel
    sched = resolved_schedule(args)
    t0 = time.perf_counter()
    train = data["train"]
    dictionary = Dictionary(train)
    bow = [dictionary.doc2bow(d) for d in train]
    held_bow = [dictionary.doc2bow(d) for d in data["heldout"]]
    chunksize = args.gensim_chunksize or sched["batch_size"]
    lda = LdaModel(id2word=dictionary, num_topics=args.topics, chunksize=chunksize, passes=1, update_every=1,
                   alpha=args.alpha, eta=None, decay=sched["kappa"], offset=sched["tau"], eval_every=None,
                   iterations=args.gensim_iterations, gamma_threshold=0.001, random_state=args.seed)
    setup = time.perf_counter() - t0

    def train_pass(p: int) -> None:
        order = pass_order(len(train), args.seed, p)
        lda.update([bow[i] for i in order])

    def topics(n: int) -> List[List[str]]:
        return [[w for w, _ in lda.show_topic(k, topn=n)] for k in range(args.topics)]

    def heldout() -> Dict:
        tokens = sum(c for d in held_bow for _, c in d)
        # total_docs: the corpus-level terms of the bound are spread as over the training corpus (as gensim does
        # for its own training log); without it they are charged in full to the few held-out documents
        return {"per_word": float(lda.log_perplexity(held_bow, total_docs=len(train))),
                "per_word_total_docs_heldout": float(lda.log_perplexity(held_bow)), "tokens": tokens,
                "skipped_tokens": sum(len(d) for d in data["heldout"]) - tokens}

    import gensim
    return {"train_pass": train_pass, "topics": topics, "heldout": heldout, "final": lambda: {},
            "setup_seconds": setup, "warmup_seconds": 0.0,
            "config": {"model": "gensim.models.LdaModel (online variational Bayes)", "version": gensim.__version__,
                       "num_topics": args.topics, "chunksize": chunksize, "update_every": 1,
                       "offset (tau)": sched["tau"], "decay (kappa)": sched["kappa"], "alpha": args.alpha,
                       "eta": "gensim default (symmetric 1/K)", "iterations": args.gensim_iterations,
                       "gamma_threshold": 0.001, "vocabulary": len(dictionary),
                       "one_pass": "one LdaModel.update over the training documents in the pass order "
                                   "(passes=1; the learning rate keeps decaying across calls)",
                       "topic_ranking": "show_topic: normalised lambda"}}


def setup_tomotopy(args, data) -> Dict:
    tp = need("tomotopy")
    t0 = time.perf_counter()
    mdl = tp.LDAModel(k=args.topics, alpha=args.alpha, eta=args.tomotopy_eta, seed=args.seed)
    for d in data["train"]:
        mdl.add_doc(d)
    setup = time.perf_counter() - t0

    def train_pass(p: int) -> None:
        mdl.train(args.tomotopy_iterations, workers=args.tomotopy_workers)

    def topics(n: int) -> List[List[str]]:
        return [[w for w, _ in mdl.get_topic_words(k, top_n=n)] for k in range(args.topics)]

    def heldout() -> Dict:
        vocab = set(mdl.used_vocabs)
        docs = [mdl.make_doc([w for w in d if w in vocab]) for d in data["heldout"]]
        _, ll = mdl.infer(docs, iterations=args.tomotopy_infer_iterations, workers=args.tomotopy_workers)
        tokens = sum(1 for d in data["heldout"] for w in d if w in vocab)
        return {"per_word": float(sum(ll)) / tokens if tokens else None, "loglik": float(sum(ll)),
                "tokens": tokens, "skipped_tokens": sum(len(d) for d in data["heldout"]) - tokens}

    return {"train_pass": train_pass, "topics": topics, "heldout": heldout,
            "final": lambda: {"alpha": [float(a) for a in mdl.alpha]},
            "setup_seconds": setup, "warmup_seconds": 0.0,
            "config": {"model": "tomotopy.LDAModel (collapsed Gibbs sampling)", "version": tp.__version__,
                       "k": args.topics, "alpha": args.alpha, "eta": args.tomotopy_eta, "seed": args.seed,
                       "workers": args.tomotopy_workers, "iterations_per_pass": args.tomotopy_iterations,
                       "infer_iterations": args.tomotopy_infer_iterations,
                       "one_pass": f"train({args.tomotopy_iterations}): Gibbs sweep(s) over the training corpus "
                                   "(the first call also initialises the sampler)",
                       "topic_ranking": "get_topic_words: topic-word distribution"}}


def coherence_variants(topics, data, args) -> Dict:
    """Diagnostics next to the main score (which they do not replace).

    ``zero_missing``: pairs with a word absent from the held-out reference
    scored 0 instead of skipped; ``full_corpus``: all documents (training and
    held-out) as reference. With the add-one smoothing of 5.4 a pair of rare
    words that never co-occur gets PMI ~ log(#windows) - log count(w) -
    log count(w'), so topics of rare words score high on a small reference
    corpus; these two variants show how much a system's score owes to that.
    """
    zero = coherence(topics, data["heldout"], window=args.window, missing="zero")
    full = coherence(topics, data["docs"], window=args.window)
    return {"zero_missing": {"pmi": zero["pmi"], "npmi": zero["npmi"]},
            "full_corpus": {"pmi": full["pmi"], "npmi": full["npmi"], "skipped_pairs": full["skipped_pairs"]}}


SETUP: Dict[str, Callable] = {"spacy_ag": setup_spacy_ag, "gensim": setup_gensim, "tomotopy": setup_tomotopy}


def run_system(name: str, args) -> Dict:
    data = load(args)
    ref = reference_description(args, data)
    sysd = SETUP[name](args, data)
    out = {"system": name, "config": sysd["config"], "setup_seconds": sysd["setup_seconds"],
           "warmup_seconds": sysd["warmup_seconds"], "rss_after_load_mb": peak_rss_mb(), "curve": []}
    total = 0.0
    for p in range(args.passes):
        t0 = time.perf_counter()
        sysd["train_pass"](p)
        dt = time.perf_counter() - t0
        total += dt
        t1 = time.perf_counter()
        topics = sysd["topics"](args.top)
        coh = coherence(topics, data["heldout"], window=args.window, reference=ref)
        held = sysd["heldout"]()
        point = {"pass": p + 1, "seconds": dt, "cum_seconds": total, "pmi": coh["pmi"], "npmi": coh["npmi"],
                 "heldout_per_word": held.get("per_word"), "topics": topics,
                 "skipped_pairs": coh["skipped_pairs"], "missing_words": len(coh["missing_words"]),
                 "variants": coherence_variants(topics, data, args)}
        point["eval_seconds"] = time.perf_counter() - t1
        out["curve"].append(point)
        log(f"{name} pass {p + 1}: {dt:.1f}s  PMI {coh['pmi']:.4f}  NPMI {coh['npmi']:.4f}  "
            f"held-out/word {held.get('per_word')}")
    last = out["curve"][-1]
    out.update(pmi=last["pmi"], npmi=last["npmi"], seconds_per_pass=total / args.passes,
               seconds_total=total, topics=last["topics"], coherence=coh,
               heldout={"value": held.get("per_word"), **held, "definition": HELDOUT_DEFINITIONS[name],
                        "comparable_across_systems": False})
    out.update(sysd["final"]())
    out["peak_rss_mb"] = peak_rss_mb()
    return out


# ---------------------------------------------------------------------------
# words held out of the first half of a stream (spacy-ag only)


def run_stream(args) -> Dict:
    from spacy_ag.topics import TopicModel
    data = load(args)
    train = data["train"]
    half = len(train) // 2
    first, second = train[:half], train[half:]
    counts = Counter(t for d in train for t in d)
    in_second = {t for d in second for t in d}
    band = [w for w, _ in sorted(counts.items(), key=lambda kv: (-kv[1], kv[0]))[:args.stream_band]]
    candidates = [w for w in band if w in in_second]
    rng = random.Random(args.seed)
    n = min(args.stream_holdout, len(candidates) // 2)
    picked = rng.sample(candidates, 2 * n)
    held, control = sorted(picked[:n]), sorted(picked[n:])
    held_set = set(held)
    first_stripped = [[t for t in d if t not in held_set] for d in first]
    removed = sum(len(a) - len(b) for a, b in zip(first, first_stripped))
    first_stripped = [d for d in first_stripped if d]
    settings = online_settings(args)
    tm = TopicModel(n_topics=args.topics, alpha=args.alpha, online=settings, inference="online", word_adapted=False)
    tm.prepare(sorted({c for d in data["docs"] for t in d for c in t}),
               sum(len(d) for d in first_stripped) + sum(len(d) for d in second))
    size = len(first_stripped) + len(second)
    t0 = time.perf_counter()
    tm.partial_fit(first_stripped, seed=args.seed, corpus_size=size)
    t1 = time.perf_counter()
    tm.partial_fit(second, seed=args.seed + 1, corpus_size=size)
    t2 = time.perf_counter()
    top = tm.topics(args.stream_top)
    rank = {}
    for k, words in enumerate(top):
        for r, w in enumerate(words):
            rank.setdefault(w, []).append({"topic": k, "rank": r + 1})
    band_rank = {w: i + 1 for i, w in enumerate(band)}

    def describe(words):
        return [{"word": w, "band_rank": band_rank[w], "count_second_half": sum(d.count(w) for d in second),
                 "in_top": rank.get(w, [])} for w in words]

    coh = coherence(tm.topics(args.top), data["heldout"], window=args.window,
                    reference=reference_description(args, data))
    return {
        "n_heldout_words": n, "reached_top": sum(1 for w in held if w in rank),
        "control_reached_top": sum(1 for w in control if w in rank),
        "top_n": args.stream_top, "slots": args.topics * args.stream_top,
        "band": args.stream_band, "heldout_words": describe(held), "control_words": describe(control),
        "tokens_removed_from_first_half": removed, "first_half_docs": len(first_stripped),
        "second_half_docs": len(second), "corpus_size": size,
        "seconds_first_half": t1 - t0, "seconds_second_half": t2 - t1,
        "pmi": coh["pmi"], "npmi": coh["npmi"], "peak_rss_mb": peak_rss_mb(),
        "definition": (f"{n} words drawn (seed {args.seed}) among the {args.stream_band} most frequent training "
                       f"words that occur in the second half; their tokens removed from the first half of the "
                       f"training documents (corpus order); a fresh model streams the first half then the second "
                       f"half (two partial_fit calls); reached_top = how many are among some topic's top "
                       f"{args.stream_top} at the end; control = {n} other words of the same band, not held out"),
    }


# ---------------------------------------------------------------------------
# driver


def child_argv(args, only: str, out: str, script: str = __file__) -> List[str]:
    """`script --only SYSTEM --json OUT` with every other option of this run (a flag when True)."""
    argv = [sys.executable, str(Path(script).resolve()), "--only", only, "--json", out]
    for key, value in vars(args).items():
        if key in ("only", "json", "plot", "systems") or value is None or value is False:
            continue
        flag = f"--{key.replace('_', '-')}"
        argv += [flag] if value is True else [flag, str(value)]
    return argv


def run_child(args, only: str, script: str = __file__, env: Optional[Dict[str, str]] = None) -> Dict:
    """Run one system in a process of its own (its peak memory is its own) and read its JSON."""
    with tempfile.TemporaryDirectory() as tmp:
        out = os.path.join(tmp, f"{only}.json")
        rc = subprocess.call(child_argv(args, only, out, script), env=env)
        if os.path.exists(out):
            with open(out, encoding="utf8") as f:
                return json.load(f)
        return {"error": f"{only} run failed with exit code {rc} (see the messages above)"}


def versions() -> Dict:
    out = {"python": platform.python_version(), "cpu_count": os.cpu_count(), "platform": platform.platform()}
    for mod in ("numpy", "numba", "gensim", "tomotopy"):
        try:
            out[mod] = __import__(mod).__version__
        except Exception:
            out[mod] = None
    return out


def settings_block(args, data) -> Dict:
    ref = reference_description(args, data)
    return {
        "data": args.data, "limit": args.limit, "documents": len(data["docs"]),
        "train_documents": len(data["train"]), "train_tokens": sum(len(d) for d in data["train"]),
        "heldout_documents": len(data["heldout"]), "heldout_tokens": sum(len(d) for d in data["heldout"]),
        "heldout_fraction": args.heldout_fraction, "topics": args.topics, "passes": args.passes, "seed": args.seed,
        "workers": {"spacy_ag": args.workers, "tomotopy": args.tomotopy_workers,
                    "gensim": "LdaModel (single process; numpy's BLAS threads)"},
        "pass_order": "pass p visits the training documents in "
                                              "random.Random(f'{seed}-{p}').shuffle order (spacy_ag, gensim)",
        "coherence": {"reference": ref, "top_words": args.top, "window": args.window, "definition": DEFINITION,
                      "missing": "skip", "function": "spacy_ag.topics.coherence.coherence (the same for every system)",
                      "variants": "curve[].variants: zero_missing (absent-word pairs scored 0) and full_corpus "
                                  "(all documents as reference), diagnostics only"},
        "heldout_likelihood": {**HELDOUT_DEFINITIONS, "note": NOT_COMPARABLE},
        "seconds": "wall seconds of training only, per pass; evaluation and corpus conversion excluded",
        "peak_rss_mb": "getrusage ru_maxrss of the process that ran only that system (corpus loaded, "
                       "evaluation included)",
        "versions": versions(),
    }


def pyplot():
    """matplotlib.pyplot on the file-only Agg backend, or None (with a message) when it is missing."""
    try:
        need("matplotlib")
    except Missing as exc:
        log(f"no plot: {exc}")
        return None
    import matplotlib
    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    return plt


def plot(results: Dict, path: str) -> None:
    plt = pyplot()
    if plt is None:
        return
    from matplotlib.ticker import MaxNLocator
    fig, axes = plt.subplots(1, 2, figsize=(10, 4))
    for ax, key, label in ((axes[0], "pmi", "PMI"), (axes[1], "npmi", "NPMI")):
        for name in SYSTEMS:
            curve = results.get(name, {}).get("curve")
            if curve:
                ax.plot([c["pass"] for c in curve], [c[key] for c in curve], marker="o", label=name)
        ax.set_xlabel("pass")
        ax.xaxis.set_major_locator(MaxNLocator(integer=True))
        ax.set_ylabel(f"coherence ({label}, top {results['settings']['coherence']['top_words']})")
        ax.grid(alpha=0.3)
        ax.legend()
    s = results["settings"]
    fig.suptitle(f"{Path(s['data']).name}: {s['topics']} topics, reference {s['heldout_documents']} held-out docs")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    log(f"wrote {path}")


def parse_args(argv: Optional[Sequence[str]] = None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", required=True, help="one document per line, whitespace-separated tokens")
    ap.add_argument("--topics", type=int, default=5)
    ap.add_argument("--passes", type=int, default=1)
    ap.add_argument("--seed", type=int, default=0)
    ap.add_argument("--json", required=True)
    ap.add_argument("--plot", default=None)
    ap.add_argument("--heldout-fraction", type=float, default=0.1)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--limit", type=int, default=0, help="keep the first N documents (0: all)")
    ap.add_argument("--stream-holdout", type=int, default=0, help="N words held out of the first half (spacy_ag)")
    ap.add_argument("--stream-band", type=int, default=2000)
    ap.add_argument("--stream-top", type=int, default=50)
    ap.add_argument("--top", type=int, default=10, help="top words per topic for coherence")
    ap.add_argument("--window", type=int, default=10)
    ap.add_argument("--alpha", type=float, default=0.1, help="document-topic Dirichlet (all systems)")
    ap.add_argument("--workers", type=int, default=0, help="spacy_ag E-step threads (0: all cores)")
    ap.add_argument("--batch-size", type=int, default=None, help="spacy_ag minibatch (and gensim chunksize)")
    ap.add_argument("--tau", type=float, default=None)
    ap.add_argument("--kappa", type=float, default=None)
    ap.add_argument("--refine-every", type=int, default=None)
    ap.add_argument("--default-truncation", type=int, default=None)
    ap.add_argument("--gensim-chunksize", type=int, default=0, help="0: the spacy_ag batch size")
    ap.add_argument("--gensim-iterations", type=int, default=50)
    ap.add_argument("--tomotopy-iterations", type=int, default=1, help="Gibbs sweeps per pass")
    ap.add_argument("--tomotopy-infer-iterations", type=int, default=100)
    ap.add_argument("--tomotopy-workers", type=int, default=1,
                    help="tomotopy threads (1: reproducible with the seed; 0: all cores)")
    ap.add_argument("--tomotopy-eta", type=float, default=0.01)
    ap.add_argument("--only", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def write_json(obj: Dict, path: str) -> None:
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    with open(path, "w", encoding="utf8") as f:
        json.dump(obj, f, indent=1)
        f.write("\n")


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.only:
        try:
            result = run_stream(args) if args.only == STREAM else run_system(args.only, args)
        except Missing as exc:
            log(str(exc))
            result = {"skipped": str(exc)}
        write_json(result, args.json)
        return 0
    systems = [s.strip() for s in args.systems.split(",") if s.strip()]
    unknown = [s for s in systems if s not in SYSTEMS]
    if unknown:
        raise SystemExit(f"unknown systems {unknown}: choose from {', '.join(SYSTEMS)}")
    data = load(args)
    results: Dict = {}
    for name in systems:
        log(f"--- {name}")
        results[name] = run_child(args, name)
    if args.stream_holdout:
        fixed = "not applicable: fixed vocabulary (built from the training documents before training)"
        for name in ("gensim", "tomotopy"):
            if name in results:
                results[name]["stream_holdout"] = fixed
        log("--- stream holdout (spacy_ag)")
        results.setdefault("spacy_ag", {})["stream_holdout"] = run_child(args, STREAM)
    results["settings"] = settings_block(args, data)
    write_json(results, args.json)
    log(f"wrote {args.json}")
    for name in systems:
        r = results[name]
        if "pmi" in r:
            log(f"{name}: PMI {r['pmi']:.4f}  NPMI {r['npmi']:.4f}  {r['seconds_per_pass']:.1f} s/pass  "
                f"{r['peak_rss_mb']:.0f} MB")
        else:
            log(f"{name}: {r.get('skipped') or r.get('error')}")
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
