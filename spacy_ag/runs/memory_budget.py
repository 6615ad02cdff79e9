"""What training on a long line takes in memory, and what the machine has, checked before any work.

A chain holds, for its longest line of n terminals: the inside chart (kept whole up to
`chart.FULL_CHART_BYTES`, else in blocks, docs/algorithms.md 3.5), room in the pools for one more
tree (`need_nodes`, `tables_need`, `trie_need`, doubled as the pools grow) and the stack a draw
walks. An online pass (training online, or the warm start of an MCMC chain) also keeps the
records of `samples` draws per line and builds each distinct draw into its state. The sum is an
upper bound of what one line adds to what the corpus as a whole takes; `training_bytes` gives it,
`available_bytes` what the process may still allocate.
"""
from __future__ import annotations

import resource
from pathlib import Path
from typing import Optional

from numba import config as numba_config

from ..core.chart import chart_block, chart_rows, chart_width, tables_need, trie_need
from ..core.sampler import need_nodes

#: Bytes per pool entry: a node (8 arrays), a table (9 arrays and a variational model's 7 per-table
#: arrays), a trie node (3 arrays and 2 hash slots at most half full); each pool doubles when it grows.
NODE_BYTES = 2 * 29
TABLE_BYTES = 2 * (33 + 56)
TRIE_BYTES = 2 * (12 + 2 * 12)
#: Per node of a tree: a draw's task stack (4 int32) and the pool walk's stack (2 int32).
STACK_BYTES = 16 + 8
#: Records per terminal an online E-step starts with for each draw (`OnlineLearner.record_factor`),
#: 6 int32 each; each record becomes at most one node when the draw is built into the state.
RECORDS_PER_TERMINAL = 4
RECORD_BYTES = 6 * 4


def training_bytes(compiled, n: int, samples: int = 0, charts: int = 1) -> int:
    """The most memory training adds for one line of n terminals: `charts` inside charts (one per
    thread that fills them at once), a tree's room in the pools and, with `samples` draws per line
    (an online pass), their records and the nodes built from them, as many as the records an E-step
    starts with (it doubles them for a grammar whose trees need more, and the pools follow)."""
    G = compiled.arrays
    width = int(chart_width(G, n))
    rows = int(chart_rows(G, n, chart_block(G, n)))
    chart = rows * (width + 2) * (8 * G.n_sym + 12)
    nodes = int(need_nodes(G, n, compiled.max_unary_chain))
    tree = nodes * (NODE_BYTES + STACK_BYTES) + int(tables_need(G, n)) * TABLE_BYTES + int(trie_need(G, n)) * TRIE_BYTES
    drawn = samples * n * RECORDS_PER_TERMINAL * (RECORD_BYTES + NODE_BYTES)
    return charts * chart + tree + drawn


def kernel_threads() -> int:
    """The most threads a parallel kernel (the E-step) runs, each filling its own charts."""
    return int(numba_config.NUMBA_NUM_THREADS)


def available_bytes() -> Optional[int]:
    """What this process may still allocate: the least of the memory the system has available,
    the room left under its address-space limit (``ulimit -v``) and under its cgroup's limit;
    None if none of them can be read."""
    room = []
    meminfo = _read_fields(Path("/proc/meminfo"))
    if "MemAvailable" in meminfo:
        room.append(meminfo["MemAvailable"] * 1024)
    soft, _ = resource.getrlimit(resource.RLIMIT_AS)
    status = _read_fields(Path("/proc/self/status"))
    if soft != resource.RLIM_INFINITY and "VmSize" in status:
        room.append(soft - status["VmSize"] * 1024)
    limit, current = _read_int(Path("/sys/fs/cgroup/memory.max")), _read_int(Path("/sys/fs/cgroup/memory.current"))
    if limit is not None and current is not None:
        room.append(limit - current)
    return max(0, min(room)) if room else None


def _read_fields(path: Path) -> dict:
    """``Name: value kB`` lines of a /proc file as {name: value}; {} if it cannot be read."""
    try:
        lines = path.read_text().splitlines()
    except OSError:
        return {}
    fields = {}
    for line in lines:
        name, _, rest = line.partition(":")
        parts = rest.split()
        if parts and parts[0].isdigit():
            fields[name] = int(parts[0])
    return fields


def _read_int(path: Path) -> Optional[int]:
    """The integer a cgroup file holds; None for "max" or when it cannot be read."""
    try:
        text = path.read_text().strip()
    except OSError:
        return None
    return int(text) if text.isdigit() else None
