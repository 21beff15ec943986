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


def test_urls_lose_their_credentials_and_keep_the_rest():
    from assay.secrets import redact_url

    assert redact_url("https://user:sk-123@host:8443/v1") == "https://user:***@host:8443/v1"
    assert redact_url("https://tok@host/v1") == "https://***@host/v1"
    redacted = redact_url("https://host/v1?api_key=sk-1&api-version=2024&access_token=t&sig=s")
    assert redacted == "https://host/v1?api_key=***&api-version=2024&access_token=***&sig=***"
    assert redact_url("http://localhost:8000/v1") == "http://localhost:8000/v1"


def test_specs_and_params_are_redacted_recursively():
    from assay.secrets import redact_params, redact_spec

    assert redact_params({"api_key": "k", "max_tokens": 5, "temperature": 0}) == {
        "api_key": "***",
        "max_tokens": 5,
        "temperature": 0,
    }
    spec = {"provider": "openai", "base_url": "http://u:p@h/v1", "headers": {"X": "y"}, "judges": [{"token": "t"}]}
    assert redact_spec(spec) == {
        "provider": "openai",
        "base_url": "http://u:***@h/v1",
        "headers": "***",
        "judges": [{"token": "***"}],
    }
