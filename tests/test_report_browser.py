"""The class report in a real browser (Debian's headless Chromium, driven
by selenium through Debian's chromedriver): it renders with its own script
allowed by the page's policy, the gradebook sorts by any column, a
student's name opens their checks, and a class of the whole curriculum's
concepts fits 1280 px without scrolling sideways. CI installs Chromium
(.ci/run); elsewhere the test says how to get it and is skipped."""

from __future__ import annotations

import json

import pytest
from headless_browser import chromium

from pytest_autograd_grader.classroom.outputs import build_outputs

CONCEPTS = (
    "graph",
    "leaf",
    "retain_grad",
    "dynamic_graph",
    "retain_graph",
    "vector_backward",
    "accumulation",
    "inplace",
    "no_grad",
    "higher_order",
    "custom_function",
    "engine",
)


@pytest.fixture
def browser(tmp_path):
    yield from chromium(tmp_path / "profile", "run the browser test")


def _class(out):
    out.mkdir()
    concepts = [{"id": c, "title": c.replace("_", " ").title(), "max_score": 10.0} for c in CONCEPTS]
    (out / "class-run.json").write_text(
        json.dumps(
            {"schema": "pytest-autograd-grader-class/1", "concepts": concepts, "assignment": "Autograd", "students": []}
        )
    )
    for i in range(30):
        student = f"student{i:02d}"
        scores = {c: float((i * 7 + j * 3) % 11) for j, c in enumerate(CONCEPTS)}
        total = sum(scores.values())
        report = {
            "schema": "pytest-autograd-grader/1",
            "complete": True,
            "score": total,
            "max_score": 120.0,
            "percent": 100.0 * total / 120.0,
            "seed": i,
            "student": student,
            "folder": student,
            # long names in several scripts: the table must still fit
            "name": f"Maximiliana Ölçer-Нгуен {i:02d} van der Berg-Garcíaló",
            "status": "graded",
            "late": i % 5 == 0,
            "concepts": [
                {"id": c, "title": c, "score": s, "max_score": 10.0, "checks": 1, "passed": 1}
                for c, s in scores.items()
            ],
            "checks": [
                {
                    "id": f"checks/test_{c}.py::test_one",
                    "concept": c,
                    "score": s,
                    "max_score": 10.0,
                    "status": "passed" if s == 10.0 else "failed",
                    "title": f"a check of {c}",
                    "feedback": "" if s == 10.0 else f"[{c}] wrong <b>{i}</b>",
                }
                for c, s in scores.items()
            ],
        }
        (out / f"{student}.json").write_text(json.dumps(report))


def test_the_class_report_renders_sorts_and_fits_1280_px(browser, tmp_path):
    from selenium.webdriver.common.by import By

    out = tmp_path / "out"
    _class(out)
    build_outputs(out)
    browser.get((out / "report.html").as_uri())
    table = browser.find_element(By.ID, "gradebook-table")
    assert table.is_displayed() and len(table.find_elements(By.CSS_SELECTOR, "tbody tr")) == 30
    # nothing to scroll sideways at 1280 px, whole curriculum and long names notwithstanding
    width = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width

    def column(index):
        return [
            row.find_elements(By.TAG_NAME, "td")[index].text for row in table.find_elements(By.CSS_SELECTOR, "tbody tr")
        ]

    headers = table.find_elements(By.CSS_SELECTOR, "thead th")
    percent = len(headers) - 1
    headers[percent].click()
    ascending = [float(x) for x in column(percent)]
    assert ascending == sorted(ascending) and headers[percent].get_attribute("aria-sort") == "ascending"
    headers[percent].click()
    assert [float(x) for x in column(percent)] == sorted(ascending, reverse=True)
    engine = len(headers) - 3  # the last concept's column
    headers[engine].click()
    scores = [float(x) for x in column(engine)]
    assert scores == sorted(scores)
    # a student's name opens their every check
    link = table.find_element(By.CSS_SELECTOR, 'a[href="#s-student07"]')
    link.click()
    section = browser.find_element(By.ID, "s-student07")
    assert section.get_attribute("open") is not None
    assert "wrong <b>7</b>" in section.text  # student text stays text
    # the page's own script ran, allowed by the policy; nothing was refused
    refused = [
        entry["message"] for entry in browser.get_log("browser") if "Content Security Policy" in entry["message"]
    ]
    assert refused == []


def test_the_heat_map_draws_every_name_whole_in_the_browser(browser, tmp_path):
    # names the browser draws (a PNG drew CJK as empty boxes and clipped long names)
    from selenium.webdriver.common.by import By

    out = tmp_path / "out"
    _class(out)
    names = {
        "student00": "王小明",
        "student01": "محمد عبد الله",
        "student02": "Zoë 🦀✨",
        "student03": "Maximiliana Alexandrina Ölçer-Нгуен van der Berg-Garcíaló y Montenegro-Villavicencio",
    }
    for student, name in names.items():
        path = out / f"{student}.json"
        path.write_text(json.dumps({**json.loads(path.read_text()), "name": name}))
    build_outputs(out)
    browser.get((out / "report.html").as_uri())
    rows = browser.find_elements(By.CSS_SELECTOR, "#heatmap-table th.who")
    assert len(rows) == 30
    by_title = {row.get_attribute("title"): row for row in rows}
    for name in names.values():
        row = by_title[name]  # the whole name, where a pointer reads it
        # nothing of the name is cut off: its box holds all it draws
        assert browser.execute_script("return arguments[0].scrollWidth <= arguments[0].clientWidth", row), name
        assert row.text.rstrip("…") and name.startswith(row.text.rstrip("…").strip())
    # Arabic reads right to left in its own box, the rest of the row left to right
    bdi = by_title[names["student01"]].find_element(By.TAG_NAME, "bdi")
    assert browser.execute_script("return getComputedStyle(arguments[0]).direction", bdi) == "rtl"
    assert browser.execute_script("return getComputedStyle(arguments[0]).direction", rows[0]) == "ltr"
    # a cell says its value in words too; the page still fits 1280 px
    cell = browser.find_element(By.CSS_SELECTOR, "#heatmap-table tbody tr td")
    assert cell.text.isdigit() and "王小明, graph:" in cell.get_attribute("title")
    width = browser.execute_script("return [document.documentElement.scrollWidth, window.innerWidth]")
    assert width[0] <= width[1], width
