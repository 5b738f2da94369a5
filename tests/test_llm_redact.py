"""Credentials never survive into a message: the key in use, bearer tokens, sk-... keys."""

from __future__ import annotations

import pytest

from booksum_app.errors import REDACTED, redact


@pytest.mark.parametrize(
    ("text", "leaked"),
    [
        ("Authorization: Bearer abc.def-ghi", "abc.def-ghi"),
        ("bad key sk-proj-AbCdEf123456", "sk-proj-AbCdEf123456"),
        ("anthropic key sk-ant-api03-xyz_XYZ-123", "sk-ant-api03-xyz_XYZ-123"),
        ("headers {'x-api-key': 'opaque-secret'}", "opaque-secret"),
        ('{"api_key": "hunter22"}', "hunter22"),
    ],
)
def test_secret_shapes_are_redacted(text: str, leaked: str) -> None:
    cleaned = redact(text)
    assert leaked not in cleaned and REDACTED in cleaned


def test_the_key_in_use_is_redacted_whatever_its_shape() -> None:
    assert redact("echo: plainopaquekey99 end", "plainopaquekey99") == f"echo: {REDACTED} end"


def test_ordinary_text_is_left_alone() -> None:
    text = "server error 500: model [x] overloaded; ask again (task-list ok)"
    assert redact(text, None, "") == text
