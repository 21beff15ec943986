"""Reports of runs: terminal/markdown/JSON tables (``table``), JUnit XML for CI (``junit``), HTML (``html``)."""
