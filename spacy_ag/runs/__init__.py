"""Everything that runs training, above the kernels and below the models.

- `chain_pool`: MCMC chains in worker processes, their checkpoints and results.
- `marginal_decoding`: the counts of sampled segmentations and their maximum-marginal decoding.
- `online_runner`: passes of the batch variational and online algorithms, with checkpoints.
- `signals`: SIGINT and SIGTERM turned into clean stops, for the pool, the output lock and the
  atomic writers.
- `ray_cluster`, `ray_chains`, `ray_estep`: the connection to a Ray cluster, the chains as Ray
  tasks, the online E-step on Ray workers.

Nothing is imported here, so that `spacy_ag.archive` can use `runs.signals` without loading the rest.
"""
