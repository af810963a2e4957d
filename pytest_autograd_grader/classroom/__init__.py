"""Grading a whole class: ``autograd-grader class``.

``students`` finds the submissions and gives each its id and seed;
``pool`` grades them on warm, forked workers (pytest, torch and the
plugin imported once), and ``runner`` is what each worker runs: every
student graded by an ordinary ``pytest --grade`` session (collected once
per worker by ``session_loop``), with the sandbox's full isolation;
``class_data`` reads the per-student reports back; ``outputs``,
``class_report`` and ``frequent_mistakes`` turn them into the gradebook, the LMS
import file and the class report; ``class_command`` holds the ``class`` command
as its steps (``class_validate`` the refusals before grading, ``progress``
the progress shown) and ``merge`` the ``merge`` command.

The top layer but one (only ``cli`` is above it): it may import any layer
of the grader, and nothing of the grader imports it.
"""
