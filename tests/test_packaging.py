"""The package as pip installs it from a wheel, not only from this checkout."""

import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path

import pytest
import tomllib
from conftest import REPO


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> tuple[Path, Path]:
    """The wheel pip builds from this checkout, and the copy it was built from."""
    tmp_path = tmp_path_factory.mktemp("wheel")
    # built from a copy: a checkout's own egg-info and build/ would hide a
    # subpackage the configuration leaves out
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md", "LICENSE"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(
        REPO / "pytest_autograd_grader", source / "pytest_autograd_grader", ignore=shutil.ignore_patterns("__pycache__")
    )
    # the answers beside the package in a checkout: never in the wheel
    for answers in ("solutions", "mistakes"):
        shutil.copytree(REPO / answers, source / answers, ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run(
        [
            sys.executable,
            "-m",
            "pip",
            "wheel",
            "--quiet",
            "--no-deps",
            "--no-build-isolation",
            "-w",
            str(tmp_path / "dist"),
            str(source),
        ],
        check=True,
        capture_output=True,
    )
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    return wheel, source


def test_the_wheel_holds_every_module_of_the_package(built):
    wheel, source = built
    shipped = set(zipfile.ZipFile(wheel).namelist())
    modules = {str(p.relative_to(source)) for p in (source / "pytest_autograd_grader").rglob("*.py")}
    assert modules - shipped == set()
    # the scripts gradescope-bundle puts in the zip and the files github-classroom writes are package data
    platforms = source / "pytest_autograd_grader" / "platforms"
    data = {
        str(p.relative_to(source))
        for folder in ("gradescope_files", "github_files")
        for p in (platforms / folder).iterdir()
    }
    assert {
        "pytest_autograd_grader/platforms/gradescope_files/run_autograder",
        "pytest_autograd_grader/platforms/github_files/classroom.yml",
    } <= data
    assert data - shipped == set()
    # the curriculum notebook.check grades with where no course folder is at hand
    assert {"pytest_autograd_grader/curriculum/test_leaf.py", "pytest_autograd_grader/curriculum/leaf.py"} <= shipped
    assert [
        name
        for name in shipped
        if name.split("/")[0] in ("solutions", "mistakes") or "/solutions/" in name or "/mistakes/" in name
    ] == []


# -- what the package says about itself: license, version, classifiers --------------------


def _project() -> dict:
    return tomllib.loads((REPO / "pyproject.toml").read_text(encoding="utf-8"))


def _wheel_metadata(wheel: Path) -> tuple[list[str], zipfile.ZipFile]:
    archive = zipfile.ZipFile(wheel)
    (meta,) = [n for n in archive.namelist() if n.endswith(".dist-info/METADATA")]
    return archive.read(meta).decode().splitlines(), archive


def test_the_wheel_carries_the_mit_license_text(built):
    wheel, _ = built
    meta, archive = _wheel_metadata(wheel)
    assert "License-Expression: MIT" in meta and "License-File: LICENSE" in meta
    (license_file,) = [n for n in archive.namelist() if n.endswith(".dist-info/licenses/LICENSE")]
    text = archive.read(license_file).decode()
    assert text == (REPO / "LICENSE").read_text(encoding="utf-8")
    assert text.startswith("MIT License\n") and "Copyright (c) 2026 The pytest-autograd-grader authors" in text
    # an SPDX expression beside a License classifier is refused by setuptools
    assert not [c for c in _project()["project"]["classifiers"] if c.startswith("License ::")]


# a version as written in code or configuration: "1.2.3", '0.1.0rc1' (not "127.0.0.1")
VERSION_LITERAL = re.compile(r"""["']\d+\.\d+\.\d+(?:(?:a|b|rc|\.post|\.dev)\d+)?["']""")


def test_the_version_is_written_once_as_the_package_version(built):
    from pytest_autograd_grader import __version__

    project = _project()
    assert "version" not in project["project"] and "version" in project["project"]["dynamic"]
    assert project["tool"]["setuptools"]["dynamic"]["version"] == {"attr": "pytest_autograd_grader.__version__"}
    meta, _ = _wheel_metadata(built[0])
    assert f"Version: {__version__}" in meta
    assert built[0].name == f"pytest_autograd_grader-{__version__}-py3-none-any.whl"
    # no second literal: the package and its configuration name no other version of themselves
    files = [REPO / "pyproject.toml", *(REPO / "pytest_autograd_grader").rglob("*")]
    found = {}
    for path in files:
        if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".png", ".pyc", ".ttf"):
            continue
        text = path.read_text(encoding="utf-8", errors="replace")
        literals = VERSION_LITERAL.findall(text) + [line for line in text.splitlines() if __version__ in line]
        if literals:
            found[str(path.relative_to(REPO))] = literals
    assert found == {"pytest_autograd_grader/__init__.py": [f'"{__version__}"', f'__version__ = "{__version__}"']}


