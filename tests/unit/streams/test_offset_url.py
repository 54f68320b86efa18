"""
Offset specifications and connection URIs.
"""

import ssl

import pytest

from rbfly.streams import Offset, OffsetType, streams_client
from rbfly.streams.url import Scheme, parse_uri

def test_offsets() -> None:
    """The RbFly 0.10 offset API, with validation."""
    assert Offset.FIRST.type is OffsetType.FIRST
    assert Offset.offset(5) == Offset(OffsetType.OFFSET, 5)
    assert str(Offset.timestamp(1.5)) == 'offset=timestamp(1.5)'
    assert Offset.reference('r').value == 'r'
    with pytest.raises(ValueError):
        Offset.offset(-1)
    with pytest.raises(ValueError):
        Offset.offset(2 ** 64)
    with pytest.raises(ValueError):
        Offset.reference('')
    with pytest.raises(ValueError):
        Offset(OffsetType.FIRST, 1)

@pytest.mark.parametrize('uri, vhost', [
    ('rabbitmq-stream://guest:guest@localhost', '/'),
    ('rabbitmq-stream://guest:guest@localhost/', '/'),
    ('rabbitmq-stream://guest:guest@localhost/%2F', '/'),
    ('rabbitmq-stream://guest:guest@localhost/prod', 'prod'),
    ('rabbitmq-stream://guest:guest@localhost/a%2Fb', 'a/b'),
])
def test_virtual_host(uri: str, vhost: str) -> None:
    """
    The vhost is the path without its slash, percent-decoded; the text of
    the info (the URI the logs show) reads back to the same place, its
    path one slash for the default virtual host (it showed ``5552//``).
    """
    info = parse_uri(uri)
    assert info.virtual_host == vhost
    shown = str(info)
    assert '//' not in shown.split('://', 1)[1]
    assert shown == 'rabbitmq-stream://guest@localhost:5552/{}'.format(
        '' if vhost == '/' else uri.rsplit('/', 1)[1])
    again = parse_uri(shown)
    assert (again.host, again.port, again.virtual_host, again.username) == (
        'localhost', 5552, vhost, 'guest')

def test_uri_shown_ipv6() -> None:
    """An IPv6 address is shown in brackets, as a URI takes it."""
    info = parse_uri('rabbitmq-stream://u@[::1]:5560/')
    assert str(info) == 'rabbitmq-stream://u@[::1]:5560/'
    assert parse_uri(str(info)).host == '::1'

def test_uri_parts() -> None:
    """Host, port, user; the password never shows in repr or str."""
    info = parse_uri('rabbitmq-stream://u%40x:p%40ss@broker:5560/v')
    assert (info.host, info.port, info.username, info.password) == ('broker', 5560, 'u@x', 'p@ss')
    assert 'p@ss' not in repr(info) and 'p@ss' not in str(info)
    assert 'p@ss' not in repr(streams_client('rabbitmq-stream://u:p%40ss@h/'))

def test_tls_scheme() -> None:
    """TLS needs an SSL context and the +tls scheme; default port 5551."""
    ctx = ssl.create_default_context()
    info = parse_uri('rabbitmq-stream+tls://h/', ctx)
    assert (info.scheme, info.port) == (Scheme.RABBITMQ_STREAM_TLS, 5551)
    with pytest.raises(ValueError, match='SSL context'):
        parse_uri('rabbitmq-stream+tls://h/')
    with pytest.raises(ValueError, match='tls'):
        parse_uri('rabbitmq-stream://h/', ctx)
    with pytest.raises(ValueError, match='scheme'):
        parse_uri('amqp://h/')
