"""The engine track's differential fuzzing: random programs (their format
and builder ``builder``, the strategies that draw them ``programs``) run
on the student's numpy engine in the worker and in torch.autograd in the
grader (``interpret``), compared (``differences``) and shrunk to the
smallest program that disagrees (``fuzz``), told as Python with a
diagnosis (``render``, ``feedback``).

Nothing here imports torch at import time: ``interpret.run_engine`` runs in
the student's worker, which may have no torch at all."""
