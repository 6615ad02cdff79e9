"""Seconds of the inside pass and of drawing a tree, over every Brent utterance, on a fixed trained state
(not a test).

    python benchmarks/chart_speed.py --train-to /tmp/bench/colloc-state --grammar colloc    # once
    python benchmarks/chart_speed.py --state /tmp/bench/colloc-state --json /tmp/bench/chart.json

Why: a sweep's time moves with the state (early sweeps hold more tables) and with the machine's
load, which hides changes of a few percent in the chart code. Here every version of the code
parses the same utterances under the same saved state, without changing it, and the best of
--repeats passes is kept. Every utterance is parsed in one compiled call, so no Python dispatch
is timed. The script imports the spacy_ag beside it: run a copy of it in each checkout, in turn
and more than once, to measure one change to the kernels at a time.
"""
from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
SHARED = ROOT.parent / "shared"


def main() -> None:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--data", default=str(SHARED / "data/brent/br-phono.txt"))
    p.add_argument("--grammar", default="colloc", help="brent-<grammar>.cfg, for --train-to")
    p.add_argument("--train-to", help="train 20 sweeps (seed 1) and save the model here")
    p.add_argument("--state", help="the saved model to parse under")
    p.add_argument("--repeats", type=int, default=5)
    p.add_argument("--json")
    args = p.parse_args()
    sys.path.insert(0, str(ROOT))
    import numpy as np
    from numba import njit

    from spacy_ag.core.analyses import fill_rho, free_tree
    from spacy_ag.core.state import grow
    from spacy_ag.core.chart import inside, sample_tree
    from spacy_ag.core.sampler import Workspace
    from spacy_ag.model import AdaptorGrammar

    lines = [line.replace(" ", "") for line in Path(args.data).read_text(encoding="utf8").splitlines()
             if line.strip()]
    if args.train_to:
        from spacy_ag.config import build_model, load_training_config

        cfg = load_training_config(ROOT / "configs" / f"brent-{args.grammar}.cfg")
        build_model(cfg).fit(lines, iterations=20, seed=1).save(args.train_to)
        return
    model = AdaptorGrammar.load(args.state)
    C = model.compiled
    G = C.arrays
    longest = max(len(line) for line in lines)
    # room for one drawn tree (freed after each draw) and for the trie nodes new tables would add
    S = grow(model.state, 8 * longest * (G.n_sym + 4), 8 * longest * (G.n_sym + 4), 200 * longest * longest,
             G.n_term)
    ws = Workspace(C, longest)
    fill_rho(G, S, ws.rho, True, -1, 1.0)
    encoded = [C.encode(list(line)) for line in lines]
    words = np.concatenate(encoded).astype(np.int32)
    sent_ptr = np.concatenate([[0], np.cumsum([len(ids) for ids in encoded])]).astype(np.int64)
    stack = np.zeros(2 * S.node_kind.shape[0] + 16, np.int32)
    parse_all = njit(_parse_all_kernel(inside, sample_tree, free_tree))

    def one_pass(draw: bool) -> float:
        started = time.perf_counter()
        parse_all(G, S, words, sent_ptr, ws.rho, ws.chart, ws.scale, ws.ynode, ws.window, ws.tasks, ws.buf, stack,
                  draw)
        return time.perf_counter() - started

    one_pass(True)  # load the kernels
    inside_s = min(one_pass(False) for _ in range(args.repeats))
    both_s = min(one_pass(True) for _ in range(args.repeats))
    out = {"state": args.state, "utterances": len(encoded), "inside_seconds": inside_s,
           "inside_and_draw_seconds": both_s, "code": str(ROOT), "band": int(getattr(G, "band", 0))}
    print(json.dumps(out))
    if args.json:
        Path(args.json).write_text(json.dumps(out, indent=2))


def _parse_all_kernel(inside, sample_tree, free_tree):
    """Every utterance parsed in one compiled call, so the timings hold no Python dispatch."""
    def parse_all(G, S, words, sent_ptr, rho, chart, scale, ynode, window, tasks, buf, stack, draw):
        for d in range(sent_ptr.shape[0] - 1):
            ids = words[sent_ptr[d]:sent_ptr[d + 1]]
            n = ids.shape[0]
            inside(G, S, ids, n, rho, chart, scale, ynode, window, G.start, -1, 1.0)
            if draw:
                root, _ = sample_tree(G, S, ids, n, rho, chart, scale, ynode, window, G.start, -1, 1.0, S.rng,
                                      tasks, buf)
                free_tree(S, root, stack)  # the state is left as it was, but for its trie and rng
    return parse_all


if __name__ == "__main__":
    main()
