"""The Dask engine: the same anonymization on a cluster, over partitioned Parquet (``pip install -e ".[dask]"``).

:func:`anonymize_dataset` reads a folder holding one directory of Parquet files per table, runs the
top-down method with the tables cut into random batches of ``batch_size`` rows (the factor space of each
table fitted once from all of them), links the tables by spatial blocks spread over the workers, and
writes the release as one directory of Parquet parts per table. See docs/guide/dask.md.

The package sits beside :mod:`relanon.multitable` (it uses the engine, the multi-table steps and the
stores); nothing below it imports it, the command line imports it only for ``--engine dask``, and
importing it without Dask raises a :class:`~relanon.common.errors.ParameterError` naming the extra to
install.
"""

from relanon.distributed.cluster import import_distributed

import_distributed()

from relanon.distributed.run import DistributedResult, anonymize_dataset  # noqa: E402

__all__ = ["DistributedResult", "anonymize_dataset"]
