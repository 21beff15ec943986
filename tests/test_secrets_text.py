"""redact_text: free text (error messages, test reports) loses credentials and keeps everything else."""

from assay.secrets import redact_text


def test_urls_in_text_lose_credentials_and_keep_their_punctuation():
    text = "model = {'base_url': 'http://u:SECRET@127.0.0.1:8000/v1?api_key=S2'}; see http://h/x?page=2."
    assert (
        redact_text(text)
        == "model = {'base_url': 'http://u:***@127.0.0.1:8000/v1?api_key=***'}; see http://h/x?page=2."
    )
    assert redact_text("HTTP 500 from http://h/v1?api_key=***: boom") == "HTTP 500 from http://h/v1?api_key=***: boom"


def test_credential_named_values_and_bearer_tokens_are_hidden():
    text = "api_key=sk-1 api_key_env=MY_KEY 'token': 'abc' \"password\": \"p w\" Authorization: Bearer abcdef123"
    assert redact_text(text) == (
        "api_key=*** api_key_env=MY_KEY 'token': '***' \"password\": \"***\" Authorization: Bearer ***"
    )


def test_ordinary_text_is_left_alone():
    text = "cluster_key=doc_id max_tokens: 5 path C:\\runs\\x score=0.5: fine"
    assert redact_text(text) == text
    assert redact_text("") == ""
