"""
The project's files that say what the project holds: the docs' layout page and index against the package, the
extras of setup.cfg against what gymnasium installs.
"""

import configparser
import importlib.metadata
import json
import re
from pathlib import Path

import pytest
import yaml
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


# The README, and the figures that the docs quote from the RL Zoo suite's committed tables
README = ROOT / "README.md"
SUITE = ROOT / "benchmarks" / "zoo_suite"
README_LIMIT = 10_000  # characters: a landing page; history and caveats live in benchmarks/ and the docs
REPLACED_RUNS = "Final runs replaced or made again"
HEADLINE_MARKERS = ("<!-- zoo-suite headline start -->\n", "<!-- zoo-suite headline end -->")
REPLACED_MARKERS = ("<!-- headline: replaced runs start -->\n", "<!-- headline: replaced runs end -->")


def between(text: str, markers: tuple[str, str]) -> str:
    """:return: the text between a pair of marker comments"""
    assert markers[0] in text and markers[1] in text, markers
    return text.split(markers[0], 1)[1].split(markers[1], 1)[0]


def headline_parts() -> tuple[str, str]:
    """
    :return: ``headline.md`` without its list of replaced final runs (what the README shows), and that list (what
        the suite's README shows): the list is the paragraph that starts with ``REPLACED_RUNS`` and the one after it
    """
    paragraphs = (SUITE / "headline.md").read_text().split("\n\n")
    starts = [index for index, paragraph in enumerate(paragraphs) if paragraph.startswith(REPLACED_RUNS)]
    if not starts:
        return "\n\n".join(paragraphs), ""
    index = starts[0]
    return "\n\n".join(paragraphs[:index] + paragraphs[index + 2 :]), "\n\n".join(paragraphs[index : index + 2]) + "\n\n"


def test_readme_is_a_landing_page():
    readme = README.read_text()
    assert len(readme) <= README_LIMIT, f"README.md has {len(readme)} characters, more than {README_LIMIT}"
    # the documentation's links come before the first code block and the results
    assert readme.index("## Documentation") < min(readme.index("```"), readme.index("## Results"))


def test_readme_shows_the_zoo_suites_table_as_reported():
    shown, _ = headline_parts()
    assert between(README.read_text(), HEADLINE_MARKERS) == shown, (
        "README.md shows benchmarks/zoo_suite/headline.md between its markers, without the list of replaced final "
        "runs (benchmarks/zoo_suite/README.md shows that): copy it again"
    )


def test_zoo_suites_readme_lists_the_replaced_final_runs_as_reported():
    _, replaced = headline_parts()
    assert between((SUITE / "README.md").read_text(), REPLACED_MARKERS) == replaced, (
        "benchmarks/zoo_suite/README.md shows headline.md's list of replaced final runs between its markers: copy it again"
    )


def test_readme_names_every_option_of_the_main_job(capsys):
    from sb3_gpg.__main__ import main

    with pytest.raises(SystemExit):
        main(["--help"])
    options = set(re.findall(r"(--[a-z][a-z-]*)", capsys.readouterr().out)) - {"--help"}
    readme = README.read_text()
    assert options and not [option for option in sorted(options) if f"`{option}`" not in readme]


def markdown_rows(text: str) -> list[list[str]]:
    """:return: the cells of every row of the Markdown tables in ``text``, header rows included, rules left out"""
    return [[cell.strip() for cell in line.strip().strip("|").split("|")]
            for line in text.splitlines() if line.startswith("|") and not line.startswith("|---")]  # fmt: skip


