"""Front/back matter detection: which sections of a book are not narrative.

BooookScore leaves non-narrative content to an LLM cleanup pass (App. D.1); we
decide before any token is spent, from structure first and titles second:

1. EPUB 3 structural semantics (``epub:type`` on ``<body>`` and the outermost
   sections, nav landmarks, the EPUB 2 ``<guide>``). Types in
   ``NON_NARRATIVE_TYPES`` exclude a section; types in ``NARRATIVE_TYPES``
   (chapter, part, prologue, epilogue, ...) keep it and switch title
   heuristics off, so a chapter that happens to be called "Notes" stays.
2. Title heuristics (``classify_title``) for books without semantics: Contents,
   Copyright, Colophon, Acknowledg(e)ments, About the Author, Also by, ...,
   and their Chinese counterparts (目录, 版权, 致谢, ...).

Deliberate decisions (documented because they are judgement calls):

- ``introduction``, ``preface``, ``foreword``, ``afterword`` are excluded even
  when the author wrote them: they talk *about* the book (Frankenstein's 1831
  Introduction is Mary Shelley's account of how the story came about; its
  Preface is by Percy Shelley), and a summary of the story should not mix them
  in. ``--include-front-matter`` keeps them. Exception: when the section is
  explicitly marked as fiction (``z3998:fiction`` on the section itself, not
  just on the body), a frame narrative dressed as a preface is kept.
- ``epigraph`` is excluded only when it is a section on its own (a file whose
  outermost section is the epigraph); an epigraph inside a chapter stays.
- ``z3998:dramatis-personae`` (a cast list) is excluded: reference material,
  not story.
- ``frontmatter``/``backmatter`` bodies with no narrative type inside are
  excluded; ``bodymatter`` is narrative.
- ``prologue``, ``epilogue``, ``conclusion``, ``chapter``, ``part``,
  ``division``, ``volume`` are narrative.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence

from booksum_app.books.model import Chapter
from booksum_app.errors import BookFormatError

#: epub:type values (EPUB 3 SSV and z3998) that mark a section as not narrative.
NON_NARRATIVE_TYPES = frozenset(
    {
        "cover",
        "titlepage",
        "halftitlepage",
        "seriespage",
        "imprint",
        "colophon",
        "copyright-page",
        "toc",
        "toc-brief",
        "landmarks",
        "page-list",
        "loi",
        "lot",
        "loa",
        "lov",
        "dedication",
        "epigraph",
        "acknowledgments",
        "acknowledgements",
        "endnotes",
        "footnotes",
        "rearnotes",
        "notes",
        "bibliography",
        "index",
        "glossary",
        "errata",
        "contributors",
        "other-credits",
        "credits",
        "revision-history",
        "preface",
        "foreword",
        "introduction",
        "afterword",
        "appendix",
        "preamble",
        "z3998:dramatis-personae",
        "z3998:publisher-logo",
        "z3998:biographical-note",
        "z3998:author-biography",
        "z3998:about-the-author",
        "z3998:other-works",
        "z3998:advertisement",
    }
)

#: epub:type values that mark a section as narrative (title heuristics then stay off).
NARRATIVE_TYPES = frozenset(
    {
        "bodymatter",
        "chapter",
        "part",
        "division",
        "volume",
        "subchapter",
        "prologue",
        "epilogue",
        "conclusion",
        "z3998:fiction",
    }
)

#: Types that a ``z3998:fiction`` marker on the section itself turns back into narrative.
_SOFT_TYPES = frozenset({"preface", "foreword", "introduction", "afterword", "preamble"})
_CONTAINER_TYPES = frozenset({"frontmatter", "backmatter"})

_NON_NARRATIVE_TITLES = re.compile(
    r"""^(?:
        (?:table\s+of\s+)?contents | toc
      | copyright(?:\s+page)? | uncopyright | imprint | colophon | legal(?:\s+notice)?
      | acknowledge?ments? | credits
      | about\s+(?:the|this)\s+(?:authors?|book|ebook|translators?|editors?)
      | (?:also|other\s+(?:books|works|titles))\s+by\b.* | by\s+the\s+same\s+author.*
      | books\s+by\b.* | praise\s+for\b.* | more\s+from\b.* | newsletter.*
      | dedication | epigraph
      | (?:half\s*)?title\s*page | titlepage | halftitlepage | cover
      | (?:end|foot)?notes | index | bibliography | glossary | errata
      | preface | foreword | introduction | afterword | appendix(?:\s+\S+)?
      | (?:translator|editor|transcriber|publisher)(?:'|’)?s?(?:'|’)?\s+(?:note|preface|introduction)s?
      | list\s+of\s+(?:illustrations|figures|tables|characters)
      | dramatis\s+person(?:ae|æ) | cast\s+of\s+characters
      | 目录 | 目錄 | 版权(?:信息|页|声明)? | 版權(?:信息|頁|聲明)? | 致谢 | 鸣谢 | 致謝 | 鳴謝
      | 献词 | 獻詞 | 题记 | 出版说明 | 出版說明 | 作者简介 | 作者簡介 | 关于作者 | 關於作者
      | 参考文献 | 參考文獻 | 索引 | 注释 | 註釋 | 前言 | 序言 | 序 | 译序 | 譯序 | 导读 | 導讀
      | 封面 | 扉页 | 扉頁
    )[\s.:]*$""",
    re.IGNORECASE | re.VERBOSE,
)
# Chinese front/back matter, also with a subtitle or number ("后记：写在三十年后", "附录一 人物表",
# "跋（二〇〇五年版）"). Not 番外 (a side story: narrative), not 尾声/楔子 (headings).
_ZH_MATTER_TITLES = re.compile(
    r"""^(?![序引][\s\u3000]*[章幕曲子])(?:
        (?:作者|编|編|译|譯|再版|新版|出版)?(?:后记|後記|后序|後序|后语|後語|跋)
      | 附[录錄][\d０-９一二三四五六七八九十]*
      | 完本感言 | 完结感言 | 完結感言 | 作者的话 | 作者的話 | 作者有话说 | 作者有話說
      | 写在(?:最)?(?:前面|后面|最后)(?:的话)? | 寫在(?:最)?(?:前面|後面|最後)(?:的話)?
      | 内容(?:简介|提要) | 內容(?:簡介|提要) | 作品(?:简介|簡介|相关|相關) | 简介 | 簡介
      | 自序 | 代序 | 再版序 | 新版序 | 前记 | 前記 | 引言 | 卷首语 | 卷首語
      | 目录 | 目錄 | 前言 | 序言 | 序 | 译序 | 譯序
    )(?:[\s:：·—\-（(【].{0,30})?$""",
    re.VERBOSE,
)
_TITLE_WRAPPERS = "【】〖〗[]「」『』<>《》〈〉*·—-=~～ \t\u3000"
_CJK_SPACES = re.compile(r"(?<=[\u3400-\u9fff])[ \t\u3000]+(?=[\u3400-\u9fff])")


def classify_types(types: Iterable[str], *, section_types: Iterable[str] = ()) -> str | None:
    """Return ``"epub:type=<t>"`` when the structural types say non-narrative, else None.

    ``types`` holds every type found on the body, the outermost sections and the
    landmarks; ``section_types`` only those on the outermost section(s), which
    decide whether a ``z3998:fiction`` marker rescues a preface or introduction.
    """
    all_types = set(types)
    own = set(section_types)
    for t in sorted(all_types & NON_NARRATIVE_TYPES):
        if t in _SOFT_TYPES and "z3998:fiction" in own:
            continue
        return f"epub:type={t}"
    if all_types & _CONTAINER_TYPES and not all_types & (NARRATIVE_TYPES - {"z3998:fiction"}):
        container = min(all_types & _CONTAINER_TYPES)
        return f"epub:type={container}"
    return None


def has_narrative_type(types: Iterable[str]) -> bool:
    """True when the types explicitly mark a section as narrative."""
    return bool(set(types) & (NARRATIVE_TYPES - {"z3998:fiction"}))


def classify_title(title: str) -> str | None:
    """Return ``"title: <title>"`` when a section title names front/back matter, else None."""
    clean = " ".join(title.split()).strip()
    if clean and _NON_NARRATIVE_TITLES.match(clean):
        return f"title: {clean}"
    # "【后 记】", "—— 後記 ——": wrappers off, spaces between ideographs closed up
    bare = clean.strip(_TITLE_WRAPPERS)
    if bare and len(bare) <= 40 and any(
        _ZH_MATTER_TITLES.match(form) for form in (bare, _CJK_SPACES.sub("", bare))
    ):
        return f"title: {clean}"
    return None


def check_has_text(
    chapters: Sequence[Chapter], *, name: str, include_front_matter: bool, units: str = "sections"
) -> None:
    """Refuse a book with no text at all, or (by default) with nothing narrative in it.

    Raises:
        BookFormatError: no chapter has text, or every chapter is front/back matter.
    """
    if not any(c.paragraphs for c in chapters):
        raise BookFormatError(
            f"{name}: no text found in any of its {len(chapters)} {units} "
            "(empty or image-only book); nothing to summarize"
        )
    if not include_front_matter and not any(c.narrative and c.paragraphs for c in chapters):
        reasons = sorted({c.excluded_reason or "" for c in chapters if c.excluded_reason})
        raise BookFormatError(
            f"{name}: no narrative text: every section was classified as front/back matter "
            f"({'; '.join(reasons)}); use --include-front-matter to summarize it anyway"
        )


def classify_leading(paragraphs: Sequence[str], *, looks_like_toc: bool = False) -> str | None:
    """Classify text found before the first chapter heading of a txt/html/md book.

    It is front matter when it holds a table of contents or looks like a title page
    (under 300 characters, or paragraphs averaging under 80 characters); otherwise
    it is kept as narrative (an untitled opening).
    """
    if looks_like_toc:
        return "front matter before the first chapter heading (contents)"
    chars = sum(len(p) for p in paragraphs)
    if chars < 300 or chars / max(len(paragraphs), 1) < 80:
        return "front matter before the first chapter heading"
    return None
