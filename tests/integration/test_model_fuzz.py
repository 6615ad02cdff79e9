"""Model files cannot crash the process: every damaged archive loads with one error line, or works.

Three tiny models are trained once on made-up strings (an MCMC collocation
model, whose Colloc labels hold Word tables; the same grammar trained online,
with variational statistics; a two-topic `TopicModel`) and saved. Mutations
are generated from the `State` and `Variational` fields, so every array is
covered: another dtype, a truncated and a 2-D array (each with the header
edited to match, which the archive's own checks cannot see), indices out of
range and negative at places the kernels read, NaN, inf and out-of-domain
values in every float array, counts off by one, counters beyond the pools'
capacities, cycles in sibling chains, trie parents and yield lists, shared
subtrees, unreachable hash keys, and whole files replaced by random bytes,
truncated, emptied, removed, or in the format-1 layout.

Every case runs in a process of its own, forked from one driver subprocess
(`sys.executable -c DRIVER`) that has loaded the kernels once: `load`
followed by `segment`, `parse` and `partial_fit` (`infer` and `partial_fit`
for the topic model), and the command `spacy-ag segment MODEL input.txt`
through the same entry point as ``python -m spacy_ag`` (a few cases also as
a real ``python -m spacy_ag`` process). A case passes when the process exits
0 with sane output (every segmentation spells its input), or non-zero with
exactly one stderr line carrying an ``[E...]`` code; a signal or a hang (60 s)
fails it. Damaged models must be refused with a model-file code (E060-E079,
E190-E199), not merely survive.

Files built to exhaust memory or time are refused before any work, each in a
process of its own whose peak RSS is asserted: a 2 GiB deflated npz member
(unlisted, in place of a listed array, or behind a lying .npy header; on disk
and as bytes), header fields that ask for endless work (local_iterations =
10**12, n_topics = 10**9 or other than the grammar's) or have the wrong type,
and pipelines with a saved part removed.
"""
from __future__ import annotations

import json
import random
import re
import subprocess
import sys
import textwrap
from pathlib import Path
from typing import Dict, List, Optional

import numpy as np
import pytest

from spacy_ag.core.grammatons import Variational
from spacy_ag.core.state import HT_USED, N_TRIE, NODE_FREE, NODE_HWM, State, TAB_FREE, TAB_HWM

CASE_TIMEOUT = 60  # seconds per case: longer is a hang
JOBS = 2  # cases running at once

COLLOC = """
1 1 Sentence --> Colloc+
1 0.0001 10000 Colloc --> Word+
1 0.0001 10000 Word --> Char+
1 1 Char --> [:corpus:]
"""
TRAIN = ["thedog", "thecat", "adog", "acatthedog", "dogcat", "thethe", "catdogthe", "adogacat"] * 3
TEXTS = ["thedogcat", "acat the dog", "xyz", "dogthecata"]
DOCS = [["the", "dog", "cat"], ["a", "dog"], ["cat", "the"], ["dog", "dog", "a"]] * 3

STATE_FIELDS = list(State._fields)
VB_FIELDS = [f"vb_{name}" for name in Variational._fields]
MODELS = {"mcmc": "model", "online": "model", "topic": "topic"}  # name -> driver kind
MODEL_FILE_CODES = tuple(f"[E0{n}]" for n in range(60, 80)) + tuple(f"[E{n}]" for n in range(190, 200))

# ---------------------------------------------------------------------------
# mutations, by what an array holds

#: index arrays and the pool they point into
POINTERS = {"node_sym": "sym", "node_rule": "rule", "node_table": "table", "node_child": "node",
            "node_sib": "node", "node_aux": "trie", "node_free": "node", "tab_adaptor": "adaptor",
            "tab_label": "node", "tab_yield": "trie", "tab_next": "table", "tab_prev": "table",
            "tab_free": "table", "ht_key": "key", "ht_val": "trie", "trie_parent": "trie", "trie_term": "term",
            "trie_head": "table", "sent_root": "node"}
#: index arrays whose entries beyond their counter (NODE_FREE, TAB_FREE, TAB_HWM) are never read
PREFIX_CHECKED = ("node_free", "tab_free", "tab_adaptor")
COUNTS = ("f", "fA", "tab_count", "ad_m", "ad_n")
COUNTERS = {"NODE_HWM": NODE_HWM, "NODE_FREE": NODE_FREE, "TAB_HWM": TAB_HWM, "TAB_FREE": TAB_FREE,
            "N_TRIE": N_TRIE, "HT_USED": HT_USED}
NAN, INF = float("nan"), float("inf")
#: float arrays: label -> value (all outside the domain)
FLOATS = {
    "ad_a": {"nan": NAN, "inf": INF, "neg_inf": -INF, "negative": -0.5, "one": 1.0},
    "ad_b": {"nan": NAN, "inf": INF, "neg_inf": -INF, "zero": 0.0, "negative": -2.0},
    "vb_ft": {"nan": NAN, "inf": INF, "negative": -1.0}, "vb_f_batch": {"nan": NAN, "inf": INF, "negative": -1.0},
    "vb_gt": {"nan": NAN, "inf": INF, "negative": -1.0}, "vb_g_batch": {"nan": NAN, "inf": INF, "negative": -1.0},
    "vb_alpha": {"nan": NAN, "inf": INF, "zero": 0.0, "negative": -1.0},
    "vb_gamma": {"nan": NAN, "inf": INF, "zero": 0.0, "negative": -1.0},
    "vb_lw": {"nan": NAN, "inf": INF, "neg_inf": -INF, "positive": 3.0},
    "vb_lrho": {"nan": NAN, "inf": INF, "neg_inf": -INF, "positive": 3.0},
    "vb_elog_rho": {"nan": NAN, "inf": INF, "neg_inf": -INF, "positive": 3.0},
    "vb_rho": {"nan": NAN, "inf": INF, "negative": -0.5, "two": 2.0},
}
STRUCTURAL = ("sib_cycle", "sib_self_loop", "child_to_root", "shared_subtree", "trie_self_parent",
              "trie_parent_forward", "list_self_loop", "list_prev_broken", "table_other_adaptor",
              "ht_out_of_reach", "ht_too_small", "garbage_node", "missing_array", "extra_array", "ad_a_valid",
              "rng_other")
