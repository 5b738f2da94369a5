"""Two lookups on model names: a dated snapshot's family, and a model's own server.

- ``family``: providers publish dated snapshots of a model (``gpt-4o-2024-08-06``,
  ``claude-3-5-sonnet-20241022``) at the family's price; a snapshot not in the model table is
  looked up as its family. Only full dates count (``YYYY-MM-DD``, ``YYYYMMDD``): OpenAI's older
  four-digit suffixes (``gpt-3.5-turbo-1106``) were priced apart.
- ``own_server``: a model's own base URL, over the command's ``--base-url`` (the judge's
  ``--judge-base-url``, a config entry's ``base_url``); ``""`` means the provider's own API.
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from typing import Any

_DATED = re.compile(r"^(?P<family>(?:openai|anthropic):.+?)-(?:\d{4}-\d{2}-\d{2}|20\d{6})$")


def family(name: str) -> str:
    """``openai:gpt-4o-2024-08-06`` -> ``openai:gpt-4o``; a name without a full date as it is."""
    match = _DATED.match(name)
    return match["family"] if match else name


def own_server(model: str, name: str, servers: Sequence[tuple[str, str]],
               models: Mapping[str, Mapping[str, Any]]) -> str | None:
    """The server of ``model`` (as given; ``name`` its full name): ``servers`` by either, then the
    ``base_url`` of its table entry (or its family's); None: the command's base URL applies."""
    chosen = dict(servers)
    for key in (model.strip(), name):
        if key in chosen:
            return chosen[key].strip()
    url = (models.get(name) or models.get(family(name)) or {}).get("base_url")
    return url.strip() if isinstance(url, str) else None


__all__ = ["family", "own_server"]