def suite_figures() -> dict:
    """
    :return: what the docs quote from the suite's committed tables: per task (``headline.md``) PPO's and GPG's final
        evaluation (mean ± std), GPG's normalised final score and mean of the last five and the wall times; the
        aggregate (``aggregate.md``, and the earliest finals' from ``headline.md``); per task with a wall-time ratio,
        ``timing.md``'s ratios of updates, wall time and time per update
    """
    headline = (SUITE / "headline.md").read_text()
    tasks = {}
    for cells in markdown_rows(headline)[1:]:
        task, ppo, gpg, normalised, wall = cells
        final, last_five = normalised.split("; ")
        tasks[task] = {
            "ppo": ppo.rsplit(" (", 1)[0],
            "gpg": gpg.rsplit(" (", 1)[0],
            "final": final,
            "last_five": last_five,
            "wall": wall.split(" / "),
        }
    gpg_row = next(cells for cells in markdown_rows((SUITE / "aggregate.md").read_text()) if cells[0] == "gpg")
    earliest = re.search(r"earliest final runs instead: .*?final scores (\S+ \[\S+ \S+\])", headline)
    timing = {
        match.group(1): {"updates": match.group(2), "wall": match.group(3), "per_update": match.group(4)}
        for match in re.finditer(
            r"^- (\S+), gpg: ([\d.]+x) PPO's minibatch updates .*?; ([\d.]+x) PPO's wall time, ([\d.]+x) its time per update",
            (SUITE / "timing.md").read_text(),
            re.MULTILINE,
        )
    }
    return {
        "tasks": tasks,
        "iqm": gpg_row[2],
        "iqm_last_five": gpg_row[3],
        "improves": gpg_row[4],
        "earliest": earliest.group(1) if earliest else None,
        "timing": timing,
    }


def short(task: str) -> str:
    """:return: the task's name as the docs' prose writes it: HalfCheetah for HalfCheetah-v5"""
    return task.rsplit("-v", 1)[0]


def flat(text: str) -> str:
    """:return: the text with its line breaks and runs of spaces as single spaces"""
    return " ".join(text.split())


# The guide, and the detailed reading that benchmarks/ keeps of it
WHEN_TO_USE_PAGES = (ROOT / "docs" / "guide" / "when_to_use.rst", ROOT / "benchmarks" / "when_to_use" / "README.md")


@pytest.mark.parametrize("path", WHEN_TO_USE_PAGES, ids=lambda path: path.relative_to(ROOT).as_posix())
def test_when_to_use_quotes_the_zoo_suites_committed_tables(path):
    figures, page = suite_figures(), flat(path.read_text())
    tasks, timing = figures["tasks"], figures["timing"]
    assert len(tasks) == 10 and {"HalfCheetah-v5", "Walker2d-v5"} <= timing.keys(), (tasks.keys(), timing.keys())
    section = page.split("At RL Zoo's budgets")[1].split("Which estimator options")[0]
    for task, row in tasks.items():  # "Acrobot (0.98)", "LunarLander (0.85 on ...", "Swimmer, level**: 1.01 ..."
        assert re.search(rf"\b{short(task)}\b[^\d]{{0,15}}{re.escape(row['final'])}\b", section), (task, row["final"])
    cheetah, walker = timing["HalfCheetah-v5"], timing["Walker2d-v5"]
    quoted = [
        f"a GPG run took {cheetah['wall']} PPO's wall time on HalfCheetah with {cheetah['updates']} its minibatch "
        f"updates ({cheetah['per_update']} its time per update), and {walker['wall']} on Walker2d with "
        f"{walker['updates']} its updates ({walker['per_update']} its time per update",
        f"rliable's IQM of GPG's normalised scores is {figures['iqm']} (95% stratified bootstrap interval; "
        f"{figures['earliest']} counting the earliest final runs instead), and the probability that GPG improves on "
        f"PPO {figures['improves']}",
    ]
    ratios = {task: float(row["ppo"].split()[0]) / float(row["gpg"].split()[0]) for task, row in tasks.items()}
    quoted.append(f"PPO at {ratios['Walker2d-v5']:.2f}x GPG's score there")
    quoted.append(f"RL Zoo's PPO is {ratios['HalfCheetah-v5']:.2f}x GPG on HalfCheetah")
    assert not [sentence for sentence in quoted if sentence not in page], path


