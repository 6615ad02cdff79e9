"""Annotating text with a trained model: the per-batch tasks of `spacy-ag segment`, `parse` and
`tag-topics`, and directory runs (one output shard per input file, resumable) on this machine or on a
Ray cluster.

`tasks` says what a command does to a batch of lines, `shards` where a file's
output goes and when it is complete, `runner` streams the files through the
workers, and `on_ray` (imported only with ``--backend ray``) holds the model
in Ray actors. The command line is `spacy_ag.cli.directory`.
"""
from .runner import AnnotationInterrupted, LocalWorkers, annotate_shards
from .shards import Shard, claim_shards, plan_shards
from .tasks import Parse, Segment, TagTopics

__all__ = ["AnnotationInterrupted", "LocalWorkers", "Parse", "Segment", "Shard", "TagTopics", "annotate_shards",
           "claim_shards", "plan_shards"]
