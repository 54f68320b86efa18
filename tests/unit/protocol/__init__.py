"""Unit tests of the sans-IO RabbitMQ Streams protocol core."""
