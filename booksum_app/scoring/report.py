"""A standalone HTML report of a scoring run: the aggregate table, each summary with its
confusing sentences highlighted by error type and the judge's questions level with them, and a
side-by-side view of every book that two or more systems summarized.

One self-contained file: inline CSS, no scripts, fonts, images or other external assets, every
text HTML-escaped. Highlighted sentences are ``<mark class="sent t-<type>" data-types=...>``
with a numbered note in the margin column; unparseable sentences are underlined in grey.
"""

from __future__ import annotations

import html
from collections.abc import Sequence

from booksum_app.chunking import detect_lang, sentence_spans
from booksum_app.scoring.detectors import FAILURE_MODES, FailureReport
from booksum_app.scoring.judgement import ERROR_TYPES, SentenceJudgement
from booksum_app.scoring.results import SummaryRow, SystemScores

TYPE_COLOURS: dict[str, str] = {
    "entity omission": "#ffd6a5",
    "event omission": "#fdffb6",
    "causal omission": "#caffbf",
    "salience": "#9bf6ff",
    "discontinuity": "#a0c4ff",
    "duplication": "#bdb2ff",
    "inconsistency": "#ffadad",
    "language": "#ffc6ff",
}
OTHER_COLOUR = "#e0e0e0"

_CSS = """
body{font-family:system-ui,-apple-system,Segoe UI,Roboto,sans-serif;margin:2rem auto;max-width:72rem;
padding:0 1rem;color:#222;line-height:1.5}
h1{font-size:1.6rem}h2{font-size:1.3rem;margin-top:2.5rem;border-bottom:1px solid #ccc}
h3{font-size:1.05rem;margin-bottom:.3rem}
table{border-collapse:collapse;margin:.5rem 0 1rem}th,td{border:1px solid #ccc;padding:.25rem .6rem;
text-align:right}th:first-child,td:first-child{text-align:left}th{background:#f4f4f4}
code{font-size:.85em;background:#f4f4f4;padding:.1rem .3rem;border-radius:3px;word-break:break-all}
.legend span{display:inline-block;margin:.15rem .4rem .15rem 0;padding:.1rem .5rem;border-radius:3px}
.summary{display:grid;grid-template-columns:minmax(0,3fr) minmax(0,2fr);column-gap:1.5rem;row-gap:0;
margin-bottom:1.5rem;align-items:start}.summary .nonote{grid-column:1/-1}
.text{margin:0}.notes{font-size:.9em;margin:0;padding-left:1.4rem}.notes li{margin-bottom:.4rem}
details.side{margin:.4rem 0;border-top:1px solid #eee;padding-top:.3rem}
.cols{display:grid;grid-auto-flow:column;grid-auto-columns:minmax(20rem,1fr);gap:1.5rem;overflow-x:auto}
.cols h4{margin:.4rem 0 .2rem}
mark.sent{padding:.05rem .1rem;border-radius:2px;color:inherit}
sup.ref{font-size:.7em;font-weight:bold;margin-left:.1rem}
.unparseable{text-decoration:underline dashed #888}
.meta{color:#555;font-size:.9em}
.types{font-weight:600}
.contents details{display:inline}.toc{columns:18rem;font-size:.9em}
"""


def _e(text: object) -> str:
    return html.escape(str(text), quote=True)


def _fmt(value: float | None, digits: int = 1) -> str:
    return "–" if value is None else f"{value:.{digits}f}"


def _class(kind: str) -> str:
    return "t-" + kind.replace(" ", "-")


def _type_css() -> str:
    rules = [f"mark.{_class(k)}{{background:{c}}}" for k, c in TYPE_COLOURS.items()]
    rules += [f".legend .{_class(k)}{{background:{c}}}" for k, c in TYPE_COLOURS.items()]
    return "\n".join(rules)


