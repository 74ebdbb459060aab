"""Batch learning on a Dask cluster (the ``dask`` extra: ``pip install 'hiddenstate[dask]'``).

:func:`fit` runs every batch ``learn=`` mode of an HMM (and its ``n_init`` restarts) with the
E-step mapped over partitions of the sequences where they live and the statistics reduced in
a fixed order; :class:`DaskProblem` does the same for any model that hands the learner a
:class:`~hiddenstate.learn.batch.Problem`. See ``docs/distributed.md``.
"""

from .fit import WORKER_CONFIG, fit, local_client
from .partitions import (
    Partitions,
    from_arrays,
    from_bag,
    from_files,
    from_list,
    from_parquet,
)
from .problem import DaskProblem

__all__ = ["WORKER_CONFIG", "DaskProblem", "Partitions", "fit", "from_arrays", "from_bag",
           "from_files", "from_list", "from_parquet", "local_client"]
