"""The scripted server's `routes`: many conversations at once, each on its own steps."""

from __future__ import annotations

import json
import urllib.request
from concurrent.futures import ThreadPoolExecutor
from typing import Any

from workbench.testing.llm_server import ScriptedLLMServer


def ask(url: str, system: str, user: str, *history: str) -> Any:
    messages = [{"role": "system", "content": system}, {"role": "user", "content": user}]
    messages += [{"role": "assistant", "content": text} for text in history]
    body = json.dumps({"model": "m", "messages": messages}).encode()
    request = urllib.request.Request(
        url + "/chat/completions", body, {"Content-Type": "application/json"}
    )
    with urllib.request.urlopen(request, timeout=10) as reply:
        return json.load(reply)["choices"][0]["message"]["content"]


def test_each_conversation_takes_its_routes_steps_from_the_first() -> None:
    script = {
        "steps": [{"text": "top"}],
        "routes": [
            {
                "match": "TASK a",
                "steps": [{"text": "a1"}, {"text": "a2"}],
                "default": {"text": "a*"},
            },
            {"match": "TASK b", "steps": [{"text": "b1"}]},
        ],
    }
    with ScriptedLLMServer(script) as server, ThreadPoolExecutor(4) as pool:
        url = server.base_url
        firsts = list(pool.map(lambda s: ask(url, s, "do TASK a"), ["ws1", "ws2", "ws3"]))
        assert firsts == ["a1", "a1", "a1"]  # three conversations (their system prompts differ)
        assert ask(url, "ws1", "do TASK a", "a1") == "a2"
        assert ask(url, "ws1", "do TASK a", "a1", "a2") == "a*"
        assert ask(url, "ws2", "do TASK a", "a1") == "a2"
        assert ask(url, "ws1", "do TASK b") == "b1"
        assert ask(url, "ws1", "something else") == "top"