def _aggregate_table(systems: Sequence[SystemScores]) -> str:
    head = (
        "<tr><th>System</th><th>BooookScore</th><th>95% CI</th><th>Summaries</th><th>Unparseable</th>"
        "<th>Avg. length</th><th>% rep. 3-grams</th><th>% novel 3-grams</th><th>ROUGE-L F</th></tr>"
    )
    rows = []
    for s in systems:
        b = s.booookscore.system if s.booookscore else None
        score = _fmt(b.percent()) if b else "–"
        ci = (f"{_fmt(100 * b.ci_low)}–{_fmt(100 * b.ci_high)}"
              if b and b.ci_low is not None and b.ci_high is not None else "–")
        rouge = _fmt(100 * s.rouge_l.fmeasure) if s.rouge_l else "–"
        rows.append(
            f"<tr><td>{_e(s.name)}</td><td>{score}</td><td>{ci}</td><td>{len(s.rows)}</td>"
            f"<td>{b.n_unparseable if b else '–'}</td><td>{_fmt(s.ngrams.avg_tokens)}</td>"
            f"<td>{_fmt(s.ngrams.repeated_pct)}</td><td>{_fmt(s.ngrams.novel_pct)}</td><td>{rouge}</td></tr>"
        )
    return f"<table>{head}{''.join(rows)}</table>"


def _type_table(systems: Sequence[SystemScores]) -> str:
    scored = [s for s in systems if s.booookscore]
    if not scored:
        return ""
    head = "<tr><th>Error type</th>" + "".join(f"<th>{_e(s.name)}</th>" for s in scored) + "</tr>"
    rows = []
    for kind in ERROR_TYPES:
        cells = []
        for s in scored:
            b = s.booookscore.system  # type: ignore[union-attr]
            count = dict(b.type_counts).get(kind, 0)
            cells.append(f"<td>{count} ({_fmt(100 * b.type_distribution.get(kind, 0.0))}%)</td>")
        rows.append(f'<tr><td><span class="{_class(kind)}">{_e(kind)}</span></td>{"".join(cells)}</tr>')
    return f"<h2>Error types</h2><table>{head}{''.join(rows)}</table>"


def _failure_table(systems: Sequence[SystemScores]) -> str:
    """Summaries of each system showing each failure mode (definitions: docs/scoring.md)."""
    shown = [s for s in systems if s.failures is not None]
    if not shown:
        return ""
    head = "<tr><th>Failure mode</th>" + "".join(f"<th>{_e(s.name)}</th>" for s in shown) + "</tr>"
    rows = [
        f"<tr><td>{_e(mode.replace('_', ' '))}</td>"
        + "".join(f"<td>{s.failures.counts.get(mode, 0)} of {s.failures.n_summaries}</td>" for s in shown)  # type: ignore[union-attr]
        + "</tr>"
        for mode in FAILURE_MODES
    ]
    return f"<h2>Failure modes (summaries showing each; no LLM call)</h2><table>{head}{''.join(rows)}</table>"


def _failure_line(report: FailureReport | None) -> str:
    """Which detectors fired on one summary, with their evidence."""
    if report is None:
        return ""
    if not report.failures:
        return '<p class="meta failures">Failure modes: none.</p>'
    evidence = {
        "subjective": f"{report.subjective_sentences} sentence(s): {', '.join(report.subjective_terms[:5])}",
        "copying": f"{_fmt(100 * (report.copied_share or 0))}% of 8-grams in the source, longest span "
                   f"{report.longest_copied_words} words",
        "repetition": f"{report.repeated_sentences} repeated sentence(s), {report.repeated_lines} repeated line(s)"
                      + (f", a tail repeated {report.tail_repeats}x" if report.tail_repeats else ""),
        "echo": "; ".join(filter(None, (
            f"prompt text: {' / '.join(report.prompt_echo_fragments[:3])}" if report.prompt_echo_ngrams else "",
            f"{report.answer_cues} answer label(s)" if report.answer_cues else "",
            f"{report.checklist_items} checklist item(s)" if report.checklist_items else "",
            f"{report.stepwise_traces} excerpt trace(s)" if report.stepwise_traces else "",
        ))),
        "too_short": f"{report.n_tokens} of {report.requested_tokens} requested tokens",
        "cut_off": report.cut_evidence.replace("_", " "),
    }
    items = "".join(f"<li><b>{_e(mode.replace('_', ' '))}</b>: {_e(evidence[mode])}</li>" for mode in report.failures)
    return f'<ul class="meta failures">{items}</ul>'


def _legend() -> str:
    items = "".join(f'<span class="{_class(k)}">{_e(k)}</span>' for k in ERROR_TYPES)
    return f'<p class="legend">{items}<span class="unparseable" style="background:none">unparseable</span></p>'


