"""Context-aware hierarchical merging, ``hier-evidence`` (Ou & Lapata, Findings of ACL 2025, arXiv 2502.00977).

Hierarchical merging (:mod:`.hierarchical`, everything there holds) in which every merge prompt
also carries, for each summary being merged, the source passages most relevant to it (BM25,
:mod:`.evidence`), and asks the model to check the summaries against them and correct them
before merging: the paper's "refine" use of source context (its retrieval variant), with the
templates ``merge_evidence`` and ``merge_with_context_evidence``.

Evidence of a merged summary: its own text is the query, the candidates are the passages of
the chunks beneath it, so a merge only ever sees text from its own span. It is chosen when the
summary is first packed into a merge group, so the root is never retrieved for.

Budget: each merged summary carries at most E evidence tokens, ``--evidence-tokens`` when
given, else the summary's own budget G_l (at least 128): the paper's code takes
``round(budget / 100)`` passages of 100 tokens per summary, about as much source as summary.
The evidence takes its room from the inputs of a merge call: App. A.1's packing rule holds with
each item being summary + header + evidence + header, so fewer summaries fit one merge and the
tree may gain a level. The plan (``plan_hier``) reserves E per summary; packing at run time
uses the evidence actually chosen (never more).

Deviations from the paper's code (github.com/Leonard907/CAHM, ``hier_summ_retmix.py``):

- the candidates of a summary are all passages beneath it; the paper's code narrows them level
  by level to the passages chosen for its children (a summary may state a fact its children's
  selections missed; nothing has to be kept between levels);
- a token budget filled with whole passages instead of a fixed top-k; passages that share no
  word with the summary are never sent;
- bm25s (Lucene BM25) with lowercased words minus stopwords (jieba for Chinese) instead of
  rank_bm25 over NLTK ``word_tokenize``;
- packing within the model's real window (theirs doubles the context limit for these prompts);
- BooookScore's App. J.2 wording around the paper's "supporting context" instruction.
"""

from __future__ import annotations

from collections.abc import Sequence

from booksum_app.llm.base import ChatModel
from booksum_app.signature import evidence_signature
from booksum_app.strategies.base import (
    MIN_EVIDENCE_TOKENS,
    Option,
    ProgressFn,
    PromptBundle,
    StrategyConfig,
    StrategyJob,
    StrategyResult,
    SummaryNode,
)
from booksum_app.strategies.evidence import PASSAGE_TOKENS, Evidence, PassageIndex
from booksum_app.strategies.hierarchical import ITEM_SEPARATOR, Hierarchical, _Run

EVIDENCE_TEMPLATES = ("merge_evidence", "merge_with_context_evidence")
EVIDENCE_HEADER = "Evidence for summary {k}:\n\n"
EVIDENCE_OVERHEAD_TOKENS = 12  # plans: header, separator and join of one summary's passages (measured: 7-10)


def evidence_budget(config: StrategyConfig, summary_budget: int) -> int:
    """E: evidence tokens allowed beside one merged summary of ``summary_budget`` tokens."""
    tokens = dict(config.options).get("evidence_tokens")  # None (the default): the summary's own budget
    return int(tokens) if tokens is not None else max(summary_budget, MIN_EVIDENCE_TOKENS)


def format_evidence(items: Sequence[Evidence]) -> str:
    """The evidence field: each summary's passages under its number (summaries without any left out)."""
    return ITEM_SEPARATOR.join(
        EVIDENCE_HEADER.format(k=k) + e.text for k, e in enumerate(items, start=1) if e.passages
    )


