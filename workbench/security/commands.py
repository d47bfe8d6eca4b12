"""What we know about particular commands: their options, the commands they wrap, the code
they run and the files they touch. The risks a command's name and arguments alone tell are in
`command_risks.py`."""

from __future__ import annotations

import posixpath
import re
from collections.abc import Iterable

from workbench.security.shell import DYNAMIC

MAX_DEPTH = 8
"""How deep code inside code (`sh -c "eval '…'"`) is followed before it counts as HIGH."""
MAX_WRAPPERS = 32
"""How many wrappers around one command (`sudo nice timeout 5 …`) are followed."""

PRIVILEGE = frozenset({"sudo", "doas", "su", "pkexec", "runuser", "chroot", "setpriv", "sg"})
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "yash", "fish", "rbash"})
DOWNLOADERS = frozenset({"curl", "wget", "fetch", "aria2c", "nc", "ncat", "netcat", "socat"})
NETWORK = DOWNLOADERS | {"ssh", "scp", "sftp", "telnet", "ftp", "tftp", "lftp", "http", "https"}
RAW_NETWORK = frozenset({"nc", "ncat", "netcat", "socat", "telnet", "ftp", "tftp", "lftp"})
CHANGE = {
    "chmod": "the permissions of",
    "chown": "the owner of",
    "chgrp": "the group of",
    "chattr": "the attributes of",
    "setfacl": "the access rules of",
}
_INTERPRETERS = (
    (re.compile(r"^(python|pypy)[0-9.]*$"), "python"),
    (re.compile(r"^perl[0-9.]*$"), "perl"),
    (re.compile(r"^(ruby|irb)[0-9.]*$"), "ruby"),
    (re.compile(r"^(node|nodejs|bun|deno)$"), "node"),
    (re.compile(r"^php[0-9.]*$"), "php"),
    (re.compile(r"^lua(jit)?[0-9.]*$"), "lua"),
    (re.compile(r"^[gmn]?awk$"), "awk"),
    (re.compile(r"^(Rscript|osascript|tclsh|pwsh)$"), "other"),
)
_CODE_FLAGS = {
    "python": ("-c",),
    "perl": ("-e", "-E"),
    "ruby": ("-e",),
    "node": ("-e", "--eval", "-p", "--print", "eval"),
    "php": ("-r",),
    "lua": ("-e",),
    "other": ("-e",),
}
_VALUE_FLAGS = {
    "python": ("-W", "-X", "-Q"),
    "perl": ("-I", "-M", "-m"),
    "ruby": ("-I", "-r"),
    "node": ("-r", "--require", "--import", "--loader"),
    "awk": ("-F", "-v", "-f"),
}

VALUE_OPTIONS: dict[str, tuple[str, ...]] = {
    "cp": ("-t", "--target-directory", "-S", "--suffix"),
    "mv": ("-t", "--target-directory", "-S", "--suffix"),
    "ln": ("-t", "--target-directory", "-S", "--suffix"),
    "install": ("-t", "-m", "--mode", "-o", "--owner", "-g", "--group", "-S"),
    "rsync": ("-e", "--rsh", "--exclude", "--include", "--filter", "-f", "--chmod"),
    "scp": ("-P", "-i", "-o", "-F", "-c", "-l", "-J"),
    "truncate": ("-s", "--size", "-r", "--reference"),
    "shred": ("-n", "--iterations", "-s", "--size"),
    "chmod": ("--reference",),
    "chown": ("--reference", "--from"),
    "chgrp": ("--reference",),
    "setfacl": ("-m", "-x", "-M", "-X", "--modify", "--remove"),
}

