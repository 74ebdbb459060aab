"""Exceptions and warnings raised by hiddenstate.

Every error a user can cause at the public boundary is a :class:`HiddenStateError`; the
message names the offending argument and says how to fix it.
"""

from __future__ import annotations


class HiddenStateError(Exception):
    """Base class of every error hiddenstate raises on purpose."""


class InvalidInputError(HiddenStateError, ValueError):
    """An argument has the wrong shape, dtype, range or value."""


class NotFittedError(HiddenStateError, AttributeError):
    """A method needs learned parameters that the model does not have yet."""


class ModelFileError(HiddenStateError, OSError):
    """A saved model is missing, malformed, tampered with or of an unknown version."""


class ZeroProbabilityError(HiddenStateError, ValueError):
    """A sequence has probability zero under the model's current parameters."""


class ProgramError(HiddenStateError, ValueError):
    """A probabilistic program cannot be explained: a tabled goal depends on itself, the
    search exceeds its goal or depth limit, or a goal's function returns something other
    than alternatives of switch outcomes and goals."""


class MissingDependencyError(HiddenStateError, ImportError):
    """An optional dependency (torch, matplotlib, Dask) is not installed; the message says
    which extra to install."""


class InsufficientMemoryError(HiddenStateError, MemoryError):
    """An operation would need more memory than is available (checked before allocating)."""


class NumericalError(HiddenStateError, FloatingPointError):
    """A learning objective became NaN or infinite."""


class ClusterError(HiddenStateError, RuntimeError):
    """A Dask cluster (:mod:`hiddenstate.distributed`) is closed, has no worker, keeps
    losing the workers of a partition, or did not answer within the timeout; the message
    names the cluster and what was waited for."""


class DegenerateStateWarning(UserWarning):
    """A state received (almost) no posterior mass, or its covariance hit the floor."""


class ConvergenceWarning(UserWarning):
    """The learning objective went down, or the iteration limit was reached."""
