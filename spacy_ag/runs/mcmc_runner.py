"""MCMC training of a packed corpus: one job per chain, run where the training settings say, pooled.

`run_mcmc` is what `AdaptorGrammar.fit` hands a run to: it builds one
`ChainJob` per chain (each with its checkpoint file in the checkpoint
directory), runs them in this process or worker processes
(`chain_pool.run_chains`) or as tasks of a Ray cluster
(`ray_chains.run_chains_on_ray`, imported only for ``backend = "ray"``), and
pools what the chains return: the model keeps chain 0's state, every chain's
trace lines and the maximum-marginal counts of all of them (3.15). It is a
module of its own because `ray_chains` imports `chain_pool`.
"""
from __future__ import annotations

from dataclasses import dataclass
from pathlib import Path
from typing import Any, Dict, List, Mapping, Optional, Sequence, Union

import numpy as np

from ..core.compiled import CompiledGrammar
from ..core.state import State
from ..serialize import state_from_arrays
from ..settings import OnlineSettings, SamplerSettings, TrainingSettings
from .chain_pool import ChainJob, TraceCallback, default_workers, run_chains
from .marginal_decoding import MarginalCounts

__all__ = ["PooledChains", "chain_checkpoint", "run_mcmc"]


@dataclass
class PooledChains:
    """What a model keeps of an MCMC run."""

    state: State  # chain 0's last state
    trace: List[Dict]  # every chain's lines, chain by chain
    marginals: MarginalCounts  # every chain's kept samples


def chain_checkpoint(checkpoint_dir: Union[str, Path], chain: int) -> str:
    """The checkpoint file of chain `chain` in `checkpoint_dir` (train/resume.py's ``chain-*.npz``)."""
    return str(Path(checkpoint_dir) / f"chain-{chain}.npz")


def run_mcmc(compiled: CompiledGrammar, words: np.ndarray, sent_ptr: np.ndarray, sampler: SamplerSettings,
             training: TrainingSettings, seg_mask: np.ndarray, fingerprint: str, *,
             checkpoint_dir: Optional[Union[str, Path]] = None, resume: bool = False,
             gold: Optional[Sequence[Sequence[str]]] = None, sentences: Optional[List[Sequence[str]]] = None,
             online: Optional[OnlineSettings] = None, run: Optional[Mapping[str, Any]] = None,
             callback: Optional[TraceCallback] = None) -> PooledChains:
    """Run `training.chains` chains over the packed corpus (`words`, `sent_ptr`) and pool them.

    `training.backend` picks where they run; `training.workers` how many at once (0: one per
    CPU, or as the Ray cluster allows). `gold` (one word list per sentence, with the sentences'
    terminals `sentences`) scores the samples in the trace; `online` is the pass of
    ``sampler.init = "online"``; `run` is what the checkpoints record as their run; `fingerprint`
    names the corpus and grammar they belong to. Raises `UnparseableSentence` (with the
    sentence's index) and `TrainingInterrupted` as the chains do.
    """
    jobs = [ChainJob(compiled, words, sent_ptr, sampler, training, chain_index=c, seg_mask=seg_mask,
                     fingerprint=fingerprint,
                     checkpoint=chain_checkpoint(checkpoint_dir, c) if checkpoint_dir else None, resume=resume,
                     gold=list(gold) if gold else None, sentences=sentences if gold else None, online=online,
                     run=run)
            for c in range(training.chains)]
    if training.backend == "ray":
        from .ray_chains import run_chains_on_ray

        results = run_chains_on_ray(jobs, training.workers, callback, training.ray_address)
    else:
        results = run_chains(jobs, training.workers or default_workers(training.chains), callback)
    marginals = MarginalCounts(len(sent_ptr) - 1)
    for r in results:
        marginals.merge(r.marginals)
    return PooledChains(state_from_arrays(results[0].state_arrays, "chain 0"),
                        [line for r in results for line in r.trace], marginals)
