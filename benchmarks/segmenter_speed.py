"""Annotation speed of a saved segmenter pipeline, and a digest of its output (not a test).

    # once: train and save a pipeline (the same model serves every later measurement)
    python benchmarks/segmenter_speed.py --raw pku_test.utf8 --train unigram --iterations 50 \
        --save /tmp/bench/unigram
    # measure: run once per code version, alternating, under the same load
    python benchmarks/segmenter_speed.py --raw pku_test.utf8 --pipeline /tmp/bench/unigram \
        --repeats 5 --json /tmp/bench/unigram-speed.json

Rates are characters of the input (line ends excluded) per wall second of the
fastest of ``--repeats`` passes, for ``nlp.pipe``, ``nlp.tokenizer.pipe`` and
the engine alone (``AdaptorGrammar.segment`` on all lines, no Doc objects);
``chars_per_cpu_second`` uses process CPU time, and the load average is
recorded, because the machine may be shared. ``decoded_texts`` counts the
chunks decoded on the word lattice and by the general chart (absent in
versions without the lattice). ``digest`` is the SHA-256 of
every Doc's tokens and trailing spaces: two code versions decode the same
model identically exactly when their digests agree. ``--no-entry-points``
skips spaCy's entry-point factories, for an environment whose installed
package metadata names modules that this checkout lacks.
"""
from __future__ import annotations

import argparse
import hashlib
import json
import os
import time
from pathlib import Path


def best_pass(fn, repeats):
    """Wall and CPU seconds of the fastest of `repeats` calls of fn, and its result."""
    walls, cpus, result = [], [], None
    for _ in range(repeats):
        w0, c0 = time.perf_counter(), time.process_time()
        result = fn()
        walls.append(time.perf_counter() - w0)
        cpus.append(time.process_time() - c0)
    return min(walls), min(cpus), result


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("--raw", required=True, help="raw text, one text per line")
    p.add_argument("--pipeline", help="a saved pipeline to measure")
    p.add_argument("--train", help="grammar to train (unigram, colloc, ...) and save with --save")
    p.add_argument("--save", help="where --train saves the pipeline")
    p.add_argument("--iterations", type=int, default=50)
    p.add_argument("--seed", type=int, default=0)
    p.add_argument("--lang", default="zh")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json", help="output file (measuring)")
    p.add_argument("--no-entry-points", action="store_true")
    args = p.parse_args()

    import spacy
    if args.no_entry_points:
        spacy.util.registry._entry_point_factories.entry_points = False
    import spacy_ag.components  # noqa: F401  (registers the segmenter)
    from spacy.training import Example

    lines = Path(args.raw).read_text(encoding="utf8").splitlines()
    if args.train:
        cfg = {"@tokenizers": "spacy-ag.Segmenter.v1", "grammar": args.train,
               "iterations": args.iterations, "seed": args.seed}
        nlp = spacy.blank(args.lang, config={"nlp": {"tokenizer": cfg}})
        nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in lines])
        nlp.to_disk(args.save)
        return

    n_chars = sum(len(t) for t in lines)
    nlp = spacy.load(args.pipeline)
    list(nlp.pipe(lines[:50]))  # load the kernels before timing
    load = os.getloadavg()
    rates = {}
    docs = None
    for name, fn in (("nlp_pipe", lambda: list(nlp.pipe(lines))),
                     ("tokenizer_pipe", lambda: list(nlp.tokenizer.pipe(lines))),
                     ("engine", lambda: nlp.tokenizer.model.segment(lines))):
        wall, cpu, result = best_pass(fn, args.repeats)
        rates[name] = {"chars_per_second": n_chars / wall, "chars_per_cpu_second": n_chars / cpu}
        if name == "nlp_pipe":
            docs = result
    digest = hashlib.sha256()
    for doc in docs:
        digest.update(json.dumps([[t.text, t.whitespace_] for t in doc], ensure_ascii=False).encode("utf8"))
        digest.update(b"\n")
    out = {"pipeline": args.pipeline, "raw": args.raw, "lines": len(lines), "chars": n_chars,
           "repeats": args.repeats, "rates": rates, "digest": digest.hexdigest(),
           "text_mismatch": sum(1 for d, t in zip(docs, lines) if d.text != t),
           "decoded_texts": getattr(nlp.tokenizer.model, "decoded_texts", None),
           "load_average_before": load, "load_average_after": os.getloadavg()}
    text = json.dumps(out, indent=2)
    print(text)
    if args.json:
        Path(args.json).write_text(text + "\n", encoding="utf8")


if __name__ == "__main__":
    main()
