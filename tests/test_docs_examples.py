"""
Every code example of the README and of the documentation runs.

The ```python blocks of README.md and of docs/**/*.md, and the ``.. code-block:: python`` blocks of docs/**/*.rst,
are each executed in a fresh temporary folder, with tiny budgets: the integer literals given to ``learn(...)``,
``total_timesteps=``, ``n_eval_episodes=`` and ``range(...)`` are capped (see ``CAPS``), so that an example that
trains for a million steps trains for a few hundred, and every GPG, MaskableGPG and RecurrentGPG built by an example
collects rollouts of at most ``ROLLOUT_CAP["n_steps"]`` steps per env and updates for at most
``ROLLOUT_CAP["n_epochs"]`` epochs (their defaults, 2,048 steps and 10 epochs, would make each example's one rollout
the slowest part); torch runs on one thread. A failure names the file, the block's number and its first line; an
example whose group gives most samples no baseline (GPG's ``NoSignalWarning``) fails too: the docs show settings where
the group gets signal, with the capped rollouts as with their own.
Blocks in other languages (shell commands, BibTeX, YAML) are not run, each language for a reason given in ``NOT_RUN``
(a block in a language without one fails ``test_every_block_is_run_or_has_a_reason``): the shell commands install
packages or train for minutes, and .ci/run runs the main job and an RL Zoo command from the built wheel instead.
"""

import inspect
import re
import textwrap
import warnings
from pathlib import Path

import pytest
import torch as th

from sb3_gpg.common.swap_guards.no_signal import NoSignalWarning
from sb3_gpg.gpg.gpg import GPG

ROOT = Path(__file__).resolve().parent.parent
# (pattern with the literal as group 2, cap): the budget of a doc example, whatever it says
CAPS = (
    (re.compile(r"(\.learn\(\s*(?:total_timesteps\s*=\s*)?)([\d_]+)"), 512),
    (re.compile(r"(total_timesteps\s*=\s*)([\d_]+)"), 512),
    (re.compile(r"(n_eval_episodes\s*=\s*)([\d_]+)"), 2),
    (re.compile(r"(\brange\()([\d_]+)(?=\))"), 2),
)
# 128 steps: several CartPole episodes per env, so that a capped rollout still gives its group signal
ROLLOUT_CAP = {"n_steps": 128, "n_epochs": 2}
RST_CODE_BLOCK = re.compile(r"^(\s*)\.\. code-block::\s*(\S+)\s*$")
MARKDOWN_FENCE = re.compile(r"^(\s*)```\s*(\S*)")
NOT_RUN = {
    "bash": "shell commands (installs, training runs of minutes); .ci/run runs the main job and an RL Zoo command "
    "from the built wheel",
    "bibtex": "a citation, not code",
    "yaml": "a configuration file, not code",
    "text": "output, not code",
}


def markdown_blocks(path: Path | str) -> list[tuple[int, str, str]]:
    """
    :param path: a Markdown file, or Markdown text
    :return: (line number, language, code) of every fenced block; MyST directives (```{include}) are not examples
    """
    blocks, lines = [], (path.read_text() if isinstance(path, Path) else path).splitlines()
    index = 0
    while index < len(lines):
        match = MARKDOWN_FENCE.match(lines[index])
        if match and match.group(2) and not match.group(2).startswith("{"):
            start, body = index + 1, []
            index += 1
            while not lines[index].strip().startswith("```"):
                body.append(lines[index])
                index += 1
            blocks.append((start, match.group(2), textwrap.dedent("\n".join(body))))
        elif match:  # a directive or a block without a language: skip to its end
            index += 1
            while not lines[index].strip().startswith("```"):
                index += 1
        index += 1
    return blocks


def rst_blocks(path: Path) -> list[tuple[int, str, str]]:
    """
    :return: (line number, language, code) of every ``.. code-block::`` directive
    """
    blocks, lines = [], path.read_text().splitlines()
    for index, line in enumerate(lines):
        match = RST_CODE_BLOCK.match(line)
        if not match:
            continue
        indent = len(match.group(1))
        body_start = index + 1
        while body_start < len(lines) and lines[body_start].strip().startswith(":"):  # the directive's options
            body_start += 1
        body = []
        for body_line in lines[body_start:]:
            if body_line.strip() and len(body_line) - len(body_line.lstrip()) <= indent:
                break
            body.append(body_line)
        blocks.append((index + 1, match.group(2), textwrap.dedent("\n".join(body)).strip("\n")))
    return blocks


def example_files() -> list[Path]:
    return [ROOT / "README.md", *sorted((ROOT / "docs").rglob("*.rst")), *sorted((ROOT / "docs").rglob("*.md"))]


def all_blocks(language: str | None = None) -> list:
    """
    :param language: only the blocks in this language
    :return: every block, but one that repeats an earlier block's code in the same language (the README's code that
        the guides show too, see ``README_COPIES``): it runs once
    """
    params, seen = [], set()
    for path in example_files():
        if "_build" in path.parts:
            continue
        blocks = rst_blocks(path) if path.suffix == ".rst" else markdown_blocks(path)
        relative = path.relative_to(ROOT).as_posix()
        for number, (line, block_language, code) in enumerate(blocks, start=1):
            if (block_language, code.strip()) in seen:
                continue
            seen.add((block_language, code.strip()))
            if language in (None, block_language):
                params.append(pytest.param(relative, number, line, block_language, code, id=f"{relative}-{number}"))
    return params


