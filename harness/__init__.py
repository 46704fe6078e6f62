"""harness: experiment orchestration and sweeps for trust-region objectives in LLM RL."""

__version__ = "0.1.0"

# installed extensions register their objectives and launchers before any registry is read, in every process
# (harness/infra/extensions.py); after __version__, which they may read
from harness.infra.extensions import load_extensions  # noqa: E402

load_extensions()