def when_to_use_evidence() -> dict[str, list[str]]:
    """:return: the rows of the evidence table (its section "Evidence" in benchmarks/when_to_use/README.md), by id"""
    section = WHEN_TO_USE_PAGES[1].read_text().split("\n## Evidence\n", 1)[1]
    rows = markdown_rows(section)
    assert rows[0] == ["Id", "Task and setting", "GPG", "Comparator", "Seeds", "Source"], rows[0]
    return {cells[0]: cells for cells in rows[1:]}


def test_when_to_use_cites_only_rows_of_its_evidence_table():
    evidence = when_to_use_evidence()
    assert list(evidence) == [f"E{number}" for number in range(1, len(evidence) + 1)], list(evidence)
    for path in WHEN_TO_USE_PAGES:
        cited = set()
        for first, last in re.findall(r"\bE(\d+)(?:-E(\d+))?\b", path.read_text()):
            cited.update(f"E{number}" for number in range(int(first), int(last or first) + 1))
        assert cited and cited <= evidence.keys(), (path.name, sorted(cited - evidence.keys()))


def test_when_to_use_evidence_quotes_the_zoo_suites_committed_tables():
    figures = suite_figures()
    tasks, timing = figures["tasks"], figures["timing"]
    evidence = when_to_use_evidence()
    gpg, ppo = evidence["E23"][2], evidence["E23"][3]
    normalised = " / ".join(row["final"] for row in tasks.values())
    assert gpg.startswith(f"{normalised} [{' / '.join(row['last_five'] for row in tasks.values())}]"), gpg
    for task, row in tasks.items():  # the raw scores quoted: the first after each task's name is the counted runs'
        for cell, score in ((gpg.split("raw: ", 1)[1], row["gpg"]), (ppo, row["ppo"])):
            if f"{short(task)} " in cell:
                assert cell.split(f"{short(task)} ", 1)[1].startswith(score), (task, score)
    assert evidence["E24"][2].startswith(
        f"{figures['iqm']} (last five {figures['iqm_last_five']}); P(improves) {figures['improves']}; "
        f"counting the earliest finals instead {figures['earliest']}"
    ), evidence["E24"][2]
    walls = [f"{short(task)} {timing[task]['wall']} ({tasks[task]['wall'][1]} against {tasks[task]['wall'][0]} min)"
             for task in ("HalfCheetah-v5", "Walker2d-v5")]  # fmt: skip
    assert f"wall time {', '.join(walls)}" in evidence["E25"][2], evidence["E25"][2]


def test_when_to_use_names_the_entries_that_complete_their_cut_returns():
    entries = yaml.safe_load((ROOT / "sb3_gpg" / "hyperparams" / "gpg.yml").read_text())
    tasks = [task for task in suite_figures()["tasks"] if entries[task].get("truncated_returns") == "bootstrap"]
    named = ", ".join(short(task) for task in tasks[:-1]) + f" and {short(tasks[-1])}"
    page = flat((ROOT / "docs" / "guide" / "when_to_use.rst").read_text())
    assert f'are completed (``truncated_returns="bootstrap"``) on {named}.' in page, named


def test_zoo_suites_readme_quotes_its_committed_tables():
    figures = suite_figures()
    cheetah = figures["timing"]["HalfCheetah-v5"]
    readme = flat((SUITE / "README.md").read_text())
    assert f"**IQM of GPG's PPO-normalised final scores: {figures['iqm']}**" in readme
    assert f"the probability that GPG improves on PPO {figures['improves']}" in readme
    assert f"instead, {figures['earliest']}" in readme
    assert f"{cheetah['wall']} its wall time under the same load" in readme


