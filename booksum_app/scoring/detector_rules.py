"""The word rules of the failure detectors (:mod:`booksum_app.scoring.detectors`).

Patterns only, no logic: commentary and framing lexicons (CNNSum App. E.2), answer cues, numbered
lists and their scaffolding cues (App. E.4), stepwise traces (App. E.6). docs/scoring.md
("Failure modes") lists every term; tests/data/detectors holds the labelled sets they are
measured on.
"""

from __future__ import annotations

import re

# Commentary: what a summary says *about* the story (its themes, its craft, its reader) rather
# than what happens in it (CNNSum App. E.2). Framing ("The story follows...", "the narrative
# shifts to...", 讲述了) names the text while telling the plot: counted apart, not a failure.
_ABSTRACT_EN = (
    r"(?:complexit\w*|fragility|resilience|importance|power|nature|significance|struggles?\s+"
    r"(?:of|between|for)|human|identity|belonging|themes?|dynamics|hope|love|loss|grief|family|"
    r"redemption|meaning|consequences|impact|courage|friendship|sacrifice|humanity|depths?)"
)
_TEXT_EN = r"(?:the\s+(?:story|novel|book|narrative|tale|memoir|author)|this\s+(?:story|novel|book|tale)|it)"
_INTERPRET_EN = (
    r"(?:explores?|highlights?|underscores?|emphasi[sz]es|showcases?|examines?|illustrates?|"
    r"celebrates?|captures?|touches\s+on|sheds\s+light\s+on|delves\s+into|is\s+about|"
    r"is\s+a\s+(?:story|tale|celebration|meditation|reflection)\s+(?:of|about|on))"
)
_WORD_LEXICON_EN = (
    r"themes?\s+(?:of|such\s+as|like|include|including|are|is)", r"(?:the|its|timely|central)\s+themes?",
    r"thematic\w*", r"poignant(?:ly)?", r"profound(?:ly)?", r"thought-provoking",
    r"(?:a\s+)?testament\s+to", r"tapestry", r"depth\s+and\s+complexity", r"adds?\s+(?:\w+\s+){0,3}depth",
    r"layers?\s+of\s+depth", r"well-developed", r"vivid(?:ly)?", r"masterful(?:ly)?", r"compelling",
    r"captivating", r"heartwarming", r"dreamlike\s+quality", r"celebration\s+of",
    r"symboli[sz](?:es|ing|ed)", r"(?:a\s+)?metaphor\s+for", r"allegor\w+", r"social\s+commentary",
    r"the\s+human\s+(?:condition|experience|spirit)",
    r"(?:keeps?|invites?|leaves?|reminds?|engages?|the)\s+(?:the\s+)?readers?",
    (rf"{_TEXT_EN}\s+(?:also\s+|ultimately\s+|further\s+)?{_INTERPRET_EN}\s+"
    rf"(?:the\s+|a\s+|an\s+)?(?:[\w-]+\s+){{0,3}}?{_ABSTRACT_EN}"),
    r"the\s+author\s+(?:uses|employs|crafts|weaves|paints|skillfully|masterfully|invites|reminds)",
    # plot reveals ("Darcy reveals that...") are objective; only abstract objects count
    (r"reveal(?:s|ing|ed)?\s+(?:the\s+|a\s+|an\s+)?"
     r"(?:complex\w*|depths?|importance|power|fragility|themes?|inner\s+workings|deeper|"
     r"human|true\s+nature\s+of\s+(?:love|humanity|power))"),
)
_FRAMING_EN = (
    r"the\s+(?:story|novel|narrative|book|tale|excerpt|memoir)", r"this\s+(?:story|novel|book|tale)",
    r"the\s+author", r"the\s+protagonist",
)
_LEXICON_ZH = (
    "揭示", "探讨", "体现了", "反映了", "突显", "凸显", "彰显", "主题", "象征", "引人深思", "发人深省",
    "辩证关系", "道德困境", "令人动容", "作者", "读者", "全书", "该书", "批判", "讽刺了", "寓意", "歌颂",
    "赞美了", "启示", "耐人寻味", "感人至深", "引人入胜", "栩栩如生", "淋漓尽致", "跃然纸上",
    "人性的", "深刻地", "深刻的",
)
# 本书 but not 一本书 / 几本书; 展现了/刻画了 + an abstract object within a clause
_LEXICON_ZH_RE = (
    r"(?<![一两几每这那])本书",
    (r"(?:展现|展示|描绘|刻画|塑造|表现|表达)了?[^。！？，；]{0,12}?"
    r"(?:人性|精神|品质|命运|悲剧|复杂|矛盾|黑暗|腐朽|时代|力量|价值|意义|美好|光辉|风貌|形象|"
    r"性格|内心世界|情怀|智慧|忠义|社会现实)"),
)
_FRAMING_ZH = (
    "讲述了", "故事讲述", "整个故事", "小说节选", "这部小说", "该小说", "描绘了", "展示了", "展现了",
    "故事中", "小说中", "本章", "本回", "故事发生在", "这段文字", "节选中",
)
SUBJECTIVE_EN = re.compile(r"\b(?:" + "|".join(_WORD_LEXICON_EN) + r")\b", re.IGNORECASE)
SUBJECTIVE_ZH = re.compile("|".join([*map(re.escape, _LEXICON_ZH), *_LEXICON_ZH_RE]))
FRAMING_EN = re.compile(r"\b(?:" + "|".join(_FRAMING_EN) + r")\b", re.IGNORECASE)
FRAMING_ZH = re.compile("|".join(map(re.escape, _FRAMING_ZH)))

