"""HMM language models with many states: blocked emissions, Brown clusters, state dropout.

Needs PyTorch (the ``torch`` extra); ``import hiddenstate`` does not import this package.
See ``docs/lm.md``.
"""

from .clusters import (
    BrownClusters,
    average_mutual_information,
    brown_clusters,
    read_brown_paths,
    write_brown_paths,
)
from .constraints import ConstraintSet
from .data import EOS, TokenIds, load_corpus, read_lm_file, sentence_streams
from .forward import blocked_log_likelihood, expected_counts
from .model import BlockedHMMLM, load_checkpoint, load_model

__all__ = [
    "EOS",
    "BlockedHMMLM",
    "TokenIds",
    "BrownClusters",
    "ConstraintSet",
    "average_mutual_information",
    "load_checkpoint",
    "load_model",
    "blocked_log_likelihood",
    "brown_clusters",
    "expected_counts",
    "load_corpus",
    "read_brown_paths",
    "read_lm_file",
    "sentence_streams",
    "write_brown_paths",
]
