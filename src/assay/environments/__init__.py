"""Per-sample environments: a workspace, a shell and programs (or a stateful world) that agents act in and
evaluators look at after the loop. See :mod:`assay.environments.base`."""