# name -> (options that take a value, operands to skip before the wrapped command)
_WRAPPED: dict[str, tuple[tuple[str, ...], int]] = {
    "command": (("",), 0),
    "builtin": (("",), 0),
    "exec": (("-a",), 0),
    "nohup": (("",), 0),
    "time": (("-f", "--format", "-o", "--output"), 0),
    "nice": (("-n", "--adjustment"), 0),
    "ionice": (("-c", "--class", "-n", "--classdata", "-p", "-P", "-u"), 0),
    "timeout": (("-s", "--signal", "-k", "--kill-after"), 1),
    "stdbuf": (("-i", "-o", "-e", "--input", "--output", "--error"), 0),
    "setsid": (("",), 0),
    "chroot": (("--userspec", "--groups"), 1),
    "sudo": (("-u", "-g", "-C", "-D", "-h", "-p", "-r", "-t", "-U", "-T", "--user", "--group"), 0),
    "doas": (("-u", "-C"), 0),
    "pkexec": (("--user",), 0),
    "runuser": (("-u", "-g", "-G", "--user", "--group"), 0),
    "setpriv": (("--reuid", "--regid", "--groups", "--inh-caps", "--bounding-set"), 0),
    "xargs": (("-I", "-i", "-n", "-L", "-P", "-d", "-E", "-s", "-a", "--arg-file", "-l"), 0),
    "busybox": (("",), 0),
    "toybox": (("",), 0),
    "flock": (("-w", "--timeout", "-E", "--conflict-exit-code"), 1),
    "unshare": (("--map-user", "--map-group", "--propagation", "-S", "-G"), 0),
    "nsenter": (("-t", "--target", "-S", "-G", "--setuid", "--setgid"), 0),
    "strace": (("-o", "-e", "-p", "-s", "-u", "-E", "-I", "-b", "-O", "-S", "-P", "-a"), 0),
    "ltrace": (("-o", "-e", "-p", "-s", "-u", "-n", "-a"), 0),
    "firejail": (("",), 0),
    "proxychains": (("-f",), 0),
    "proxychains4": (("-f",), 0),
    "torsocks": (("-u", "-p", "-a", "-P"), 0),
    "xvfb-run": (("-n", "-s", "-e", "-f", "-p", "--server-num", "--server-args"), 0),
    "catchsegv": (("",), 0),
    "unbuffer": (("",), 0),
    "caffeinate": (("",), 0),
    "taskset": (("",), 1),
    "chrt": (("",), 1),
    "numactl": (("-C", "-N", "-m", "-i", "-p"), 0),
    "systemd-run": (("-p", "--property", "-u", "--unit", "-E", "--setenv", "--uid", "--gid"), 0),
    "watch": (("-n", "--interval", "-d", "-g", "-e", "-c"), 0),
    "parallel": (("-j", "--jobs", "-S", "--sshlogin", "-a", "--arg-file"), 0),
    "env": (("-u", "--unset", "-C", "--chdir", "-S", "--split-string"), 0),
    "su": (("-c", "--command", "-s", "--shell", "-g", "-G", "-w"), 0),
    "sg": (("",), 1),
    "script": (("-c", "--command", "-T", "-t", "-I", "-O", "-B", "-E"), 0),
    "tmux": (("-c", "-d", "-s", "-n", "-t", "-S", "-L", "-f"), 0),
    "screen": (("-S", "-c", "-L", "-p", "-X"), 0),
}
WRAPPERS = frozenset(_WRAPPED)
_SHELL_STRING = {"su": "-c", "script": "-c", "sg": "-c", "flock": "-c"}
_JOINS_ARGS = frozenset({"watch", "tmux", "screen", "systemd-run"})
"""Wrappers that run their arguments joined with spaces by a shell."""


def base_name(name: str) -> str:
    """The command's name without its directory."""
    return posixpath.basename(name.rstrip("/")) or name


def interpreter(base: str) -> str | None:
    """The language `base` interprets (python, perl, ruby, node, php, lua, awk), if any."""
    return next((lang for pattern, lang in _INTERPRETERS if pattern.match(base)), None)


def is_option(word: str) -> bool:
    """True for `-x`, `--long`, not for `-` or `--`."""
    return word.startswith("-") and word not in ("-", "--")


def in_cluster(word: str, letters: str) -> bool:
    """True when `word` is a cluster of short options (`-rf`) holding one of `letters`."""
    return (
        word.startswith("-")
        and not word.startswith("--")
        and word[1:].isalpha()
        and any(letter in word[1:] for letter in letters)
    )


def split_options(args: list[str], with_value: Iterable[str]) -> tuple[list[str], list[str]]:
    """(options, operands): options may come anywhere until `--`; `with_value` take the next."""
    takes = set(with_value)
    options: list[str] = []
    operands: list[str] = []
    words = iter(args)
    for word in words:
        if word == "--":
            operands.extend(words)
            break
        if is_option(word):
            options.append(word)
            if word in takes:
                next(words, None)
        else:
            operands.append(word)
    return options, operands


