"""The training layer: one entry point that trains any config and owns its run.

`train` reads the config's kind (`spacy_ag.config.config_kind`) and hands it
to its trainer:

* `engine.train_model`: engine configs (MCMC, VB, online; checkpoints, ``resume``);
* `topics.train_topics`: topic configs (online passes; checkpoints, ``resume``);
* `pipeline.train_pipeline`: spaCy pipeline configs, trained exactly as
  ``spacy train`` trains them (spaCy's own initialisation and loop).

All three show progress and write ``trace.jsonl`` through `progress.TraceLog`,
check ``--resume`` against the run's fingerprint (`resume`) and write their
outputs atomically. The CLI (`spacy_ag.cli.train_command`) is a thin face over `train`.
The trainers are imported when called, so importing this package is cheap.
"""
from __future__ import annotations

from pathlib import Path
from typing import Any, Mapping, Optional, Sequence, Union

__all__ = ["train"]


def train(config_path: Union[str, Path], output: Optional[Union[str, Path]] = None,
          overrides: Optional[Mapping[str, Any]] = None, *, resume: bool = False,
          command_args: Sequence[str] = (), interactive: Optional[bool] = None, force: bool = False):
    """Train `config_path` (any kind) into `output`, as ``spacy-ag train`` does.

    config_path (Path): An engine, topic or spaCy pipeline config.
    output (Optional[Path]): The output directory (default: the config's paths.output, where it has one).
    overrides (Mapping[str, Any]): Dotted config overrides.
    resume (bool): Continue from OUTPUT/checkpoints (engine and topic configs).
    command_args (Sequence[str]): The command line's override words (shown in the resume hint).
    interactive (Optional[bool]): Progress bar (default: when stderr is a terminal).
    force (bool): Write into an existing output directory that spacy-ag did not write, replacing
        what the run writes (model/, config.cfg, ...); without it such a directory is refused (E203).
    RETURNS: The trainer's result (TrainingResult, TopicTrainingResult or PipelineTrainingResult).
    """
    from ..config import config_kind
    from ..errors import Errors, TrainingLayerError

    kind = config_kind(config_path)
    if kind == "topics":
        from .topic_training import train_topics

        return train_topics(Path(config_path), Path(output) if output else None, overrides, resume=resume,
                            force=force)
    if kind == "pipeline":
        from .pipeline import train_pipeline

        if resume:
            raise TrainingLayerError(Errors.E038.format(path=config_path))
        if output is None:
            raise TrainingLayerError(Errors.E039)
        return train_pipeline(config_path, output, overrides, interactive=interactive, force=force)
    from .engine import train_model

    return train_model(Path(config_path), Path(output) if output else None, overrides, resume=resume,
                       command_args=command_args, interactive=interactive, force=force)
