"""Evaluators that score what an agent changed in its environment: ``env_check`` (a command or the row's tests run
there after the loop), ``env_files`` (workspace files against expected content) and ``state_match`` (a stateful
world's final state against the row's expected state). Each observes the environment once, before it is removed,
and scores the recorded observation, so a re-score needs no environment."""
