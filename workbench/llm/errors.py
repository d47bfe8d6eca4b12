"""`LLMError` and the mapping from litellm's exceptions to errors a person can act on.

Every message is scrubbed of the API key (and of anything shaped like a bearer token) before
it leaves this module, and errors are raised without their litellm cause attached, so a
printed traceback cannot leak the key either.
"""

from __future__ import annotations

import re
import time
from collections.abc import Iterable
from email.utils import parsedate_to_datetime
from typing import Final, Literal

ErrorKind = Literal[
    "auth",
    "rate_limit",
    "server",
    "timeout",
    "connection",
    "refused",
    "bad_reply",
    "bad_request",
    "context_window",
    "config",
]
RETRYABLE: Final = frozenset({"rate_limit", "server", "timeout", "connection", "refused"})
"""Kinds worth another attempt; `refused` has its own, shorter policy (llm.connect_retries)."""

_BEARER = re.compile(r"(?i)(bearer\s+)[A-Za-z0-9._~+/=-]{8,}")
_PREFIXES = re.compile(r"^(?:(?:litellm\.)?\w+(?:Error|Exception)?:\s*|\w+Exception - )+")
_MAX_DETAIL = 400
# How a refused or dropped connection reads once litellm has wrapped it (as a 500): the OpenAI
# SDK says "Connection error."; litellm's own HTTP handler passes on aiohttp's or httpx's words.
_CONNECTION_SIGNS: Final = (
    "connection error",
    "cannot connect to host",
    "connection refused",
    "connect call failed",
    "server disconnected",
    "connection reset",
)
# A reply litellm could not read as a completion: its own HTTP handler / the OpenAI SDK's words.
_INVALID_REPLY_SIGNS: Final = ("unable to get json response", "invalid response from llm endpoint")
# A request refused for its length, in the words of providers whose refusal litellm does not
# map to ContextWindowExceededError (OpenAI's error code, wrapped as a BadRequestError).
_CONTEXT_SIGNS: Final = (
    "context_length_exceeded",
    "maximum context length",
    "context window",
    "prompt is too long",
)
_WINDOW_SIZE = re.compile(r"maximum context length is (\d+)", re.IGNORECASE)
_SERVER_ERRORS: Final = frozenset(
    {"InternalServerError", "ServiceUnavailableError", "BadGatewayError"}
)


class LLMError(Exception):
    """An LLM call failed; `kind` says how (see ErrorKind) and the message says what to do."""

    def __init__(
        self, kind: ErrorKind, message: str, *, status: int | None = None, retries: int = 0
    ) -> None:
        super().__init__(message)
        self.kind: ErrorKind = kind
        self.status = status
        self.retries = retries

    @property
    def retryable(self) -> bool:
        """Whether trying the same request again may succeed."""
        return self.kind in RETRYABLE

    @property
    def run_status(self) -> Literal["config_error", "llm_error"]:
        """How a run this error ends is reported: a setting to fix (no provider for the model,
        no such model), or the LLM failing."""
        return "config_error" if self.kind == "config" else "llm_error"

    def retry_notice(self, retry: int, wait_s: float) -> str:
        """What front ends show before retry number `retry` (1-based), `wait_s` from now."""
        return retry_notice(self.kind, retry, wait_s, str(self))

    def __reduce__(self) -> tuple[object, ...]:
        return (_rebuild, (self.kind, str(self), self.status, self.retries))


def retry_notice(kind: str, retry: int, wait_s: float, message: str) -> str:
    """`LLM server error, retry 2 in 4.0 s: <message>` (also for a recorded retry)."""
    what = "connection refused" if kind == "refused" else f"{kind} error"
    return f"LLM {what}, retry {retry} in {wait_s:.1f} s: {message}"


def _rebuild(kind: ErrorKind, message: str, status: int | None, retries: int) -> LLMError:
    return LLMError(kind, message, status=status, retries=retries)


def stated_window(error: LLMError) -> int | None:
    """The context window a length refusal names ("maximum context length is N tokens")."""
    found = _WINDOW_SIZE.search(str(error))
    return int(found.group(1)) if found else None


def scrub(text: str, secrets: Iterable[str]) -> str:
    """`text` with every secret (of 4+ characters) and every bearer token replaced."""
    for secret in secrets:
        if len(secret) >= 4:
            text = text.replace(secret, "[redacted]")
    return _BEARER.sub(r"\1[redacted]", text)


def _detail(exc: BaseException, secrets: Iterable[str]) -> str:
    text = " ".join(str(exc).split())
    text = _PREFIXES.sub("", text).strip() or type(exc).__name__
    text = scrub(text, secrets)
    return text if len(text) <= _MAX_DETAIL else text[: _MAX_DETAIL - 3] + "..."


_SSL_CONTEXT = re.compile(r"\s*ssl:(?:<[^>]*>|\S+)")
_REFUSED_SIGNS: Final = ("connect call failed", "connection refused", "errno 111")


def _connection_detail(detail: str) -> str:
    """aiohttp's and httpx's words on a failed connection, without their object reprs."""
    lowered = detail.lower()
    if any(sign in lowered for sign in _REFUSED_SIGNS):
        return "connection refused: nothing is listening there; is the server running?"
    return _SSL_CONTEXT.sub("", detail)


