"""Which projects' `.workbench/config.toml` the person trusted, by the exact bytes they read.

A project's config can add allow rules, which let actions run unasked; an agent that manages to
write that file (or a repository someone cloned) must not choose them. So a project file's
allow rules apply only once the person trusted that file's exact content: a record maps the
file's path (under the resolved workspace, links not followed) to the SHA-256 of its bytes. A
changed file is untrusted again. Its deny and ask rules apply either way (they only make the
policy stricter).

The records live in the user's data dir (`<data>/trust/projects.json`: the file 0600 in a 0700
folder, replaced atomically), outside every sandbox: a record the agent could write would be no
record. `trust`, `untrust` and `is_trusted` read and write them; `keep_trust` carries a trust
over an edit the person made themselves ("always allow" -> this project, removing a rule).
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import tempfile
import tomllib
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, field
from pathlib import Path

from workbench import paths

RECORDS = Path("trust") / "projects.json"
"""The records' file, under the user's data dir."""
TRUST_HINT = "workbench policy trust"
"""The command that trusts a project's config after review (`--workspace DIR`)."""


@dataclass(frozen=True)
class ProjectTrust:
    """A project config as it was read, and whether its exact content is trusted."""

    path: Path
    """The file, under the resolved workspace (the key of its record)."""
    digest: str
    """SHA-256 of the bytes read (and parsed)."""
    trusted: bool
    rules: dict[str, list[str]] = field(default_factory=dict)
    """The file's rules as written: `allow`, `ask`, `deny` (the ones it has)."""
    store: Path | None = None
    """The records file that was asked (None: the default one)."""

    @property
    def withheld(self) -> list[str]:
        """The allow rules not applied because the content is not trusted."""
        return [] if self.trusted else list(self.rules.get("allow", []))


def digest_of(data: bytes) -> str:
    """The SHA-256 (hex) that a trust record holds for content `data`."""
    return hashlib.sha256(data).hexdigest()


def records_file(env: Mapping[str, str] | None = None) -> Path:
    """Where the trust records are kept (the user's data dir)."""
    return paths.data_dir(env) / RECORDS


def _key(path: Path) -> str:
    """The record's key: the absolute path as given, links not followed (callers pass it under
    the resolved workspace). A `.workbench` linked to another project's, which the person
    trusted there, is not trusted here by the way."""
    return os.path.abspath(Path(path).expanduser())


def _read(store: Path | None) -> dict[str, str]:
    """The records; none when the file is missing, unreadable or not ours to trust."""
    target = store or records_file()
    try:
        fd = os.open(target, os.O_RDONLY | os.O_NOFOLLOW)
    except OSError:
        return {}
    with os.fdopen(fd, "rb") as handle:
        info = os.fstat(handle.fileno())
        if info.st_uid != os.getuid() or info.st_mode & 0o022:
            return {}  # someone else could have written it: it vouches for nothing
        try:
            data = json.loads(handle.read().decode("utf-8"))
        except (UnicodeDecodeError, ValueError):
            return {}
    records = data.get("projects", {}) if isinstance(data, dict) else {}
    return {str(k): str(v) for k, v in records.items()} if isinstance(records, dict) else {}


def _write(records: Mapping[str, str], store: Path | None) -> None:
    """Replace the records file in one step (0600 in a 0700 folder)."""
    target = store or records_file()
    target.parent.mkdir(mode=0o700, parents=True, exist_ok=True)
    os.chmod(target.parent, 0o700)
    text = json.dumps({"v": 1, "projects": dict(sorted(records.items()))}, indent=1) + "\n"
    fd, temp = tempfile.mkstemp(dir=target.parent, prefix=".projects.", suffix=".tmp")
    try:
        os.fchmod(fd, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        os.replace(temp, target)
    except BaseException:
        Path(temp).unlink(missing_ok=True)
        raise


def is_trusted(path: Path, data: bytes, store: Path | None = None) -> bool:
    """Whether the person trusted the project file `path` with exactly the content `data`."""
    return _read(store).get(_key(path)) == digest_of(data)


def trust(path: Path, data: bytes, store: Path | None = None) -> None:
    """Record that the person trusts `path` with the content `data` (the bytes they saw)."""
    record(path, digest_of(data), store)


def record(path: Path, digest: str, store: Path | None = None) -> None:
    """Record that the person trusts `path` with the content whose SHA-256 is `digest`."""
    records = _read(store)
    records[_key(path)] = digest
    _write(records, store)


def untrust(path: Path, store: Path | None = None) -> bool:
    """Forget the trust in `path`; False when there was none."""
    records = _read(store)
    if records.pop(_key(path), None) is None:
        return False
    _write(records, store)
    return True


def _bytes_of(path: Path) -> bytes | None:
    try:
        return Path(path).read_bytes()
    except OSError:
        return None


def _allows(data: bytes) -> bool:
    """Whether project config content `data` has allow rules (unreadable: assume it has)."""
    try:
        security = tomllib.loads(data.decode("utf-8-sig")).get("security", {})
    except (UnicodeDecodeError, tomllib.TOMLDecodeError):
        return True
    return not isinstance(security, dict) or bool(security.get("allow"))


@contextlib.contextmanager
def keep_trust(path: Path, store: Path | None = None) -> Iterator[None]:
    """Around an edit the person makes to the project file `path`: if its content was trusted
    before (or it did not exist, or had no allow rules), the new content is trusted too. A file
    with untrusted allow rules stays untrusted, so rules someone else put there are never
    trusted by the way."""
    before = _bytes_of(path)
    trusted_before = before is None or not _allows(before) or is_trusted(path, before, store)
    yield
    after = _bytes_of(path)
    if trusted_before and after is not None and after != before:
        trust(path, after, store)


def shown(text: str) -> str:
    """`text` from a project file as one safe line: quoted, control characters escaped."""
    return json.dumps(text, ensure_ascii=False)


def untrusted_notice(state: ProjectTrust, workspace: Path) -> str:
    """What a person is told about an untrusted project file (headless: on standard error)."""
    rules = ", ".join(shown(rule) for rule in state.withheld)
    return (
        f"project config {shown(str(state.path))} is not trusted (new, or changed since you "
        f"trusted it): its allow rules are not applied: {rules}. Its deny and ask rules apply. "
        f"Review the file, then trust it with `{TRUST_HINT} --workspace {shown(str(workspace))}`"
        " or run with --trust-project."
    )
