"""A fair topic benchmark: spacy-ag's TopicModel, tomotopy and gensim, each run to its own convergence
the way its users run it, all scored by the same code against wall seconds (not a test).

    python benchmarks/topics_fair.py --corpus denews --topics 20 --seed 1 \
        --json out/fair-denews-k20.json --plot out/fair-denews-k20.png
    python benchmarks/topics_fair.py --corpus lee --topics 50 --seed 1 \
        --json out/fair-lee-k50.json --plot out/fair-lee-k50.png
    python benchmarks/topics_fair.py --corpus lee --topics 5 --limit 300 --tomotopy-max-iterations 50 \
        --max-passes 2 --budget-seconds 60 --json /tmp/fair-smoke.json --plot /tmp/fair-smoke.png  # smoke
    python benchmarks/topics_fair.py --corpus PATH ...       # any one-document-per-line file

Why. ``benchmarks/topics.py`` runs the three systems in lockstep (the same number of passes, the
same minibatch schedule for gensim as for spacy-ag, one Gibbs sweep of tomotopy per "pass"): a
controlled comparison of the algorithms, but not how anyone runs tomotopy or gensim, and its
held-out figures use a different definition per system. Here each system keeps the settings its
own documentation uses, trains until its own stopping rule says it has converged, and every
checkpoint is scored by one function for all systems: the same coherence code on each system's top
words and one held-out estimator (document completion) on each system's own inference. Curves are
recorded against training wall seconds, so systems can be compared at convergence and at equal time.

Corpora (``--corpus``; ``--limit N`` keeps the first N documents, for smoke tests):

* ``denews``: ``../shared/data/topics/de-news/doc.dat`` beside the repository (shared/data/README.md:
  one document per line, already lowercased, stemmed and stop-word filtered); tokens are the
  space-separated fields, used as they are.
* ``lee``: gensim's Lee background corpus, ``gensim/test/test_data/lee_background.cor`` inside the
  installed gensim (read from there, never copied), one raw-text document per line. Preprocessing,
  the same tokens for every system: ``gensim.utils.simple_preprocess(line)`` (defaults: deacc=False,
  min_len=2, max_len=15; it lowercases and keeps runs of letters, so numbers and punctuation go),
  then tokens in ``gensim.parsing.preprocessing.STOPWORDS`` (gensim's 337 English stop words) are
  removed; a document left empty is dropped.
* ``PATH``: a one-document-per-line file of space-separated tokens (``read_documents``), used as is.

Split and vocabulary. ``spacy_ag.topics.coherence.split_heldout(docs, --heldout-fraction (0.1),
--seed)`` holds out the same documents for every system; all train on the rest. No frequency
filtering anywhere: gensim's ``Dictionary`` and tomotopy's vocabulary are every word of the training
documents (``filter_extremes`` not called; tomotopy ``min_cf=0, rm_top=0``, its defaults), checked
to be the same set; spacy-ag's vocabulary is unbounded.

Systems (each in a subprocess of its own, ``--only SYSTEM``, so that ``peak_rss_mb``, the
process's peak resident memory from ``getrusage``, is its own). ``--workers`` (default 1) threads for
every system: tomotopy ``workers=``, spacy-ag's E-step ``online.workers``, and the BLAS threads of
the child (OMP/OPENBLAS/MKL_NUM_THREADS; gensim's ``LdaModel`` is otherwise single-process), so
wall seconds compare equal CPU and tomotopy is reproducible with its seed; ``--workers 0`` leaves
each system its all-cores default and the BLAS environment alone.

* ``tomotopy``: ``tomotopy.LDAModel(k=K, seed=--seed)``, everything else its default (collapsed
  Gibbs sampling; alpha 0.1 per topic optimised every 10 iterations, eta 0.01). Trained by
  ``train(--tomotopy-chunk)`` (10 iterations) at a time, up to ``--tomotopy-max-iterations``
  (1000); stops early when ``ll_per_word`` has improved by less than ``--tomotopy-tol`` (0.001 nats)
  over the last ``--tomotopy-window`` (100) iterations. Every chunk records wall seconds,
  iterations and ``ll_per_word`` (``curve``). Inference: ``infer(docs,
  iterations=--tomotopy-infer-iterations (100))``; phi: ``get_topic_word_dist``; top words:
  ``get_topic_words``.
* ``gensim``: ``gensim.models.LdaModel`` with the settings of gensim's own LDA tutorial
  (docs/src/gallery/tutorials/run_lda.py): ``chunksize=2000, alpha='auto', eta='auto',
  iterations=400, eval_every=None`` (no perplexity logging, for speed), ``update_every=1``,
  ``random_state=--seed``, ``passes=--gensim-max-passes`` (50) in one ``update()`` call, the way
  users train, so the learning rate follows gensim's multi-pass schedule. A gensim callback
  (``gensim.models.callbacks``) ends each pass: its time is taken off the clock, and it stops
  training (by raising) once gensim's own held-out measure, the per-word bound
  ``log_perplexity(held-out, total_docs=training documents)``, has improved by less than ``--tol``
  (0.001 nats) over the last ``--patience`` (1) passes. The evaluation restores gensim's random state
  (``inference`` draws from it), so evaluating does not change the training run. Inference:
  ``inference()`` (gamma normalised, E[theta]); phi: ``get_topics()``; top words: ``show_topic``.
* ``spacy_ag``: ``spacy_ag.topics.TopicModel(n_topics=K, inference="online", word_adapted=False)``
  with its default online settings (only ``online.workers`` set by ``--workers``), trained as
  ``TopicModel.fit`` trains online: ``prepare`` with the
  training documents' alphabet and token count, then pass p = one ``partial_fit`` over the
  training documents in ``pass_order(seed, p)``, ``seed=seed + p``, ``corpus_size`` = training
  documents; up to ``--spacy-ag-max-passes`` (20) passes, stopping like gensim when its own
  held-out measure, ``heldout_loglik(held-out)["per_word"]``, improves by less than ``--tol`` over
  the last ``--patience`` passes. Numba compilation is not timed: a warm-up model on a few
  documents runs first (``warmup_seconds``). Inference: ``infer``; phi: ``word_probabilities``;
  top words: ``topics`` (expected stick-breaking weight E_q[pi]).
* ``spacy_ag_gibbs``: the same model trained by collapsed Gibbs sampling with the shared lexicon,
  ``TopicModel(n_topics=K, inference="gibbs", sweeps=S, word_adapted=True)`` (docs/algorithms.md
  3.17); one fit per S in ``--gibbs-sweeps`` (25, 50, 100, 200, 300), each checkpoint's seconds that
  fit's wall time; scored like ``spacy_ag``. Held-out documents are inferred by as many Gibbs sweeps
  as tomotopy's (``local_iterations = --tomotopy-infer-iterations``, half of them burn-in).

The stopping rules of gensim and spacy-ag read the held-out documents that are also scored (as a
user watching held-out perplexity would); tomotopy's reads a training figure. ``--max-passes N``
caps gensim's and spacy-ag's passes at N (smoke tests); ``--budget-seconds S``
stops any system after the chunk or pass in which its training seconds reach S (``stopped``
says which rule ended a run: ``converged``, ``max_iterations``/``max_passes`` or ``budget``).

Measured at checkpoints (``checkpoints``): gensim and spacy-ag after every pass; tomotopy after its
first chunk, every ``--tomotopy-eval-every`` (100) iterations, whenever its training seconds have
grown by ``--eval-growth`` (1.5x) since the last checkpoint (so short times are covered too), and
when it stops. The last checkpoint of every run is the one where it stopped. At each:

* ``seconds``: wall seconds of training only, cumulative (evaluation, corpus conversion
  (``setup_seconds``) and spacy-ag's warm-up excluded); ``iterations`` (tomotopy) or ``passes``.
* ``u_mass``, ``c_npmi``, ``c_v`` of each system's top ``--top`` (10) words per topic, with the FULL
  corpus (training and held-out documents) as reference texts, by
  ``spacy_ag.topics.standard_coherence.topic_coherences`` (gensim's definitions: u_mass over whole
  documents, c_npmi windows of 10, c_v windows of 110; checked against gensim's CoherenceModel in
  tests/unit/test_standard_coherence.py), or with ``--gensim-coherence`` by gensim's ``CoherenceModel``
  itself (``processes=1``; words missing from the dictionary are left out). The same function for
  every system.
* ``heldout_ll_per_token``: document completion, the same estimator for every system. V = the
  training vocabulary (the same for all). For each held-out document, its tokens in corpus order
  are cut at half (first floor(n/2) tokens, then the rest); each half keeps its in-V tokens (the
  out-of-vocabulary ones are counted: ``oov_tokens_observed``, ``oov_tokens_scored_half``). A
  document with no in-V token in either half is skipped (``skipped_documents``). theta_d is the
  system's own inference from the first half's in-V tokens (the same tokens for every system), and
  each in-V token w of the second half scores log sum_k theta_dk phi_k(w), phi_k the system's
  topic-word distribution over V (rows sum to 1). Reported: the sum over the scored tokens divided
  by their number (``heldout_tokens``, the same for every system). spacy-ag's topics put mass on
  words outside V as well (its character base); for this figure its P_k(w) are renormalised over V
  so that all three are distributions over the same words. Extras for spacy-ag only (not
  comparable): ``spacy_ag_unnormalised_ll_per_token`` (the same tokens under its raw P_k(w)),
  ``spacy_ag_all_tokens`` (theta from every spellable first-half token, every spellable second-half
  token scored, OOV ones through the character base) and ``spacy_ag_mass_on_vocabulary`` (mean
  sum_w in V P_k(w)).
* ``native``: each system's own held-out figure (tomotopy ``ll_per_word`` is a training figure),
  the one its stopping rule reads; different definitions, not comparable across systems.

Equal wall time. T = the training seconds of the system that stopped first (``equal_wall_time``);
for every system the table also gives its metrics at its last checkpoint with seconds <= T (null
when its first checkpoint came later than T).

Output: ``--json`` holds ``settings``, per system ``curve`` (every chunk/pass), ``checkpoints``
(metrics and the top words of every topic), ``final`` (the stopping checkpoint), ``config``,
``setup_seconds``, ``peak_rss_mb``, and ``table`` (one row per system: system, K, corpus, seconds,
iterations/passes, u_mass, c_npmi, c_v, held-out LL/token, OOV counts, and the ``at_equal_time``
values). ``--plot OUT.png`` (matplotlib, imported only then) draws u_mass, c_npmi, c_v and held-out
LL/token against training seconds (log scale), one line per system, with T marked. tomotopy,
gensim and matplotlib are benchmark-only packages (the ``bench`` extra).
"""
from __future__ import annotations