def test_the_changelog_lists_no_release_that_never_happened():
    from pytest_autograd_grader import __version__

    text = (REPO / "CHANGELOG.md").read_text(encoding="utf-8")
    # Keep a Changelog: one section per release; nothing was published, so only Unreleased
    assert re.findall(r"^## .*$", text, re.M) == ["## [Unreleased]"]
    assert f"Version {__version__}" in text and "**never been released**" in text
    # the site shows the same text (docs/changelog.md includes the file)
    assert '--8<-- "CHANGELOG.md"' in (REPO / "docs" / "changelog.md").read_text(encoding="utf-8")
    assert "  - Changelog: changelog.md\n" in (REPO / "mkdocs.yml").read_text(encoding="utf-8")


def test_the_classifiers_are_trove_classifiers_that_say_where_it_runs():
    project = _project()["project"]
    classifiers = project["classifiers"]
    # the sandbox is built on Linux's pidfd_open and Unix seqpacket sockets
    assert [c for c in classifiers if c.startswith("Operating System ::")] == ["Operating System :: POSIX :: Linux"]
    assert {"Framework :: Pytest", "Intended Audience :: Education"} <= set(classifiers)
    # the Python versions named are the ones requires-python allows, from its lower bound on
    lowest = tuple(int(n) for n in project["requires-python"].removeprefix(">=").split("."))
    versions = [
        tuple(int(n) for n in c.rsplit(" ", 1)[1].split("."))
        for c in classifiers
        if re.fullmatch(r"Programming Language :: Python :: 3\.\d+", c)
    ]
    assert versions and min(versions) == lowest and versions == sorted(versions)


def test_every_classifier_is_one_pypi_accepts():
    # PyPI refuses an upload with a classifier not on its list (the [test] extra installs it)
    trove = pytest.importorskip("trove_classifiers")
    classifiers = _project()["project"]["classifiers"]
    assert [c for c in classifiers if c not in trove.classifiers or c in trove.deprecated_classifiers] == []


# -- the wheel the platform set-ups carry -------------------------------------------------


def test_the_grader_builds_a_wheel_of_itself_that_pip_can_install(tmp_path):
    import base64
    import csv
    import hashlib
    import io
    from importlib import metadata

    from pytest_autograd_grader import __version__
    from pytest_autograd_grader.platforms.wheel import build_wheel, package_dir

    path = build_wheel(tmp_path)
    assert path == tmp_path / f"pytest_autograd_grader-{__version__}-py3-none-any.whl"
    (tmp_path / "again").mkdir()
    assert build_wheel(tmp_path / "again").read_bytes() == path.read_bytes(), "the same installation, the same bytes"
    archive = zipfile.ZipFile(path)
    names = archive.namelist()
    # the engine's given module, which every graded engine imports from the
    # grader (a source checkout's curriculum/ is a link the walk must enter)
    assert "pytest_autograd_grader/curriculum/engine_given.py" in names
    info = f"pytest_autograd_grader-{__version__}.dist-info"
    # RECORD lists every file with its hash and size, itself without
    rows = list(csv.reader(io.StringIO(archive.read(f"{info}/RECORD").decode())))
    assert sorted(row[0] for row in rows) == sorted(names)
    for name, digest, size in rows:
        if name == f"{info}/RECORD":
            assert (digest, size) == ("", "")
            continue
        data = archive.read(name)
        expected = base64.urlsafe_b64encode(hashlib.sha256(data).digest()).rstrip(b"=").decode()
        assert (digest, size) == (f"sha256={expected}", str(len(data))), name
    # METADATA and entry points as the installed distribution has them
    dist = metadata.distribution("pytest-autograd-grader")
    meta = archive.read(f"{info}/METADATA").decode().splitlines()
    assert "Name: pytest-autograd-grader" in meta and f"Version: {dist.version}" in meta
    assert f"Requires-Python: {dist.metadata['Requires-Python']}" in meta
    assert [
        line.removeprefix("Requires-Dist: ") for line in meta if line.startswith("Requires-Dist: ")
    ] == dist.requires
    wheel = archive.read(f"{info}/WHEEL").decode().splitlines()
    assert "Root-Is-Purelib: true" in wheel and "Tag: py3-none-any" in wheel
    entry_points = archive.read(f"{info}/entry_points.txt").decode()
    assert "[pytest11]\nautograd_grader = pytest_autograd_grader.plugin\n" in entry_points
    assert "[console_scripts]\nautograd-grader = pytest_autograd_grader.cli:main\n" in entry_points
    # every module and script of the package as imported here, and no bytecode
    root = package_dir()
    modules = {p.relative_to(root.parent).as_posix() for p in root.rglob("*.py") if "__pycache__" not in p.parts}
    assert modules - set(names) == set()
    assert "pytest_autograd_grader/platforms/gradescope_files/run_autograder" in names
    assert not [n for n in names if n.endswith((".pyc", ".pyo")) or "__pycache__" in n]
    # fixed timestamps
    assert {i.date_time for i in archive.infolist()} == {(1980, 1, 1, 0, 0, 0)}


