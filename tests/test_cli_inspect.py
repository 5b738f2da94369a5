"""`booksum inspect` through the CLI: narrative chapters only, chunks within budget, and every
bad input refused with one line on stderr and a non-zero exit code (never a traceback)."""

from __future__ import annotations

import json
import zipfile
from collections.abc import Callable
from pathlib import Path

import pytest
from book_fixtures import BOOKS_DIR, chapter, epub_files, sample_book, simple_epub, write_zip, xhtml
from click.testing import CliRunner

from booksum_app.cli import cli

MODEL = "openai:gpt-4o"  # tiktoken-counted, so no local weights are loaded


def run(*args: str) -> tuple[int, str, str]:
    result = CliRunner().invoke(cli, list(args), catch_exceptions=False)
    return result.exit_code, result.stdout, result.stderr


def _not_zip(tmp: Path) -> Path:
    path = tmp / "fake.epub"
    path.write_text("just some text, not an archive")
    return path


def _truncated(tmp: Path) -> Path:
    good = simple_epub(tmp / "good.epub").read_bytes()
    path = tmp / "cut.epub"
    path.write_bytes(good[: len(good) // 2])
    return path


def _without(member: str) -> Callable[[Path], Path]:
    def build(tmp: Path) -> Path:
        files = epub_files([("c.xhtml", chapter("I", "Text.")), ("d.xhtml", chapter("II", "X."))])
        del files[member]
        return write_zip(tmp / "b.epub", files)

    return build


def _empty(tmp: Path) -> Path:
    return write_zip(tmp / "b.epub", epub_files([("c.xhtml", xhtml('<img src="a.png" alt=""/>'))]))


def _unknown_format(tmp: Path) -> Path:
    path = tmp / "book.xyz"
    path.write_text("Chapter 1\n\nSome text.")
    return path


def _binary_txt(tmp: Path) -> Path:
    path = tmp / "book.txt"
    path.write_bytes(bytes(range(256)) * 200)
    return path


def _drm(tmp: Path) -> Path:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    files["META-INF/encryption.xml"] = b"""<?xml version="1.0"?>
<encryption xmlns="urn:oasis:names:tc:opendocument:xmlns:container"
  xmlns:enc="http://www.w3.org/2001/04/xmlenc#" xmlns:ds="http://www.w3.org/2000/09/xmldsig#">
 <enc:EncryptedData><enc:EncryptionMethod Algorithm="http://www.w3.org/2001/04/xmlenc#aes128-cbc"/>
  <ds:KeyInfo><resource xmlns="http://ns.adobe.com/adept">urn:uuid:1</resource></ds:KeyInfo>
  <enc:CipherData><enc:CipherReference URI="OEBPS/c.xhtml"/></enc:CipherData></enc:EncryptedData>
</encryption>"""
    return write_zip(tmp / "b.epub", files)


def _xxe(tmp: Path) -> Path:
    hostile = (
        '<?xml version="1.0"?><!DOCTYPE html [<!ENTITY xxe SYSTEM "file:///etc/passwd">]>'
        '<html xmlns="http://www.w3.org/1999/xhtml"><body><p>&xxe;</p></body></html>'
    )
    return write_zip(tmp / "b.epub", epub_files([("c.xhtml", hostile)]))


def _zip_bomb(tmp: Path) -> Path:
    files = epub_files([("c.xhtml", chapter("I", "Text."))])
    files["OEBPS/bomb.xhtml"] = b"\x00" * (8 * 1024 * 1024)
    return write_zip(tmp / "b.epub", files)


def _docx(tmp: Path) -> Path:
    path = tmp / "book.epub"
    with zipfile.ZipFile(path, "w") as zf:
        zf.writestr("word/document.xml", "<w:document/>")
    return path


BAD_INPUTS = [
    ("not a zip", _not_zip, 3, "not a valid zip archive"),
    ("truncated zip", _truncated, 3, "corrupt or truncated"),
    ("missing container.xml", _without("META-INF/container.xml"), 3, "container.xml is missing"),
    ("missing OPF", _without("OEBPS/content.opf"), 3, "missing"),
    ("spine -> missing file", _without("OEBPS/d.xhtml"), 3, "spine item OEBPS/d.xhtml is missing"),
    ("empty book", _empty, 3, "no text found"),
    ("unknown format", _unknown_format, 3, "unknown book format"),
    ("binary .txt", _binary_txt, 3, "binary"),
    ("DRM", _drm, 3, "DRM"),
    ("external entity", _xxe, 3, "declares XML entities"),
    ("zip bomb", _zip_bomb, 3, "zip bomb"),
    ("not an epub zip", _docx, 3, "not an EPUB"),
]


@pytest.mark.parametrize(
    ("build", "exit_code", "fragment"),
    [case[1:] for case in BAD_INPUTS],
    ids=[case[0] for case in BAD_INPUTS],
)
def test_bad_input_gives_one_line_and_exit_code(
    tmp_path: Path, build: Callable[[Path], Path], exit_code: int, fragment: str
) -> None:
    path = build(tmp_path)
    code, out, err = run("inspect", str(path), "--model", MODEL)
    assert code == exit_code
    assert out == ""
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    assert lines[0].startswith("error: ") and fragment in lines[0]
    assert "Traceback" not in err


def test_missing_file_is_refused() -> None:
    code, _, err = run("inspect", "no-such-book.epub", "--model", MODEL)
    assert code == 3 and "no such file" in err


def test_bad_model_string_is_a_config_error(tmp_path: Path) -> None:
    code, _, err = run("inspect", str(simple_epub(tmp_path / "b.epub")), "--model", "nope:thing")
    assert code == 2 and "nope" in err


def test_pride_and_prejudice_json_lists_61_chapters_within_budget() -> None:
    code, out, _ = run(
        "inspect", str(sample_book("pride-and-prejudice")), "--model", MODEL, "--json",
        "--chunk-size", "2048",
    )
    assert code == 0
    report = json.loads(out)
    assert report["schema_version"] == 1
    kept = [s for s in report["sections"] if s["kept"]]
    assert len(kept) == 61
    assert all(s["title"].startswith("Chapter") for s in kept)
    excluded = [s for s in report["sections"] if not s["kept"]]
    assert excluded and all(s["reason"] for s in excluded)
    assert report["chunks"]["within_budget"] and report["chunks"]["max_tokens"] <= 2048
    plans = {p["strategy"]: p for p in report["plans"]}
    assert set(plans) == {"hier", "inc", "direct", "hier-evidence"}
    assert plans["hier-evidence"]["calls"] >= plans["hier"]["calls"], "evidence: fewer summaries per merge"
    # hier: one call per chunk, then merges, then the cleaning pass
    assert plans["hier"]["calls"] > report["chunks"]["count"]
    assert plans["hier"]["cost_usd"] > 0


def test_frankenstein_table_shows_letters_and_chapters_only() -> None:
    code, out, _ = run("inspect", str(sample_book("frankenstein")), "--model", MODEL)
    assert code == 0
    assert "28 sections kept" in out
    assert "Letter I" in out and "Chapter XXIV" in out
    assert "excluded: epub:type=colophon" in out


@pytest.mark.slow
@pytest.mark.parametrize("path", sorted(BOOKS_DIR.glob("*.epub")), ids=lambda p: p.stem)
def test_every_sample_book_inspects_within_budget(path: Path) -> None:
    code, out, _ = run("inspect", str(path), "--model", MODEL, "--json", "--chunk-size", "1024")
    assert code == 0
    report = json.loads(out)
    assert report["chunks"]["within_budget"]
    assert report["chunks"]["max_tokens"] <= 1024
    assert all(s["reason"] for s in report["sections"] if not s["kept"])


def test_web_residue_is_counted_in_the_report(tmp_path: Path) -> None:
    path = tmp_path / "novel.txt"
    path.write_text("第一回 宴桃园豪杰三结义\n　　话说天下大势，分久必合。\n手机阅读本书请访问 m.example.com\n"
                    "第二回 张翼德怒鞭督邮\n　　且说董卓字仲颖。\n（未完待续）\n", encoding="utf-8")
    code, out, _ = run("inspect", str(path), "--model", MODEL)
    assert code == 0 and "web-page lines dropped: advertisement 2" in out
    code, out, _ = run("inspect", str(path), "--model", MODEL, "--json")
    assert json.loads(out)["web_residue"] == "advertisement 2"
