"""sandbox: where the agent works. Never imports `workbench`.

- `protocol`: the wire models (actions, observations, stream events, server info).
- `server` + `http11` + `http_listener` (the action server over asyncio and h11: requests,
  limits, accepting under a connection cap), `stream_fanout` (bounded `/stream` subscribers),
  `core` (the `Sandbox` that runs actions on executors), `__main__` (`python -m sandbox serve`).
- `executors/`: bash, files (the editor), jupyter, browser, each registering itself.
- `skills/`: helper functions imported into the agent's IPython kernel.
- `client` (the HTTP client), `runtimes/` (local, docker, remote: start a server, talk to it),
  `errors` (what a runtime or the client raises), `truncate` (head-and-tail truncation, the
  one both the sandbox and the app use).
- `limits` (a session's processes, memory and tmpfs limits: cgroups, rlimits, what holds),
  `idmap` (idmapped mounts), `agent_uid` (the local agent as its own unprivileged uid),
  `setid` (set-id bits the agent left on workspace files, cleared on the host),
  `workspace_scan` (one walk for set-id files and nested repositories).
"""
