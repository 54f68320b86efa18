"""
The methods of the facade, :py:class:`~rbfly.streams.StreamsClient`, by
concern: each class here receives the parts it uses in its constructor
and holds the signature, docstring and code of its methods, which the
client exposes as its own (:py:mod:`.forward`):

- :py:mod:`.forward`: a method of the facade that is a section's method;
- :py:mod:`.observing`: metrics, subscriptions' state, health, latency
  samples;
- :py:mod:`.administration`: streams and super streams created, deleted
  and looked up;
- :py:mod:`.offsets`: offsets stored under a name, a consumer group's
  status and reset;
- :py:mod:`.reading`: subscriptions by windows and by chunks (the
  description of every subscription option);
- :py:mod:`.processing`: concurrent handlers over a stream or a super
  stream.

The client keeps what it owns itself (its construction, connection,
publishers) and the methods typed by overloads (``publisher``,
``subscribe``, ``subscribe_super_stream``), which a forwarded method
cannot carry. Nothing here is public API but the methods as the client
exposes them.
"""
