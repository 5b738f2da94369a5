"""Hosted providers booksum has no backend of its own for, and the route that reaches them: their
OpenAI-compatible endpoints, through ``openai:MODEL --base-url URL``.

The base URLs are the ones each provider documents for the OpenAI SDK (docs/models.md lists
them with their pages). Asking for ``gemini:...`` then says which command works instead of
"unknown model".
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
    """For ``PROVIDER:MODEL`` of a provider in :data:`COMPATIBLE_PROVIDERS`, the command that works
    instead; None for any other string."""
    provider, sep, model_id = model.strip().partition(":")
    key = _SPELLINGS.get(provider.lower(), provider.lower())
    if not sep or key not in COMPATIBLE_PROVIDERS:
        return None
    entry = COMPATIBLE_PROVIDERS[key]
    ollama = f"; Ollama's model of that name is ollama:{model.strip()}" if key == "mistral" else ""
    return (f"booksum has no {entry.name} backend; use its OpenAI-compatible endpoint: "
            f"-m openai:{model_id or 'MODEL'} --base-url {entry.base_url} with OPENAI_API_KEY set to your "
            f"{entry.name} key (${entry.key_env}); give its price in the config file for --max-cost "
            f"(docs/models.md){ollama}")


__all__ = ["COMPATIBLE_PROVIDERS", "CompatibleProvider", "compatible_route"]
