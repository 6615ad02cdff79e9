"""Benchmark of the spaCy segmenter tokenizer against sentencepiece (not a test).

    python benchmarks/segmenter.py \
        --raw ../shared/data/sighan2005/testing/pku_test.utf8 \
        --gold ../shared/data/sighan2005/gold/pku_test_gold.utf8 \
        --grammar unigram --iterations 200 --seed 0 --json /tmp/bench/segmenter-unigram.json

What it does (issue 3, item 10):

1. Trains ``spacy-ag.Segmenter.v1`` without supervision: a blank ``zh`` (or
   ``--lang xx``) pipeline whose ``[nlp.tokenizer]`` is the segmenter is
   initialized on the raw lines (their gold segmentation is never seen).
   Punctuation is a hard boundary (``boundary_chars = null``, i.e.
   spacy_ag.corpus.DEFAULT_PUNCTUATION, unless ``--boundary-chars``).
   ``train_seconds`` is the wall time of ``nlp.initialize``; numba
   compilation is excluded, because a child process first compiles every
   kernel into a private, initially empty cache (``numba.compile_seconds``).
2. Saves the pipeline to a temporary directory and measures ``load_seconds``
   in a fresh process: ``spacy.load`` of the saved pipeline plus segmenting
   the first text (``import spacy`` is reported apart, as
   ``import_seconds``). That process shares the warm cache, so numba loads
   the kernels rather than compiling them; ``numba.load_warm`` says how many
   kernels came from the cache (hits) and how many were compiled (misses).
   ``load_seconds_cold_cache`` repeats this with an empty cache, i.e. with
   the segmentation kernels compiled during the load.
3. Segments the raw text with ``nlp.pipe`` in this process (one core; the
   kernels are single-threaded). ``chars_per_second`` = characters of the
   input without line ends / wall seconds of the fastest of ``--repeats``
   passes (the machine may be shared; ``chars_per_cpu_second`` uses process
   CPU time instead, and ``load_average`` is recorded). For the profile, the
   same figure is given for ``Segmenter.pipe`` (one engine call per batch)
   and for the engine alone (``AdaptorGrammar.segment`` on all lines, no
   Doc objects). ``--profile`` adds the top functions of a cProfile run.
4. Scores the Docs against the gold file with
   spacy_ag.evaluation.segmentation_scores (whitespace tokens dropped):
   token, boundary and lexicon (type) P/R/F, with punctuation tokens and
   without them (``no_punct``: one-character tokens of the boundary set left
   out of the token and lexicon counts; boundaries are unaffected).
5. sentencepiece (not a spacy-ag dependency; ``pip install sentencepiece``),
   imported lazily: a unigram model per ``--sp-vocab-sizes`` entry, trained
   on the same raw text. Fairness: the text is cut exactly as the segmenter
   cuts it (at whitespace and at every boundary character, each of which is
   a word of its own), and sentencepiece is trained on and applied to the
   chunks between the cuts, one chunk per training line. We chose chunks
   over ``user_defined_symbols`` because chunks give both systems the very
   same units to segment. Chunks contain no whitespace, and
   ``add_dummy_prefix = false`` (with ``split_by_whitespace = true``)
   means no ``▁`` marker appears, so every piece is a word (any stray ``▁``
   would be stripped). ``normalization_rule_name = identity`` keeps
   full-width characters as they are (the default NFKC would rewrite them
   and the pieces would no longer spell the text), and
   ``character_coverage = 1.0`` puts every character into the vocabulary,
   as the segmenter knows every character of its training text. Sizes that
   sentencepiece refuses (e.g. a vocabulary smaller than the character set)
   are recorded with its error message. Speed: chunking plus
   ``encode(..., num_threads=1)`` plus reassembly into word lists;
   ``nlp_pipe_chars_per_second`` (best size) wraps the same code as a spaCy
   tokenizer and runs ``nlp.pipe``, like the segmenter's figure.
6. ``--pkuseg``: spaCy's own ``zh`` pkuseg segmenter (``pip install
   spacy-pkuseg``). Its models are downloaded from GitHub on first use, so
   without internet it is recorded as ``"unavailable: <reason>"``;
   ``--pkuseg-model DIR`` points at a local model instead. It is a
   supervised model: it is reported for speed and reference only.

``char_baseline`` scores one token per character (spaCy's default ``zh``
segmenter, ``segmenter = "char"``). ``peak_rss_mb`` is this process's peak
(sentencepiece included); ``peak_rss_mb_segmenter`` is the peak before
sentencepiece started.
"""
from __future__ import annotations

