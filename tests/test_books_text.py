"""Plain-text reader: encodings, headings, paragraphs, boilerplate, refusals."""

from __future__ import annotations

from pathlib import Path

import pytest
from book_fixtures import BOOKS_DIR

from booksum_app.books import open_book
from booksum_app.books.encoding import decode_text
from booksum_app.errors import BookFormatError

EN = """CHAPTER I.
The Beginning

It was a cold morning in the café; naïve Zoë said “hello” — twice.
She waited by the window.

Then the bell rang.

CHAPTER II.

Nothing more happened.
"""

ZH = """第一章 开端
　　那是一个寒冷的早晨，她在窗边等待。
　　“你好，”她说。然后钟声响了。
第二章 结局
　　再也没有发生什么。
"""


@pytest.mark.parametrize(
    ("encoding", "bom"),
    [
        ("utf-8", b""),
        ("utf-8", b"\xef\xbb\xbf"),
        ("utf-16-le", b"\xff\xfe"),
        ("utf-16-be", b"\xfe\xff"),
        ("utf-16-le", b""),
        ("utf-16-be", b""),
    ],
)
@pytest.mark.parametrize("text", [EN, ZH], ids=["en", "zh"])
def test_unicode_encodings_round_trip(tmp_path: Path, encoding: str, bom: bytes, text: str) -> None:
    path = tmp_path / "book.txt"
    path.write_bytes(bom + text.encode(encoding))
    decoded, _ = decode_text(path.read_bytes(), name="book.txt")
    assert decoded == text
    book = open_book(path)
    assert [c.title for c in book.chapters][:2] in (
        ["CHAPTER I: The Beginning", "CHAPTER II."],
        ["第一章 开端", "第二章 结局"],
    )


def test_gb18030_chinese(tmp_path: Path) -> None:
    path = tmp_path / "book.txt"
    path.write_bytes(ZH.encode("gb18030"))
    assert decode_text(path.read_bytes(), name="b") == (ZH, "gb18030")
    book = open_book(path)
    assert book.language == "zh"
    assert book.chapters[0].paragraphs == (
        "那是一个寒冷的早晨，她在窗边等待。",
        "“你好，”她说。然后钟声响了。",
    )
    assert book.metadata["encoding"] == "gb18030"


def test_cp1252_english_is_not_mistaken_for_gb18030(tmp_path: Path) -> None:
    path = tmp_path / "book.txt"
    path.write_bytes(EN.encode("cp1252"))
    assert decode_text(path.read_bytes(), name="b") == (EN, "cp1252")
    book = open_book(path)
    assert book.language == "en"
    assert book.chapters[0].paragraphs[0].startswith("It was a cold morning in the café; naïve Zoë")


def test_english_headings_and_paragraphs(tmp_path: Path) -> None:
    path = tmp_path / "book.txt"
    path.write_text(EN, encoding="utf-8")
    book = open_book(path)
    assert [(c.title, c.paragraphs) for c in book.chapters] == [
        (
            "CHAPTER I: The Beginning",
            (
                (
                    "It was a cold morning in the café; naïve Zoë said “hello” — twice. "
                    "She waited by the window."
                ),
                "Then the bell rang.",
            ),
        ),
        ("CHAPTER II.", ("Nothing more happened.",)),
    ]
    assert book.chapters[1].source == "line 9"


@pytest.mark.parametrize(
    "heading",
    [
        "Chapter 12",
        "CHAPTER XII",
        "Chapter Twelve",
        "Chapter Twenty-One",
        "Chapter the First",
        "BOOK ONE",
        "Part II",
        "Letter 4",
        "PROLOGUE",
        "Epilogue",
        "Chapter 3: The Storm",
        "Chapter 10000",
        "第十二章",
        "第十二回",
        "第12章",
        "第十二章　风雪",
        "第七十四回　燕青智扑“擎天柱”　李逵寿张乔坐衙",
        "楔子",
    ],
)
def test_heading_forms(tmp_path: Path, heading: str) -> None:
    path = tmp_path / "book.txt"
    path.write_text(f"{heading}\n\nThe body of the chapter goes on here.\n", encoding="utf-8")
    (only,) = open_book(path).chapters
    assert (only.title, only.narrative) == (heading, True)


