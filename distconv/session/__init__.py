"""The sessions room, below the CLI and above the batch floor: what a session with a cluster
needs, whichever face starts it. Its imports only go down (tests/test_floors.py); nothing here
imports the CLI.

- config.py: the cluster config (cluster.yaml or a dict), checked whole; the cluster kind
- record.py: the kept cluster's record (a state file): which config a run joins
- cluster.py: ``dc.cluster()``, a dask Client on the configured cluster, the process left as found
- local.py: the local cluster a config starts (its kind, workers, dashboard port)
- security.py: the TLS credentials a cluster distconv starts or keeps takes clients with
- forkserver.py: the server local workers fork from, and multiprocessing's state around it
- worker_imports.py: what workers import before their first job (that server's preload, the
  warm-up asked of workers started by hand)
- interrupt.py: what Ctrl-C in a cluster's block does to the process (``cli_policy``: the CLI's)
- handoff.py: a `distconv run` handed to the kept cluster's warm process (the caller's side)
- kept.py: `distconv cluster start|status|stop` and the kept cluster's own process
- warm.py: the warm process beside a kept cluster, a forked child per handed run
- command.py: the body of `distconv run` (exit codes, messages, Ctrl-C), for the CLI and warm.py
- failures.py: what a failed run says (a user's problem in one line, exit 2; our bug with its traceback)
- builds.py: a fresh node's GPU kernels built in a process of their own while the cluster starts
- info.py: what `distconv info` reports

Importing this package imports none of its modules.
"""
