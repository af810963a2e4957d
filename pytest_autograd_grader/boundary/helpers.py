"""Functions handed to the sandbox: ``proxy.run(helper, *args)`` or a
function argument of a student's function.

A function of the course's own code (a helper in the checks file, its
conftest.py, a course module) is never imported in the worker by its
module's name: that works only where the checks sit beside the student's
file (and then runs the checks file inside the student's sandbox), and
fails where they are kept apart. Its source is sent instead, with what it
uses of its module: modules by name, plain values, the module's other
functions the same way. Everything is checked on the grader's side before
the call (``ship``), so a helper the worker could not rebuild is the
check's error, named, never the student's failure. A function of a
library or of the grader is sent by name (``by_name``).

``rebuild`` is the worker's side and imports nothing heavy: a numpy-only
worker has no torch.
"""

from __future__ import annotations

import ast
import builtins
import dis
import importlib
import inspect
import sys
import textwrap
import types
from collections.abc import Callable
from typing import Any, cast

from .shortening import shorten

TORCH_NAMES = ("torch", "functorch", "torchvision")


class HelperError(Exception):
    """A function the sandbox could not rebuild; the text says what to change."""


# -- the grader's side ----------------------------------------------------


def ship(fn: Any, numpy_only: bool, value_tree: Callable[[Any, str], Any]) -> dict:
    """The tree that rebuilds ``fn`` in a worker. ``value_tree(value, name)``
    encodes a plain value the function uses (raising ``CheckValueError``
    for one that cannot cross)."""
    if type(fn) is types.FunctionType and _is_course_code(fn):
        return _Bundle(numpy_only, value_tree).tree(fn)
    return by_name(fn)


def by_name(fn: Any) -> dict:
    """A library's or the grader's function (or class), imported by name
    in the worker: refused unless that finds this very object."""
    from ..i18n import msg

    module = getattr(fn, "__module__", None)
    qualname = getattr(fn, "__qualname__", None) or getattr(fn, "__name__", None)
    if type(module) is not str or type(qualname) is not str or "<" in qualname:
        raise HelperError(msg("check.helper.not_found", name=shorten(str(qualname or fn), 100)))
    if "<locals>" in qualname:
        raise HelperError(msg("check.helper.top_level", name=qualname))
    loaded = sys.modules.get(module)
    if loaded is not None and _is_course_file(getattr(loaded, "__file__", None)):
        raise HelperError(msg("check.helper.course_object", name=qualname, module=module))
    if _find(module, qualname) is not fn:
        raise HelperError(msg("check.helper.not_found", name=f"{module}.{qualname}"))
    return {"$": "function", "module": module, "qualname": qualname, "file": ""}


class _Bundle:
    """One course function and what it uses, rebuilt in one namespace."""

    def __init__(self, numpy_only: bool, value_tree: Callable[[Any, str], Any]):
        self.numpy_only = numpy_only
        self.value_tree = value_tree
        self.sources: dict[str, str] = {}
        self.names: dict[str, Any] = {}

    def tree(self, fn: types.FunctionType) -> dict:
        from ..i18n import msg

        if "." in fn.__qualname__ or "<" in fn.__qualname__:
            raise HelperError(msg("check.helper.top_level", name=fn.__qualname__))
        self.add(fn)
        return {
            "$": "function",
            "module": fn.__module__,
            "qualname": fn.__name__,
            "file": fn.__code__.co_filename,
            "sources": list(self.sources.values()),
            "names": self.names,
        }

    def add(self, fn: types.FunctionType) -> None:
        from ..i18n import msg

        name = fn.__name__
        self.sources[name] = ""  # taken: a function that calls itself or a sibling back is added once
        self.sources[name] = _source(fn)
        self.refuse_torch_imports(fn.__code__, name)
        loads, names = _used_globals(fn.__code__)
        for used in sorted(loads | names | _default_names(self.sources[name])):
            if used in self.names or used in self.sources:
                continue
            if used in fn.__globals__:
                self.names[used] = self.value(used, fn.__globals__[used], name)
            elif not hasattr(builtins, used) and used in loads - _stored_globals(fn.__code__):
                raise HelperError(msg("check.helper.undefined", name=name, used=used))

    def refuse_torch_imports(self, code: types.CodeType, name: str) -> None:
        from ..i18n import msg

        for module in _imported(code):
            if self.numpy_only and module.split(".")[0] in TORCH_NAMES:
                raise HelperError(msg("check.helper.torch", name=name, what=module))

    def value(self, used: str, value: Any, owner: str) -> dict:
        """How the worker gets the module-level ``value`` a function uses."""
        from ..i18n import msg
        from ..outcomes import CheckValueError

        module = value.__name__ if isinstance(value, types.ModuleType) else getattr(value, "__module__", None)
        if (
            self.numpy_only
            and type(module) is str
            and module.split(".")[0] in TORCH_NAMES
            and (callable(value) or isinstance(value, types.ModuleType))
        ):
            what = used if used == module else f"{used} ({module})"
            raise HelperError(msg("check.helper.torch", name=owner, what=what))
        if isinstance(value, types.ModuleType):
            if _is_course_file(getattr(value, "__file__", None)):
                raise HelperError(msg("check.helper.course_object", name=used, module=value.__name__))
            return {"$": "module", "name": value.__name__}
        if type(value) is types.FunctionType and _is_course_code(value):
            if value.__name__ not in self.sources:
                self.add(value)
            return {"$": "same", "name": value.__name__}
        if callable(value):
            found = by_name(value)
            return {"$": "import", "module": found["module"], "qualname": found["qualname"]}
        try:
            return {"$": "value", "tree": self.value_tree(value, used)}
        except CheckValueError:
            raise HelperError(msg("check.helper.value", name=owner, used=used, type=type(value).__name__)) from None


