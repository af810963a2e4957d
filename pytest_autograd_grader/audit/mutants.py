"""Generated mutants of a solution module: one mistake each, formatting kept.

The module is parsed with libcst (which keeps comments and layout, so a
mutant's diff shows only its change); every node inside a function body is
offered to every operator (operators.py) in source order, and each change
becomes one mutant. Docstrings, imports, type annotations, decorators,
parameter defaults, ``raise``/``assert`` statements and module-level code
(``if __name__ == "__main__":`` included) are never mutated. A mutant's id
hashes the mutated function's source, not a line number, so it survives
edits elsewhere in the file (an accepted survivor stays accepted).
"""

from __future__ import annotations

import difflib
import hashlib
from collections.abc import Iterator
from dataclasses import dataclass

import libcst as cst
from libcst.metadata import MetadataWrapper, PositionProvider

from ..i18n import msg
from .cst_edits import Change
from .operators import OPERATORS

_SKIPPED = (cst.Import, cst.ImportFrom, cst.Annotation, cst.Decorator, cst.Parameters, cst.Raise, cst.Assert)
_PASS = cst.SimpleStatementLine(body=[cst.Pass()])
_TopStatement = cst.SimpleStatementLine | cst.BaseCompoundStatement  # what a module's body holds


class MutantsError(ValueError):
    """A module mutants cannot be made of; the message says why and what to do."""


@dataclass(frozen=True)
class Mutant:
    id: str  # "<module>.<function>:<operator>:<8 hex of sha256 of the mutated function's source>"
    module: str
    function: str  # qualified name, e.g. "Square.backward"
    operator: str
    description: str
    line: int  # 1-based line of the change
    source: str  # the whole mutated module
    diff: str  # unified diff, solution -> mutant


@dataclass(frozen=True)
class _Site:
    top: int  # index of the module-level statement holding the change
    path: tuple[cst.CSTNode, ...]  # the nodes from that statement down to the target's parent
    function: cst.FunctionDef  # the innermost function holding the change
    qualname: str
    target: cst.CSTNode
    operator: str
    change: Change
    line: int


class _Sites(cst.CSTVisitor):
    """Every (node, operator, change) inside a function body, in source order."""

    METADATA_DEPENDENCIES = (PositionProvider,)

    def __init__(self) -> None:
        super().__init__()
        self.sites: list[_Site] = []
        self._scopes: list[tuple[str, cst.CSTNode]] = []  # (name, ClassDef or FunctionDef)
        self._parents: list[cst.CSTNode] = []  # from the module down
        self._tops: dict[int, int] = {}  # id of a module-level statement -> its index
        self._top = -1

    def on_visit(self, node: cst.CSTNode) -> bool:
        if isinstance(node, cst.Module):
            self._tops = {id(statement): index for index, statement in enumerate(node.body)}
        self._top = self._tops.get(id(node), self._top)
        if isinstance(node, (cst.ClassDef, cst.FunctionDef)):
            self._scopes.append((node.name.value, node))
        elif isinstance(node, _SKIPPED) or _is_docstring(node):
            self._parents.append(node)
            return False  # on_leave still comes
        elif (function := self._function()) is not None:
            self._offer(node, function)
        self._parents.append(node)
        return True

    def on_leave(self, original_node: cst.CSTNode) -> None:
        self._parents.pop()
        if isinstance(original_node, (cst.ClassDef, cst.FunctionDef)):
            self._scopes.pop()

    def _function(self) -> cst.FunctionDef | None:
        functions = [node for _, node in self._scopes if isinstance(node, cst.FunctionDef)]
        return functions[-1] if functions else None

    def _offer(self, node: cst.CSTNode, function: cst.FunctionDef) -> None:
        ancestors = tuple(self._parents)
        qualname = ".".join(name for name, _ in self._scopes)
        for name, operator in OPERATORS.items():
            for change in operator.mutations(node, ancestors):
                self.sites.append(
                    _Site(self._top, ancestors[1:], function, qualname, node, name, change, self._line(node))
                )

    def _line(self, node: cst.CSTNode) -> int:
        # libcst 1.0 leaves some nodes of a match statement without a position: the nearest ancestor's line
        for candidate in (node, *reversed(self._parents)):
            position = self.get_metadata(PositionProvider, candidate, None)
            if position is not None:
                return position.start.line
        return 1


def _is_docstring(node: cst.CSTNode) -> bool:
    """A statement that is only a string: a docstring (or a string used as a comment)."""
    return (
        isinstance(node, cst.SimpleStatementLine)
        and len(node.body) == 1
        and isinstance(node.body[0], cst.Expr)
        and isinstance(node.body[0].value, (cst.SimpleString, cst.ConcatenatedString))
    )


class _Replace(cst.CSTTransformer):
    """Puts ``new`` in place of ``site.target``, walking only the path down to it (much faster
    than visiting the whole module for every mutant), and keeps the mutated function."""

    def __init__(self, site: _Site, new: object) -> None:
        super().__init__()
        self._site, self._new = site, new
        self._path = {id(node) for node in site.path}
        self.function: cst.FunctionDef | None = None

    def on_visit(self, node: cst.CSTNode) -> bool:
        return id(node) in self._path

    def on_leave(self, original_node, updated_node):
        if original_node is self._site.target:
            return self._new
        if original_node is self._site.function:
            self.function = updated_node
        return updated_node


