"""Tree and DAG networks of discrete variables (Funk 2015): the graph (:mod:`.structure`),
the upward and downward passes (:mod:`.passes`) and stochastic EM (:mod:`.funk`). The
estimator is :class:`hiddenstate.TreeNet`."""

from .structure import Structure, build, layered

__all__ = ["Structure", "build", "layered"]
