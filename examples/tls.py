"""
A TLS connection, with the broker's certificate verified, and optionally
a client certificate.

The ``rabbitmq-stream+tls://`` scheme with an :py:class:`ssl.SSLContext`
encrypts the connection (the broker's TLS listener is port 5551 by
default). The context decides what is trusted:
``ssl.create_default_context(cafile=...)`` verifies the broker's
certificate against a CA and checks that it names the host of the URL.
With a client certificate in the context and no user in the URL, the
client authenticates with the certificate (SASL EXTERNAL: the broker needs
the ``rabbitmq_auth_mechanism_ssl`` plugin, and RabbitMQ 3.11.19+); with a
user in the URL, with the user's password (SASL PLAIN), over TLS.

The program connects, publishes 10 messages to a new stream, reads them
back, checks them and deletes the stream.

Environment:

- ``RBFLY_TLS_URL``: the broker's URL (default
  ``rabbitmq-stream+tls://guest:guest@localhost:5551/``);
- ``RBFLY_TLS_CA``: the CA certificate that signed the broker's (default:
  the system's trusted CAs);
- ``RBFLY_TLS_CERT``, ``RBFLY_TLS_KEY``: a client certificate and its key
  (optional).

Run it::

    RBFLY_TLS_CA=ca.pem python tls.py
    RBFLY_TLS_URL=rabbitmq-stream+tls://localhost:5551/ RBFLY_TLS_CA=ca.pem \\
        RBFLY_TLS_CERT=client.pem RBFLY_TLS_KEY=client.key python tls.py
"""

import asyncio
import contextlib
import os
import ssl
import sys
import uuid
from urllib.parse import urlsplit

from rbfly.streams import Offset, streams_client

URL = os.environ.get('RBFLY_TLS_URL', 'rabbitmq-stream+tls://guest:guest@localhost:5551/')
COUNT = 10

def tls_context() -> ssl.SSLContext:
    """A client TLS context: the broker verified, a client certificate if given."""
    ctx = ssl.create_default_context(cafile=os.environ.get('RBFLY_TLS_CA') or None)
    cert = os.environ.get('RBFLY_TLS_CERT')
    if cert:
        ctx.load_cert_chain(cert, os.environ.get('RBFLY_TLS_KEY') or None)
    return ctx

async def main() -> None:
    ctx = tls_context()
    with_cert = bool(os.environ.get('RBFLY_TLS_CERT'))
    mechanism = 'EXTERNAL (the client certificate)' \
        if with_cert and not urlsplit(URL).username else 'PLAIN (user and password)'
    stream = 'rbfly-example-tls-{}'.format(uuid.uuid4().hex[:8])
    async with streams_client(URL, ssl=ctx) as client:
        await client.create_stream(stream)
        try:
            print('connected over TLS to RabbitMQ {}, authenticated with {}'.format(
                client.server_properties.get('version', '?'), mechanism))
            async with client.publisher(stream) as publisher:
                for i in range(COUNT):
                    await publisher.send('secret {}'.format(i))
            received = []
            messages = client.subscribe(stream, offset=Offset.FIRST, timeout=10)
            async with contextlib.aclosing(messages):
                async for body in messages:
                    received.append(body)
                    if len(received) == COUNT:
                        break
        finally:
            await client.delete_stream(stream)
    if received != ['secret {}'.format(i) for i in range(COUNT)]:
        sys.exit('failed: read back {!r}'.format(received))
    print('ok: {} messages published and read back over TLS'.format(COUNT))

if __name__ == '__main__':
    asyncio.run(main())
