"""Whether a path lies on a network file system, where the call cache's SQLite WAL mode breaks.

SQLite's WAL mode keeps its index in shared memory next to the database and "does not work
over a network filesystem" (https://www.sqlite.org/wal.html): on NFS, CIFS/SMB, 9p or sshfs a
cache can be corrupted or see stale answers. The file system is the one mounted at the
longest mount point above the path, read from ``/proc/mounts`` (Linux; elsewhere nothing is
known and nothing is refused).
"""

from __future__ import annotations

import os
import re
from pathlib import Path

NETWORK_FS = frozenset({"nfs", "nfs4", "cifs", "smb3", "smbfs", "9p", "fuse.sshfs", "afs"})
ALLOW_ENV = "BOOKSUM_CACHE_ON_NETWORK_FS"  # "allow": one host only uses the cache, at the user's risk
MOUNTS = Path("/proc/mounts")
_ESCAPE = re.compile(r"\\([0-7]{3})")  # /proc/mounts writes a space in a mount point as \040


def filesystem_type(path: Path | str, mounts: str) -> str | None:
    """The type of the file system ``path`` is on, from the text of ``/proc/mounts``; None if unknown."""
    target = os.path.realpath(path)
    best, kind = "", None
    for line in mounts.splitlines():
        fields = line.split()
        if len(fields) < 3:
            continue
        point = _ESCAPE.sub(lambda m: chr(int(m[1], 8)), fields[1])
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):  # a later mount on the same point hides the earlier
            best, kind = point, fields[2]
    return kind


def network_filesystem(path: Path | str) -> str | None:
    """The network file system type ``path`` is on (``"nfs4"``...), or None for a local disk or unknown."""
    try:
        mounts = MOUNTS.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    kind = filesystem_type(path, mounts)
    return kind if kind in NETWORK_FS else None


def refusal(directory: Path | str, environ: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """The one line refusing a call cache in ``directory``, or None where it may live."""
    kind = network_filesystem(directory)
    if kind is None or environ.get(ALLOW_ENV) == "allow":
        return None
    return (f"the call cache {directory} is on {kind}, a network file system, where SQLite's WAL mode does not work "
            "(sqlite.org/wal.html); pass --cache-dir on a local disk (give each shard its own and move answers with "
            f"booksum cache --export/--import), or --no-cache; {ALLOW_ENV}=allow overrides for a single host")


__all__ = ["ALLOW_ENV", "NETWORK_FS", "filesystem_type", "network_filesystem", "refusal"]
