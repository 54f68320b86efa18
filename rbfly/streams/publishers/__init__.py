"""
Publishers: the user-API objects that send messages to a stream.

- :py:mod:`~rbfly.streams.publishers.base`: the state every publisher
  shares (publishing ids, unconfirmed messages, their recovery);
- :py:mod:`~rbfly.streams.publishers.contracts`: what others call on a
  publisher, the contract the client's parts drive it through
  (:py:class:`~rbfly.streams.publishers.contracts.PublisherControl`) and
  the entry points a super stream's or a serializing publisher calls;
- :py:mod:`~rbfly.streams.publishers.deadlines`: the confirmation timeouts
  of a publisher's messages, a part each publisher holds;
- :py:mod:`~rbfly.streams.publishers.listeners`: what a publisher tells
  the application of its messages' outcomes (listeners, statuses);
- :py:mod:`~rbfly.streams.publishers.options`: a publisher's options, one
  frozen record checked by the client;
- :py:mod:`~rbfly.streams.publishers.awaited`: the publishers whose
  ``send``/``flush`` wait for the broker's confirmation;
- :py:mod:`~rbfly.streams.publishers.pipelined`: the publisher that does
  not (its hot path is C: ``_pipeline``; confirmations: ``_confirm``);
- :py:mod:`~rbfly.streams.publishers.superstream`: a publisher of a super
  stream, routing each message to a partition's publisher;
- :py:mod:`~rbfly.streams.publishers.serializing`: the subclass of a
  publisher class whose entry points encode objects with a serializer,
  made once per class for the publishers given one.

The public names are exported by :py:mod:`rbfly.streams`.
"""
