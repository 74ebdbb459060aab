"""The device paths of hiddenstate.lm, run on this CPU: the partition recursion of
lm/scan.py and the fused Triton kernels of lm/triton_scan.py (in Triton's interpreter)
against the general recursion (lm/forward.py) and the numba kernels. Skipped without torch;
the Triton tests also without triton."""

from __future__ import annotations

import numpy as np
import pytest

torch = pytest.importorskip("torch")

from lm_common import stream, vocab  # noqa: E402

from hiddenstate.lm import (  # noqa: E402
    BlockedHMMLM,
    triton_scan,  # noqa: E402
)
from hiddenstate.lm import model as lm_model  # noqa: E402
from hiddenstate.lm.forward import BlockedForward  # noqa: E402
from hiddenstate.lm.scan import PartitionForward  # noqa: E402

needs_triton = pytest.mark.skipif(not triton_scan.AVAILABLE, reason="triton is not installed")


_vocab = vocab


def _stream(rng, n_words: int, n_sent: int, max_len: int = 9) -> np.ndarray:
    return stream(rng, n_words, n_sent, max_len)


def _window(seed: int, C: int, k: int, B: int, T: int, dtype=torch.float64):
    """Random log potentials of a partition (C clusters of k states) and a window of B
    streams x T steps with sentence starts, a carried distribution and trailing padding."""
    g = torch.Generator().manual_seed(seed)
    K = C * k
    ls = torch.log_softmax(torch.randn(K, generator=g, dtype=dtype), 0)
    lt = torch.log_softmax(3 * torch.randn(K, K, generator=g, dtype=dtype), 1)
    le = torch.randn(B, T, k, generator=g, dtype=dtype)
    clusters = torch.randint(0, C, (B, T), generator=g)
    prev = torch.randint(0, C, (B,), generator=g)
    pa = torch.softmax(torch.randn(B, k, generator=g, dtype=dtype), 1)
    reset = torch.rand(B, T, generator=g) < 0.25
    reset[0, 0] = True
    valid = torch.ones(B, T, dtype=torch.bool)
    valid[-1, T // 2:] = False
    return (ls, lt, le), (clusters, prev, pa, reset, valid)


def _general(ls, lt, le, clusters, prev, pa, reset, valid):
    k = le.shape[2]
    ar = torch.arange(k)
    return BlockedForward.apply(ls, lt, le, clusters[..., None] * k + ar,
                                prev[:, None] * k + ar, pa, reset, valid)


def _value_and_grads(fn, params, rest, weight):
    params = [p.detach().clone().requires_grad_(True) for p in params]
    ll, alpha = fn(*params, *rest)
    grads = torch.autograd.grad((ll * weight).sum(), params)
    return [ll.detach(), alpha, *grads]


@pytest.mark.parametrize("C,k,B,T", [(3, 4, 3, 7), (1, 5, 2, 4), (4, 3, 4, 1)])
def test_partition_path_equals_the_general_recursion(C, k, B, T):
    """Values, carried distributions and gradients (the posterior marginals) of the fast
    path equal BlockedForward's, with resets, a carried state, padding and upstream
    weights per stream (float64, 1e-12)."""
    params, rest = _window(C * 10 + k, C, k, B, T)
    w = torch.linspace(0.5, 2.0, B, dtype=torch.float64)
    got = _value_and_grads(PartitionForward.apply, params, rest, w)
    ref = _value_and_grads(_general, params, rest, w)
    for name, a, b in zip(("loglik", "alpha", "start", "trans", "emit"), got, ref,
                          strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=1e-12, rtol=0, err_msg=name)


def test_partition_path_passes_gradcheck():
    params, rest = _window(5, 2, 3, 2, 4)
    params = [p.requires_grad_(True) for p in params]
    assert torch.autograd.gradcheck(lambda *p: PartitionForward.apply(*p, *rest)[0], params)


@needs_triton
@pytest.mark.parametrize("C,k,B,T,dtype", [(3, 4, 3, 6, torch.float64),
                                           (2, 5, 2, 5, torch.float64),
                                           (2, 16, 2, 3, torch.float32)])
def test_triton_kernels_equal_the_partition_path(C, k, B, T, dtype):
    """The fused kernels (forward, and backward with atomic adds into the transition and
    start gradients) give the torch path's values and gradients: 1e-12 in float64, 1e-5
    in float32; block sizes that are not a power of two are masked."""
    params, rest = _window(k, C, k, B, T, dtype)
    w = torch.linspace(0.5, 2.0, B, dtype=dtype)
    got = _value_and_grads(triton_scan.triton_log_likelihood, params, rest, w)
    ref = _value_and_grads(PartitionForward.apply, params, rest, w)
    tol = 1e-12 if dtype == torch.float64 else 1e-5
    for name, a, b in zip(("loglik", "alpha", "start", "trans", "emit"), got, ref,
                          strict=True):
        np.testing.assert_allclose(a.numpy(), b.numpy(), atol=tol, rtol=tol, err_msg=name)


def _tiny(seed: int, **kw) -> tuple[BlockedHMMLM, np.ndarray]:
    rng = np.random.default_rng(seed)
    m = BlockedHMMLM(states_per_cluster=4, dtype="float64", progress=False, batch_size=3,
                     bptt=5, **kw)
    m.initialize(_vocab(20), np.arange(20) % 5)
    return m, _stream(rng, 20, 25)


@pytest.mark.parametrize("kw", [dict(state_dropout=3), dict(parameterization="neural",
                                                             hidden_size=8)])
def test_training_steps_equal_with_the_general_recursion(kw):
    """Three gradient steps through the partition path move the parameters exactly as
    the general recursion does (float64, 1e-10)."""
    a, ids = _tiny(1, **kw)
    b, _ = _tiny(1, **kw)
    b._wc = None  # the general recursion
    a.fit(ids, resume=True, max_steps=3)
    b.fit(ids, resume=True, max_steps=3)
    for name, p in a.net_.state_dict().items():
        np.testing.assert_allclose(p.numpy(), b.net_.state_dict()[name].numpy(), atol=1e-10,
                                   rtol=0, err_msg=name)


def test_stepwise_em_counts_equal_the_general_recursion():
    a, ids = _tiny(2, learn="stepwise-em")
    b, _ = _tiny(2, learn="stepwise-em")
    b._wc = None
    a.fit(ids, resume=True, max_steps=4)
    b.fit(ids, resume=True, max_steps=4)
    for key, acc in a._state["acc"].items():
        np.testing.assert_allclose(acc.numpy(), b._state["acc"][key].numpy(), atol=1e-10,
                                   rtol=0, err_msg=key)


@needs_triton
def test_training_on_the_triton_backend_equals_the_torch_backend(monkeypatch):
    """SCAN_BACKEND='triton' (what a GPU runs) trains as the torch path does (float64)."""
    a, ids = _tiny(3, state_dropout=3)
    b, _ = _tiny(3, state_dropout=3)
    a.fit(ids, resume=True, max_steps=2)
    monkeypatch.setattr(lm_model, "SCAN_BACKEND", "triton")
    b.fit(ids, resume=True, max_steps=2)
    for name, p in a.net_.state_dict().items():
        np.testing.assert_allclose(p.numpy(), b.net_.state_dict()[name].numpy(), atol=1e-10,
                                   rtol=0, err_msg=name)


@needs_triton
def test_triton_self_check_accepts_working_kernels_and_refuses_broken_ones(monkeypatch):
    assert lm_model._triton_self_check(torch.device("cpu"), torch.float64)

    def broken(*args):
        raise RuntimeError("no compiler")

    monkeypatch.setattr(triton_scan, "triton_log_likelihood", broken)
    with pytest.warns(RuntimeWarning, match="torch recursion runs instead"):
        assert not lm_model._triton_self_check(torch.device("cpu"), torch.float64)


def test_kept_log_softmax_equals_gather_then_log_softmax():
    """The fused gather + softmax of the kept states (scalar transitions under state
    dropout) has the value and gradient of two index_selects and a log_softmax."""
    from hiddenstate.lm.params import KeptLogSoftmax
    g = torch.Generator().manual_seed(7)
    logits = torch.randn(12, 12, generator=g, dtype=torch.float64, requires_grad=True)
    kept = torch.tensor([0, 2, 3, 7, 8, 11])
    w = torch.randn(6, 6, generator=g, dtype=torch.float64)
    a = KeptLogSoftmax.apply(logits, kept)
    (ga,) = torch.autograd.grad((a * w).sum(), logits)
    b = torch.log_softmax(logits.index_select(0, kept).index_select(1, kept), dim=1)
    (gb,) = torch.autograd.grad((b * w).sum(), logits)
    np.testing.assert_allclose(a.detach().numpy(), b.detach().numpy(), atol=1e-14)
    np.testing.assert_allclose(ga.numpy(), gb.numpy(), atol=1e-14)
    assert torch.autograd.gradcheck(lambda x: KeptLogSoftmax.apply(x, kept), (logits,))