FILES = ("pristine", "random_header", "random_grammar", "random_arrays", "truncated_arrays", "empty_arrays",
         "missing_arrays", "legacy_pristine", "legacy_random_state", "legacy_bad_child")


def mutations_of(field: str) -> List[str]:
    """The mutation labels of one array: shape and dtype, then by what it holds."""
    out = ["dtype", "truncated", "2d"]
    if field in POINTERS:
        out += ["high", "huge", "negative"]
    elif field in COUNTS:
        out += ["negative", "plus_one"]
    elif field == "node_kind":
        out += ["bad", "negative", "rule_to_term"]
    elif field == "tab_state":
        out += ["closed", "open_to_free", "bad"]
    elif field == "tab_mark":
        out += ["set"]
    elif field == "counters":
        out += [f"{name}_{how}" for name in COUNTERS for how in ("beyond", "negative")]
        out += ["NODE_FREE_minus_one", "N_TRIE_minus_one"]
    elif field == "rng":
        out += ["zero"]
    elif field in FLOATS:
        out += list(FLOATS[field])
    elif field == "vb_rank":
        out += ["negative", "huge"]
    elif field == "vb_counters":
        out += ["negative"]
    return out


def case_ids(model: str) -> List[str]:
    fields = STATE_FIELDS + (VB_FIELDS if model != "mcmc" else [])
    ids = [f"{model}:{f}" for f in FILES] + [f"{model}:{s}" for s in STRUCTURAL]
    ids += [f"{model}:{field}:{m}" for field in fields for m in mutations_of(field)]
    return ids


ALL_CASES = [c for model in MODELS for c in case_ids(model)]
#: cases also run as a real `python -m spacy_ag segment` process
REAL_CLI = ["mcmc:pristine", "mcmc:random_arrays", "mcmc:node_child:high", "mcmc:ad_a:nan", "mcmc:sib_cycle",
            "online:vb_lw:nan", "mcmc:legacy_random_state"]


# ---------------------------------------------------------------------------
# building the damaged archives


class Saved:
    """A saved model: header, grammar text and arrays, and what the state's arrays mean."""

    def __init__(self, path: Path):
        from spacy_ag.archive import ARRAYS, GRAMMAR, HEADER

        self.header = json.loads((path / HEADER).read_text("utf8"))
        self.grammar = (path / GRAMMAR).read_text("utf8")
        with np.load(path / ARRAYS, allow_pickle=False) as npz:
            self.arrays = {k: npz[k] for k in npz.files}
        a = self.arrays
        c = a["counters"]
        self.hwm = int(c[NODE_HWM])
        live = np.zeros(a["node_kind"].shape[0], bool)
        live[:self.hwm] = True
        live[a["node_free"][:c[NODE_FREE]]] = False
        self.live = live
        self.open = (a["tab_state"] == 1) & (np.arange(a["tab_state"].shape[0]) < c[TAB_HWM])
        self.pools = {"node": a["node_kind"].shape[0], "table": a["tab_count"].shape[0],
                      "trie": a["trie_parent"].shape[0], "rule": a["f"].shape[0], "adaptor": a["ad_a"].shape[0],
                      "sym": 1 << 20, "term": 1 << 20, "key": 1 << 40}  # beyond any grammar's

    def nodes(self, kind: int, with_child: Optional[bool] = None) -> np.ndarray:
        a = self.arrays
        mask = self.live & (a["node_kind"] == kind)
        if with_child is not None:
            mask &= (a["node_child"] >= 0) == with_child
        return np.flatnonzero(mask)

    def children(self, x: int) -> List[int]:
        a, out = self.arrays, []
        c = int(a["node_child"][x])
        while c >= 0:
            out.append(c)
            c = int(a["node_sib"][c])
        return out

    def root_of(self, x: int) -> int:
        a = self.arrays
        parent = {}
        for y in np.flatnonzero(self.live):
            for z in (int(a["node_child"][y]), int(a["node_sib"][y])):
                if z >= 0:
                    parent[z] = int(y)
        while x in parent:
            x = parent[x]
        return x


def _position(saved: Saved, field: str) -> Optional[int]:
    """A place where the kernels read `field` (None: the array has no such place in this model)."""
    a = saved.arrays
    c = a["counters"]
    opened = np.flatnonzero(saved.open)
    first = lambda xs: int(xs[0]) if len(xs) else None  # noqa: E731
    if field in ("node_sym", "node_rule", "node_child", "node_kind"):
        return first(saved.nodes(1))
    if field in ("node_table", "node_aux"):
        return first(saved.nodes(2))
    if field == "node_sib":
        return first(np.flatnonzero(saved.live & (a["node_sib"] >= 0)))
    if field == "node_free":
        return 0 if c[NODE_FREE] > 0 else None
    if field == "tab_free":
        return 0 if c[TAB_FREE] > 0 else None
    if field.startswith("tab_") or field in ("vb_ft", "vb_lw", "vb_rank", "vb_f_batch"):
        return first(opened)
    if field in ("trie_parent", "trie_term"):
        return 1 if c[N_TRIE] > 1 else None
    if field == "trie_head":
        return first(np.flatnonzero(a["trie_head"] >= 0))
    if field in ("ht_key", "ht_val"):
        return first(np.flatnonzero(a["ht_key"] >= 0))
    if field == "sent_root":
        return first(np.flatnonzero(a["sent_root"] >= 0))
    if field == "f":
        return first(np.flatnonzero(a["f"] > 0))
    if field == "fA":
        return first(np.flatnonzero(a["fA"] > 0))
    return 0 if a[field].shape[0] else None


