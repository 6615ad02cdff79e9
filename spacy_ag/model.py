"""`AdaptorGrammar`: the one model class the CLI and the spaCy components wrap.

Data path: grammar file -> `Grammar` -> `CompiledGrammar` arrays -> chains of
compiled kernels -> a trained state, which parses and segments new text.
"""
from __future__ import annotations

import io
import os
import zipfile
from dataclasses import asdict
from pathlib import Path
from typing import Dict, Iterable, List, Optional, Sequence, Union

import numpy as np

from .core.chain import SamplerSettings, UnparseableSentence, pack_corpus
from .core.compiled import CompiledGrammar
from .core.state import State
from .core.viterbi import (
    ITEM_TABLE, ITEM_TERM, log_rho, segment_batch, viterbi_chart, viterbi_items,
)
from .corpus import Corpus, read_corpus
from .grammar import (
    Grammar, GrammarError, expand_corpus_class, has_corpus_class, parse_grammar_text, read_grammar,
    write_pycfg,
)
from .grammar.checks import uncovered_error
from .serialize import (
    ModelFileError, meta_header, npz_bytes, read_npz, read_npz_bytes, state_arrays, state_from_arrays,
    write_npz_atomic, zip_bytes,
)
from .training import (
    ChainJob, MarginalCounts, TraceCallback, TrainingInterrupted, TrainingSettings, corpus_fingerprint,
    default_workers, run_chains, words_from_key,
)
from .tree import Tree

PathLike = Union[str, os.PathLike]


