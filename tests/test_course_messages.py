"""A course outside the package gives its concepts and messages through the
public hooks (pytest_grade_concepts, pytest_grade_messages) and is graded and
translated like the shipped one; the shipped course itself needs nothing more.

Every run here turns the tests' shipped_course_plugin off: what a run knows
comes from the course's own conftest.py only."""

import shutil

import pytest
from conftest import EXERCISES, QUIET_PLUGINS, run_grader

from pytest_autograd_grader import i18n

NO_TEST_PLUGIN = ("-p", "no:shipped_course_plugin")

CONFTEST = """
from pytest_autograd_grader import Concept

def pytest_grade_concepts(config):
    return [Concept("hooks", "Gradient hooks (fallback title)")]

def pytest_grade_messages(config):
    return {
        "en": {"concept.hooks": "Gradient hooks",
               "mycourse.label.scaled": "scaled(x) with factor {k}",
               "diag.mycourse.tripled": "Likely mistake: you multiplied by {factor}, not by 2.",
               "mycourse.only_en": "{name} must return a tensor"},
        "zh": {"concept.hooks": "梯度钩子",
               "mycourse.label.scaled": "系数为 {k} 的 scaled(x)",
               "diag.mycourse.tripled": "可能的错误：你乘以了 {factor}，而不是 2。"},
    }
"""

CHECKS = """
import pytest
from pytest_autograd_grader import msg

pytestmark = pytest.mark.grade(concept="hooks")

def test_scaled(submission, autograd, grade_rng):
    x = grade_rng.randn(3)
    got = submission("hooks").scaled(x)
    autograd.assert_close(got, x * 2, msg("mycourse.label.scaled", k=2),
                          diagnose=lambda: msg("diag.mycourse.tripled", factor=3))

def test_required(submission, autograd):
    autograd.require(False, "mycourse.only_en", name="scaled")
"""

STUDENT = "def scaled(x):\n    return x * 3\n"


def _course(pytester, conftest=CONFTEST, checks=CHECKS):
    pytester.makeconftest(conftest)
    pytester.makepyfile(test_hooks=checks)
    (pytester.path / "student").mkdir(exist_ok=True)
    (pytester.path / "student" / "hooks.py").write_text(STUDENT)


def _grade(pytester, *args):
    return run_grader(
        pytester, "test_hooks.py", "--grade-submission=student", "--grade-seed", "5", *NO_TEST_PLUGIN, *args
    )


def _feedback(graded, name):
    return graded.check(name)["feedback"]


def test_a_course_outside_the_package_is_graded_and_translated(pytester):
    _course(pytester)
    english = _grade(pytester)
    assert english.report["concepts"][0]["title"] == "Gradient hooks"
    scaled = _feedback(english, "test_scaled")
    assert "scaled(x) with factor 2" in scaled and "Likely mistake: you multiplied by 3, not by 2." in scaled
    assert "scaled must return a tensor" in _feedback(english, "test_required")
    assert "Gradient hooks" in english.text

    chinese = _grade(pytester, "--grade-lang", "zh")
    assert chinese.report["concepts"][0]["title"] == "梯度钩子"
    scaled = _feedback(chinese, "test_scaled")
    assert "系数为 2 的 scaled(x)" in scaled and "可能的错误：你乘以了 3，而不是 2。" in scaled
    assert scaled.startswith("【梯度钩子】") or "梯度钩子" in scaled.splitlines()[0]
    # an id the course gave in English only falls back to English
    assert "scaled must return a tensor" in _feedback(chinese, "test_required")
    # the test process's own catalogue did not keep the course's messages
    assert not i18n.has_message("mycourse.only_en") and i18n.current_language() == "en"


def test_a_concept_without_a_title_message_keeps_its_own_title(pytester):
    untitled = CONFTEST.replace('"concept.hooks": "Gradient hooks",', "").replace('"concept.hooks": "梯度钩子",', "")
    _course(pytester, untitled)
    for lang in ("en", "zh"):
        title = _grade(pytester, "--grade-lang", lang).report["concepts"][0]["title"]
        assert title == "Gradient hooks (fallback title)"


