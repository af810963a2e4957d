"""--grade-lang: every message in English or Chinese, from one catalogue each."""

import string

import pytest
from conftest import EN, QUIET_PLUGINS, SOLUTIONS, run_grader

from pytest_autograd_grader import i18n

CHECKS = r"""
import pytest

pytestmark = pytest.mark.grade(concept="leaf")

def test_stub(submission, autograd, grade_rng):
    autograd.assert_equal(submission("leaf").find_leaves(grade_rng.randn(2)), [True], "leaves")
"""
STUB = "def find_leaves(x):\n    raise NotImplementedError\n"


def _fields(text: str) -> set[tuple[str, str, str]]:
    """The placeholders of a message (a translation may use one more or less often)."""
    return {
        (name, spec or "", conv or "") for _, name, spec, conv in string.Formatter().parse(text) if name is not None
    }


def test_both_catalogues_hold_every_message_with_the_same_placeholders():
    # the grader's catalogues and the shipped course's, together
    from conftest import ZH

    assert sorted(set(EN) - set(ZH)) == [], "messages without a Chinese text"
    assert sorted(set(ZH) - set(EN)) == [], "Chinese messages no English one has"
    different = [key for key in EN if _fields(EN[key]) != _fields(ZH[key])]
    assert different == [], "placeholders differ"
    untranslated = [key for key in EN if EN[key] == ZH[key] and any(c.isalpha() for c in EN[key])]
    assert untranslated == []


def _grade(pytester, *args):
    pytester.makepyfile(test_checks=CHECKS)
    (pytester.path / "student").mkdir(exist_ok=True)
    (pytester.path / "student" / "leaf.py").write_text(STUB)
    return run_grader(pytester, "test_checks.py", "--grade-submission=student", "--grade-seed", "3", *args)


def test_grade_lang_zh_prints_table_and_feedback_in_chinese(pytester):
    from conftest import ZH

    graded = _grade(pytester, "--grade-lang", "zh")
    text = graded.text
    assert ZH["concept.leaf"] in text and ZH["summary.total"] in text
    check = graded.report["checks"][0]
    assert check["feedback"].startswith(ZH["feedback.header"].format(title=ZH["concept.leaf"], what="")[:3])
    assert ZH["student.not_implemented"].format(module="leaf", function="find_leaves") in check["feedback"]
    assert graded.report["lang"] == "zh"
    assert graded.report["concepts"][0]["title"] == ZH["concept.leaf"]
    # the language of the test process itself is untouched
    assert i18n.msg("summary.total") == EN["summary.total"]


def test_locale_chooses_chinese_and_the_option_wins(pytester, monkeypatch):
    from conftest import ZH

    monkeypatch.delenv("LC_ALL", raising=False)
    monkeypatch.delenv("LC_MESSAGES", raising=False)
    monkeypatch.setenv("LANG", "zh_CN.UTF-8")
    assert _grade(pytester).report["lang"] == "zh"
    english = _grade(pytester, "--grade-lang", "en")
    assert english.report["lang"] == "en"
    assert "not implemented yet: leaf.find_leaves" in english.report["checks"][0]["feedback"]
    monkeypatch.setenv("LANG", "C.UTF-8")
    assert _grade(pytester).report["lang"] == "en"
    pytester.makeini("[pytest]\ngrade_lang = zh\n")
    assert ZH["summary.total"] in _grade(pytester).text


def test_unknown_language_is_a_usage_error(pytester):
    pytester.makepyfile(test_checks=CHECKS)
    result = pytester.runpytest("--grade", "--grade-lang", "fr", *QUIET_PLUGINS)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    assert "--grade-lang: 'fr' is not a language the grader speaks; use en or zh" in result.stderr.str()


# Sign flips planted in the reference solutions: each check of these topics
# then fails on a value, and its feedback names that value by its label.
NEGATED = {
    "accumulation": (
        ("return x.grad", "return -x.grad"),
        ("return w.grad", "return -w.grad"),
        ("grads.append(x.grad.clone())", "grads.append(-x.grad.clone())"),
        ("grads.append(w.grad.clone())", "grads.append(-w.grad.clone())"),
    ),
    "retain_graph": (
        ("return x.grad", "return -x.grad"),
        ("return error, x.grad", "return error, -x.grad"),
        ("return first, w.grad", "return first, -w.grad"),
    ),
    "vector_backward": (
        ("return torch.cat(rows)", "return -torch.cat(rows)"),
        ("return w.grad", "return -w.grad"),
        ("return x.grad, Y.grad", "return -x.grad, Y.grad"),
    ),
}


def test_grade_lang_zh_translates_the_labels_of_the_checks(grade_topics):
    from conftest import ZH

    modules = {}
    for topic, edits in NEGATED.items():
        source = (SOLUTIONS / f"{topic}.py").read_text()
        for old, new in edits:
            assert old in source, (topic, old)
            source = source.replace(old, new)
        modules[topic] = source
    graded = grade_topics(list(NEGATED), "--grade-lang", "zh", "--tb=no", "-rN", modules=modules)
    checks = graded.report["checks"]
    assert len(checks) == 10 and all(check["status"] == "failed" for check in checks), graded.text[-3000:]
    feedback = {check["id"].split("::")[1].split("[")[0]: check["feedback"] for check in checks}
    assert "次前向和反向传播之后的 x.grad（x 的形状为" in feedback["test_accumulated_grad"]
    assert "期望结果 形状 (" in feedback["test_accumulated_grad"]
    assert "个梯度中的第 1 个（缩放系数" in feedback["test_zeroed_grads"]
    assert "步中第 1 步的梯度（lr 0.0，同一个批次重复使用）" in feedback["test_train_loop"]
    assert "个小批量（每个" in feedback["test_microbatch_grad"]
    assert "次 backward 之后的 x.grad" in feedback["test_backward_k_times"]
    assert ZH["label.retain_graph.after_first"] in feedback["test_caught_error"]
    assert ZH["label.retain_graph.after_both"] in feedback["test_two_losses"]
    assert "雅可比矩阵的各行（x 的形状为" in feedback["test_jacobian_rows"]
    for name, text in feedback.items():
        # "shape": the values' lines too (期望结果 形状 (2, 2) float64 [...])
        for english in ("after", "passes", "backward calls", "shape", "the returned", "step", "batch", "scale"):
            assert english not in text, (name, english, text)
