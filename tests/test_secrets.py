"""One definition of what looks like a secret, broad for redaction and anchored for scrubbing configs."""

import pytest

from assay.secrets import is_secret_config_key, looks_secret


@pytest.mark.parametrize("name", ["api_key", "OPENAI_API_KEY", "auth_token", "password", "headers", "Authorization"])
def test_secret_names_are_recognised(name):
    assert looks_secret(name)


@pytest.mark.parametrize("name", ["model", "base_url", "temperature", "criteria"])
def test_ordinary_names_are_not(name):
    assert not looks_secret(name)


def test_config_scrubbing_keeps_ordinary_keys_that_end_in_key():
    assert is_secret_config_key("api_key") and is_secret_config_key("refresh_token") and is_secret_config_key("passwd")
    assert not is_secret_config_key("cluster_key") and not is_secret_config_key("cache_key")
