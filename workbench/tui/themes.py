"""Themes as data: TOML files turned into Textual themes with workbench's own colour variables.

Built-in themes ship in `themes/` (in the wheel: `workbench/themes/`); user themes are `*.toml`
files in the config dir's `themes/` folder and may replace a built-in one by name. A file that
cannot be used is reported (path and reason) and skipped, so one bad file never stops the app.
"""

from __future__ import annotations

import tomllib
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import TYPE_CHECKING, Any

from textual.color import Color, ColorParseError
from textual.theme import Theme

if TYPE_CHECKING:
    from textual.app import App

DEFAULT_THEME = "workbench-dark"
DEFAULT_PYGMENTS = {True: "monokai", False: "friendly"}

APP_VARIABLES: dict[str, str] = {
    "wb-user": "#7fc8ff",
    "wb-agent": "#d8dee9",
    "wb-action": "#ffb86c",
    "wb-observation": "#8fbcbb",
    "wb-error": "#ff6b6b",
    "wb-muted": "#7a8190",
    "wb-border": "#6e7781",
    "wb-diff-added": "#7bd88f",
    "wb-diff-removed": "#ff6b6b",
}
"""Workbench's colour variables with their defaults (for themes that do not set them)."""

_COLOR_KEYS = (
    "primary",
    "secondary",
    "accent",
    "foreground",
    "background",
    "surface",
    "panel",
    "boost",
    "success",
    "warning",
    "error",
)
_TOP_KEYS = {"name", "dark", "pygments", "colors", "variables"}


class ThemeFileError(Exception):
    """A theme file could not be used; the message names the file and what is wrong."""


@dataclass
class LoadedThemes:
    """Themes found in the theme folders, their Pygments styles, and the files that failed."""

    themes: dict[str, Theme] = field(default_factory=dict)
    pygments: dict[str, str] = field(default_factory=dict)
    errors: list[str] = field(default_factory=list)


def builtin_themes_dir() -> Path:
    """The shipped theme folder: `workbench/themes` in a wheel, `themes/` in a source checkout."""
    package = Path(__file__).resolve().parent.parent
    inside = package / "themes"
    return inside if inside.is_dir() else package.parent / "themes"


def _check_color(path: Path, key: str, value: object) -> str:
    if not isinstance(value, str):
        raise ThemeFileError(f'{path}: {key} must be a colour string such as "#5fa8ff"')
    try:
        Color.parse(value)
    except ColorParseError as exc:
        raise ThemeFileError(f"{path}: {key} = {value!r} is not a colour ({exc})") from exc
    return value


def theme_from_data(path: Path, data: Mapping[str, Any]) -> tuple[Theme, str]:
    """A Textual theme and its Pygments style name from a parsed theme file."""
    unknown = sorted(set(data) - _TOP_KEYS)
    if unknown:
        raise ThemeFileError(
            f"{path}: unknown key(s) {', '.join(unknown)}; allowed: {', '.join(sorted(_TOP_KEYS))}"
        )
    name = data.get("name", path.stem)
    if not isinstance(name, str) or not name.strip():
        raise ThemeFileError(f"{path}: name must be a non-empty string")
    dark = data.get("dark", True)
    if not isinstance(dark, bool):
        raise ThemeFileError(f"{path}: dark must be true or false")
    colors = data.get("colors", {})
    variables = data.get("variables", {})
    if not isinstance(colors, dict) or not isinstance(variables, dict):
        raise ThemeFileError(f"{path}: [colors] and [variables] must be tables")
    bad = sorted(set(colors) - set(_COLOR_KEYS))
    if bad:
        raise ThemeFileError(
            f"{path}: unknown colour(s) {', '.join(bad)}; allowed: {', '.join(_COLOR_KEYS)}"
        )
    if "primary" not in colors:
        raise ThemeFileError(f"{path}: [colors] needs at least primary")
    checked = {key: _check_color(path, f"colors.{key}", value) for key, value in colors.items()}
    own = {key: _check_color(path, f"variables.{key}", value) for key, value in variables.items()}
    pygments = data.get("pygments", DEFAULT_PYGMENTS[dark])
    if not isinstance(pygments, str) or not _pygments_style_exists(pygments):
        raise ThemeFileError(f"{path}: pygments = {pygments!r} is not an installed Pygments style")
    theme = Theme(
        name=name.strip(),
        dark=dark,
        variables={**APP_VARIABLES, **own},
        primary=checked["primary"],
        secondary=checked.get("secondary"),
        accent=checked.get("accent"),
        foreground=checked.get("foreground"),
        background=checked.get("background"),
        surface=checked.get("surface"),
        panel=checked.get("panel"),
        boost=checked.get("boost"),
        success=checked.get("success"),
        warning=checked.get("warning"),
        error=checked.get("error"),
    )
    return theme, pygments


def _pygments_style_exists(name: str) -> bool:
    from pygments.styles import STYLE_MAP, get_all_styles  # type: ignore[import-untyped]

    # The built-in names first: listing plugin styles scans every installed package's entry
    # points (~60 ms, before the first paint).
    return name in STYLE_MAP or name in set(get_all_styles())


def load_theme_file(path: Path) -> tuple[Theme, str]:
    """Read one theme file; raises ThemeFileError with an actionable message."""
    try:
        data = tomllib.loads(path.read_text(encoding="utf-8"))
    except OSError as exc:
        raise ThemeFileError(f"{path}: cannot read ({exc.strerror})") from exc
    except (tomllib.TOMLDecodeError, UnicodeDecodeError) as exc:
        raise ThemeFileError(f"{path}: not valid TOML ({exc})") from exc
    return theme_from_data(path, data)


def load_themes(folders: Iterable[Path]) -> LoadedThemes:
    """All themes in `folders` (later folders win on equal names); bad files go to `errors`."""
    loaded = LoadedThemes()
    for folder in folders:
        if not folder.is_dir():
            continue
        for path in sorted(folder.glob("*.toml")):
            try:
                theme, style = load_theme_file(path)
            except ThemeFileError as exc:
                loaded.errors.append(str(exc))
                continue
            loaded.themes[theme.name] = theme
            loaded.pygments[theme.name] = style
    return loaded


def install(app: App[Any], wanted: str, user_themes: Path | None) -> tuple[LoadedThemes, list[str]]:
    """Register the built-in themes and the person's (in `user_themes`) with `app` and use
    `wanted` (the default when it is missing); the themes and the problems to report."""
    folders = [builtin_themes_dir()]
    if user_themes is not None:
        folders.append(user_themes)
    loaded = load_themes(folders)
    for theme in loaded.themes.values():
        app.register_theme(theme)
    problems = list(loaded.errors)
    if wanted in app.available_themes:
        app.theme = wanted
    else:
        problems.append(f"Theme {wanted!r} not found; using {DEFAULT_THEME}.")
        if DEFAULT_THEME in app.available_themes:
            app.theme = DEFAULT_THEME
    return loaded, problems
