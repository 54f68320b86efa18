"""
The AMQP 1.0 codec benchmark: encoding and decoding one message, against the peers.

``python -m perf.codec``; see :py:mod:`perf.codec.bench`.
"""
