"""Protected paths inside the workspace (`.git/config`, `.git/hooks/`, `.git/info/`,
`.git/modules/*/config` and `hooks`, `.gitmodules`, `.workbench/`): every way of writing them the
host-safety probe found rated LOW is HIGH with its reason, and everyday git stays LOW."""

from __future__ import annotations

import pytest

from workbench.config.schema import SecurityConfig
from workbench.events import FileEditAction, IPythonAction
from workbench.security.analyzer import analyze_command, analyze_path_edit, analyze_python
from workbench.security.paths import PROTECTED_GLOBS, holds_protected, protected
from workbench.security.policy import check

WS = "/home/me/proj"
PROTECTED = "a protected path"
REPO_CONFIG = "the repository's git config (.git/config), a protected path"
UNKNOWN_NAMES = "names it writes are not known before it runs"
RUNS = "git run a program"

# Each form: the command, and a fragment its reasons hold.
FORMS = [
    # git config writes the repository's config, whatever the key.
    ("git config include.path ../evil.cfg", REPO_CONFIG),
    ("git config --add include.path evil.cfg", REPO_CONFIG),
    ("git config includeIf.gitdir:/.path ../evil.cfg", "includeIf"),
    ("git config core.pager 'sh -c id'", RUNS),
    ("git config diff.external ./x.sh", RUNS),
    ("git config pager.log 'sh -c id'", RUNS),
    ("git config core.fsmonitor ./x.sh", RUNS),
    ("git config core.hooksPath ./hooks", RUNS),
    ("git config user.name bob", REPO_CONFIG),
    ("git config --local user.name bob", REPO_CONFIG),
    ("git config --unset core.pager", REPO_CONFIG),
    ("git config set core.pager x", REPO_CONFIG),
    ("git config --edit", REPO_CONFIG),
    ("git -C sub config user.name bob", REPO_CONFIG),
    ("git config --global user.name bob", "global git config"),
    ("git config --system core.pager x", "global git config"),
    ("git config --file .git/config core.bare false", PROTECTED),
    ("git config -f evil.cfg core.fsmonitor ./x.sh", RUNS),
    ("git remote add origin ../x", REPO_CONFIG),
    ("git branch --set-upstream-to=origin/main", REPO_CONFIG),
    ("git submodule add ../x sub", ".gitmodules"),
    ("git submodule update --init", ".gitmodules"),
    # Settings that make git run a program, given for one command.
    ("git -c core.fsmonitor='sh -c id' status", RUNS),
    ("git -c diff.external=./x.sh diff", RUNS),
    ("git -c include.path=../evil.cfg status", RUNS),
    ("git --config-env=core.pager=EVIL log", RUNS),
    ("GIT_CONFIG_COUNT=1 GIT_CONFIG_KEY_0=core.fsmonitor GIT_CONFIG_VALUE_0=x git status", RUNS),
    ("env GIT_CONFIG_KEY_0=core.pager GIT_CONFIG_VALUE_0=x GIT_CONFIG_COUNT=1 git log", RUNS),
    ("env -u PAGER GIT_PAGER='sh -c id' git log", RUNS),
    ("export GIT_CONFIG_GLOBAL=./evil.cfg", "GIT_CONFIG_GLOBAL"),
    ("GIT_SSH_COMMAND='sh -c id' git fetch", RUNS),
    ("git fetch --upload-pack='sh -c id' origin", RUNS),
    ("git init --template=./tpl", "template"),
    ("git init --template ./tpl", "template"),
    ("git clone --template=./tpl ../a b", "template"),
    ("git clone -c core.fsmonitor=./x ../a b", RUNS),
    # Copies, moves and links.
    ("cp -r payload/hooks .git/", PROTECTED),
    ("cp -r payload/hooks .git", "holds protected paths"),
    ("cp -a tpl/. .git/", UNKNOWN_NAMES),
    ("cp payload/* .git/", PROTECTED),
    ("cp x .git/config", PROTECTED),
    ("mv x .git/hooks", PROTECTED),
    ("mv hooks .git/", PROTECTED),
    ("mv .git/hooks/pre-commit x", PROTECTED),
    ("ln -s ../x.sh .git/hooks/pre-commit", PROTECTED),
    ("ln -sf /tmp/x .git/config", PROTECTED),
    ("install -m755 x .git/hooks/pre-commit", PROTECTED),
    ("rsync -a payload/ .git/", UNKNOWN_NAMES),
    ("rsync -a hooks .git/", PROTECTED),
    ("find . -name x -exec cp {} .git/hooks/ \\;", PROTECTED),
    ("cd .git/hooks && cp ../../x pre-commit", PROTECTED),
    ("touch .git/hooks/pre-commit", PROTECTED),
    ("mkdir -p .workbench", PROTECTED),
    ("chmod +x .git/hooks/pre-commit", PROTECTED),
    ("rm .gitmodules", PROTECTED),
    ("rm -r .git", "holds protected paths"),
    # Archives: into .git, or into the workspace with names not known before it runs.
    ("tar -C .git -xf x.tar", UNKNOWN_NAMES),
    ("tar -xf x.tar -C .git", UNKNOWN_NAMES),
    ("tar xf x.tar -C .git/hooks", PROTECTED),
    ("tar -xzf x.tgz", UNKNOWN_NAMES),
    ("tar -xf x.tar .workbench/config.toml", PROTECTED),
    ("bsdtar -xf x.tar -C .git", UNKNOWN_NAMES),
    ("unzip -o x.zip", UNKNOWN_NAMES),
    ("unzip x.zip -d .workbench", PROTECTED),
    ("7z x x.7z -o.git", UNKNOWN_NAMES),
    # Redirections and editing commands.
    ("echo x > .git/config", PROTECTED),
    ("echo x >> .git/info/attributes", PROTECTED),
    ("echo '[submodule \"a\"]' > .gitmodules", PROTECTED),
    ("echo x > .git/modules/sub/config", PROTECTED),
    ("cp x .git/modules/sub/hooks/pre-commit", PROTECTED),
    ("echo x | tee .git/config", PROTECTED),
    ("echo x | tee -a .gitmodules", PROTECTED),
    ("dd if=x of=.git/config", PROTECTED),
    ("sed -i s/a/b/ .git/config", PROTECTED),
    ("perl -pi -e s/a/b/ .git/config", PROTECTED),
    ("truncate -s0 .git/config", PROTECTED),
    ("cd .git && echo x > config", PROTECTED),
    ("cat > .git/hooks/post-checkout <<EOF\nid\nEOF", PROTECTED),
    ("echo x > .git/hoo*/pre-commit", PROTECTED),
    ("mkdir -p .workbench && echo 'allow = [\"*\"]' > .workbench/config.toml", PROTECTED),
    # Interpreters.
    ("python3 -c \"import zipfile; zipfile.ZipFile('x.zip').extractall()\"", UNKNOWN_NAMES),
    ("python3 -c \"import tarfile; tarfile.open('x.tar').extractall('.git')\"", UNKNOWN_NAMES),
    ("python3 -c \"import shutil; shutil.unpack_archive('x.zip', '.git')\"", UNKNOWN_NAMES),
    ("python3 -c \"import shutil; shutil.copy('a', '.workbench/config.toml')\"", PROTECTED),
    ("python3 -c \"import shutil; shutil.copytree('tpl', '.git', dirs_exist_ok=True)\"", "holds"),
    ("python3 -c \"open('.workbench/config.toml', 'w').write('x')\"", PROTECTED),
    ("python3 -c \"import os; os.makedirs('.workbench')\"", PROTECTED),
    ("node -e \"require('fs').writeFileSync('.git/config', 'x')\"", PROTECTED),
    ("python3 -c \"import os; open(os.path.join('.git', 'config'), 'w')\"", PROTECTED),
    ("python3 -c \"from pathlib import Path; (Path('.git') / 'hooks' / 'x').touch()\"", PROTECTED),
    # A link to a protected path is a way to write it; a path known only when it runs that
    # ends like one may be one.
    ("ln -s .git g", "holds protected paths"),
    ("ln .git/config c", PROTECTED),
    ("echo x > $(git rev-parse --git-dir)/hooks/pre-commit", "may be a protected path"),
    ('cp x "$(git rev-parse --git-dir)/config"', "may be a protected path"),
    ("echo x > $D/.workbench/config.toml", "may be a protected path"),
]


