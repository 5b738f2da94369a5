"""Issue 9 item 5: text files in other encodings are decoded right, or refused, never garbled."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from click.testing import CliRunner

from booksum_app.books import open_book
from booksum_app.books.text import decode_text
from booksum_app.cli import cli

ZH_TRAD = ("第一回　宴桃園豪傑三結義\n\n話說天下大勢，分久必合，合久必分。周末七國分爭，并入于秦。及秦滅之後，"
           "楚、漢分爭，又并入于漢。漢朝自高祖斬白蛇而起義，一統天下，後來光武中興，傳至獻帝，遂分為三國。\n\n") * 6
ZH_SIMP = "第一回　宴桃园豪杰三结义\n\n话说天下大势，分久必合，合久必分。周末七国分争，并入于秦。及秦灭之后，楚、汉分争。\n\n" * 6
RU = ("Глава первая\n\nВсе счастливые семьи похожи друг на друга, каждая несчастливая семья несчастлива "
      "по-своему. Все смешалось в доме Облонских.\n\n") * 6
JA = "第一章\n\n吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所で泣いていた。\n\n" * 6
KO = "제1장\n\n옛날 옛적에 한 마을에 착한 나무꾼이 살았습니다. 그는 매일 산에 가서 나무를 했습니다.\n\n" * 6
FR = ("Chapitre premier\n\nLongtemps, je me suis couché de bonne heure. Parfois, à peine ma bougie éteinte, "
      "mes yeux se fermaient si vite que je n'avais pas le temps de me dire : « Je m'endors. »\n\n") * 6


@pytest.mark.parametrize(
    ("text", "encoding", "expected"),
    [
        (ZH_TRAD, "big5", "big5"),
        (RU, "cp1251", "cp1251"),
        (RU, "koi8-r", "koi8_r"),
        (JA, "shift_jis", "cp932"),
        (KO, "euc-kr", "cp949"),
        (ZH_SIMP, "gb18030", "gb18030"),
        (FR, "latin-1", "cp1252"),
        ("Il était une fois un garçon qui aimait la mer et les bateaux.\n", "latin-1", "cp1252"),  # short: the detector says cp1250
        (FR, "utf-16", "utf-16-le"),
        (FR, "utf-8", "utf-8"),
    ],
)
def test_decoded_text_equals_the_original(text: str, encoding: str, expected: str) -> None:
    decoded, used = decode_text(text.encode(encoding), name="book.txt")
    assert decoded.lstrip("\ufeff") == text
    assert used == expected


def test_a_big5_book_is_chinese_and_inspect_names_the_encoding(tmp_path: Path) -> None:
    book = tmp_path / "sanguo.txt"
    book.write_bytes(ZH_TRAD.encode("big5"))
    assert open_book(book).language == "zh"
    result = CliRunner().invoke(cli, ["inspect", str(book), "--json"])
    assert result.exit_code == 0, result.output
    report = json.loads(result.stdout)
    assert report["encoding"] == "big5" and report["language"] == "zh"
    shown = CliRunner().invoke(cli, ["inspect", str(book)])
    assert "encoding big5" in shown.stdout