class HierEvidence(Hierarchical):
    """The ``hier-evidence`` strategy."""

    name = "hier-evidence"
    description = (
        "hierarchical merging that checks each merge against BM25-retrieved source passages "
        "(Ou & Lapata 2025)"
    )
    merge_templates = EVIDENCE_TEMPLATES
    options = (Option("evidence_tokens", None, kind=int, minimum=MIN_EVIDENCE_TOKENS,
                      help="source tokens of evidence per merged summary (auto: that summary's own budget)"),)

    def item_extra_budget(self, config: StrategyConfig, budget: int) -> int:
        """E plus the evidence header, beside each merged summary."""
        return evidence_budget(config, budget) + EVIDENCE_OVERHEAD_TOKENS

    def record_fields(self, config: StrategyConfig) -> dict[str, object]:
        """The retriever and its budgets (None: each summary's own budget)."""
        return {
            "evidence": "bm25",
            "evidence_tokens": self.option(config, "evidence_tokens"),
            "evidence_passage_tokens": PASSAGE_TOKENS,
        }

    def signature_fields(self, config: StrategyConfig) -> dict[str, object]:
        """``evidence:bm25-auto-p100``: retriever, tokens per summary, passage size."""
        return {"evidence": evidence_signature(self.record_fields(config))}

    def run(
        self,
        job: StrategyJob,
        *,
        model: ChatModel,
        prompts: PromptBundle,
        on_progress: ProgressFn | None = None,
    ) -> StrategyResult:
        """Summarize ``job.chunks`` by hierarchical merging with evidence."""
        return _EvidenceRun(job, model=model, prompts=prompts, on_progress=on_progress).execute()


class _EvidenceRun(_Run):
    """A hierarchical run whose merge prompts carry each summary's evidence."""

    first_template, later_template = EVIDENCE_TEMPLATES

    def __init__(
        self,
        job: StrategyJob,
        *,
        model: ChatModel,
        prompts: PromptBundle,
        on_progress: ProgressFn | None,
    ) -> None:
        self.index: PassageIndex | None = None  # built on the first merge (a one-chunk book needs none)
        self.evidence: dict[str, Evidence] = {}  # summary node id -> its evidence
        self.merges: list[dict[str, object]] = []
        self.header_tokens = model.count_tokens(EVIDENCE_HEADER.format(k=999) + ITEM_SEPARATOR)
        super().__init__(job, model=model, prompts=prompts, on_progress=on_progress)

    def item_extra_budget(self, budget: int) -> int:
        return evidence_budget(self.cfg, budget) + self.header_tokens + 1

    def evidence_for(self, node: SummaryNode) -> Evidence:
        found = self.evidence.get(node.id)
        if found is None:
            if self.index is None:
                self.index = PassageIndex(self.job.chunks, count_tokens=self.count, lang=self.cfg.lang)
            budget = evidence_budget(self.cfg, self.plan.budget(node.level))
            found = self.index.select(node.text, node.chunk_span, budget)
            self.evidence[node.id] = found
        return found

    def item_extra(self, node: SummaryNode) -> int:
        evidence = self.evidence_for(node)
        return self.header_tokens + evidence.tokens + 1 if evidence.passages else 0

    def group_fields(self, node_id: str, nodes: Sequence[SummaryNode]) -> dict[str, str]:
        items = [self.evidence_for(node) for node in nodes]
        block = format_evidence(items)
        self.merges.append({
            "node": node_id,
            "tokens": self.count(block) if block else 0,
            "items": [
                {
                    "summary": node.id,
                    "budget": e.budget,
                    "tokens": e.tokens,
                    "passages": [p.id for p in e.passages],
                    "chunks": [p.chunk for p in e.passages],
                    "passage_tokens": [p.tokens for p in e.passages],
                }
                for node, e in zip(nodes, items, strict=True)
            ],
        })
        return {"evidence": block}

    def result_extra(self) -> dict[str, object]:
        index = self.index.describe() if self.index is not None else {"method": "bm25", "passages": 0}
        return {
            "evidence": {
                **index,
                "tokens_per_summary": dict(self.cfg.options).get("evidence_tokens") or "auto",
                "merges": self.merges,
            }
        }


__all__ = ["EVIDENCE_HEADER", "EVIDENCE_TEMPLATES", "HierEvidence", "evidence_budget", "format_evidence"]
