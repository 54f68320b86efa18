from datetime import datetime

from typing_extensions import disjoint_base

from ..types import AMQPAnnotations, AMQPAppProperties, AMQPBody, AMQPMessageId, Symbol

@disjoint_base
class AMQPHeader:
    durable: bool
    priority: int
    ttl: int | None
    first_acquirer: bool
    delivery_count: int

    def __init__(
        self,
        durable: bool = False,
        priority: int = 4,
        ttl: int | None = None,
        first_acquirer: bool = False,
        delivery_count: int = 0,
    ) -> None: ...

@disjoint_base
class AMQPProperties:
    message_id: AMQPMessageId | None
    user_id: bytes | None
    to: str | None
    subject: str | None
    reply_to: str | None
    correlation_id: AMQPMessageId | None
    content_type: Symbol | None
    content_encoding: Symbol | None
    absolute_expiry_time: datetime | None
    creation_time: datetime | None
    group_id: str | None
    group_sequence: int | None
    reply_to_group_id: str | None

    def __init__(
        self,
        message_id: AMQPMessageId | None = None,
        user_id: bytes | None = None,
        to: str | None = None,
        subject: str | None = None,
        reply_to: str | None = None,
        correlation_id: AMQPMessageId | None = None,
        content_type: Symbol | None = None,
        content_encoding: Symbol | None = None,
        absolute_expiry_time: datetime | None = None,
        creation_time: datetime | None = None,
        group_id: str | None = None,
        group_sequence: int | None = None,
        reply_to_group_id: str | None = None,
    ) -> None: ...

@disjoint_base
class MessageCtx:
    body: AMQPBody
    stream_offset: int
    stream_timestamp: float
    stream_publish_id: int
    stream: str | None

    def __init__(
        self,
        body: AMQPBody,
        header: AMQPHeader | None = None,
        delivery_annotations: AMQPAnnotations | None = None,
        annotations: AMQPAnnotations | None = None,
        properties: AMQPProperties | None = None,
        app_properties: AMQPAppProperties | None = None,
        footer: AMQPAnnotations | None = None,
        *,
        stream_offset: int = 0,
        stream_timestamp: float = 0,
        stream_publish_id: int = 0,
        stream: str | None = None,
    ) -> None: ...
    @property
    def header(self) -> AMQPHeader: ...
    @header.setter
    def header(self, value: AMQPHeader | None) -> None: ...
    @property
    def properties(self) -> AMQPProperties: ...
    @properties.setter
    def properties(self, value: AMQPProperties | None) -> None: ...
    @property
    def delivery_annotations(self) -> AMQPAnnotations: ...
    @delivery_annotations.setter
    def delivery_annotations(self, value: AMQPAnnotations | None) -> None: ...
    @property
    def annotations(self) -> AMQPAnnotations: ...
    @annotations.setter
    def annotations(self, value: AMQPAnnotations | None) -> None: ...
    @property
    def app_properties(self) -> AMQPAppProperties: ...
    @app_properties.setter
    def app_properties(self, value: AMQPAppProperties | None) -> None: ...
    @property
    def footer(self) -> AMQPAnnotations: ...
    @footer.setter
    def footer(self, value: AMQPAnnotations | None) -> None: ...

def set_message_ctx(msg: MessageCtx) -> None: ...
def get_message_ctx() -> MessageCtx: ...
def msg_ctx(
    body: AMQPBody,
    *,
    annotations: AMQPAnnotations | None = None,
    app_properties: AMQPAppProperties | None = None,
    stream_offset: int = 0,
    stream_timestamp: float = 0.0,
    stream_publish_id: int | None = None,
) -> MessageCtx: ...
