import pytest


@pytest.fixture(autouse=True)
def fast_password_hashing(settings):
    """Users log in here only to reach the endpoints under test; the default hasher would
    dominate the run time of the corpus."""
    settings.PASSWORD_HASHERS = ["django.contrib.auth.hashers.MD5PasswordHasher"]