def _mark(sentence: str, judgement: SentenceJudgement | None, ref: int | None) -> str:
    if judgement is None or not (judgement.confusing or judgement.unparseable) or ref is None:
        return _e(sentence)
    if judgement.unparseable:
        return (f'<span class="sent unparseable" data-unparseable="true">{_e(sentence)}</span>'
                f'<sup class="ref">{ref}</sup>')
    kinds = judgement.types or ("other",)
    first = kinds[0]
    style = "" if first in TYPE_COLOURS else f' style="background:{OTHER_COLOUR}"'
    if len(kinds) > 1 and all(k in TYPE_COLOURS for k in kinds[:2]):
        a, b = TYPE_COLOURS[kinds[0]], TYPE_COLOURS[kinds[1]]
        style = f' style="background:linear-gradient(180deg,{a} 55%,{b} 55%)"'
    return (
        f'<mark class="sent {_class(first)}" data-types="{_e(", ".join(kinds))}"{style}>{_e(sentence)}</mark>'
        f'<sup class="ref">{ref}</sup>'
    )


def _note(ref: int, judgement: SentenceJudgement) -> str:
    if judgement.unparseable:
        answer = (judgement.answer or "").strip()
        shown = answer if len(answer) <= 200 else answer[:197] + "..."
        return f'<li value="{ref}"><span class="types">unparseable</span> – judge answered: <q>{_e(shown)}</q></li>'
    kinds = ", ".join(judgement.types) or "(no type)"
    return (f'<li value="{ref}"><span class="types">{_e(kinds)}</span> – '
            f'<span class="question">{_e(judgement.questions or "")}</span></li>')


def _marked_segments(row: SummaryRow) -> list[tuple[str, list[tuple[int, str]]]]:
    """The summary as ``(text html, notes)`` segments, each starting at a sentence with a note.

    A segment's notes sit beside its first line (one grid row per segment), so a question stays
    level with the sentence it asks about however long the summary is.
    """
    j = row.judgement
    text = row.summary.strip()
    by_index = {s.index: s for s in j.sentences} if j else {}
    segments: list[tuple[list[str], list[tuple[int, str]]]] = [([], [])]
    n_notes = 0
    last = 0
    for index, (start, end) in enumerate(sentence_spans(text, lang=detect_lang(text))):
        gap = _e(text[last:start])
        judgement = by_index.get(index)
        ref = None
        if judgement is not None and (judgement.confusing or judgement.unparseable):
            n_notes += 1
            ref = n_notes
            segments[-1][0].append(gap)
            segments.append(([], [(ref, _note(ref, judgement))]))
        else:
            segments[-1][0].append(gap)
        segments[-1][0].append(_mark(text[start:end], judgement, ref))
        last = end
    segments[-1][0].append(_e(text[last:]))
    if j is not None:  # annotated sentences that are not sentences of the text (release files)
        for extra in (s for s in j.sentences if s.index < 0 and (s.confusing or s.unparseable)):
            n_notes += 1
            segments[-1][1].append((n_notes, _note(n_notes, extra).replace(
                "</li>", f" <span class=\"meta\">(sentence not found in the text: {_e(extra.sentence)})</span></li>")))
    return [("".join(parts), notes) for parts, notes in segments if "".join(parts).strip() or notes]


def _meta(row: SummaryRow) -> str:
    j = row.judgement
    score = f"BooookScore {_fmt(100 * j.score)}" if j is not None and j.score is not None else "no BooookScore"
    return (
        f'<p class="meta">{score} · {row.ngrams.n_tokens} tokens · '
        f"{_fmt(row.ngrams.repeated_pct)}% repeated 3-grams"
        + (f" · {_fmt(row.ngrams.novel_pct)}% novel 3-grams" if row.ngrams.novel_pct is not None else "")
        + (f" · ROUGE-L F {_fmt(100 * row.rouge.fmeasure)}" if row.rouge else "")
        + "</p>"
    )


def _summary_block(row: SummaryRow, anchor: str = "") -> str:
    segments = _marked_segments(row)
    cells = []
    for text_html, notes in segments:
        note_html = (f'<ol class="notes" start="{notes[0][0]}">{"".join(h for _, h in notes)}</ol>' if notes
                     else '<div class="notes"></div>')
        cells.append(f'<p class="text">{text_html}</p>{note_html}')
    if not any(notes for _, notes in segments):
        cells.append('<p class="meta nonote">No confusing sentence.</p>')
    id_attr = f' id="{anchor}"' if anchor else ""
    return (
        f'<section class="book"{id_attr}><h3>{_e(row.book)}</h3>{_meta(row)}{_failure_line(row.failures)}'
        f'<div class="summary">{"".join(cells)}</div></section>'
    )