def test_rl_zoo_guide_quotes_the_zoo_suites_committed_tables():
    """The guide holds its own copy of headline.md's table and aggregate (a repository browser renders no include)."""
    figures = suite_figures()
    section = (ROOT / "docs" / "guide" / "rl_zoo.rst").read_text().split("Scores of the shipped hyperparameters\n")[1]
    rows = [re.split(r"\s{2,}", line.strip()) for line in section.split("\n\n\n", 1)[0].splitlines()
            if re.match(r"^[A-Z]\w*-v\d+\s", line)]  # fmt: skip
    shown = {cells[0]: cells[1:] for cells in rows}
    quoted = {cells[0]: cells[1:4] for cells in markdown_rows((SUITE / "headline.md").read_text())[1:]}
    assert shown == quoted, "docs/guide/rl_zoo.rst's table no longer quotes benchmarks/zoo_suite/headline.md: copy it again"
    page = flat(section)
    assert f"IQM of PPO-normalised final scores is {figures['iqm']}" in page, figures["iqm"]
    assert f"the probability that it improves on PPO {figures['improves']}" in page, figures["improves"]
    assert f"earliest final runs instead, the IQM is {figures['earliest']}" in page, figures["earliest"]


def test_docs_index_quotes_the_headline_figures():
    figures, index = suite_figures(), flat((ROOT / "docs" / "index.rst").read_text())
    # the swap: the current default on seeds nothing was chosen on (its report's aggregate)
    swap_iqm = current_default_figures()["iqm"]
    quoted = [
        f"IQM of PPO-normalised final scores {figures['iqm']}",
        f"behind on HalfCheetah, {figures['tasks']['HalfCheetah-v5']['final']}",
        f"{swap_iqm} over seventeen tasks",
    ]
    assert not [sentence for sentence in quoted if sentence not in index], quoted
    assert f"on fresh seeds an IQM of {swap_iqm} of PPO's score" in flat((ROOT / "README.md").read_text()), swap_iqm


# The guides that teach a new user: what to do, what to expect, what to do when it does not work; the evidence is in
# benchmarks/, one link away
GUIDE_WORD_LIMIT = 1_000
SHORT_GUIDES = ("swap_ppo.rst", "when_to_use.rst")


@pytest.mark.parametrize("name", SHORT_GUIDES)
def test_short_guides_stay_short(name):
    words = len((ROOT / "docs" / "guide" / name).read_text().split())
    assert words < GUIDE_WORD_LIMIT, f"docs/guide/{name} has {words} words: move the evidence to benchmarks/"


# The swap guide's table: what a one-word swap gets, from the fresh seeds' report and every committed run
SWAP = ROOT / "benchmarks" / "swap"
FRESH = SWAP / "fresh_seeds"
CURRENT = SWAP / "current_default"
SWAP_GUIDE = ROOT / "docs" / "guide" / "swap_ppo.rst"


def simple_table(text: str) -> dict[str, list[str]]:
    """:return: per task, the cells after the task of the reST simple table's rows in ``text`` (indented or not)"""
    rows = [re.split(r"\s{2,}", line.strip()) for line in text.splitlines() if re.match(r"^\s*[A-Z]\w*-v\d+\s", line)]
    return {cells[0]: cells[1:] for cells in rows}


def swap_guide_table() -> dict[str, list[str]]:
    """:return: per task, the cells of the swap guide's table after the task (PPO, GPG, of PPO, all runs)"""
    return simple_table(SWAP_GUIDE.read_text().split("What to expect\n", 1)[1].split("\n\n\n", 1)[0])


def sound_section(heading: str) -> str:
    """:return: the section of the sound default's README whose heading starts with ``heading``"""
    return (SWAP / "sound_default" / "README.md").read_text().split(f"\n## {heading}", 1)[1].split("\n## ", 1)[0]


