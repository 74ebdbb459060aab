"""Estimators users touch."""

from .hmm import HMM

__all__ = ["HMM"]
