"""A notebook graded as Jupyter runs it, and feedback that a student can
follow in Jupyter: cell magics whose body runs keep their code, every
message names the notebook and its cell, a cell left out (tagged
``skip-grading``) or a cell that fails at load says so and what to do, and
a function defined twice says which definition was graded."""

from __future__ import annotations

import shutil

import nbformat
import pytest
from conftest import EXERCISES, SOLUTIONS, run_grader
from nbformat.v4 import new_code_cell, new_markdown_cell, new_notebook

from pytest_autograd_grader.boundary.notebook_modules import module_of

LEAF = (SOLUTIONS / "leaf.py").read_text()
STUB = (EXERCISES / "leaf.py").read_text()
# the solution in two parts: tutorial_graph and init_parameter (with the import), then predict_leaves
FIRST, PREDICT = LEAF[: LEAF.index("def predict_leaves")], LEAF[LEAF.index("def predict_leaves") :]
TAGS_HOWTO = "View > Cell Toolbar > Tags"


def _grade(pytester, *cells):
    student = pytester.path / "student"
    student.mkdir(exist_ok=True)
    nbformat.write(new_notebook(cells=list(cells)), student / "leaf.ipynb")
    checks = pytester.path / "checks"
    checks.mkdir(exist_ok=True)
    shutil.copy(EXERCISES / "test_leaf.py", checks)
    return run_grader(pytester, "checks", "--grade-submission=student", "--grade-seed", "5")


def _next_line(graded) -> str:
    return next(line for line in graded.text.splitlines() if line.startswith("next: "))


def test_cell_magics_whose_body_jupyter_runs_keep_their_code(pytester):
    graded = _grade(
        pytester,
        new_markdown_cell("# Leaf tensors"),
        new_code_cell("%%time\n" + FIRST),
        # %%capture runs its body as a cell, which may open with a cell magic of its own
        new_code_cell("\n%%capture out --no-stderr\n%%time\n!echo training\n" + PREDICT),
        new_code_cell("%%timeit\nsum(range(10))"),
        new_code_cell("%%bash\necho hello\nexit 1"),
    )
    assert graded.report["percent"] == 100.0, graded.text
    notes = graded.report["notes"]
    # what was left out is told; a magic whose code was graded is not
    assert notes == [
        "in leaf.ipynb, IPython-only lines are not part of the graded module and were left out: "
        "!echo training, %%timeit, %%bash"
    ], notes


def test_the_module_of_a_cell_magic_keeps_the_body_of_one_that_runs_it_once():
    text = nbformat.writes(
        new_notebook(
            cells=[
                new_code_cell("%%time\ndef f():\n    return 1\n%time g = 2"),
                new_code_cell("%%prun -s cumulative\nh = 3"),
                new_code_cell("%%writefile helper.py\ndef written():\n    pass"),
                new_code_cell("%%timeit -n 1\ndef timed():\n    pass"),
                new_code_cell("%%html\n<b>x</b>"),
            ]
        )
    )
    module = module_of(text)
    namespace: dict = {}
    exec(compile(module.source, "leaf.ipynb", "exec"), namespace)
    assert namespace["f"]() == 1 and namespace["h"] == 3
    assert "written" not in namespace and "timed" not in namespace and "g" not in namespace
    assert module.magics == ("%time g = 2", "%%writefile helper.py", "%%timeit -n 1", "%%html")
    assert [(number, why) for number, why, _ in module.left_out] == [
        (3, "%%writefile helper.py"),
        (4, "%%timeit -n 1"),
        (5, "%%html"),
    ]
    assert module.place(module.cells[0][0] + 1) == (1, 2)  # the body keeps its lines


