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


# --------------------------------------------------------------------------- states over time


def _regime_model_and_data():
    """A 2-state Gaussian HMM set by hand and 80 steps of two features (two missing)."""
    m = hs.HMM(2, emission="gaussian", covariance_type="diag", init_params="", n_iter=1,
               tol=-np.inf)
    m.startprob_ = np.array([0.5, 0.5])
    m.transmat_ = np.array([[0.95, 0.05], [0.1, 0.9]])
    m.means_ = np.array([[0.0, 10.0], [3.0, 12.0]])
    m.covars_ = np.array([[0.5, 1.0], [1.5, 2.0]])
    X, _ = m.sample(80, random_state=4)
    X[[7, 30], 0] = np.nan
    return m, X


def test_states_over_time_draws_the_series_by_state_and_the_posterior_band(tmp_path):
    """The band is the posterior predictive mean and sd computed by hand from
    predict_proba, the line segments take the Viterbi state's colour, the stacked
    posteriors are predict_proba, and dates are the x axis."""
    from matplotlib import dates as mdates

    from hiddenstate.report import _state_moments
    from hiddenstate.report.plots import _state_colors, states_figure

    m, X = _regime_model_and_data()
    gamma = m.predict_proba(X)
    _, z = m.decode(X)
    mean, var = _state_moments(m)
    np.testing.assert_array_equal(mean, m.means_)
    np.testing.assert_array_equal(var, [[0.5, 1.0], [1.5, 2.0]])
    mu = gamma @ m.means_                                    # by hand, per feature
    sd = np.sqrt(gamma @ (var + m.means_ ** 2) - mu ** 2)
    dates = np.datetime64("2001-01-01") + np.arange(80)
    fig = states_figure([{"number": 0, "x": dates, "X": X, "states": z, "posterior": gamma,
                          "mean": mu, "sd": sd}], 2, ["price", "volume"], "Date")
    axes = fig.axes
    assert [a.get_ylabel() for a in axes] == ["price", "volume", "P(state)"]
    x_num = mdates.date2num(dates)
    for j in range(2):
        ax = axes[j]
        line = next(ln for ln in ax.lines if ln.get_label() == "posterior mean")
        np.testing.assert_allclose(line.get_ydata(), mu[:, j], rtol=1e-12)
        np.testing.assert_allclose(line.get_xdata(), x_num)
        band = ax.collections[0].get_paths()[0].vertices
        assert band[:, 1].max() == pytest.approx((mu[:, j] + 2 * sd[:, j]).max())
        assert band[:, 1].min() == pytest.approx((mu[:, j] - 2 * sd[:, j]).min())
        segments = ax.collections[1]
        colors = _state_colors(2)
        np.testing.assert_allclose(segments.get_colors(),
                                   [colors[k] for k in z[:-1]], atol=1e-12)
    stacked = axes[2].collections
    assert len(stacked) == 2
    top = stacked[1].get_paths()[0].vertices[:, 1]
    assert top.max() == pytest.approx(1.0) and top.min() >= 0
    assert axes[2].get_xlabel() == "Date"


def test_state_moments_of_mixtures_are_the_mixture_moments():
    """A Gaussian mixture state's mean and variance per feature: the law of total variance
    over its components, computed here component by component for every covariance type."""
    from hiddenstate.report import _state_moments

    X = np.random.default_rng(1).normal(size=(200, 2)) * [1.0, 3.0]
    for kind in ("spherical", "diag", "full", "tied"):
        m = hs.HMM(2, emission="gmm", n_mix=3, covariance_type=kind, n_iter=3, tol=-np.inf,
                   random_state=0).fit(X)
        mean, var = _state_moments(m)
        for k in range(2):
            w, mus = m.weights_[k], m.means_[k]
            comp_var = []
            for c in range(3):
                cov = np.asarray(m.covars_)
                if kind == "spherical":
                    v = np.full(2, cov[k, c])
                elif kind == "diag":
                    v = cov[k, c]
                elif kind == "full":
                    v = np.diag(cov[k, c])
                else:
                    v = np.diag(cov[k])
                comp_var.append(v)
            want_mean = sum(w[c] * mus[c] for c in range(3))
            want_var = sum(w[c] * (comp_var[c] + (mus[c] - want_mean) ** 2) for c in range(3))
            np.testing.assert_allclose(mean[k], want_mean, rtol=1e-12)
            np.testing.assert_allclose(var[k], want_var, rtol=1e-10)


