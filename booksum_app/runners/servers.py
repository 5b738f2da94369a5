"""Which server the judge's calls go to when it is not the summarizers' (``--judge-base-url``).

``--base-url`` names the server of the command's models; a judge on another server (a local
summarizer on ``vllm serve``, a hosted judge) gets its own with ``--judge-base-url URL``, or
``--judge-base-url api`` for its provider's own API. An Anthropic judge never inherits
``--base-url`` (an OpenAI-compatible server cannot answer Anthropic's API): it goes to
Anthropic, or to ``ANTHROPIC_BASE_URL``, unless ``--judge-base-url`` says otherwise. A model's
own ``base_url`` in the config file is kept in every case except ``--judge-base-url``.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection

from booksum_app.errors import ConfigError
from booksum_app.llm.registry import LLMSettings, choose_model

PROVIDER_API = "api"  # --judge-base-url api: the judge's provider's own API


def judge_server(settings: LLMSettings, judge: str | None, url: str | None, *,
                 summarizers: Collection[str | None] = ()) -> LLMSettings:
    """``settings`` with the judge's server set (``LLMSettings.servers``); unchanged when nothing applies.

    Raises:
        ConfigError: ``--judge-base-url`` without a judge, or for a judge that also summarizes here.
    """
    if judge is None:
        if url is not None:
            raise ConfigError("--judge-base-url names the judge's server, but no judge is chosen; pass --judge MODEL")
        return settings
    if url is None:
        spec = choose_model(judge, settings=settings)
        inherits = not (settings.base_url and spec.provider == "anthropic" and spec.server is None)
        if inherits or judge in summarizers:
            return settings
        url = PROVIDER_API
    if judge in summarizers:
        raise ConfigError(f"the judge {judge} also summarizes in this grid, so --judge-base-url would move both; "
                          "give that model its server with --base-url or base_url in its config entry")
    own = "" if url.strip().lower() == PROVIDER_API else url.strip()
    return dataclasses.replace(settings, servers=(*settings.servers, (judge, own)))


__all__ = ["PROVIDER_API", "judge_server"]