def mutate(saved: Saved, model: str, field: str, how: str):
    """(arrays, expectation) for one mutation of one array; expectation "reject" or "any"."""
    arrays = {k: v.copy() for k, v in saved.arrays.items()}
    arr = arrays[field]
    if how == "dtype":
        other = {np.dtype(np.float64): np.float32, np.dtype(np.uint64): np.int64}.get(arr.dtype, np.float64)
        arrays[field] = arr.astype(other)
        return arrays, "reject"
    if how == "truncated":
        if not arr.shape[0]:
            arrays[field] = np.zeros(3, arr.dtype)  # nothing to cut: entries the grammar has no room for
            return arrays, "reject" if field != "sent_root" else "any"
        arrays[field] = arr[:-1]
        return arrays, "reject"
    if how == "2d":
        arrays[field] = arr.reshape(1, -1)
        return arrays, "reject"
    if field == "counters":
        name, _, change = how.rpartition("_") if not how.endswith("minus_one") else (how[:-10], "", "minus_one")
        index = COUNTERS[name]
        caps = {NODE_HWM: saved.pools["node"], NODE_FREE: int(arr[NODE_HWM]), TAB_HWM: saved.pools["table"],
                TAB_FREE: int(arr[TAB_HWM]), N_TRIE: saved.pools["trie"], HT_USED: arrays["ht_key"].shape[0]}
        arr[index] = {"beyond": caps[index] + 1, "negative": -1}.get(change, arr[index] - 1)
        return arrays, "reject"
    pos = _position(saved, field)
    expect = "reject"
    if pos is None:  # the model reads this array nowhere: only a value out of every range must fail
        pos = 0
        expect = "reject" if field in POINTERS and field not in PREFIX_CHECKED else "any"
        if not arr.shape[0]:  # e.g. no sentence analyses: one entry, out of range
            arr = arrays[field] = np.zeros(1, arr.dtype)
    if field in POINTERS:
        pool = saved.pools[POINTERS[field]]
        arr[pos] = {"high": pool + 7, "huge": np.iinfo(arr.dtype).max, "negative": -7}[how]
    elif field in COUNTS:
        arr[pos] = -3 if how == "negative" else arr[pos] + 1
        if how == "plus_one" and field in ("ad_m", "ad_n") and model != "mcmc":
            expect = "any"  # variational states do not keep m and n
    elif field == "node_kind":
        arr[pos] = {"bad": 5, "negative": -1, "rule_to_term": 0}[how]
    elif field == "tab_state":
        arr[pos] = {"closed": 2, "open_to_free": 0, "bad": 9}[how]
    elif field == "tab_mark":
        arr[pos] = 1
    elif field == "rng":
        arr[:] = 0
    elif field in FLOATS:
        arr[pos] = FLOATS[field][how]
    elif field == "vb_rank":
        arr[pos] = -1 if how == "negative" else np.iinfo(np.int64).max
    elif field == "vb_counters":
        arr[0] = -1
    else:
        raise AssertionError((field, how))
    return arrays, expect


def structural(saved: Saved, how: str):
    """(arrays, expectation) for the mutations that break the structure, not one value."""
    arrays = {k: v.copy() for k, v in saved.arrays.items()}
    a = arrays
    c = a["counters"]
    rules = saved.nodes(1)
    if how == "sib_cycle":  # the last child of a node links back to its first
        x = next(int(x) for x in rules if len(saved.children(x)) >= 2)
        kids = saved.children(x)
        a["node_sib"][kids[-1]] = kids[0]
    elif how == "sib_self_loop":
        x = int(np.flatnonzero(saved.live & (a["node_sib"] >= 0))[0])
        a["node_sib"][x] = x
    elif how == "child_to_root":  # a node deep in a tree gets the tree's root as its child
        x = int(saved.nodes(1)[-1])
        a["node_child"][x] = saved.root_of(x)
    elif how == "shared_subtree":
        x, y = (int(v) for v in rules[:2])
        a["node_child"][y] = a["node_child"][x]
    elif how == "trie_self_parent":
        a["trie_parent"][1] = 1
    elif how == "trie_parent_forward":
        a["trie_parent"][1] = int(c[N_TRIE]) - 1
    elif how == "list_self_loop":
        k = int(np.flatnonzero(saved.open)[0])
        a["tab_next"][k] = k
    elif how == "list_prev_broken":
        ks = np.flatnonzero(saved.open)
        a["tab_prev"][ks[0]] = ks[-1]
    elif how == "table_other_adaptor":
        k = int(np.flatnonzero(saved.open)[0])
        a["tab_adaptor"][k] = (a["tab_adaptor"][k] + 1) % a["ad_a"].shape[0]
        if a["ad_a"].shape[0] < 2:
            return arrays, "any"
    elif how == "ht_out_of_reach":  # move a key in front of its home slot, past an empty one
        H = a["ht_key"].shape[0]
        i = int(np.flatnonzero(a["ht_key"] >= 0)[0])
        home = int(((np.uint64(a["ht_key"][i]) * np.uint64(0x9E3779B97F4A7C15)) >> np.uint64(29))
                   & np.uint64(H - 1))
        j = next(j for j in ((home - d) % H for d in range(1, H)) if a["ht_key"][j] == -1)
        a["ht_key"][j], a["ht_val"][j] = a["ht_key"][i], a["ht_val"][i]
        a["ht_key"][i], a["ht_val"][i] = -1, -1
    elif how == "ht_too_small":
        a["ht_key"], a["ht_val"] = a["ht_key"][:16].copy(), a["ht_val"][:16].copy()
    elif how == "garbage_node":  # a freed node neither free nor in a tree any more
        c[NODE_FREE] -= 1
        if c[NODE_FREE] < 0:
            c[NODE_FREE] = 0
            c[NODE_HWM] += 1
            for name, fill in (("node_kind", 1), ("node_sym", 0), ("node_rule", 0), ("node_table", -1),
                               ("node_child", -1), ("node_sib", -1), ("node_aux", -1), ("node_free", 0)):
                a[name] = np.concatenate([a[name], np.array([fill], a[name].dtype)])
    elif how == "missing_array":
        del a["f"]
    elif how == "extra_array":
        a["zz_extra"] = np.arange(3)
        return arrays, "accept"
    elif how == "ad_a_valid":
        a["ad_a"][0] = 0.5
        return arrays, "accept"
    elif how == "rng_other":
        a["rng"][0] ^= np.uint64(12345)
        return arrays, "accept"
    else:
        raise AssertionError(how)
    return arrays, "reject"


