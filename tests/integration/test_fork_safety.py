"""Fork safety: every component works in ``nlp.pipe(n_process=2)`` after use in the parent.

``nlp.pipe(n_process=k)`` forks (the default start method on Linux, forced
here). With numba's GNU OpenMP threading layer, a worker forked after a
parallel kernel ran in the parent hangs forever in its first parallel kernel;
``spacy_ag.core`` therefore has numba choose a fork-safe layer at import.

Each scenario runs in a child ``python -c`` of its own: a fresh numba (its
threading layer is chosen once per process) and no way to hang the test run.
The child builds a tiny pipeline on made-up text, uses it in the parent
(running the component's parallel kernel there: topic inference for
ag_topics, an online update's E-step for the segmenter and ag_parser, whose
annotating kernels are serial), annotates the texts with n_process=1, then
with n_process=2 under a watchdog that turns a hang into a failed test.
"""
from __future__ import annotations

import json
import multiprocessing
import os
import signal
import subprocess
import sys
import tempfile
import textwrap

import pytest

pytestmark = pytest.mark.skipif("fork" not in multiprocessing.get_all_start_methods(),
                                reason="the hang needs the fork start method")

PIPE_TIMEOUT = 120  # seconds for nlp.pipe(n_process=2): a hang fails the test after this
CHILD_TIMEOUT = 900  # the whole child, including a cold numba cache compiling every kernel

# Shared by every child script. `annotate(doc)` and `build()` are defined per component.
PRELUDE = textwrap.dedent("""
    import faulthandler, json, multiprocessing, os, random, sys
    import numba
    import spacy
    from spacy.language import Language
    from spacy.training import Example

    multiprocessing.set_start_method("fork", force=True)
    rng = random.Random(7)
    VOCAB = [["kapo", "lumi", "tesa", "rinok", "bado"], ["gulo", "fener", "spit", "ommo", "zatu"]]

    def made_up_texts(n, words, sep):
        return [sep.join(rng.choice(VOCAB[i % 2]) for _ in range(words)) for i in range(n)]

    def examples(nlp, texts):
        return [Example.from_dict(nlp.make_doc(t), {}) for t in texts]

    @Language.component("fork_safety_pid")
    def fork_safety_pid(doc):
        doc.user_data["pid"] = os.getpid()
        return doc
""")

EPILOGUE = textwrap.dedent("""
    nlp, texts = build()
    nlp.add_pipe("fork_safety_pid", last=True)
    from numba.np.ufunc import parallel
    layer = numba.threading_layer() if parallel._is_initialized else None
    single = [annotate(d) for d in nlp.pipe(texts)]
    faulthandler.dump_traceback_later(PIPE_TIMEOUT, exit=True)  # a hang: traceback, exit code 1
    docs = list(nlp.pipe(texts, n_process=2, batch_size=4))
    faulthandler.cancel_dump_traceback_later()
    multi = [annotate(d) for d in docs]
    pids = sorted({d.user_data["pid"] for d in docs})
    print(json.dumps({"layer": layer, "parent": os.getpid(), "pids": pids, "single": single, "multi": multi}))
""")

SEGMENTER = textwrap.dedent("""
    def build():
        config = {"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1", "iterations": 3, "seed": 1}}}
        nlp = spacy.blank("xx", config=config)
        texts = made_up_texts(40, 3, "")
        nlp.initialize(lambda: examples(nlp, texts))
        nlp(texts[0])
        # the segmenter's parallel kernel: an online update's E-step
        nlp.tokenizer.update(examples(nlp, texts * 6))
        return nlp, texts + ["kapolumi, gulo", ""]

    def annotate(doc):
        return [[t.text, t.whitespace_] for t in doc]
""")

PARSER = textwrap.dedent("""
    def build():
        nlp = spacy.blank("xx")
        nlp.add_pipe("ag_parser", config={"grammar": "unigram", "iterations": 3, "seed": 2})
        texts = made_up_texts(40, 3, "")
        nlp.initialize(lambda: examples(nlp, texts))
        nlp(texts[0])
        # the parser's parallel kernel: an online update's E-step
        nlp.get_pipe("ag_parser").update(examples(nlp, texts * 6))
        return nlp, texts + ["kapolumi gulo", ""]

    def annotate(doc):
        return [[s.start_char, s.end_char, s.label_] for s in doc.spans["ag"]]
""")

TOPICS = textwrap.dedent("""
    def build():
        nlp = spacy.blank("en")
        nlp.add_pipe("ag_topics", config={"n_topics": 2})
        texts = made_up_texts(40, 6, " ")
        nlp.initialize(lambda: examples(nlp, texts))
        nlp("kapo lumi gulo")  # topic inference: a parallel kernel, in the parent
        return nlp, texts + ["kapo fener zzz", ""]

    def annotate(doc):
        return doc.cats
""")


def run_child(component_script, extra_env=None):
    """Run one scenario in a child process (own session); return its JSON report.

    Output goes to files, not pipes: forked workers left hanging would hold a
    pipe open, and reading it would wait for them.
    """
    env = {k: v for k, v in os.environ.items() if k != "NUMBA_THREADING_LAYER"}  # the package's choice
    env.update(extra_env or {})
    script = PRELUDE + f"PIPE_TIMEOUT = {PIPE_TIMEOUT}\n" + component_script + EPILOGUE
    with tempfile.TemporaryFile("w+") as out_file, tempfile.TemporaryFile("w+") as err_file:
        proc = subprocess.Popen([sys.executable, "-c", script], stdout=out_file, stderr=err_file, env=env,
                                start_new_session=True)
        try:
            proc.wait(timeout=CHILD_TIMEOUT)
        except subprocess.TimeoutExpired:
            pass
        finally:
            try:  # the child if it is still running, and workers it left hanging
                os.killpg(proc.pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                pass
            proc.wait()
        out_file.seek(0)
        err_file.seek(0)
        out, err = out_file.read(), err_file.read()
    assert proc.returncode != -signal.SIGKILL, f"the child did not finish in {CHILD_TIMEOUT} s:\n{err[-3000:]}"
    assert proc.returncode == 0, (f"nlp.pipe(n_process=2) hung for {PIPE_TIMEOUT} s or failed "
                                  f"(exit code {proc.returncode}):\n{err[-3000:]}")
    report = json.loads(out.strip().splitlines()[-1])
    # the parent ran a parallel kernel, and two forked workers (not the parent) annotated the docs
    assert report["layer"] is not None, "no parallel kernel ran in the parent"
    assert len(report["pids"]) == 2 and report["parent"] not in report["pids"], report["pids"]
    assert len(report["multi"]) == len(report["single"])
    return report


def test_segmenter_n_process_2_after_use():
    report = run_child(SEGMENTER)
    assert report["multi"] == report["single"]
    assert any(len(tokens) > 1 for tokens in report["single"])


def test_parser_n_process_2_after_use():
    report = run_child(PARSER)
    assert report["multi"] == report["single"]
    assert any(spans for spans in report["single"])


def test_topics_n_process_2_after_use():
    report = run_child(TOPICS)
    for multi, single in zip(report["multi"], report["single"]):
        assert multi.keys() == single.keys() == {"TOPIC_0", "TOPIC_1"}
        assert multi == pytest.approx(single, abs=1e-9)
