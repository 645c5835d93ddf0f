"""tiersim from Python: simulation runs as pandas tables, and sweeps (grids of runs)
into tiersim's results store, on local threads or on a Dask cluster.

- :func:`run` runs one simulation and returns its :class:`Report`;
- :func:`sweep` runs a grid into a store and returns its runs as a DataFrame;
- :func:`load` reads a store, written by :func:`sweep` or by ``tiersim sweep``.

See docs/python.md in the repository.
"""

from tiersim._native import RunError, StoreError, __version__
from tiersim.report import Report, run
from tiersim.store import load
from tiersim.sweep import sweep

__all__ = ["Report", "RunError", "StoreError", "__version__", "load", "run", "sweep"]