def write_model(path: Path, saved: Saved, arrays: Dict[str, np.ndarray], legacy: bool = False) -> None:
    """An archive directory holding `arrays`, with a header that matches them exactly."""
    from spacy_ag.archive import npz_bytes

    path.mkdir(parents=True)
    (path / "grammar.lt").write_text(saved.grammar, encoding="utf8")
    if legacy:  # format 1: grammar.lt + state.npz with the header inside
        meta = {k: v for k, v in saved.header.items() if k != "arrays"}
        meta["format_version"] = 1
        payload = dict(arrays)
        payload["__meta__"] = np.frombuffer(json.dumps(meta).encode("utf8"), dtype=np.uint8)
        (path / "state.npz").write_bytes(npz_bytes(payload))
        return
    header = dict(saved.header)
    header["arrays"] = {name: {"shape": list(arr.shape), "dtype": arr.dtype.str}
                        for name, arr in sorted(arrays.items())}
    (path / "header.json").write_text(json.dumps(header, indent=1, sort_keys=True), encoding="utf8")
    (path / "arrays.npz").write_bytes(npz_bytes(arrays))


def build_case(root: Path, saved: Saved, case: str, rng: random.Random) -> str:
    """Write the damaged model of `case` under root; return the expectation."""
    model, _, rest = case.partition(":")
    path = root / case.replace(":", "__")
    if ":" in rest:
        field, how = rest.split(":")
        arrays, expect = mutate(saved, model, field, how)
        write_model(path, saved, arrays)
        return expect
    if rest in STRUCTURAL:
        arrays, expect = structural(saved, rest)
        write_model(path, saved, arrays)
        return expect
    if rest.startswith("legacy_"):
        arrays = {k: v.copy() for k, v in saved.arrays.items()}
        if rest == "legacy_bad_child":
            arrays["node_child"][int(saved.nodes(1)[0])] = saved.pools["node"] + 7
        write_model(path, saved, arrays, legacy=True)
        if rest == "legacy_random_state":
            (path / "state.npz").write_bytes(rng.randbytes(5000))
        return {"legacy_pristine": "accept"}.get(rest, "reject")
    write_model(path, saved, saved.arrays)
    member = {"random_header": "header.json", "random_grammar": "grammar.lt"}.get(rest, "arrays.npz")
    data = (path / member).read_bytes()
    if rest.startswith("random_"):
        (path / member).write_bytes(rng.randbytes(len(data)))
    elif rest == "truncated_arrays":
        (path / member).write_bytes(data[: len(data) // 2])
    elif rest == "empty_arrays":
        (path / member).write_bytes(b"")
    elif rest == "missing_arrays":
        (path / member).unlink()
    return "accept" if rest == "pristine" else "reject"


# ---------------------------------------------------------------------------
# the driver: one subprocess that forks a child per case

DRIVER = textwrap.dedent(r'''
    import json, os, sys, time, traceback
    import numpy as np

    cases_file, results_file = sys.argv[1], sys.argv[2]
    spec = json.load(open(cases_file))
    TEXTS, TRAIN, DOCS = spec["texts"], spec["train"], spec["docs"]
    JOBS, TIMEOUT = spec["jobs"], spec["timeout"]

    import typer.main
    from spacy_ag.cli import app
    from spacy_ag.errors import SpacyAgError
    from spacy_ag.model import AdaptorGrammar
    from spacy_ag.topics.topic_model import TopicModel

    COMMAND = typer.main.get_command(app)  # what `python -m spacy_ag` runs

    def sane_segments(texts, segs):
        assert len(segs) == len(texts), (texts, segs)
        for text, words in zip(texts, segs):
            assert "".join(words) == "".join(text.split()), (text, words)
            assert all(words), (text, words)

    def api_model(path):
        try:
            model = AdaptorGrammar.load(path)
        except SpacyAgError as err:
            print(err.coded_line(), file=sys.stderr)
            return 1
        sane_segments(TEXTS, model.segment(TEXTS))
        for text, tree in zip(TEXTS, model.parse(TEXTS)):
            assert tree is None or "".join(tree.leaves()) == "".join(text.split()), (text, tree)
        model.cache(top=5)
        model.partial_fit(TRAIN[:6])
        segs = model.segment(TEXTS)
        sane_segments(TEXTS, segs)
        print(json.dumps(segs))
        return 0

    def api_topic(path):
        try:
            model = TopicModel.load(path)
        except SpacyAgError as err:
            print(err.coded_line(), file=sys.stderr)
            return 1
        for _ in range(2):
            theta = model.infer(DOCS)
            assert theta.shape == (len(DOCS), model.n_topics) and np.isfinite(theta).all(), theta
            assert np.allclose(theta.sum(axis=1), 1.0), theta
            model.partial_fit(DOCS[:4])
        print(json.dumps(model.topics(3)))
        return 0

    def cli(path, input_file):
        try:
            COMMAND.main(args=["segment", path, input_file], prog_name="spacy-ag")
        except SystemExit as stop:
            return stop.code if isinstance(stop.code, int) else (0 if stop.code is None else 1)
        return 0

    def child(job, out, err):
        fd_out = os.open(out, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        fd_err = os.open(err, os.O_WRONLY | os.O_CREAT | os.O_TRUNC)
        os.dup2(fd_out, 1)
        os.dup2(fd_err, 2)
        code = 70
        try:
            if job["mode"] == "api":
                code = (api_topic if job["kind"] == "topic" else api_model)(job["path"])
            else:
                code = cli(job["path"], spec["input"])
        except BaseException:
            traceback.print_exc()
            code = 71
        finally:
            sys.stdout.flush()
            sys.stderr.flush()
            os._exit(code)

    # load every kernel once, so that each forked case only runs them
    for job in spec["warm"]:
        assert (api_topic if job["kind"] == "topic" else api_model)(job["path"]) == 0
    import contextlib, io
    with contextlib.redirect_stdout(io.StringIO()):
        assert cli(spec["warm"][0]["path"], spec["input"]) == 0

    results, running, todo = {}, {}, list(spec["jobs_list"])
    work = spec["work"]
    started = time.perf_counter()
    while todo or running:
        while todo and len(running) < JOBS:
            job = todo.pop(0)
            key = job["id"] + "|" + job["mode"]
            out = os.path.join(work, f"{len(results) + len(running)}.out")
            err = os.path.join(work, f"{len(results) + len(running)}.err")
            if job["mode"] == "exec":  # a real `python -m spacy_ag segment` process
                import subprocess
                proc = subprocess.Popen([sys.executable, "-m", "spacy_ag", "segment", job["path"], spec["input"]],
                                        stdout=open(out, "w"), stderr=open(err, "w"))
                running[proc.pid] = (key, time.perf_counter(), out, err, proc)
                continue
            pid = os.fork()
            if pid == 0:
                child(job, out, err)
            running[pid] = (key, time.perf_counter(), out, err, None)
        time.sleep(0.002)
        for pid, (key, t0, out, err, proc) in list(running.items()):
            if proc is not None:
                status = proc.poll()
                done, rc = status is not None, status
            else:
                wpid, status = os.waitpid(pid, os.WNOHANG)
                done = wpid == pid
                rc = (os.WEXITSTATUS(status) if os.WIFEXITED(status) else -os.WTERMSIG(status)) if done else None
            timed_out = not done and time.perf_counter() - t0 > TIMEOUT
            if timed_out:
                os.kill(pid, 9)
                os.waitpid(pid, 0)
            if done or timed_out:
                del running[pid]
                results[key] = {"rc": rc, "timeout": timed_out, "seconds": time.perf_counter() - t0,
                                "stdout": open(out, errors="replace").read()[-4000:],
                                "stderr": open(err, errors="replace").read()[-4000:]}
    results["_seconds"] = time.perf_counter() - started
    json.dump(results, open(results_file, "w"))
''')


def train_models(root: Path) -> Dict[str, Path]:
    from spacy_ag.model import AdaptorGrammar
    from spacy_ag.settings import OnlineSettings
    from spacy_ag.topics.topic_model import TopicModel, default_topic_settings

    paths = {name: root / name for name in MODELS}
    AdaptorGrammar(COLLOC).fit(TRAIN, iterations=4, seed=1).save(paths["mcmc"])
    AdaptorGrammar(COLLOC, inference="online", online=OnlineSettings(batch_size=4)).fit(TRAIN, seed=1) \
        .save(paths["online"])
    TopicModel(2, online=default_topic_settings(batch_size=4)).fit(DOCS, passes=2, seed=1).save(paths["topic"])
    return paths


def error_lines(stderr: str) -> List[str]:
    """stderr without Python warnings (file:line: XWarning: message, then the source line)."""
    out, skip = [], False
    for line in stderr.splitlines():
        if skip and line.startswith("  "):
            skip = False
            continue
        skip = False
        if "Warning: " in line:
            skip = True
            continue
        if line.strip():
            out.append(line)
    return out


@pytest.fixture(scope="module")
def fuzz(tmp_path_factory):
    """Build every case, run them all through the driver; {case: (expectation, {mode: result})}."""
    root = tmp_path_factory.mktemp("fuzz")
    trained = train_models(root / "trained")
    saved = {name: Saved(path) for name, path in trained.items()}
    rng = random.Random(20240601)
    cases = root / "cases"
    expectations, jobs = {}, []
    for case in ALL_CASES:
        model = case.split(":")[0]
        expectations[case] = build_case(cases, saved[model], case, rng)
        path = str(cases / case.replace(":", "__"))
        kind = MODELS[model]
        jobs.append({"id": case, "mode": "api", "kind": kind, "path": path})
        if kind == "model":
            jobs.append({"id": case, "mode": "cli", "kind": kind, "path": path})
    for case in REAL_CLI:
        jobs.append({"id": case, "mode": "exec", "kind": "model", "path": str(cases / case.replace(":", "__"))})
    (root / "input.txt").write_text("\n".join(TEXTS) + "\n", encoding="utf8")
    (root / "work").mkdir()
    spec = {"texts": TEXTS, "train": TRAIN, "docs": DOCS, "jobs": JOBS, "timeout": CASE_TIMEOUT,
            "input": str(root / "input.txt"), "work": str(root / "work"), "jobs_list": jobs,
            "warm": [{"kind": MODELS[m], "path": str(p)} for m, p in trained.items()]}
    (root / "cases.json").write_text(json.dumps(spec))
    subprocess.run([sys.executable, "-c", DRIVER, str(root / "cases.json"), str(root / "results.json")],
                   check=True, timeout=1800)
    results = json.loads((root / "results.json").read_text())
    print(f"\n{len(ALL_CASES)} fuzz cases, {len(jobs)} processes, {results.pop('_seconds'):.1f} s")
    by_case: Dict[str, Dict[str, dict]] = {}
    for key, result in results.items():
        case, mode = key.split("|")
        by_case.setdefault(case, {})[mode] = result
    return {case: (expectations[case], by_case[case]) for case in ALL_CASES}


def check_run(case: str, mode: str, expect: str, result: dict) -> None:
    where = f"{case} ({mode}): rc {result['rc']}, stderr:\n{result['stderr']}"
    assert not result["timeout"], f"{case} ({mode}) hangs"
    assert result["rc"] >= 0, f"{case} ({mode}) died by signal {-result['rc']}"
    if result["rc"] == 0:
        assert expect != "reject", f"{case} ({mode}): a damaged model was accepted; output:\n{result['stdout']}"
        if mode != "api":  # the command's output: one line per input line, spelling it
            lines = result["stdout"].splitlines()
            assert len(lines) == len(TEXTS), where
            for text, line in zip(TEXTS, lines):
                assert "".join(line.split()) == "".join(text.split()), (text, line)
        return
    errors = error_lines(result["stderr"])
    assert len(errors) == 1 and "[E" in errors[0], where
    assert "Traceback" not in result["stderr"] and "allow_pickle" not in errors[0], where
    assert expect != "accept", where
    if expect == "reject":
        assert any(code in errors[0] for code in MODEL_FILE_CODES), where


@pytest.mark.parametrize("case", ALL_CASES)
def test_damaged_model_never_crashes(fuzz, case):
    expect, runs = fuzz[case]
    for mode, result in sorted(runs.items()):
        check_run(case, mode, expect, result)


def test_every_array_is_fuzzed():
    for model in MODELS:
        fields = STATE_FIELDS + (VB_FIELDS if model != "mcmc" else [])
        fuzzed = {c.split(":")[1] for c in case_ids(model) if c.count(":") == 2}
        assert fuzzed == set(fields), set(fields) ^ fuzzed
        values = {c.split(":")[1] for c in case_ids(model)
                  if c.count(":") == 2 and c.split(":")[2] not in ("dtype", "truncated", "2d")}
        assert values == set(fields), set(fields) - values


def test_reported_damage_is_one_line(fuzz):
    """The three reports: an out-of-range node_child (segfault in partial_fit), ad_a = NaN (every
    utterance one word, exit 0), random bytes as the arrays (numpy's advice to allow pickles)."""
    for case, fragment in (("mcmc:node_child:high", "node_child"), ("mcmc:ad_a:nan", "ad_a"),
                           ("mcmc:random_arrays", "arrays.npz"), ("mcmc:legacy_random_state", "state.npz")):
        _, runs = fuzz[case]
        for mode, result in runs.items():
            assert result["rc"] == 1, (case, mode, result)
            (line,) = error_lines(result["stderr"])
            assert fragment in line and "allow_pickle" not in line, (case, mode, line)


# ---------------------------------------------------------------------------
# files that would exhaust memory or time: zip bombs, headers that ask too much, wrong types,
# pipelines missing a part. Each refusal is one coded line (CLI) or a ModelFileError (Python),
# before anything is inflated or run; the memory cases run in a process of their own, which
# reports its peak RSS.

BOMB_SIZE = 2 << 30  # 2 GiB of zeros: about 2 MB deflated
#: What a hostile file may add to the peak memory of loading the pristine model the same way. The
#: unbounded reads took 2 to 4 GB more; the margin leaves room for how a process's own footprint
#: varies (numba compiling in the first process that needs a kernel, import order).
PEAK_MARGIN_KB = 256 * 1024
WRONG_TYPES = {"shape_int": ("arrays", "f", "shape", 5), "shape_null": ("arrays", "f", "shape", None),
               "start_int": ("start", 5), "segment_category_int": ("segment_category", 5)}


def deflated_npy_member(zf, name: str, shape: tuple, dtype: str, data_bytes: int) -> None:
    """A deflated member `name` of zf: a .npy header for `shape` and `dtype`, then `data_bytes` zeros."""
    import io
    import zipfile

    head = io.BytesIO()
    np.lib.format.write_array_header_1_0(head, {"descr": dtype, "fortran_order": False, "shape": shape})
    info = zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0))
    info.compress_type = zipfile.ZIP_DEFLATED
    with zf.open(info, "w", force_zip64=True) as f:
        f.write(head.getvalue())
        chunk = bytes(1 << 24)
        for start in range(0, data_bytes, len(chunk)):
            f.write(chunk[:data_bytes - start])