def test_a_chinese_only_course_speaks_chinese_under_english(pytester):
    _course(pytester, CONFTEST.replace('"en": {', '"fr": {"mycourse.other": "autre"}, "unused": {'))
    english = _grade(pytester, "--grade-lang", "en")
    assert english.report["concepts"][0]["title"] == "梯度钩子"
    assert "可能的错误：你乘以了 3，而不是 2。" in _feedback(english, "test_scaled")


@pytest.mark.parametrize(
    "messages, said",
    [
        (
            '{"en": {"cmp.none": "mine"}}',
            "pytest_grade_messages: 'cmp.none' is one of the grader's own message ids, which a course cannot redefine; "
            "name yours with your course's prefix (such as 'mycourse.cmp.none')",
        ),
        (
            '{"en": {"mycourse.x": "{a} and {b}"}, "zh": {"mycourse.x": "{a}"}}',
            "the message 'mycourse.x' has the fields",
        ),
        ('{"en": {"mycourse.x": 3}}', "message ids and texts must be strings; the id 'mycourse.x' has a int"),
        ('["mycourse.x"]', "a course's messages are a dict {language: {message id: text}}"),
        ('{"en": {"mycourse.x": "a { brace"}}', "the text of 'mycourse.x' is not a valid message"),
    ],
)
def test_messages_the_grader_cannot_take_are_a_usage_error_in_words(pytester, messages, said):
    pytester.makeconftest(f"def pytest_grade_messages(config):\n    return {messages}\n")
    pytester.makepyfile(test_hooks=CHECKS)
    result = pytester.runpytest("--grade", *QUIET_PLUGINS, *NO_TEST_PLUGIN)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert said in result.stderr.str()
    assert "Traceback" not in result.stderr.str()


def test_an_unknown_concept_says_how_to_register_it(pytester):
    pytester.makepyfile(test_hooks=CHECKS)
    graded = run_grader(pytester, "test_hooks.py", *NO_TEST_PLUGIN)
    feedback = graded.check("test_scaled")["feedback"]
    assert graded.check("test_scaled")["status"] == "error"
    assert (
        "unknown concept 'hooks'; use one of: (none: this course registers no concepts), or add it with the "
        "pytest_grade_concepts hook in the checks' conftest.py: def pytest_grade_concepts(config): return "
        "[pytest_autograd_grader.Concept('hooks', \"Its title\")]"
    ) in feedback


def test_set_language_from_a_conftest_adds_and_is_not_overwritten(pytester):
    before = i18n.msg("feedback.header", title="T", what="W")
    _course(
        pytester,
        CONFTEST
        + """
from pytest_autograd_grader import i18n

def pytest_configure(config):
    i18n.set_language({"mycourse.only_en": "custom: {name} returns nothing useful",
                       "feedback.header": "<<{title}>> {what}"})
""",
    )
    for lang in ("en", "zh"):
        graded = _grade(pytester, "--grade-lang", lang)
        required = _feedback(graded, "test_required")
        assert required.startswith("<<") and "custom: scaled returns nothing useful" in required
        # what it did not name is still the course's and the grader's
        diagnosis = "Likely mistake: you multiplied by 3" if lang == "en" else "可能的错误"
        assert diagnosis in _feedback(graded, "test_scaled")
    assert i18n.msg("feedback.header", title="T", what="W") == before


def test_one_runs_course_messages_do_not_leak_into_the_next_run(pytester):
    _course(pytester)
    assert "scaled must return a tensor" in _feedback(_grade(pytester), "test_required")
    (pytester.path / "conftest.py").write_text(
        "from pytest_autograd_grader import Concept\n\n"
        "def pytest_grade_concepts(config):\n    return [Concept('hooks', 'Hooks')]\n"
    )
    again = _feedback(_grade(pytester), "test_required")
    # without the course's messages the id is plain text, said as it is
    assert "mycourse.only_en" in again and "must return a tensor" not in again
    assert not i18n.has_message("mycourse.only_en")


