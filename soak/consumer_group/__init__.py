"""
A consumer group of worker processes through rolling deploys and crashes
(``python -m soak.consumer_group``, rbfly issue 30; :py:mod:`.controller`
says how a run goes). Its modules:

``controller``
    the run: the super stream, the processes, the deploys and kills, the
    verdict (``main``, ``run``)
``config``
    the run's parameters (its command line's options)
``processes``
    the child processes the controller starts, stops and kills
``worker``
    a worker process: a single active consumer of every partition
``producer``
    the producer process
``cluster``
    the three-node cluster side of ``--cluster`` runs
``members``
    the members the broker keeps in each partition's group
``logs``
    the workers' and the producer's logs
``run``
    what the controller knew of a run beside the logs (``run.json``)
``analysis``
    the figures of a run, from its logs
``report``
    the figures written out: a table and a JSON document
"""
