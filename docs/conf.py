# Configuration of the Sphinx documentation of sb3-gpg, after sb3-contrib's (docs/conf.py there).
# Build: pip install -e ".[docs]" && sphinx-build -W -b html docs docs/_build/html
import os
import sys

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
