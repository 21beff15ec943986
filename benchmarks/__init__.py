"""Speed benchmarks: ``python -m benchmarks [name ...]`` (or ``make bench``) runs them and prints figures."""
