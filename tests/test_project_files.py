"""
The project's files that say what the project holds: the docs' layout page and index against the package, the
extras of setup.cfg against what gymnasium installs.
"""

import configparser
import importlib.metadata
import re
from pathlib import Path

from packaging.requirements import Requirement

import sb3_gpg

ROOT = Path(__file__).resolve().parent.parent
LAYOUT_PAGE = ROOT / "docs" / "misc" / "development.rst"
# The layout block: a folder of the repository at three spaces, one line per file under it at five (its path relative to
# the folder first); deeper lines continue the line above
LAYOUT_FOLDER = re.compile(r"^   (\S+)/\s*$")
LAYOUT_FILE = re.compile(r"^     (\S+)(\s|$)")


def layout_modules() -> dict[str, set[str]]:
    """:return: the Python files that the layout page names, per folder of the repository"""
    lines = LAYOUT_PAGE.read_text().split("\n::\n", 1)[1].splitlines()
    named: dict[str, set[str]] = {}
    folder = None
    for line in lines:
        if line.strip() and not line.startswith("   "):
            break  # the end of the literal block
        if match := LAYOUT_FOLDER.match(line):
            folder = match.group(1)
            named.setdefault(folder, set())
        elif (match := LAYOUT_FILE.match(line)) and folder is not None and match.group(1).endswith(".py"):
            named[folder].add(match.group(1))
    return named


def test_layout_page_names_every_module_and_only_modules_that_exist():
    named = layout_modules()
    assert {"sb3_gpg", "scripts"} <= {folder for folder, files in named.items() if files}, named.keys()
    for folder, files in named.items():
        tree = {path.relative_to(ROOT / folder).as_posix() for path in (ROOT / folder).rglob("*.py")}
        missing = {path for path in tree if not path.endswith("__init__.py")} - files
        assert not missing, f"{LAYOUT_PAGE.name}: {folder}/ has modules the page does not name: {sorted(missing)}"
        assert not files - tree, f"{LAYOUT_PAGE.name} names modules that {folder}/ does not have: {sorted(files - tree)}"


def test_docs_index_names_every_algorithm():
    algorithms = [name for name in sb3_gpg.__all__ if name.endswith("GPG")]
    assert len(algorithms) == 4, algorithms
    index = (ROOT / "docs" / "index.rst").read_text()
    assert not [name for name in algorithms if f"``{name}``" not in index]


def test_extras_install_the_pygame_that_gymnasium_installs():
    """pygame and pygame-ce install the same import name: an extra that lists the one gymnasium does not use gets both."""
    gymnasium_pygames = {
        Requirement(requirement).name
        for requirement in importlib.metadata.requires("gymnasium") or []
        if Requirement(requirement).name.startswith("pygame")
    }
    assert len(gymnasium_pygames) == 1, gymnasium_pygames
    setup = configparser.ConfigParser()
    setup.read(ROOT / "setup.cfg")
    for extra, requirements in setup["options.extras_require"].items():
        names = {Requirement(line).name for line in requirements.splitlines() if line.strip() and not line.startswith("#")}
        pygames = {name for name in names if name.startswith("pygame")}
        assert pygames <= gymnasium_pygames, f"the {extra} extra installs {sorted(pygames)}, gymnasium {gymnasium_pygames}"


def test_code_cites_no_issue_of_this_project():
    """Why a line is as it is belongs beside it, not in an issue: only upstream issues (with their link or name) are cited."""
    citation = re.compile(r"\bissues?\s*#?\d+", re.IGNORECASE)
    upstream = ("github.com", "GH issue")
    files = [path for folder in ("sb3_gpg", "sb3_gpg_bench", "scripts", "tests") for path in (ROOT / folder).rglob("*.py")]
    files += list((ROOT / "sb3_gpg").rglob("*.yml")) + list((ROOT / "benchmarks").rglob("*.sh"))
    cited = [
        f"{path.relative_to(ROOT)}:{number}"
        for path in files
        for number, line in enumerate(path.read_text().splitlines(), 1)
        if citation.search(line) and not any(source in line for source in upstream)
    ]
    assert not cited, cited