import argparse
import importlib.util
import os
import sys
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from spacy_ag.topics.coherence import read_documents, split_heldout  # noqa: E402
from spacy_ag.topics.standard_coherence import MEASURES, WINDOWS, topic_coherences  # noqa: E402


def _benchmarks_topics():
    """benchmarks/topics.py (no package: loaded by path), for its helpers."""
    spec = importlib.util.spec_from_file_location("benchmarks_topics", Path(__file__).with_name("topics.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


_base = _benchmarks_topics()
Missing, log, need, peak_rss_mb, versions, write_json = (
    _base.Missing, _base.log, _base.need, _base.peak_rss_mb, _base.versions, _base.write_json)

SYSTEMS = ("spacy_ag", "spacy_ag_gibbs", "tomotopy", "gensim")
DENEWS = ROOT.parent / "shared" / "data" / "topics" / "de-news" / "doc.dat"
BLAS_THREADS = ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
TINY = 1e-300  # floor of a predictive probability (counted in zero_probability_tokens when used)


# ---------------------------------------------------------------------------
# corpus, split, document completion


def lee_path() -> Path:
    gensim = need("gensim")
    return Path(gensim.__file__).parent / "test" / "test_data" / "lee_background.cor"


def read_lee(path: Path, limit: int) -> List[List[str]]:
    """simple_preprocess, then gensim's STOPWORDS removed; empty documents dropped."""
    need("gensim")
    from gensim.parsing.preprocessing import STOPWORDS
    from gensim.utils import simple_preprocess
    docs: List[List[str]] = []
    with open(path, encoding="utf8") as f:
        for line in f:
            tokens = [t for t in simple_preprocess(line) if t not in STOPWORDS]
            if tokens:
                docs.append(tokens)
                if limit and len(docs) >= limit:
                    break
    return docs


def load(args) -> Dict:
    if args.corpus == "denews":
        path, preprocessing = DENEWS, "none: the file's space-separated tokens"
        if not path.exists():
            raise SystemExit(f"de-news not found at {path}: pass its doc.dat as --corpus PATH")
        docs = read_documents(path, args.limit)
    elif args.corpus == "lee":
        path = lee_path()
        preprocessing = ("gensim.utils.simple_preprocess(line) (deacc=False, min_len=2, max_len=15), then "
                         "gensim.parsing.preprocessing.STOPWORDS removed; empty documents dropped")
        docs = read_lee(path, args.limit)
    else:
        path, preprocessing = Path(args.corpus), "none: the file's whitespace-separated tokens"
        docs = read_documents(path, args.limit)
    train, heldout = split_heldout(docs, args.heldout_fraction, args.seed)
    vocab = sorted({w for d in train for w in d})
    data = {"docs": docs, "train": train, "heldout": heldout, "vocab": vocab,
            "index": {w: i for i, w in enumerate(vocab)}, "path": str(path), "preprocessing": preprocessing}
    data["completion"] = completion_split(heldout, data["index"])
    return data


def completion_split(heldout: Sequence[Sequence[str]], index: Dict[str, int]) -> Dict:
    """The halves of every held-out document, for document completion (see the docstring)."""
    observed, scored, observed_all, scored_all = [], [], [], []
    oov_obs = oov_scored = skipped = 0
    for doc in heldout:
        half = len(doc) // 2
        first, second = list(doc[:half]), list(doc[half:])
        first_in = [w for w in first if w in index]
        second_in = [w for w in second if w in index]
        if not first_in or not second_in:
            skipped += 1
            continue
        oov_obs += len(first) - len(first_in)
        oov_scored += len(second) - len(second_in)
        observed.append(first_in)
        scored.append(second_in)
        observed_all.append(first)
        scored_all.append(second)
    return {"observed": observed, "scored": scored, "observed_all": observed_all, "scored_all": scored_all,
            "documents": len(observed), "skipped_documents": skipped,
            "tokens": sum(len(d) for d in scored), "oov_tokens_observed": oov_obs,
            "oov_tokens_scored_half": oov_scored}


def completion_loglik(theta: np.ndarray, phi: np.ndarray, index: Dict[str, int],
                      scored: Sequence[Sequence[str]]) -> Dict:
    """sum over the scored tokens of log sum_k theta_dk phi_k(w), and per token."""
    total, tokens, zeros = 0.0, 0, 0
    for d, words in enumerate(scored):
        p = theta[d] @ phi[:, [index[w] for w in words]]
        zeros += int((p <= 0).sum())
        total += float(np.log(np.maximum(p, TINY)).sum())
        tokens += len(words)
    return {"loglik": total, "tokens": tokens, "per_token": total / tokens if tokens else None,
            "zero_probability_tokens": zeros}


# ---------------------------------------------------------------------------
# coherence: one function for every system


def coherences(topics: List[List[str]], data: Dict, args) -> Dict:
    if not args.gensim_coherence:
        c = topic_coherences(topics, data["docs"])
        return {m: c[m] for m in MEASURES} | {f"{m}_per_topic": c[f"{m}_per_topic"] for m in MEASURES} | {
            "missing_words": c["missing_words"]}
    need("gensim")
    from gensim.corpora import Dictionary
    from gensim.models.coherencemodel import CoherenceModel
    if "dictionary" not in data:
        data["dictionary"] = Dictionary(data["docs"])
        data["bow"] = [data["dictionary"].doc2bow(d) for d in data["docs"]]
    dictionary = data["dictionary"]
    kept = [[w for w in t if w in dictionary.token2id] for t in topics]
    out: Dict = {"missing_words": sorted({w for t in topics for w in t if w not in dictionary.token2id})}
    for m in MEASURES:
        cm = CoherenceModel(topics=kept, texts=data["docs"], dictionary=dictionary, coherence=m, processes=1,
                            corpus=data["bow"] if m == "u_mass" else None)
        out[f"{m}_per_topic"] = [float(x) for x in cm.get_coherence_per_topic()]
        out[m] = float(np.mean(out[f"{m}_per_topic"]))
    return out


def evaluate(system: Dict, data: Dict, args) -> Dict:
    """One checkpoint: coherence of the top words, document completion, extras; not timed as training."""
    t0 = time.perf_counter()
    topics = system["topics"](args.top)
    out: Dict = {"topics": topics}
    coh = coherences(topics, data, args)
    out.update({m: coh[m] for m in MEASURES})
    out["coherence_per_topic"] = {m: coh[f"{m}_per_topic"] for m in MEASURES}
    out["missing_words"] = coh["missing_words"]
    comp = data["completion"]
    theta = np.asarray(system["theta"](comp["observed"]), dtype=np.float64)
    phi = np.asarray(system["phi"](), dtype=np.float64)
    ll = completion_loglik(theta, phi, data["index"], comp["scored"])
    out.update(heldout_ll_per_token=ll["per_token"], heldout_loglik=ll["loglik"], heldout_tokens=ll["tokens"],
               zero_probability_tokens=ll["zero_probability_tokens"])
    if "extras" in system:
        out.update(system["extras"](theta))
    out["eval_seconds"] = time.perf_counter() - t0
    return out


def plateaued(values: Sequence[float], tol: float, patience: int) -> bool:
    """The best of the last `patience` values is less than `tol` above the best before them."""
    if len(values) <= patience:
        return False
    return max(values[-patience:]) < max(values[:-patience]) + tol


# ---------------------------------------------------------------------------
# the systems


def run_tomotopy(args, data) -> Dict:
    tp = need("tomotopy")
    t0 = time.perf_counter()
    mdl = tp.LDAModel(k=args.topics, seed=args.seed)
    for d in data["train"]:
        mdl.add_doc(d)
    setup = time.perf_counter() - t0
    out = {"setup_seconds": setup, "rss_after_load_mb": peak_rss_mb(), "curve": [], "checkpoints": []}
    order: Dict = {}

    def phi() -> np.ndarray:
        if "cols" not in order:
            words = list(mdl.used_vocabs)
            if set(words) != set(data["vocab"]):
                raise RuntimeError(f"tomotopy's vocabulary ({len(words)} words) is not the training vocabulary "
                                   f"({len(data['vocab'])})")
            pos = {w: i for i, w in enumerate(words)}
            order["cols"] = np.array([pos[w] for w in data["vocab"]])
        m = np.array([mdl.get_topic_word_dist(k) for k in range(args.topics)], dtype=np.float64)
        return m[:, order["cols"]]

    def theta(docs) -> np.ndarray:
        res, _ = mdl.infer([mdl.make_doc(d) for d in docs], iterations=args.tomotopy_infer_iterations,
                           workers=args.workers)
        return np.array(res)

    system = {"topics": lambda n: [[w for w, _ in mdl.get_topic_words(k, top_n=n)] for k in range(args.topics)],
              "theta": theta, "phi": phi}
    its, seconds, last_eval = 0, 0.0, None
    lls: Dict[int, float] = {}
    stopped = "max_iterations"
    while its < args.tomotopy_max_iterations:
        n = min(args.tomotopy_chunk, args.tomotopy_max_iterations - its)
        t1 = time.perf_counter()
        mdl.train(n, workers=args.workers)
        seconds += time.perf_counter() - t1
        its += n
        lls[its] = float(mdl.ll_per_word)
        out["curve"].append({"iterations": its, "seconds": seconds, "ll_per_word": lls[its]})
        back = [i for i in lls if i <= its - args.tomotopy_window]
        done = its >= args.tomotopy_max_iterations
        if back and lls[its] - lls[max(back)] < args.tomotopy_tol:
            stopped, done = "converged", True
        elif args.budget_seconds and seconds >= args.budget_seconds and not done:
            stopped, done = "budget", True
        if (done or last_eval is None or its % args.tomotopy_eval_every == 0
                or seconds >= args.eval_growth * last_eval):
            point = {"iterations": its, "seconds": seconds, "native": {"ll_per_word": lls[its]}}
            point.update(evaluate(system, data, args))
            out["checkpoints"].append(point)
            last_eval = seconds
            log(f"tomotopy {its} it {seconds:.1f}s  ll/word {lls[its]:.4f}  " + summary(point))
        if done:
            break
    out.update(stopped=stopped, iterations=its, seconds=seconds)
    out["config"] = {
        "model": "tomotopy.LDAModel (collapsed Gibbs sampling)", "version": tp.__version__,
        "constructor": f"LDAModel(k={args.topics}, seed={args.seed})",
        "alpha_initial": 0.1, "alpha_final": [float(a) for a in mdl.alpha], "eta": float(mdl.eta),
        "optim_interval": mdl.optim_interval, "burn_in": mdl.burn_in, "workers": args.workers,
        "vocabulary": len(mdl.used_vocabs), "chunk_iterations": args.tomotopy_chunk,
        "max_iterations": args.tomotopy_max_iterations,
        "stop_rule": f"ll_per_word improved by less than {args.tomotopy_tol} over the last "
                     f"{args.tomotopy_window} iterations",
        "infer_iterations": args.tomotopy_infer_iterations}
    return out


class _StopTraining(Exception):
    """Raised by the pass-end callback to end gensim's update()."""


def run_gensim(args, data) -> Dict:
    gensim = need("gensim")
    from gensim.corpora import Dictionary
    from gensim.models import LdaModel
    from gensim.models.callbacks import Metric

    t0 = time.perf_counter()
    train = data["train"]
    dictionary = Dictionary(train)
    if len(dictionary) != len(data["vocab"]):
        raise RuntimeError("gensim's Dictionary is not the training vocabulary")
    bow = [dictionary.doc2bow(d) for d in train]
    held_bow = [dictionary.doc2bow(d) for d in data["heldout"]]
    cols = np.array([dictionary.token2id[w] for w in data["vocab"]])
    passes = args.max_passes or args.gensim_max_passes
    clock = {"start": None, "excluded": 0.0, "passes": 0}
    out = {"rss_after_load_mb": None, "curve": [], "checkpoints": []}
    natives: List[float] = []

    def theta(docs) -> np.ndarray:
        gamma, _ = lda.inference([dictionary.doc2bow(d) for d in docs])
        return gamma / gamma.sum(axis=1, keepdims=True)

    system = {"topics": lambda n: [[w for w, _ in lda.show_topic(k, topn=n)] for k in range(args.topics)],
              "theta": theta, "phi": lambda: lda.get_topics()[:, cols]}

    class PassEnd(Metric):
        logger, title = None, "topics_fair checkpoint"

        def get_value(self, **kwargs):
            now = time.perf_counter()
            seconds = now - clock["start"] - clock["excluded"]
            clock["passes"] += 1
            p = clock["passes"]
            state = lda.random_state.get_state()  # evaluation must not move the training run's random stream
            bound = float(lda.log_perplexity(held_bow, total_docs=len(train)))
            natives.append(bound)
            point = {"passes": p, "seconds": seconds, "native": {"log_perplexity_bound": bound}}
            point.update(evaluate(system, data, args))
            lda.random_state.set_state(state)
            out["curve"].append({"passes": p, "seconds": seconds, "log_perplexity_bound": bound})
            out["checkpoints"].append(point)
            log(f"gensim pass {p} {seconds:.1f}s  bound/word {bound:.4f}  " + summary(point))
            clock["excluded"] += time.perf_counter() - now
            if plateaued(natives, args.tol, args.patience):
                clock["stopped"] = "converged"
            elif args.budget_seconds and seconds >= args.budget_seconds and p < passes:
                clock["stopped"] = "budget"
            if "stopped" in clock:
                raise _StopTraining
            return 0.0

    alpha = _number_or_name(args.gensim_alpha)
    eta = _number_or_name(args.gensim_eta)
    lda = LdaModel(id2word=dictionary, num_topics=args.topics, chunksize=args.gensim_chunksize, passes=passes,
                   update_every=1, alpha=alpha, eta=eta, iterations=args.gensim_iterations, eval_every=None,
                   random_state=args.seed, callbacks=[PassEnd()])
    out["setup_seconds"] = time.perf_counter() - t0
    out["rss_after_load_mb"] = peak_rss_mb()
    clock["start"] = time.perf_counter()
    try:
        lda.update(bow)
    except _StopTraining:
        pass
    out.update(stopped=clock.get("stopped", "max_passes"), passes=clock["passes"],
               seconds=out["checkpoints"][-1]["seconds"])
    out["config"] = {
        "model": "gensim.models.LdaModel (online variational Bayes)", "version": gensim.__version__,
        "settings_from": "gensim's LDA tutorial (docs/src/gallery/tutorials/run_lda.py)",
        "num_topics": args.topics, "chunksize": args.gensim_chunksize, "passes": passes, "update_every": 1,
        "alpha": args.gensim_alpha, "eta": args.gensim_eta, "iterations": args.gensim_iterations,
        "eval_every": None, "decay": lda.decay, "offset": lda.offset, "gamma_threshold": lda.gamma_threshold,
        "random_state": args.seed, "vocabulary": len(dictionary),
        "alpha_final": [float(a) for a in np.ravel(lda.alpha)],
        "eta_final_mean": float(np.mean(lda.eta)),
        "stop_rule": f"log_perplexity(held-out, total_docs={len(train)}) improved by less than {args.tol} over "
                     f"the last {args.patience} pass(es), checked by a callback at the end of each pass"}
    return out


def _number_or_name(value: str):
    try:
        return float(value)
    except ValueError:
        return value


def spacy_ag_system(tm, data) -> Dict:
    """The evaluation hooks of a spacy-ag TopicModel (see the module docstring)."""
    comp = data["completion"]
    cache: Dict = {}

    def phi() -> np.ndarray:
        raw = tm.word_probabilities(data["vocab"])
        cache["raw"] = raw
        return raw / raw.sum(axis=1, keepdims=True)

    def extras(theta: np.ndarray) -> Dict:
        raw = cache["raw"]
        unnorm = completion_loglik(theta, raw, data["index"], comp["scored"])
        obs = [[w for w in d if tm.can_spell(w)] for d in comp["observed_all"]]
        tgt = [[w for w in d if tm.can_spell(w)] for d in comp["scored_all"]]
        words = sorted({w for d in tgt for w in d})
        index = {w: i for i, w in enumerate(words)}
        all_tokens = completion_loglik(tm.infer(obs), tm.word_probabilities(words), index, tgt)
        unspellable = sum(len(d) for d in comp["scored_all"]) - all_tokens["tokens"]
        return {"spacy_ag_unnormalised_ll_per_token": unnorm["per_token"],
                "spacy_ag_all_tokens": {"ll_per_token": all_tokens["per_token"], "tokens": all_tokens["tokens"],
                                        "oov_tokens": sum(1 for d in tgt for w in d if w not in data["index"]),
                                        "unspellable_tokens": unspellable},
                "spacy_ag_mass_on_vocabulary": float(raw.sum(axis=1).mean())}

    return {"topics": tm.topics, "theta": tm.infer, "phi": phi, "extras": extras}


def run_spacy_ag_gibbs(args, data) -> Dict:
    """spacy-ag's collapsed Gibbs mode with the shared lexicon, ``TopicModel(n_topics=K,
    inference="gibbs", sweeps=S, word_adapted=True)``, one fit per S in --gibbs-sweeps (a Gibbs run
    is not scored mid-way: its last sample becomes the model); each checkpoint's seconds are that
    fit's wall time, numba compilation excluded."""
    from spacy_ag.topics import TopicModel

    train = data["train"]
    schedule = [int(x) for x in args.gibbs_sweeps.split(",")]
    t0 = time.perf_counter()
    TopicModel(n_topics=args.topics, inference="gibbs", sweeps=10, word_adapted=True).fit(  # 10: alpha's fit too
        train[:20], seed=args.seed).infer(train[:5])
    out = {"warmup_seconds": time.perf_counter() - t0, "curve": [], "checkpoints": []}
    for sweeps in schedule:
        t1 = time.perf_counter()
        tm = TopicModel(n_topics=args.topics, inference="gibbs", sweeps=sweeps, word_adapted=True,
                        local_iterations=args.tomotopy_infer_iterations).fit(train, seed=args.seed)
        seconds = time.perf_counter() - t1
        native = tm.heldout_loglik(data["heldout"])
        point = {"sweeps": sweeps, "seconds": seconds,
                 "native": {"heldout_loglik_per_word": native["per_word"], "tokens": native["tokens"]}}
        point.update(evaluate(spacy_ag_system(tm, data), data, args))
        out["checkpoints"].append(point)
        out["curve"].append({"sweeps": sweeps, "seconds": seconds, "heldout_loglik_per_word": native["per_word"]})
        log(f"spacy_ag_gibbs {sweeps} sweeps {seconds:.1f}s  " + summary(point))
    out.update(stopped="max_sweeps", sweeps=schedule[-1], setup_seconds=0.0,
               seconds=out["checkpoints"][-1]["seconds"])
    out["config"] = {"model": "spacy_ag.topics.TopicModel, collapsed Gibbs mode, shared lexicon",
                     "constructor": f"TopicModel(n_topics={args.topics}, inference='gibbs', sweeps=S, "
                                    f"word_adapted=True, local_iterations={args.tomotopy_infer_iterations})",
                     "alpha": f"fitted (Minka) every {tm.alpha_every} sweeps", "a": tm.a, "b": tm.b,
                     "sweeps": schedule, "one_thread": True}
    return out


def run_spacy_ag(args, data) -> Dict:
    from spacy_ag.topics import TopicModel, default_topic_settings

    def model() -> TopicModel:
        online = default_topic_settings(workers=args.workers) if args.workers else None
        return TopicModel(n_topics=args.topics, online=online, inference="online", word_adapted=False)

    train = data["train"]
    t0 = time.perf_counter()
    warm = model()  # compile (or load the cached) numba kernels outside the timed passes
    warm.fit(train[:2 * warm.online.batch_size], passes=1, seed=args.seed)
    warm.infer(train[:5])
    warm.heldout_loglik(data["heldout"][:5])
    warm.word_probabilities(data["vocab"][:5])
    warmup = time.perf_counter() - t0
    del warm
    t0 = time.perf_counter()
    tm = model()
    tm.prepare(tm.alphabet(train), sum(len(d) for d in train))  # as TopicModel.fit does
    out = {"setup_seconds": time.perf_counter() - t0, "warmup_seconds": warmup,
           "rss_after_load_mb": peak_rss_mb(), "curve": [], "checkpoints": []}
    system = spacy_ag_system(tm, data)
    max_passes = args.max_passes or args.spacy_ag_max_passes
    seconds, natives, stopped = 0.0, [], "max_passes"
    for p in range(max_passes):
        order = tm.pass_order(len(train), args.seed, p)
        t1 = time.perf_counter()
        tm.partial_fit((train[i] for i in order), seed=args.seed + p, corpus_size=len(train))
        seconds += time.perf_counter() - t1
        native = tm.heldout_loglik(data["heldout"])
        natives.append(native["per_word"])
        out["curve"].append({"passes": p + 1, "seconds": seconds, "heldout_loglik_per_word": native["per_word"]})
        point = {"passes": p + 1, "seconds": seconds,
                 "native": {"heldout_loglik_per_word": native["per_word"], "tokens": native["tokens"],
                            "skipped_tokens": native["skipped_tokens"]}}
        point.update(evaluate(system, data, args))
        out["checkpoints"].append(point)
        log(f"spacy_ag pass {p + 1} {seconds:.1f}s  held-out/word {native['per_word']:.4f}  " + summary(point))
        if plateaued(natives, args.tol, args.patience):
            stopped = "converged"
            break
        if args.budget_seconds and seconds >= args.budget_seconds and p + 1 < max_passes:
            stopped = "budget"
            break
    out.update(stopped=stopped, passes=len(out["curve"]), seconds=seconds)
    out["config"] = {
        "model": "spacy_ag.topics.TopicModel (online variational InfVocLDA)",
        "constructor": (f"TopicModel(n_topics={args.topics}, inference='online', word_adapted=False" +
                        (f", online=default_topic_settings(workers={args.workers}))" if args.workers else ")")),
        "alpha": tm.alpha, "a": tm.a, "b": tm.b, "local_iterations": tm.local_iterations,
        "online": tm.online.to_dict(), "max_passes": max_passes, "dropped_tokens": tm.dropped_tokens,
        "one_pass": "partial_fit over the training documents in TopicModel.pass_order(seed, p), seed=seed+p, "
                    "corpus_size=training documents (what TopicModel.fit does per pass)",
        "stop_rule": f"heldout_loglik(held-out)['per_word'] improved by less than {args.tol} over the last "
                     f"{args.patience} pass(es)"}
    try:
        out["config"]["vocabulary_size"] = tm.vocabulary_size()
    except Exception as exc:  # diagnostics only
        out["config"]["vocabulary_size"] = f"unavailable: {exc}"
    return out


RUN: Dict[str, Callable] = {"spacy_ag": run_spacy_ag, "spacy_ag_gibbs": run_spacy_ag_gibbs, "tomotopy": run_tomotopy,
                            "gensim": run_gensim}


def summary(point: Dict) -> str:
    return (f"u_mass {point['u_mass']:.3f}  c_npmi {point['c_npmi']:.4f}  c_v {point['c_v']:.4f}  "
            f"LL/token {point['heldout_ll_per_token']:.4f}")


def run_system(name: str, args) -> Dict:
    data = load(args)
    out = {"system": name, **RUN[name](args, data)}
    out["final"] = out["checkpoints"][-1]
    out["topics"] = out["final"]["topics"]
    out["peak_rss_mb"] = peak_rss_mb()
    return out


# ---------------------------------------------------------------------------
# driver


def run_child(args, only: str) -> Dict:
    env = dict(os.environ)
    if args.workers:
        env.update({k: str(args.workers) for k in BLAS_THREADS})
    return _base.run_child(args, only, script=__file__, env=env)


STEP = {"tomotopy": "iterations", "gensim": "passes", "spacy_ag": "passes", "spacy_ag_gibbs": "sweeps"}
ROW_METRICS = ("u_mass", "c_npmi", "c_v", "heldout_ll_per_token")


def table(results: Dict, args, data) -> Dict:
    ok = {n: r for n, r in results.items() if "checkpoints" in r}
    if not ok:
        return {"rows": [], "equal_wall_time": None}
    fastest = min(ok, key=lambda n: ok[n]["seconds"])
    T = ok[fastest]["seconds"]
    rows = []
    for name, r in ok.items():
        f = r["final"]
        step = STEP[name]
        row = {"system": name, "K": args.topics, "corpus": args.corpus, "seconds": r["seconds"],
               "setup_seconds": r["setup_seconds"], step: r[step], "stopped": r["stopped"],
               **{m: f[m] for m in ROW_METRICS}, "heldout_tokens": f["heldout_tokens"],
               "oov_tokens_scored_half": data["completion"]["oov_tokens_scored_half"],
               "peak_rss_mb": r["peak_rss_mb"]}
        before = [c for c in r["checkpoints"] if c["seconds"] <= T * (1 + 1e-9)]
        if before:
            c = before[-1]
            row["at_equal_time"] = {"seconds": c["seconds"], step: c[step], **{m: c[m] for m in ROW_METRICS}}
        else:
            first = r["checkpoints"][0]["seconds"]
            row["at_equal_time"] = {"seconds": None, "note": f"no checkpoint by then (first at {first:.3g} s)"}
        rows.append(row)
    return {"rows": rows, "equal_wall_time": {"seconds": T, "fastest": fastest,
                                              "rule": "each system's last checkpoint with seconds <= T, T the "
                                                      "training seconds of the system that stopped first"}}


def print_table(tab: Dict) -> None:
    if not tab["rows"]:
        return
    eq = tab["equal_wall_time"]
    fmt = "{:<9} {:>3} {:<7} {:>8} {:>14} {:<14} {:>7} {:>7} {:>7} {:>8}"
    lines = ["final (each system's stop):", fmt.format("system", "K", "corpus", "seconds", "steps", "stopped",
                                                       "u_mass", "c_npmi", "c_v", "LL/tok")]
    for r in tab["rows"]:
        step = STEP[r["system"]]
        lines.append(fmt.format(r["system"], r["K"], str(r["corpus"])[:7], f"{r['seconds']:.2f}",
                                f"{r[step]} {step}", r["stopped"], f"{r['u_mass']:.3f}", f"{r['c_npmi']:.4f}",
                                f"{r['c_v']:.4f}", f"{r['heldout_ll_per_token']:.4f}"))
    lines.append(f"at equal wall time ({eq['seconds']:.2f} s, when {eq['fastest']} stopped):")
    for r in tab["rows"]:
        step = STEP[r["system"]]
        e = r["at_equal_time"]
        if e.get("seconds") is None:
            lines.append(f"{r['system']:<9} {e['note']}")
            continue
        lines.append(fmt.format(r["system"], r["K"], str(r["corpus"])[:7], f"{e['seconds']:.2f}",
                                f"{e[step]} {step}", "", f"{e['u_mass']:.3f}", f"{e['c_npmi']:.4f}",
                                f"{e['c_v']:.4f}", f"{e['heldout_ll_per_token']:.4f}"))
    log("\n".join(lines))


def settings_block(args, data) -> Dict:
    comp = data["completion"]
    return {
        "corpus": args.corpus, "path": data["path"], "preprocessing": data["preprocessing"], "limit": args.limit,
        "documents": len(data["docs"]), "tokens": sum(len(d) for d in data["docs"]),
        "train_documents": len(data["train"]), "train_tokens": sum(len(d) for d in data["train"]),
        "heldout_documents": len(data["heldout"]), "heldout_fraction": args.heldout_fraction,
        "vocabulary": len(data["vocab"]), "topics": args.topics, "seed": args.seed, "workers": args.workers,
        "budget_seconds": args.budget_seconds, "tol": args.tol, "patience": args.patience,
        "coherence": {"reference": "the full corpus (training and held-out documents)", "top_words": args.top,
                      "measures": {m: (f"windows of {WINDOWS[m]} tokens" if WINDOWS[m] else "whole documents")
                                   for m in MEASURES},
                      "function": ("gensim.models.coherencemodel.CoherenceModel" if args.gensim_coherence else
                                   "spacy_ag.topics.standard_coherence.topic_coherences (gensim's definitions)")},
        "heldout_likelihood": {
            "estimator": "document completion: theta from the in-vocabulary tokens of the first half of each "
                         "held-out document (the system's own inference), log sum_k theta_k phi_k(w) of each "
                         "in-vocabulary token of the second half, divided by their number; phi over the "
                         "training vocabulary, rows summing to 1 (spacy-ag's P_k(w) renormalised over it)",
            "documents": comp["documents"], "skipped_documents": comp["skipped_documents"],
            "tokens": comp["tokens"], "oov_tokens_observed": comp["oov_tokens_observed"],
            "oov_tokens_scored_half": comp["oov_tokens_scored_half"]},
        "seconds": "wall seconds of training only, cumulative; evaluation, corpus conversion and warm-up excluded",
        "versions": versions(),
    }


def plot(results: Dict, path: str) -> None:
    plt = _base.pyplot()
    if plt is None:
        return
    fig, axes = plt.subplots(2, 2, figsize=(11, 8))
    labels = {"u_mass": "u_mass", "c_npmi": "c_npmi", "c_v": "c_v", "heldout_ll_per_token": "held-out LL / token"}
    eq = results["table"]["equal_wall_time"]
    for ax, key in zip(axes.ravel(), ROW_METRICS):
        for name in SYSTEMS:
            pts = results.get(name, {}).get("checkpoints")
            if pts:
                ax.plot([max(c["seconds"], 1e-3) for c in pts], [c[key] for c in pts], marker="o", ms=3,
                        label=name)
        if eq:
            ax.axvline(eq["seconds"], color="grey", ls=":", lw=1)
        ax.set_xscale("log")
        ax.set_xlabel("training wall seconds")
        ax.set_ylabel(labels[key])
        ax.grid(alpha=0.3)
        ax.legend(fontsize=8)
    s = results["settings"]
    fig.suptitle(f"{s['corpus']}: K = {s['topics']}, {s['train_documents']} training / {s['heldout_documents']} "
                 f"held-out documents; dotted: the first system's stop")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    log(f"wrote {path}")


def parse_args(argv: Optional[Sequence[str]] = None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--corpus", default="denews", help="denews, lee or a one-document-per-line file")
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--json", required=True)
    ap.add_argument("--plot", default=None)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--limit", type=int, default=0, help="keep the first N documents (0: all)")
    ap.add_argument("--budget-seconds", type=float, default=None, help="stop a system after this much training")
    ap.add_argument("--heldout-fraction", type=float, default=0.1)
    ap.add_argument("--top", type=int, default=10, help="top words per topic for coherence")
    ap.add_argument("--workers", type=int, default=1, help="threads of every system (0: each system's default)")
    ap.add_argument("--gensim-coherence", action="store_true", help="score with gensim's CoherenceModel")
    ap.add_argument("--tol", type=float, default=1e-3, help="gensim, spacy_ag: held-out nats/token")
    ap.add_argument("--patience", type=int, default=1, help="gensim, spacy_ag: passes without improvement")
    ap.add_argument("--max-passes", type=int, default=None, help="cap gensim's and spacy_ag's passes")
    ap.add_argument("--gensim-max-passes", type=int, default=50)
    ap.add_argument("--gibbs-sweeps", default="25,50,100,200,300",
                    help="spacy_ag_gibbs: one fit per number of sweeps")
    ap.add_argument("--spacy-ag-max-passes", type=int, default=20)
    ap.add_argument("--gensim-chunksize", type=int, default=2000)
    ap.add_argument("--gensim-iterations", type=int, default=400)
    ap.add_argument("--gensim-alpha", default="auto")
    ap.add_argument("--gensim-eta", default="auto")
    ap.add_argument("--tomotopy-chunk", type=int, default=10, help="iterations per train() call")
    ap.add_argument("--tomotopy-max-iterations", type=int, default=1000)
    ap.add_argument("--tomotopy-window", type=int, default=100)
    ap.add_argument("--tomotopy-tol", type=float, default=1e-3, help="ll_per_word gain over the window")
    ap.add_argument("--tomotopy-infer-iterations", type=int, default=100)
    ap.add_argument("--tomotopy-eval-every", type=int, default=100, help="checkpoint every N iterations")
    ap.add_argument("--eval-growth", type=float, default=1.5, help="tomotopy: checkpoint when seconds grow by this")
    ap.add_argument("--only", default=None, help=argparse.SUPPRESS)
    return ap.parse_args(argv)


def main(argv: Optional[Sequence[str]] = None) -> int:
    args = parse_args(argv)
    if args.only:
        try:
            result = run_system(args.only, args)
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
    results["settings"] = settings_block(args, data)
    results["table"] = table({n: results[n] for n in systems}, args, data)
    write_json(results, args.json)
    log(f"wrote {args.json}")
    print_table(results["table"])
    for name in systems:
        if "checkpoints" not in results[name]:
            log(f"{name}: {results[name].get('skipped') or results[name].get('error')}")
    if args.plot:
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
