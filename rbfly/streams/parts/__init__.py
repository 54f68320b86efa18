"""
The parts of :py:class:`~rbfly.streams.StreamsClient`, each one concept
that receives what it uses in its constructor (see ``doc/architecture.rst``):

- :py:mod:`.options`: the client's options, checked once;
- :py:mod:`.tasks`: its background tasks;
- :py:mod:`.credentials`: brokers, login, OAuth 2 tokens, new secrets;
- :py:mod:`.connector`: opening a connection to a broker or a node;
- :py:mod:`.connections`: the client's own connection and those to nodes;
- :py:mod:`.metadata`: the only sender and reader of Metadata;
- :py:mod:`.placement`: which node a publisher or subscription goes to
  (pure functions);
- :py:mod:`.declare`: declaring publishers and subscriptions on a connection;
- :py:mod:`.placer`: declaring them on the node placement chooses;
- :py:mod:`.asking`: the broker asked once by callers asking the same at once;
- :py:mod:`.ends`: where a stream ends (``Offset.from_end``, ``stop_at_end``);
- :py:mod:`.recovery`: restoring them after a lost connection or a
  MetadataUpdate;
- :py:mod:`.offsets`: offset specifications and stored offsets;
- :py:mod:`.streams`, :py:mod:`.publishing`, :py:mod:`.subscribing`,
  :py:mod:`.superstreams`: what the facade's methods do;
- :py:mod:`.groups`: a consumer group's status and reset.

Which connection holds a publisher or subscription is recorded by
:py:mod:`rbfly.streams.aio.records` alone.

Nothing here is public API; the facade (:py:mod:`rbfly.streams.client`)
is.
"""