def _unreadable_content(exc: BaseException) -> str | None:
    """What broke litellm's reading of a well-formed reply whose content it could not decode
    (arguments nested past Python's recursion limit, an integer past its digit limit); None
    for every other failure. litellm raises "Invalid response object" with the cause chained."""
    if "invalid response object" not in str(exc).lower():
        return None
    seen: set[int] = set()
    cause: BaseException | None = exc
    while cause is not None and id(cause) not in seen:
        seen.add(id(cause))
        if isinstance(cause, RecursionError) or (
            type(cause) is ValueError  # not JSONDecodeError, which litellm handles itself
        ):
            text = " ".join(str(cause).split())
            return f"{type(cause).__name__}: {text[:120]}"
        cause = cause.__cause__ or cause.__context__
    return None


def _invalid_reply(model: str, where: str, detail: str, status: int | None) -> LLMError:
    return LLMError(
        "server",
        f"The LLM server for {model}{where} sent a reply that is not a chat completion "
        f"({detail}). Try again later; check llm.base_url if it keeps happening.",
        status=status,
    )


def retry_after_s(exc: BaseException) -> float | None:
    """The wait a `Retry-After` header on the failed response asks for, if any."""
    headers = getattr(exc, "litellm_response_headers", None)  # litellm keeps the real ones here
    if headers is None:
        headers = getattr(getattr(exc, "response", None), "headers", None)
    value = headers.get("retry-after") if headers is not None else None
    if not value:
        return None
    try:
        return max(0.0, float(value))
    except ValueError:
        pass
    try:
        return max(0.0, parsedate_to_datetime(value).timestamp() - time.time())
    except (TypeError, ValueError):
        return None


def classify(
    exc: BaseException, *, model: str, base_url: str, timeout_s: float, secrets: Iterable[str]
) -> LLMError:
    """Turn any exception from litellm into an LLMError with an actionable, key-free message."""
    secrets = [s for s in secrets if s]
    name = type(exc).__name__
    names = {cls.__name__ for cls in type(exc).__mro__}
    status = getattr(exc, "status_code", None)
    status = status if isinstance(status, int) else None
    detail = _detail(exc, secrets)
    where = f" at {base_url}" if base_url else ""
    lowered = detail.lower()

    if "Timeout" in names or isinstance(exc, TimeoutError) or name == "APITimeoutError":
        return LLMError(
            "timeout",
            f"No answer from model {model}{where} within {timeout_s:g} s. Try again, or raise "
            "llm.timeout_s if the model is slow.",
            status=status,
        )
    unreadable = _unreadable_content(exc)
    if unreadable is not None:
        return LLMError(
            "bad_reply",
            f"The reply of {model} could not be read ({unreadable}): its tool call arguments "
            "are nested too deep or hold a number too long to decode.",
            status=status,
        )
    if lowered.startswith("invalid response object"):  # litellm could not read a 200's body
        return _invalid_reply(model, where, detail, status)
    if "APIConnectionError" in names or any(sign in lowered for sign in _CONNECTION_SIGNS):
        refused = any(sign in lowered for sign in _REFUSED_SIGNS)
        return LLMError(
            "refused" if refused else "connection",
            f"Cannot reach the LLM provider for {model}{where} ({_connection_detail(detail)}). "
            "Check your network and llm.base_url / LLM_BASE_URL.",
            status=status,
        )
    too_long = 400 <= (status or 400) < 500 and any(sign in lowered for sign in _CONTEXT_SIGNS)
    if "ContextWindowExceededError" in names or too_long:
        return LLMError(
            "context_window",
            f"The conversation no longer fits the context window of {model} ({detail}).",
            status=status,
        )
    if "AuthenticationError" in names or "PermissionDeniedError" in names or status in (401, 403):
        return LLMError(
            "auth",
            f"The provider refused the API key for {model} (HTTP {status or 401}: {detail}). "
            "Fix: set a valid key in LLM_API_KEY or llm.api_key.",
            status=status,
        )
    if "RateLimitError" in names or status == 429:
        if "quota" in lowered or "billing" in lowered:
            return LLMError(
                "auth",
                f"The account for {model} is out of quota ({detail}). Fix: check your plan "
                "and billing with the provider, or use another key.",
                status=status,
            )
        return LLMError(
            "rate_limit",
            f"The provider is rate limiting requests to {model} (HTTP 429: {detail}). Wait a "
            "minute, or raise llm.num_retries / llm.retry_max_wait_s.",
            status=status,
        )
    if "NotFoundError" in names or status == 404:
        return LLMError(
            "config",
            f"Model or endpoint not found: {model}{where} (HTTP 404: {detail}). Fix: check "
            "llm.model (provider/name, e.g. openai/gpt-4o) and llm.base_url.",
            status=status,
        )
    if "llm provider not provided" in lowered or "LiteLLMUnknownProvider" in names:
        return LLMError(
            "config",
            f"litellm cannot tell which provider serves {model!r}. Fix: write llm.model as "
            "provider/name, e.g. openai/gpt-4o or anthropic/claude-sonnet-4-5.",
            status=status,
        )
    if any(sign in lowered for sign in _INVALID_REPLY_SIGNS):  # a 200 whose body is not JSON
        return _invalid_reply(model, where, detail, status)
    if (status or 0) >= 500 or names & _SERVER_ERRORS:
        return LLMError(
            "server",
            f"The LLM server failed for {model}{where} (HTTP {status or 500}: {detail}). "
            "It may be overloaded or down: try again later.",
            status=status,
        )
    if 400 <= (status or 0) < 500 or "BadRequestError" in names:
        return LLMError(
            "bad_request",
            f"The provider rejected the request to {model} (HTTP {status or 400}: {detail}).",
            status=status,
        )
    return LLMError("bad_request", f"The call to {model} failed: {name}: {detail}", status=status)
