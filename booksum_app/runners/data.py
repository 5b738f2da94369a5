"""Public data booksum's examples and tests use, fetched by name and pinned by SHA-256.

``booksum data fetch NAME`` downloads a data set into the user cache dir, laid out as
``<root>/data/booookscore-release/...`` and ``<root>/books/*.epub``; ``BOOKSUM_DATA_DIR`` points
at a local copy with the same layout instead (a machine with no network). The manifest,
``booksum_app/data/fetchable.json``, names every file with its URL and checksum:

* ``booookscore-release``: the summaries and GPT-4 annotations released with the BooookScore
  paper (Chang et al., ICLR 2024; MIT licence), from github.com/lilakk/BooookScore at a commit.
* ``sample-books``: five public-domain novels (CC0 EPUB 3 files by Standard Ebooks). An EPUB is
  a zip whose bytes depend on who zipped it, so each book's members are pinned, fetched from
  its source repository at a commit, and zipped here (``mimetype`` first and stored, as EPUB
  requires); a copy zipped elsewhere is accepted when its members match.

Every download goes to a temporary file beside its target and is renamed onto it only after its
checksum matched: an interrupted or corrupted download leaves nothing behind.
"""

from __future__ import annotations

import functools
import hashlib
import http.client
import importlib.resources
import os
import tempfile
import time
import urllib.error
import urllib.request
import zipfile
from collections.abc import Callable, Mapping
from concurrent.futures import ThreadPoolExecutor
from dataclasses import dataclass
from pathlib import Path
from typing import Any, BinaryIO, Protocol

from booksum_app.errors import BooksumError, ConfigError, InputError
from booksum_app.files import FILE_MODE
from booksum_app.jsonin import parse_json
from booksum_app.llm.registry import default_cache_dir

ENV_DATA_DIR = "BOOKSUM_DATA_DIR"
_CHUNK = 1 << 16
_TIMEOUT_S = 60.0  # one read of the socket
# the whole download of a file: a server dripping its bytes is cut off, one fast or slow is not
MIN_BYTES_PER_S = 32 << 10
MIN_BOUND_S = 120.0


def download_bound_s(size: int) -> float:
    """Seconds a file of ``size`` bytes may take to download in all (32 KiB/s, at least 2 minutes)."""
    return max(MIN_BOUND_S, size / MIN_BYTES_PER_S)
_ZIP_DATE = (1980, 1, 1, 0, 0, 0)  # fixed, so the same members always zip to the same bytes


@dataclass(frozen=True)
class Pinned:
    """One file: where it lives in the data set, where it comes from, what it must hash to."""

    path: str
    url: str
    sha256: str
    size: int


@dataclass(frozen=True)
class Epub:
    """A book zipped here from pinned members (``mimetype`` first)."""

    path: str
    members: tuple[Pinned, ...]


@dataclass(frozen=True)
class Dataset:
    """A named data set: plain files and EPUBs, placed under ``<root>/<into>``."""

    name: str
    description: str
    into: str
    files: tuple[Pinned, ...]
    epubs: tuple[Epub, ...]

    @property
    def count(self) -> int:
        return len(self.files) + len(self.epubs)


def _pinned(base_url: str, entry: Mapping[str, Any]) -> Pinned:
    return Pinned(str(entry["path"]), base_url + str(entry["path"]), str(entry["sha256"]), int(entry["bytes"]))


def packaged_manifest() -> dict[str, Any]:
    """``booksum_app/data/fetchable.json``: every data set, file, URL and checksum."""
    raw = importlib.resources.files("booksum_app").joinpath("data", "fetchable.json").read_text("utf-8")
    manifest: dict[str, Any] = parse_json(raw, where="booksum_app/data/fetchable.json")
    return manifest


def datasets(manifest: Mapping[str, Any] | None = None) -> dict[str, Dataset]:
    """The data sets of the manifest (the packaged one unless another is given, as tests do)."""
    if manifest is None:
        manifest = packaged_manifest()
    out: dict[str, Dataset] = {}
    for name, spec in manifest.items():
        base = str(spec.get("base_url", ""))
        files = tuple(_pinned(base, entry) for entry in spec.get("files", ()))
        epubs = tuple(
            Epub(str(book["path"]), tuple(_pinned(str(book["base_url"]), m) for m in book["members"]))
            for book in spec.get("epubs", ())
        )
        out[name] = Dataset(name, str(spec["description"]), str(spec["into"]), files, epubs)
    return out


