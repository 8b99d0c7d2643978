"""The end-to-end tests use the integration tests' broker fixtures."""

from tests.integration.conftest import amqp_url, rabbit_prefix  # noqa: F401
