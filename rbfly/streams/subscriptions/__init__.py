"""
Subscriptions: the user-API objects that receive a stream's messages.

- :py:mod:`~rbfly.streams.subscriptions.subscription`: a subscription's
  buffer of chunks, waiting for them, the end of a bounded read;
- ``single_active``: a single active consumer's answers to the broker's
  consumer updates;
- :py:mod:`~rbfly.streams.subscriptions.credit`: when a subscription
  grants credit, one pure policy per way of reading;
- :py:mod:`~rbfly.streams.subscriptions.flow`: the flow strategies an
  application chooses (``flow=``);
- :py:mod:`~rbfly.streams.subscriptions.tracking`: automatic offset
  tracking;
- ``_bodies``: the compiled message iterator of ``subscribe()``.

The public names are exported by :py:mod:`rbfly.streams`.
"""