def _side_by_side(systems: Sequence[SystemScores]) -> str:
    """Each book that two or more systems summarized, their summaries in columns (questions under each)."""
    books: dict[str, list[tuple[int, SummaryRow]]] = {}
    for n, s in enumerate(systems):
        for row in s.rows:
            books.setdefault(row.book, []).append((n, row))
    shared = [(book, rows) for book, rows in books.items() if len(rows) > 1]
    if not shared:
        return ""
    out = [('<h2 id="side">Side by side</h2><p class="meta">Each book summarized by more than one system: '
           "the summaries in columns, with the judge's questions under each.</p>")]
    for m, (book, rows) in enumerate(shared):
        scores = " · ".join(
            f"{_e(systems[n].name)} "
            f"{_fmt(100 * r.judgement.score) if r.judgement and r.judgement.score is not None else '–'}"
            for n, r in rows)
        columns = []
        for n, row in rows:
            segments = _marked_segments(row)
            text_html = " ".join(t for t, _ in segments)
            notes = "".join(note for _, ns in segments for _, note in ns)
            columns.append(
                f'<div class="col"><h4>{_e(systems[n].name)}</h4>{_meta(row)}<p class="text">{text_html}</p>'
                + (f'<ol class="notes">{notes}</ol>' if notes else '<p class="meta">No confusing sentence.</p>')
                + "</div>")
        open_attr = " open" if m == 0 else ""
        out.append(f'<details class="side" id="side-{m}"{open_attr}><summary><b>{_e(book)}</b> '
                   f'<span class="meta">{scores}</span></summary><div class="cols">{"".join(columns)}</div></details>')
    return "".join(out)


def _contents(systems: Sequence[SystemScores]) -> str:
    """Links to every system and summary (ids by position: names are data, never markup)."""
    items = []
    for n, s in enumerate(systems):
        links = []
        for m, row in enumerate(s.rows):
            j = row.judgement
            score = f" ({_fmt(100 * j.score)})" if j is not None and j.score is not None else ""
            links.append(f'<li><a href="#sys{n}-{m}">{_e(row.book)}</a>{score}</li>')
        items.append(
            f'<li><a href="#sys{n}">{_e(s.name)}</a> <details><summary>{len(s.rows)} summaries</summary>'
            f'<ol class="toc">{"".join(links)}</ol></details></li>'
        )
    return f'<h2>Contents</h2><ul class="contents">{"".join(items)}</ul>'


def render_report(systems: Sequence[SystemScores], *, notes: Sequence[str] = (), title: str = "booksum scores") -> str:
    """The whole report as one HTML document."""
    signatures = []
    for s in systems:
        if s.booookscore:
            signatures.append(f"<li>{_e(s.name)}: <code>{_e(s.booookscore.signature)}</code></li>")
        signatures.append(f"<li>{_e(s.name)}: <code>{_e(s.ngrams.signature)}</code></li>")
        if s.rouge_signature:
            signatures.append(f"<li>{_e(s.name)}: <code>{_e(s.rouge_signature)}</code></li>")
    note_html = "".join(f"<li>{_e(n)}</li>" for n in notes)
    body = [
        f"<h1>{_e(title)}</h1>",
        _aggregate_table(systems),
        f"<ul class=\"signatures\">{''.join(signatures)}</ul>",
        f"<ul class=\"notes-run\">{note_html}</ul>" if note_html else "",
        _type_table(systems),
        _failure_table(systems),
        "<h2>Legend</h2>",
        _legend(),
    ]
    body.append(_contents(systems))
    body.append(_side_by_side(systems))
    for n, s in enumerate(systems):
        body.append(f'<h2 id="sys{n}">{_e(s.name)}</h2>')
        body.extend(_summary_block(row, f"sys{n}-{m}") for m, row in enumerate(s.rows))
    return (
        "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">"
        f"<meta name=\"viewport\" content=\"width=device-width,initial-scale=1\"><title>{_e(title)}</title>"
        f"<style>{_CSS}{_type_css()}</style></head><body>{''.join(body)}</body></html>\n"
    )
