"""The agent's tools, one module each (`bash`, `editor`, `ipython`, `browser`, `think`,
`finish`, and `set_env` for the person), with `base.Tool` saying what a tool is,
`function.FunctionTool` for tools registered at run time, and `registry.REGISTRY`, which the
rest of the app asks instead of branching on the kind of an action.

Imports: config, security.
"""
