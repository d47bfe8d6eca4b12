"""Reading the configuration again while the app runs (the TUI's ctrl+n and `/new`): from the
same file, environment and command line it was first read from, for the workspace in use now.
The result replaces the old one in place, so that every holder of the `Config` (the app, its
backend, open screens) sees it; a config that does not load leaves the old one as it was."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from workbench.config.schema import Config


def reread(config: Config) -> Config | None:
    """`config` read again (None: it was built in code, not read; nothing to read again).
    Raises `ConfigError` (or `OSError`) with the reason when the files no longer load."""
    from workbench.config.load import load_config
    from workbench.config.places import workspace_of

    loaded = config._loaded_with
    if loaded is None:
        return None
    path, env, overrides = loaded
    overrides = {**overrides, "sandbox.workspace": str(workspace_of(config))}
    fresh = load_config(path, env, overrides)
    if not fresh.llm.model:  # e.g. taken from a resumed session's log
        fresh.llm.model = config.llm.model
    return fresh


def adopt(config: Config, fresh: Config) -> list[str]:
    """Make `config` what `fresh` is, in place; the names of the sections that changed."""
    changed = [
        name for name in type(config).model_fields if getattr(config, name) != getattr(fresh, name)
    ]
    for name in changed:
        setattr(config, name, getattr(fresh, name))
    for name, value in (fresh.__pydantic_private__ or {}).items():
        setattr(config, name, value)
    return changed
