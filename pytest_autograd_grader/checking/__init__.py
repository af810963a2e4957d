"""Verdicts: what torch.autograd says the answer is, and how a student's
answer compares with it.

* ``autograd``: the ``autograd`` fixture's object: references, comparisons
  that explain themselves, partial credit;
* ``compare``: the helpers checks use to compare answers themselves
  (``same``, ``values``, ``first_suspect``) and the tolerances;
* ``gradcheck``: what a failed gradcheck of a student's function means;
* ``diagnose``: the misconception behind a wrong gradient or an error;
* ``seeding`` and ``devices``: the inputs a check draws and the devices it
  runs on.

It reads records from ``boundary`` and raises ``outcomes``; it never
starts a process or imports pytest's side of the grader.
"""
