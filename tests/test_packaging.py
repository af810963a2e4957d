"""The package as pip installs it from a wheel, not only from this checkout."""

import shutil
import subprocess
import sys
import zipfile

from conftest import REPO


def test_the_wheel_holds_every_module_of_the_package(tmp_path):
    # built from a copy: a checkout's own egg-info and build/ would hide a
    # subpackage the configuration leaves out
    source = tmp_path / "source"
    source.mkdir()
    for name in ("pyproject.toml", "README.md"):
        shutil.copy(REPO / name, source / name)
    shutil.copytree(REPO / "pytest_autograd_grader", source / "pytest_autograd_grader",
                    ignore=shutil.ignore_patterns("__pycache__"))
    subprocess.run([sys.executable, "-m", "pip", "wheel", "--quiet", "--no-deps", "--no-build-isolation",
                    "-w", str(tmp_path / "dist"), str(source)], check=True, capture_output=True)
    (wheel,) = (tmp_path / "dist").glob("*.whl")
    shipped = set(zipfile.ZipFile(wheel).namelist())
    modules = {str(p.relative_to(source)) for p in (source / "pytest_autograd_grader").rglob("*.py")}
    assert modules - shipped == set()
    # the scripts gradescope-bundle puts in the zip are package data
    scripts = {str(p.relative_to(source)) for p in (source / "pytest_autograd_grader" / "gradescope_files").iterdir()}
    assert "pytest_autograd_grader/gradescope_files/run_autograder" in scripts and scripts - shipped == set()
