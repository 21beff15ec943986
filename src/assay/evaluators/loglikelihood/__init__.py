"""Metrics of tasks that score text by its log-likelihood (lm-eval's ``multiple_choice``, ``loglikelihood`` and
``loglikelihood_rolling`` output types): choice accuracies in :mod:`.choice`, corpus perplexities in
:mod:`.perplexity`."""
