"""Whose code a file is: the check author's (a checks file, its conftest,
a course module), or a library's (torch, the standard library, pytest, an
installed package, this grader). Read by ``blame`` (which frame of a
traceback is the check's) and ``helpers`` (which functions are sent to the
sandbox by their source). Imports nothing a sandbox worker may not have.
"""

from __future__ import annotations

import functools
import os
import site
import sys
import sysconfig


@functools.cache
def library_dirs() -> tuple[str, ...]:
    paths = sysconfig.get_paths()
    dirs = {paths[key] for key in ("stdlib", "platstdlib", "purelib", "platlib") if key in paths}
    dirs.update(site.getsitepackages() if hasattr(site, "getsitepackages") else ())
    dirs.add(os.path.dirname(os.path.dirname(__file__)))  # the grader's package
    for name in ("pytest", "_pytest", "pluggy"):
        file = getattr(sys.modules.get(name), "__file__", None)
        if file:
            dirs.add(os.path.dirname(file))
    return tuple(os.path.join(os.path.realpath(d), "") for d in dirs)


def is_author_file(filename: str) -> bool:
    """Code the check's author wrote: not torch, the stdlib, pytest, an
    installed library or this package."""
    if not filename or filename.startswith("<"):
        return False
    path = os.path.realpath(filename)
    dirs = library_dirs()
    torch_file = getattr(sys.modules.get("torch"), "__file__", None)
    if torch_file:
        dirs += (os.path.join(os.path.realpath(os.path.dirname(torch_file)), ""),)
    return not path.startswith(dirs)
