import sys
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parents[1] / "tracking"))  # tracking_helpers: a real `harness server`
