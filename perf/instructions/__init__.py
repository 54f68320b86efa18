"""
Instructions per message of the client's publishing and consuming paths,
counted by Callgrind (``python -m perf.instructions``): :py:mod:`.measure`,
the scenarios, is self-contained, so that it measures other checkouts
(``--root``) and runs as a script in the processes it traces;
:py:mod:`.callgrind`, the driver, runs it in those processes under
Callgrind and reports; :py:mod:`.bench` runs the driver through the
benchmarks' shared ``main()``.
"""
