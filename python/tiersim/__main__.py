"""``python -m tiersim sweep [--scheduler ADDRESS] [--db DB] [--jobs N] SPEC.toml``.

This is what ``tiersim sweep --scheduler ADDRESS`` runs with the resolved spec. Like
the ``tiersim`` command it prints errors as one line starting with ``tiersim:`` and
exits with 2 for bad input (a wrong spec, an unusable store, an unreachable
scheduler), 1 when runs failed, and 130 when interrupted.
"""

from __future__ import annotations

import argparse
import signal
import sys
import time
import warnings
from pathlib import Path
from typing import Any

#: Set by the first Ctrl-C. Dask may catch the KeyboardInterrupt it raises (seen once
#: while a client was still connecting: the connection then ran to its timeout), so
#: the command also asks this flag before it reports any other way of ending.
interrupted = False


def _on_sigint(signum: int, frame: Any) -> None:
    global interrupted
    interrupted = True
    raise KeyboardInterrupt


signal.signal(signal.SIGINT, _on_sigint)

# Imported after the handler is in place, so that a Ctrl-C during these imports
# counts too.
from tiersim import StoreError
from tiersim.sweep import checked_grid, sweep

#: How long to try to reach a scheduler, in seconds: short enough that, with Dask's
#: import and the spec check, an unreachable one is reported within 10 s.
CONNECT_TIMEOUT_SECONDS = 6


class SchedulerUnreachable(Exception):
    """No Dask scheduler answered at the address in time, or Dask is missing."""


def connect(address: str) -> Any:
    """Returns a ``dask.distributed.Client`` of the scheduler at ``address``."""
    try:
        from distributed import Client
    except ImportError as e:
        raise SchedulerUnreachable(f"--scheduler needs Dask ({e}); install it with `pip install './python[dask]'`") from e
    try:
        return Client(address, timeout=f"{CONNECT_TIMEOUT_SECONDS}s")
    except (OSError, TimeoutError, ValueError) as e:
        raise SchedulerUnreachable(f"cannot reach the Dask scheduler at {address} within {CONNECT_TIMEOUT_SECONDS} s") from e


def main(argv: list[str] | None = None) -> int:
    """Runs the command line ``argv`` and returns the exit code."""
    parser = argparse.ArgumentParser(prog="python -m tiersim", description="tiersim's Python package (docs/python.md).")
    commands = parser.add_subparsers(dest="command", required=True)
    s = commands.add_parser("sweep", help="run a sweep's missing runs into its store, locally or on a Dask cluster")
    s.add_argument("spec", type=Path, help="the sweep's spec (TOML, as for `tiersim sweep`)")
    s.add_argument("--scheduler", metavar="ADDRESS", help="the Dask scheduler to run on (e.g. tcp://10.0.0.5:8786); default: local threads")
    s.add_argument("--db", type=Path, help="the results store (default: the spec's db, or its path with .db)")
    s.add_argument("-j", "--jobs", type=int, metavar="N", help="runs at a time (on Dask: tasks submitted at once)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    client = None
    try:
        if args.scheduler is not None:
            # A wrong spec is told at once, not after waiting for the scheduler.
            checked_grid(args.spec)
            client = connect(args.scheduler)
        with warnings.catch_warnings():
            # The failures are reported below, one line each.
            warnings.simplefilter("ignore", RuntimeWarning)
            frame = sweep(args.spec, db=args.db, jobs=args.jobs, client=client, progress=True)
    except (ValueError, TypeError, FileNotFoundError, StoreError, SchedulerUnreachable) as e:
        if interrupted:
            return _interrupted()
        print(f"tiersim: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:
        return _interrupted()
    finally:
        if client is not None:
            client.close()
    if interrupted:
        return _interrupted()
    a = frame.attrs
    name = frame["sweep"].iloc[0] if len(frame) else args.spec.stem
    print(
        f"sweep {name}: {a['total']} runs in {a['db']}: {a['already']} already there, {a['ran']} run now ({a['failed']} failed) "
        f"in {time.perf_counter() - started:.0f} s"
    )
    failed = frame[frame["status"] != "ok"]
    axes = list(frame.columns[2 : frame.columns.get_loc("status")])
    for _, row in failed.iterrows():
        label = " ".join(f"{k}={row[k]}" for k in axes) or "(no axes)"
        print(f"  failed: {label}: {row['error']}")
    if len(failed):
        print(f"tiersim: {len(failed)} of {a['total']} runs failed; their messages are in the store (status 'failed'), and the same command runs them again", file=sys.stderr)
        return 1
    return 0


def _interrupted() -> int:
    print("tiersim: interrupted; the same command runs only the runs left", file=sys.stderr)
    return 130


if __name__ == "__main__":
    sys.exit(main())
