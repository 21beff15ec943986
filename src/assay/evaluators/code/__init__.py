"""``code_exec``: model-written code run in the sandbox (:mod:`assay.sandbox`) against the task's tests, with a
data-only boundary between the code and the tests (``wire``, ``serve``, ``runner``, composed by ``programs`` and run
by ``harness``)."""