ANSWER_CUE = re.compile(
    r"(?:\b(?:updated\s+|condensed\s+|final\s+|merged\s+)?summary\s*(?:\([^)\n]{0,40}\))?\s*[:：])"
    r"|(?:摘要\s*(?:[（(][^）)\n]{0,20}[）)])?\s*[:：])",
    re.IGNORECASE,
)
CHECKLIST_LINE = re.compile(
    r"^\s*(?:\d{1,3}\s*[.)、．]|[（(]\d{1,3}[)）]|[一二三四五六七八九十]{1,3}\s*、)\s*\S"
)
# A numbered list is answer scaffolding (CNNSum App. E.4) when it is introduced as the answer's
# parts ("摘要应包含以下要素：", "Key events:") or its items are outline labels ("1. Plot:",
# "（2）人物："); a list the story itself holds (a character's rules, a will's bequests) is not.
_OUTLINE_LABELS = (
    r"(?:main\s+|key\s+|major\s+)?(?:characters?|plot|setting|themes?|summary|conclusion|events?|"
    r"introduction|background|ending|climax|conflict|points?|takeaways?|"
    r"主要人物|人物|主要情节|情节|主题|背景|结局|总结|概括|开端|发展|高潮|冲突|时间|地点|主要事件|事件|要点)"
)
OUTLINE_ITEM = re.compile(
    r"^\s*(?:\d{1,3}\s*[.)、．]|[（(]\d{1,3}[)）]|[一二三四五六七八九十]{1,3}\s*、)\s*(?:\*\*)?"
    + _OUTLINE_LABELS + r"(?:\*\*)?\s*[:：]",
    re.IGNORECASE,
)
LIST_CUE = re.compile(
    r"(?:\b(?:summary|key\s+(?:points|events|elements)|main\s+(?:points|events)|following|"
    r"include[sd]?|elements|requirements|steps?|outline)\b|摘要|要素|要点|以下|如下|包括|包含|步骤|总结|概括)"
    r"[^\n]*[:：]\s*$",
    re.IGNORECASE,
)
_PART_EN = r"(?:segment|section|excerpt|part|portion|chunk|passage|installment|text)"
# "in this part of the house" is a place: after "of" only the text itself makes it a trace
_OF_TEXT = r"(?!\s+of\s+(?!(?:the\s+|this\s+)?(?:story|book|text|novel|narrative|excerpt|chapter|summary)\b))"
TRACE_EN = re.compile(
    rf"\b(?:in|within|throughout)\s+(?:this|these|the\s+(?:current|previous|preceding|given|"
    rf"provided|above|following|next|latest))\s+(?:\w+\s+)?{_PART_EN}s?\b{_OF_TEXT}"
    rf"|\bthe\s+{_PART_EN}\s+(?:provided|above|given)\b",
    re.IGNORECASE,
)
_PART_ZH = r"(?:这|本|此|当前|上述|以上)(?:一|个)?(?:片段|部分|节选|段落)"
# "在这一片段中" / "本节选里"; a bare "这部分" ("这部分银子") is plain text
TRACE_ZH = re.compile(rf"(?:在|于){_PART_ZH}(?:中|里)?|{_PART_ZH}(?:中|里)")


__all__ = [
    "ANSWER_CUE",
    "CHECKLIST_LINE",
    "FRAMING_EN",
    "FRAMING_ZH",
    "LIST_CUE",
    "OUTLINE_ITEM",
    "SUBJECTIVE_EN",
    "SUBJECTIVE_ZH",
    "TRACE_EN",
    "TRACE_ZH",
]
