"""The word rules of the failure detectors (:mod:`booksum_app.scoring.detectors`).

Patterns only, no logic: commentary and framing lexicons (CNNSum App. E.2), answer cues, numbered
lists and their scaffolding cues (App. E.4), stepwise traces (App. E.6). docs/scoring.md
("Failure modes") lists every term; tests/data/detectors holds the labelled sets they are
measured on.
"""

from __future__ import annotations

import re

#: Moves whenever a rule below changes what the detectors report (signatures carry it).
DETECTOR_RULES_VERSION = "2"

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
# Evaluative framing as classes (not single words): what the text *does* or *means* rather than
# what happens in it. Each family below names a way commentary is built, with the objects that
# keep its plot uses out ("a testament" read aloud is a will; "serves as a footman" is plot).
_INNER_EN = (
    r"(?:turmoil|conflicts?|struggles?|despair|longing|isolation|decline|decay|corruption|cruelty|"
    r"innocence|guilt|hope|grief|loss|love|ambition|pride|prejudice|class|society|fate|destiny|"
    r"identity|belonging|freedom|humanity|nature|power|hypocrisy|morality|justice|suffering|"
    r"\w{4,}ness|violence|war|memory|history|faith|doubt|obsession|jealousy|revenge|vengeance|"
    r"loneliness|fragility|fragile|resilience|complex\w*|dynamics|tensions?|themes?|values|ideals|secrets|emptiness|"
    r"futility|absurdity|redemption|sacrifice|courage|friendship|heart|soul|psyche|inner\s+\w+|"
    r"human\w*|universal\w*|dangers?|costs?|consequences|importance|meaning|nature|truth|"
    r"cycles?|legacy|limits|weight|burden|fears?|desires?|regrets?|failings|folly)"
)
_META_NOUN_EN = (
    r"(?:meditation|reflection|exploration|examination|critique|indictment|commentary|celebration|"
    r"lament|ode|elegy|parable|allegory|testament|evocation|rumination|satire|"
    r"cautionary\s+tale|study\s+in|microcosm|metaphor|symbol|emblem|embodiment|portrait|portrayal|"
    r"picture|depiction|exploration|(?:powerful|poignant|stark|sobering|timely|haunting|"
    r"potent|vivid|chilling|painful|bitter)\s+reminder)"
)
_EVALUATIVE_EN = (
    # "a meditation on grief", "a sharp critique of ambition", "a testament to her courage"
    (r"(?:a|an|its|this)\s+(?:[\w-]+\s+){0,2}?(?:meditation|reflection|exploration|examination|"
    r"critique|indictment|commentary|celebration|lament|ode|elegy|parable|rumination|satire|"
    r"evocation|study)\s+(?:on|of|to|about|upon)\b"),
    (r"(?:testament|ode|tribute)\s+to\s+(?:the\s+|her\s+|his\s+|their\s+|its\s+)?(?:[\w-]+\s+){0,2}?"
    r"(?:quiet\s+)?(?:courage|power|strength|love|resilience|spirit|endurance|faith|loyalty|"
    r"devotion|humanity|friendship|hope|will|enduring\s+\w+|\w+ness)"),
    # "serves as a powerful reminder", "stands as a symbol of"
    (rf"(?:serves?|served|serving|stands?|acts?|functions?)\s+as\s+(?:a|an|the)\s+(?:[\w-]+\s+){{0,2}}?"
    rf"{_META_NOUN_EN}"),
    # interpretive verbs whose object is an idea or an inner state, whatever the subject
    (rf"(?:underscor|highlight|emphasi[sz]|illustrat|reflect(?!\w*\s+(?:on|upon)\b)|suggest|convey|captur|evok|deepen|"
    rf"showcas|mirror|echo|embod|symboli[sz]|signif|foreshadow|encapsulat|epitomi[sz]|"
    rf"reinforc|interrogat|lay(?:s|ing)?\s+bare|speak(?:s|ing)?\s+to)\w*\s+"
    rf"(?:how\s+|that\s+|why\s+)?(?:(?:the|a|an|his|her|their|its|our|this|of)\s+)?(?:(?![\w-]+['’]s\b)[\w'’-]+\s+){{0,3}}?{_INNER_EN}\b"),
    r"(?:underscor|illustrat|epitomi[sz])\w*\s+(?:how|that|why)\b",
    r"(?:symboli[sz]|embod|foreshadow|epitomi[sz]|encapsulat)(?:es|ed|ing|ies|ied|y)\b",
    # craft and its praise
    (r"(?:master|skil|deft|beautiful|lyrical|tender|vivid|rich|elegant|sharp|subtle|brilliant)(?:ful)?ly\s+"
    r"(?:\w+\s+)?(?:written|rendered|crafted|drawn|told|observed|handled|paced|weaves?|woven|paints?|captures?|evokes?|"
    r"portrays?|depicts?|explores?|balances?|handles?|builds?|constructs?|structures?|interweaves?)"),
    (r"(?:rendered|written|told|drawn|portrayed|depicted)\s+with\s+(?:\w+\s+)?(?:tenderness|care|"
    r"skill|precision|sensitivity|wit|humou?r|compassion|restraint|sympathy|insight|subtlety|nuance)"),
    (r"(?:lyrical|evocative|haunting\s+(?:picture|portrait|image|story|tale|account)|poignant|"
    r"(?:deeply|profoundly|quietly|genuinely|strangely)\s+(?:moving|affecting|unsettling|satisfying)|"
    r"gripping|riveting|nuanced|bittersweet|heart-?wrenching|heartbreaking|atmospheric|"
    r"rich\s+in\s+(?:atmosphere|detail|symbolism|irony)|satirical|timeless|insightful|"
    r"(?:the\s+)?(?:prose|imagery|symbolism|motifs?|characteri[sz]ation|pacing|storytelling|"
    r"narrative\s+voice|subtext|foreshadowing|satire)\b(?!\s+of\s+(?:the\s+)?(?:letter|note)))"),
    r"(?:recurring|central|powerful|striking)\s+(?:image|motif|symbol|metaphor|insight|message|idea)",
    (r"(?:feels?|felt|seems?)\s+(?:\w+\s+)?(?:earned|inevitable|rushed|forced|authentic|hollow|"
    r"contrived|satisfying|timeless|fresh|universal|relevant)"),
    r"(?:final|closing|opening)\s+pages",
    # the reader addressed
    r"(?:invites?|leaves?|reminds?|forces?|asks?|compels?|allows?|urges?)\s+us\b",
    r"our\s+(?:understanding|sympathy|sympathies|expectations|attention|own)\b",
    r"we\s+(?:see|learn|are\s+left|come\s+to|feel|sense|witness|realise|realize|understand)\b",
)
# The text itself judged: a textual element as the subject of an evaluative predicate ("the
# final confrontation is handled with restraint", "the descriptions are beautifully observed").
_TEXT_PART_EN = (
    r"(?:novel|book|story|tale|chapter|scenes?|episode|passage|ending|conclusion|confrontation|"
    r"narration|narrative|dialogue|prose|descriptions?|arc|pacing|writing|plot|portrayal|"
    r"characters?|relationship|opening|climax|account|work)"
)
_EVALUATIVE_EN_2 = (
    (rf"{_TEXT_PART_EN}(?:['’]s)?\s+(?:[\w-]+\s+){{0,3}}?(?:is|are|was|were|feels?|becomes?|remains?|"
     r"seems?)\s+(?:[\w-]+\s+){0,2}?(?:handled|drawn|observed|rendered|realized|realised|paced|"
     r"memorable|unforgettable|humane|satisfying|effective|masterly|brilliant|remarkable|"
     r"admirable|heavy|slow|rushed|overlong|uneven|one\s+of\s+the\s+(?:most|best|finest)|"
     r"at\s+once|ultimately\s+about|really\s+about|less\s+about|more\s+about)"),
    (r"(?:memorable|unforgettable|humane|masterly|superb|remarkable|admirable|engrossing|"
     r"absorbing|page-turning|resonant|resonates?\s+with|rewards?\s+(?:patience|the\s+reader|"
     r"attention|rereading)|easy\s+answers)"),
    (r"uses?\s+(?:[\w'’-]+\s+){1,6}?to\s+(?:warn\s+against|critique|criticiz\w*|criticis\w*|"
     r"satiri[sz]e|comment\s+on|explore|dramati[sz]e|illustrate|examine|interrogate|skewer)"),
    (r"(?:a|an|its)\s+(?:[\w-]+\s+){0,3}?(?:look\s+at\s+(?:how|what|why|the\s+(?:ways?|nature|costs?|lives|life|world|society))|inquiry\s+into|study\s+in|"
     r"figure\s+of\s+(?:\w+\s+)?(?:sympathy|pity|fun|ridicule|hope|fear)|comedy\s+of\s+manners|"
     r"(?:[\w-]+ly\s+)?[\w-]+(?:ed|ful|ive|ing|ate|ic|al|ous)\s+portrait\s+of)"),
    (r"(?:novel|book|story|tale|chapter|narrative|author|film|work)['’]s\s+(?:[\w-]+\s+){0,2}?"
     r"(?:humou?r|scope|power|heart|tone|mood|atmosphere|structure|voice|themes?|message|moral|"
     r"vision|strength|weakness|achievement|genius|wit|satire|irony|center|centre)"),
    r"(?:gives?|lends?)\s+(?:the\s+(?:novel|book|story|tale)|it)\s+its\s+\w+",
    (r"(?:mood|sense|atmosphere|air|tone)\s+of\s+(?:\w+\s+)?(?:dread|menace|melancholy|"
     r"foreboding|unease|nostalgia|doom|mystery|loss)"),
    r"what\s+makes\s+(?:the|this|it)\b",
)
# A textual element as the sentence's subject with a judging predicate: "The comedy here is
# gentle", "The ending may strike some readers as too neat"; narrating predicates ("the story
# follows", "the chapter is set in", "is told from") stay framing.
_TEXT_SUBJECT_EN = (
    r"(?:novel|book|story|tale|chapter|section|scenes?|ending|setting|dialogue|comedy|humou?r|"
    r"narrative|narration|prose|opening|conclusion|account|episode|passage|work|writing|plot|"
    r"descriptions?|portrayal|characteri[sz]ation|pacing|tone|style|language|structure|contrast|"
    r"transformation|sympathy|sympathies|digressions?|title)"
)
_JUDGED_EN = (
    rf"^(?:[\w,'’ -]{{0,30}},\s+)?(?:the|this|its|her|his|their|[A-Z]\w+['’]s)\s+(?:[\w'’-]+\s+){{0,3}}?"
    rf"{_TEXT_SUBJECT_EN}(?:['’]s)?\s+(?:here\s+|itself\s+|clearly\s+|never\s+|always\s+|also\s+)?"
    r"(?:(?:is|are|was|were)\s+(?!(?:set|told|narrated|divided|split|written\s+in|seen|framed|"
    r"made\s+up|composed|organi[sz]ed|presented|based|followed|about|a\s+(?:sequel|continuation|"
    r"prequel|story|tale|novel|book)\s+(?:of|about))\b)|feels?|seems?|becomes?|remains?|"
    r"works?\s+as|may|might|can|could|lays?|sparkles?|gives?|makes?|turns?|succeeds?|"
    r"fails?|manages?|excels?|shines?|suffers?|lacks?|demands?|deserves?|transcends?|elevates?|"
    r"lingers?|lies|lets?|adds?|asks?|keeps?|strikes?)"
)
_EVALUATIVE_EN_3 = (
    _JUDGED_EN,
    r"^(?:it|this)\s+is\s+(?:a|an)\s+(?:[\w-]+\s+){0,2}?(?:book|novel|story|tale|chapter)\s+that\b",
    r"^few\s+(?:novels|books|stories|writers|authors)\b",
    r"(?:on|at)\s+an?\s+(?:epic|grand|intimate|small|human)\s+scale",
    r"in\s+its\s+own\s+right",
    r"(?:fine|perfect|classic|prime|striking)\s+example\s+of",
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
# Chinese evaluative framing: craft (叙事技巧, 笔触细腻), effect on the reader (令人唏嘘, 发人深省,
# 我们可以看到), interpretation (折射出, 寓意, 是对…的控诉, 封建礼教), and judgement (堪称, 巅峰之作).
_EVALUATIVE_ZH = (
    r"叙事|手法|技巧|笔触|笔法|笔墨|文笔|伏笔|写法|字里行间|全篇|整部|作品|文学|艺术|"
    r"(?:情节|结构|构思)(?:设计|安排|紧凑|严谨|精巧|巧妙)|节奏(?:紧凑|明快|舒缓)|"
    r"(?:描写|刻画|描绘|语言|文字|形象|性格)[^。！？，；]{0,2}(?:细腻|生动|鲜明|立体|传神|朴实|优美|深刻|复杂)|"
    r"(?:细腻|生动|传神|巧妙|深刻|有力|辛辣|犀利)地(?:揭示|展现|表现|刻画|描绘|描写|写出|讽刺|批判|反映|塑造)|"
    r"(?:令人|让人|使人|叫人)(?:不禁|深感|感到|深思|唏嘘|惋惜|动容|感动|感叹|叹息|震撼|心痛|心酸|回味|难忘|"
    r"扼腕|拍案|同情|敬佩|钦佩|警醒|反思)|"
    r"读来|大快人心|酣畅淋漓|惊心动魄|扣人心弦|动人心魄|震撼人心|直抵人心|感人|唏嘘|"
    r"我们(?:可以|能够|不难)?(?:看到|看出|感受到|体会到|意识到)|"
    r"(?:(?:折射|映射|反映|体现|揭露|暗示|预示|昭示|透露|流露)(?:出|了)|展现出|展示出|表现出)[^。！？，；]{0,14}?"
    r"(?:命运|困境|局限|本质|时代|社会|黑暗|腐败|悲剧|人性|精神|思想|观念|矛盾|无奈|无力|必然|病态|心理|情感|追求)|"
    r"寓意|隐喻|写照|缩影|以小见大|意味深长|耐人寻味|思考空间|留给(?:人|读者)|"
    r"是对[^。！？]{1,24}的(?:有力|深刻|辛辣|无情|强烈)?(?:控诉|讽刺|批判|揭露|写照|颂扬|歌颂|反思|否定|嘲讽)|"
    r"控诉|讴歌|颂扬|鞭挞|封建(?:礼教|社会|官场|制度|思想|时代|统治|家族)|"
    r"堪称|巅峰|杰作|之作|不朽|经典|弥漫着|充满了[^。！？，；]{0,8}(?:同情|哀愁|张力|色彩|感情|情感|悲剧|讽刺|温情|力量)|"
    r"一种[^。！？，；]{0,6}(?:力量|哀愁|美感|张力|氛围)|"
    # aesthetic vocabulary and the craft of the telling (着墨, 铺垫, 烘托, 看似…实则)
    r"写得[^。！？，；]{0,4}(?:入木三分|淋漓尽致|极好|精彩|生动|细腻|传神|真切|感人|好)|入木三分|"
    r"精妙|精彩|意境|余韵|韵味|层次感|感染力|悬念|跌宕|悲悯|悲凉|苍凉|深沉|动人|传神|神来之笔|闲笔|"
    r"点睛|着墨|铺垫|烘托|渲染|衬托|反衬|呼应|照应|转折点|暗写|明写|个性鲜明|形成了[^。！？，；]{0,6}对比|"
    r"看似[^。！？]{0,20}实则|使(?:故事|情节|人物|小说|作品|全书)[^。！？，；]{0,4}更|封建|"
    # a part of the text as the subject of a judgement (这一回将…写到了极致, 小说对…的描摹极为真实)
    r"(?:本回|这一回|此回|该回|这一节|这一段|这一章|这一幕|小说|作品|全书|整回|结尾|结局|这部分|这个细节|"
    r"这一情节|此处|这种写法)[^。！？，；]{0,12}?(?:写得|写到|可谓|堪称|颇为|极为|十分|非常|最为|可以说|"
    r"实在|不愧|充满|带有|见出|称道)|"
    r"带有[^。！？，；]{0,8}色彩|为人称道|脍炙人口|值得(?:细细)?(?:品味|玩味|深思|回味|一读)|争议|"
    r"描摹|简洁|简练|凝练|映衬|凄凉|乌托邦|理想化|见出|(?:不免|不禁|不由得)?令人[^。！？，；]{0,10}"
    r"(?:担忧|担心|心疼|难过|感慨|叹服|折服|动容)"
)
_SUBJECTIVE_EN_ALL = [*_WORD_LEXICON_EN, *_EVALUATIVE_EN, *_EVALUATIVE_EN_2, *_EVALUATIVE_EN_3]
SUBJECTIVE_EN = re.compile(r"\b(?:" + "|".join(_SUBJECTIVE_EN_ALL) + r")\b", re.IGNORECASE)
SUBJECTIVE_ZH = re.compile("|".join([*map(re.escape, _LEXICON_ZH), *_LEXICON_ZH_RE, _EVALUATIVE_ZH]))
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
    "DETECTOR_RULES_VERSION",
    "FRAMING_EN",
    "FRAMING_ZH",
    "LIST_CUE",
    "OUTLINE_ITEM",
    "SUBJECTIVE_EN",
    "SUBJECTIVE_ZH",
    "TRACE_EN",
    "TRACE_ZH",
]
