"""bench/models.py, the four reference models written op by op, for the tests that check it or
build its models: `from bench_models import BENCH, models`. (bench/ goes on sys.path: models.py
imports timing.py from there, bench/onnx_zoo.py imports models.py.)"""

import sys
from pathlib import Path

BENCH = Path(__file__).parents[2] / "bench"
sys.path.insert(0, str(BENCH))

import models

__all__ = ["BENCH", "models"]