@pytest.mark.parametrize(
    "line", ["Part of the problem was the rain.", "Chapter and verse were quoted.", "Book lovers"]
)
def test_prose_that_starts_like_a_heading_is_not_one(tmp_path: Path, line: str) -> None:
    path = tmp_path / "book.txt"
    path.write_text(f"CHAPTER 1\n\n{line}\n\nMore text follows here.\n", encoding="utf-8")
    book = open_book(path)
    assert len(book.chapters) == 1 and book.chapters[0].paragraphs[0] == line


def test_chinese_one_paragraph_per_line_without_indentation(tmp_path: Path) -> None:
    text = ("第一回 甄士隐梦幻识通灵\n此开卷第一回也。\n作者自云：曾历过一番梦幻之后。\n"
            "第二回 贾夫人仙逝扬州城\n诗云。\n")
    path = tmp_path / "hlm.txt"
    path.write_text(text, encoding="utf-8")
    book = open_book(path)
    assert [(c.title, len(c.paragraphs)) for c in book.chapters] == [
        ("第一回 甄士隐梦幻识通灵", 2),
        ("第二回 贾夫人仙逝扬州城", 1),
    ]


def test_chinese_table_of_contents_lines_are_not_chapters(tmp_path: Path) -> None:
    text = "目录\n第一章 开端\n第二章 结局\n\n" + ZH
    path = tmp_path / "book.txt"
    path.write_text(text, encoding="utf-8")
    book = open_book(path)
    kept = book.selected_chapters()
    assert [c.title for c in kept] == ["第一章 开端", "第二章 结局"]
    assert all(c.paragraphs for c in kept)


GUTENBERG = """The Project Gutenberg eBook of A Tale

Title: A Tale
Author: Some Writer

*** START OF THE PROJECT GUTENBERG EBOOK A TALE ***

A TALE

by Some Writer

CONTENTS

 CHAPTER I. The Start
 CHAPTER II. The End

CHAPTER I. The Start

The story begins here, and it goes on for a while with words enough to count.

CHAPTER II. The End

And here it ends, as all things must.

*** END OF THE PROJECT GUTENBERG EBOOK A TALE ***

Updated editions will replace the previous one.
"""


def test_gutenberg_boilerplate_and_contents_are_excluded(tmp_path: Path) -> None:
    path = tmp_path / "tale.txt"
    path.write_text(GUTENBERG, encoding="utf-8")
    book = open_book(path)
    assert (book.title, book.authors) == ("A Tale", ("Some Writer",))
    assert [(c.title, c.excluded_reason) for c in book.chapters] == [
        ("Project Gutenberg header", "gutenberg boilerplate"),
        ("Opening", "front matter before the first chapter heading"),
        ("CONTENTS", "title: CONTENTS"),
        ("CHAPTER I. The Start", None),
        ("CHAPTER II. The End", None),
        ("Project Gutenberg license", "gutenberg boilerplate"),
    ]
    assert "Gutenberg" not in book.text()


def test_text_without_headings_is_one_chapter(tmp_path: Path) -> None:
    path = tmp_path / "story.txt"
    path.write_text("One line\nwrapped here.\n\nSecond paragraph.\n", encoding="utf-8")
    (only,) = open_book(path).chapters
    assert (only.title, only.paragraphs) == (
        "story",
        ("One line wrapped here.", "Second paragraph."),
    )


def test_lang_argument_wins(tmp_path: Path) -> None:
    path = tmp_path / "story.txt"
    path.write_text("Plain English text.\n", encoding="utf-8")
    assert open_book(path, lang="zh").language == "zh"


def test_binary_file_named_txt_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "image.txt"
    path.write_bytes(b"\x89PNG\r\n\x1a\n\x00\x00\x00\rIHDR" + bytes(range(256)) * 8)
    with pytest.raises(BookFormatError, match="binary file") as info:
        open_book(path)
    assert "\n" not in str(info.value)


