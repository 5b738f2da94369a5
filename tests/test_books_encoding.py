"""Legacy encodings (issue 9 item 5): decoded exactly, language right, or refused in one line."""

from __future__ import annotations

from pathlib import Path

import pytest

from booksum_app.books import open_book
from booksum_app.books.encoding import decode_text
from booksum_app.errors import BookFormatError

ZH_HANT = (
    "話說天下大勢，分久必合，合久必分。周末七國分爭，並入於秦。及秦滅之後，楚、漢分爭，又並入於漢。"
    "漢朝自高祖斬白蛇而起義，一統天下。後來光武中興，傳至獻帝，遂分為三國。\n\n"
    "推其致亂之由，殆始於桓、靈二帝。桓帝禁錮善類，崇信宦官。及桓帝崩，靈帝即位，大將軍竇武、"
    "太傅陳蕃，共相輔佐。時有宦官曹節等弄權，竇武、陳蕃謀誅之，機事不密，反為所害。\n\n"
    "中涓自此愈橫。建寧二年四月望日，帝御溫德殿。方升座，殿角狂風驟起，只見一條大青蛇，"
    "從梁上飛將下來，蟠於椅上。帝驚倒，左右急救入宮，百官俱奔避。\n"
)
ZH_HANS = (
    "话说天下大势，分久必合，合久必分。周末七国分争，并入于秦。及秦灭之后，楚、汉分争，又并入于汉。"
    "汉朝自高祖斩白蛇而起义，一统天下。后来光武中兴，传至献帝，遂分为三国。\n\n"
    "推其致乱之由，殆始于桓、灵二帝。桓帝禁锢善类，崇信宦官。及桓帝崩，灵帝即位，大将军窦武、"
    "太傅陈蕃，共相辅佐。时有宦官曹节等弄权，窦武、陈蕃谋诛之，机事不密，反为所害。\n\n"
    "中涓自此愈横。建宁二年四月望日，帝御温德殿。方升座，殿角狂风骤起，只见一条大青蛇，"
    "从梁上飞将下来，蟠于椅上。帝惊倒，左右急救入宫，百官俱奔避。\n"
)
RU = (
    "Все счастливые семьи похожи друг на друга, каждая несчастливая семья несчастлива "
    "по-своему.\n\nВсё смешалось в доме Облонских. Жена узнала, что муж был в связи с бывшею "
    "в их доме француженкою-гувернанткой, и объявила мужу, что не может жить с ним в одном "
    "доме.\n\nПоложение это продолжалось уже третий день и мучительно чувствовалось и самими "
    "супругами, и всеми членами семьи, и домочадцами.\n"
)
JA = (
    "吾輩は猫である。名前はまだ無い。どこで生れたかとんと見当がつかぬ。何でも薄暗いじめじめした所で"
    "ニャーニャー泣いていた事だけは記憶している。\n\n吾輩はここで始めて人間というものを見た。"
    "しかもあとで聞くとそれは書生という人間中で一番獰悪な種族であったそうだ。\n\n"
    "この書生というのは時々我々を捕えて煮て食うという話である。しかしその当時は何という考も"
    "なかったから別段恐しいとも思わなかった。\n"
)
FR = (
    "Longtemps, je me suis couché de bonne heure. Parfois, à peine ma bougie éteinte, mes yeux "
    "se fermaient si vite que je n'avais pas le temps de me dire : « Je m'endors. »\n\n"
    "Et, une demi-heure après, la pensée qu'il était temps de chercher le sommeil m'éveillait ; "
    "je voulais poser le volume que je croyais avoir dans les mains et souffler ma lumière.\n\n"
    "J'avais seulement changé de sujet. Être là, c'était déjà ça ; où était-il ? Noël à Noël, "
    "l'été prochain.\n"
)
EN = (
    "It was the best of times, it was the worst of times, it was the age of wisdom, it was "
    "the age of foolishness.\n\nThere were a king with a large jaw and a queen with a plain "
    "face, on the throne of England.\n\nIt was clearer than crystal to the lords of the State "
    "preserves of loaves and fishes, that things in general were settled for ever.\n"
)


