"""The runner: schedules requests, caches and retries them, scores and appends every finished sample."""
