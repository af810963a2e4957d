"""The documentation as its readers meet it: the site built from the
repository with warnings as errors, every page opened in headless Chromium
with no link or picture that leads nowhere (a missing page, file or
anchor), the READMEs' links to files that exist, and the Chinese student
guide saying what the English one says (same sections, same commands).

Building the site needs the docs extra (mkdocs, mkdocs-material,
mkdocstrings); opening it needs Chromium, its driver and selenium. Without
them the tests say what to install and skip, except in CI (the variable CI
set), where .ci/run installs them all and a missing one fails. The site's
test carries the journey marker (about 20 s): CI runs it, and
`python -m pytest tests/test_docs_site.py` runs it by hand.
"""

from __future__ import annotations

import os
import re
import subprocess
import sys
from pathlib import Path
from urllib.parse import unquote, urlsplit

import pytest
from headless_browser import chromium

REPO = Path(__file__).resolve().parent.parent
DOCS = REPO / "docs"
STUDENT_PAGES = ("index.md", "watch.md", "notebooks.md", "engine.md")
CPU_INDEX = "--index-url https://download.pytorch.org/whl/cpu"
STUDENT_INSTALL = "pip install torch==2.13.0 -e '.[student]'"


def _needs(what: str, install: str) -> None:
    if os.environ.get("CI"):
        pytest.fail(f"CI must build and open the documentation site: {what} is missing ({install})")
    pytest.skip(f"needs {what}: {install}")


# -- the Chinese student guide keeps up with the English one -----------------

FENCE = re.compile(r"^```(\w*)\n(.*?)^```", re.S | re.M)
# an inline command a reader types: `pytest ...`, `pip install ...`, ...
INLINE_COMMAND = re.compile(r"`((?:pytest|python|python3|pip|autograd-grader|mkdocs) [^`]+)`")


def _blocks(text: str, languages: tuple[str, ...] = ("bash", "python")) -> list[str]:
    return [body.strip() for lang, body in FENCE.findall(text) if lang in languages]


def _headings(text: str) -> list[int]:
    """The level of each heading, code blocks left out."""
    prose = FENCE.sub("", text)
    return [len(m.group(1)) for m in re.finditer(r"^(#{1,6}) \S", prose, re.M)]


def _anchors(text: str) -> list[str]:
    return re.findall(r"\]\([^)#\s]*#([^)\s]+)\)", text)


@pytest.mark.parametrize("page", STUDENT_PAGES)
def test_the_chinese_student_guide_has_every_section_and_command_of_the_english_one(page):
    english = (DOCS / "students" / page).read_text(encoding="utf-8")
    chinese = (DOCS / "zh" / "students" / page).read_text(encoding="utf-8")
    assert _headings(chinese) == _headings(english), f"zh/students/{page} has other sections than students/{page}"
    missing = [block for block in _blocks(english) if block not in _blocks(chinese)]
    assert missing == [], f"zh/students/{page} lacks these code blocks of students/{page}: {missing}"
    commands = [c for c in INLINE_COMMAND.findall(english) if c not in chinese]
    assert commands == [], f"zh/students/{page} lacks these commands of students/{page}: {commands}"
    # each heading carries the English page's anchor, so a link to a section works in both
    ids = re.findall(r"^#{1,6} .*\{#([\w-]+)\}$", chinese, re.M)
    assert len(ids) == len(_headings(chinese)), f"zh/students/{page}: a heading without an {{#anchor}}"
    for anchor in _anchors(english):
        assert anchor in _anchors(chinese) or f"{{#{anchor}}}" in chinese, (page, anchor)


def test_the_torch_install_advice_agrees_in_every_language():
    """The English and Chinese READMEs and student guides give the same
    install: torch pinned first, its CPU build from PyTorch's index on a
    machine without a GPU, and the student's one short command."""
    for name in ("README.md", "README.zh-CN.md", "docs/students/index.md", "docs/zh/students/index.md"):
        text = (REPO / name).read_text(encoding="utf-8")
        assert CPU_INDEX in text and "torch==2.13.0" in text, name
        assert STUDENT_INSTALL in text, name
    for name in ("README.md", "README.zh-CN.md"):
        assert "CUDA" in (REPO / name).read_text(encoding="utf-8"), name


# -- the READMEs' links ----------------------------------------------------------