@pytest.mark.parametrize(
    ("text", "codec", "encoding", "language"),
    [
        (ZH_HANT, "big5", "big5", "zh"),
        (RU, "cp1251", "cp1251", "en"),  # the pipeline's rule: zh or not (en)
        (RU, "koi8-r", "koi8_r", "en"),
        (ZH_HANS, "utf-8", "utf-8", "zh"),
        (JA, "shift_jis", "cp932", None),
        (ZH_HANS, "gb18030", "gb18030", "zh"),
        (FR, "latin-1", "cp1252", "en"),
        (FR[:120], "latin-1", "cp1252", None),  # short Latin-1: the detector alone misreads it
        (FR, "utf-16", "utf-16-le", "en"),
        (ZH_HANS, "utf-16", "utf-16-le", "zh"),
    ],
)
def test_legacy_encodings_decode_to_the_original(
    tmp_path: Path, text: str, codec: str, encoding: str, language: str | None
) -> None:
    data = text.encode(codec)
    decoded, used = decode_text(data, name="book.txt")
    assert (decoded, used) == (text, encoding)
    path = tmp_path / "book.txt"
    path.write_bytes(data)
    assert open_book(path).text() == text.strip()
    if language is not None:
        path = tmp_path / "book.txt"
        path.write_bytes(data)
        book = open_book(path)
        assert (book.language, book.metadata["encoding"]) == (language, encoding)
        assert book.text() == text.strip()


def test_big5_book_is_chinese_not_english(tmp_path: Path) -> None:
    path = tmp_path / "sanguo.txt"
    path.write_bytes(("第一回 宴桃園豪傑三結義\n\n" + ZH_HANT * 3).encode("big5"))
    book = open_book(path)
    assert book.language == "zh"
    assert book.chapters[0].title == "第一回 宴桃園豪傑三結義"
    assert "話說天下大勢" in book.text()


def test_mostly_english_with_accents_stays_cp1252() -> None:
    text = EN + "Café, naïve, “déjà vu” — 10 °C, © 1859.\n"
    assert decode_text(text.encode("cp1252"), name="b.txt") == (text, "cp1252")
    # dialogue: curly quotes and ellipses outnumber accented letters (War and Peace in cp1252)
    dialogue = EN + "“Well…” she said, “it’s his.” “Ah!…” “Mon cher—” “Yes?”\n\n" * 40
    assert decode_text(dialogue.encode("cp1252"), name="b.txt") == (dialogue, "cp1252")


def test_short_gbk_passage_in_english_is_not_read_as_korean() -> None:
    text = EN * 20 + ZH_HANS[:30] + EN * 20
    assert decode_text(text.encode("gbk"), name="b.txt") == (text, "gb18030")


def test_korean_is_decoded() -> None:
    text = (
        "옛날 옛적에 한 마을에 착한 나무꾼이 살았습니다. 그는 매일 산에 올라 나무를 했습니다.\n\n"
        * 5
    )
    assert decode_text(text.encode("cp949"), name="b.txt") == (text, "cp949")


def test_mostly_english_with_a_few_cyrillic_words_is_refused_not_garbled() -> None:
    text = EN * 20 + RU[:60] + EN * 20
    with pytest.raises(BookFormatError, match="encoding is unclear"):
        decode_text(text.encode("cp1251"), name="b.txt")


def test_undetectable_bytes_are_refused_with_how_to_fix() -> None:
    data = bytes(range(0x80, 0x100)) * 4 + b"abc"
    with pytest.raises(BookFormatError) as err:
        decode_text(data, name="odd.txt")
    message = str(err.value)
    assert "\n" not in message
    assert "odd.txt" in message and "UTF-8" in message and "iconv" in message


def test_inspect_reports_the_encoding_used(tmp_path: Path) -> None:
    from booksum_app.runners.inspect import inspect_book

    path = tmp_path / "sanguo.txt"
    path.write_bytes(("第一回 宴桃園豪傑三結義\n\n" + ZH_HANT * 3).encode("big5"))
    report = inspect_book(path, model="gpt-4o-mini")
    assert (report.encoding, report.language) == ("big5", "zh")
    assert report.to_dict()["encoding"] == "big5"


@pytest.mark.parametrize("seed", range(5))
def test_binary_with_nul_bytes_is_never_read_as_utf16_text(tmp_path: Path, seed: int) -> None:
    import random

    from booksum_app.books import open_book

    rng = random.Random(seed)
    # ASCII-heavy binary: its byte pairs decode to plausible ideographs, its NULs betray it
    data = bytes(rng.choice(b"\x00\x01\x02garbageGARBAGE \xff") for _ in range(4000))
    path = tmp_path / "blob.txt"
    path.write_bytes(data)
    with pytest.raises(BookFormatError, match="binary"):
        open_book(path)
