"""Settings: the typed schema, loading its layers, the keys, editing a file, the template.

- `schema.py` (with `section.py`, `schema_sandbox.py`, `schema_mcp.py`): one pydantic model per
  `[section]`, a docstring per key: the documentation;
- `load.py`: defaults < config file < environment < command line, and the project's own
  `.workbench/config.toml` (rules only, when trusted: `project_trust.py`);
- `keys.py`: every dotted key, its environment variables, what it accepts in words;
- `edit.py`: one key or list item changed in a file; `reload.py`: the config read again;
- `places.py`: where a config puts the workspace and the session logs;
- `template.py`: `config.template.toml` rendered from the schema.

The rule examples a config gives are checked with the security policy (a lazy import).

Imports: security.
"""