@pytest.mark.parametrize(("command", "why"), FORMS)
def test_every_write_under_a_protected_path_is_high_with_its_reason(command: str, why: str) -> None:
    result = analyze_command(command, WS)
    assert result.level == "HIGH", (command, result)
    assert why in result.reason, (command, result.reason)


def test_the_probe_forms_are_all_here() -> None:
    assert len(FORMS) >= 51


@pytest.mark.parametrize(
    "path",
    [
        ".git/config",
        ".git/hooks/pre-commit",
        ".git/info/exclude",
        ".gitmodules",
        ".workbench/config.toml",
        ".git/modules/sub/config",
        ".git/modules/sub/hooks/post-checkout",
    ],
)
def test_the_editor_may_not_write_a_protected_path(path: str) -> None:
    result = analyze_path_edit(f"{WS}/{path}", WS)
    assert result.level == "HIGH" and PROTECTED in result.reason
    assert analyze_path_edit(path, WS).level == "HIGH"  # relative to the workspace too
    # Only a rule naming the exact path may approve it; a folder pattern does not.
    edit = FileEditAction(command="create", path=f"{WS}/{path}", file_text="x")
    config = SecurityConfig(allow=[f"edit:{WS}/*"])
    assert check(edit, "LOW", config, WS).needs_confirmation
    view = FileEditAction(command="view", path=f"{WS}/{path}")
    assert check(view, None, config, WS).risk == "LOW"


