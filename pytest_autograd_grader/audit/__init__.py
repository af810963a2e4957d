"""``autograd-grader audit``: which wrong answers a course's checks let
through, found before the students find them.

One module per responsibility:

- ``planted.py``     the author's planted mistakes (``mistakes/<topic>/<name>.py``) and their docstring fields
- ``mutants.py``     generated mutants of each solution module (libcst), behind ``operators.py``'s operators,
                     which share ``cst_edits.py``'s libcst rewriting
- ``variants.py``    the synthetic class: per topic a checks folder with its checks only, and one folder
                     per variant (the solutions with that topic's module replaced)
- ``grading.py``     every (variant, seed) graded as a student on the class runner's warm workers
- ``verdicts.py``    the reports read back: baseline, killed / survived / named, the per-check table,
                     the JSON document
- ``accepted.py``    the author's accepted survivors (equivalent mutants, each with a reason)
- ``audit_command.py`` the command: arguments, the run, the exit code
- ``text_report.py`` / ``html_report.py``  the document shown in a terminal and as a page

libcst is imported only where mutants are made: the package imports
without it, and ``audit`` then says how to install it.
"""
