"""Provider backends: one module per carrier (OpenAI and compatible servers, Anthropic, Ollama, vLLM,
the embedded llama.cpp model) and their wire formats.

Each is imported only when a model of its own is built (``catalog.py``), so its SDK stays optional
at import time. Providers sit below the call layer: they turn one ``Request`` into one
``Completion`` and know nothing of retries, budgets, the cache or the registry.
"""
