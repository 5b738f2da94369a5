"""`booksum data`: fetched from a local HTTP server, pinned by SHA-256, nothing half-written kept."""

from __future__ import annotations

import hashlib
import http.server
import json
import threading
import time
import zipfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from booksum_app.cli import cli
from booksum_app.errors import BooksumError, ConfigError
from booksum_app.runners.data import ENV_DATA_DIR, data_path, datasets, fetch


def _sha(data: bytes) -> str:
    return hashlib.sha256(data).hexdigest()


class _Server:
    """http.server in a thread serving a temp dir; ``cut`` paths send half their bytes then close."""

    def __init__(self, root: Path) -> None:
        self.root = root
        self.cut: set[str] = set()
        self.drip: set[str] = set()  # paths sent a byte every 50 ms
        self.requests: list[str] = []
        server = self

        class Handler(http.server.BaseHTTPRequestHandler):
            def do_GET(self) -> None:
                server.requests.append(self.path)
                path = server.root / self.path.lstrip("/")
                if not path.is_file():
                    self.send_error(404, "not here")
                    return
                body = path.read_bytes()
                self.send_response(200)
                self.send_header("Content-Length", str(len(body)))
                self.end_headers()
                if self.path.lstrip("/") in server.drip:
                    for byte in body:
                        try:
                            self.wfile.write(bytes([byte]))
                            self.wfile.flush()
                        except OSError:  # the client gave up
                            return
                        time.sleep(0.05)
                    return
                if self.path.lstrip("/") in server.cut:
                    self.wfile.write(body[: len(body) // 2])
                    self.wfile.flush()
                    self.close_connection = True
                    return
                self.wfile.write(body)

            def log_message(self, *args: Any) -> None:
                pass

        self.httpd = http.server.ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.url = f"http://127.0.0.1:{self.httpd.server_address[1]}/"
        self.thread = threading.Thread(target=self.httpd.serve_forever, daemon=True)
        self.thread.start()

    def close(self) -> None:
        self.httpd.shutdown()
        self.httpd.server_close()
        self.thread.join()


@pytest.fixture
def server(tmp_path: Path) -> Iterator[_Server]:
    root = tmp_path / "served"
    root.mkdir()
    srv = _Server(root)
    yield srv
    srv.close()


FILES = {"summaries/a.json": b'{"book.epub": "A summary."}\n', "LICENSE": b"MIT\n"}
MEMBERS = {"mimetype": b"application/epub+zip", "META-INF/container.xml": b"<container/>",
           "epub/text/chapter-1.xhtml": b"<html>Once upon a time.</html>"}


def _manifest(srv: _Server, *, corrupt: str | None = None) -> dict[str, Any]:
    for rel, data in FILES.items():
        (srv.root / "rel" / rel).parent.mkdir(parents=True, exist_ok=True)
        (srv.root / "rel" / rel).write_bytes(data)
    for rel, data in MEMBERS.items():
        (srv.root / "book" / rel).parent.mkdir(parents=True, exist_ok=True)
        (srv.root / "book" / rel).write_bytes(data)
    if corrupt:
        (srv.root / corrupt).write_bytes((srv.root / corrupt).read_bytes().replace(b"A", b"B"))
    return {
        "release": {"description": "d", "into": "data/release", "base_url": srv.url + "rel/",
                    "files": [{"path": p, "sha256": _sha(d), "bytes": len(d)} for p, d in FILES.items()]},
        "books": {"description": "d", "into": "books",
                  "epubs": [{"path": "b.epub", "base_url": srv.url + "book/",
                             "members": [{"path": p, "sha256": _sha(d), "bytes": len(d)}
                                         for p, d in MEMBERS.items()]}]},
    }


def _leftovers(root: Path) -> list[Path]:
    return [p for p in root.rglob("*") if p.name.endswith(".part")]


def test_fetch_good_checksums_places_files_and_builds_the_epub(server: _Server, tmp_path: Path) -> None:
    env = {ENV_DATA_DIR: str(tmp_path / "data")}
    manifest = _manifest(server)
    got = fetch("release", env, manifest=manifest)
    assert got.path == tmp_path / "data" / "data" / "release" == data_path("release", env, manifest)
    assert got.downloaded == 2
    assert {p: (got.path / p).read_bytes() for p in FILES} == FILES
    books = fetch("books", env, manifest=manifest)
    with zipfile.ZipFile(books.path / "b.epub") as epub:
        assert epub.namelist()[0] == "mimetype"
        assert epub.getinfo("mimetype").compress_type == zipfile.ZIP_STORED
        assert {n: epub.read(n) for n in epub.namelist()} == MEMBERS
    # a second fetch checks the checksums and downloads nothing
    before = len(server.requests)
    again = fetch("release", env, manifest=manifest)
    assert (again.downloaded, again.kept) == (0, 2)
    assert fetch("books", env, manifest=manifest).downloaded == 0
    assert len(server.requests) == before
    assert not _leftovers(tmp_path / "data")


def test_fetch_refuses_a_bad_checksum_and_keeps_nothing(server: _Server, tmp_path: Path) -> None:
    env = {ENV_DATA_DIR: str(tmp_path / "data")}
    manifest = _manifest(server, corrupt="rel/summaries/a.json")
    with pytest.raises(BooksumError, match=r"refused .*a\.json: expected .* SHA-256 .*nothing was kept"):
        fetch("release", env, manifest=manifest, workers=1)
    assert not list((tmp_path / "data").rglob("a.json"))
    assert not _leftovers(tmp_path)


def test_a_damaged_local_file_is_fetched_again(server: _Server, tmp_path: Path) -> None:
    env = {ENV_DATA_DIR: str(tmp_path / "data")}
    manifest = _manifest(server)
    target = fetch("release", env, manifest=manifest).path / "LICENSE"
    target.write_bytes(b"changed\n")
    assert fetch("release", env, manifest=manifest).downloaded == 1
    assert target.read_bytes() == FILES["LICENSE"]


def test_partial_download_is_not_left_behind(server: _Server, tmp_path: Path) -> None:
    env = {ENV_DATA_DIR: str(tmp_path / "data")}
    manifest = _manifest(server)
    server.cut.add("book/epub/text/chapter-1.xhtml")
    with pytest.raises(BooksumError, match=r"(got 15 bytes|connection closed after 15 of 30 bytes).*nothing was kept"):
        fetch("books", env, manifest=manifest)
    assert not (tmp_path / "data" / "books" / "b.epub").exists()
    assert not _leftovers(tmp_path)


def test_a_missing_file_on_the_server_is_one_line(server: _Server, tmp_path: Path) -> None:
    manifest = _manifest(server)
    (server.root / "rel" / "LICENSE").unlink()
    with pytest.raises(BooksumError, match="HTTP 404") as info:
        fetch("release", {ENV_DATA_DIR: str(tmp_path)}, manifest=manifest)
    assert "\n" not in str(info.value)


def test_unknown_name_lists_the_known_ones() -> None:
    with pytest.raises(ConfigError, match="booookscore-release, sample-books"):
        data_path("nope", {})


def test_the_data_root_is_the_cache_dir_unless_the_variable_says() -> None:
    assert data_path("sample-books", {"BOOKSUM_CACHE_DIR": "/c"}) == Path("/c/data/books")
    assert data_path("booookscore-release", {ENV_DATA_DIR: "/s", "BOOKSUM_CACHE_DIR": "/c"}) == Path(
        "/s/data/booookscore-release")


def test_the_packaged_manifest_pins_every_file() -> None:
    known = datasets()
    assert set(known) == {"booookscore-release", "sample-books"}
    release = known["booookscore-release"]
    assert {f.path for f in release.files} >= {"summaries/gpt4-2048-hier-cleaned.json",
                                               "annotations/gpt4-2048-hier.json", "LICENSE"}
    pins = list(release.files) + [m for book in known["sample-books"].epubs for m in book.members]
    assert all(p.url.startswith("https://raw.githubusercontent.com/") and "/master/" not in p.url for p in pins)
    assert all(len(p.sha256) == 64 and p.size > 0 for p in pins)
    assert all(book.members[0].path == "mimetype" for book in known["sample-books"].epubs)


def test_the_packaged_manifest_matches_the_local_copy_when_there_is_one() -> None:
    """The copy the tests use (BOOKSUM_DATA_DIR in CI, else the cache) is what the manifest pins."""
    import os

    from booksum_app.runners.data import dataset, missing

    def no_network(url: str, *, timeout: float) -> Any:
        raise AssertionError(f"tried to download {url}")

    checked = 0
    for name in ("booookscore-release", "sample-books"):
        if missing(dataset(name), data_path(name, os.environ)):
            continue
        assert fetch(name, os.environ, opener=no_network).downloaded == 0
        checked += 1
    if not checked:
        pytest.skip("no local copy of the data: run `booksum data fetch NAME` or set BOOKSUM_DATA_DIR")


def test_cli_path_and_fetch(server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BOOKSUM_CACHE_DIR", str(tmp_path / "cache"))
    monkeypatch.delenv(ENV_DATA_DIR, raising=False)
    runner = CliRunner()
    missing = runner.invoke(cli, ["data", "path", "booookscore-release"])
    assert missing.exit_code == 2
    assert "booksum data fetch booookscore-release" in missing.output
    unknown = runner.invoke(cli, ["data", "fetch", "nope"])
    assert unknown.exit_code == 2 and "unknown data set 'nope'" in unknown.output
    manifest = _manifest(server)
    monkeypatch.setattr("booksum_app.runners.data.packaged_manifest", lambda: manifest)
    fetched = runner.invoke(cli, ["data", "fetch", "release"])
    assert fetched.exit_code == 0, fetched.output
    where = tmp_path / "cache" / "data" / "data" / "release"
    assert fetched.stdout.strip() == str(where)
    assert runner.invoke(cli, ["data", "path", "release"]).stdout.strip() == str(where)
    assert json.loads((where / "summaries" / "a.json").read_text()) == {"book.epub": "A summary."}


def test_a_dripping_server_is_cut_off_at_the_download_bound(
    server: _Server, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Each read arrives well within the socket timeout, so only a bound on the whole download ends it."""
    from booksum_app.runners import data

    monkeypatch.setattr(data, "MIN_BOUND_S", 0.5)
    manifest = _manifest(server)
    server.drip.add("rel/summaries/a.json")
    start = time.monotonic()
    with pytest.raises(BooksumError, match=r"after 0 s, slower than 32 KiB/s") as caught:
        fetch("release", {ENV_DATA_DIR: str(tmp_path / "data")}, manifest=manifest)
    assert time.monotonic() - start < 3, "cut at the bound, not after the whole drip"
    assert "\n" not in str(caught.value) and not _leftovers(tmp_path)
    assert not list((tmp_path / "data").rglob("a.json"))


def test_the_download_bound_grows_with_the_file() -> None:
    from booksum_app.runners.data import MIN_BOUND_S, MIN_BYTES_PER_S, download_bound_s

    assert download_bound_s(10) == MIN_BOUND_S
    assert download_bound_s(100 * MIN_BYTES_PER_S * 60) == 6000
