"""A small bundled agent and its tools, used by ``make demo`` and the examples: runs offline, no API key."""