def aggregate_figures(folder: Path, setting: str) -> dict:
    """
    :return: what the docs quote of a swap report's ``aggregate.md`` in ``folder``: per task GPG's (``setting``'s)
        PPO-normalised mean, its IQM of PPO-normalised final scores and the probability that it improves on PPO
    """
    per_task, totals = (folder / "aggregate.md").read_text().split("\nAcross ", 1)
    rows = markdown_rows(per_task)
    column = rows[0].index(f"{setting} (final; last five)")
    # the suite's tasks that ran (FrozenLake-v1 did not)
    normalised = {cells[0]: cells[column].split(" ± ")[0] for cells in rows[1:] if cells[column]}
    aggregate = {cells[0]: cells for cells in markdown_rows(totals)}[setting]
    return {"of_ppo": normalised, "iqm": aggregate[2], "improves": aggregate[4]}


def current_default_figures() -> dict:
    """
    :return: what the docs quote of the swap under the current default on seeds nothing was chosen on
        (benchmarks/swap/current_default: ``table.md``, ``aggregate.md``) and over every committed run
        (benchmarks/swap/diagnosis/stability/README.md): per task PPO's and GPG's final evaluation (mean ± std), GPG's
        PPO-normalised mean and its fraction of PPO over every run; GPG's IQM and the probability that it improves on PPO
    """
    scores = {cells[0]: cells[2:4] for cells in markdown_rows((CURRENT / "table.md").read_text())[1:]}
    figures = aggregate_figures(CURRENT, "gpg_swap_current")
    stability = markdown_rows((SWAP / "diagnosis" / "stability" / "README.md").read_text())[1:]
    every_run = {re.sub(r"^\[(\S+)\]\(\S+\)$", r"\1", cells[0]): cells[2] for cells in stability}
    tasks = {
        task: {"ppo": scores[task][0], "gpg": scores[task][1], "of_ppo": of_ppo, "every_run": every_run[task]}
        for task, of_ppo in figures["of_ppo"].items()
    }
    return {"tasks": tasks, "iqm": figures["iqm"], "improves": figures["improves"]}


def test_swap_guide_quotes_the_current_default_and_every_committed_run():
    figures = current_default_figures()
    quoted = {task: [row["ppo"], row["gpg"], row["of_ppo"], row["every_run"]] for task, row in figures["tasks"].items()}
    assert len(quoted) == 17, sorted(quoted)
    table = swap_guide_table()
    differ = [task for task in quoted if table.get(task) != quoted[task]]
    assert table == quoted, (
        "docs/guide/swap_ppo.rst's table no longer quotes benchmarks/swap/current_default (table.md, aggregate.md) and "
        f"benchmarks/swap/diagnosis/stability/README.md: update it: {differ}"
    )
    assert f"GPG's IQM is {figures['iqm']} of PPO's" in flat(SWAP_GUIDE.read_text()), figures["iqm"]


def list_table_rows(text: str) -> list[list[str]]:
    """:return: the cells of a reST list-table's rows (one line per cell, at two spaces' indent), header row included"""
    rows: list[list[str]] = []
    for line in text.splitlines():
        if line.startswith("  * -"):
            rows.append([line[5:].strip()])
        elif rows and line.startswith("    -"):
            rows[-1].append(line[5:].strip())
    return rows