def _is_course_file(filename: Any) -> bool:
    from .author_code import is_author_file

    return type(filename) is str and is_author_file(filename)


def _is_course_code(fn: types.FunctionType) -> bool:
    return str(fn.__module__).split(".")[0] != "pytest_autograd_grader" and _is_course_file(fn.__code__.co_filename)


def _find(module: str, qualname: str) -> Any:
    try:
        return _resolve(importlib.import_module(module), qualname)
    except Exception:
        return None


def _source(fn: types.FunctionType) -> str:
    """The function's own source, at its line in its file (tracebacks in the
    worker then give the checks file's line numbers)."""
    from ..i18n import msg

    try:
        source = textwrap.dedent(inspect.getsource(fn))
        tree = ast.parse(source)
    except (OSError, TypeError, SyntaxError):
        raise HelperError(msg("check.helper.no_source", name=fn.__qualname__)) from None
    node = tree.body[0] if len(tree.body) == 1 else None
    if not isinstance(node, (ast.FunctionDef, ast.AsyncFunctionDef)) or node.name != fn.__name__:
        raise HelperError(msg("check.helper.no_source", name=fn.__qualname__))
    if node.decorator_list:
        raise HelperError(msg("check.helper.decorated", name=fn.__qualname__))
    return "\n" * max(0, fn.__code__.co_firstlineno - 1) + source


def _codes(code: types.CodeType):
    yield code
    for const in code.co_consts:
        if isinstance(const, types.CodeType):
            yield from _codes(const)


def _used_globals(code: types.CodeType) -> tuple[set[str], set[str]]:
    """The global names the function's code reads (LOAD_GLOBAL), and those
    a class body inside it may read (LOAD_NAME: maybe its own)."""
    loads, names = set(), set()
    for inner in _codes(code):
        for instruction in dis.get_instructions(inner):
            if instruction.opname == "LOAD_GLOBAL":
                loads.add(instruction.argval)
            elif instruction.opname == "LOAD_NAME":
                names.add(instruction.argval)
    return loads, names


def _stored_globals(code: types.CodeType) -> set[str]:
    return {i.argval for inner in _codes(code) for i in dis.get_instructions(inner) if i.opname == "STORE_GLOBAL"}


def _imported(code: types.CodeType) -> set[str]:
    return {i.argval for inner in _codes(code) for i in dis.get_instructions(inner) if i.opname == "IMPORT_NAME"}


def _default_names(source: str) -> set[str]:
    """Names the defaults of the function's parameters read, when it is defined."""
    node = cast(ast.FunctionDef, ast.parse(source).body[0])  # the source of one def
    defaults = [d for d in (*node.args.defaults, *node.args.kw_defaults) if d is not None]
    return {n.id for d in defaults for n in ast.walk(d) if isinstance(n, ast.Name) and isinstance(n.ctx, ast.Load)}


# -- the worker's side ----------------------------------------------------


def _resolve(obj: Any, path: str) -> Any:
    for part in path.split("."):
        obj = getattr(obj, part)
    return obj


def rebuild(tree: dict, materialize: Callable[[Any], Any]) -> Any:
    """The function ``ship`` sent: imported by name, or its source run in a
    namespace of what it uses (``materialize`` makes the plain values)."""
    import __future__

    sources = tree.get("sources")
    if not sources:
        return _resolve(importlib.import_module(tree["module"]), tree["qualname"])
    namespace: dict[str, Any] = {"__name__": str(tree["module"]), "__builtins__": builtins}
    same = {}
    for name, entry in tree["names"].items():
        tag = entry["$"]
        if tag == "module":
            namespace[name] = importlib.import_module(entry["name"])
        elif tag == "import":
            namespace[name] = _resolve(importlib.import_module(entry["module"]), entry["qualname"])
        elif tag == "value":
            namespace[name] = materialize(entry["tree"])
        elif tag == "same":
            same[name] = entry["name"]
    # annotations are kept as text: they may name what was not sent
    flags = __future__.annotations.compiler_flag
    for source in sources:
        exec(compile(source, f"<{tree['module']}>", "exec", flags=flags, dont_inherit=True), namespace)
    for name, original in same.items():
        namespace[name] = namespace[original]
    return namespace[tree["qualname"]]
