"""``extract:``: a backend plugin for booksum that answers without a network or weights.

It "summarizes" by extraction: the answer is the leading sentences of the text in the prompt
(between its ``---`` lines when there are some), as many as fit the request's ``max_tokens``.
It is a model for trying booksum's plumbing offline (cache, retries, plans, records, ``logs``)
and a template for a real provider: replace :meth:`ExtractBackend.complete` with a call to your
API and raise :class:`RateLimited` / :class:`TransientModelError` for what should be retried.

Everything booksum needs is this module and one entry point in ``pyproject.toml``.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import ClassVar

from booksum_app.plugin import BackendBase, Completion, Request, Usage, split_sentences

_BETWEEN_RULES = re.compile(r"^---$\n(.*?)\n^---$", re.DOTALL | re.MULTILINE)


class ExtractBackend(BackendBase):
    """Model strings ``extract:<anything>``; the model id is only a label."""

    kind = "extract"  # part of the call cache key: answers never mix with another backend's
    default_concurrency = 4
    # planning and pricing for models booksum's table does not list (all of them, here); the
    # prices are made up so that cost plans, records and ``booksum logs`` show a price
    model_defaults: ClassVar[Mapping[str, object]] = {
        "context_window": 16384,
        "tokenizer": "cl100k_base",  # booksum counts with it in plans and runs alike
        "input_usd_per_mtok": 0.05,
        "output_usd_per_mtok": 0.20,
        "note": "the extract: demo backend (made-up prices)",
    }

    def complete(self, request: Request) -> Completion:
        """The leading sentences of the prompt's text within ``max_tokens``."""
        found = _BETWEEN_RULES.search(request.user_text)
        text = found.group(1) if found else request.user_text
        kept: list[str] = []
        used = 0
        for sentence in split_sentences(" ".join(text.split()), lang="en"):
            cost = self.count_tokens(sentence) + 1
            if used + cost > request.max_tokens:
                break
            kept.append(sentence)
            used += cost
        answer = " ".join(kept)
        prompt = (request.system or "") + request.user_text
        usage = Usage(input_tokens=self.count_tokens(prompt), output_tokens=self.count_tokens(answer))
        return Completion(answer, "stop", usage, model=self.info.name)