def npz_with(source: Path, target: Path, replace: Optional[str] = None, add=None) -> None:
    """A copy of the npz `source` without member `replace`; `add(zf)` writes more members."""
    import zipfile

    with zipfile.ZipFile(source) as zin, zipfile.ZipFile(target, "w", compresslevel=1) as zout:
        for info in zin.infolist():
            if info.filename != replace:
                zout.writestr(info, zin.read(info.filename))
        if add is not None:
            add(zout)


def copy_model(source: Path, target: Path, **header_changes) -> Path:
    import shutil

    shutil.copytree(source, target)
    if header_changes:
        header = json.loads((target / "header.json").read_text("utf8"))
        header.update(header_changes)
        (target / "header.json").write_text(json.dumps(header), encoding="utf8")
    return target


def archive_bytes_of(path: Path) -> bytes:
    from spacy_ag.archive import zip_bytes

    return zip_bytes({name: (path / name).read_bytes() for name in ("header.json", "grammar.lt", "arrays.npz")})


@pytest.fixture(scope="module")
def hostile(tmp_path_factory):
    """The trained models and the hostile files built from them."""
    import zipfile

    root = tmp_path_factory.mktemp("hostile")
    trained = train_models(root / "trained")
    mcmc = trained["mcmc"]
    files = {"trained": trained, "input": root / "input.txt", "docs": root / "docs.txt"}
    files["input"].write_text("\n".join(TEXTS) + "\n", encoding="utf8")
    files["docs"].write_text("\n".join(" ".join(d) for d in DOCS) + "\n", encoding="utf8")
    # an extra member the header does not list, 2 GiB deflated
    extra = copy_model(mcmc, root / "extra_member")
    npz_with(mcmc / "arrays.npz", extra / "arrays.npz",
             add=lambda zf: deflated_npy_member(zf, "zz_bomb.npy", (BOMB_SIZE,), "|u1", BOMB_SIZE))
    files["extra_member"] = extra
    (root / "extra_member.bytes").write_bytes(archive_bytes_of(extra))
    (root / "pristine.bytes").write_bytes(archive_bytes_of(mcmc))
    # the same 2 GiB as a member of the archive bytes beside arrays.npz (never read: not the archive's)
    with zipfile.ZipFile(root / "outer_member.bytes", "w", compresslevel=1) as zf:
        for name in ("header.json", "grammar.lt", "arrays.npz"):
            zf.writestr(zipfile.ZipInfo(name, (1980, 1, 1, 0, 0, 0)), (mcmc / name).read_bytes())
        deflated_npy_member(zf, "zz_bomb.npy", (BOMB_SIZE,), "|u1", BOMB_SIZE)
    # a listed array whose member inflates to 2 GiB, the header unchanged
    header = json.loads((mcmc / "header.json").read_text("utf8"))
    listed = copy_model(mcmc, root / "listed_member")
    npz_with(mcmc / "arrays.npz", listed / "arrays.npz", replace="f.npy",
             add=lambda zf: deflated_npy_member(zf, "f.npy", (BOMB_SIZE // 8,), "<f8", BOMB_SIZE))
    files["listed_member"] = listed
    (root / "listed_member.bytes").write_bytes(archive_bytes_of(listed))
    # a member of the declared size whose .npy header claims 2 GiB
    f_spec = header["arrays"]["f"]
    declared = int(np.prod(f_spec["shape"])) * np.dtype(f_spec["dtype"]).itemsize
    lying = copy_model(mcmc, root / "npy_header_lies")
    npz_with(mcmc / "arrays.npz", lying / "arrays.npz", replace="f.npy",
             add=lambda zf: deflated_npy_member(zf, "f.npy", (BOMB_SIZE // 8,), f_spec["dtype"], declared))
    files["npy_header_lies"] = lying
    # headers asking for too much, or of the wrong types
    topic = trained["topic"]
    files["local_iterations"] = copy_model(topic, root / "local_iterations", local_iterations=10 ** 12)
    files["n_topics_huge"] = copy_model(topic, root / "n_topics_huge", n_topics=10 ** 9)
    files["n_topics_other"] = copy_model(topic, root / "n_topics_other", n_topics=3)
    for case, change in WRONG_TYPES.items():
        path = copy_model(mcmc, root / case)
        header = json.loads((path / "header.json").read_text("utf8"))
        if change[0] == "arrays":
            header["arrays"][change[1]][change[2]] = change[3]
        else:
            header[change[0]] = change[1]
        (path / "header.json").write_text(json.dumps(header), encoding="utf8")
        files[case] = path
    files["root"] = root
    return files


PEAK_DRIVER = textwrap.dedent(r'''
    import json, resource, sys
    how, path, out = sys.argv[1], sys.argv[2], sys.argv[3]
    result = {}
    try:
        if how == "from_bytes":
            from pathlib import Path
            from spacy_ag.errors import SpacyAgError
            from spacy_ag.model import AdaptorGrammar
            try:
                AdaptorGrammar.from_bytes(Path(path).read_bytes())
                result["outcome"] = "loaded"
            except SpacyAgError as err:
                result["outcome"] = err.coded_line()
        else:
            import typer.main
            from spacy_ag.cli import app
            try:
                typer.main.get_command(app).main(args=["segment", path, sys.argv[4]], prog_name="spacy-ag")
                result["rc"] = 0
            except SystemExit as stop:
                result["rc"] = stop.code
    finally:
        result["peak_kb"] = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss
        json.dump(result, open(out, "w"))
''')


def run_measured(how: str, path: Path, tmp_path: Path, *extra: str) -> dict:
    """Run `how` ("segment" or "from_bytes") on `path` in a process of its own; its outcome and peak RSS."""
    out = tmp_path / "peak.json"
    done = subprocess.run([sys.executable, "-c", PEAK_DRIVER, how, str(path), str(out), *map(str, extra)],
                          capture_output=True, text=True, timeout=CASE_TIMEOUT)
    result = json.loads(out.read_text())
    result["stderr"] = done.stderr
    return result


@pytest.fixture(scope="module")
def pristine_peak(hostile, tmp_path_factory):
    """Peak RSS (KB) of segmenting with, and of loading the bytes of, the untouched model: each run
    twice, keeping the larger, so that compiling in the first run counts on the pristine side too."""
    out = tmp_path_factory.mktemp("pristine_peak")
    mcmc = hostile["trained"]["mcmc"]
    segment = [run_measured("segment", mcmc, out, hostile["input"]) for _ in range(2)]
    loading = [run_measured("from_bytes", hostile["root"] / "pristine.bytes", out) for _ in range(2)]
    assert all(r.get("rc") == 0 for r in segment) and all(r["outcome"] == "loaded" for r in loading)
    return {"segment": max(r["peak_kb"] for r in segment), "from_bytes": max(r["peak_kb"] for r in loading)}


@pytest.mark.parametrize("case, code, names", [
    ("extra_member", "[E191]", ("arrays.npz", "zz_bomb.npy")),
    ("listed_member", "[E190]", ("arrays.npz", "f.npy")),
    ("npy_header_lies", "[E064]", ("arrays.npz", "'f'")),
])
def test_inflating_member_refused_in_bounded_memory(hostile, pristine_peak, tmp_path, case, code, names):
    """`spacy-ag segment` peaked at 2.21 GB before refusing the extra member; now refused unread."""
    result = run_measured("segment", hostile[case], tmp_path, hostile["input"])
    (line,) = error_lines(result["stderr"])
    assert result["rc"] == 1 and code in line and all(name in line for name in names), result
    assert result["peak_kb"] < pristine_peak["segment"] + PEAK_MARGIN_KB, (result, pristine_peak)


@pytest.mark.parametrize("case, outcome", [
    ("extra_member.bytes", "[E192]"),  # arrays.npz is larger than its declared arrays can make it
    ("listed_member.bytes", "[E192]"),
    ("outer_member.bytes", "loaded"),  # a member that is not the archive's is never read
])
def test_from_bytes_reads_within_declared_sizes(hostile, pristine_peak, tmp_path, case, outcome):
    """`AdaptorGrammar.from_bytes` (the path of nlp.from_bytes) loaded the outer 2 GiB member at 4.3 GB."""
    result = run_measured("from_bytes", hostile["root"] / case, tmp_path)
    assert result["outcome"].startswith(outcome), result
    assert result["peak_kb"] < pristine_peak["from_bytes"] + PEAK_MARGIN_KB, (result, pristine_peak)


def test_header_asking_for_endless_work_is_refused(hostile):
    """local_iterations = 10**12 made tag-topics run for ever; n_topics 10**9 failed with E999."""
    from spacy_ag.errors import ModelFileError
    from spacy_ag.topics.topic_model import TopicModel

    for case, code, fragment in (("local_iterations", "[E193]", "local_iterations must be an integer in [1, 1000]"),
                                 ("n_topics_huge", "[E193]", "n_topics must be an integer in [1, 100000]"),
                                 ("n_topics_other", "[E195]", "n_topics = 3, but grammar.lt has 2 topics")):
        path = hostile[case]
        done = subprocess.run([sys.executable, "-m", "spacy_ag", "tag-topics", str(path), str(hostile["docs"])],
                              capture_output=True, text=True, timeout=CASE_TIMEOUT)  # a hang fails the test
        (line,) = error_lines(done.stderr)
        assert done.returncode == 1 and code in line and fragment in line and str(path) in line, done.stderr
        with pytest.raises(ModelFileError, match=re.escape(fragment)):
            TopicModel.load(path)
        with pytest.raises(ModelFileError, match=re.escape(fragment)):
            TopicModel.from_bytes(archive_bytes_of(path))


@pytest.mark.parametrize("case", list(WRONG_TYPES))
def test_header_field_of_wrong_type_is_one_coded_line(hostile, case):
    """shape 5 or null, start 5, segment_category 5 gave E999 (TypeError) in the CLI."""
    from typer.testing import CliRunner

    from spacy_ag.cli import app
    from spacy_ag.errors import ModelFileError
    from spacy_ag.model import AdaptorGrammar

    path = hostile[case]
    field = "arrays.f.shape" if WRONG_TYPES[case][0] == "arrays" else WRONG_TYPES[case][0]
    result = CliRunner().invoke(app, ["segment", str(path), str(hostile["input"])])
    (line,) = error_lines(result.stderr)
    assert result.exit_code == 1 and "[E193]" in line and f"{path}/header.json: {field} must be" in line, line
    with pytest.raises(ModelFileError, match=re.escape(f"{field} must be")):
        AdaptorGrammar.load(path)
    with pytest.raises(ModelFileError, match=re.escape(f"{field} must be")):
        AdaptorGrammar.from_bytes(archive_bytes_of(path))


@pytest.fixture(scope="module")
def pipeline(tmp_path_factory):
    """A tiny pipeline (segmenter tokenizer + ag_parser) saved to disk."""
    import spacy
    from spacy.training import Example

    path = tmp_path_factory.mktemp("pipeline") / "nlp"
    nlp = spacy.blank("xx", config={"nlp": {"tokenizer": {"@tokenizers": "spacy-ag.Segmenter.v1",
                                                          "iterations": 3, "seed": 1}}})
    nlp.add_pipe("ag_parser", config={"grammar": "colloc", "iterations": 2, "seed": 2})
    nlp.initialize(lambda: [Example.from_dict(nlp.make_doc(t), {}) for t in TRAIN])
    nlp.to_disk(path)
    return path


@pytest.mark.parametrize("case", list(WRONG_TYPES))
def test_spacy_load_raises_model_file_error_for_wrong_types(pipeline, tmp_path, case):
    """spacy.load gave a raw TypeError."""
    import shutil

    import spacy

    from spacy_ag.errors import ModelFileError

    path = tmp_path / "nlp"
    shutil.copytree(pipeline, path)
    header_file = path / "tokenizer" / "model" / "header.json"
    header = json.loads(header_file.read_text("utf8"))
    change = WRONG_TYPES[case]
    if change[0] == "arrays":
        header["arrays"][change[1]][change[2]] = change[3]
    else:
        header[change[0]] = change[1]
    header_file.write_text(json.dumps(header), encoding="utf8")
    with pytest.raises(ModelFileError, match=r"\[E193\] " + re.escape(str(header_file))):
        spacy.load(path)


@pytest.mark.parametrize("missing", ["tokenizer", "ag_parser/model", "ag_parser/cfg"])
def test_pipeline_missing_a_part_is_refused(pipeline, tmp_path, missing):
    """Without tokenizer/, spacy.load split text into characters and evaluate exited 0 (token F .027)."""
    import shutil

    import spacy
    from typer.testing import CliRunner

    from spacy_ag.cli import app
    from spacy_ag.errors import ModelFileError

    path = tmp_path / "nlp"
    shutil.copytree(pipeline, path)
    part = path / missing
    shutil.rmtree(part) if part.is_dir() else part.unlink()
    with pytest.raises(ModelFileError, match=r"\[E194\] " + re.escape(str(part))):
        spacy.load(path)
    text = tmp_path / "text.txt"
    text.write_text("the dog\nacat\n", encoding="utf8")
    for command in ("evaluate", "segment", "parse"):
        result = CliRunner().invoke(app, [command, str(path), str(text)])
        (line,) = error_lines(result.stderr)
        assert result.exit_code == 1 and "[E194]" in line and str(part) in line, (command, result.stderr)
    shutil.copytree(pipeline, tmp_path / "whole")
    assert [t.text for t in spacy.load(tmp_path / "whole")("thedog")]  # the whole pipeline loads