def test_python_cells_writing_protected_paths_are_high() -> None:
    cell = "import zipfile\nzipfile.ZipFile('x.zip').extractall()"
    assert UNKNOWN_NAMES in analyze_python(cell, WS).reason
    cell = "from pathlib import Path\nPath('.workbench/config.toml').write_text('x')"
    assert PROTECTED in analyze_python(cell, WS).reason
    assert check(IPythonAction(code=cell), None, SecurityConfig(), WS).needs_confirmation


@pytest.mark.parametrize(
    "command",
    [
        "git status",
        "git add -A",
        "git add app.py && git commit -m 'x'",
        "git commit -am x",
        "git log --oneline",
        "git diff HEAD",
        "git checkout -b feature",
        "git switch -c other",
        "git stash",
        "git stash list",
        "git stash pop",
        "git branch -a",
        "git tag v1",
        "git merge feature",
        "git rebase main",
        "git config --get user.name",
        "git config user.name",
        "git config --list",
        "git config -l --show-origin",
        "git config get user.email",
        "git init",
        "git init && git add -A && git commit -m x && git checkout -b b && git stash list",
        "git -c core.pager=cat log",
        "GIT_PAGER=cat git log -p",
        "git -c user.name=me -c user.email=me@x commit -m x",
        "git clone https://example.com/x.git vendor/x",
        "git submodule update",
        "git remote -v",
        "git worktree list",
        "cat .git/config",
        "ls .git/hooks",
        "grep -r x .git/info",
        "cp -r src/* .",
        "cp a.py .",
        "cp -r sub sub_copy",
        "tar -C build -xf x.tar",
        "tar -xf x.tar data.txt",
        "unzip x.zip -d vendor",
        "unzip -l x.zip",
        "rsync -a src/ backup/",
        "mkdir -p build/out && touch build/out/a.o",
        "ln -s build/out current",
        "echo x > $OUT/config",
        "cat $(git rev-parse --git-dir)/config",
    ],
)
def test_everyday_git_and_files_stay_low(command: str) -> None:
    result = analyze_command(command, WS)
    assert result.level == "LOW", (command, result.reason)


def test_the_protected_set_is_data_and_reads_as_documented() -> None:
    assert ".git/config" in PROTECTED_GLOBS and ".workbench/" in PROTECTED_GLOBS
    assert protected(f"{WS}/.git/hooks/x", WS) == "the repository's hooks"
    assert protected(f"{WS}/.git/HEAD", WS) is None
    assert protected(f"{WS}/.git/objects/ab/cd", WS) is None
    assert protected(f"{WS}/sub/.gitmodules", WS) is None
    assert protected("/elsewhere/.git/config", WS) is None
    assert holds_protected(WS, WS) and holds_protected(f"{WS}/.git", WS)
    assert not holds_protected(f"{WS}/src", WS)