def test_the_wheel_the_set_ups_carry_holds_the_license(tmp_path):
    from pytest_autograd_grader import __version__
    from pytest_autograd_grader.platforms.wheel import build_wheel

    archive = zipfile.ZipFile(build_wheel(tmp_path))
    license_text = archive.read(f"pytest_autograd_grader-{__version__}.dist-info/licenses/LICENSE").decode()
    assert license_text == (REPO / "LICENSE").read_text(encoding="utf-8")


def test_grading_never_imports_the_platform_set_ups():
    done = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, pytest_autograd_grader.plugin, "
            "pytest_autograd_grader.platforms.manifest_guard; print(sorted(m for m in sys.modules if '.platforms' in m))",
        ],
        capture_output=True,
        text=True,
        check=True,
    )
    # the manifest guard, and none of the set-ups (bundle, course, wheel)
    assert done.stdout.strip() == (
        "['pytest_autograd_grader.platforms', 'pytest_autograd_grader.platforms.manifest', "
        "'pytest_autograd_grader.platforms.manifest_guard']"
    )


# `pip install NAME` where NAME is this grader by its package name (extras and
# a version allowed): the package index does not have it yet
BARE_INSTALL = re.compile(r"pytest[-_]autograd[-_]grader(\[[^\]]*\])?\s*(([=<>!~]=?|===)\s*\S+)?", re.I)


def _bare_installs(text: str) -> list[str]:
    found = []
    for command in re.findall(r"\bpip3?\s+install\b([^\n]*)", text.replace("\\\n", " ")):
        try:
            words = shlex.split(command, comments=True)
        except ValueError:
            words = command.split()
        found += [w for w in words if BARE_INSTALL.fullmatch(w.strip("`'\""))]
    return found


def test_nothing_tells_anyone_to_install_the_grader_from_the_index():
    assert _bare_installs("pip install torch==2.13.0 'pytest-autograd-grader[class]'") == [
        "pytest-autograd-grader[class]"
    ]
    assert _bare_installs("pip3 install pytest-autograd-grader==0.1.0") == ["pytest-autograd-grader==0.1.0"]
    assert (
        _bare_installs(
            "pip install 'pytest-autograd-grader @ git+https://github.com/O/pytest-autograd-grader'"
            " ./grader/pytest_autograd_grader-0.1.0-py3-none-any.whl -e ."
        )
        == []
    )
    files = [
        REPO / "README.md",
        REPO / "README.zh-CN.md",
        *(REPO / "docs").rglob("*.md"),
        *(REPO / "templates").rglob("*"),
        *(REPO / "pytest_autograd_grader").rglob("*"),
    ]
    offenders = {}
    for path in files:
        if not path.is_file() or "__pycache__" in path.parts or path.suffix in (".png", ".pyc"):
            continue
        found = _bare_installs(path.read_text(encoding="utf-8"))
        if found:
            offenders[str(path.relative_to(REPO))] = found
    assert offenders == {}
