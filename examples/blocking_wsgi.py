"""
The blocking client (``rbfly.streams.blocking``) in code that is not
asyncio: a plain script, and a WSGI application whose request threads
share one client and one publisher.

- ``python examples/blocking_wsgi.py``: the script publishes 100 orders
  as JSON (one confirmed ``send``, then pipelined ``send_async`` and a
  ``flush``), reads them back as objects and checks their total;
- ``python examples/blocking_wsgi.py --serve 8000``: the WSGI application
  on the standard library's ``wsgiref``, a thread per request::

    curl -d '{"order": 1, "total": 10}' localhost:8000/orders
    curl 'localhost:8000/orders?offset=0&count=10'

The broker is ``RBFLY_URL``, the stream ``RBFLY_STREAM`` (default
``rbfly-example-orders``).
"""

import argparse
import json
import os
import socketserver
import typing as tp
from collections.abc import Callable, Iterable
from urllib.parse import parse_qs
from wsgiref.simple_server import WSGIServer, make_server

from rbfly.streams import Offset
from rbfly.streams.blocking import BlockingClient, blocking_client
from rbfly.streams.serializers import JSONSerializer

URL = os.environ.get('RBFLY_URL', 'rabbitmq-stream://guest:guest@localhost:5552/')
STREAM = os.environ.get('RBFLY_STREAM', 'rbfly-example-orders')
JSON = JSONSerializer()

StartResponse: tp.TypeAlias = Callable[[str, list[tuple[str, str]]], object]

def script(client: BlockingClient, stream: str) -> int:
    """Publish 100 orders, read them back; return their total."""
    client.create_stream(stream)
    with client.publisher(stream, serializer=JSON) as publisher:
        publisher.send({'order': 0, 'total': 0})  # returns once confirmed
        for i in range(1, 100):  # pipelined: a future each
            publisher.send_async({'order': i, 'total': i})
        publisher.flush()  # every message confirmed (or the first error raised)
    total = 0
    with client.subscribe(stream, offset=Offset.FIRST, serializer=JSON, timeout=10) as records:
        for record in records:
            total += record.body['total']
            if record.body['order'] == 99:
                break
    return total

class OrdersApp:
    """
    A WSGI application: ``POST /orders`` publishes the JSON body (the
    response comes once the broker confirmed it), ``GET
    /orders?offset=N&count=M`` reads M orders from offset N.

    :param client: The blocking client, shared by the request threads.
    :param stream: The stream of the orders.
    """
    def __init__(self, client: BlockingClient, stream: str) -> None:
        self.client = client
        self.stream = stream
        self.publisher = client.publisher(stream, serializer=JSON)

    def close(self) -> None:
        self.publisher.close()

    def __call__(self, environ: dict[str, tp.Any], start_response: StartResponse,
                 ) -> Iterable[bytes]:
        if environ['PATH_INFO'] != '/orders':
            return respond(start_response, '404 Not Found', {'error': 'no such path'})
        try:
            if environ['REQUEST_METHOD'] == 'POST':
                size = int(environ.get('CONTENT_LENGTH') or 0)
                order = json.loads(environ['wsgi.input'].read(size))
                publishing_id = self.publisher.send(order)
                return respond(start_response, '201 Created', {'publishing_id': publishing_id})
            query = parse_qs(environ.get('QUERY_STRING', ''))
            offset = int(query.get('offset', ['0'])[0])
            count = int(query.get('count', ['10'])[0])
        except ValueError as ex:  # bad JSON, or bad numbers
            return respond(start_response, '400 Bad Request', {'error': str(ex)})
        orders = []
        with self.client.subscribe(
                self.stream, offset=Offset.offset(offset), serializer=JSON,
                timeout=1) as records:
            try:
                for record in records:
                    orders.append({'offset': record.offset, 'order': record.body})
                    if len(orders) == count:
                        break
            except TimeoutError:
                pass  # fewer in the stream: what there is
        return respond(start_response, '200 OK', orders)

def respond(start_response: StartResponse, status: str, body: object) -> list[bytes]:
    data = json.dumps(body).encode()
    start_response(status, [
        ('Content-Type', 'application/json'), ('Content-Length', str(len(data))),
    ])
    return [data]

class ThreadingWSGIServer(socketserver.ThreadingMixIn, WSGIServer):
    """wsgiref's server, a thread per request."""
    daemon_threads = True

def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split('\n\n')[0])
    parser.add_argument('--serve', type=int, metavar='PORT', help='serve the WSGI application')
    args = parser.parse_args()
    with blocking_client(URL, timeout=30) as client:
        if args.serve is not None:
            client.create_stream(STREAM)
            app = OrdersApp(client, STREAM)
            try:
                with make_server('', args.serve, app, server_class=ThreadingWSGIServer) as server:
                    print('serving on port {}'.format(args.serve))
                    server.serve_forever()
            finally:
                app.close()
            return
        try:
            total = script(client, STREAM)
        finally:
            client.delete_stream(STREAM)
    assert total == sum(range(100)), total
    print('ok: 100 orders published and read back, total {}'.format(total))

if __name__ == '__main__':
    main()
