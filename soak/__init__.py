"""
Long runs under faults: ``soak/soak.py`` (publishing and consuming while
connections are cut and brokers restarted, run as a script) and the
consumer group of several worker processes (``python -m
soak.consumer_group``: rolling deploys and crashes of single active
consumers of a super stream). The modules of the first:

``soak``
    the script: a phase's publishers, consumers and faults, run and read
    back (``phase``), and the command line (``main``)
``workers``
    the publishers of every class and the consumers, at a steady rate
``pace``
    the publishers' pace: batches at a steady rate
``ledger``
    the bookkeeping: what each publisher sent, what each consumer saw
``faults``
    connections cut, the broker restarted, cluster nodes killed
``resources``
    the process's memory and file descriptors, sampled for leaks
``verdict``
    the figures of a phase, what failed the run, the line CI prints
"""
