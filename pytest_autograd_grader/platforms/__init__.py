"""What instructors' platforms read: the manifest of a course's checks
(``manifest`` writes it; ``manifest_guard`` verifies it before grading, with
``--grade-manifest``), and the
set-ups: Gradescope's autograder bundle
(``gradescope_bundle``), GitHub Classroom's course of two repositories
(``github_classroom``), what both share (``course_files``: the copy of a
checks directory, reproducible zips, the listing of what was written), and
the wheel of this grader that both carry (``wheel``), so that neither
installs a package the index does not have.

These modules may import the layers below them (declarations, scoring,
reporters, boundary, i18n); of them, a ``pytest --grade`` run imports only
``manifest_guard`` (and ``manifest``), and only with ``--grade-manifest``: the set-ups never load
while a student is graded.
"""


class SetupError(Exception):
    """A set-up cannot be written; the message says what to do."""
