"""promptfoo's assertions judged by assay (``row_checks``): the catalog of every type promptfoo 0.123.1 knows
(:mod:`.catalog`), the engine that runs a test's assertions and aggregates them as promptfoo does (:mod:`.engine`),
the handlers by family (:mod:`.textual`, :mod:`.structured`, :mod:`.xmlcheck`, :mod:`.sql`, :mod:`.textmetrics`,
:mod:`.toolcalls`, :mod:`.runtime`, :mod:`.scripts`), code and transforms (:mod:`.code`, :mod:`.node`)."""