class _Layout:
    """The module's text cut around each module-level statement, so that a mutant's source is
    its one changed statement spliced in (libcst writes a statement exactly as parsed)."""

    def __init__(self, module: cst.Module) -> None:
        self.module, self.code = module, module.code
        self.spans: list[tuple[int, int]] = []
        start = None
        for statement in module.body:
            text = module.code_for_node(statement)
            found = self.code.find(text, start or 0)
            # statements follow each other with nothing between (comments and blank lines are part of
            # the next one); otherwise, not expected, every mutant writes the whole module
            if found < 0 or (start is not None and found != start):
                self.spans = []
                break
            self.spans.append((found, found + len(text)))
            start = found + len(text)

    def spliced(self, top: int, statement: _TopStatement) -> str:
        if not self.spans:
            body = list(self.module.body)
            body[top] = statement
            return self.module.with_changes(body=body).code
        start, end = self.spans[top]
        return self.code[:start] + self.module.code_for_node(statement) + self.code[end:]


def _parse(source: str, label: str) -> cst.Module:
    """The module's tree; MutantsError saying what to do when Python or libcst cannot read it."""
    try:
        compile(source, label, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError, MemoryError) as error:
        line = getattr(error, "lineno", None) or "?"
        reason = getattr(error, "msg", None) or str(error) or type(error).__name__
        raise MutantsError(msg("audit.op.unparsable", path=label, line=line, reason=reason)) from None
    try:
        return cst.parse_module(source)
    except (cst.ParserSyntaxError, ValueError, RecursionError) as error:
        # valid Python libcst cannot read: syntax newer than the installed libcst
        raise MutantsError(
            msg("audit.op.unreadable", path=label, reason=" ".join(str(error).split())[:200], version=_libcst_version())
        ) from None


def _libcst_version() -> str:
    try:
        from importlib.metadata import version

        return version("libcst")
    except Exception:  # a libcst without metadata still imports; its version is only informative
        return "?"


def _compiles(source: str, label: str) -> bool:
    try:
        compile(source, label, "exec", dont_inherit=True)
    except (SyntaxError, ValueError, RecursionError):
        return False
    return True


def _apply(layout: _Layout, site: _Site, label: str) -> tuple[str, str] | None:
    """(mutated module source, mutated function source), or None when it would not compile."""
    news = [site.change.new]
    if isinstance(site.change.new, cst.RemovalSentinel):
        # only a statement is ever dropped (operators.py's DROP)
        assert isinstance(site.target, _TopStatement)
        news.append(_PASS.with_changes(leading_lines=site.target.leading_lines))  # the block's only statement
    for new in news:
        replace = _Replace(site, new)
        statement = layout.module.body[site.top].visit(replace)
        # the change lies inside a function, below the top statement, which is only rebuilt around it
        assert isinstance(statement, _TopStatement)
        source = layout.spliced(site.top, statement)
        if _compiles(source, label):
            # the site's function is on the path to its target: _Replace kept it
            assert replace.function is not None
            return source, layout.module.code_for_node(replace.function.with_changes(leading_lines=()))
    return None


def _diff(before: str, after: str, label: str) -> str:
    lines = difflib.unified_diff(
        before.splitlines(keepends=True), after.splitlines(keepends=True), fromfile=label, tofile="mutant", n=2
    )
    return "".join(line if line.endswith("\n") else line + "\n" for line in lines)


def _describe(site: _Site) -> str:
    return msg("audit.op." + site.operator, old=site.change.old_code, new=site.change.new_code)


def _mutants(module: cst.Module, sites: list[_Site], name: str, label: str) -> Iterator[Mutant]:
    layout = _Layout(module)
    seen_sources = {layout.code}
    seen_ids: set[str] = set()
    for site in sites:
        applied = _apply(layout, site, label)
        if applied is None or applied[0] in seen_sources:
            continue
        source, function_source = applied
        seen_sources.add(source)
        digest = hashlib.sha256(function_source.encode("utf-8")).hexdigest()
        prefix = f"{name}.{site.qualname}:{site.operator}:"
        mutant_id = prefix + digest[:8]
        if mutant_id in seen_ids:  # eight hex digits clash: longer ones tell the two apart
            mutant_id = prefix + digest[:16]
        seen_ids.add(mutant_id)
        yield Mutant(
            mutant_id,
            name,
            site.qualname,
            site.operator,
            _describe(site),
            site.line,
            source,
            _diff(layout.code, source, label),
        )


def mutants_of(source: str, module: str, path_label: str = "") -> list[Mutant]:
    """Every mutant of ``source`` (the solution module ``module``), in source order,
    each compiling and each with a different source; MutantsError when it does not parse."""
    label = path_label or f"{module}.py"
    source = source.removeprefix("\ufeff")  # a byte-order mark, which Python's import skips too
    tree = _parse(source, label)
    visitor = _Sites()
    try:
        wrapper = MetadataWrapper(tree)  # a copy whose nodes are all distinct, as metadata needs
        wrapper.visit(visitor)
        return list(_mutants(wrapper.module, visitor.sites, module, label))
    except RecursionError:  # code nested deeper than libcst's recursive walk goes
        raise MutantsError(msg("audit.op.too_deep", path=label)) from None
