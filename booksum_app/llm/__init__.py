"""The model seam: requests and completions, the call layer, the registry of models.

Provider backends (``openai_backend``, ``anthropic_backend``, ``vllm_backend``,
``local_backend``) are imported only when a model of theirs is built, so their SDKs stay
optional at import time.
"""

from __future__ import annotations

from booksum_app.llm.base import (
    Backend,
    BatchBackend,
    ChatModel,
    Completion,
    ModelInfo,
    Request,
    Usage,
)
from booksum_app.llm.cache import CallCache
from booksum_app.llm.calls import CallRecord, Client
from booksum_app.llm.registry import (
    FALLBACK_NOTICE,
    LLMSettings,
    ModelSpec,
    choose_model,
    get_model,
    resolve_model,
)
from booksum_app.llm.request_key import request_key

__all__ = [
    "FALLBACK_NOTICE",
    "Backend",
    "BatchBackend",
    "CallCache",
    "CallRecord",
    "ChatModel",
    "Client",
    "Completion",
    "LLMSettings",
    "ModelInfo",
    "ModelSpec",
    "Request",
    "Usage",
    "choose_model",
    "get_model",
    "request_key",
    "resolve_model",
]