def test_a_45_state_text_report_shows_every_state(tmp_path, monkeypatch):
    """At 45 states the top-words chart has a row for every state (it stopped at 16), the
    start probabilities are one row per state (not one 45-column row), and the heat maps
    tick every 5th state."""
    from hiddenstate.report import write_report
    from hiddenstate.report.plots import _figure, _state_ticks
    from hiddenstate.textio import Vocabulary

    rng = np.random.default_rng(0)
    words = [f"w{i}" for i in range(120)]
    sents = [list(rng.choice(words, size=8)) for _ in range(60)]
    vocab = Vocabulary.build(sents)
    X = vocab.encode(w for s in sents for w in s)[:, None]
    m = hs.HMM(45, n_features=len(vocab), n_iter=2, tol=-np.inf, random_state=0).fit(
        X, [8] * 60)
    from hiddenstate.report import plots
    drawn = {}
    save = plots._save
    monkeypatch.setattr(plots, "_save", lambda fig, path: drawn.setdefault(path.name, fig)
                        and save(fig, path))
    index = write_report(m, tmp_path, X=X, lengths=[8] * 60, vocabulary=vocab)
    html = index.read_text()
    assert html.count("<tr><td>44</td>") == 2  # the transitions and the emissions tables
    assert "start probability" in html and "<td>start prob.</td>" not in html
    ax = drawn["top_symbols.png"].axes[0]
    assert [t.get_text() for t in ax.get_yticklabels()] == [f"state {k}" for k in range(45)]
    cells = [t.get_text() for t in ax.texts]
    top = m.emissionprob_[44].argmax()
    assert len(cells) == 45 * 10 and cells[440].startswith(vocab.tokens[top] + " ")
    fig = _figure(4, 4)
    ax = fig.add_subplot()
    _state_ticks(ax, 45)
    assert list(ax.get_xticks()) == list(range(0, 45, 5))


@pytest.mark.slow
def test_reports_load_in_headless_chromium(tmp_path):
    """A Gaussian report (dates, missing cells) and a text report (words outside the
    vocabulary) opened in headless Chromium, as the site is checked (docs/check_site.py):
    no console error, every image loaded, the new sections there."""
    import importlib.util
    import sys
    from pathlib import Path

    pytest.importorskip("selenium")
    docs = Path(__file__).resolve().parents[1] / "docs"
    spec = importlib.util.spec_from_file_location("check_site", docs / "check_site.py")
    check_site = importlib.util.module_from_spec(spec)
    sys.modules["check_site"] = check_site
    spec.loader.exec_module(check_site)
    if not (Path(check_site.CHROMIUM).exists() and Path(check_site.CHROMEDRIVER).exists()):
        pytest.skip("needs Debian's chromium and chromium-driver")
    from hiddenstate import cli

    m, X = _regime_model_and_data()
    dates = np.datetime64("2001-01-01") + np.arange(len(X))
    rows = [f"{d},{'' if np.isnan(a) else a},{b}" for d, (a, b) in zip(dates, X, strict=True)]
    (tmp_path / "series.csv").write_text("day,price,volume\n" + "\n".join(rows) + "\n")
    (tmp_path / "train.txt").write_text("the cat sat .\nthe dog sat .\n" * 4)
    (tmp_path / "new.txt").write_text("the zebra sat .\n")
    for argv in (["fit", tmp_path / "series.csv", "--out", tmp_path / "gm", "--report",
                  tmp_path / "gr", "--random-state", 0, "--no-progress"],
                 ["fit", tmp_path / "train.txt", "--out", tmp_path / "tm", "--random-state", 0,
                  "--no-progress"],
                 ["report", tmp_path / "new.txt", "-m", tmp_path / "tm", "--out",
                  tmp_path / "tr"]):
        assert cli.main([str(a) for a in argv]) == 0
    problems, seen = check_site.check_report(tmp_path / "gr")
    assert problems == []
    assert "timeline" in seen["sections"]
    series = [img for img in seen["images"] if img[0].startswith("series coloured")]
    assert len(series) == 1 and series[0][1] == 1100  # the states-over-time plot loaded
    problems, seen = check_site.check_report(tmp_path / "tr")
    assert problems == [] and "examples" in seen["sections"]
    assert all(w > 0 for _, w, _ in seen["images"])
    assert 'class="tok oov"' in (tmp_path / "tr" / "index.html").read_text()
