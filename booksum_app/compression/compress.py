"""Compress a text to a token budget with an LLM (BooookScore App. A.2.1, App. J.1 "Compression").

The compression prompt asks for ``words_for_tokens(max_tokens)`` words at temperature 1.0
(BooookScore §5 fn. 17: "improves adherence to the max summary length"). A reply that is
empty, cut off, over the budget or unfinished is regenerated with 10 % fewer words per try
(the reference code shrinks by 5 %; we shrink faster because we allow fewer tries); after
the last try the best attempt is truncated at its last sentence end that fits
(:mod:`booksum_app.compression.validity`). A text already within budget costs no call.
Deviation: the reference code also rejects compressions shorter than 80 % of the target;
a short but valid compression is accepted here.
"""

from __future__ import annotations

from dataclasses import dataclass

from booksum_app.compression.budget import check_fits, count_words
from booksum_app.compression.validity import (
    DEFAULT_MAX_TRIES,
    AttemptInfo,
    CallEntry,
    Sampling,
    generate_valid,
    regenerator,
)
from booksum_app.config import COMPRESSION_TEMPERATURE, DEFAULT_TOP_P
from booksum_app.llm.base import ChatModel
from booksum_app.prompts import Template


@dataclass(frozen=True)
class CompressionResult:
    """A text brought under a budget, with every attempt it took."""

    text: str
    input_tokens: int
    output_tokens: int
    target_tokens: int
    attempts: tuple[AttemptInfo, ...]
    truncated: bool  # no attempt was valid: the best one was cut at a sentence end
    calls: tuple[CallEntry, ...]

    @property
    def compressed(self) -> bool:
        """Whether any call was made (False when the text already fit)."""
        return bool(self.attempts)


def compress_to_budget(
    text: str,
    *,
    model: ChatModel,
    max_tokens: int,
    template: Template,
    lang: str = "en",
    max_tries: int = DEFAULT_MAX_TRIES,
    node: str = "compress",
    temperature: float = COMPRESSION_TEMPERATURE,
    top_p: float = DEFAULT_TOP_P,
) -> CompressionResult:
    """Bring ``text`` to at most ``max_tokens`` tokens with the compression template.

    Raises:
        ContextTooLong: the compression prompt cannot fit the model's context window.
        ModelError: the model returned nothing usable in ``max_tries`` tries.
    """
    input_tokens = model.count_tokens(text)
    if input_tokens <= max_tokens:
        return CompressionResult(text, input_tokens, input_tokens, max_tokens, (), False, ())
    current_words = count_words(text)
    fields = template.fields

    def render(words: int) -> str:
        values: dict[str, object] = {"summary": text, "word_limit": words}
        if "current_words" in fields:
            values["current_words"] = current_words
        return template.render(**values)

    sampling = Sampling(temperature=temperature, retry_temperature=temperature, top_p=top_p,
                        max_tries=max_tries, lang=lang)  # every try at the compression temperature
    regen = regenerator(model, render, max_tokens=max_tokens, purpose="compress", node=node, sampling=sampling)
    check_fits(
        prompt_tokens=model.count_tokens(regen.request().prompt),
        max_tokens=max_tokens,
        context_window=model.info.context_window,
        what=f"compression of {node}",
        fix="lower --max-summary-len",
    )
    generation = generate_valid(model, regen)
    return CompressionResult(
        text=generation.text,
        input_tokens=input_tokens,
        output_tokens=generation.tokens,
        target_tokens=max_tokens,
        attempts=generation.attempts,
        truncated=generation.truncated,
        calls=generation.calls,
    )


__all__ = ["CompressionResult", "compress_to_budget"]
