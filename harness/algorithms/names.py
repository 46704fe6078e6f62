"""Names of the choices the torch parts implement, torch-free so a config is validated without torch."""
ADVANTAGE_ESTIMATORS = ("grpo", "drgrpo", "rloo")  # advantages.compute_advantages
LOSS_AGG_MODES = ("token-mean", "seq-mean-token-mean", "seq-mean-token-sum", "seq-mean-token-sum-norm")  # aggregation
