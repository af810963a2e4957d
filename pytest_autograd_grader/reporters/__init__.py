"""What a graded session writes, one module per reader: the terminal table
(``terminal``), Gradescope's results.json (``gradescope``), GitHub Actions'
step summary, annotations and Classroom result (``github``); ``files``
writes report files safely. The JSON report itself is ``Gradebook.to_json``.

Reporters read a finished ``scoring.Gradebook`` and ``i18n``; nothing of
the checks or the sandbox.
"""

from .files import REPORT_FAILURES, ReportWriteError, write_bytes_atomic, write_json_atomic, write_text_atomic
from .gradescope import gradescope_results
from .terminal import isolation_lines, next_step, table_lines

__all__ = [
    "REPORT_FAILURES",
    "ReportWriteError",
    "gradescope_results",
    "isolation_lines",
    "next_step",
    "table_lines",
    "write_bytes_atomic",
    "write_json_atomic",
    "write_text_atomic",
]
