"""
RabbitMQ Streams client.

The user API (the names RbFly 0.10 exported from here, and more) is
imported lazily, on first use, so that importing the sans-IO protocol core
(:py:mod:`rbfly.streams.protocol`) does not import asyncio.
"""

import importlib
import typing as tp

if tp.TYPE_CHECKING:
    from ..amqp import AMQPHeader, MessageCtx, get_message_ctx
    from ..types import AMQPAnnotations, AMQPAppProperties, AMQPBody, AMQPScalar, Symbol
    from .backoff import Backoff
    from .client import StreamsClient, connection, streams_client
    from .compression import Compression
    from .error import (
        ClientClosed,
        ConfirmTimeout,
        ConnectionLost,
        EnqueueTimeout,
        FeatureNotSupported,
        MessageRejected,
        NoRoute,
        NotRetried,
        OAuth2Error,
        RecoveryStalled,
        RequestTimeout,
        ResponseError,
        StreamsError,
    )
    from .events import ConnectionEvent, ConnectionState
    from .health import Health, HealthLimits, Verdict
    from .lifecycle import ResourceState, StateChange
    from .metrics import Metrics, StreamMetrics
    from .oauth2 import ClientCredentials, Token
    from .offset import Offset, OffsetType
    from .parts.options import ClientOptions
    from .pipe import pipe
    from .protocol._publish import SubEntryBatch
    from .publishers.awaited import (
        ConfirmationStatus,
        Publisher,
        PublisherBatch,
        PublisherBatchFast,
        PublisherBatchLimit,
        PublisherBatchMem,
        PublisherBin,
        PublisherBinBatch,
        PublisherPipelined,
        stream_message_ctx,
    )
    from .publishers.superstream import SuperStreamPublisher
    from .subscriptions.errors import OnError
    from .subscriptions.flow import CreditOnTake, CreditWhenProcessed, ManualCredit
    from .subscriptions.handoff import ConsumerUpdateContext
    from .subscriptions.subscription import Subscription as Subscriber
    from .types import BloomFilterExtract, MessageFilter
    from .worker import until_signal

_EXPORTS = {
    'AMQPHeader': '..amqp',
    'MessageCtx': '..amqp',
    'get_message_ctx': '..amqp',
    'AMQPAnnotations': '..types',
    'AMQPAppProperties': '..types',
    'AMQPBody': '..types',
    'AMQPScalar': '..types',
    'Symbol': '..types',
    'StreamsClient': '.client',
    'connection': '.client',
    'streams_client': '.client',
    'ClientClosed': '.error',
    'ConfirmTimeout': '.error',
    'ConnectionLost': '.error',
    'FeatureNotSupported': '.error',
    'MessageRejected': '.error',
    'NoRoute': '.error',
    'RequestTimeout': '.error',
    'RecoveryStalled': '.error',
    'SuperStreamPublisher': '.publishers.superstream',
    'ResponseError': '.error',
    'StreamsError': '.error',
    'Offset': '.offset',
    'OffsetType': '.offset',
    'Publisher': '.publishers.awaited',
    'PublisherBatch': '.publishers.awaited',
    'PublisherBatchFast': '.publishers.awaited',
    'PublisherBatchLimit': '.publishers.awaited',
    'PublisherBatchMem': '.publishers.awaited',
    'PublisherBin': '.publishers.awaited',
    'PublisherBinBatch': '.publishers.awaited',
    'PublisherPipelined': '.publishers.awaited',
    'Backoff': '.backoff',
    'Compression': '.compression',
    'ConnectionEvent': '.events',
    'Metrics': '.metrics',
    'Health': '.health',
    'HealthLimits': '.health',
    'Verdict': '.health',
    'StreamMetrics': '.metrics',
    'ClientCredentials': '.oauth2',
    'ClientOptions': '.parts.options',
    'Token': '.oauth2',
    'OAuth2Error': '.error',
    'ConnectionState': '.events',
    'SubEntryBatch': '.protocol._publish',
    'Subscriber': '.subscriptions.subscription',
    'stream_message_ctx': '.publishers.awaited',
    'BloomFilterExtract': '.types',
    'MessageFilter': '.types',
    'pipe': '.pipe',
    'until_signal': '.worker',
    'CreditOnTake': '.subscriptions.flow',
    'CreditWhenProcessed': '.subscriptions.flow',
    'ManualCredit': '.subscriptions.flow',
    'OnError': '.subscriptions.errors',
    'ConsumerUpdateContext': '.subscriptions.handoff',
    'ConfirmationStatus': '.publishers.awaited',
    'EnqueueTimeout': '.error',
    'NotRetried': '.error',
    'ResourceState': '.lifecycle',
    'StateChange': '.lifecycle',
}

_ALIASES = {
    'Subscriber': 'Subscription',  # RbFly 0.10's name
}

def __getattr__(name: str) -> tp.Any:
    module = _EXPORTS.get(name)
    if module is None:
        raise AttributeError('module {!r} has no attribute {!r}'.format(__name__, name))
    value = getattr(importlib.import_module(module, __name__), _ALIASES.get(name, name))
    globals()[name] = value
    return value

def __dir__() -> list[str]:
    return sorted(set(globals()) | set(_EXPORTS))

__all__ = [  # the names of _EXPORTS
    'AMQPAnnotations',
    'AMQPAppProperties',
    'AMQPBody',
    'AMQPHeader',
    'AMQPScalar',
    'Backoff',
    'BloomFilterExtract',
    'ClientClosed',
    'ClientCredentials',
    'ClientOptions',
    'Compression',
    'ConfirmTimeout',
    'ConfirmationStatus',
    'ConnectionEvent',
    'ConnectionLost',
    'ConnectionState',
    'ConsumerUpdateContext',
    'CreditOnTake',
    'CreditWhenProcessed',
    'EnqueueTimeout',
    'FeatureNotSupported',
    'Health',
    'HealthLimits',
    'ManualCredit',
    'MessageCtx',
    'MessageFilter',
    'MessageRejected',
    'Metrics',
    'NoRoute',
    'NotRetried',
    'OAuth2Error',
    'Offset',
    'OffsetType',
    'OnError',
    'Publisher',
    'PublisherBatch',
    'PublisherBatchFast',
    'PublisherBatchLimit',
    'PublisherBatchMem',
    'PublisherBin',
    'PublisherBinBatch',
    'PublisherPipelined',
    'RecoveryStalled',
    'RequestTimeout',
    'ResourceState',
    'ResponseError',
    'StateChange',
    'StreamMetrics',
    'StreamsClient',
    'StreamsError',
    'SubEntryBatch',
    'Subscriber',
    'SuperStreamPublisher',
    'Symbol',
    'Token',
    'Verdict',
    'connection',
    'get_message_ctx',
    'pipe',
    'stream_message_ctx',
    'streams_client',
    'until_signal',
]

assert set(__all__) == set(_EXPORTS)
