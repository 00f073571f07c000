"""docs/architecture.md's code map names every module of index/, impact/ and
daemon/ (issue 40): a module added or split off without its line in the map
fails here, and so does a line naming a module that is gone."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[1]
PACKAGES = ("index", "impact", "daemon")
ARCHITECTURE = ROOT / "docs" / "architecture.md"


def package_sections(text: str) -> dict[str, str]:
    """Each package's part of the code map: its `### `pkg/`` heading to the next heading."""
    code_map = text.split("\n## Code map\n", 1)[1].split("\n## ", 1)[0]
    parts = re.split(r"^### `([\w/]+)/`.*$", code_map, flags=re.M)
    return dict(zip(parts[1::2], parts[2::2]))


def named_modules(section: str, package: str) -> set[str]:
    """The package's module files a section names in backticks (`live.py`,
    `memory/api.py`; not another folder's, such as `bench/embed_train.py`)."""
    names = set()
    for name in re.findall(r"`([\w/]+\.py)`", section):
        folder, _, file = name.rpartition("/")
        if not folder or (ROOT / package / folder).is_dir():
            names.add(file)
    return names


def modules(package: str) -> list[Path]:
    return sorted(path for path in (ROOT / package).rglob("*.py")
                  if path.name != "__init__.py" and "__pycache__" not in path.parts)


def unnamed(package: str, section: str) -> list[str]:
    named = named_modules(section, package)
    missing = []
    for path in modules(package):
        relative = path.relative_to(ROOT / package)
        folders_named = all(f"`{'/'.join(relative.parts[:i + 1])}/`" in section
                            for i in range(len(relative.parts) - 1))
        if path.name not in named or not folders_named:
            missing.append(str(relative))
    return missing


@pytest.mark.parametrize("package", PACKAGES)
def test_every_module_is_in_the_code_map(package: str):
    sections = package_sections(ARCHITECTURE.read_text(encoding="utf-8"))
    assert package in sections, f"docs/architecture.md's code map has no `{package}/` section"
    missing = unnamed(package, sections[package])
    assert not missing, (f"docs/architecture.md's code map, `{package}/`, does not name: {missing} "
                         "(add a line: `name.py` — what it owns)")


@pytest.mark.parametrize("package", PACKAGES)
def test_the_code_map_names_no_module_that_is_gone(package: str):
    section = package_sections(ARCHITECTURE.read_text(encoding="utf-8"))[package]
    present = {path.name for path in (ROOT / package).rglob("*.py")}
    gone = sorted(named_modules(section, package) - present)
    assert not gone, f"docs/architecture.md's code map, `{package}/`, names modules that do not exist: {gone}"


def test_the_check_sees_a_module_missing_from_a_map():
    """The check itself: a map without one of index/'s modules, or one naming a
    nested module without its folder, is caught."""
    section = package_sections(ARCHITECTURE.read_text(encoding="utf-8"))["index"]
    assert unnamed("index", section.replace("`live.py`", "`follower`")) == ["live.py"]
    assert "memory/api.py" in unnamed("index", section.replace("`memory/`", "memory"))


def test_every_subpackage_is_installed():
    # pyproject names the packages a wheel holds: a subpackage missing there
    # works in the editable checkout and is absent from an installed ctxls.
    import tomllib

    root = Path(__file__).resolve().parent.parent
    listed = set(tomllib.loads((root / "pyproject.toml").read_text())["tool"]["setuptools"]["packages"])
    found = {"ctxls" + "".join("." + part for part in init.parent.relative_to(root).parts)
             for top in ("daemon", "index", "impact") for init in (root / top).rglob("__init__.py")}
    assert found | {"ctxls"} == listed