import argparse
import contextlib
import cProfile
import json
import os
import pstats
import resource
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional, Sequence, Tuple

ROOT = Path(__file__).resolve().parent.parent
INSTALL_SENTENCEPIECE = "sentencepiece is not installed (it is not a spacy-ag dependency): pip install sentencepiece"
INSTALL_PKUSEG = "spacy-pkuseg is not installed: pip install spacy-pkuseg"

# Child process: compile every kernel that training and segmentation use, into
# the (empty) cache named by NUMBA_CACHE_DIR. argv: raw path, lang, tokenizer config (JSON).
WARM_UP = r"""
import json, sys, time
from spacy_ag.corpus import iter_lines
started = time.perf_counter()
import spacy
from spacy.training import Example
path, lang, cfg = sys.argv[1], sys.argv[2], json.loads(sys.argv[3])
texts = [t for _, t in iter_lines(path) if t.strip()][:40]
cfg.update(iterations=2)
nlp = spacy.blank(lang, config={"nlp": {"tokenizer": cfg}})
nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in texts])
list(nlp.pipe(texts))
list(nlp.tokenizer.pipe(texts))
import resource
print(json.dumps({"seconds": time.perf_counter() - started,
                  "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""

# Child process: spacy.load + the first text, then the numba cache statistics.
# argv: pipeline dir, file holding the first text.
LOAD = r"""
import json, sys, time
t0 = time.perf_counter()
import spacy
t1 = time.perf_counter()
nlp = spacy.load(sys.argv[1])
t2 = time.perf_counter()
text = open(sys.argv[2], encoding="utf8").read()
doc = nlp(text)
t3 = time.perf_counter()
import importlib, pkgutil, resource
from numba.core.dispatcher import Dispatcher
import spacy_ag.core as core
hits, misses, compiled, loaded, seen = 0, 0, [], [], set()
for info in pkgutil.iter_modules(core.__path__):
    mod = sys.modules.get("spacy_ag.core." + info.name)
    for obj in vars(mod).values() if mod else ():
        if isinstance(obj, Dispatcher) and id(obj) not in seen and obj.signatures:
            seen.add(id(obj))
            st = obj.stats
            h, m = sum(st.cache_hits.values()), sum(st.cache_misses.values())
            hits, misses = hits + h, misses + m
            name = obj.py_func.__module__.rsplit(".", 1)[-1] + "." + obj.py_func.__name__
            (compiled if m else loaded).append(name)
print(json.dumps({
    "import_seconds": t1 - t0, "spacy_load_seconds": t2 - t1, "first_text_seconds": t3 - t2,
    "load_seconds": t3 - t1, "first_text_tokens": [t.text for t in doc],
    "numba": {"cache_hits": hits, "cache_misses": misses, "kernels_from_cache": sorted(loaded),
              "kernels_compiled": sorted(compiled)},
    "peak_rss_mb": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024}))
