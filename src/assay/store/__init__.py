"""Run folders on disk: the manifest, samples.jsonl and its index, append-only side files (labels, calibrations).

Below the runner and the results readers, which both read and write run folders."""
