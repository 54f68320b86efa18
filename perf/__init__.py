"""
The benchmarks of rbfly, run from the work tree's root as
``python -m perf.<benchmark>`` (``--help`` lists a benchmark's options;
``--quick`` is the short run of ``scripts/test.sh``):

``perf.publish``
    publishing: single messages, batches, pipelined (RbFly 0.10, rstream,
    aiokafka, the Java client, the broker's ceiling)
``perf.consume``
    reading a stream from its first offset (the same peers)
``perf.codec``
    the AMQP 1.0 codec (RbFly 0.10, rstream, Qpid Proton)
``perf.floor``
    what Python costs per message before a client does anything
``perf.concurrent``
    many tasks publishing on one publisher
``perf.handlers``
    concurrent handlers (``client.process``) against the plain
    ``async for``, a handler awaiting I/O per message
``perf.serializers``
    what a serializer (JSON, msgpack, msgspec) costs a message,
    beside the plain path
``perf.instructions``
    instructions a message of the publishing and consuming paths, counted
    by Callgrind (a figure steadier than time on a shared machine)
``perf.workloads``
    the workloads users run: message sizes, many publishers, latency,
    a slow application, compression
``perf.recovery``
    publishing and consuming through a proxy that cuts connections, and
    the pace of reconnections when none makes progress
``perf.scale``
    how cost grows with the work: 1 to 1,000 streams, 1 to 10,000
    subscriptions, super streams of 1 to 100 partitions
``perf.official``
    the Java client by its own perf tool against rbfly's Java harness
``perf.java_client``
    rbfly's Java harness on its own (``perf/java/``: its Java sources)

``perf.report`` draws the report's tables and figures from their JSON
(``scripts/perf-report.sh`` runs it all); ``perf.common`` is what the
benchmarks share.

A benchmark is a folder ``perf/<name>/``: ``bench.py`` reads its options
and runs it, and the modules it alone needs sit beside it; it imports
``perf.common`` and never another benchmark's folder
(``tests/unit/test_perf_imports.py``). Adding one:

1. ``perf/<name>/__init__.py``: a docstring saying what it measures.
2. ``perf/<name>/bench.py``: ``parse_args(argv)`` (with
   ``perf.common.cli.parser('<name>', ...)`` and the ``add_*`` options it
   shares), ``run(args)`` returning a ``perf.common.cli.Outcome`` (the
   text to print, the JSON documents to write, the exit status), and
   ``BENCHMARK = Benchmark(parse_args, run)``; a failure is raised as a
   ``perf.common.errors.BenchmarkError`` (its exit status goes with it).
   A benchmark running rbfly in a child process (RbFly 0.10's venv) adds
   ``perf.common.cli.add_child`` and passes ``child``, the measurement of
   one child run; the parent runs it with ``perf.common.child.run_child``.
3. ``perf/<name>/__main__.py``: ``sys.exit(main(BENCHMARK))``, as the
   other benchmarks' (:py:func:`perf.common.cli.main`).
4. Its quick run in ``scripts/test.sh``.

At import time every module of a benchmark that runs children needs the
standard library only: a child in the RbFly 0.10 venv imports it there.
"""
