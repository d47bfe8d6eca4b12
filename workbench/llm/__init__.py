"""The LLM client on litellm: `LLMClient.complete()`, its responses, errors and accounting.

Importing this package does not import litellm (that happens on the first call, or in a
worker thread through `await warm_up()`).

Imports: config.
"""

from workbench.llm.client import (
    ChatModel,
    LLMClient,
    LLMResponse,
    LLMTotals,
    RetryHook,
    ToolCall,
    load_litellm,
    prime_litellm,
    warm_up,
)
from workbench.llm.errors import ErrorKind, LLMError

__all__ = [
    "ChatModel",
    "ErrorKind",
    "LLMClient",
    "LLMError",
    "LLMResponse",
    "LLMTotals",
    "RetryHook",
    "ToolCall",
    "load_litellm",
    "prime_litellm",
    "warm_up",
]