def test_control_characters_without_nul_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "junk.txt"
    path.write_bytes(bytes([1, 2, 3, 4, 5, 6, 7, 8, 65]) * 200)
    with pytest.raises(BookFormatError, match="binary file"):
        open_book(path)


def test_empty_and_blank_files_are_refused(tmp_path: Path) -> None:
    empty = tmp_path / "empty.txt"
    empty.write_bytes(b"")
    with pytest.raises(BookFormatError, match="empty"):
        open_book(empty)
    blank = tmp_path / "blank.txt"
    blank.write_text("\n\n   \n", encoding="utf-8")
    with pytest.raises(BookFormatError, match="no text found"):
        open_book(blank)


def test_undecodable_bytes_are_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"abc \x81\x20\x8d\x20 def")  # invalid in UTF-8, GB18030 and cp1252
    with pytest.raises(BookFormatError, match="cannot decode"):
        open_book(path)


def test_bad_utf8_after_bom_is_refused(tmp_path: Path) -> None:
    path = tmp_path / "bad.txt"
    path.write_bytes(b"\xef\xbb\xbfabc \xff\xfe def")
    with pytest.raises(BookFormatError, match="byte-order mark"):
        open_book(path)


def test_a_chinese_sentence_starting_with_a_chapter_number_is_text(tmp_path: Path) -> None:
    text = (
        "《红楼梦》曹雪芹\n\n第三回　贾雨村夤缘复旧职　林黛玉抛父进京都\n\n　　却说雨村忙回头看时，不是别人。\n\n"
        "　　第四回中既将薛家母子在荣府内寄居等事略已表明，此回则暂不能写矣。\n\n"
        "第四回　薄命女偏逢薄命郎　葫芦僧乱判葫芦案\n\n　　却说黛玉同姊妹们至王夫人处。\n\n"
        "第一百十九回说的是宝玉中举，这是后话。\n\n"
    )
    path = tmp_path / "hlm.txt"
    path.write_text(text, encoding="utf-8")
    book = open_book(path)
    titles = [c.title for c in book.chapters if c.narrative]
    assert titles == ["第三回　贾雨村夤缘复旧职　林黛玉抛父进京都", "第四回　薄命女偏逢薄命郎　葫芦僧乱判葫芦案"]
    assert "第四回中既将薛家母子" in book.chapters[-2].text or "第四回中既将薛家母子" in book.text()
    assert "第一百十九回说的是宝玉中举" in book.chapters[-1].text
    assert (book.title, book.authors) == ("红楼梦", ("曹雪芹",))


def test_shuihuzhuan_keeps_its_wedge_and_120_chapters_and_reads_its_title_line() -> None:
    from tests.conftest import BOOKS_DIR

    path = BOOKS_DIR / "shi-naian_shuihuzhuan.txt"
    if not path.is_file():
        pytest.skip(f"水浒传 not in {BOOKS_DIR} (BOOKSUM_DATA_DIR)")
    book = open_book(path)
    narrative = [c for c in book.chapters if c.narrative]
    assert len(narrative) == 121 and narrative[0].title.startswith("楔子")
    assert narrative[-1].title.startswith("第一百二十回")
    assert (book.title, book.authors) == ("水浒传", ("施耐庵",))
HONGLOU = (
    "《红楼梦》曹雪芹\r\n\r\n"
    "第一回　甄士隐梦幻识通灵　贾雨村风尘怀闺秀\r\n"
    "　　此开卷第一回也。作者自云：因曾历过一番梦幻之后，故将真事隐去。\r\n"
    "第二回　贾夫人仙逝扬州城　冷子兴演说荣国府\r\n"
    "　　却说封肃因听见公差传唤，忙出来陪笑启问。\r\n"
    "第三回　托内兄如海荐西宾　接外孙贾母惜孤女\r\n"
    "　　却说雨村忙回头看时，不是别人，乃是当日同僚一案参革的张如圭。\r\n"
    "第四回　薄命女偏逢薄命郎　葫芦僧乱判葫芦案\r\n"
    "　　却说黛玉同姊妹们至王夫人处，见王夫人与兄嫂处的来使计议家务。\r\n"
    "第五回　游幻境指迷十二钗　饮仙醪曲演红楼梦\r\n"
    "　　第四回中既将薛家母子在荣府内寄居等事略已表明，此回则暂不能写矣。\r\n"
    "　　第四回已说过了。\r\n"
    "　　如今且说林黛玉自在荣府以来，贾母万般怜爱。\r\n"
    "第一百十九回　中乡魁宝玉却尘缘　沐皇恩贾家延世泽\r\n"
    "　　话说莺儿见宝玉说话，摸不着头脑。\r\n"
    "　　第一百十九回里说的，便是这些。\r\n"
)


