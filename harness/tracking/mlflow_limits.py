"""What one MLflow call may carry: `log_batch` takes at most 1000 entities (metrics, params and tags
together) and 100 params, and a param value of at most 6000 characters."""
from __future__ import annotations

MAX_METRICS_PER_BATCH = 999  # the step tag sent with them is the 1000th
MAX_PARAMS_PER_BATCH = 100
MAX_PARAM_LENGTH = 6000
