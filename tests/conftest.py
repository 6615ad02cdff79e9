"""Shared helpers for the tests of the numba inference core (spacy_ag.core).

Everything here is an *independent* Python re-implementation of the model
(docs/algorithms.md 1.2, 3.1-3.3, 3.7): grammars of the spec, a builder that writes
hand-made analyses into the state's node pool, a reader that turns pool trees
back into nested tuples, a recount of all counts from the stored analyses, and
a brute-force enumerator of every G' derivation of a string. Tests reach these
through the `core` fixture (``core.toy_grammar()``, ...), so no test module
imports another.
"""
from __future__ import annotations

import contextlib
import itertools
import json
import math
import os
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import time
from collections import Counter, defaultdict

# The first-compilation progress lines of spacy_ag.kernel_environment are for people at a terminal;
# in tests they would land between a command's expected lines and after pytest's summary.
# tests/test_kernel_environment.py checks them with a listener of its own.
os.environ.setdefault("SPACY_AG_COMPILE_PROGRESS", "0")

import numpy as np
import pytest

from spacy_ag.core.rng import make_rng
from spacy_ag.core.state import CLOSED, OPEN, RULE, TABLE, TERM, alloc_node, new_state, trie_insert
from spacy_ag.grammar.rules import Adaptor, Grammar, Rule


@pytest.fixture(scope="session")
def core():
    """This module: the helper functions below."""
    return sys.modules[__name__]


#: The unigram grammar over the corpus's characters (Word adapted with the default a and b).
UNIGRAM = "1 1 Sentence --> Word+\nWord --> Char+\n1 1 Char --> [:corpus:]\n"


def engine_config(iterations: int, checkpoint_every: int) -> str:
    """An engine config over grammars/unigram.lt and ${paths.train}: batch initialisation, seed 0."""
    return f"""\
[paths]
train = null
gold = null
output = null

[grammar]
path = "grammars/unigram.lt"
default_a = 0.0001
default_b = 10000
segment_category = "Word"

[corpus]
path = ${{paths.train}}
gold = false

[sampler]
init = "batch"

[training]
iterations = {iterations}
seed = 0
sample_every = 2
checkpoint_every = {checkpoint_every}
"""


#: An online (or vb: `mode`) engine config over unigram.lt and the gold-segmented `train`, seed 3.
ONLINE_CONFIG = """\
[paths]
train = "{train}"

[grammar]
path = "unigram.lt"
default_a = 0.0
default_b = 100

[corpus]
path = ${{paths.train}}
gold = true

[inference]
mode = "{mode}"

[online]
batch_size = 10
tau = 16
kappa = 0.7
refine_every = 5
truncation = {{"Word": 40}}
passes = {passes}
update_b = false

[training]
seed = 3
checkpoint_every = 7
"""


def assert_one_error_line(result, *fragments):
    """A CLI failure: exit code 1, one `✘` line on stderr naming every fragment, no traceback."""
    assert result.exit_code == 1, (result.exit_code, result.output)
    err = result.stderr.strip().splitlines()
    assert len(err) == 1, result.stderr
    assert err[0].startswith("✘ "), err[0]
    assert "Traceback" not in result.output
    for fragment in fragments:
        assert fragment in err[0], (fragment, err[0])
    return err[0]


# ---------------------------------------------------------------------------
# Ray clusters of the tests (tests/test_ray_backend.py, tests/test_annotate_dir.py)

NO_RAY = "Ray is not installed (pip install spacy-ag[ray]); the Ray backend is not tested"


@pytest.fixture(scope="module")
def cluster():
    """A local Ray cluster of two CPUs for the module."""
    ray = pytest.importorskip("ray", reason=NO_RAY)
    ray.init(num_cpus=2, include_dashboard=False, logging_level="WARNING")
    yield ray
    ray.shutdown()


def run_driver(script: str, task) -> dict:
    """Run `script` as a Ray driver process of its own (a process that was the driver of another
    cluster keeps that one's settings), `task` as JSON on its stdin; returns the JSON of its last line."""
    done = subprocess.run([sys.executable, "-c", script], input=json.dumps(task), capture_output=True,
                          text=True, timeout=300)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout.strip().splitlines()[-1])


