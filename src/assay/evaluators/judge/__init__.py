"""The LLM judge (``llm_judge``, in ``evaluator``) and what it is built from: the judge client, prompts, reply
parsing and verdicts; ``calibration`` measures judges against human labels (agreement, calibration records, the
gate on uncalibrated judges)."""