def option_value(args: list[str], names: Iterable[str]) -> str | None:
    """The value of the first of `names` given (`-t X`, `-tX`, `--name=X`, `--name X`)."""
    for i, word in enumerate(args):
        for name in names:
            if word == name:
                return args[i + 1] if i + 1 < len(args) else None
            if name.startswith("--") and word.startswith(name + "="):
                return word[len(name) + 1 :]
            if not name.startswith("--") and word.startswith(name) and len(word) > len(name):
                return word[len(name) :]
    return None


def _leading_options(args: list[str], with_value: tuple[str, ...]) -> int:
    """How many words the options before the first operand take."""
    i = 0
    while i < len(args) and is_option(args[i]):
        word = args[i]
        i += 1
        if word in with_value or (word.startswith("--") and "=" not in word and word in with_value):
            i += 1
    if i < len(args) and args[i] == "--":
        i += 1
    return i


def unwrap(base: str, args: list[str]) -> list[str] | str | None:
    """What a wrapper runs: a command's words, shell code (a str), or None (nothing)."""
    with_value, skip = _WRAPPED.get(base, ((), 0))
    if base == "command" and any(a in ("-v", "-V") for a in args[:2]):
        return None
    if base in _SHELL_STRING:
        code = option_value(args, (_SHELL_STRING[base], "--command"))
        if code is not None:
            return code
    if base == "env":
        return _env_command(args)
    if base == "parallel":
        head = args[: args.index(":::")] if ":::" in args else args
        rest = head[_leading_options(head, with_value) :]
        return " ".join(rest) if rest else None
    if base in ("tmux", "screen"):
        rest = [a for a in args if not is_option(a)]
        if base == "tmux":
            rest = rest[1:] if rest and rest[0] in ("new", "new-session", "new-window") else []
        return " ".join(rest) if rest else None
    start = _leading_options(args, with_value) + skip
    if base == "su":
        return None
    rest = args[start:]
    if base in _JOINS_ARGS:
        return " ".join(rest) if rest else None
    return rest or None


def _env_command(args: list[str]) -> list[str] | str | None:
    split = option_value(args, ("-S", "--split-string"))
    if split is not None:
        return split
    i = 0
    while i < len(args):
        word = args[i]
        if word in ("-u", "--unset", "-C", "--chdir"):
            i += 2
        elif is_option(word) or word == "--" or re.match(r"^[A-Za-z_][A-Za-z0-9_]*=", word):
            i += 1
        else:
            return args[i:]
    return None


def dumps_environment(words: list[str]) -> bool:
    """True when the command prints the environment (`env`, `printenv`, `set`, `export -p`)."""
    base, args = base_name(words[0]), words[1:]
    if base in ("env", "printenv"):
        return base == "printenv" or _env_command(args) is None
    if base in ("set", "export", "declare", "typeset"):
        return not args or args[0] in ("-p", "-x", "-px")
    return any(re.match(r"^/proc/[^/]+/environ$", a.replace(DYNAMIC, "X")) for a in args)


def uses_network(words: list[str]) -> bool:
    """True when the command talks to the network."""
    return base_name(words[0]) in NETWORK or any(
        a.startswith(("http://", "https://", "/dev/tcp/")) for a in words[1:]
    )


def produced_words(words: list[str]) -> list[str]:
    """The words an upstream command is known to print (`echo`, `printf`, `find`'s starts)."""
    base = base_name(words[0]) if words else ""
    if base in ("echo", "printf"):
        return [w for arg in words[1:] if not is_option(arg) for w in arg.split()]
    if base == "find":
        return find_starts(words[1:])
    return []


def find_starts(args: list[str]) -> list[str]:
    """The paths `find` starts from (default `.`)."""
    starts = []
    for word in args:
        if word.startswith(("-", "(", "!")) and word not in ("-H", "-L", "-P"):
            break
        if word not in ("-H", "-L", "-P"):
            starts.append(word)
    return starts or ["."]


def find_actions(args: list[str]) -> list[tuple[str, list[str]]]:
    """`find`'s -exec/-execdir/-ok/-okdir commands and -fprint* files, with their words."""
    found: list[tuple[str, list[str]]] = []
    i = 0
    while i < len(args):
        word = args[i]
        if word in ("-exec", "-execdir", "-ok", "-okdir"):
            end = i + 1
            while end < len(args) and args[end] not in (";", "+"):
                end += 1
            found.append((word, args[i + 1 : end]))
            i = end
        elif word in ("-fprint", "-fprint0", "-fprintf", "-fls"):
            found.append((word, args[i + 1 : i + 2]))
        i += 1
    return found