LINK = re.compile(r"!?\[[^\]]*\]\(([^)\s]+)\)|<img[^>]*\ssrc=\"([^\"]+)\"")


@pytest.mark.parametrize("readme", ["README.md", "README.zh-CN.md"])
def test_every_relative_link_of_the_readmes_points_to_a_file_that_exists(readme):
    text = (REPO / readme).read_text(encoding="utf-8")
    targets = [a or b for a, b in LINK.findall(FENCE.sub("", text))]
    relative = [t for t in targets if not urlsplit(t).scheme and not t.startswith("#")]
    assert relative, f"{readme} links to nothing in the repository"
    broken = [t for t in relative if not (REPO / unquote(t.split("#")[0])).exists()]
    assert broken == [], f"{readme} links to files that do not exist: {broken}"


# -- the site, built and opened in a browser -------------------------------------


def _build(site: Path) -> None:
    try:
        import material  # noqa: F401
        import mkdocs  # noqa: F401
        import mkdocstrings  # noqa: F401
    except ImportError:
        _needs("mkdocs with mkdocs-material and mkdocstrings", "pip install -e '.[docs]'")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run(
        [
            sys.executable,
            "-m",
            "mkdocs",
            "build",
            "--strict",
            "--quiet",
            "-f",
            str(REPO / "mkdocs.yml"),
            "--site-dir",
            str(site),
        ],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, f"mkdocs build --strict failed:\n{done.stdout[-4000:]}\n{done.stderr[-6000:]}"


@pytest.fixture
def browser(tmp_path):
    yield from chromium(tmp_path / "profile", "build and open the documentation site")


# what a page shows: every link's and picture's address as the browser
# resolved it, and every id a fragment may name
READ_PAGE = """
const refs = [];
for (const a of document.querySelectorAll('a[href]')) refs.push(['a', a.getAttribute('href'), a.href]);
for (const img of document.querySelectorAll('img[src]')) refs.push(['img', img.getAttribute('src'), img.src]);
const ids = Array.from(document.querySelectorAll('[id]'), e => e.id)
    .concat(Array.from(document.querySelectorAll('a[name]'), e => e.name));
return [refs, ids];
"""


def _local_path(raw: str, url: str, site: Path) -> Path | None:
    """The file a link leads to, or None for the web. The 404 page links
    from the site's root ('/students/index.html'), as a web server serves
    it for any path: those resolve under the site."""
    parts = urlsplit(url)
    if parts.scheme != "file":
        return None
    if raw.startswith("/") and not raw.startswith("//"):
        return site / unquote(urlsplit(raw).path).lstrip("/")
    return Path(unquote(parts.path))


@pytest.mark.journey  # a reader's first contact, about 20 s: the build, then 24 pages in Chromium
def test_the_site_builds_strictly_and_no_page_has_a_broken_link_or_picture(tmp_path, browser):
    site = tmp_path / "site"
    _build(site)
    pages = sorted(site.rglob("*.html"))
    sources = {p.relative_to(DOCS).with_suffix(".html") for p in DOCS.rglob("*.md")}
    assert sources <= {p.relative_to(site) for p in pages}, "a page of docs/ was not built"
    links: list[tuple[str, str, str, str]] = []
    ids: dict[Path, set[str]] = {}
    for page in pages:
        browser.get(page.as_uri())
        refs, found = browser.execute_script(READ_PAGE)
        ids[page.resolve()] = set(found)
        links += [(str(page.relative_to(site)), kind, raw, url) for kind, raw, url in refs]
    broken = []
    for page, kind, raw, url in links:
        target = _local_path(raw, url, site)
        if target is None:
            continue  # the web: not this site's to check
        if not target.resolve().is_relative_to(site.resolve()):
            broken.append((page, raw, "leads out of the site"))
        elif not target.is_file():
            broken.append((page, raw, "no such file"))
        elif kind == "a" and urlsplit(url).fragment and target.suffix == ".html":
            fragment = unquote(urlsplit(url).fragment)
            if fragment not in ids.get(target.resolve(), set()):
                broken.append((page, raw, f"no anchor #{fragment}"))
    assert broken == [], "broken links in the built site:\n" + "\n".join(map(str, broken))
    checked = [link for link in links if _local_path(link[2], link[3], site) is not None]
    assert any(kind == "img" for _, kind, _, _ in checked), "the site shows no picture: the screenshot is gone"
