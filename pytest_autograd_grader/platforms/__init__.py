"""The set-ups for instructors' platforms: Gradescope's autograder bundle
(``gradescope_bundle``), GitHub Classroom's course of two repositories
(``github_classroom``), what both share (``course_files``: the copy of a
checks directory, reproducible zips, the listing of what was written), and
the wheel of this grader that both carry (``wheel``), so that neither
installs a package the index does not have.

These modules may import from the rest of the package; nothing in the
grading flow imports them (a ``pytest --grade`` run never loads this
subpackage).
"""


class SetupError(Exception):
    """A set-up cannot be written; the message says what to do."""
