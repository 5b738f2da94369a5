"""Hosted providers reached through their OpenAI-compatible endpoints, by their own names.

``groq:llama-3.3-70b-versatile`` is sent to Groq's endpoint with ``$GROQ_API_KEY``, priced by
booksum's model table (a model it has no price for plans at an unknown cost, never $0). The
base URLs are the ones each provider documents for the OpenAI SDK (docs/models.md lists them
with their pages); another spelling of a provider (``google:``, ``grok:``) is answered with the
model string that works.
"""

from __future__ import annotations

from typing import NamedTuple


class CompatibleProvider(NamedTuple):
    name: str  # as the provider writes it
    base_url: str  # its OpenAI-compatible endpoint
    key_env: str  # the variable its own docs keep the key in


COMPATIBLE_PROVIDERS: dict[str, CompatibleProvider] = {
    "gemini": CompatibleProvider("Google Gemini", "https://generativelanguage.googleapis.com/v1beta/openai/",
                                 "GEMINI_API_KEY"),
    "mistral": CompatibleProvider("Mistral", "https://api.mistral.ai/v1", "MISTRAL_API_KEY"),
    "groq": CompatibleProvider("Groq", "https://api.groq.com/openai/v1", "GROQ_API_KEY"),
    "openrouter": CompatibleProvider("OpenRouter", "https://openrouter.ai/api/v1", "OPENROUTER_API_KEY"),
    "together": CompatibleProvider("Together AI", "https://api.together.ai/v1", "TOGETHER_API_KEY"),
    "deepseek": CompatibleProvider("DeepSeek", "https://api.deepseek.com", "DEEPSEEK_API_KEY"),
    "fireworks": CompatibleProvider("Fireworks AI", "https://api.fireworks.ai/inference/v1", "FIREWORKS_API_KEY"),
    "xai": CompatibleProvider("xAI", "https://api.x.ai/v1", "XAI_API_KEY"),
}
_SPELLINGS = {"google": "gemini", "mistralai": "mistral", "togetherai": "together", "together-ai": "together",
              "grok": "xai", "x-ai": "xai", "fireworks-ai": "fireworks"}


def compatible_route(model: str) -> str | None:
    """For ``PROVIDER:MODEL`` spelled another way than booksum's provider name (``google:``,
    ``grok:``), the model string that works; None for any other string."""
    provider, sep, model_id = model.strip().partition(":")
    key = _SPELLINGS.get(provider.lower(), provider.lower())
    if not sep or key not in COMPATIBLE_PROVIDERS or provider == key:
        return None
    entry = COMPATIBLE_PROVIDERS[key]
    return f"{entry.name} is called {key}: use -m {key}:{model_id or 'MODEL'} with your key in ${entry.key_env}"


__all__ = ["COMPATIBLE_PROVIDERS", "CompatibleProvider", "compatible_route"]
