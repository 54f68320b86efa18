"""
What the fake broker says of itself and whom it lets in: the one value its
core (:py:mod:`rbfly.testing.core`) and its sessions
(:py:mod:`rbfly.testing.session`) both read.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

@dataclass(frozen=True)
class BrokerConfig:
    """
    What the fake broker says of itself and whom it lets in.

    :param version: RabbitMQ version in its peer properties; rbfly enables
        features by it.
    :param users: User names and passwords SASL PLAIN accepts.
    :param virtual_hosts: Virtual hosts ``Open`` accepts.
    :param host: Host advertised in ``Open`` and ``Metadata``.
    :param port: Port advertised in ``Open`` and ``Metadata``.
    :param request_timeout: Milliseconds a client may leave a
        ``ConsumerUpdate`` unanswered before its connection is closed
        (RabbitMQ's ``rabbitmq_stream.request_timeout``, 60 s); ``None``:
        forever.
    """
    version: str = '4.3.0'
    users: Mapping[str, str] = field(default_factory=lambda: {'guest': 'guest'})
    virtual_hosts: frozenset[str] = frozenset({'/'})
    host: str = '127.0.0.1'
    port: int = 5552
    request_timeout: int | None = 60_000

__all__ = ['BrokerConfig']
