"""pytest configuration: under CI (`CI` set), hypothesis draws the same examples every run, so
a red CI run is reproducible and a green one is not luck; locally it explores new examples."""

import os
from pathlib import Path

import pytest
from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")


@pytest.fixture
def cache(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    """An empty kernel cache (`$XDG_CACHE_HOME/xrelay`) for one test."""
    monkeypatch.setenv("XDG_CACHE_HOME", str(tmp_path))
    return tmp_path / "xrelay"
