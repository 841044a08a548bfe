"""
Signing artifacts: an artifact is code, so `load` runs only what this user (or a holder of
the key) saved.

    signature = sign(manifest_bytes)          # at save: HMAC-SHA256 under this user's key
    verify(root, manifest_bytes, signature)   # at load, before anything is built or loaded

The manifest hashes every other file of the artifact, so an HMAC over the manifest's bytes
covers the libraries and kernel sources too: whoever can write the artifact but lacks the
key can change a file and its hash, but not the signature. The key is `$XRELAY_ARTIFACT_KEY`
(its UTF-8 bytes) when set, else a per-user key file, `$XDG_CONFIG_HOME/xrelay/artifact.key`
(or `~/.config/xrelay/artifact.key`): 32 random bytes made at the first `save`, the file
0600 in a directory 0700, both checked to be the user's own and closed to others before the
key is used. An artifact from elsewhere loads with `load(path, trust=True)`, which runs
native code from the artifact.
"""

from __future__ import annotations

import hashlib
import hmac
import os
import secrets
import stat
import tempfile
from pathlib import Path

from xrelay.errors import ArtifactError

KEY_VARIABLE = "XRELAY_ARTIFACT_KEY"
KEY_FILE = "artifact.key"
SIGNATURE_FILE = "manifest.sig"  # the HMAC-SHA256 of manifest.json's bytes, in hex


def key_dir() -> Path:
    """`$XDG_CONFIG_HOME/xrelay`, or `~/.config/xrelay` (XDG: a relative value is ignored)."""
    base = os.environ.get("XDG_CONFIG_HOME", "")
    if not os.path.isabs(base):
        base = os.path.join(os.path.expanduser("~"), ".config")
    return Path(base) / "xrelay"


def sign(manifest: bytes) -> str:
    """The signature of a manifest's bytes under this user's key (made if there is none)."""
    key = _key(create=True)
    if key is None:
        raise ArtifactError(f"cannot sign the artifact: no key in ${KEY_VARIABLE} or {key_dir() / KEY_FILE}")
    return _hmac(key, manifest)


def verify(root: Path, manifest: bytes) -> None:
    """Raises an ArtifactError unless `root`'s signature file holds the signature of
    `manifest` under this user's key."""
    try:
        signature = (root / SIGNATURE_FILE).read_text().strip()
    except (FileNotFoundError, UnicodeDecodeError):
        signature = ""
    key = _key(create=False)
    if not signature or key is None or not hmac.compare_digest(signature, _hmac(key, manifest)):
        state = "is not signed" if not signature else "is not signed with this user's key"
        raise ArtifactError(
            f"{root} {state} ({_key_name()}), so nothing of it was loaded: an artifact is code, "
            f"and its libraries and kernels would run in this process. If you know where it came "
            f"from, load it with trust=True (this runs native code from the artifact), or set "
            f"{KEY_VARIABLE} to the key it was saved with"
        )


def _hmac(key: bytes, manifest: bytes) -> str:
    return hmac.new(key, manifest, hashlib.sha256).hexdigest()


def _key_name() -> str:
    return f"${KEY_VARIABLE}" if os.environ.get(KEY_VARIABLE) else f"the key file {key_dir() / KEY_FILE}"


def _key(create: bool) -> bytes | None:
    """The key: the variable's, else the key file's (made when `create`; None if absent)."""
    given = os.environ.get(KEY_VARIABLE)
    if given:
        return given.encode()
    path = key_dir() / KEY_FILE
    if create and not path.exists():
        _make_key_file(path)
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW)
    except FileNotFoundError:
        return None
    except OSError as e:
        raise ArtifactError(f"cannot read the artifact key {path}: {e}") from None
    with os.fdopen(fd, "rb") as f:
        _check_private(path.parent, os.stat(path.parent), 0o700)
        _check_private(path, os.fstat(f.fileno()), 0o600)
        key = f.read()
    if len(key) < 16:
        raise ArtifactError(
            f"the artifact key {path} holds {len(key)} bytes, fewer than 16; remove it to make a new one"
        )
    return key


def _make_key_file(path: Path) -> None:
    """A new random key at `path`, whole or not at all: written to a private temporary file and
    linked into place (a process that made it first wins; its key is the one used)."""
    try:
        path.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(dir=path.parent, prefix=".artifact-key-")  # (0600)
        with os.fdopen(fd, "wb") as f:
            f.write(secrets.token_bytes(32))
        try:
            os.link(tmp, path)
        except FileExistsError:
            pass
        finally:
            os.unlink(tmp)
    except OSError as e:
        raise ArtifactError(f"cannot make the artifact key {path} ({e}); set {KEY_VARIABLE} instead") from None


def _check_private(path: Path, st: os.stat_result, mode: int) -> None:
    """`path` is the user's own and open to no one else (a key others can read or replace
    signs for them)."""
    if st.st_uid != os.getuid():
        raise ArtifactError(
            f"the artifact key's {'directory ' if mode == 0o700 else ''}{path} belongs to user id "
            f"{st.st_uid}, not to this user ({os.getuid()}); remove it, or set {KEY_VARIABLE}"
        )
    if stat.S_IMODE(st.st_mode) & 0o077:
        raise ArtifactError(
            f"{path} has mode {stat.S_IMODE(st.st_mode):o}, open to other users, but the artifact key "
            f"must be private: chmod {mode:o} {path}"
        )