def test_chinese_body_sentence_starting_with_an_ordinal_is_text(tmp_path: Path) -> None:
    path = tmp_path / "hongloumeng.txt"
    path.write_bytes(HONGLOU.encode("utf-8"))
    book = open_book(path)
    assert (book.title, book.authors, book.language) == ("红楼梦", ("曹雪芹",), "zh")
    titles = [c.title.split("\u3000")[0] for c in book.selected_chapters()]
    assert titles == ["第一回", "第二回", "第三回", "第四回", "第五回", "第一百十九回"]
    fifth = book.selected_chapters()[4]
    assert fifth.paragraphs[0].startswith("第四回中既将薛家母子")
    assert fifth.paragraphs[1] == "第四回已说过了。"
    assert book.selected_chapters()[5].paragraphs[-1] == "第一百十九回里说的，便是这些。"


@pytest.mark.parametrize(
    ("head", "title", "authors"),
    [
        ("《红楼梦》曹雪芹", "红楼梦", ("曹雪芹",)),
        ("《红楼梦》 作者：曹雪芹", "红楼梦", ("曹雪芹",)),
        ("《红楼梦》\n\n曹雪芹 著", "红楼梦", ("曹雪芹",)),
        ("《红楼梦》", "红楼梦", ()),
    ],
)
def test_chinese_title_author_line(
    tmp_path: Path, head: str, title: str, authors: tuple[str, ...]
) -> None:
    path = tmp_path / "book.txt"
    path.write_text(f"{head}\n\n第一回　开端\n　　话说天下大势，分久必合。\n", encoding="utf-8")
    book = open_book(path)
    assert (book.title, book.authors) == (title, authors)


def test_five_digit_chapter_number_is_a_heading(tmp_path: Path) -> None:
    path = tmp_path / "long.txt"
    path.write_text(
        "Chapter 9999\n\nIt rained again.\n\nChapter 10000\n\nAt last the sun came out.\n",
        encoding="utf-8",
    )
    book = open_book(path)
    assert [c.title for c in book.chapters] == ["Chapter 9999", "Chapter 10000"]


def test_shuihuzhuan_has_xiezi_and_120_chapters() -> None:
    path = BOOKS_DIR / "shi-naian_shuihuzhuan.txt"
    if not path.exists():
        pytest.skip(f"sample book not in {BOOKS_DIR} (BOOKSUM_DATA_DIR)")
    book = open_book(path)
    kept = book.selected_chapters()
    assert (book.title, book.authors, book.language) == ("水浒传", ("施耐庵",), "zh")
    assert len(kept) == 121
    assert kept[0].title.startswith("楔子") and kept[-1].title.startswith("第一百二十回")
    assert all(c.paragraphs for c in kept)


@pytest.mark.parametrize("suffix", [".txt", ".md", ".html"])
def test_a_file_over_the_size_cap_is_refused_before_it_fills_memory(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, suffix: str
) -> None:
    import booksum_app.books.text as text_module

    monkeypatch.setattr(text_module, "MAX_BOOK_FILE_BYTES", 1000)
    path = tmp_path / f"big{suffix}"
    path.write_text("Chapter 1\n\n" + "A sentence of the book. " * 100, encoding="utf-8")
    with pytest.raises(BookFormatError, match="over 0 MiB|far larger than any book"):
        open_book(path)
    path.write_text("Chapter 1\n\nA short book. It fits.", encoding="utf-8")
    assert open_book(path).text()
