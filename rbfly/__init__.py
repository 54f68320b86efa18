"""
rbfly: a fast and complete asyncio client for RabbitMQ Streams.

The package is split into the AMQP 1.0 message codec (:py:mod:`rbfly.amqp`)
and the RabbitMQ Streams client (:py:mod:`rbfly.streams`).
"""

def __getattr__(name: str) -> str:
    # importlib.metadata is slow to import; look the version up on demand
    if name == '__version__':
        from importlib.metadata import PackageNotFoundError, version
        try:
            return version('rbfly')
        except PackageNotFoundError:  # pragma: no cover - source tree
            return '0+unknown'
    raise AttributeError('module {!r} has no attribute {!r}'.format(__name__, name))

__all__ = ['__version__']
