"""
Instructions per message of the client's publishing and consuming paths,
counted by Callgrind (``python -m perf.instructions``): :py:mod:`.measure`
is self-contained, so that it measures other checkouts (``--root``) and
runs as a script in the processes it traces; :py:mod:`.bench` runs it
through the benchmarks' shared ``main()``.
"""
