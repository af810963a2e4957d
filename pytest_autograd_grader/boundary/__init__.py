"""The student's call and everything that crosses it.

A check calls ``submission("leaf").f(x)``; this package carries the call to
the student's code and brings back only plain data:

* ``submission``: the proxy checks hold, and the executor that runs a call
  inline (the sandbox's executor is the other);
* ``student``: the student's side, running in the worker: loads the
  module, calls the function, answers in bytes;
* ``records``, ``encode``, ``wire``, ``decode``: the records a check reads
  (``TensorRecord``, ``ErrorRecord``, ``ObjectRecord``), made from values
  on the student's side, sent as bytes and read back under ``Limits``;
* ``tracing``: what the student's code did to the graph, recorded in the
  worker;
* ``failures`` and ``sources``: the feedback for a problem on the
  student's side, and the line it happened on;
* ``blame``: a check that tripped over the form of an answer is the
  student's failure, not the check's error;
* ``layout``: which files are checks and which are the student's modules.

It imports only ``outcomes`` and ``i18n`` from the rest of the grader. The
modules the worker imports before any student code runs (``student``,
``tracing``, ``records``, ``encode``, ``wire``, ``decode``) import neither
pytest nor torch at import time; ``blame`` and ``submission`` live on the
grader's side.
"""
