"""Writing a module file so that a failure never leaves a half-written one behind."""

from __future__ import annotations

import json
import os
import tempfile
import zipfile
from collections.abc import Mapping
from pathlib import Path


def write_zip_atomically(path: str | os.PathLike, manifest: Mapping[str, object],
                         members: Mapping[str, bytes]) -> None:
    """Write `manifest.json` and `members` into the zip file `path`: to a temporary
    file beside it, renamed over `path` once complete (an existing file is replaced
    whole or not at all), with the permissions a newly created file gets (the umask:
    `mkstemp` would leave 0600)."""
    path = Path(path)
    fd, tmp = tempfile.mkstemp(dir=path.parent if str(path.parent) else ".", suffix=".tmp")
    try:
        with os.fdopen(fd, "wb") as f, zipfile.ZipFile(f, "w") as zf:
            zf.writestr("manifest.json", json.dumps(manifest, indent=2))
            for name, data in members.items():
                zf.writestr(name, data)
        umask = os.umask(0)
        os.umask(umask)
        os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        os.unlink(tmp)
        raise
