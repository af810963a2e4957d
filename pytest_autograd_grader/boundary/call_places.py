"""Where in the student's files a call went: the file and line (for a
notebook, the cell and its line) that the report shows and that the
student's own annotation is put on.

Places are read from the grader's copy of the student's files; the
worker's word decides only which line raised, and is checked for form.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..protocol import Op, Stage
from .decode import decode
from .layout import module_path
from .notebook_cells import left_out_place, notebook_of, redefinition_remark
from .notebook_modules import SUFFIX, cell_of
from .records import ErrorRecord, Limits
from .sources import definition_line


@dataclass(frozen=True)
class CallPlaces:
    """Tells ``on_place`` (file, line, raised[, cell]) where each answer of a
    call to the student's ``module`` in ``directory`` points; ``on_remark``
    hears a line for the check's feedback should it fail (which definition
    was graded)."""

    directory: Path
    module: str
    on_place: Callable[..., None]
    on_remark: Callable[[str], None] | None = None

    def note(self, outcome: dict[str, Any], limits: Limits) -> None:
        """Tell ``on_place`` where in the student's files this answer points:
        the line that raised, else where the called function is defined."""
        stage = outcome["stage"]
        own_file = module_path(self.directory, self.module).name
        if own_file.endswith(SUFFIX) and self._notebook_place(outcome):
            return
        if stage in (Stage.RAISED, Stage.IMPORT):
            error = decode(outcome["error"], limits)
            if isinstance(error, ErrorRecord) and error.file:
                self._place(error.file, error.line, True)
                return
        if stage in (Stage.SYNTAX, Stage.IMPORT_TIMEOUT) and outcome.get("line"):
            self._place(outcome.get("file") or own_file, outcome.get("line"), True)
        elif stage in (
            Stage.MISSING,
            Stage.EMPTY,
            Stage.NO_FUNCTION,
            Stage.IMPORT,
            Stage.IMPORT_TIMEOUT,
            Stage.NOTEBOOK,
        ):
            self.on_place(own_file, None, stage == Stage.IMPORT_TIMEOUT)
        elif stage != Stage.UNSTAGEABLE and outcome.get("op") != Op.RUN:
            # read from the student's file here, not taken from the worker
            self._place(own_file, definition_line(self.directory / own_file, outcome["function"]), False)

    def _notebook_place(self, outcome: dict[str, Any]) -> bool:
        """For a notebook: a function it lacks is placed at the cell that was
        left out with it (True: placed), and the check is told which of
        several definitions of the function it called was graded."""
        if outcome.get("op") == Op.RUN:
            return False
        function = outcome["function"]
        if self.on_remark is not None:
            remark = redefinition_remark(self.directory, self.module, function)
            if remark:
                self.on_remark(remark)
        found = notebook_of(self.directory, self.module)
        where = (
            left_out_place(found[0], function.split(".")[0])
            if found and outcome["stage"] in (Stage.EMPTY, Stage.NO_FUNCTION)
            else None
        )
        if where is None or found is None:  # found: always, with where
            return False
        self.on_place(found[1], where[1], False, where[0])
        return True

    def _place(self, file: Any, line: Any, raised: bool) -> None:
        if type(file) is not str or not 0 < len(file) <= 300 or not file.isprintable():
            return
        parts = Path(file).parts
        if Path(file).is_absolute() or ".." in parts:
            return
        good_line = type(line) is int and 0 < line < 10_000_000
        # a line of a notebook's module is shown as a cell and a line in it,
        # read from the notebook by the grader
        cell = cell_of(self.directory, file, line) if good_line else None
        if cell is not None:
            self.on_place(Path(file).as_posix(), cell[1], raised, cell[0])
        else:
            self.on_place(Path(file).as_posix(), line if good_line and not file.endswith(SUFFIX) else None, raised)