def shell_invocation(args: list[str]) -> tuple[str | None, str | None, bool]:
    """(code of -c, script file, reads its program from standard input) of a shell's args."""
    i = 0
    takes_code = False
    while i < len(args) and (args[i].startswith(("-", "+")) and args[i] not in ("-", "--")):
        word = args[i]
        i += 1
        if word in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file"):
            i += 1
        elif not word.startswith("--") and "c" in word[1:]:
            takes_code = True
        elif not word.startswith("--") and "s" in word[1:]:
            return None, None, True
    if i < len(args) and args[i] in ("-", "--"):
        i += 1
    rest = args[i:]
    if takes_code:
        return (rest[0] if rest else ""), None, False
    if rest:
        return None, rest[0], False
    return None, None, True


def interpreter_invocation(language: str, args: list[str]) -> tuple[str | None, str | None, bool]:
    """(inline code, script file, reads its program from standard input) of an interpreter."""
    flags = _CODE_FLAGS.get(language, ())
    with_value = _VALUE_FLAGS.get(language, ())
    i = 0
    if language == "awk":
        if option_value(args, ("-f",)) is not None:
            return None, option_value(args, ("-f",)), False
        rest = args[_leading_options(args, with_value) :]
        return (rest[0] if rest else None), None, False
    while i < len(args):
        word = args[i]
        if word in flags:
            return (args[i + 1] if i + 1 < len(args) else ""), None, False
        cluster = re.match(r"^-([a-zA-Z]*)([ceErp])$", word)
        if cluster and ("-" + cluster.group(2)) in flags:
            return (args[i + 1] if i + 1 < len(args) else ""), None, False
        if word == "-m" and language == "python":
            return None, None, False
        if word == "-":
            return None, None, True
        if not is_option(word):
            return None, word, False
        i += 2 if word in with_value else 1
    return None, None, True


def operands_after_code(args: list[str]) -> list[str]:
    """The file operands after `-e CODE` (for `perl -pi -e CODE FILES`)."""
    for i, word in enumerate(args):
        if re.match(r"^-[a-zA-Z]*[eE]$", word):
            return [a for a in args[i + 2 :] if not is_option(a)]
    return []


def sed_files(args: list[str]) -> list[str]:
    """The files `sed` edits: the operands after its script."""
    has_script = any(a in ("-e", "-f") or a.startswith(("--expression", "--file")) for a in args)
    _, operands = split_options(args, ("-e", "-f", "--expression", "--file", "-l"))
    return operands if has_script else operands[1:]


def download_targets(base: str, args: list[str]) -> list[str]:
    """Where `curl`/`wget` save what they download (when told)."""
    names: tuple[str, ...] = ("-o", "--output") if base == "curl" else ("-O", "--output-document")
    names += ("-P", "--directory-prefix") if base == "wget" else ()
    value = option_value(args, names)
    return [value] if value and value != "-" else []


def upload_sources(base: str, args: list[str]) -> list[str]:
    """The local files `curl`/`wget` send (`-d @FILE`, `-F f=@FILE`, `-T FILE`, `--post-file`)."""
    found: list[str] = []
    data = ("-d", "--data", "--data-binary", "--data-ascii", "--data-urlencode", "--json")
    form = ("-F", "--form")
    for i, word in enumerate(args):
        value = args[i + 1] if i + 1 < len(args) else ""
        name, eq, inline = word.partition("=")
        if eq and name.startswith("--"):
            word, value = name, inline
        elif re.match(r"^-[dFT].", word):
            word, value = word[:2], word[2:]
        if base == "curl" and word in data and "@" in value:
            found.append(value.split("@", 1)[1])
        elif base == "curl" and word in form and re.search(r"=[@<]", value):
            found.append(re.split(r"=[@<]", value, maxsplit=1)[1].split(";")[0])
        elif (base == "curl" and word in ("-T", "--upload-file")) or (
            base == "wget" and word in ("--post-file", "--body-file")
        ):
            found.append(value)
    return [f for f in found if f]


def git_subcommand(args: list[str]) -> tuple[str, list[str]]:
    """git's subcommand after its global options, and the words after it."""
    i = 0
    while i < len(args) and args[i].startswith("-"):
        i += 2 if args[i] in ("-C", "-c", "--git-dir", "--work-tree", "--namespace") else 1
    return (args[i], args[i + 1 :]) if i < len(args) else ("", [])
