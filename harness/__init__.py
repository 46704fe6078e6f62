"""harness: experiment orchestration and sweeps for trust-region objectives in LLM RL."""

__version__ = "0.1.0"