def dataset(name: str, manifest: Mapping[str, Any] | None = None) -> Dataset:
    """The data set called ``name``; an unknown name is a one-line ConfigError listing the known ones."""
    known = datasets(manifest)
    if name not in known:
        raise ConfigError(f"unknown data set {name!r}; known: {', '.join(sorted(known))}")
    return known[name]


def data_root(env: Mapping[str, str]) -> Path:
    """``BOOKSUM_DATA_DIR`` if set, else ``data/`` in the user cache dir (``BOOKSUM_CACHE_DIR``)."""
    explicit = env.get(ENV_DATA_DIR)
    if explicit:
        return Path(explicit).expanduser()
    return default_cache_dir(env) / "data"


def data_path(name: str, env: Mapping[str, str], manifest: Mapping[str, Any] | None = None) -> Path:
    """Where data set ``name`` lives (fetched or not)."""
    return data_root(env) / dataset(name, manifest).into


def missing(ds: Dataset, where: Path) -> list[str]:
    """The data set's files that are not under ``where`` (existence only: cheap enough for ``path``)."""
    return [p for p in [f.path for f in ds.files] + [e.path for e in ds.epubs] if not (where / p).is_file()]


class _Opener(Protocol):
    def __call__(self, url: str, *, timeout: float) -> BinaryIO: ...


def _urlopen(url: str, *, timeout: float) -> BinaryIO:
    response: BinaryIO = urllib.request.urlopen(url, timeout=timeout)
    return response


def _download(pin: Pinned, opener: _Opener) -> bytes:
    """The bytes at ``pin.url``, refused unless they hash to ``pin.sha256``."""
    digest = hashlib.sha256()
    parts: list[bytes] = []
    got = 0
    bound = download_bound_s(pin.size)
    deadline = time.monotonic() + bound
    try:
        with opener(pin.url, timeout=min(_TIMEOUT_S, bound)) as response:
            while chunk := response.read(_CHUNK):
                if time.monotonic() > deadline:
                    raise BooksumError(
                        f"cannot download {pin.url}: {got + len(chunk)} of {pin.size} bytes after {bound:.0f} s, "
                        f"slower than {MIN_BYTES_PER_S >> 10} KiB/s; nothing was kept; rerun to retry, or set "
                        f"{ENV_DATA_DIR} to a local copy"
                    )
                got += len(chunk)
                if got > pin.size:  # a wrong file, or a server that never stops: stop reading
                    break
                digest.update(chunk)
                parts.append(chunk)
    except urllib.error.HTTPError as exc:
        exc.close()  # the error carries the open response
        raise BooksumError(f"cannot download {pin.url}: HTTP {exc.code} {exc.reason}; nothing was kept") from exc
    except http.client.IncompleteRead as exc:  # the connection closed before Content-Length bytes
        raise BooksumError(
            f"cannot download {pin.url}: connection closed after {got + len(exc.partial)} of {pin.size} bytes; "
            "nothing was kept; rerun to retry"
        ) from exc
    except (urllib.error.URLError, OSError, http.client.HTTPException) as exc:
        reason = getattr(exc, "reason", None) or exc
        raise BooksumError(
            f"cannot download {pin.url}: {reason}; check the network, or set {ENV_DATA_DIR} to a local copy"
        ) from exc
    if got != pin.size or digest.hexdigest() != pin.sha256:
        seen = f"{got} bytes" if got != pin.size else f"SHA-256 {digest.hexdigest()[:16]}…"
        raise BooksumError(
            f"refused {pin.url}: expected {pin.size} bytes with SHA-256 {pin.sha256[:16]}…, got {seen}; "
            "the source changed or the download was corrupted; nothing was kept"
        )
    return b"".join(parts)


