"""
The lag's formats (:py:mod:`rbfly.streams.lag`) and the exporter's HTTP
answers (:py:mod:`rbfly.streams.httpd`, :py:class:`~rbfly.streams.lag.LagExporter`),
without a broker or a socket.
"""

import asyncio
import json

import pytest

from rbfly.streams.error import ConnectionLost
from rbfly.streams.httpd import MAX_HEAD, Response, answer, encode, listen_address
from rbfly.streams.lag import LagExporter, lag_json, openmetrics
from rbfly.streams.types import PartitionStatus

BEHIND = PartitionStatus('s-0', 9, 0, 21, 12, True, False)
CAUGHT_UP = PartitionStatus('s-1', 30, 0, 31, 0, True, True)
UNKNOWN = PartitionStatus('s-2', None, None, None, None, False, None)  # RabbitMQ 3.10

def test_openmetrics() -> None:
    """A gauge per partition, TYPE and HELP lines, ``# EOF``; unknown lags left out."""
    text = openmetrics('g', [BEHIND, CAUGHT_UP, UNKNOWN])
    lines = text.splitlines()
    assert text.endswith('# EOF\n') and lines.count('# EOF') == 1
    assert [line for line in lines if not line.startswith('#')] == [
        'rbfly_consumer_group_lag{group="g",stream="s-0"} 12',
        'rbfly_consumer_group_lag{group="g",stream="s-1"} 0',
        'rbfly_consumer_group_caught_up{group="g",stream="s-0"} 0',
        'rbfly_consumer_group_caught_up{group="g",stream="s-1"} 1',
    ]
    assert lines[0] == '# TYPE rbfly_consumer_group_lag gauge'
    assert lines[1].startswith('# HELP rbfly_consumer_group_lag ')

def test_openmetrics_escapes_labels() -> None:
    """A name with a quote, a backslash or a newline stays one label value."""
    text = openmetrics('a"b\\c\nd', [BEHIND])
    assert 'rbfly_consumer_group_lag{group="a\\"b\\\\c\\nd",stream="s-0"} 12\n' in text

def test_lag_json() -> None:
    doc = lag_json('g', [BEHIND, CAUGHT_UP])
    assert doc == {
        'group': 'g', 'lag': 12, 'max_lag': 12, 'caught_up': False, 'known': True,
        'partitions': [{'stream': 's-0', 'lag': 12, 'caught_up': False},
                       {'stream': 's-1', 'lag': 0, 'caught_up': True}],
    }
    assert lag_json('g', [CAUGHT_UP])['caught_up'] is True
    doc = lag_json('g', [CAUGHT_UP, UNKNOWN])
    assert (doc['lag'], doc['caught_up'], doc['known']) == (0, False, False)
    json.dumps(doc)

def head(line: str) -> bytes:
    return line.encode() + b'\r\nHost: x\r\n\r\n'

ROUTES = {'/metrics': lambda: Response(200, 'm\n')}

@pytest.mark.parametrize('request_head, status', [
    (head('GET /metrics HTTP/1.1'), 200),
    (head('GET /metrics?x=1 HTTP/1.0'), 200),
    (head('HEAD /metrics HTTP/1.1'), 200),
    (head('GET /other HTTP/1.1'), 404),
    (head('POST /metrics HTTP/1.1'), 405),
    (head('GET metrics HTTP/1.1'), 400),
    (head('GET /metrics'), 400),
    (head('GET /metrics SPDY/3'), 400),
    (b'\xff\xfe /metrics HTTP/1.1\r\n\r\n', 400),
    (b'\r\n\r\n', 400),
])
def test_answer(request_head: bytes, status: int) -> None:
    response, _ = answer(ROUTES, request_head)
    assert response.status == status, response

def test_answer_route_fails() -> None:
    """A route that raises: 500, and the server goes on."""
    def broken() -> Response:
        raise RuntimeError('bug')
    response, body = answer({'/x': broken}, head('GET /x HTTP/1.1'))
    assert (response.status, body) == (500, True)

def test_encode() -> None:
    data = encode(Response(503, 'down: é\n'))
    assert data.startswith(b'HTTP/1.1 503 Service Unavailable\r\n')
    assert b'Content-Length: 9\r\n' in data and b'Connection: close\r\n' in data
    assert data.endswith(b'\r\n\r\ndown: \xc3\xa9\n')
    assert encode(Response(200, 'body'), body=False).endswith(b'\r\n\r\n')

def test_listen_address() -> None:
    assert listen_address(':9585') == ('0.0.0.0', 9585)
    assert listen_address('127.0.0.1:0') == ('127.0.0.1', 0)
    assert listen_address('[::1]:80') == ('::1', 80)
    for bad in ('9585', 'host:', 'host:port', 'h:70000'):
        with pytest.raises(ValueError, match='give HOST:PORT'):
            listen_address(bad)
    assert MAX_HEAD >= 4096

async def test_exporter_readings() -> None:
    """
    Before a reading, and after one that failed: 503 with the reason;
    after one that worked: the lag; a reading slower than the timeout fails.
    """
    outcome: list[object] = [ConnectionLost('broker gone')]

    async def status() -> list[PartitionStatus]:
        result = outcome[0]
        if isinstance(result, Exception):
            raise result
        if result == 'hang':
            await asyncio.Event().wait()
        return [BEHIND]

    ex = LagExporter('g', status, 1.0, timeout=0.01)
    assert (ex.metrics().status, ex.lag().status) == (503, 503)
    assert "lag of group 'g' unknown: no reading yet" in ex.metrics().body
    await ex.read()
    assert ex.metrics().status == 503
    assert 'ConnectionLost: broker gone' in ex.metrics().body
    outcome[0] = 'ok'
    await ex.read()
    r = ex.metrics()
    assert r.status == 200 and r.content_type.startswith('application/openmetrics-text')
    assert json.loads(ex.lag().body)['lag'] == 12
    outcome[0] = 'hang'
    await ex.read()
    assert 'no status within 0.01s' in ex.lag().body