def record_numba_threads(monkeypatch, module, name: str) -> list:
    """Wrap `module.name` so that each call records numba's thread count then; returns the records
    (a test of a parallel path checks that it really ran on more than one thread)."""
    import numba

    seen = []
    real = getattr(module, name)

    def recording(*args):
        seen.append(numba.get_num_threads())
        return real(*args)

    monkeypatch.setattr(module, name, recording)
    return seen


def processes_of(folder: str):
    """The processes whose command line names `folder`, with their descendants (Ray's agents and workers)."""
    table = {}
    for entry in os.listdir("/proc"):
        if not entry.isdigit() or int(entry) == os.getpid():
            continue
        try:
            with open(f"/proc/{entry}/cmdline", "rb") as f:
                cmd = f.read().replace(b"\0", b" ").decode(errors="replace")
            with open(f"/proc/{entry}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except (OSError, IndexError):
            continue
        if fields[0] != "Z":  # a zombie is gone already
            table[int(entry)] = (int(fields[1]), cmd)
    ours = {pid for pid, (_, cmd) in table.items() if folder in cmd}
    while True:
        children = {pid for pid, (parent, _) in table.items() if parent in ours} - ours
        if not children:
            return ours
        ours |= children


def stop_processes(pids, grace: float = 5.0) -> None:
    for sig in (signal.SIGTERM, signal.SIGKILL):
        for pid in pids:
            with contextlib.suppress(ProcessLookupError):
                os.kill(pid, sig)
        deadline = time.monotonic() + grace
        while time.monotonic() < deadline and any(os.path.exists(f"/proc/{pid}") and
                                                  not _zombie(pid) for pid in pids):
            time.sleep(0.2)


def _zombie(pid: int) -> bool:
    try:
        with open(f"/proc/{pid}/stat") as f:
            return f.read().rsplit(")", 1)[1].split()[0] == "Z"
    except OSError:
        return True



@pytest.fixture
def two_raylets(monkeypatch):
    """A head of one CPU and a second raylet of one CPU joined to it: two nodes on this machine.

    Both keep their sockets and logs in a folder of their own, by which the
    teardown finds and stops exactly their processes (not `ray stop`, which
    stops every Ray process of the machine).
    """
    pytest.importorskip("ray", reason=NO_RAY)
    if not sys.platform.startswith("linux"):
        pytest.skip("finds the raylets' processes in /proc")
    ray_cli = shutil.which("ray", path=os.path.dirname(sys.executable)) or shutil.which("ray")
    if ray_cli is None:
        pytest.skip("the `ray` command is not on PATH; two raylets cannot be started")
    folder = tempfile.mkdtemp(prefix="sag-ray-", dir="/tmp")  # short: a socket path has at most 107 bytes
    monkeypatch.setenv("RAY_AUTH_MODE", "disabled")  # the driver and both raylets, without a shared token
    env = {**os.environ, "RAY_TMPDIR": folder}
    run = dict(env=env, capture_output=True, text=True, timeout=120)
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    common = ["--num-cpus=1", "--node-ip-address=127.0.0.1", "--disable-usage-stats"]
    try:
        head = subprocess.run([ray_cli, "start", "--head", f"--port={port}", "--include-dashboard=false", *common],
                              **run)
        if head.returncode != 0:
            pytest.skip(f"`ray start --head` failed: {head.stderr.strip().splitlines()[-1:]}")
        second = subprocess.run([ray_cli, "start", f"--address=127.0.0.1:{port}", *common], **run)
        assert second.returncode == 0, second.stderr
        yield f"127.0.0.1:{port}"
    finally:
        stop_processes(processes_of(folder))
        assert not processes_of(folder)
        shutil.rmtree(folder, ignore_errors=True)


# ---------------------------------------------------------------------------
# grammars


def _rules(text):
    """'Parent -> X Y [w]' lines -> Rules (weight 1 unless given in brackets)."""
    out = []
    for line in text.strip().splitlines():
        line = line.strip()
        if not line:
            continue
        w = 1.0
        if line.endswith("]"):
            line, w = line[:-1].rsplit("[", 1)
            w = float(w)
        lhs, rhs = line.split("->")
        out.append(Rule(lhs.strip(), tuple(rhs.split()), w))
    return out


def toy_grammar(a=0.0, b=1.0):
    """docs/algorithms.md 2.6 (fixed theta: Words -> Word 0.01, Words -> Word Words 0.99)."""
    rules = _rules("""
        Words -> Word [1]
        Words -> Word Words [99]
        Word -> Chars
        Chars -> Char
        Chars -> Char Chars
        Char -> a
        Char -> b
        Char -> c
    """)
    return Grammar("Words", rules, {"Word": Adaptor(a, b)})


def unigram_grammar(chars, a=0.0, b=1.0):
    """docs/algorithms.md 2.1, [JG09] form."""
    rules = _rules("""
        Sentence -> Word
        Sentence -> Word Sentence
        Word -> Phonemes
        Phonemes -> Phoneme
        Phonemes -> Phoneme Phonemes
    """) + [Rule("Phoneme", (c,)) for c in chars]
    return Grammar("Sentence", rules, {"Word": Adaptor(a, b)})


def colloc_grammar(chars, a=0.0, b=1.0, a2=None, b2=None):
    """docs/algorithms.md 2.2, [JG09] form (Colloc and Word adapted)."""
    rules = _rules("""
        Sentence -> Colloc
        Sentence -> Colloc Sentence
        Colloc -> Words
        Words -> Word
        Words -> Word Words
        Word -> Phonemes
        Phonemes -> Phoneme
        Phonemes -> Phoneme Phonemes
    """) + [Rule("Phoneme", (c,)) for c in chars]
    a2 = a if a2 is None else a2
    b2 = b if b2 is None else b2
    return Grammar("Sentence", rules, {"Colloc": Adaptor(a, b), "Word": Adaptor(a2, b2)})


def ternary_grammar():
    """Rules of 3 and 4 children sharing prefixes (binarization, 3.4); no terminals inside."""
    rules = _rules("""
        S -> A B C [2]
        S -> A B [1]
        S -> A B C A [3]
        S -> B B B [1]
        S -> A [1]
        A -> a [2]
        A -> A A [1]
        B -> b [1]
        B -> a [1]
        B -> B B [1]
        C -> a [1]
        C -> b [2]
        C -> A [1]
    """)
    return Grammar("S", rules, {})


def mixed_grammar():
    """Terminals inside longer right-hand sides, e.g. A -> a B, S -> a S b."""
    rules = _rules("""
        S -> a S b [1]
        S -> A B [2]
        S -> A [1]
        A -> a B [1]
        A -> a [2]
        A -> b a a [1]
        B -> b [1]
        B -> A b [2]
        B -> b b [1]
    """)
    return Grammar("S", rules, {})


def unary_grammar(a=0.3, b=2.0):
    """Unary chains (S -> X -> Y -> Z, some above binary rules) with an adapted symbol inside."""
    rules = _rules("""
        S -> X [1]
        S -> S X [1]
        X -> Y [2]
        X -> W [4]
        X -> Y c [1]
        Y -> Z [3]
        Y -> Z Z [1]
        W -> Z Y [1]
        W -> Z [1]
        Z -> a [1]
        Z -> b [1]
        Z -> c [1]
    """)
    return Grammar("S", rules, {"W": Adaptor(a, b)})


def rule_id(compiled, text):
    """Id of the rule written 'Parent -> X Y'."""
    lhs, rhs = text.split("->")
    key = (lhs.strip(), tuple(rhs.split()))
    for r, rule in enumerate(compiled.grammar.rules):
        if (rule.parent, rule.children) == key:
            return r
    raise KeyError(text)


def all_strings(alphabet, max_len):
    for n in range(1, max_len + 1):
        for s in itertools.product(alphabet, repeat=n):
            yield "".join(s)


# ---------------------------------------------------------------------------
# state helpers


def empty_state(compiled, n_sentences=8, seed=0, node_cap=4096, tab_cap=512, trie_cap=2048):
    G = compiled.arrays
    a, b = compiled.adaptor_params()
    return new_state(G.rule_parent.shape[0], G.n_nt, G.adaptor_nt.shape[0], n_sentences, a, b,
                     make_rng(seed), node_cap=node_cap, tab_cap=tab_cap, trie_cap=trie_cap)


def stack_for(S):
    return np.zeros(2 * S.node_kind.shape[0] + 16, np.int32)


def children(S, x):
    out = []
    c = int(S.node_child[x])
    while c >= 0:
        out.append(c)
        c = int(S.node_sib[c])
    return out


def to_tuple(S, x):
    """Pool tree -> nested tuples ('T', t) / ('R', r, kids) / ('NEW', r, kids) / ('TAB', k) / ('CLOSED', k)."""
    kind = int(S.node_kind[x])
    if kind == TERM:
        return ("T", int(S.node_sym[x]))
    if kind == RULE:
        return ("R", int(S.node_rule[x]), tuple(to_tuple(S, c) for c in children(S, x)))
    assert kind == TABLE, kind
    k = int(S.node_table[x])
    if k < 0:
        label = int(S.node_child[x])
        return ("NEW", int(S.node_rule[label]), tuple(to_tuple(S, c) for c in children(S, label)))
    if int(S.tab_state[k]) == OPEN:
        return ("TAB", k)
    return ("CLOSED", k)


def yield_of(S, x):
    """Terminal ids below pool node x, looking through tables into their labels."""
    out = []
    todo = [x]
    while todo:
        y = todo.pop()
        kind = int(S.node_kind[y])
        if kind == TERM:
            out.append(int(S.node_sym[y]))
        elif kind == RULE:
            todo.extend(reversed(children(S, y)))
        else:
            k = int(S.node_table[y])
            todo.append(int(S.node_child[y]) if k < 0 else int(S.tab_label[k]))
    return tuple(out)


def recount(compiled, S, roots):
    """All counts of 3.1 recomputed from the stored analyses (the trees under `roots`).

    Returns dict(f, fA, customers={table: n}, tables={table: (adaptor, yield, root rule)}).
    A table label counts once however many customers the table has.
    """
    G = compiled.arrays
    f = np.zeros(G.rule_parent.shape[0], np.int64)
    fA = np.zeros(G.n_nt, np.int64)
    customers = Counter()
    tables = {}
    fragments = list(roots)
    while fragments:
        todo = [fragments.pop()]
        while todo:
            x = todo.pop()
            kind = int(S.node_kind[x])
            if kind == TERM:
                continue
            if kind == RULE:
                r = int(S.node_rule[x])
                assert int(G.rule_parent[r]) == int(S.node_sym[x]), "rule node with a foreign rule"
                f[r] += 1
                fA[G.rule_parent[r]] += 1
                todo.extend(children(S, x))
                continue
            k = int(S.node_table[x])
            assert k >= 0, "a stored analysis still holds a NEW node"
            customers[k] += 1
            if k not in tables:
                label = int(S.tab_label[k])
                ad = int(G.sym_adaptor[S.node_sym[x]])
                assert ad >= 0 and int(S.tab_adaptor[k]) == ad
                assert int(S.node_sym[label]) == int(S.node_sym[x])
                tables[k] = (ad, yield_of(S, label), int(S.node_rule[label]))
                fragments.append(label)
    return dict(f=f, fA=fA, customers=dict(customers), tables=tables)


def live_roots(S):
    return [int(r) for r in S.sent_root if r >= 0]


def _spec_yield(compiled, S, spec):
    tag = spec[0]
    if tag == "T":
        return (compiled.term_index[spec[1]],)
    if tag == "TAB":
        return yield_of(S, int(S.tab_label[spec[1]]))
    kids = spec[2] if tag != "SHARED" else spec[3]
    return tuple(t for c in kids for t in _spec_yield(compiled, S, c))


def _trie_node(compiled, S, terms):
    y = 0
    for t in terms:
        y = int(trie_insert(S, y, t, compiled.arrays.n_term))
    return y


def build(compiled, S, spec, shared=None):
    """Write a hand-made analysis into the pool; return its root node.

    spec: ('T', 'a') | ('R', 'A -> B C', [kids]) | ('NEW', 'A -> B', [kids]) (a new table
    for adapted A: TABLE node with table -1 over a label RULE node) | ('TAB', k) (a customer
    of existing table k) | ('SHARED', key, rule, kids) (a customer of the table `shared[key]`).
    """
    tag = spec[0]
    if tag == "T":
        return int(alloc_node(S, TERM, compiled.term_index[spec[1]], -1))
    if tag == "TAB" or tag == "SHARED":
        k = spec[1] if tag == "TAB" else shared[spec[1]]
        label = int(S.tab_label[k])
        x = int(alloc_node(S, TABLE, int(S.node_sym[label]), -1))
        S.node_table[x] = k
        S.node_aux[x] = S.tab_yield[k]
        return x
    r = rule_id(compiled, spec[1])
    A = int(compiled.arrays.rule_parent[r])
    kids = [build(compiled, S, c, shared) for c in spec[2]]
    if tag == "R":
        x = owner = int(alloc_node(S, RULE, A, r))
    else:
        assert tag == "NEW"
        x = int(alloc_node(S, TABLE, A, -1))
        S.node_aux[x] = _trie_node(compiled, S, _spec_yield(compiled, S, spec))
        owner = int(alloc_node(S, RULE, A, r))
        S.node_child[x] = owner
    for c, nxt in zip(kids, kids[1:] + [-1]):
        S.node_sib[c] = nxt
    S.node_child[owner] = kids[0] if kids else -1
    return x


def _shared_specs(spec, out):
    if spec[0] == "SHARED":
        out.setdefault(spec[1], ("NEW", spec[2], spec[3]))
        for c in spec[3]:
            _shared_specs(c, out)
    elif spec[0] in ("R", "NEW"):
        for c in spec[2]:
            _shared_specs(c, out)
    return out


def build_detached(compiled, S, spec, collapsed):
    """Build an analysis whose SHARED nodes are the only customers of CLOSED tables.

    This is the library's form of a detached copy with New/Join nodes (3.7): the
    first reference that `add` visits reopens the table, later ones join it. It
    is produced through the public operations only: each shared table is opened
    by a helper analysis, the target joins it, then both are removed again.
    """
    from spacy_ag.core.analyses import add, remove

    G = compiled.arrays
    stack = stack_for(S)
    specs = _shared_specs(spec, {})
    shared, helpers = {}, []
    for key, new_spec in specs.items():
        h = build(compiled, S, new_spec, shared)
        add(G, S, h, collapsed, stack)
        shared[key] = int(S.node_table[h])
        helpers.append(h)
    root = build(compiled, S, spec, shared)
    add(G, S, root, collapsed, stack)
    for h in helpers:
        remove(G, S, h, collapsed, stack)
    remove(G, S, root, collapsed, stack)
    for k in shared.values():
        assert int(S.tab_state[k]) == CLOSED
    return root


# toy-grammar analyses -------------------------------------------------------


def chars_spec(word, prefix="Chars", char="Char"):
    """Right-branching Chars -> Char Chars spelling of `word`."""
    head = ("R", f"{char} -> {word[0]}", [("T", word[0])])
    if len(word) == 1:
        return ("R", f"{prefix} -> {char}", [head])
    return ("R", f"{prefix} -> {char} {prefix}", [head, chars_spec(word[1:], prefix, char)])


def toy_word(word, how="NEW", key=None):
    """A Word of the toy grammar: a new table, a customer of table `how` (int), or SHARED."""
    if isinstance(how, int):
        return ("TAB", how)
    if how == "SHARED":
        return ("SHARED", key, "Word -> Chars", [chars_spec(word)])
    return ("NEW", "Word -> Chars", [chars_spec(word)])


def toy_sentence(words):
    """Words spine over the given Word specs."""
    if len(words) == 1:
        return ("R", "Words -> Word", [words[0]])
    return ("R", "Words -> Word Words", [words[0], toy_sentence(words[1:])])


# ---------------------------------------------------------------------------
# the brute-force reference model


class Reference:
    """G' of a state (3.3), written from the Grammar object, and all its derivations.

    tables: {k: (adaptor, yield tuple, customers)}; f, fA: rule counts.
    """

    def __init__(self, compiled, tables=None, f=None, fA=None, a=None, b=None, collapsed=False,
                 inv_temp=1.0, skip_ad=-1):
        g = compiled.grammar
        self.compiled = compiled
        self.rules = g.rules
        self.nt = compiled.nt_index
        self.term = compiled.term_index
        self.adapted = compiled.adapted
        n_rules = len(g.rules)
        self.f = np.zeros(n_rules) if f is None else np.asarray(f, float)
        self.fA = np.zeros(len(self.nt)) if fA is None else np.asarray(fA, float)
        pa, pb = compiled.adaptor_params()
        self.a = pa if a is None else np.asarray(a, float)
        self.b = pb if b is None else np.asarray(b, float)
        self.tables = dict(tables or {})
        self.collapsed = collapsed
        self.inv_temp = inv_temp
        self.skip_ad = skip_ad
        self.by_parent = defaultdict(list)
        for r, rule in enumerate(g.rules):
            self.by_parent[rule.parent].append(r)
        #: `@ NT max_span=N`: NT derives no string longer than N
        self.max_span = {x: a.options["max_span"] for x, a in g.adaptors.items() if "max_span" in a.options}
        self.m = np.zeros(len(self.adapted))
        self.n = np.zeros(len(self.adapted))
        for ad, _, cnt in self.tables.values():
            self.m[ad] += 1
            self.n[ad] += cnt
        self._memo = {}

    @classmethod
    def from_state(cls, compiled, S, roots, collapsed=False, **kw):
        rc = recount(compiled, S, roots)
        tables = {k: (ad, y, rc["customers"][k]) for k, (ad, y, _) in rc["tables"].items()}
        return cls(compiled, tables, rc["f"], rc["fA"], np.array(S.ad_a), np.array(S.ad_b),
                   collapsed, **kw)

    def theta(self, r):
        rule = self.rules[r]
        sibs = self.by_parent[rule.parent]
        total = sum(self.rules[q].weight for q in sibs)
        if not self.collapsed:
            return rule.weight / total
        A = self.nt[rule.parent]
        return (self.f[r] + rule.weight) / (self.fA[A] + total)

    def lam(self, ad):
        return (self.m[ad] * self.a[ad] + self.b[ad]) / (self.n[ad] + self.b[ad])

    def omega(self, k):
        ad, _, cnt = self.tables[k]
        return (cnt - self.a[ad]) / (self.n[ad] + self.b[ad])

    def rho(self, r):
        parent = self.rules[r].parent
        w = self.theta(r)
        if parent in self.adapted:
            ad = self.adapted.index(parent)
            if ad != self.skip_ad:
                w *= self.lam(ad)
        return w ** self.inv_temp

    def analyses(self, X, s):
        """[(tree, weight)] for every G' derivation of nonterminal X over terminal ids s."""
        key = (X, s)
        if key in self._memo:
            return self._memo[key]
        out = []
        if len(s) > self.max_span.get(X, len(s)):
            return out
        ad = self.adapted.index(X) if X in self.adapted else -1
        cache_on = ad >= 0 and ad != self.skip_ad
        if cache_on:
            for k, (tad, y, _) in sorted(self.tables.items()):
                if tad == ad and y == s:
                    out.append((("TAB", k), self.omega(k) ** self.inv_temp))
        for r in self.by_parent[X]:
            kids = self.rules[r].children
            w = self.rho(r)
            for parts in _compositions(s, len(kids)):
                options = []
                for c, part in zip(kids, parts):
                    if c in self.nt:
                        options.append(self.analyses(c, part))
                    else:
                        options.append([(("T", self.term[c]), 1.0)] if part == (self.term[c],) else [])
                for combo in itertools.product(*options):
                    tree = ("NEW" if cache_on else "R", r, tuple(t for t, _ in combo))
                    out.append((tree, w * math.prod(v for _, v in combo)))
        self._memo[key] = out
        return out

    def prob(self, X, s):
        """Sum of the weights of all derivations (the same recursion, summing instead of listing)."""
        key = ("p", X, s)
        if key in self._memo:
            return self._memo[key]
        total = 0.0
        if len(s) > self.max_span.get(X, len(s)):
            return total
        ad = self.adapted.index(X) if X in self.adapted else -1
        if ad >= 0 and ad != self.skip_ad:
            for k, (tad, y, _) in sorted(self.tables.items()):
                if tad == ad and y == s:
                    total += self.omega(k) ** self.inv_temp
        for r in self.by_parent[X]:
            kids = self.rules[r].children
            w = self.rho(r)
            for parts in _compositions(s, len(kids)):
                v = w
                for c, part in zip(kids, parts):
                    if c in self.nt:
                        v *= self.prob(c, part)
                    elif part != (self.term[c],):
                        v = 0.0
                    if v == 0.0:
                        break
                total += v
        self._memo[key] = total
        return total


def _compositions(s, k):
    """All ways to cut tuple s into k non-empty consecutive parts."""
    n = len(s)
    if k > n:
        return
    for cuts in itertools.combinations(range(1, n), k - 1):
        bounds = (0,) + cuts + (n,)
        yield tuple(s[bounds[i]:bounds[i + 1]] for i in range(k))
