"""Grading a whole class: ``autograd-grader class``.

``students`` finds the submissions and gives each its id and seed;
``runner`` grades them on warm, forked workers (pytest, torch and the
plugin imported once; every student graded by an ordinary ``pytest
--grade`` session inside one, with the sandbox's full isolation);
``outputs``, ``html_report`` and ``mistakes`` turn the per-student reports
into the gradebook, the LMS import file and the class report; ``cli``
holds the ``class`` and ``merge`` commands.
"""
