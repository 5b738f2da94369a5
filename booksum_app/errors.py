"""The one exception tree of booksum; only ``cli.py`` turns these into messages.

::

    BooksumError                      exit 1
    ├── ConfigError                   exit 2   bad option, config file, model string
    │   ├── MissingAPIKey             exit 2   no API key set (found before any model loads)
    │   └── NotInstalled              exit 2   a backend's package or the embedded weights are missing
    ├── BookFormatError               exit 3   unreadable / unsupported / malformed book
    │   └── DRMProtectedError         exit 3   encrypted content (Adobe ADEPT, Apple FairPlay, ...)
    ├── InputError                    exit 2   summaries / annotations files that cannot be read
    ├── PromptError                   exit 2   missing or malformed prompt template
    ├── JudgeParseError               exit 1   a judge answer that cannot be parsed (after retries)
    ├── CostLimitExceeded             exit 5   the next call would pass --max-cost
    ├── PlanDeclined                  exit 6   the user answered no to a plan: nothing was spent
    └── ModelError                    exit 4   a backend failed
        ├── AuthError                 exit 4   the server rejected the API key (401/403)
        ├── RateLimited               exit 4   still rate limited after all retries
        ├── ContextTooLong            exit 4   prompt does not fit the model's context window
        ├── ModelUnavailable          exit 4   the weights cannot be loaded, the server lacks the model
        └── TransientModelError       exit 4   5xx, timeout, dropped connection (retried first)

Every message says what went wrong and how to fix it, on one line.
"""

from __future__ import annotations

from typing import Any

from booksum_app.redaction import REDACTED, environment_secrets, redact
from booksum_app.textsafe import printable

DETAIL_CHARS = 300  # of a server's error message kept in ours
_SCAN_CHARS = 65_536  # of a server's message read at all (a 64 MB error body is not a message)


def server_message(text: str, *secrets: str | None, limit: int = DETAIL_CHARS) -> str:
    """A server's message made fit for ours: redacted, then printable, on one line, then cut.

    Redacting comes first: a key that straddles the cut would otherwise be cut past the point
    where :func:`redact` recognises it, and print all but its last characters.
    """
    return " ".join(printable(redact(text[:_SCAN_CHARS], *secrets)).split())[:limit]


class BooksumError(Exception):
    """Base of every error booksum raises on purpose.

    Its message is printable text (:func:`~booksum_app.textsafe.printable`) with no credential
    in it (:func:`~booksum_app.redaction.redact`): messages name files, titles and servers'
    words, and neither a control sequence nor a key in them may reach the terminal or a file.
    """

    exit_code = 1
    # what a failed run had paid (a ``Meter``, or a ``Tally``), set by the runner: the CLI
    # writes it to a partial record so that nothing paid for goes unaccounted
    spent: Any = None
    spent_record: Any = None  # the Path of the partial record the CLI wrote, if any

    def __init__(self, *args: object) -> None:
        super().__init__(*(printable(redact(a), newlines=True) if isinstance(a, str) else a for a in args))


class ConfigError(BooksumError):
    """An option, config file or model string is invalid."""

    exit_code = 2


class InputError(BooksumError):
    """A summaries or annotations file cannot be read."""

    exit_code = 2


class PromptError(BooksumError):
    """A prompt template is missing or malformed."""

    exit_code = 2


class BookFormatError(BooksumError):
    """A book file cannot be read as a book."""

    exit_code = 3


class DRMProtectedError(BookFormatError):
    """The book's content is encrypted (DRM)."""


class JudgeParseError(BooksumError):
    """A judge answer could not be parsed even after retries."""


class CostLimitExceeded(BooksumError):
    """Running the next call would exceed the configured cost ceiling."""

    exit_code = 5


class PlanDeclined(BooksumError):
    """The user answered no when asked to run a plan (or to delete cached answers): nothing was done.

    Its own exit code, so that a script tells "the user said no" from a failure.
    """

    exit_code = 6


class ModelError(BooksumError):
    """A model backend failed."""

    exit_code = 4


class AuthError(ModelError):
    """The server rejected the API key (401/403): found by a call."""


class MissingAPIKey(ConfigError):
    """No API key is set: a configuration to fix, found before any call, not a model failure.

    A backend plugin raises it from ``from_spec`` (or its constructor) when its key is unset.
    """


class RateLimited(ModelError):
    """Still rate limited after every retry."""

    def __init__(self, message: str, *, retry_after_s: float | None = None) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s


class TransientModelError(ModelError):
    """A failure worth retrying: 5xx, timeout, dropped connection, empty reply.

    ``overloaded``: the provider said it is overloaded (503, Anthropic's 529), so the adaptive
    limit on calls in flight halves as on a 429.
    """

    def __init__(self, message: str, *, retry_after_s: float | None = None, overloaded: bool = False) -> None:
        super().__init__(message)
        self.retry_after_s = retry_after_s
        self.overloaded = overloaded


class ContextTooLong(ModelError):
    """The prompt does not fit the model's context window."""


class ModelUnavailable(ModelError):
    """The model cannot be loaded (a GGUF file that is not one) or the server does not have it."""


class NotInstalled(ConfigError, ModelUnavailable):
    """A backend's package (llama-cpp-python, vLLM) or the embedded model's weights are not installed:
    a configuration to fix, found at start-up before any model loads (exit 2, with the install line).

    Also a :class:`ModelUnavailable`, so code that caught that for a missing package still does.
    """


__all__ = [
    "DETAIL_CHARS",
    "REDACTED",
    "AuthError",
    "BookFormatError",
    "BooksumError",
    "ConfigError",
    "ContextTooLong",
    "CostLimitExceeded",
    "DRMProtectedError",
    "InputError",
    "JudgeParseError",
    "ModelError",
    "ModelUnavailable",
    "PlanDeclined",
    "PromptError",
    "RateLimited",
    "TransientModelError",
    "environment_secrets",
    "redact",
    "server_message",
]
