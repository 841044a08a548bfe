"""pytest configuration: under CI (`CI` set), hypothesis draws the same examples every run, so
a red CI run is reproducible and a green one is not luck; locally it explores new examples."""

import os

from hypothesis import settings

settings.register_profile("ci", derandomize=True, deadline=None, print_blob=True)
if os.environ.get("CI"):
    settings.load_profile("ci")
