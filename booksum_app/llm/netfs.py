"""Whether a path lies on a network file system, where the call cache's SQLite WAL mode breaks.

SQLite's WAL mode keeps its index in shared memory next to the database and "does not work
over a network filesystem" (https://www.sqlite.org/wal.html): on a file system shared between
hosts a cache can be corrupted or see stale answers. That is NFS (EFS mounts as nfs4, autofs
in front of it), SMB, 9p, AFS, sshfs, and the shared storage of clusters and clouds: Lustre,
GPFS / Spectrum Scale, CephFS (kernel and ceph-fuse), BeeGFS, GlusterFS, PanFS, WekaFS,
OrangeFS, and FUSE mounts of object stores (s3fs, gcsfuse, goofys, rclone, JuiceFS, Mountpoint
for S3, blobfuse, ...). The file system is the one mounted at the longest mount point above the
path, by its type in ``/proc/self/mountinfo`` (the field after `` - ``; ``/proc/mounts`` lines
are read too), on Linux; elsewhere nothing is known and nothing is refused.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

NETWORK_FS = frozenset({
    "nfs", "nfs4", "autofs", "cifs", "smb3", "smbfs", "9p", "afs", "openafs", "ncpfs", "coda", "davfs",
    "lustre", "gpfs", "ceph", "beegfs", "glusterfs", "panfs", "wekafs", "pvfs2", "ocfs2", "gfs2", "quobyte",
})
# FUSE file systems are typed fuse.<subtype> (or fuseblk); these subtypes reach another host
NETWORK_FUSE = frozenset({
    "sshfs", "s3fs", "gcsfuse", "goofys", "rclone", "juicefs", "mountpoint-s3", "blobfuse", "blobfuse2",
    "ceph-fuse", "glusterfs", "beegfs", "lustre", "davfs", "davfs2", "cvmfs2", "objectivefs", "geesefs",
    "s3backer", "seaweedfs", "alluxio-fuse", "oss2", "ossfs", "cosfs", "obsfs",
})
ALLOW_ENV = "BOOKSUM_CACHE_ON_NETWORK_FS"  # "allow": one host only uses the cache, at the user's risk
MOUNTS = Path("/proc/self/mountinfo")
_ESCAPE = re.compile(r"\\([0-7]{3})")  # /proc/mounts writes a space in a mount point as \040


def _mount(line: str) -> tuple[str, str] | None:
    """``(mount point, type)`` of one line of ``/proc/self/mountinfo`` or ``/proc/mounts``."""
    fields = line.split()
    if " - " in line and fields and fields[0].isdigit():  # mountinfo: ID PARENT M:m ROOT POINT OPTS [..] - TYPE
        before, _, after = line.partition(" - ")
        head, tail = before.split(), after.split()
        if len(head) < 5 or not tail:
            return None
        return head[4], tail[0]
    if len(fields) < 3:
        return None
    return fields[1], fields[2]


def is_network(kind: str) -> bool:
    """Whether a file system type names storage shared between hosts (see the module doc)."""
    kind = kind.lower()
    if kind in NETWORK_FS:
        return True
    base, _, subtype = kind.partition(".")
    return base == "fuse" and subtype in NETWORK_FUSE


def filesystem_type(path: Path | str, mounts: str) -> str | None:
    """The type of the file system ``path`` is on, from the text of ``/proc/self/mountinfo`` (or
    ``/proc/mounts``); None if unknown."""
    target = os.path.realpath(path)
    best, kind = "", None
    for line in mounts.splitlines():
        mount = _mount(line)
        if mount is None:
            continue
        point = _ESCAPE.sub(lambda m: chr(int(m[1], 8)), mount[0])
        inside = target == point or target.startswith(point.rstrip("/") + "/")
        if inside and len(point) >= len(best):  # a later mount on the same point hides the earlier
            best, kind = point, mount[1]
    return kind


def network_filesystem(path: Path | str) -> str | None:
    """The network file system type ``path`` is on (``"nfs4"``...), or None for a local disk or unknown."""
    try:
        mounts = MOUNTS.read_text(encoding="utf-8", errors="replace")
    except OSError:
        return None
    kind = filesystem_type(path, mounts)
    return kind if kind is not None and is_network(kind) else None


def refusal(directory: Path | str, environ: dict[str, str] | os._Environ[str] = os.environ) -> str | None:
    """The one line refusing a call cache in ``directory``, or None where it may live."""
    kind = network_filesystem(directory)
    if kind is None or environ.get(ALLOW_ENV) == "allow":
        return None
    return (f"the call cache {directory} is on {kind}, a network file system, where SQLite's WAL mode does not work "
            "(sqlite.org/wal.html); pass --cache-dir on a local disk (give each shard its own and move answers with "
            f"booksum cache --export/--import), or --no-cache; {ALLOW_ENV}=allow overrides for a single host")


__all__ = ["ALLOW_ENV", "NETWORK_FS", "NETWORK_FUSE", "filesystem_type", "is_network", "network_filesystem",
           "refusal"]
