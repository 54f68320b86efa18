"""
Subscriptions: the user-API objects that receive a stream's messages.

- :py:mod:`~rbfly.streams.subscriptions.subscription`: a subscription's
  buffer of chunks, waiting for them, the end of a bounded read;
- :py:mod:`~rbfly.streams.subscriptions.waiting`: waiting on
  subscriptions for a chunk (polling first while chunks come quickly);
- ``undecodable``: chunks that do not decode at the first try (a CRC
  skipped, a message that is not AMQP), off the fast path;
- :py:mod:`~rbfly.streams.subscriptions.options`: how a subscription
  reads, one frozen record (``ReadOptions``);
- ``chunk``: a chunk's messages as the application gets them;
- ``single_active``: a single active consumer's answers to the broker's
  consumer updates;
- :py:mod:`~rbfly.streams.subscriptions.handoff`: a member's part in a
  consumer group's hand-offs;
- :py:mod:`~rbfly.streams.subscriptions.source`: the subscriptions of a
  read, taken from in turn;
- :py:mod:`~rbfly.streams.subscriptions.progress`: the one owner of a
  read's progress (taken, handed out, processed, cut, committed);
- ``arguments``: the arguments of pause, resume and seek, checked;
- ``_cursor``: the progress's chunk at hand, in C, for the message
  iterator;
- :py:mod:`~rbfly.streams.subscriptions.queued`: the chunks the progress
  took for windows or handlers and did not hand out yet;
- :py:mod:`~rbfly.streams.subscriptions.handed`: the windows and chunks
  it handed out and the application has not processed yet, and the
  credit a chunk gives back;
- :py:mod:`~rbfly.streams.subscriptions.pausing`: paused streams, and
  what the progress holds back of them;
- :py:mod:`~rbfly.streams.subscriptions.stuck`: the watchdog of a stuck
  application (``processing_timeout``);
- :py:mod:`~rbfly.streams.subscriptions.gaps`: the offsets retention
  removed before a subscription read them (the gaps between its chunks,
  checked against the stream's first offset);
- ``_bodies``: the compiled message iterator of ``subscribe()``;
- :py:mod:`~rbfly.streams.subscriptions.windows`: windows of messages;
- :py:mod:`~rbfly.streams.subscriptions.chunks`: the chunk iterator;
- :py:mod:`~rbfly.streams.subscriptions.decoded`: the message iterator
  with a serializer;
- :py:mod:`~rbfly.streams.subscriptions.credit`: when a subscription
  grants credit, one pure policy per way of reading;
- :py:mod:`~rbfly.streams.subscriptions.flow`: the flow strategies an
  application chooses (``flow=``);
- :py:mod:`~rbfly.streams.subscriptions.tracking`: automatic offset
  tracking;
- :py:mod:`~rbfly.streams.subscriptions.state`: a subscription's state,
  for debugging.

The public names are exported by :py:mod:`rbfly.streams`.
"""
