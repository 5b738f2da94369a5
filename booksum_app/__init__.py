"""booksum: summarize book-length texts with LLMs and measure summary coherence (BooookScore)."""

from __future__ import annotations

__version__ = "0.1.0"
