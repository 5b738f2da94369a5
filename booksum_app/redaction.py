"""What booksum never prints: credentials, found by value and by shape.

Every message booksum shows or writes (errors, ``logs``, failed records) passes :func:`redact`,
which replaces with ``[redacted]``:

- by value: the value of every environment variable whose name says it holds a credential
  (it contains AUTH, PASS, PWD, CRED, SECRET, TOKEN or KEY: ``MY_SERVICE_AUTH``, ``DB_PWD``,
  ``OPENAI_API_KEY``), and the keys a backend was built with (passed in);
- by shape: URL userinfo (``https://user:pass@host``), ``Authorization:`` headers and
  ``Basic``/``Bearer`` credentials, ``password=`` / ``token=`` / ``api_key=`` / ``secret:``
  pairs, JSON web tokens, PEM private keys, and the prefixes of common keys (OpenAI and
  Anthropic ``sk-``, Hugging Face ``hf_``, AWS ``AKIA``/``ASIA``, Groq ``gsk_``, xAI ``xai-``,
  Google ``AIza``, GitHub ``ghp_``/``github_pat_``, GitLab ``glpat-``, Slack ``xox?-``,
  Stripe ``sk_live_``, Perplexity ``pplx-``, NVIDIA ``nvapi-``).

A value counts as a credential from :data:`MIN_SECRET_CHARS` (6) characters: shorter values
of such variables are settings (``1``, ``true``, ``auto``), and removing them would blank
ordinary words and digits out of every message while hiding nothing a guess would not find.
Numbers and the usual setting words (``enabled``, ``disabled``, ``always``) are not secrets
whatever their length; ``PWD`` and ``OLDPWD``, the shell's working directories, are not either.
"""

from __future__ import annotations

import base64
import binascii
import functools
import os
import re
from collections.abc import Mapping

REDACTED = "[redacted]"
MIN_SECRET_CHARS = 6
_SECRET_NAME = re.compile(r"(?i)AUTH|PASS|PWD|CRED|SECRET|TOKEN|KEY")
_NOT_SECRET_NAMES = frozenset({"PWD", "OLDPWD"})  # the shell's working directories
_SETTING_WORDS = frozenset({"enabled", "disabled", "always", "never", "default", "optional", "required",
                            "parallel", "enable", "disable"})
_NUMBER = re.compile(r"[+-]?\d+(?:\.\d*)?(?:[eE][+-]?\d+)?")

_SHAPES = re.compile(
    r"(?i)(?P<url>\b[a-z][a-z0-9+.\-]*://)[^\s/?#@]+(?=@)"  # URL userinfo: scheme://user[:pass]@host
    # a label kept, then the credential it introduces
    r"|(?P<label>\bauthorization[\"']?\s*[:=]\s*[\"']?(?:(?:basic|bearer|token|digest|negotiate)\s+)?"
    r"|\bbearer\s+"
    r"|(?<![a-z])(?:x-api-key|api[_-]?key|apikey|access[_-]?key|private[_-]?key|secret[_-]?key"
    r"|password|passwd|pwd|passphrase|secret|token|credentials?|auth)[\"']?\s*[:=]\s*[\"']?"
    r")[^\s\"',;&<>]+"
    # JSON web tokens, PEM private keys, and keys known by their prefix
    r"|\beyJ[A-Za-z0-9_\-]{8,}\.eyJ[A-Za-z0-9_\-]{8,}\.[A-Za-z0-9_\-]*"
    r"|-----BEGIN [A-Z ]*PRIVATE KEY-----.*?(?:-----END [A-Z ]*PRIVATE KEY-----|\Z)"
    r"|\b(?:sk-(?:ant-|proj-)?[A-Za-z0-9_\-]{6,}|hf_[A-Za-z0-9]{16,}|(?:AKIA|ASIA)[0-9A-Z]{16}"
    r"|gsk_[A-Za-z0-9]{16,}|xai-[A-Za-z0-9]{16,}|AIza[0-9A-Za-z_\-]{30,}|gh[pousr]_[A-Za-z0-9]{16,}"
    r"|github_pat_[A-Za-z0-9_]{16,}|glpat-[A-Za-z0-9_\-]{16,}|xox[abposr]-[A-Za-z0-9\-]{10,}"
    r"|[rs]k_(?:live|test)_[A-Za-z0-9]{16,}|pplx-[A-Za-z0-9]{16,}|nvapi-[A-Za-z0-9_\-]{16,})",
    re.DOTALL,
)
# ``Basic`` outside an Authorization header only when what follows is base64 of ``user:pass``
_BASIC = re.compile(r"(?i)\b(basic\s+)([A-Za-z0-9+/]{4,}={0,2})(?![A-Za-z0-9+/=])")


def is_secret_name(name: str) -> bool:
    """Whether an environment variable's name says it holds a credential."""
    return name.upper() not in _NOT_SECRET_NAMES and bool(_SECRET_NAME.search(name))


def is_secret_value(value: object) -> bool:
    """Whether a value of such a variable is long and odd enough to be a credential (see the module doc)."""
    if not isinstance(value, str) or len(value.strip()) < MIN_SECRET_CHARS:
        return False
    return value.strip().lower() not in _SETTING_WORDS and not _NUMBER.fullmatch(value.strip())


def environment_secrets(env: Mapping[str, str] | None = None) -> list[str]:
    """Values of the environment variables (``os.environ``, and ``env`` when given) whose names say
    they hold a credential (:func:`is_secret_name`, :func:`is_secret_value`)."""
    found = list(_secrets_of(tuple(os.environ.items())))
    return found + [value for name, value in (env or {}).items() if is_secret_name(name) and is_secret_value(value)]


@functools.lru_cache(maxsize=4)
def _secrets_of(pairs: tuple[tuple[str, str], ...]) -> tuple[str, ...]:
    """The credentials of one state of the environment (read again whenever it changes)."""
    return tuple(value for name, value in pairs if is_secret_name(name) and is_secret_value(value))


def redact(text: str, *secrets: str | None) -> str:
    """``text`` with every credential replaced by ``[redacted]``: ``secrets`` and the environment's
    by value, then every shape in the module doc.

    Args:
        text: the text to clean (a server's message, an exception's text, a logged prompt).
        secrets: exact values to remove too (the API key in use); short or empty ones are ignored.

    Returns:
        The text with no credential left in it.
    """
    values = [s for s in (*secrets, *environment_secrets()) if isinstance(s, str) and len(s) >= 4]
    if values:
        text = _by_value(tuple(sorted(set(values), key=len, reverse=True))).sub(REDACTED, text)
    text = _SHAPES.sub(_shape, text)
    return _BASIC.sub(_basic, text)


@functools.lru_cache(maxsize=32)
def _by_value(values: tuple[str, ...]) -> re.Pattern[str]:
    """One pattern of the values, longest first (a value inside another is removed with it)."""
    return re.compile("|".join(re.escape(v) for v in values))


def _shape(match: re.Match[str]) -> str:
    return (match.group("url") or match.group("label") or "") + REDACTED


def _basic(match: re.Match[str]) -> str:
    try:
        decoded = base64.b64decode(match.group(2), validate=True)
    except (binascii.Error, ValueError):
        return match.group(0)
    return match.group(1) + REDACTED if b":" in decoded else match.group(0)


__all__ = ["MIN_SECRET_CHARS", "REDACTED", "environment_secrets", "is_secret_name",
           "is_secret_value", "redact"]
