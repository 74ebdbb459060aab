"""The report's log-likelihood plot shows every iteration, with plain tick labels."""

import numpy as np
import pytest

pytest.importorskip("matplotlib")

import hiddenstate as hs  # noqa: E402
from hiddenstate.report.plots import loglik_figure, plot_loglik  # noqa: E402


def _short_gaussian_history():
    """A short Gaussian fit whose first iteration's jump dwarfs the rest (the case of the
    issue: about -111 nats, iterations 1-2 hidden and an offset "-1.1144e2" on the axis)."""
    rng = np.random.default_rng(0)
    X = np.concatenate([rng.normal(0, 1, (30, 1)), rng.normal(4, 1, (30, 1))])
    m = hs.HMM(2, emission="gaussian", n_iter=8, tol=-np.inf, random_state=0).fit(X)
    return np.asarray(m.monitor_.history), len(X)


def test_every_iteration_is_drawn_and_inside_the_axes():
    h, n = _short_gaussian_history()
    fig = loglik_figure(h, n)
    ax = fig.axes[0]
    x, y = ax.lines[0].get_data()
    np.testing.assert_array_equal(x, np.arange(1, len(h) + 1))
    np.testing.assert_array_equal(y, h)
    fig.canvas.draw()
    lo, hi = ax.get_ylim()
    assert lo <= h.min() and h.max() <= hi  # iterations 1-2 are not cut off
    x0, x1 = ax.get_xlim()
    assert x0 < 1 and len(h) < x1


def test_tick_labels_are_plain_numbers_without_offset():
    # a converged stretch: a range of 0.004 nats at -111.44, where matplotlib's default
    # formatter writes an offset ("-1.1144e2") and ticks like "0.001"
    h = np.array([-111.4470, -111.4452, -111.4441, -111.4436, -111.4434, -111.4433])
    from hiddenstate.report.plots import _figure

    control = _figure(6.4, 3.6)  # the same figure, matplotlib's default formatter
    control.add_subplot().plot(np.arange(1, len(h) + 1), h)
    control.canvas.draw()
    assert control.axes[0].yaxis.get_offset_text().get_text() != ""

    fig = loglik_figure(h, n_observations=100)
    fig.canvas.draw()
    for axis in (fig.axes[0].yaxis, *[a.yaxis for a in fig.axes[0].child_axes]):
        assert axis.get_offset_text().get_text() == ""
        labels = [t.get_text().replace("\u2212", "-") for t in axis.get_ticklabels()]
        values = [float(t) for t in labels if t]
        assert values and not any("e" in t.lower() for t in labels)
    # the ticks of the main axis read as the log-likelihood itself, not as an offset
    main = [float(t.get_text().replace("\u2212", "-"))
            for t in fig.axes[0].yaxis.get_ticklabels() if t.get_text()]
    assert all(-111.45 <= v <= -111.44 for v in main)
    ticks = fig.axes[0].get_xticks()  # the iteration axis has integer ticks only
    assert np.allclose(ticks, np.round(ticks))


def test_a_jump_that_dwarfs_the_rest_gets_a_distance_panel(tmp_path):
    h = np.array([-500.0, -120.0, -111.5, -111.44, -111.4401, -111.44005])
    fig = loglik_figure(h)
    assert len(fig.axes) == 2
    x, y = fig.axes[1].lines[0].get_data()
    np.testing.assert_allclose(y, np.abs(h[-1] - h[:-1]))
    np.testing.assert_array_equal(x, np.arange(1, len(h)))
    assert fig.axes[1].get_yscale() == "log"
    # a steady climb keeps one panel; the PNG is written
    assert len(loglik_figure(np.linspace(-100, -90, 6)).axes) == 1
    assert plot_loglik(h, tmp_path / "l.png").stat().st_size > 0