class AdaptorGrammar:
    """An adaptor grammar trained by MCMC, able to parse and segment new text.

    >>> ag = AdaptorGrammar("configs/grammars/unigram.lt")
    >>> ag.fit(["yuwanttusiD6bUk", ...], iterations=200)
    >>> ag.segment(["lUk&tDIs"])
    """

    def __init__(self, grammar: Union[Grammar, PathLike], *, segment_category: str = "Word",
                 mode: str = "chars", split_at: Optional[Iterable[str]] = None,
                 sampler: Optional[SamplerSettings] = None, **grammar_options):
        if not isinstance(grammar, Grammar):
            grammar = read_grammar(grammar, **grammar_options)
        self.grammar = grammar
        self.segment_category = segment_category
        self.mode = mode
        self.split_at = frozenset(split_at) if split_at else None
        self.sampler = sampler or SamplerSettings()
        self.compiled: Optional[CompiledGrammar] = None
        self.state: Optional[State] = None
        self.trace: List[Dict] = []
        self.training_corpus: Optional[Corpus] = None
        self.marginals: Optional[MarginalCounts] = None
        if segment_category not in grammar.nonterminals:
            raise GrammarError(f"segmentation category {segment_category!r} is not a nonterminal of the "
                               f"grammar; choose one of {', '.join(grammar.nonterminals)}", grammar.path)
        if not has_corpus_class(grammar):
            self.compiled = CompiledGrammar(grammar)

    # ------------------------------------------------------------------ training
    def read_corpus(self, corpus: Union[Corpus, PathLike, Sequence[str]]) -> Corpus:
        if isinstance(corpus, Corpus):
            return corpus
        if isinstance(corpus, (str, os.PathLike)) and not isinstance(corpus, str) or (
                isinstance(corpus, str) and "\n" not in corpus and Path(corpus).exists()):
            return read_corpus(corpus, mode=self.mode, split_at=self.split_at)
        if isinstance(corpus, str):
            raise FileNotFoundError(f"corpus file not found: {corpus}")
        return read_corpus(list(corpus), mode=self.mode, split_at=self.split_at, source="<texts>")

    def _prepare(self, corpus: Corpus) -> CompiledGrammar:
        if self.compiled is None:
            self.grammar = expand_corpus_class(self.grammar, corpus.alphabet())
            self.compiled = CompiledGrammar(self.grammar)
        known = self.compiled.term_index
        missing = {t: corpus.first_line_of(t) for t in corpus.alphabet() if t not in known}
        if missing:
            raise uncovered_error(self.grammar, missing, corpus.path or "<corpus>", self.mode)
        if not len(corpus):
            raise ValueError(f"{corpus.path or 'corpus'}: no text to train on")
        return self.compiled

    def fit(self, corpus: Union[Corpus, PathLike, Sequence[str]], *, iterations: int = 2000,
            chains: int = 1, seed: int = 0, burn_in: Optional[int] = None, sample_every: int = 10,
            callback: Optional[TraceCallback] = None, checkpoint_dir: Optional[PathLike] = None,
            checkpoint_every: int = 50, resume: bool = False, workers: int = 0,
            gold: Optional[Sequence[Sequence[str]]] = None, eval_every: int = 0,
            eval_at: Sequence[int] = ()) -> "AdaptorGrammar":
        """Train by MCMC; keep samples for maximum-marginal decoding (3.15).

        `gold`, one word list per corpus sentence, adds `token_f` to the trace
        every `eval_every` iterations and at the iterations `eval_at`. With
        `checkpoint_dir`, every chain writes a checkpoint there; `resume=True`
        continues from them.
        """
        corpus = self.read_corpus(corpus)
        compiled = self._prepare(corpus)
        training = TrainingSettings(iterations=iterations, chains=chains, seed=seed, burn_in=burn_in,
                                    sample_every=sample_every, checkpoint_every=checkpoint_every,
                                    eval_every=eval_every, eval_at=tuple(eval_at), workers=workers)
        words, sent_ptr = pack_corpus(compiled, corpus.sentences)
        fingerprint = corpus_fingerprint(words, sent_ptr, write_pycfg(self.grammar))
        seg_sym = compiled.nt_index[self.segment_category]
        jobs = []
        for c in range(chains):
            ckpt = str(Path(checkpoint_dir) / f"chain-{c}.npz") if checkpoint_dir else None
            jobs.append(ChainJob(compiled, words, sent_ptr, self.sampler, training, c, seg_sym,
                                 fingerprint, ckpt, resume, list(gold) if gold else None,
                                 corpus.sentences if gold else None))
        try:
            results = run_chains(jobs, workers or default_workers(chains), callback)
        except UnparseableSentence as err:
            raise ValueError(f"{corpus.path or 'corpus'}:{corpus.lines[err.index]}: this sentence has no "
                             "parse under the grammar; check the grammar with `spacy-ag check-grammar`") from None
        except TrainingInterrupted:
            raise
        self.state = state_from_arrays(results[0].state_arrays, "chain 0")
        self.chain_states = [state_from_arrays(r.state_arrays, f"chain {r.chain_index}") for r in results]
        self.trace = [line for r in results for line in r.trace]
        self.marginals = MarginalCounts(len(corpus))
        for r in results:
            self.marginals.merge(r.marginals)
        self.training_corpus = corpus
        return self

    def training_segmentation(self) -> List[List[str]]:
        """Maximum-marginal segmentation of the training corpus, one word list per utterance."""
        if self.marginals is None or self.training_corpus is None:
            raise RuntimeError("the model has not been fitted in this session")
        corpus = self.training_corpus
        keys = self.marginals.best()
        return corpus.reassemble([words_from_key(s, k) for s, k in zip(corpus.sentences, keys)])

    # ------------------------------------------------------------------ new text
    def _require_state(self):
        if self.state is None or self.compiled is None:
            raise RuntimeError("the model has no trained state: call fit() or load() first")

    def _lrho(self) -> np.ndarray:
        """log theta' of every rule; cached, since parsing never changes the state."""
        cached = getattr(self, "_lrho_cache", None)
        if cached is not None and cached[0] is self.state:
            return cached[1]
        lrho = np.zeros(self.compiled.arrays.rule_parent.shape[0])
        log_rho(self.compiled.arrays, self.state, lrho, self.sampler.collapsed)
        self._lrho_cache = (self.state, lrho)
        return lrho

    def _terminals(self, text) -> List[str]:
        if isinstance(text, str):
            return text.split() if self.mode == "tokens" else [c for c in text if not c.isspace()]
        return list(text)

    def segment(self, texts: Iterable, category: Optional[str] = None) -> List[List[str]]:
        """Most probable segmentation of each text under the trained state.

        Whitespace, the `split_at` characters and symbols never seen in
        training are hard boundaries and words of their own, so any text
        segments without error.
        """
        self._require_state()
        compiled = self.compiled
        seg_sym = compiled.nt_index[category or self.segment_category]
        texts = [list(t) if isinstance(t, str) and self.mode == "chars" else self._terminals(t)
                 for t in texts]
        chunks, plan = [], []
        for terms in texts:
            pieces, current = [], []
            for t in terms:
                hard = t.isspace() or t not in compiled.term_index or (self.split_at and t in self.split_at)
                if hard:
                    if current:
                        pieces.append(("parse", len(chunks)))
                        chunks.append(current)
                        current = []
                    if not t.isspace():
                        pieces.append(("word", t))
                else:
                    current.append(t)
            if current:
                pieces.append(("parse", len(chunks)))
                chunks.append(current)
            plan.append(pieces)
        words, ptr = pack_corpus(compiled, chunks)
        marks = np.zeros(len(words) + len(chunks), np.uint8)
        scores = np.zeros(len(chunks))
        if chunks:
            segment_batch(compiled.arrays, self.state, words, ptr, self._lrho(), seg_sym, marks, scores)
        out = []
        for pieces in plan:
            result = []
            for kind, value in pieces:
                if kind == "word":
                    result.append(value)
                    continue
                d = value
                sentence = chunks[d]
                if scores[d] == -np.inf:  # no parse: keep the chunk whole
                    result.append("".join(sentence))
                    continue
                key = marks[ptr[d] + d: ptr[d + 1] + d + 1].tobytes()
                result.extend(words_from_key(sentence, key))
            out.append(result)
        return out

    def parse(self, texts: Iterable) -> List[Optional[Tree]]:
        """The most probable tree of each text (None if the grammar cannot parse it)."""
        self._require_state()
        G, S = self.compiled.arrays, self.state
        lrho = self._lrho()
        out: List[Optional[Tree]] = []
        for text in texts:
            terms = self._terminals(text)
            ids = self.compiled.encode(terms)
            n = len(ids)
            if n == 0 or (ids < 0).any():
                out.append(None)
                continue
            vchart = np.empty((n + 1, n + 1, G.n_sym))
            ynode = np.full((n + 1, n + 1), -1, np.int32)
            if viterbi_chart(G, S, ids, n, lrho, vchart, ynode) == -np.inf:
                out.append(None)
                continue
            size = 8 * n * (G.n_sym + 2) + 8
            items = np.empty((size, 6), np.int64)
            tasks = np.empty((size, 4), np.int64)
            n_items = viterbi_items(G, S, ids, n, lrho, vchart, ynode, items, tasks)
            out.append(self._tree_from_items(items[:n_items]))
        return out

    def _tree_from_items(self, items: np.ndarray) -> Tree:
        names = self.compiled.symbol_names
        terminals = self.compiled.terminals
        adapted = set(self.compiled.adapted)
        nodes: List[Tree] = []
        for kind, sym, what, i, j, parent in items.tolist():
            if kind == ITEM_TERM:
                node = terminals[what]
            elif kind == ITEM_TABLE:
                node = self.table_tree(what, start=i)
            else:
                node = Tree(names[sym], [], i, j, adapted=names[sym] in adapted)
            nodes.append(node)
            if parent >= 0:
                nodes[parent].children.append(node)
        return nodes[0]

    def table_tree(self, table: int, start: int = 0) -> Tree:
        """The label of a table (a cached subtree) as a Tree, positioned at `start`."""
        S = self.state
        tree = self._pool_tree(int(S.tab_label[table]), start)
        tree.cached = True
        return tree

    def _pool_tree(self, node: int, start: int) -> Tree:
        S, names, terminals = self.state, self.compiled.symbol_names, self.compiled.terminals
        adapted = set(self.compiled.adapted)
        tree = Tree(names[S.node_sym[node]], [], start, start, adapted=names[S.node_sym[node]] in adapted)
        pos = start
        child = int(S.node_child[node])
        while child >= 0:
            kind = S.node_kind[child]
            if kind == 0:  # TERM
                tree.children.append(terminals[S.node_sym[child]])
                pos += 1
            else:
                sub = self.table_tree(int(S.node_table[child]), pos) if kind == 2 else self._pool_tree(child, pos)
                tree.children.append(sub)
                pos = sub.end
            child = int(S.node_sib[child])
        tree.end = pos
        return tree

    def cache(self, category: Optional[str] = None, top: Optional[int] = None) -> List[Dict]:
        """Cached subtrees of an adapted nonterminal, most customers first (the learned units)."""
        self._require_state()
        S, names = self.state, self.compiled.adapted
        category = category or self.segment_category
        if category not in names:
            raise ValueError(f"{category!r} is not adapted; adapted: {', '.join(names)}")
        ad = names.index(category)
        from .core.state import OPEN, TAB_HWM
        n_tab = int(S.counters[TAB_HWM])
        open_ = np.nonzero((S.tab_state[:n_tab] == OPEN) & (S.tab_adaptor[:n_tab] == ad))[0]
        open_ = open_[np.argsort(-S.tab_count[open_], kind="stable")]
        if top:
            open_ = open_[:top]
        return [{"yield": "".join(self.table_tree(int(k)).leaves()), "customers": int(S.tab_count[k])}
                for k in open_]

    # ------------------------------------------------------------------ saving
    def save(self, path: PathLike) -> None:
        """A directory: the expanded grammar (py-cfg text) and the state (npz with a JSON header)."""
        self._require_state()
        path = Path(path)
        path.mkdir(parents=True, exist_ok=True)
        grammar_text = write_pycfg(self.grammar, include_options=True)
        (path / "grammar.lt").write_text(grammar_text, encoding="utf8")
        meta = meta_header("model", segment_category=self.segment_category, mode=self.mode,
                           split_at=sorted(self.split_at) if self.split_at else None,
                           start=self.grammar.start, sampler=asdict(self.sampler),
                           trace_tail=self.trace[-1:] if self.trace else [])
        write_npz_atomic(path / "state.npz", state_arrays(self.state), meta)

    def _meta(self) -> Dict:
        return meta_header("model", segment_category=self.segment_category, mode=self.mode,
                           split_at=sorted(self.split_at) if self.split_at else None,
                           start=self.grammar.start, sampler=asdict(self.sampler),
                           trace_tail=self.trace[-1:] if self.trace else [])

    def to_bytes(self) -> bytes:
        """The model as bytes: the same content as `save` (py-cfg grammar text and an
        npz state with a JSON header) in one zip archive, written deterministically
        (fixed timestamps, sorted members) so equal models give equal bytes. No pickle."""
        self._require_state()
        members = {"grammar.lt": write_pycfg(self.grammar, include_options=True).encode("utf8"),
                   "state.npz": npz_bytes(state_arrays(self.state), self._meta())}
        return zip_bytes(members)

    @classmethod
    def from_bytes(cls, data: bytes, source: str = "<bytes>") -> "AdaptorGrammar":
        """Inverse of `to_bytes`; `source` names the data in error messages."""
        try:
            with zipfile.ZipFile(io.BytesIO(data)) as zf:
                members = {name: zf.read(name) for name in zf.namelist()}
        except (zipfile.BadZipFile, OSError, ValueError, EOFError) as err:
            raise ModelFileError(f"{source}: damaged or not a spacy-ag model ({err})") from None
        for name in ("grammar.lt", "state.npz"):
            if name not in members:
                raise ModelFileError(f"{source}: not a spacy-ag model ({name} missing)")
        arrays, meta = read_npz_bytes(members["state.npz"], f"{source}/state.npz", "model")
        return cls._from_parts(members["grammar.lt"].decode("utf8"), f"{source}/grammar.lt", arrays, meta,
                               f"{source}/state.npz")

    @classmethod
    def _from_parts(cls, grammar_text: str, grammar_source: str, arrays: Dict[str, np.ndarray],
                    meta: Dict, state_source: str) -> "AdaptorGrammar":
        try:
            start, category, mode = meta["start"], meta["segment_category"], meta["mode"]
            sampler = SamplerSettings(**meta["sampler"])
        except (KeyError, TypeError) as err:
            raise ModelFileError(f"{state_source}: incomplete model header ({err!r})") from None
        grammar = parse_grammar_text(grammar_text, fmt="pycfg", source=grammar_source, start=start)
        model = cls(grammar, segment_category=category, mode=mode, split_at=meta.get("split_at"),
                    sampler=sampler)
        state = state_from_arrays(arrays, state_source)
        G = model.compiled.arrays
        if state.f.shape[0] != G.rule_parent.shape[0] or state.ad_a.shape[0] != G.adaptor_nt.shape[0]:
            raise ModelFileError(f"{state_source}: state does not match {grammar_source}")
        model.state = state
        model.trace = meta.get("trace_tail", [])
        return model

    @classmethod
    def load(cls, path: PathLike) -> "AdaptorGrammar":
        path = Path(path)
        if not path.is_dir():
            raise ModelFileError(f"{path}: no such model directory")
        arrays, meta = read_npz(path / "state.npz", "model")
        grammar_file = path / "grammar.lt"
        if not grammar_file.exists():
            raise ModelFileError(f"{grammar_file}: file not found; the model directory is incomplete")
        return cls._from_parts(grammar_file.read_text(encoding="utf8"), str(grammar_file), arrays, meta,
                               str(path / "state.npz"))
