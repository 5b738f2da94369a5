"""A zip archive opened with limits, so a hostile epub cannot exhaust memory or disk.

Limits are checked from the central directory (``ZipInfo``) before any member is
read and enforced again while reading, since a forged header can understate a
member's size: members are read in bounded pieces and the bytes actually
produced count against the caps.
"""

from __future__ import annotations

import posixpath
import zipfile
import zlib
from dataclasses import dataclass
from pathlib import Path
from typing import Self
from urllib.parse import unquote

from booksum_app.errors import BookFormatError

MIB = 1024 * 1024


@dataclass(frozen=True)
class ZipLimits:
    """Caps applied to an archive; the defaults fit any real book with room to spare.

    Bytes and compression ratio are capped, not the number of members: a book of 10,000
    small chapters is a book (the central directory itself is bounded by the file's size).
    """

    max_total_bytes: int = 512 * MIB
    max_member_bytes: int = 128 * MIB
    max_ratio: float = 200.0  # uncompressed / compressed, for members over ratio_floor_bytes
    ratio_floor_bytes: int = 1 * MIB


class SafeZip:
    """Read-only view of a zip file that refuses bombs and reports damage as BookFormatError."""

    def __init__(self, path: Path, *, limits: ZipLimits | None = None) -> None:
        self.path = path
        self.limits = limits or ZipLimits()
        self._read_total = 0
        try:
            self._zip = zipfile.ZipFile(path)
            infos = self._zip.infolist()
        except zipfile.BadZipFile as exc:
            raise BookFormatError(
                f"{path.name}: not a valid zip archive ({exc}); the file is corrupt or truncated, "
                "re-download or re-export it"
            ) from exc
        except (OSError, EOFError, ValueError) as exc:
            raise BookFormatError(f"{path.name}: cannot read the archive ({exc})") from exc
        self._check_directory(infos)
        self._by_name = {i.filename: i for i in infos if not i.is_dir()}
        self._by_lower = {name.lower(): name for name in self._by_name}

    def _check_directory(self, infos: list[zipfile.ZipInfo]) -> None:
        lim = self.limits
        name = self.path.name
        total = sum(i.file_size for i in infos)
        if total > lim.max_total_bytes:
            raise BookFormatError(
                f"{name}: archive would unpack to {total // MIB} MiB "
                f"(limit {lim.max_total_bytes // MIB} MiB); refusing a possible zip bomb"
            )
        if total > lim.ratio_floor_bytes:  # many small members, each under the floor
            ratio = total / max(sum(i.compress_size for i in infos), 1)
            if ratio > lim.max_ratio:
                raise BookFormatError(
                    f"{name}: archive has compression ratio {ratio:.0f}:1 "
                    f"(limit {lim.max_ratio:.0f}:1); refusing a possible zip bomb"
                )
        for info in infos:
            self._check_member(info)

    def _check_member(self, info: zipfile.ZipInfo) -> None:
        lim = self.limits
        if info.file_size > lim.max_member_bytes:
            raise BookFormatError(
                f"{self.path.name}: member {info.filename} unpacks to {info.file_size // MIB} MiB "
                f"(limit {lim.max_member_bytes // MIB} MiB); refusing a possible zip bomb"
            )
        if info.file_size > lim.ratio_floor_bytes:
            ratio = info.file_size / max(info.compress_size, 1)
            if ratio > lim.max_ratio:
                raise BookFormatError(
                    f"{self.path.name}: member {info.filename} has compression ratio {ratio:.0f}:1 "
                    f"(limit {lim.max_ratio:.0f}:1); refusing a possible zip bomb"
                )

    def close(self) -> None:
        """Close the underlying file."""
        self._zip.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *exc: object) -> None:
        self.close()

    @property
    def names(self) -> tuple[str, ...]:
        """Member names (files only)."""
        return tuple(self._by_name)

    def resolve(self, name: str) -> str | None:
        """The stored member name for ``name`` (exact, then case-insensitive), or None."""
        if name in self._by_name:
            return name
        return self._by_lower.get(name.lower())

    def has(self, name: str) -> bool:
        """True when the archive holds the member (case-insensitive fallback)."""
        return self.resolve(name) is not None

    def read(self, name: str) -> bytes:
        """Bytes of one member, enforcing the size caps while decompressing."""
        stored = self.resolve(name)
        if stored is None:
            raise BookFormatError(
                f"{self.path.name}: missing member {name}; the epub is incomplete"
            )
        info = self._by_name[stored]
        lim = self.limits
        cap = min(info.file_size, lim.max_member_bytes)
        pieces: list[bytes] = []
        got = 0
        try:
            with self._zip.open(info) as fh:
                while True:
                    piece = fh.read(min(1 * MIB, cap - got + 1))
                    if not piece:
                        break
                    got += len(piece)
                    if got > cap:
                        raise BookFormatError(
                            f"{self.path.name}: member {stored} inflates beyond its declared size; "
                            "refusing a possible zip bomb"
                        )
                    pieces.append(piece)
        except (zipfile.BadZipFile, zlib.error, EOFError, OSError, NotImplementedError) as exc:
            raise BookFormatError(
                f"{self.path.name}: member {stored} is damaged ({exc}); the file is corrupt or "
                "truncated, re-download or re-export it"
            ) from exc
        except RuntimeError as exc:  # zipfile raises RuntimeError for encrypted members
            raise BookFormatError(
                f"{self.path.name}: member {stored} is password-protected ({exc})"
            ) from exc
        self._read_total += got
        if self._read_total > lim.max_total_bytes:
            raise BookFormatError(
                f"{self.path.name}: archive inflates beyond {lim.max_total_bytes // MIB} MiB; "
                "refusing a possible zip bomb"
            )
        return b"".join(pieces)


def join_href(base_dir: str, href: str) -> tuple[str, str]:
    """Resolve an href relative to a folder inside the archive: (member path, fragment)."""
    href, _, fragment = href.partition("#")
    path = posixpath.normpath(posixpath.join(base_dir, unquote(href))) if href else ""
    if path in (".", ""):
        path = ""
    return path.lstrip("/"), fragment