"""


def peak_rss_mb() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024


def log(msg: str) -> None:
    print(f"[{time.strftime('%H:%M:%S')}] {msg}", file=sys.stderr, flush=True)


def run_child(code: str, args: Sequence[str], cache_dir: str) -> Tuple[Dict, float]:
    """Run a child script with its own numba cache; (its last stdout line as JSON, wall seconds)."""
    started = time.perf_counter()
    done = subprocess.run([sys.executable, "-c", code, *args], capture_output=True, text=True,
                          env={**os.environ, "NUMBA_CACHE_DIR": cache_dir})
    wall = time.perf_counter() - started
    if done.returncode != 0:
        raise RuntimeError(f"child process failed ({done.returncode}):\n{done.stderr[-3000:]}")
    return json.loads(done.stdout.strip().splitlines()[-1]), wall


def cache_files(cache_dir: str) -> int:
    return sum(1 for p in Path(cache_dir).rglob("*") if p.suffix in (".nbi", ".nbc"))


def chunk_line(text: str, boundary: frozenset) -> List[Tuple[str, bool]]:
    """Cut a line as the segmenter does: at whitespace (dropped) and at boundary characters
    (each a one-character chunk flagged True). Other chunks are flagged False."""
    out: List[Tuple[str, bool]] = []
    start = None
    for i, c in enumerate(text):
        if c.isspace() or c in boundary:
            if start is not None:
                out.append((text[start:i], False))
                start = None
            if not c.isspace():
                out.append((c, True))
        elif start is None:
            start = i
    if start is not None:
        out.append((text[start:], False))
    return out


def scores_both(predicted, gold, boundary) -> Dict[str, Dict[str, float]]:
    """token/boundary/lexicon P/R/F with and without punctuation tokens."""
    from spacy_ag.evaluation import segmentation_scores

    def pick(s: Dict[str, float]) -> Dict[str, float]:
        out = {}
        for ours, theirs in (("token", "token"), ("boundary", "boundary"), ("lexicon", "type")):
            for m in "prf":
                out[f"{ours}_{m}"] = s[f"{theirs}_{m}"]
        out.update({k: s[k] for k in ("n_pred_tokens", "n_gold_tokens", "n_correct_tokens",
                                      "n_pred_types", "n_gold_types")})
        return out

    return {"all": pick(segmentation_scores(predicted, gold)),
            "no_punct": pick(segmentation_scores(predicted, gold, exclude=boundary))}


def timed_passes(fn: Callable[[], object], repeats: int) -> Dict:
    """Run fn repeats times; wall and CPU seconds of each pass, and the first result."""
    walls, cpus, first = [], [], None
    for r in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
        if r == 0:
            first = result
    return {"walls": walls, "cpus": cpus, "result": first}


def speed(n_chars: int, passes: Dict) -> Dict[str, float]:
    return {"chars_per_second": n_chars / min(passes["walls"]),
            "chars_per_cpu_second": n_chars / min(passes["cpus"]),
            "seconds_per_pass": passes["walls"]}


def fit_progress(every: int):
    """A context manager that prints the sampler's progress while the segmenter fits.

    Uses spacy_ag.components.fitting.observe_fitting where it exists; otherwise it
    wraps AdaptorGrammar.fit to add a trace callback (benchmark only)."""

    def report(line):
        it = line.get("iteration", 0)
        if every and (it == 1 or it % every == 0):
            log(f"  sweep {it}: {line.get('seconds', 0):.2f} s, "
                f"log posterior {line.get('log_posterior', float('nan')):.1f}")

    try:
        from spacy_ag.components.fitting import observe_fitting
    except ImportError:
        return _wrapped_fit(report)
    return observe_fitting(report)


@contextlib.contextmanager
def _wrapped_fit(report):
    from spacy_ag import model as ag_model

    original = ag_model.AdaptorGrammar.fit

    def fit(self, corpus, **kwargs):
        outer = kwargs.get("callback")

        def both(line):
            if outer is not None:
                outer(line)
            report(line)

        kwargs["callback"] = both
        return original(self, corpus, **kwargs)

    ag_model.AdaptorGrammar.fit = fit
    try:
        yield
    finally:
        ag_model.AdaptorGrammar.fit = original


def profile_top(fn: Callable[[], object], n: int = 15) -> List[Dict]:
    prof = cProfile.Profile()
    prof.enable()
    fn()
    prof.disable()
    stats = pstats.Stats(prof)
    total = sum(v[2] for v in stats.stats.values())
    rows = []
    for (file, line, name), (cc, nc, tt, ct, _) in stats.stats.items():
        rows.append({"function": f"{Path(file).name}:{line}({name})", "calls": nc,
                     "tottime": tt, "cumtime": ct, "tottime_share": tt / total if total else 0.0})
    rows.sort(key=lambda r: -r["tottime"])
    return rows[:n]


# ------------------------------------------------------------------ sentencepiece


def sp_words(sp, lines: Sequence[str], boundary: frozenset) -> Tuple[List[List[str]], int]:
    """Words of every line: chunks encoded in one call, boundary characters as words.
    Returns the words and the number of chunks whose pieces did not spell the chunk
    (those fall back to one word per character; expected 0)."""
    plans, chunks = [], []
    for text in lines:
        plan = []
        for chunk, is_boundary in chunk_line(text, boundary):
            if is_boundary:
                plan.append(chunk)
            else:
                plan.append(len(chunks))
                chunks.append(chunk)
        plans.append(plan)
    encoded = sp.encode(chunks, out_type=str, num_threads=1) if chunks else []
    bad = 0
    out = []
    for plan in plans:
        words: List[str] = []
        for item in plan:
            if isinstance(item, str):
                words.append(item)
                continue
            pieces = [p.replace("\u2581", "") for p in encoded[item]]
            pieces = [p for p in pieces if p]
            if "".join(pieces) != chunks[item]:
                bad += 1
                pieces = list(chunks[item])
            words.extend(pieces)
        out.append(words)
    return out, bad


def run_sentencepiece(lines: Sequence[str], gold, boundary: frozenset, sizes: Sequence[int],
                      seed: int, n_chars: int, repeats: int, workdir: Path, lang: str) -> Dict:
    try:
        import sentencepiece as spm
    except ImportError:
        log(INSTALL_SENTENCEPIECE)
        return {"unavailable": INSTALL_SENTENCEPIECE}
    train_file = workdir / "sp-train.txt"
    with open(train_file, "w", encoding="utf8") as f:
        for text in lines:
            for chunk, is_boundary in chunk_line(text, boundary):
                if not is_boundary:
                    f.write(chunk + "\n")
    max_len = max((len(c.encode("utf8")) for t in lines for c, b in chunk_line(t, boundary) if not b),
                  default=1)
    if hasattr(spm, "set_random_generator_seed"):
        spm.set_random_generator_seed(seed)
    options = dict(model_type="unigram", character_coverage=1.0, add_dummy_prefix=False,
                   split_by_whitespace=True, remove_extra_whitespaces=False,
                   normalization_rule_name="identity", split_digits=False, byte_fallback=False,
                   bos_id=-1, eos_id=-1, pad_id=-1, unk_id=0, num_threads=1, minloglevel=2,
                   max_sentence_length=max(4192, max_len + 16))
    per_size = []
    for size in sizes:
        prefix = workdir / f"sp-{size}"
        entry: Dict = {"vocab_size": size}
        log(f"sentencepiece: vocabulary {size}")
        started = time.perf_counter()
        try:
            spm.SentencePieceTrainer.train(input=str(train_file), model_prefix=str(prefix),
                                           vocab_size=size, **options)
        except Exception as err:  # sentencepiece raises RuntimeError with its own message
            entry["skipped"] = f"{type(err).__name__}: {err}".strip()
            log(f"  refused: {entry['skipped']}")
            per_size.append(entry)
            continue
        entry["train_seconds"] = time.perf_counter() - started
        sp = spm.SentencePieceProcessor(model_file=str(prefix) + ".model")
        entry["pieces"] = sp.get_piece_size()
        passes = timed_passes(lambda: sp_words(sp, lines, boundary), repeats)
        words, bad = passes["result"]
        entry["unspelled_chunks"] = bad
        entry.update(speed(n_chars, passes))
        sc = scores_both(words, gold, boundary)
        entry.update(token_f=sc["all"]["token_f"], boundary_f=sc["all"]["boundary_f"],
                     lexicon_f=sc["all"]["lexicon_f"], scores=sc)
        entry["_processor"] = sp
        log(f"  token F {entry['token_f']:.4f}, boundary F {entry['boundary_f']:.4f}, "
            f"{entry['chars_per_second']:,.0f} chars/s")
        per_size.append(entry)
    done = [e for e in per_size if "token_f" in e]
    out: Dict = {"version": getattr(spm, "__version__", None), "options": options,
                 "training_chunks": sum(1 for t in lines for c, b in chunk_line(t, boundary) if not b)}
    if done:
        best = max(done, key=lambda e: e["token_f"])
        out.update(best_token_f=best["token_f"], vocab_size=best["vocab_size"],
                   pieces=best["pieces"], boundary_f=best["boundary_f"],
                   chars_per_second=best["chars_per_second"])
        out["nlp_pipe_chars_per_second"] = sp_nlp_pipe_speed(best["_processor"], lines, boundary,
                                                             n_chars, repeats, lang)
    else:
        out["best_token_f"] = None
    for e in per_size:
        e.pop("_processor", None)
    out["per_size"] = per_size
    return out


def sp_nlp_pipe_speed(sp, lines, boundary, n_chars, repeats, lang) -> float:
    """The sentencepiece segmentation as a spaCy tokenizer, timed with nlp.pipe."""
    import spacy
    from spacy.tokens import Doc
    from spacy_ag.components.segmenter import words_and_spaces

    nlp = spacy.blank(lang)

    class SentencePieceTokenizer:
        def __init__(self, vocab):
            self.vocab = vocab

        def __call__(self, text):
            words, spaces = words_and_spaces(sp_words(sp, [text], boundary)[0][0], text)
            return Doc(self.vocab, words=words, spaces=spaces)

    nlp.tokenizer = SentencePieceTokenizer(nlp.vocab)
    passes = timed_passes(lambda: list(nlp.pipe(lines)), repeats)
    return n_chars / min(passes["walls"])


# ------------------------------------------------------------------ pkuseg


def run_pkuseg(lines, gold, boundary, n_chars, repeats, model: Optional[str]) -> Dict:
    try:
        import spacy_pkuseg  # noqa: F401
    except ImportError:
        return {"unavailable": INSTALL_PKUSEG}
    import spacy

    previous = socket.getdefaulttimeout()
    socket.setdefaulttimeout(30)  # the model download must not hang an offline machine
    try:
        nlp = spacy.blank("zh", config={"nlp": {"tokenizer": {"segmenter": "pkuseg"}}})
        nlp.tokenizer.initialize(pkuseg_model=model or "spacy_ontonotes")
    except Exception as err:
        reason = f"{type(err).__name__}: {err}"
        return {"unavailable": reason if len(reason) < 400 else reason[:400] + " ..."}
    finally:
        socket.setdefaulttimeout(previous)
    passes = timed_passes(lambda: list(nlp.pipe(lines)), repeats)
    words = [[t.text for t in doc if not t.is_space] for doc in passes["result"]]
    sc = scores_both(words, gold, boundary)
    return {"model": model or "spacy_ontonotes", **speed(n_chars, passes),
            "token_f": sc["all"]["token_f"], "boundary_f": sc["all"]["boundary_f"], "scores": sc}


# ------------------------------------------------------------------ main


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--raw", required=True, help="raw (unsegmented) text, one utterance per line")
    p.add_argument("--gold", required=True, help="gold segmentation of the same lines")
    p.add_argument("--grammar", default="unigram", help="unigram | colloc | a grammar file")
    p.add_argument("--json", required=True, help="output file")
    p.add_argument("--iterations", type=int, default=200)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lang", default="zh", choices=["zh", "xx"])
    p.add_argument("--boundary-chars", default=None,
                   help="hard-boundary characters (default: spacy_ag.corpus.DEFAULT_PUNCTUATION)")
    p.add_argument("--default-a", type=float, default=1e-4)
    p.add_argument("--default-b", type=float, default=1e4)
    p.add_argument("--sp-vocab-sizes", default="1000,2000,4000,8000,16000")
    p.add_argument("--no-sentencepiece", action="store_true")
    p.add_argument("--pkuseg", action="store_true", help="also try spaCy's zh pkuseg segmenter")
    p.add_argument("--pkuseg-model", default=None, help="local pkuseg model (default: spacy_ontonotes)")
    p.add_argument("--repeats", type=int, default=3, help="timed passes; the fastest counts")
    p.add_argument("--numba-cache-dir", default=None,
                   help="numba cache for the whole run (default: a fresh, empty temporary directory)")
    p.add_argument("--save-pipeline", default=None, help="keep the trained pipeline here")
    p.add_argument("--no-cold-load", action="store_true", help="skip the empty-cache load")
    p.add_argument("--profile", action="store_true", help="cProfile one nlp.pipe pass")
    p.add_argument("--progress-every", type=int, default=10)
    args = p.parse_args()

    load_start = os.getloadavg()
    workdir = Path(tempfile.mkdtemp(prefix="spacy-ag-bench-"))
    cache_dir = args.numba_cache_dir or str(workdir / "numba-cache")
    Path(cache_dir).mkdir(parents=True, exist_ok=True)
    os.environ["NUMBA_CACHE_DIR"] = cache_dir  # before numba is imported
    cache_files_before = cache_files(cache_dir)

    import spacy
    from spacy.training import Example
    from spacy_ag.corpus import DEFAULT_PUNCTUATION, iter_lines
    from spacy_ag.evaluation import read_segmented

    boundary = frozenset(DEFAULT_PUNCTUATION if args.boundary_chars is None else args.boundary_chars)
    lines = [t for _, t in iter_lines(args.raw)]
    gold = read_segmented(args.gold)
    if len(lines) != len(gold):
        sys.exit(f"error: {args.raw} has {len(lines)} lines but {args.gold} has {len(gold)}")
    for i, (t, g) in enumerate(zip(lines, gold), 1):
        if "".join(t.split()) != "".join(g):
            sys.exit(f"error: line {i}: raw and gold characters differ")
    n_chars = sum(len(t) for t in lines)
    first_text = next(t for t in lines if t.strip())
    tok_cfg = {"@tokenizers": "spacy-ag.Segmenter.v1", "grammar": args.grammar,
               "iterations": args.iterations, "seed": args.seed, "boundary_chars": args.boundary_chars,
               "default_a": args.default_a, "default_b": args.default_b}

    # 1. compile every kernel in a child (empty cache -> compile; given warm cache -> load)
    log(f"numba: compiling (or loading) every kernel in a child process, cache {cache_dir}")
    warm, compile_wall = run_child(WARM_UP, [args.raw, args.lang, json.dumps(tok_cfg)], cache_dir)
    numba_info: Dict = {"cache_dir": cache_dir, "cache_files_before": cache_files_before,
                        "compile_seconds": compile_wall, "compile_peak_rss_mb": warm["peak_rss_mb"],
                        "cache_files_after_compile": cache_files(cache_dir)}

    # 2. train
    nlp = spacy.blank(args.lang, config={"nlp": {"tokenizer": dict(tok_cfg)}})
    log(f"training {args.grammar} for {args.iterations} iterations on {len(lines)} lines, {n_chars} chars")
    with fit_progress(args.progress_every):
        started = time.perf_counter()
        nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in lines])
        train_seconds = time.perf_counter() - started
    log(f"trained in {train_seconds:.1f} s")
    model = nlp.tokenizer.model
    trace = model.trace
    sweep_seconds = [l["seconds"] for l in trace if "seconds" in l]
    final = trace[-1] if trace else {}

    # 3. save; load in fresh processes (warm cache, then an empty one)
    pipeline_dir = Path(args.save_pipeline) if args.save_pipeline else workdir / "pipeline"
    nlp.to_disk(pipeline_dir)
    pipeline_mb = sum(f.stat().st_size for f in pipeline_dir.rglob("*") if f.is_file()) / 2 ** 20
    text_file = workdir / "first-text.txt"
    text_file.write_text(first_text, encoding="utf8")
    log("loading the saved pipeline in a fresh process (warm numba cache)")
    warm_load, _ = run_child(LOAD, [str(pipeline_dir), str(text_file)], cache_dir)
    numba_info["load_warm"] = warm_load["numba"]
    cold_load = None
    if not args.no_cold_load:
        log("loading the saved pipeline in a fresh process (empty numba cache)")
        cold_cache = workdir / "numba-cache-cold"
        cold_cache.mkdir()
        cold_load, _ = run_child(LOAD, [str(pipeline_dir), str(text_file)], str(cold_cache))
        numba_info["load_cold"] = cold_load["numba"]
    first_tokens = [t.text for t in nlp(first_text)]

    # 4. speed and accuracy
    log("segmenting with nlp.pipe")
    passes = timed_passes(lambda: list(nlp.pipe(lines)), args.repeats)
    docs = passes["result"]
    text_mismatch = sum(1 for d, t in zip(docs, lines) if d.text != t)
    predicted = [[t.text for t in d if not t.is_space] for d in docs]
    seg_speed = speed(n_chars, passes)
    tok_pipe = speed(n_chars, timed_passes(lambda: list(nlp.tokenizer.pipe(lines)), args.repeats))
    engine = speed(n_chars, timed_passes(lambda: model.segment(lines), args.repeats))
    scores = scores_both(predicted, gold, boundary)
    log(f"token F {scores['all']['token_f']:.4f}, boundary F {scores['all']['boundary_f']:.4f}, "
        f"{seg_speed['chars_per_second']:,.0f} chars/s (nlp.pipe)")
    profile = profile_top(lambda: list(nlp.pipe(lines))) if args.profile else None
    char_words = [[w for c, b in chunk_line(t, boundary) for w in ([c] if b else list(c))] for t in lines]
    char_baseline = scores_both(char_words, gold, boundary)
    rss_segmenter = peak_rss_mb()

    # 5. sentencepiece, 6. pkuseg
    sizes = [int(s) for s in args.sp_vocab_sizes.split(",") if s.strip()]
    sp = ({"unavailable": "skipped (--no-sentencepiece)"} if args.no_sentencepiece else
          run_sentencepiece(lines, gold, boundary, sizes, args.seed, n_chars, args.repeats, workdir, args.lang))
    pkuseg = None
    if args.pkuseg:
        log("pkuseg")
        pkuseg = run_pkuseg(lines, gold, boundary, n_chars, args.repeats, args.pkuseg_model)
        if "unavailable" in pkuseg:
            pkuseg = f"unavailable: {pkuseg['unavailable']}"

    out = {
        "raw": args.raw, "gold": args.gold, "grammar": args.grammar, "iterations": args.iterations,
        "seed": args.seed, "lang": args.lang,
        "boundary_chars": "DEFAULT_PUNCTUATION" if args.boundary_chars is None else args.boundary_chars,
        "n_lines": len(lines), "n_chars": n_chars,
        "token_f": scores["all"]["token_f"], "token_p": scores["all"]["token_p"],
        "token_r": scores["all"]["token_r"],
        "boundary_f": scores["all"]["boundary_f"], "boundary_p": scores["all"]["boundary_p"],
        "boundary_r": scores["all"]["boundary_r"],
        "lexicon_f": scores["all"]["lexicon_f"], "lexicon_p": scores["all"]["lexicon_p"],
        "lexicon_r": scores["all"]["lexicon_r"],
        "scores": scores,
        "chars_per_second": seg_speed["chars_per_second"],
        "chars_per_cpu_second": seg_speed["chars_per_cpu_second"],
        "nlp_pipe_seconds": seg_speed["seconds_per_pass"],
        "tokenizer_pipe_chars_per_second": tok_pipe["chars_per_second"],
        "engine_chars_per_second": engine["chars_per_second"],
        "doc_text_mismatches": text_mismatch,
        "load_seconds": warm_load["load_seconds"],
        "load": {k: warm_load[k] for k in ("import_seconds", "spacy_load_seconds", "first_text_seconds",
                                           "peak_rss_mb")},
        "load_same_tokens": warm_load["first_text_tokens"] == first_tokens,
        "load_seconds_cold_cache": cold_load["load_seconds"] if cold_load else None,
        "train_seconds": train_seconds,
        "seconds_per_sweep_median": statistics.median(sweep_seconds) if sweep_seconds else None,
        "final_log_posterior": final.get("log_posterior"),
        "numba": numba_info,
        "pipeline_mb": pipeline_mb,
        "char_baseline": {"token_f": char_baseline["all"]["token_f"],
                          "boundary_f": char_baseline["all"]["boundary_f"], "scores": char_baseline},
        "sentencepiece": sp,
        "pkuseg": pkuseg if args.pkuseg else "not requested (--pkuseg)",
        "profile_nlp_pipe": profile,
        "peak_rss_mb": peak_rss_mb(),
        "peak_rss_mb_segmenter": rss_segmenter,
        "load_average": {"start": load_start, "end": os.getloadavg()},
        "cpu_count": os.cpu_count(),
        "versions": {"python": sys.version.split()[0], "spacy": spacy.__version__,
                     "numba": __import__("numba").__version__},
    }
    Path(args.json).parent.mkdir(parents=True, exist_ok=True)
    Path(args.json).write_text(json.dumps(out, indent=2, ensure_ascii=False))
    shutil.rmtree(workdir, ignore_errors=True)  # the cache too, unless --numba-cache-dir put it elsewhere
    summary = {k: out[k] for k in ("grammar", "iterations", "token_f", "boundary_f", "chars_per_second",
                                   "load_seconds", "load_seconds_cold_cache", "train_seconds", "peak_rss_mb")}
    summary["sentencepiece_best_token_f"] = sp.get("best_token_f")
    summary["sentencepiece_vocab_size"] = sp.get("vocab_size")
    print(json.dumps(summary))


if __name__ == "__main__":
    main()