def test_estimator_guide_quotes_the_swap_suites_committed_iqms():
    page = (ROOT / "docs" / "guide" / "estimator.rst").read_text()
    headline, readme = flat((SWAP / "headline.md").read_text()), flat((SWAP / "README.md").read_text())
    interval = r"(\S+ \[\S+ \S+\])"
    bins, linear = (re.search(rf"{name}'s IQM of PPO-normalised final scores {interval}", headline).group(1)
                    for name in ("GPG_SWAP", "GPG_SWAP_LINEAR"))  # fmt: skip
    memory, alone = re.search(rf"All six seeds .*?Its IQM is {interval} against {interval}", readme).groups()
    iqms = dict(re.findall(rf"IQM of PPO-normalised final evaluations, (\S+): {interval}", sound_section("All six seeds")))
    # the lambda-returns target over the same six seeds (its rule's verdict), then on the fresh seeds
    target = re.search(
        rf"its IQM of PPO-normalised final evaluations, {interval}", flat((SWAP / "lambda_target" / "README.md").read_text())
    ).group(1)
    # the optimism's rule: its six seeds, where the 14 tasks it cannot act on read the newest runs of the default
    optimism = re.search(
        rf"the candidate {interval} against the default's", flat((SWAP / "optimism_default" / "README.md").read_text())
    ).group(1)
    expected = {
        "Time bins": [bins, "", ""],
        "Linear, each rollout alone": [linear, alone, ""],
        "Linear with memory": ["", memory, ""],
        "The sound default": ["", iqms["gpg_swap_sound"], ""],
        "Fitted on its own lambda-returns": ["", target, aggregate_figures(FRESH, "gpg_swap_lambda_default")["iqm"]],
        "The current default": ["", optimism, current_default_figures()["iqm"]],
    }
    rows = list_table_rows(page.split("What to expect\n", 1)[1].split("\n\n\n", 1)[0])[1:]
    shown = {label: row[1:] for row in rows for label in expected if row[0].startswith(label)}
    assert shown == expected, "docs/guide/estimator.rst's table no longer quotes benchmarks/swap's IQMs: update it"
    # the memory default bootstrapped beside the sound one on the same seeds
    assert f"the earlier default (linear with memory) reads {iqms['gpg_swap_memory_recency0.8']}" in flat(page), iqms


RESULTS_FILE_LIMIT = 512 * 1024


def test_no_results_file_weighs_on_a_clone():
    # Results stay committed, but light: large logs compressed (training_log.json.gz, the Optuna journals' *.log.gz),
    # figures saved small (sb3_gpg_bench.figures.save_png), so that every clone does not carry them in full
    files = [path for path in (ROOT / "benchmarks").rglob("*") if path.is_file()]
    assert len(files) > 100  # the committed results are there to check
    heavy = [
        f"{path.relative_to(ROOT)} ({path.stat().st_size:,} bytes)"
        for path in files
        if path.stat().st_size > RESULTS_FILE_LIMIT
    ]
    assert not heavy, f"results files over {RESULTS_FILE_LIMIT:,} bytes: compress or shrink them: {heavy}"
    # every run's training log compressed, the earlier runs' too (read_training_log reads both)
    plain_logs = [str(path.relative_to(ROOT)) for path in files if path.name == "training_log.json"]
    assert not plain_logs, f"compress these to training_log.json.gz (gzip, mtime=0): {plain_logs[:5]}"


def test_speed_guide_quotes_the_gpu_runs():
    # docs/guide/speed.rst's "On a GPU" reads its ranges off benchmarks/gpu/speed_run*.jsonl (both runs)
    rows = [
        row
        for path in sorted((ROOT / "benchmarks" / "gpu").glob("speed_run*.jsonl"))
        for row in map(json.loads, path.read_text().splitlines())
        if "row" in row
    ]

    def span(values, digits=2):
        return f"{min(values):.{digits}f}-{max(values):.{digits}f}"

    mlp = [row for row in rows if row["row"].startswith("mlp")]
    on_cpu = {(row["row"], row["repeats"]): row["gpg_iteration"] for row in rows if row["device"] == "cpu-N"}
    speedups = [on_cpu[row["row"], row["repeats"]] / row["gpg_iteration"] for row in rows if row["row"].startswith("cnn")
                if row["device"] == "cuda"]  # fmt: skip
    page = " ".join((ROOT / "docs" / "guide" / "speed.rst").read_text().split())
    assert f"GPG's iteration took {span([r['gpg_iteration'] for r in mlp if r['device'] == 'cuda'])} s on the GPU" in page
    assert f"and {span([r['gpg_iteration'] for r in mlp if r['device'] != 'cuda'])} s on the CPU" in page
    assert f"trained {span(speedups, 1)} times faster per iteration on the GPU" in page
    assert f"GPG's iteration took {span([row['ratio'] for row in rows])} times PPO's in those rows" in page
