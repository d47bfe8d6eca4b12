"""Reading and writing git config files for the guard (`protect.py`), and which keys are inert.

Git parses: `git config --file F --null --list` (includes are not followed for `--file`), run
with no system or global config, from `/`, on a private copy of the bytes (the agent cannot
swap the file while git reads it). Entries are written back with every value quoted.
"""

from __future__ import annotations

import fnmatch
import os
import subprocess

SAFE_KEYS: tuple[str, ...] = (
    "core.repositoryformatversion", "core.filemode", "core.bare", "core.logallrefupdates",
    "core.ignorecase", "core.precomposeunicode", "core.symlinks", "core.autocrlf", "core.eol",
    "core.safecrlf", "core.quotepath", "core.compression", "core.abbrev", "core.checkstat",
    "core.trustctime", "core.sparsecheckout", "core.sparsecheckoutcone", "core.untrackedcache",
    "core.sharedrepository", "core.commentchar", "core.whitespace", "core.bigfilethreshold",
    "extensions.objectformat", "extensions.worktreeconfig", "extensions.refstorage",
    "user.name", "user.email", "author.name", "author.email", "committer.name",
    "committer.email", "init.defaultbranch", "remote.*.url", "remote.*.pushurl",
    "remote.*.fetch", "remote.*.push", "remote.*.mirror", "remote.*.tagopt", "remote.*.prune",
    "branch.*.remote", "branch.*.merge", "branch.*.rebase", "branch.*.pushremote",
    "branch.*.description", "submodule.*.url", "submodule.*.active", "submodule.*.branch",
    "submodule.*.ignore", "pull.rebase", "pull.ff", "push.default", "push.autosetupremote",
    "fetch.prune", "merge.ff", "merge.conflictstyle", "rebase.autostash", "rebase.autosquash",
    "status.showuntrackedfiles", "advice.*", "color.ui", "diff.renames", "diff.algorithm",
    "i18n.commitencoding", "gc.auto", "receive.denycurrentbranch",
)  # fmt: skip
"""Config keys (`section.name`, `section.*.name`) a config the agent wrote may keep: none of
them makes git run a program or read another file. Everything else it added is removed."""

GIT_ENV = {
    "GIT_CONFIG_NOSYSTEM": "1",
    "GIT_CONFIG_GLOBAL": "/dev/null",
    "HOME": "/nonexistent",
    "GIT_CEILING_DIRECTORIES": "/",
    # The checker may run as root on a person's repository: git must not refuse to read it.
    "GIT_CONFIG_COUNT": "1",
    "GIT_CONFIG_KEY_0": "safe.directory",
    "GIT_CONFIG_VALUE_0": "*",
}
"""The environment of the git the guard runs: no system, global or user config."""


def key_safe(key: str) -> bool:
    """Whether a config the agent wrote may keep `key` (`SAFE_KEYS`)."""
    section, _, rest = key.partition(".")
    sub, _, name = rest.rpartition(".")
    shape = f"{section.lower()}.{'*.' if sub else ''}{name.lower()}"
    return any(fnmatch.fnmatchcase(shape, pattern) for pattern in SAFE_KEYS)


def config_entries(data: bytes) -> list[tuple[str, str]] | None:
    """The entries of a git config file's text, as git reads them (includes not followed);
    None when git cannot parse it (or is missing)."""
    import tempfile

    with tempfile.NamedTemporaryFile(prefix="sandbox-config-") as copy:
        copy.write(data)
        copy.flush()
        try:
            done = subprocess.run(
                ["git", "config", "--file", copy.name, "--null", "--list"],
                capture_output=True,
                timeout=10,
                check=False,
                cwd="/",
                env={"PATH": os.environ.get("PATH", "/usr/bin:/bin"), **GIT_ENV},
            )
        except (OSError, subprocess.TimeoutExpired):
            return None
    if done.returncode != 0:
        return None
    entries = []
    for item in done.stdout.split(b"\0"):
        if item:
            key, _, value = item.decode("utf-8", "surrogateescape").partition("\n")
            entries.append((key, value))
    return entries


def render(entries: list[tuple[str, str]]) -> str:
    """Entries back as git config text (every value quoted)."""
    lines: list[str] = []
    current = None
    for key, value in entries:
        section, _, rest = key.partition(".")
        sub, _, name = rest.rpartition(".")
        header = f'[{section} "{_escape(sub)}"]' if sub else f"[{section}]"
        if header != current:
            lines.append(header)
            current = header
        lines.append(f'\t{name} = "{_escape(value)}"')
    return "\n".join(lines) + "\n" if lines else ""


def _escape(text: str) -> str:
    text = text.replace("\\", "\\\\").replace('"', '\\"')
    return text.replace("\n", "\\n").replace("\t", "\\t")