def with_tiny_budgets(code: str) -> str:
    for pattern, cap in CAPS:
        code = pattern.sub(lambda match, cap=cap: match.group(1) + str(min(int(match.group(2).replace("_", "")), cap)), code)
    return code


def test_the_examples_are_found():
    """Guards the extraction itself: the README's quick start and the algorithm pages' examples are among them."""
    found = {(param.values[0], param.values[3]) for param in all_blocks()}
    for relative in ("README.md", "docs/modules/gpg.rst", "docs/modules/gpg_mask.rst", "docs/modules/gpg_recurrent.rst"):
        assert (relative, "python") in found, relative
    tiny = with_tiny_budgets("model.learn(1_000_000, progress_bar=True); range(1000)")
    assert tiny == "model.learn(512, progress_bar=True); range(2)"
    assert with_tiny_budgets("learn(total_timesteps=64)") == "learn(total_timesteps=64)"


@pytest.fixture
def tiny_rollouts(monkeypatch):
    """GPG (and so MaskableGPG and RecurrentGPG, which build on it) with short rollouts and few epochs, on one thread."""
    signature = inspect.signature(GPG.__init__)
    original = GPG.__init__

    def capped_init(self, *args, **kwargs):
        bound = signature.bind(self, *args, **kwargs)
        bound.apply_defaults()
        arguments = bound.arguments
        for name, cap in ROLLOUT_CAP.items():
            arguments[name] = min(arguments[name], cap)
        arguments["batch_size"] = min(arguments["batch_size"], arguments["n_steps"])
        original(**arguments)

    monkeypatch.setattr(GPG, "__init__", capped_init)
    threads = th.get_num_threads()
    th.set_num_threads(1)
    yield
    th.set_num_threads(threads)


def test_every_block_is_run_or_has_a_reason():
    unruled = [f"{param.values[0]} block {param.values[1]} (line {param.values[2]}): {param.values[3]!r}"
               for param in all_blocks() if param.values[3] != "python" and param.values[3] not in NOT_RUN]  # fmt: skip
    assert not unruled, f"blocks in a language with no rule in NOT_RUN: {unruled}"


@pytest.mark.parametrize(("relative", "number", "line", "language", "code"), all_blocks("python"))
def test_doc_example_runs(relative, number, line, language, code, tmp_path, monkeypatch, tiny_rollouts):
    monkeypatch.chdir(tmp_path)
    source = with_tiny_budgets(code)
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("error", NoSignalWarning)
            exec(compile(source, f"{relative} block {number}", "exec"), {"__name__": "__main__"})
    except Exception as error:
        first_line = code.strip().splitlines()[0]
        raise AssertionError(f"{relative} block {number} (line {line}: {first_line!r}) failed: {error!r}") from error


# The README's sections whose code the guides show too: a repository browser renders neither a Sphinx include nor the
# Markdown it would pull in, so each guide holds its own copy of the code, and the README's copy is the one to edit
README_COPIES = {
    "two-commands": "docs/guide/install.rst",
    "quick-start": "docs/guide/quickstart.rst",
    "swap": "docs/guide/swap_ppo.rst",
}


@pytest.mark.parametrize(("section", "page"), README_COPIES.items())
def test_guides_show_the_readmes_code_as_it_is(section, page):
    readme = (ROOT / "README.md").read_text()
    start, end = f"<!-- docs: {section} start -->", f"<!-- docs: {section} end -->"
    assert start in readme and end in readme, (start, end)
    copied = [
        (language, code.strip("\n")) for _, language, code in markdown_blocks(readme.split(start, 1)[1].split(end, 1)[0])
    ]
    shown = [(language, code.strip("\n")) for _, language, code in rst_blocks(ROOT / page)]
    assert copied, f"README.md has no code block between {start} and {end}"
    # the README's blocks, in the README's order, among the page's
    remaining = iter(shown)
    missing = [code for language, code in copied if not any(block == (language, code) for block in remaining)]
    assert not missing, (
        f"{page} does not show these code blocks of README.md's {section!r} section as the README writes them (in its "
        f"order): copy them again, as '.. code-block::' directives: {missing}"
    )
    assert ".. include:: ../../README.md" not in (ROOT / page).read_text(), (
        f"{page} includes README.md, which GitHub does not render"
    )


# The pages that a repository browser shows (the README links the guides, and docs/index.rst is the docs' first page):
# GitHub renders neither a reST include nor a table read from a file (`.. csv-table::` with `:file:`), so what such a
# page shows is in its own source; where it copies a committed table, tests/test_project_files.py ties the copy to it
BROWSED_PAGES = [ROOT / "docs" / "index.rst", *sorted((ROOT / "docs" / "guide").glob("*.rst"))]
# A reST link to a file of the repository by a relative path, as a repository browser follows it: `text <path>`__
RST_RELATIVE_LINK = re.compile(r"`[^`<]*<([^>`:#]+)(?:#[^>`]*)?>`__?")


@pytest.mark.parametrize("page", BROWSED_PAGES, ids=lambda page: page.relative_to(ROOT).as_posix())
def test_browsed_pages_hold_their_content(page):
    text = page.read_text()
    found = [line.strip() for line in text.splitlines() if re.match(r"^\s*\.\. include::", line) or ":file:" in line]
    assert not found, (
        f"{page.relative_to(ROOT)} pulls content from another file, which a repository browser does not render: "
        f"write it in the page (tied to its source by a test) or link the file instead: {found}"
    )
    missing = [target for target in RST_RELATIVE_LINK.findall(text) if not (page.parent / target).exists()]
    assert not missing, f"{page.relative_to(ROOT)} links files that the repository does not have: {missing}"