def _sha256_file(path: Path) -> str:
    digest = hashlib.sha256()
    with path.open("rb") as handle:
        while chunk := handle.read(_CHUNK):
            digest.update(chunk)
    return digest.hexdigest()


def _file_ok(pin: Pinned, path: Path) -> bool:
    return path.is_file() and path.stat().st_size == pin.size and _sha256_file(path) == pin.sha256


def _epub_ok(book: Epub, path: Path) -> bool:
    """True when ``path`` is a zip holding exactly the pinned members (whoever zipped it)."""
    if not path.is_file():
        return False
    try:
        with zipfile.ZipFile(path) as archive:
            names = archive.namelist()
            if sorted(names) != sorted(m.path for m in book.members) or names[0] != "mimetype":
                return False
            return all(hashlib.sha256(archive.read(m.path)).hexdigest() == m.sha256 for m in book.members)
    except (zipfile.BadZipFile, OSError, KeyError):
        return False


def _place(target: Path, write: Callable[[BinaryIO], None]) -> None:
    """Write a file beside ``target`` and rename it on; any failure (or Ctrl-C) removes it."""
    try:
        target.parent.mkdir(parents=True, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".part", dir=target.parent)
    except OSError as exc:
        raise InputError(f"cannot write into {target.parent}: {exc.strerror or exc}") from exc
    try:
        with os.fdopen(fd, "wb") as handle:
            write(handle)
            handle.flush()
            os.fsync(handle.fileno())
        os.chmod(tmp, FILE_MODE)
        os.replace(tmp, target)
    except OSError as exc:
        raise InputError(f"cannot write {target}: {exc.strerror or exc}") from exc
    finally:
        Path(tmp).unlink(missing_ok=True)


def _write_bytes(handle: BinaryIO, data: bytes) -> None:
    handle.write(data)


def _zip_epub(handle: BinaryIO, book: Epub, blobs: Mapping[str, bytes]) -> None:
    with zipfile.ZipFile(handle, "w") as archive:
        for member in book.members:
            info = zipfile.ZipInfo(member.path, date_time=_ZIP_DATE)
            info.compress_type = zipfile.ZIP_STORED if member.path == "mimetype" else zipfile.ZIP_DEFLATED
            info.external_attr = 0o644 << 16
            archive.writestr(info, blobs[member.path])


@dataclass(frozen=True)
class FetchResult:
    """What ``fetch`` did: where the data set is, how many files it downloaded and kept."""

    path: Path
    downloaded: int
    kept: int
    bytes: int


def fetch(
    name: str,
    env: Mapping[str, str],
    *,
    manifest: Mapping[str, Any] | None = None,
    opener: _Opener = _urlopen,
    workers: int = 8,
    on_file: Callable[[str], None] | None = None,
) -> FetchResult:
    """Make data set ``name`` complete under its path: files already there with the pinned checksum
    are kept, the others downloaded, checked and renamed into place.

    Raises:
        ConfigError: unknown name.
        BooksumError: a download failed or its checksum did not match (nothing of it is kept).
        InputError: the target directory cannot be written.
    """
    ds = dataset(name, manifest)
    where = data_root(env) / ds.into
    todo_files = [pin for pin in ds.files if not _file_ok(pin, where / pin.path)]
    todo_epubs = [book for book in ds.epubs if not _epub_ok(book, where / book.path)]
    fetched_bytes = 0
    with ThreadPoolExecutor(max_workers=max(1, workers)) as pool:
        for pin, blob in zip(todo_files, pool.map(lambda p: _download(p, opener), todo_files), strict=True):
            _place(where / pin.path, functools.partial(_write_bytes, data=blob))
            fetched_bytes += len(blob)
            if on_file:
                on_file(pin.path)
        for book in todo_epubs:
            blobs = dict(zip([m.path for m in book.members],
                             pool.map(lambda m: _download(m, opener), book.members), strict=True))
            _place(where / book.path, functools.partial(_zip_epub, book=book, blobs=blobs))
            fetched_bytes += sum(len(v) for v in blobs.values())
            if on_file:
                on_file(book.path)
    downloaded = len(todo_files) + len(todo_epubs)
    return FetchResult(where, downloaded, ds.count - downloaded, fetched_bytes)
