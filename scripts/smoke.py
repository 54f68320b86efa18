"""
Smoke test of an installed rbfly (a wheel in a fresh virtualenv): the
package comes from site-packages, not from a source tree, every Cython
module of setup.py's MODULES is compiled and imports, and a message goes
through the AMQP codec and a Publish frame without a broker.

Run by scripts/wheel.sh and by cibuildwheel (``test-command``); exits with
a message on the first failure.
"""

import ast
import importlib
import sys
from pathlib import Path

SETUP = Path(__file__).resolve().parent.parent / 'setup.py'

def cython_modules() -> list[str]:
    """The MODULES list of setup.py, read without running it."""
    for node in ast.parse(SETUP.read_text()).body:
        if isinstance(node, ast.Assign) and any(
                isinstance(t, ast.Name) and t.id == 'MODULES' for t in node.targets):
            modules: list[str] = ast.literal_eval(node.value)
            return modules
    sys.exit('{}: no MODULES list'.format(SETUP))

def main() -> None:
    import rbfly
    import rbfly.streams

    where = Path(rbfly.__file__).resolve().parent
    if where.parent == SETUP.parent:
        sys.exit('rbfly imported from the source tree ({}), not installed'.format(where))
    for name in cython_modules():
        module = importlib.import_module(name)
        origin = module.__file__ or ''
        if not origin.endswith(('.so', '.pyd')):
            sys.exit('{} is not compiled: {}'.format(name, origin))

    from rbfly.amqp import AMQPProperties, MessageCtx, decode_amqp, encode_message
    from rbfly.streams import Publisher, streams_client
    from rbfly.streams.protocol._publish import PublishEncoder

    body = {'order': 1, 'item': 'książka', 'price': 12.5, 'tags': [b'\x00\xff', None]}
    msg = MessageCtx(body, properties=AMQPProperties(message_id=2**63, subject='smoke'))
    decoded = decode_amqp(encode_message(msg))
    if decoded.body != body or decoded.properties.subject != 'smoke':
        sys.exit('AMQP round trip changed the message: {!r}'.format(decoded.body))
    count, frame = PublishEncoder().encode(1, [msg], 0, 1)
    if count != 1 or not frame:
        sys.exit('Publish frame not encoded: {} messages, {} bytes'.format(count, len(frame)))

    client = streams_client('rabbitmq-stream://guest:guest@localhost:5552/')
    assert callable(client.publisher) and Publisher.__name__ == 'Publisher'
    print('smoke: rbfly from {}, {} compiled modules, AMQP and Publish encoding work'.format(
        where, len(cython_modules())))

if __name__ == '__main__':
    main()