def test_every_message_names_the_notebook_and_its_cell(pytester):
    # cell 2: tutorial_graph and init_parameter as given (their raise); predict_leaves is renamed
    stub = STUB.replace("def predict_leaves", "def predict_leaf")
    graded = _grade(pytester, new_markdown_cell("# Leaf tensors"), new_code_cell(stub))
    raise_line = next(n for n, line in enumerate(stub.splitlines(), 1) if "raise NotImplementedError" in line)
    tutorial = graded.check("test_tutorial_graph")
    assert tutorial["feedback"] == (
        f"[Leaf tensors] not implemented yet: leaf.tutorial_graph (leaf.ipynb, cell 2, line {raise_line})"
    ), tutorial
    predict = graded.check("test_predict_leaves")["feedback"]
    assert "leaf.ipynb has no function 'predict_leaves'" in predict, predict
    assert ".py" not in graded.text.replace("test_leaf.py", ""), graded.text
    assert _next_line(graded) == (
        f"next: leaf.ipynb, cell 2, line {raise_line}: [Leaf tensors] not implemented "
        f"yet: leaf.tutorial_graph (leaf.ipynb, cell 2, line {raise_line})"
    )


@pytest.mark.parametrize(
    "left_out, why",
    [
        (
            lambda code: new_code_cell(code, metadata={"tags": ["skip-grading"]}),
            "which is tagged skip-grading, so the "
            "grader does not run it; remove the tag from that cell (Jupyter Notebook: View > Cell Toolbar > Tags; JupyterLab",
        ),
        (
            lambda code: new_code_cell("%%timeit -n 1\n" + code),
            "which opens with %%timeit: Jupyter does not keep what "
            "such a cell defines, and the grader leaves the cell out; move `predict_leaves` into a cell without %%timeit",
        ),
    ],
    ids=["tagged", "timeit"],
)
def test_a_function_in_a_cell_left_out_says_which_cell_and_what_to_do(pytester, left_out, why):
    graded = _grade(pytester, new_markdown_cell("# Leaf tensors"), new_code_cell(FIRST), left_out(PREDICT))
    check = graded.check("test_predict_leaves")
    assert check["feedback"].startswith(f"[Leaf tensors] `predict_leaves` is defined in cell 3 of leaf.ipynb, {why}"), (
        check["feedback"]
    )
    assert (check["file"], check["cell"], check["line"]) == ("leaf.ipynb", 3, 1 + why.startswith("which opens"))
    assert graded.report["score"] == 5  # the other two checks pass


def test_a_helper_in_a_skip_grading_cell_says_the_tag_is_why_it_is_not_defined(pytester):
    graded = _grade(
        pytester,
        new_code_cell(FIRST + "\n\ndef predict_leaves(nodes):\n    return leaves_of(nodes)\n"),
        new_code_cell(
            "import math\n\n" + PREDICT.replace("def predict_leaves", "def leaves_of"),
            metadata={"tags": ["skip-grading", "helpers"]},
        ),
    )
    feedback = graded.check("test_predict_leaves")["feedback"]
    assert "raised NameError: name 'leaves_of' is not defined (at leaf.ipynb, cell 1, line" in feedback, feedback
    assert (
        "\n`leaves_of` is defined in cell 2 of leaf.ipynb, which is tagged skip-grading, so the grader does not "
        "run it; remove the tag from that cell"
    ) in feedback, feedback
    assert TAGS_HOWTO in feedback


def test_a_demo_cell_that_fails_at_load_says_which_cell_and_how_to_tag_it(pytester):
    # the error is raised in cell 2's function; cell 4, the demo that called it, is the one to tag
    graded = _grade(
        pytester,
        new_code_cell(LEAF),
        new_code_cell("def show(x):\n    return x @ torch.ones(4)"),
        new_markdown_cell("Try it out:"),
        new_code_cell("show(torch.ones(3))"),
    )
    checks = graded.report["checks"]
    assert {c["status"] for c in checks} == {"failed"}
    feedback = checks[0]["feedback"]
    assert feedback.startswith("[Leaf tensors] leaf.ipynb could not be loaded: RuntimeError:"), feedback
    assert "(at leaf.ipynb, cell 2, line 2: return x @ torch.ones(4))" in feedback
    assert (
        "\nCell 4 of leaf.ipynb raised this while the grader ran the cells top to bottom, as Run All does. If it "
        "is a demo or a try-out, tag it skip-grading so the grader leaves it out (Jupyter Notebook: View > Cell "
        "Toolbar > Tags; JupyterLab and Notebook 7: the property inspector"
    ) in feedback, feedback
    assert feedback.endswith("if it is part of your answer, fix it")


