"""Exercises handed in as notebooks: ``leaf.ipynb`` where a check asks for
the module ``leaf``. Notebooks are written with nbformat (one is run in a
real Jupyter kernel first, so it is saved with its outputs), graded through
the sandbox as a lone `pytest --grade` would, and every place in feedback
names the cell and the line in it."""

from __future__ import annotations

import json
import os
import shutil
from pathlib import Path

import nbformat
import pytest
from conftest import EXERCISES, SOLUTIONS, run_grader
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from pytest_autograd_grader.boundary.layout import find_modules, has_modules, module_path
from pytest_autograd_grader.boundary.notebook_modules import module_of

LEAF = (SOLUTIONS / "leaf.py").read_text()
STUB = (EXERCISES / "leaf.py").read_text()


def _notebook(folder: Path, name: str, *cells) -> Path:
    folder.mkdir(parents=True, exist_ok=True)
    path = folder / f"{name}.ipynb"
    nbformat.write(new_notebook(cells=list(cells)), path)
    return path


def _grade(pytester, *args: str, topics=("leaf",)):
    checks = pytester.path / "checks"
    checks.mkdir(exist_ok=True)
    for topic in topics:
        shutil.copy(EXERCISES / f"test_{topic}.py", checks)
    return run_grader(pytester, "checks", "--grade-submission=student", "--grade-seed", "5", *args)


