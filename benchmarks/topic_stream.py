"""The infinite vocabulary pays off (issue 15, item 5): on de-news in document order, new words enter
spacy-ag's topics as the stream goes on, and held-out documents full of words outside a fixed
vocabulary get a higher likelihood than under a fixed-vocabulary online LDA trained on the same
stream (not a test).

    python benchmarks/topic_stream.py --seed 1 --json out/stream-s1.json --plot out/stream-s1.png
    python benchmarks/topic_stream.py --limit 600 --chunks 3 --json /tmp/stream-smoke.json   # smoke

Why. Zhai & Boyd-Graber (2013, "Online LDA with infinite vocabulary") show two things a
fixed-vocabulary topic model cannot do: words first seen late in a stream climb into the topics
(their Figure 4: a word's rank in its topic against the stream position), and documents made of
words outside the initial vocabulary are still modelled. ``benchmarks/topics.py`` and
``topics_fair.py`` compare topic quality on shuffled passes; this script follows one ordered
stream.

Data. ``--data`` (de-news ``doc.dat``: one document per line, space-separated stemmed tokens, in the
corpus's chronological order) and ``--dict`` (``dict.dat`` beside it: the fixed 5,778-word
vocabulary of the InfVoc experiments); ``--limit N`` keeps the first N documents. The last
``--heldout-fraction`` (0.1) of the documents, in corpus order, are held out; the rest is the
training stream, read once, in order. The stream is cut into ``--chunks`` (10) consecutive chunks
of whole minibatches (spacy-ag's batch size, 50), so chunk c is minibatches floor(cM/C) to
floor((c+1)M/C) - 1 of the M minibatches.

1. New words in the topics (spacy-ag only). ``spacy_ag.topics.TopicModel(n_topics=--topics,
inference="online", word_adapted=False)`` with its default online settings (``online.workers`` = ``--workers``), ``prepare``d with the characters
of the training stream, trained by ``partial_fit(..., seed=--seed, corpus_size=training
documents)`` over the stream in order, ``--rank-every`` (2) minibatches per call (the same
minibatches as one ``partial_fit`` over the whole stream). After every call the full ranking of
every topic (``top_words(i, None)``: cached words by E_q[pi]) is read; after every chunk
(``chunks[]``) the top 20 words of every topic are kept, and for the top 10 and top 20 lists:

* ``entered_this_chunk``: top-list slots (of K x n) held by words first seen in the stream in
  this chunk (never seen before it), and the distinct such words;
* ``not_in_first_chunk``: slots held by words absent from the first chunk's vocabulary (with
  each such word and the chunk where it first occurred);
* ``outside_dict``: slots held by words outside ``dict.dat`` (a fixed-vocabulary model on
  ``dict.dat`` cannot rank them at all).

Late words (``late_words``): words first occurring after ``--late-after`` (0.3) of the stream's
documents and outside ``dict.dat`` (mostly names). Reported: how many are in some topic's top 10,
20 and 100 at the end, and the ``--examples`` (6) with the best final rank: each with its first
occurrence, its best topic (where its best rank over the run was reached) and its rank in that
topic after every ``partial_fit`` call (null when the topic has not cached it), against documents
seen. ``--plot`` draws those trajectories (log rank axis, like Figure 4) and the per-chunk counts.

2. Held-out documents full of unseen words. Three sets of held-out documents are scored (every
system on every set): ``outside_dict`` and ``outside_first_chunk``, the ``--select-fraction`` (0.2)
of the held-out documents with the largest fraction of tokens outside ``dict.dat`` or outside the
first chunk's vocabulary (ties: longer first; documents of fewer than 2 tokens left out), and
``all`` held-out documents, for reference. One estimator, implemented once here for every system:
document completion. Each document's tokens, in order, are cut at floor(n/2); theta_d is the
system's own inference from the first half (every token: spacy-ag ``infer``, gensim ``inference``
normalised, with out-of-vocabulary tokens as ``<unk>``), and every token w of the second half
scores log p(w | d), summed and divided by the number of scored tokens (the same tokens for every
system: those whose characters are all in the training stream's; ``unspellable_tokens`` counts
the others). Systems:

* ``spacy_ag``: the model of part 1 after the whole stream; p(w | d) = sum_k theta_dk P_k(w),
  P_k from ``word_probabilities`` (cached words and the character base, so an unseen word is
  spelled). P_k are the G' weights of the E-step (exp E_q log of the sticks and rules), which sum
  to at most 1 over all strings, so spacy-ag's figure is a proper likelihood or less. Also
  ``native``: ``TopicModel.heldout_loglik`` on each set (theta fitted on all of a document's tokens
  and the same tokens scored: a different estimator, not comparable).
* ``gensim_dict`` and ``gensim_first_chunk``: ``gensim.models.LdaModel`` (online variational
  Bayes) with a fixed vocabulary V, ``dict.dat`` or the first chunk's words, plus one ``<unk>``
  type: every training token outside V is mapped to ``<unk>``. One ``update()`` over the training
  stream in order: ``passes=1, update_every=1, chunksize`` = spacy-ag's batch size, ``decay`` =
  kappa, ``offset`` = tau, ``alpha`` = spacy-ag's alpha (0.1), eta gensim's default,
  ``iterations=50, gamma_threshold=0.001, eval_every=None, random_state=--seed``. gensim scales its
  updates by the documents given to ``update`` (the whole stream), as spacy-ag's by
  ``corpus_size``. p(w | d) = sum_k theta_dk phi_k(w) for w in V; for w outside V,
  p(<unk> | d) * p_spell(w), so the total is a proper likelihood over all strings. p_spell
  (``SpellingModel``) is a character unigram model with an end-of-word symbol fitted on the
  training tokens mapped to ``<unk>`` (maximum likelihood for the stop probability, add-one over
  the training stream's characters for the letters), which is a distribution over all non-empty
  strings, renormalised over the strings outside V (divided by 1 - sum_{v in V} p(v)), so that
  ``<unk>`` spreads its mass only over the words it stands for. It is the same family as
  spacy-ag's own character base (CHARS -> CHAR CHARS | CHAR), fitted to exactly the words the
  fixed model is missing.

Reported per system and document set (``heldout``): scored tokens, their log likelihood per token,
and the same for three token classes: ``in_vocabulary`` (in V: the in-vocabulary-only figure),
``outside_vocabulary`` (not in V) and ``unseen`` (never in the training stream); the counts of each
class and the fraction of each set's tokens outside each V. spacy-ag's split is given
for each V (the tokens are the same, only the grouping differs). Each system runs in a process of
its own (``--only SYSTEM``) with ``--workers`` (1) threads: numba's (NUMBA_NUM_THREADS) and the
BLAS libraries' (OMP/OPENBLAS/MKL_NUM_THREADS). ``seconds``: wall seconds of training only
(spacy-ag: the ``partial_fit`` calls, after a warm-up model compiles the kernels, ``warmup_seconds``;
gensim: ``update``); ``wall_seconds``: the whole run. matplotlib and gensim are benchmark-only
packages (the ``bench`` extra).
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time
from collections import Counter
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Tuple

import numpy as np

ROOT = Path(__file__).resolve().parent.parent
if str(ROOT) not in sys.path:
    sys.path.insert(0, str(ROOT))

from spacy_ag.settings import TOPIC_ONLINE_DEFAULTS  # noqa: E402
from spacy_ag.text_units import DEFAULT_UNITS, text_units  # noqa: E402
from spacy_ag.topics.coherence import read_documents  # noqa: E402


sys.path.insert(0, str(ROOT / "benchmarks"))
from topics import Missing, log, need, peak_rss_mb, versions, write_json  # noqa: E402  (benchmarks/topics.py)

SYSTEMS = ("spacy_ag", "gensim_dict", "gensim_first_chunk")
VOCABULARIES = {"gensim_dict": "dict", "gensim_first_chunk": "first_chunk"}
DENEWS = ROOT.parent / "shared" / "data" / "topics" / "de-news" / "doc.dat"
THREAD_VARIABLES = ("NUMBA_NUM_THREADS", "OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS")
UNK = "<unk>"
TOP_LISTS = (10, 20)
LATE_TOP = (10, 20, 100)


# ---------------------------------------------------------------------------
# the stream: chunks, first occurrences, held-out documents


def chunk_bounds(n_docs: int, batch_size: int, chunks: int) -> List[Tuple[int, int]]:
    """Document ranges of `chunks` consecutive chunks of whole minibatches (the last minibatch may be
    short): chunk c holds minibatches floor(cM/C) .. floor((c+1)M/C) - 1 of the M minibatches."""
    minibatches = -(-n_docs // batch_size)
    if not 1 <= chunks <= minibatches:
        raise ValueError(f"{chunks} chunks of {minibatches} minibatches: choose 1 to {minibatches}")
    edges = [c * minibatches // chunks * batch_size for c in range(chunks)] + [n_docs]
    return list(zip(edges[:-1], edges[1:]))


def first_occurrences(docs: Sequence[Sequence[str]]) -> Dict[str, int]:
    """word -> index of the first document of the stream that contains it."""
    first: Dict[str, int] = {}
    for i, doc in enumerate(docs):
        for w in doc:
            first.setdefault(w, i)
    return first


def chunk_of(position: int, bounds: Sequence[Tuple[int, int]]) -> int:
    return next(c for c, (start, end) in enumerate(bounds) if start <= position < end)


def top_list_counts(topics: Sequence[Sequence[str]], first_chunk: Dict[str, int], chunk: int,
                    fixed: Iterable[str]) -> Dict:
    """How many top-list slots (and which distinct words) are held by words first seen in `chunk`,
    by words absent from the first chunk, and by words outside the fixed vocabulary `fixed`."""
    fixed = set(fixed)
    slots = [w for words in topics for w in words]
    entered = [w for w in slots if first_chunk[w] == chunk]
    later = [w for w in slots if first_chunk[w] > 0]
    outside = [w for w in slots if w not in fixed]
    return {"slots": len(slots),
            "entered_this_chunk": {"slots": len(entered), "words": sorted(set(entered))},
            "not_in_first_chunk": {"slots": len(later),
                                   "words": {w: first_chunk[w] for w in sorted(set(later))}},
            "outside_dict": {"slots": len(outside), "distinct": len(set(outside))}}


def select_documents(heldout: Sequence[Sequence[str]], fixed: set, fraction: float) -> List[int]:
    """Indices of the `fraction` of held-out documents (of 2 or more tokens) with the largest share of
    tokens outside `fixed` (ties: longer first), in corpus order."""
    candidates = [i for i, d in enumerate(heldout) if len(d) >= 2]
    ranked = sorted(candidates, key=lambda i: (-sum(w not in fixed for w in heldout[i]) / len(heldout[i]),
                                               -len(heldout[i]), i))
    return sorted(ranked[:max(1, int(round(fraction * len(candidates))))])


def completion_halves(docs: Sequence[Sequence[str]], spellable) -> Dict[str, List[List[str]]]:
    """Each document's first floor(n/2) tokens (observed) and the rest (scored); scored tokens a
    system cannot spell are left out and counted."""
    observed, scored, unspellable = [], [], 0
    for doc in docs:
        half = len(doc) // 2
        observed.append([w for w in doc[:half] if spellable(w)])
        kept = [w for w in doc[half:] if spellable(w)]
        unspellable += len(doc) - half - len(kept)
        scored.append(kept)
    return {"observed": observed, "scored": scored, "unspellable_tokens": unspellable}


def load(args) -> Dict:
    docs = read_documents(args.data, args.limit)
    n_held = int(round(args.heldout_fraction * len(docs)))
    if not 0 < n_held < len(docs):
        raise SystemExit(f"--heldout-fraction {args.heldout_fraction} of {len(docs)} documents holds out "
                         f"{n_held}: nothing to train on or to score")
    train, heldout = docs[:-n_held], docs[-n_held:]
    dict_path = Path(args.dict) if args.dict else Path(args.data).with_name("dict.dat")
    with open(dict_path, encoding="utf8") as f:
        fixed_dict = set(f.read().split())
    bounds = chunk_bounds(len(train), TOPIC_ONLINE_DEFAULTS["batch_size"], args.chunks)
    first = first_occurrences(train)
    start, end = bounds[0]
    vocabularies = {"dict": fixed_dict, "first_chunk": {w for d in train[start:end] for w in d}}
    alphabet = {u for w in first for u in text_units(w, DEFAULT_UNITS)}

    def spellable(word: str) -> bool:
        return all(u in alphabet for u in text_units(word, DEFAULT_UNITS))

    sets = {f"outside_{v}": [heldout[i] for i in select_documents(heldout, fixed, args.select_fraction)]
            for v, fixed in vocabularies.items()}
    sets["all"] = [d for d in heldout if len(d) >= 2]
    return {"docs": docs, "train": train, "heldout": heldout, "bounds": bounds, "first": first,
            "first_chunk": {w: chunk_of(i, bounds) for w, i in first.items()}, "vocabularies": vocabularies,
            "dict_path": str(dict_path), "alphabet": alphabet, "sets": sets,
            "completion": {name: completion_halves(d, spellable) for name, d in sets.items()}}


# ---------------------------------------------------------------------------
# the spelling model of the fixed-vocabulary systems' <unk>


class SpellingModel:
    """A character unigram model with an end-of-word symbol: a distribution over non-empty strings.

    p(c_1 .. c_n) = stop (1 - stop)^(n - 1) prod_i u(c_i), with stop = tokens / characters (maximum
    likelihood of the geometric length, n >= 1) and u the characters' relative frequencies, add-one
    over `alphabet`; summed over all strings of every length it is 1. With `exclude` (a fixed
    vocabulary V), `log_prob_outside` is the model renormalised over the strings outside V:
    p(w) / (1 - sum_{v in V} p(v)).
    """

    def __init__(self, tokens: Dict[str, int], alphabet: Iterable[str], exclude: Iterable[str] = (),
                 units: str = DEFAULT_UNITS):
        self.units = units
        chars = Counter({c: 1 for c in alphabet})
        n_tokens = n_chars = 0
        for word, count in tokens.items():
            spelled = text_units(word, units)
            n_tokens += count
            n_chars += count * len(spelled)
            for c in spelled:
                chars[c] += count
        if not n_tokens:
            raise ValueError("no tokens to fit the spelling model on")
        total = sum(chars.values())
        self.log_char = {c: math.log(k / total) for c, k in chars.items()}
        self.stop = n_tokens / n_chars
        self.excluded_mass = sum(math.exp(self.log_prob(v)) for v in set(exclude))
        self.log_outside = math.log1p(-self.excluded_mass)

    def log_prob(self, word: str) -> float:
        spelled = text_units(word, self.units)
        if not spelled or any(c not in self.log_char for c in spelled):
            return -math.inf
        return (math.log(self.stop) + (len(spelled) - 1) * math.log1p(-self.stop)
                + sum(self.log_char[c] for c in spelled))

    def log_prob_outside(self, word: str) -> float:
        return self.log_prob(word) - self.log_outside


# ---------------------------------------------------------------------------
# the systems: each returns its per-token log probabilities of the scored tokens


def rankings(tm) -> List[Dict[str, int]]:
    """word -> rank (1 = top) in every topic, over the words the topic has cached."""
    return [{w: r for r, (w, _) in enumerate(tm.top_words(i, None), 1)} for i in range(tm.n_topics)]


def late_word_report(history: List[Dict], late: Dict[str, int], first_chunk: Dict[str, int], n_train: int,
                     examples: int) -> Dict:
    """Top-list counts of the late words at the end, and the `examples` with the best final rank with
    their rank trajectories in their best topic (the topic of their best rank over the run)."""
    final = history[-1]["ranks"]
    best_final = {w: min(r.values()) for w, r in final.items()}
    chosen = sorted(best_final, key=lambda w: (best_final[w], late[w], w))[:examples]
    out = {"candidates": len(late), "in_top_at_end": {str(n): sum(1 for r in best_final.values() if r <= n)
                                                      for n in LATE_TOP}, "examples": []}
    for w in chosen:
        seen = [(r, -h["documents_seen"], k) for h in history for k, r in h["ranks"].get(w, {}).items()]
        topic = min(seen)[2]
        out["examples"].append({
            "word": w, "first_document": late[w], "first_position": late[w] / n_train,
            "first_chunk": first_chunk[w], "best_topic": topic, "final_rank": final[w].get(topic),
            "best_rank": min(r for r, _, k in seen if k == topic),
            "trajectory": [[h["documents_seen"], h["ranks"].get(w, {}).get(topic)] for h in history]})
    return out


def run_spacy_ag(args, data) -> Dict:
    from spacy_ag.topics import TopicModel, default_topic_settings

    def model() -> TopicModel:
        return TopicModel(n_topics=args.topics, online=default_topic_settings(workers=args.workers),
                          inference="online", word_adapted=False)

    train, bounds, fixed = data["train"], data["bounds"], data["vocabularies"]["dict"]
    t0 = time.perf_counter()
    warm = model()  # compile (or load the cached) numba kernels outside the timed stream
    warm.prepare(sorted(data["alphabet"]))
    warm.partial_fit(train[:2 * warm.online.batch_size], seed=args.seed, corpus_size=len(train))
    warm.infer(train[:3])
    warm.word_probabilities(train[0][:3])
    warm.top_words(0, None)
    warmup = time.perf_counter() - t0
    del warm
    tm = model()
    tm.prepare(sorted(data["alphabet"]))
    cut = len(train) * args.late_after
    late = {w: i for w, i in data["first"].items() if i >= cut and w not in fixed}
    step = args.rank_every * tm.online.batch_size
    seconds, history, chunks = 0.0, [], []
    for c, (start, end) in enumerate(bounds):
        for a in range(start, end, step):
            t1 = time.perf_counter()
            tm.partial_fit(train[a:min(a + step, end)], seed=args.seed, corpus_size=len(train))
            seconds += time.perf_counter() - t1
            ranks = rankings(tm)
            seen = min(a + step, end)
            history.append({"documents_seen": seen, "ranks": {
                w: {k: r[w] for k, r in enumerate(ranks) if w in r} for w in late if late[w] < seen
                and any(w in r for r in ranks)}})
        top = {n: [sorted(r, key=r.get)[:n] for r in ranks] for n in TOP_LISTS}
        record = {"chunk": c, "documents": [start, end], "documents_seen": end, "seconds": seconds,
                  "new_types": sum(1 for i in data["first"].values() if start <= i < end),
                  "vocabulary_size": sum(tm.vocabulary_size().values()), "topics": top[max(TOP_LISTS)],
                  **{f"top{n}": top_list_counts(top[n], data["first_chunk"], c, fixed) for n in TOP_LISTS}}
        chunks.append(record)
        log(f"spacy_ag chunk {c} ({end} documents, {seconds:.1f}s): " + ", ".join(
            f"top {n}: {record[f'top{n}']['entered_this_chunk']['slots']} new, "
            f"{record[f'top{n}']['not_in_first_chunk']['slots']} not in chunk 0" for n in TOP_LISTS))
    out = {"seconds": seconds, "warmup_seconds": warmup, "chunks": chunks,
           "late_words": late_word_report(history, late, data["first_chunk"], len(train), args.examples),
           "dropped_tokens": tm.dropped_tokens, "heldout": {},
           "native": {"estimator": "TopicModel.heldout_loglik: theta fitted on all of a document's tokens, "
                                   "the same tokens scored (not document completion: not comparable)"}}
    for name, comp in data["completion"].items():
        theta = tm.infer(comp["observed"])
        words = sorted({w for d in comp["scored"] for w in d})
        index = {w: j for j, w in enumerate(words)}
        prob = tm.word_probabilities(words)
        out["heldout"][name] = [float(np.log(theta[d] @ prob[:, index[w]]))
                                for d, doc in enumerate(comp["scored"]) for w in doc]
        out["native"][name] = tm.heldout_loglik(data["sets"][name])
    out["config"] = {"model": "spacy_ag.topics.TopicModel (online variational InfVocLDA)",
                     "constructor": f"TopicModel(n_topics={args.topics}, "
                                    f"online=default_topic_settings(workers={args.workers}), "
                                    "inference='online', word_adapted=False)",
                     "alpha": tm.alpha, "a": tm.a, "b": tm.b, "local_iterations": tm.local_iterations,
                     "online": tm.online.to_dict(), "corpus_size": len(train),
                     "training": f"prepare(training stream's characters), then partial_fit of {args.rank_every} "
                                 f"minibatch(es) at a time over the stream in order, seed={args.seed}"}
    return out


def run_gensim(args, data, vocabulary: str) -> Dict:
    gensim = need("gensim")
    from gensim.corpora import Dictionary
    from gensim.models import LdaModel

    fixed = data["vocabularies"][vocabulary]
    defaults = TOPIC_ONLINE_DEFAULTS

    def mapped(doc: Sequence[str]) -> List[str]:
        return [w if w in fixed else UNK for w in doc]

    dictionary = Dictionary([sorted(fixed) + [UNK]])
    bow = [dictionary.doc2bow(mapped(d)) for d in data["train"]]
    lda = LdaModel(id2word=dictionary, num_topics=args.topics, chunksize=defaults["batch_size"], passes=1,
                   update_every=1, alpha=args.alpha, eta=None, decay=defaults["kappa"], offset=defaults["tau"],
                   iterations=50, gamma_threshold=0.001, eval_every=None, random_state=args.seed)
    t0 = time.perf_counter()
    lda.update(bow)
    seconds = time.perf_counter() - t0
    oov = Counter(w for d in data["train"] for w in d if w not in fixed)
    spell = SpellingModel(oov, data["alphabet"], exclude=fixed)
    phi = lda.get_topics()
    unk = dictionary.token2id[UNK]
    out = {"seconds": seconds, "heldout": {}}
    trained = lda.random_state.get_state()
    for name, comp in data["completion"].items():
        lda.random_state.set_state(trained)  # inference draws its starting point: each set from the same state
        gamma, _ = lda.inference([dictionary.doc2bow(mapped(d)) for d in comp["observed"]])
        theta = gamma / gamma.sum(axis=1, keepdims=True)
        scores = []
        for d, doc in enumerate(comp["scored"]):
            p = theta[d] @ phi
            scores.extend(float(np.log(p[dictionary.token2id[w]])) if w in fixed
                          else float(np.log(p[unk])) + spell.log_prob_outside(w) for w in doc)
        out["heldout"][name] = scores
    out["config"] = {
        "model": "gensim.models.LdaModel (online variational Bayes), fixed vocabulary plus <unk>",
        "version": gensim.__version__, "vocabulary": vocabulary, "vocabulary_size": len(fixed),
        "training_tokens_to_unk": sum(oov.values()),
        "training_tokens": sum(len(d) for d in data["train"]), "num_topics": args.topics,
        "chunksize": defaults["batch_size"], "passes": 1, "update_every": 1, "decay (kappa)": defaults["kappa"],
        "offset (tau)": defaults["tau"], "alpha": args.alpha, "eta": "gensim default (symmetric 1/K)",
        "iterations": 50, "gamma_threshold": 0.001, "random_state": args.seed,
        "training": "one update() over the training stream in order",
        "unk_probability_per_topic": [round(float(p), 4) for p in phi[:, unk]],
        "spelling_model": {"fitted_on": "training tokens mapped to <unk>", "stop": spell.stop,
                           "alphabet": len(spell.log_char), "mass_of_vocabulary": spell.excluded_mass}}
    return out


def run_system(name: str, args) -> Dict:
    data = load(args)
    t0 = time.perf_counter()
    out = run_spacy_ag(args, data) if name == "spacy_ag" else run_gensim(args, data, VOCABULARIES[name])
    out.update(system=name, wall_seconds=time.perf_counter() - t0, peak_rss_mb=peak_rss_mb())
    return out


# ---------------------------------------------------------------------------
# held-out figures


def per_token(scores: Sequence[float], mask: Sequence[bool]) -> Dict:
    picked = [s for s, m in zip(scores, mask) if m]
    return {"tokens": len(picked), "ll_per_token": sum(picked) / len(picked) if picked else None}


def heldout_table(results: Dict, data: Dict) -> Dict:
    """Per document set: token counts and, per system, per-token log likelihood overall and by class."""
    seen = data["first"]
    out = {}
    for name, comp in data["completion"].items():
        tokens = [w for d in comp["scored"] for w in d]
        observed = [w for d in comp["observed"] for w in d]
        block = {"documents": len(comp["scored"]), "scored_tokens": len(tokens), "observed_tokens": len(observed),
                 "unspellable_tokens": comp["unspellable_tokens"],
                 "unseen_tokens": sum(w not in seen for w in tokens),
                 "unseen_fraction": sum(w not in seen for w in tokens) / len(tokens),
                 "outside_vocabulary": {v: {"tokens": sum(w not in fixed for w in tokens),
                                            "fraction": sum(w not in fixed for w in tokens) / len(tokens),
                                            "fraction_of_all_tokens": sum(
                                                w not in fixed for w in tokens + observed) / len(tokens + observed)}
                                        for v, fixed in data["vocabularies"].items()},
                 "systems": {}}
        unseen = [w not in seen for w in tokens]
        for system, r in results.items():
            if "heldout" not in r:
                continue
            scores = r["heldout"][name]
            vocabularies = ([VOCABULARIES[system]] if system in VOCABULARIES else list(data["vocabularies"]))
            row = {"all": per_token(scores, [True] * len(scores)), "unseen": per_token(scores, unseen)}
            for v in vocabularies:
                fixed = data["vocabularies"][v]
                row[f"in_vocabulary_{v}"] = per_token(scores, [w in fixed for w in tokens])
                row[f"outside_vocabulary_{v}"] = per_token(scores, [w not in fixed for w in tokens])
            block["systems"][system] = row
        out[name] = block
    return out


def print_summary(results: Dict) -> None:
    spacy = results.get("spacy_ag", {})
    for c in spacy.get("chunks", []):
        log(f"chunk {c['chunk']}: " + "; ".join(
            f"top {n}: {c[f'top{n}']['entered_this_chunk']['slots']} entered, "
            f"{c[f'top{n}']['not_in_first_chunk']['slots']} not in chunk 0, "
            f"{c[f'top{n}']['outside_dict']['slots']} outside dict" for n in TOP_LISTS))
    for e in spacy.get("late_words", {}).get("examples", []):
        log(f"late word {e['word']}: first at {e['first_position']:.2f}, topic {e['best_topic']}, "
            f"final rank {e['final_rank']}, best {e['best_rank']}")
    for name, block in results["heldout"].items():
        log(f"held-out {name}: {block['documents']} documents, {block['scored_tokens']} scored tokens, "
            f"{block['unseen_tokens']} unseen; outside V: " + ", ".join(
                f"{v} {b['fraction']:.3f}" for v, b in block["outside_vocabulary"].items()))
        for system, row in block["systems"].items():
            log(f"  {system:<19} " + "  ".join(f"{k} {v['ll_per_token']:.4f} ({v['tokens']})"
                                               for k, v in row.items() if v["ll_per_token"] is not None))


def settings_block(args, data) -> Dict:
    return {
        "data": str(args.data), "dict": data["dict_path"], "limit": args.limit, "documents": len(data["docs"]),
        "train_documents": len(data["train"]), "train_tokens": sum(len(d) for d in data["train"]),
        "heldout_documents": len(data["heldout"]), "heldout_fraction": args.heldout_fraction,
        "heldout_split": "the last documents of the corpus, in order", "chunks": data["bounds"],
        "batch_size": TOPIC_ONLINE_DEFAULTS["batch_size"], "topics": args.topics, "seed": args.seed,
        "workers": args.workers, "rank_every_minibatches": args.rank_every, "late_after": args.late_after,
        "vocabulary_sizes": {v: len(s) for v, s in data["vocabularies"].items()},
        "stream_types": len(data["first"]),
        "document_sets": {name: f"{len(docs)} held-out documents: " + (
            "every one of 2 or more tokens" if name == "all" else
            f"the {args.select_fraction} of them (2+ tokens) with the largest fraction of tokens outside the "
            f"{name[len('outside_'):]} vocabulary") for name, docs in data["sets"].items()},
        "estimator": "document completion: theta from each document's first floor(n/2) tokens (the system's own "
                     "inference), log p(w | d) of every token of the rest, divided by the number of scored "
                     "tokens; fixed-vocabulary systems: tokens outside V score log p(<unk> | d) + log "
                     "p_spell(w | w not in V) (SpellingModel, fitted on the training tokens mapped to <unk>)",
        "versions": versions()}


# ---------------------------------------------------------------------------
# driver


def run_child(args, only: str) -> Dict:
    env = dict(os.environ)
    env.update({k: str(args.workers) for k in THREAD_VARIABLES})
    return _base.run_child(args, only, script=__file__, env=env)


def plot(results: Dict, path: str) -> None:
    plt = _base.pyplot()
    if plt is None:
        return
    spacy = results["spacy_ag"]
    fig, (left, right) = plt.subplots(1, 2, figsize=(12, 4.5))
    n_train = results["settings"]["train_documents"]
    for e in spacy["late_words"]["examples"]:
        points = [(seen / n_train, rank) for seen, rank in e["trajectory"] if rank is not None]
        line, = left.plot(*zip(*points), marker=".", ms=3, label=f"{e['word']} (topic {e['best_topic']})")
        left.axvline(e["first_position"], color=line.get_color(), ls=":", lw=0.8)
    left.set_yscale("log")
    left.invert_yaxis()
    left.set_xlabel("fraction of the stream seen (dotted: first occurrence)")
    left.set_ylabel("rank in its topic (E_q[pi])")
    left.grid(alpha=0.3)
    left.legend(fontsize=8)
    chunks = spacy["chunks"][1:] or spacy["chunks"]  # in chunk 0 every word is first seen
    x = np.array([c["chunk"] for c in chunks])
    for offset, (n, key, label) in zip((-0.3, -0.1, 0.1, 0.3), (
            (10, "not_in_first_chunk", "top 10: not in chunk 0"), (20, "not_in_first_chunk", "top 20: not in chunk 0"),
            (10, "entered_this_chunk", "top 10: first seen in this chunk"),
            (20, "entered_this_chunk", "top 20: first seen in this chunk"))):
        right.bar(x + offset, [c[f"top{n}"][key]["slots"] for c in chunks], width=0.2, label=label)
    right.set_xticks(x)
    right.set_xlabel("chunk of the stream")
    right.set_ylabel("top-list slots (of K x n)")
    right.grid(alpha=0.3, axis="y")
    right.legend(fontsize=8)
    s = results["settings"]
    fig.suptitle(f"de-news in order: K = {s['topics']}, {s['train_documents']} training documents, seed {s['seed']}")
    fig.tight_layout()
    Path(path).parent.mkdir(parents=True, exist_ok=True)
    fig.savefig(path, dpi=120)
    log(f"wrote {path}")


def parse_args(argv: Optional[Sequence[str]] = None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--data", default=str(DENEWS), help="one document per line, in stream order")
    ap.add_argument("--dict", default=None, help="the fixed vocabulary (default: dict.dat beside --data)")
    ap.add_argument("--json", required=True)
    ap.add_argument("--plot", default=None)
    ap.add_argument("--systems", default=",".join(SYSTEMS))
    ap.add_argument("--topics", type=int, default=20)
    ap.add_argument("--seed", type=int, default=1)
    ap.add_argument("--limit", type=int, default=0, help="keep the first N documents (0: all)")
    ap.add_argument("--chunks", type=int, default=10)
    ap.add_argument("--heldout-fraction", type=float, default=0.1, help="the last documents, held out")
    ap.add_argument("--select-fraction", type=float, default=0.2,
                    help="held-out documents scored: this fraction with the most tokens outside dict.dat")
    ap.add_argument("--rank-every", type=int, default=2, help="minibatches between rank readings")
    ap.add_argument("--late-after", type=float, default=0.3, help="late words: first seen after this fraction")
    ap.add_argument("--examples", type=int, default=6, help="late words with rank trajectories")
    ap.add_argument("--alpha", type=float, default=0.1, help="gensim's alpha (spacy-ag's default)")
    ap.add_argument("--workers", type=int, default=1, help="threads of every system")
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
    t0 = time.perf_counter()
    data = load(args)
    results: Dict = {}
    for name in systems:
        log(f"--- {name}")
        results[name] = run_child(args, name)
    heldout = heldout_table(results, data)
    for r in results.values():
        r.pop("heldout", None)  # per-token scores: summarised in heldout
    results.update(heldout=heldout, settings=settings_block(args, data), wall_seconds=time.perf_counter() - t0)
    write_json(results, args.json)
    log(f"wrote {args.json}")
    print_summary(results)
    for name in systems:
        if "seconds" not in results[name]:
            log(f"{name}: {results[name].get('skipped') or results[name].get('error')}")
    if args.plot and "chunks" in results.get("spacy_ag", {}):
        plot(results, args.plot)
    return 0


if __name__ == "__main__":
    sys.exit(main())