def test_a_redefined_function_says_which_cell_was_graded(pytester):
    broken = "def predict_leaves(nodes):\n    return [], []"
    graded = _grade(pytester, new_code_cell(LEAF), new_markdown_cell("Second try:"), new_code_cell(broken))
    feedback = graded.check("test_predict_leaves")["feedback"]
    assert feedback.endswith(
        "\ngraded: the definition of `predict_leaves` in cell 3 of leaf.ipynb; an earlier one in "
        "cell 1 is replaced by it, as in Jupyter when cells run top to bottom"
    ), feedback
    assert graded.check("test_tutorial_graph")["status"] == "passed"
    assert _next_line(graded).startswith("next: leaf.ipynb, cell 3, line 1: [Leaf tensors]")


def test_a_final_version_left_in_a_skip_grading_cell_says_the_earlier_one_was_graded(pytester):
    broken = PREDICT.replace("return is_leaf, has_grad", "return has_grad, is_leaf")
    graded = _grade(
        pytester, new_code_cell(FIRST + broken), new_code_cell(PREDICT, metadata={"tags": ["skip-grading"]})
    )
    feedback = graded.check("test_predict_leaves")["feedback"]
    assert (
        "\ngraded: the definition of `predict_leaves` in cell 1 of leaf.ipynb; the later one in cell 2 is "
        "tagged skip-grading, so the grader does not run it: remove the tag from cell 2, or put your final "
        "version in cell 1"
    ) in feedback, feedback


def test_the_new_notebook_messages_speak_chinese_too():
    from pytest_autograd_grader.i18n.en import EN
    from pytest_autograd_grader.i18n.zh import ZH

    keys = [k for k in EN if k.startswith("notebook.") and k.split(".")[1].startswith(("in_", "cell_", "graded"))]
    assert len(keys) == 7
    for key in keys:
        assert key in ZH and ZH[key] != EN[key] and "单元格" in ZH[key], key


def test_the_check_from_inside_a_notebook_calls_the_kernels_functions_this_notebook(tmp_path, monkeypatch):
    # notebook.check writes the kernel's functions as leaf.py, a file the student never sees
    from pytest_autograd_grader import notebook

    monkeypatch.chdir(tmp_path)
    kernel = {"__name__": "__main__"}
    exec(compile(FIRST, "<cell 1>", "exec"), kernel)
    graded = notebook.check("leaf", checks=EXERCISES, namespace=kernel, seed=4)
    predict = next(c for c in graded.report["checks"] if "predict_leaves" in c["id"])
    assert "this notebook has no function 'predict_leaves'" in predict["feedback"], predict
    assert "leaf.py" not in str(graded) and "test_leaf.py" in predict["id"]


def test_a_load_that_runs_out_of_time_in_an_earlier_cells_function_names_the_cell_to_tag(tmp_path):
    # the worker's side in this process: the notebook stops itself at 0.9 of its time
    from pytest_autograd_grader.boundary.failures import failure_from
    from pytest_autograd_grader.boundary.module_loader import Loader
    from pytest_autograd_grader.boundary.student import call
    from pytest_autograd_grader.boundary.wire import loads

    nbformat.write(
        new_notebook(
            cells=[
                new_code_cell(LEAF + "\n\ndef train():\n    while True:\n        pass"),
                new_markdown_cell("Train it:"),
                new_code_cell("train()"),
            ]
        ),
        tmp_path / "leaf.ipynb",
    )
    loader = Loader(str(tmp_path), unique_names=True)
    loader.import_seconds = 0.5
    outcome = loads(call(loader, "leaf", "", b"", op="load"))
    assert outcome["stage"] == "import_timeout" and outcome["cell"] == 3, outcome
    said = failure_from(outcome, directory=tmp_path).feedback
    assert "it was still running cell 1, line" in said, said
    assert (
        "\nIt was called from cell 3 of leaf.ipynb, the cell the grader was running: if that cell trains, "
        "downloads or tries things out, tag it skip-grading so the grader leaves it out"
    ) in said, said
    # the worker's word is taken only for a graded cell of the notebook the grader reads
    assert "called from" not in failure_from({**outcome, "cell": 2}, directory=tmp_path).feedback
