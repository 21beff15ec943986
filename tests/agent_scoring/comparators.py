"""A custom argument comparator for the tests (named by dotted path in ``compare``)."""


def same_parity(actual, expected):
    """True when both are integers of the same parity."""
    return isinstance(actual, int) and isinstance(expected, int) and actual % 2 == expected % 2