def _hostile(kind: str, size: int = 3 << 20) -> str:
    """A notebook of a few MB that, parsed and validated as it is, makes the
    process that reads it hold GBs: millions of tiny JSON values, brackets
    nested deeper than Python's recursion, or tens of thousands of cells."""
    cell = {"cell_type": "code", "execution_count": None, "id": "c", "metadata": {}, "outputs": [], "source": "x = 1"}
    notebook = {"nbformat": 4, "nbformat_minor": 5, "metadata": {}, "cells": [cell]}
    text = json.dumps(notebook)
    if kind == "dicts":
        return text.replace(
            '"metadata": {}, "outputs"', '"metadata": {"x": [' + ",".join(["{}"] * (size // 3)) + ']}, "outputs"'
        )
    if kind == "deep":
        return text.replace(
            '"metadata": {}, "outputs"', '"metadata": {"x": ' + "[" * 100_000 + "]" * 100_000 + '}, "outputs"'
        )
    cells = [dict(cell, id=f"c{i}") for i in range(size // 110)]
    return json.dumps(dict(notebook, cells=cells))


def _line_of(text: str, needle: str) -> int:
    return next(number for number, line in enumerate(text.splitlines(), 1) if needle in line)


def test_a_solved_notebook_grades_full_and_says_once_what_it_left_out(pytester):
    student = pytester.path / "student"
    _notebook(
        student,
        "leaf",
        new_markdown_cell("# Leaf tensors\nRun every cell, then hand this notebook in."),
        new_code_cell("%matplotlib inline\n!pip install --quiet torch\nimport torch"),
        new_code_cell(LEAF),
        # a cell the student uses to try things out: slow, and not graded
        new_code_cell("while True:\n    pass", metadata={"tags": ["skip-grading"]}),
        new_code_cell('NOTE = """\n%not a magic: inside a string\n"""'),
        new_code_cell("display(tutorial_graph)"),
    )  # display() is a kernel's own: it must not fail
    graded = _grade(pytester)
    assert graded.report["percent"] == 100.0, graded.text
    notes = graded.report["notes"]
    assert notes == [
        "in leaf.ipynb, IPython-only lines are not part of the graded module and were left out: "
        "%matplotlib inline, !pip install --quiet torch",
        "in leaf.ipynb, cells tagged skip-grading were left out: 4",
    ]
    assert graded.text.count("IPython-only lines") == 1  # in the header, once
    # and on the platforms, once in the run's output
    from pytest_autograd_grader.reporters.github import step_summary
    from pytest_autograd_grader.reporters.gradescope import gradescope_results
    from pytest_autograd_grader.scoring import Gradebook

    gradebook = Gradebook(seed=5, devices=["cpu"], torch="2.13.0", notes=notes)
    assert gradescope_results(gradebook)["output"].count("IPython-only lines") == 1
    assert step_summary(gradebook).count("IPython-only lines") == 1


def test_an_untouched_notebook_scores_zero_and_names_the_cell_and_line(pytester):
    student = pytester.path / "student"
    _notebook(student, "leaf", new_markdown_cell("# Leaf tensors"), new_code_cell(STUB))
    graded = _grade(pytester)
    assert graded.report["score"] == 0
    checks = graded.report["checks"]
    assert all("not implemented yet" in c["feedback"] for c in checks)
    # the raise inside each stub's body, counted in cell 2 (the notebook's second cell)
    assert {(c["file"], c["cell"]) for c in checks} == {("leaf.ipynb", 2)}
    raise_line = _line_of(STUB, "raise NotImplementedError")
    assert graded.check("test_tutorial_graph")["line"] == raise_line, checks
    assert f"next: leaf.ipynb, cell 2, line {raise_line}: [Leaf tensors] not implemented yet" in graded.text


def test_a_syntax_error_in_one_cell_names_that_cell_and_quotes_its_line(pytester):
    student = pytester.path / "student"
    _notebook(
        student,
        "leaf",
        new_code_cell("import torch"),
        new_markdown_cell("## Part 2"),
        new_code_cell("x = 1\ndef broken(:\n    pass"),
        new_code_cell(LEAF),
    )
    graded = _grade(pytester)
    feedback = graded.check("test_tutorial_graph")["feedback"]
    assert "leaf.ipynb has a syntax error in cell 3, line 2" in feedback, feedback
    assert "def broken(:" in feedback and "cells" not in feedback  # the cell's line, not the file's JSON


def test_a_cell_that_never_ends_fails_fast_naming_the_cell(pytester):
    student = pytester.path / "student"
    _notebook(student, "leaf", new_code_cell(LEAF), new_code_cell("epochs = 0\nwhile True:\n    epochs += 1"))
    graded = _grade(pytester, "--grade-timeout=2")
    checks = graded.report["checks"]
    assert {c["status"] for c in checks} == {"timeout"}
    first = next(c for c in checks if "cell" in c["feedback"])
    assert "importing leaf.ipynb did not finish within 2 s: it was still running cell 2, line" in first["feedback"]
    assert "skip-grading" in first["feedback"]
    assert graded.report["duration_s"] < 15  # one timeout, not one per check


def test_a_notebook_that_answers_late_on_a_busy_machine_still_names_the_cell(pytester):
    """CI caught the cell missing under load: the notebook stops itself at
    0.9 of the time and its answer came after the grader's deadline. Here the
    answer is held back 0.5 s, as a descheduled worker would hold it."""
    student = pytester.path / "student"
    slow = (
        "import signal, time\nstop = signal.getsignal(signal.SIGALRM)\n"
        "signal.signal(signal.SIGALRM, lambda *a: (time.sleep(0.5), stop(*a)))\n"
        "while True:\n    pass"
    )
    _notebook(student, "leaf", new_code_cell(LEAF), new_code_cell(slow))
    graded = _grade(pytester, "--grade-timeout=2")
    feedback = graded.check("test_tutorial_graph")["feedback"]
    assert "importing leaf.ipynb did not finish within 2 s: it was still running cell 2, line" in feedback


def test_a_notebook_that_ignores_its_stop_and_ends_in_the_grace_still_took_too_long(pytester):
    student = pytester.path / "student"
    slow = "import signal, time\nsignal.signal(signal.SIGALRM, signal.SIG_IGN)\ntime.sleep(2.5)"
    _notebook(student, "leaf", new_code_cell(LEAF), new_code_cell(slow))
    graded = _grade(pytester, "--grade-timeout=2")
    checks = graded.report["checks"]
    assert {c["status"] for c in checks} == {"timeout"}, checks
    assert "importing leaf.ipynb did not finish within 2 s" in checks[0]["feedback"]


def test_an_error_raised_in_a_cell_points_at_the_cell(pytester):
    student = pytester.path / "student"
    _notebook(student, "leaf", new_code_cell("import torch\n\n\nsize = int('seven')"), new_code_cell(LEAF))
    graded = _grade(pytester)
    feedback = graded.check("test_tutorial_graph")["feedback"]
    assert "ValueError" in feedback and "(at leaf.ipynb, cell 1, line 4: size = int('seven'))" in feedback, feedback


def test_a_notebook_run_in_a_real_kernel_and_saved_with_outputs_grades_the_same(pytester):
    from nbclient import NotebookClient

    student = pytester.path / "student"
    path = _notebook(
        student,
        "leaf",
        new_code_cell("print('hello from the kernel')"),
        new_code_cell(LEAF),
        new_code_cell("tutorial_graph(torch.ones(2, requires_grad=True), torch.ones(2))"),
    )
    notebook = nbformat.read(path, as_version=4)
    NotebookClient(notebook, timeout=120, kernel_name="python3").execute()
    nbformat.write(notebook, path)
    saved = json.loads(path.read_text())
    assert saved["cells"][0]["outputs"] and saved["cells"][0]["execution_count"] == 1
    graded = _grade(pytester)
    assert graded.report["percent"] == 100.0, graded.text


@pytest.mark.parametrize(
    "content, expected",
    [
        ('{"cells": [', "leaf.ipynb is not a notebook file (it is not valid JSON"),
        ("print('a .py file saved as .ipynb')\n", "leaf.ipynb is not a notebook file (it is not valid JSON"),
        (
            json.dumps({"nbformat": 2, "nbformat_minor": 0, "metadata": {}, "cells": []}),
            "leaf.ipynb was written in notebook format 2, which the grader does not read",
        ),
        (
            json.dumps({"nbformat": 99, "nbformat_minor": 0, "metadata": {}, "cells": []}),
            "leaf.ipynb was written in notebook format 99, which the grader does not read",
        ),
        (json.dumps([1, 2]), "leaf.ipynb could not be read as a notebook"),
        # what would make the grader's own process hold GBs: a limit, named, and what to do
        (_hostile("dicts"), "(over 5000 cells, over 400000 JSON values, or nested over 64 deep)"),
        (_hostile("deep"), "(over 5000 cells, over 400000 JSON values, or nested over 64 deep)"),
        (_hostile("cells"), "Kernel > Restart & Clear Output"),
    ],
    ids=["truncated", "python", "format2", "format99", "list", "values", "nesting", "cells"],
)
def test_a_notebook_that_cannot_be_read_costs_only_its_own_checks(pytester, content, expected):
    student = pytester.path / "student"
    student.mkdir()
    (student / "leaf.ipynb").write_text(content)
    shutil.copy(SOLUTIONS / "graph.py", student)
    graded = _grade(pytester, topics=("leaf", "graph"))
    leaf = [c for c in graded.report["checks"] if c["concept"] == "leaf"]
    assert leaf and all(expected in c["feedback"] for c in leaf), [c["feedback"] for c in leaf]
    assert all(c["status"] == "passed" for c in graded.report["checks"] if c["concept"] != "leaf")
    assert graded.report["complete"] is True


# the peak is VmHWM, the process's own: ru_maxrss would carry over the
# pytest process's peak (torch loaded) from before the exec
READ_ONE = """
import re, sys
from pathlib import Path
from pytest_autograd_grader.boundary.notebook_modules import NotebookError, read_notebook
try:
    read_notebook(Path(sys.argv[1]))
    print("read")
except NotebookError as exc:
    print(exc.key)
print(int(re.search(r"VmHWM:\\s*(\\d+)", Path("/proc/self/status").read_text()).group(1)) >> 10)
"""


@pytest.mark.parametrize("kind", ["dicts", "outputs", "cells"])
def test_reading_a_hostile_notebook_keeps_the_graders_memory_bounded(tmp_path, kind):
    # read as the grader reads it, in a process of its own to measure its peak
    import os
    import subprocess
    import sys

    path = tmp_path / "leaf.ipynb"
    if kind == "outputs":  # valid, and just under the limits: outputs are not what is graded
        stream = {"output_type": "stream", "name": "stdout", "text": ""}
        notebook = new_notebook(cells=[new_code_cell(LEAF)])
        path.write_text(
            nbformat.writes(notebook).replace('"outputs": []', '"outputs": ' + json.dumps([stream] * 90_000))
        )
    else:
        path.write_text(_hostile(kind, size=8 << 20))
    env = dict(os.environ, PYTHONPATH=str(Path(__file__).resolve().parent.parent))
    done = subprocess.run(
        [sys.executable, "-c", READ_ONE, str(path)], capture_output=True, text=True, env=env, timeout=300
    )
    said, peak_mb = done.stdout.split()
    assert said == ("read" if kind == "outputs" else "student.notebook_too_complex"), done.stderr
    # python, nbformat and the file itself take some 60 MB; unbounded, this was GBs
    assert int(peak_mb) < 200, peak_mb


def test_a_notebook_over_the_size_limit_is_refused_unread_naming_the_limit(tmp_path):
    from pytest_autograd_grader.boundary.failures import notebook_problem

    path = tmp_path / "leaf.ipynb"
    path.write_text(" " * (16 << 20) + "{}")
    said = notebook_problem(path)
    assert said.startswith("leaf.ipynb is larger than 16 MB") and "Kernel > Restart & Clear Output" in said, said


def test_a_notebook_saved_with_its_plots_and_logs_still_grades(pytester):
    import base64

    from nbformat.v4 import new_output

    png = base64.b64encode(os.urandom(3 << 20)).decode()  # a few big figures
    cell = new_code_cell(
        LEAF,
        outputs=[
            new_output("display_data", data={"image/png": png, "text/plain": "<Figure>"}),
            new_output("stream", name="stdout", text="epoch 1\n" * 20_000),
        ],
    )
    _notebook(pytester.path / "student", "leaf", new_markdown_cell("# Leaf tensors"), cell)
    assert _grade(pytester).report["percent"] == 100.0


def test_a_notebook_of_format_3_is_converted_as_jupyter_converts_it(pytester):
    student = pytester.path / "student"
    student.mkdir()
    cell = {"cell_type": "code", "input": LEAF, "language": "python", "outputs": [], "metadata": {}}
    (student / "leaf.ipynb").write_text(
        json.dumps(
            {"nbformat": 3, "nbformat_minor": 0, "metadata": {}, "worksheets": [{"cells": [cell], "metadata": {}}]}
        )
    )
    assert _grade(pytester).report["percent"] == 100.0


def test_what_a_notebook_says_of_itself_cannot_drive_a_terminal_or_a_log(pytester):
    # a magic line and a file name of the student's own go into the header and
    # the report: escapes for control characters, never a second line
    student = pytester.path / "student"
    _notebook(student, "leaf", new_code_cell("%time \x1b[2J\x1b[HTOTAL 9/9 100.0%\n" + LEAF))
    _notebook(student, "notes\n::error::fake", new_code_cell("x = 1"))
    (student / "notes\n::error::fake.py").write_text("x = 1\n")
    graded = _grade(pytester)
    notes = graded.report["notes"]
    assert any("%time \\x1b[2J\\x1b[HTOTAL" in note for note in notes), notes
    assert all("\n" not in note and "\x1b" not in note for note in notes), notes
    assert not any(line.startswith("::error::") for line in graded.text.splitlines())


def test_a_module_handed_in_twice_is_graded_from_the_python_file_and_the_report_says_so(pytester):
    student = pytester.path / "student"
    _notebook(student, "leaf", new_code_cell(STUB))
    (student / "leaf.py").write_text(LEAF)
    graded = _grade(pytester)
    assert graded.report["percent"] == 100.0
    assert graded.report["notes"] == [
        "both leaf.py and leaf.ipynb are in the submission: leaf.py was graded; remove the one you did not mean"
    ]


def test_the_engine_track_grades_a_notebook_in_its_torch_free_worker(pytester):
    student = pytester.path / "student"
    _notebook(
        student,
        "engine",
        new_code_cell("%load_ext autoreload\nimport numpy as np"),
        new_code_cell((SOLUTIONS / "engine.py").read_text()),
    )
    graded = _grade(pytester, topics=("engine",))
    assert graded.report["percent"] == 100.0, graded.text


def test_the_module_a_notebook_stands_for():
    text = nbformat.writes(
        new_notebook(
            cells=[
                new_markdown_cell("intro"),
                new_code_cell("%%timeit\nsum(range(10))"),  # a cell magic: the whole cell
                new_code_cell("import os\nfiles = !ls\nif True:\n    %time x = 1\ny = 2\ntorch.randn?\n??os.path"),
                new_code_cell("z = 3", metadata={"tags": ["skip-grading", "other"]}),
                new_code_cell("w = 4 % 3\ns = '''\n!not shell\n'''"),
            ]
        )
    )
    module = module_of(text)
    lines = module.source.splitlines()
    assert module.magics == ("%%timeit", "files = !ls", "%time x = 1", "torch.randn?", "??os.path")
    assert module.skipped == (4,)
    assert lines[module.cells[1][0] - 1 : module.cells[1][0] + 4] == [
        "import os",
        "pass",
        "if True:",
        "    pass",
        "y = 2",
    ]
    assert "!not shell" in module.source and "w = 4 % 3" in module.source
    compile(module.source, "m.ipynb", "exec")
    # every line of a cell keeps its number within the cell
    assert module.place(module.cells[1][0] + 4) == (3, 5)
    assert module.place(module.cells[2][0] + 2) == (5, 3)


def test_a_folder_of_notebooks_is_a_submission(tmp_path):
    _notebook(tmp_path / "upload" / "my-work", "leaf", new_code_cell(LEAF))
    assert has_modules(tmp_path / "upload" / "my-work")
    assert find_modules(tmp_path / "upload") == tmp_path / "upload" / "my-work"
    assert module_path(tmp_path / "upload" / "my-work", "leaf").name == "leaf.ipynb"
    assert module_path(tmp_path / "upload" / "my-work", "graph").name == "graph.py"  # missing: named as a .py


# -- notebooks written from the exercises, and the check from inside one ---------


def _solve(notebook, solution: str):
    """The notebook with each stub cell replaced by the solution's definition
    of that name, and the solution's other statements (imports, helpers) in a
    cell before the last: what a student who solved it hands in."""
    import ast

    tree = ast.parse(solution)
    lines = solution.splitlines(keepends=True)
    defined = {
        node.name: "".join(
            lines[(node.decorator_list[0].lineno if node.decorator_list else node.lineno) - 1 : node.end_lineno]
        )
        for node in tree.body
        if isinstance(node, (ast.FunctionDef, ast.ClassDef))
    }
    used = set()
    for cell in notebook.cells:
        if cell.cell_type == "code" and "skip-grading" not in cell.metadata.get("tags", []):
            names = [n.name for n in ast.parse(cell.source).body if isinstance(n, (ast.FunctionDef, ast.ClassDef))]
            if names:
                cell.source = "\n\n".join(defined[name] for name in names)
                used.update(names)
    rest = [node for node in tree.body if getattr(node, "name", None) not in used]
    extra = "".join(
        "".join(lines[node.lineno - 1 : node.end_lineno])
        for node in rest
        if not (isinstance(node, ast.Expr) and isinstance(node.value, ast.Constant))
    )
    notebook.cells.insert(len(notebook.cells) - 1, new_code_cell(extra))
    return notebook


@pytest.fixture(scope="module")
def written(tmp_path_factory):
    out = tmp_path_factory.mktemp("course") / "notebooks"
    from pytest_autograd_grader.cli import main

    assert main(["notebooks", str(EXERCISES), "-o", str(out)]) == 0
    return out


def test_notebooks_written_from_the_exercises_grade_as_their_modules_do(written, pytester):
    topics = sorted(p.stem for p in written.glob("*.ipynb"))
    assert topics == sorted(p.stem.removeprefix("test_") for p in EXERCISES.glob("test_*.py"))
    leaf = nbformat.read(written / "leaf.ipynb", as_version=4)
    nbformat.validate(leaf)
    assert leaf.cells[0].source.startswith("# Leaf tensors\n\nA leaf is a tensor")
    assert [c.cell_type for c in leaf.cells] == ["markdown", "code"] + ["markdown", "code"] * 3 + ["code"]
    assert leaf.cells[2].source.startswith("## `tutorial_graph`\n\nThe tutorial's graph")
    assert leaf.cells[3].source == (
        "def tutorial_graph(x: torch.Tensor, w: torch.Tensor):\n    raise NotImplementedError"
    )
    assert leaf.cells[-1].metadata["tags"] == ["skip-grading"] and 'notebook.check("leaf")' in leaf.cells[-1].source

    checks = pytester.path / "checks"
    shutil.copytree(EXERCISES, checks, ignore=shutil.ignore_patterns("[!t]*.py", "__pycache__"))
    untouched = pytester.path / "untouched"
    shutil.copytree(written, untouched)
    stubs = run_grader(pytester, "checks", f"--grade-submission={untouched}", "--grade-seed", "9", report="u.json")
    as_modules = run_grader(pytester, "checks", f"--grade-submission={EXERCISES}", "--grade-seed", "9", report="m.json")
    assert stubs.report["score"] == 0 and stubs.report["max_score"] == as_modules.report["max_score"]
    for check in stubs.report["checks"]:
        twin = as_modules.checks[check["id"]]
        assert check["status"] == twin["status"], check["id"]
        # the same feedback, but the place: (engine.ipynb, cell 9, line 3) against (engine.py line 120)
        shown, expected = check["feedback"], twin["feedback"]
        assert shown.split(" (")[0] == expected.split(" (")[0], (shown, expected)
        assert "not implemented yet" in shown

    solved = pytester.path / "solved"
    solved.mkdir()
    for topic in topics:
        notebook = _solve(
            nbformat.read(written / f"{topic}.ipynb", as_version=4), (SOLUTIONS / f"{topic}.py").read_text()
        )
        nbformat.write(notebook, solved / f"{topic}.ipynb")
    graded = run_grader(pytester, "checks", f"--grade-submission={solved}", "--grade-seed", "9", report="s.json")
    assert graded.report["percent"] == 100.0, [c["feedback"] for c in graded.report["checks"] if c["feedback"]]


def test_writing_notebooks_refuses_what_it_cannot_use(tmp_path, capsys):
    from pytest_autograd_grader.cli import main

    assert main(["notebooks", str(tmp_path / "nowhere"), "-o", str(tmp_path / "out")]) == 2
    assert "is not a folder" in capsys.readouterr().err
    (tmp_path / "empty").mkdir()
    assert main(["notebooks", str(tmp_path / "empty"), "-o", str(tmp_path / "out")]) == 2
    assert "holds no topic" in capsys.readouterr().err
    assert main(["notebooks", str(EXERCISES), "-o", str(tmp_path / "out")]) == 0
    (tmp_path / "out" / "leaf.ipynb").write_text("my work")
    assert main(["notebooks", str(EXERCISES), "-o", str(tmp_path / "out")]) == 0
    assert "leaf.ipynb is already there and was left as it is (--force writes it again)" in capsys.readouterr().err
    assert (tmp_path / "out" / "leaf.ipynb").read_text() == "my work"  # a student's work is never overwritten


def test_the_check_cell_grades_the_kernels_functions_in_a_real_kernel(written, tmp_path):
    from nbclient import NotebookClient

    course = tmp_path / "course"
    shutil.copytree(EXERCISES, course / "exercises")
    (course / "notebooks").mkdir()
    results = {}
    for name, notebook in (
        ("solved", _solve(nbformat.read(written / "leaf.ipynb", as_version=4), (SOLUTIONS / "leaf.py").read_text())),
        ("untouched", nbformat.read(written / "leaf.ipynb", as_version=4)),
    ):
        NotebookClient(
            notebook,
            timeout=300,
            kernel_name="python3",
            allow_errors=False,
            resources={"metadata": {"path": str(course / "notebooks")}},
        ).execute()
        outputs = notebook.cells[-1].outputs
        results[name] = outputs
        html = "".join(o.get("data", {}).get("text/html", "") for o in outputs)
        assert "<table>" in html and "graded in the sandbox" in html, outputs
    solved = "".join(o["data"]["text/html"] for o in results["solved"] if "data" in o)
    untouched = "".join(o["data"]["text/html"] for o in results["untouched"] if "data" in o)
    assert "Total: 9 / 9 (100.0%)" in solved and "<details" not in solved
    assert "Total: 0 / 9 (0.0%)" in untouched and "not implemented yet: leaf.tutorial_graph" in untouched


def test_with_no_course_folder_beside_it_the_check_uses_the_curriculum_the_package_ships(tmp_path, monkeypatch):
    # a Colab notebook: nothing but pip install, and a kernel with the solutions run
    from pytest_autograd_grader import notebook

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(notebook.CHECKS_ENV, raising=False)
    assert notebook.find_checks(None, "leaf") == notebook.CURRICULUM.resolve()
    kernel = {"__name__": "__main__"}
    exec(compile((SOLUTIONS / "leaf.py").read_text(), "<cell>", "exec"), kernel)
    graded = notebook.check("leaf", namespace=kernel, seed=3)
    assert graded.percent == 100.0, str(graded)
    assert graded.report["seed"] == 3


def test_the_check_says_what_to_do_when_it_cannot_grade(tmp_path, monkeypatch):
    from pytest_autograd_grader import notebook

    monkeypatch.chdir(tmp_path)
    monkeypatch.delenv(notebook.CHECKS_ENV, raising=False)
    nothing = notebook.check("no_such_topic", namespace={})
    assert "no folder with test_no_such_topic.py found" in str(nothing), str(nothing)
    assert "checks='path/to/exercises'" in str(nothing)
    empty = notebook.check("leaf", checks=EXERCISES, namespace={"x": 1})
    assert "found no function or class defined in this notebook" in str(empty)
    assert "Run all" in empty._repr_html_()
    chinese = notebook.check("leaf", checks=EXERCISES, namespace={}, lang="zh")
    assert "没有找到任何函数或类" in str(chinese)


def test_a_changed_kernel_is_graded_afresh_and_check_without_a_topic_grades_every_topic(tmp_path, monkeypatch):
    from pytest_autograd_grader import notebook

    monkeypatch.chdir(tmp_path)
    kernel = {"__name__": "__main__"}
    exec(compile(STUB, "<cell 1>", "exec"), kernel)
    before = notebook.check("leaf", checks=EXERCISES, namespace=kernel, seed=4)
    assert before.percent == 0.0 and "not implemented yet: leaf.tutorial_graph" in str(before)
    exec(compile(LEAF, "<cell 1>", "exec"), kernel)  # the student fixes the cell and runs it again
    after = notebook.check("leaf", checks=EXERCISES, namespace=kernel, seed=4)
    assert after.percent == 100.0, str(after)
    every = notebook.check(checks=EXERCISES, namespace=kernel, seed=4, lang="zh")
    leaf = [c for c in every.report["checks"] if c["topic"] == "leaf"]
    assert leaf and all(c["status"] == "passed" for c in leaf)
    assert len(every.report["concepts"]) > 5 and every.percent < 100  # the other topics are not done
    assert "总分" in str(every) and every.report["lang"] == "zh"
