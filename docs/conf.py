# Configuration of the Sphinx documentation of sb3-gpg, after sb3-contrib's (docs/conf.py there).
# Build: pip install -e ".[docs]" && sphinx-build -W -b html docs docs/_build/html
import configparser
import functools
import os
import re
import sys
from pathlib import Path

# The package from this checkout, when it is not installed
sys.path.insert(0, os.path.abspath(".."))

# Try to enable the copy button, as sb3-contrib's docs do
try:
    import sphinx_copybutton  # noqa: F401

    enable_copy_button = True
except ImportError:
    enable_copy_button = False

with open(os.path.join(os.path.dirname(__file__), "..", "sb3_gpg", "version.txt")) as file_handler:
    __version__ = file_handler.read().strip()

# -- Project information -----------------------------------------------------

project = "sb3-gpg"
copyright = "2026, the sb3-gpg developers"
author = "the sb3-gpg developers"
version = __version__
release = __version__

# -- General configuration ---------------------------------------------------

extensions = [
    "sphinx.ext.autodoc",
    "sphinx.ext.autosummary",
    "sphinx.ext.mathjax",
    "sphinx.ext.viewcode",
    # Markdown kept in one place and included where the docs need it: CHANGELOG.md, parts of README.md and the
    # committed benchmarks/**/README.md
    "myst_parser",
]
if enable_copy_button:
    extensions.append("sphinx_copybutton")

source_suffix = {".rst": "restructuredtext", ".md": "markdown"}
master_doc = "index"
language = "en"
exclude_patterns = ["_build", "Thumbs.db", ".DS_Store"]
pygments_style = "sphinx"

# Markdown headings get anchors, as on GitHub, so that the included files' own links resolve
myst_heading_anchors = 3
myst_enable_extensions = ["dollarmath"]

autodoc_member_order = "bysource"
autodoc_default_options = {"show-inheritance": True}

# -- Options for HTML output -------------------------------------------------

html_theme = "sphinx_rtd_theme"
html_static_path = ["_static"]
html_title = f"sb3-gpg {__version__}"
htmlhelp_basename = "sb3gpgdoc"


# -- Links to the repository's files ------------------------------------------
# The pages link the repository's files outside docs/ by relative paths, which a repository browser follows from the
# page's source: in reST `benchmarks/swap <../../benchmarks/swap/README.md>`__, in the committed Markdown that the
# pages of docs/benchmarks/ include [the critic diagnosis](../critic_diagnosis/README.md). In the built HTML such a
# path would point outside the site, so each is pointed instead at the docs page that includes the file, or else at the
# file in the repository (setup.cfg's url); a reST page's link to a file that does not exist fails the build.

DOCS = Path(__file__).resolve().parent
REPOSITORY = DOCS.parent
_setup = configparser.ConfigParser()
_setup.read(REPOSITORY / "setup.cfg")
REPOSITORY_URL = _setup["metadata"]["url"].rstrip("/")
MYST_INCLUDE = re.compile(r"^```\{include\}\s+(\S+)", re.MULTILINE)
URL_SCHEME = re.compile(r"^[a-zA-Z][a-zA-Z0-9+.-]*:")
# An inline Markdown link, not an image: [text](target#anchor)
MARKDOWN_LINK = re.compile(r"(?<!!)(\[[^\]]*\]\()([^)\s#]+)(#[^)\s]*)?\)")


@functools.cache
def including_pages() -> dict[Path, Path]:
    """:return: for each repository file that a Markdown page of the docs includes, the first such page"""
    pages: dict[Path, Path] = {}
    for page in sorted(DOCS.rglob("*.md")):
        if "_build" not in page.relative_to(DOCS).parts:
            for target in MYST_INCLUDE.findall(page.read_text()):
                pages.setdefault((page.parent / target).resolve(), page)
    return pages


def repository_target(target: Path) -> Path | str | None:
    """
    :param target: a path that a page's link resolves to
    :return: the docs page that includes it (for a folder, its README.md), or its address in the repository; None for
        a path in docs/ or outside the repository, which Sphinx and MyST resolve themselves
    """
    if DOCS == target or DOCS in target.parents or REPOSITORY not in target.parents:
        return None
    pages = including_pages()
    page = pages.get(target) or pages.get(target / "README.md")
    if page is not None:
        return page
    kind = "tree" if target.is_dir() else "blob"
    return f"{REPOSITORY_URL}/{kind}/main/{target.relative_to(REPOSITORY).as_posix()}"


def point_rst_links(app, doctree, docname):
    """A reST page's links to the repository's files, pointed at the docs page that shows them or the repository."""
    from docutils import nodes
    from sphinx.util import logging

    source = Path(app.env.doc2path(docname))
    if source.suffix != ".rst":
        return  # MyST resolves the Markdown pages' links (see point_markdown_links)
    for node in doctree.findall(nodes.reference):
        uri = node.get("refuri", "")
        if not uri or node.get("internal") or uri.startswith("#") or URL_SCHEME.match(uri):
            continue
        path, _, anchor = uri.partition("#")
        target = (source.parent / path).resolve()
        if REPOSITORY in target.parents and not target.exists():
            logging.getLogger(__name__).warning(f"a link to {path}, which the repository does not have", location=node)
            continue
        pointed = repository_target(target)
        if isinstance(pointed, Path):
            docname_there = pointed.relative_to(DOCS).with_suffix("").as_posix()
            pointed = app.builder.get_relative_uri(docname, docname_there)
        if pointed is not None:
            node["refuri"] = pointed + (f"#{anchor}" if anchor else "")


def point_markdown_links(app, relative_path, parent_docname, content):
    """An included Markdown file's links to the repository's files outside docs/, pointed likewise before MyST reads it."""
    path = (DOCS / relative_path).resolve()
    if path.suffix != ".md" or DOCS in path.parents:
        return

    def point(match: re.Match) -> str:
        prefix, target, anchor = match.group(1), match.group(2), match.group(3) or ""
        if URL_SCHEME.match(target) or not (path.parent / target).exists():
            return match.group(0)
        pointed = repository_target((path.parent / target).resolve())
        if isinstance(pointed, Path):
            pointed = os.path.relpath(pointed, path.parent)  # MyST reads the included file's links from its folder
        return match.group(0) if pointed is None else f"{prefix}{pointed}{anchor})"

    content[0] = MARKDOWN_LINK.sub(point, content[0])


def setup(app):
    app.connect("doctree-resolved", point_rst_links)
    if "include-read" in app.events.events:  # Sphinx 7.2 on; MyST emits it for its includes too
        app.connect("include-read", point_markdown_links)
