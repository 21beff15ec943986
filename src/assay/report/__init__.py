"""Reports of runs: terminal/markdown/JSON tables (``table``), JUnit XML for CI (``junit``), HTML (``html``), and
``assay view``'s servers on 127.0.0.1 of the report (``server``) and of the labelling page (``labelserver``)."""
