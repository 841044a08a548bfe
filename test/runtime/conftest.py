"""pytest configuration of the runtime tests."""

import pytest


@pytest.fixture(autouse=True)
def artifact_key(tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch) -> None:
    """Artifacts are signed with a test key, and any key file goes to a temporary config
    directory: no test reads or writes the user's own."""
    monkeypatch.setenv("XRELAY_ARTIFACT_KEY", "xrelay test key")
    monkeypatch.setenv("XDG_CONFIG_HOME", str(tmp_path_factory.mktemp("config")))