PLAIN = """
import pytest

pytestmark = pytest.mark.grade(concept="hooks")

def test_plain(autograd):
    autograd.require(False, "use only these ops ({ops})", ops="add, mul")

def test_missing_field(autograd):
    autograd.require(False, "use only these ops ({ops})", op="add")

def test_braces_without_fields(autograd):
    autograd.require(False, "got {1, 2}")

def test_instruction(autograd):
    autograd.instruction(False, "call {fn} once", fn="backward")
"""


def test_plain_text_takes_fields_and_a_missing_field_is_the_checks_error(pytester):
    _course(pytester, checks=PLAIN)
    graded = _grade(pytester)
    assert "use only these ops (add, mul)" in _feedback(graded, "test_plain")
    missing = graded.check("test_missing_field")
    assert missing["status"] == "error"
    assert (
        "needs the field {ops}, which the check did not pass (it passed: op); pass ops=... with the message"
        in missing["feedback"]
    )
    assert "got {1, 2}" in _feedback(graded, "test_braces_without_fields")
    assert "call backward once" in _feedback(graded, "test_instruction")


@pytest.fixture
def only_the_runs_messages():
    """This process's catalogue without the shipped course's messages
    (tests/conftest.py adds them for the tests' own msg())."""
    restore = i18n.saved_language()
    i18n._course.clear()  # noqa: SLF001  (the state saved_language puts back)
    yield
    restore()


def test_the_shipped_course_needs_only_its_own_files(pytester, only_the_runs_messages):
    for name in ("conftest.py", "course_messages_en.py", "course_messages_zh.py", "test_leaf.py", "leaf.py"):
        shutil.copy(EXERCISES / name, pytester.path / name)
    english = run_grader(pytester, "test_leaf.py", "--grade-seed", "2", *NO_TEST_PLUGIN)
    assert [c["title"] for c in english.report["concepts"]] == ["Leaf tensors"]
    assert all(c["status"] == "failed" for c in english.report["checks"]), english.text[-2000:]
    chinese = run_grader(pytester, "test_leaf.py", "--grade-seed", "2", "--grade-lang", "zh", *NO_TEST_PLUGIN)
    assert [c["title"] for c in chinese.report["concepts"]] == ["叶子节点"]
    assert not i18n.has_message("concept.leaf")


def test_a_course_conftest_found_during_collection_gives_its_messages_too(pytester):
    course = pytester.path / "checks" / "course"  # not an initial conftest: found while collecting checks/
    course.mkdir(parents=True)
    (course / "conftest.py").write_text(CONFTEST)
    (course / "test_hooks.py").write_text(CHECKS)
    (pytester.path / "student").mkdir()
    (pytester.path / "student" / "hooks.py").write_text(STUDENT)
    graded = run_grader(pytester, "checks", "--grade-submission=student", "--grade-lang", "zh", *NO_TEST_PLUGIN)
    assert graded.report["concepts"][0]["title"] == "梯度钩子"
    assert "系数为 2 的 scaled(x)" in graded.check("test_scaled")["feedback"]


COURSE_FILES = ("conftest.py", "course_messages_en.py", "course_messages_zh.py")


def test_every_layout_carries_the_shipped_courses_conftest_and_messages(tmp_path):
    from pytest_autograd_grader.handout_notebooks import topics_of
    from pytest_autograd_grader.platforms.github_classroom import build_course
    from pytest_autograd_grader.platforms.gradescope_bundle import build_bundle
    from pytest_autograd_grader.platforms.wheel import package_dir, package_files

    bundle = build_bundle(EXERCISES, requirement="pytest-autograd-grader")
    course = build_course(EXERCISES)
    shipped = {path.relative_to(package_dir().parent).as_posix() for path in package_files(package_dir())}
    for name in COURSE_FILES:
        assert f"checks/{name}" in bundle.files
        assert name in course.checks and f"exercises/{name}" in course.template
        assert f"pytest_autograd_grader/curriculum/{name}" in shipped
    # they are the course's, not topics a student completes
    assert not {"conftest", "course_messages_en", "course_messages_zh"} & set(topics_of(EXERCISES))
