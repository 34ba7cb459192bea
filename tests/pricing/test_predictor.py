"""The batch latency predictor (§4.1): features, scenarios, NNLS fit, online update, files."""

from __future__ import annotations

import json
from pathlib import Path

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from slidingpolicy import (
    InvalidRecordError,
    LatencyPredictor,
    LinearModel,
    PredictorFormatError,
    default_predictor,
)
from slidingpolicy.predictors.profiling import DEFAULT_PROFILES, profile, random_batch
from slidingpolicy.pricing import (
    DECODE,
    MIXED,
    PREFILL,
    PredictorStats,
    Sample,
    accumulate,
    batch_features,
    evaluate,
    fit_predictor,
    solve,
)
from slidingpolicy.testing.strategies import predictors


def arrays(chunks: list[int], contexts: list[int]) -> tuple[np.ndarray, np.ndarray]:
    return np.array(chunks, dtype=np.int64), np.array(contexts, dtype=np.int64)


def test_features_follow_eq_4_with_one_token_chunks_as_decodes() -> None:
    x, scenario = batch_features(*arrays([1, 1, 300, 1, 5], [100, 50, 20, 7, 0]))
    # P = {(300, 20), (5, 0)}; D = {(1, 100), (1, 50), (1, 7)}: a 1-token chunk is a decode.
    assert x.tolist() == [
        300 * 320 + 5 * 5,
        300**2 + 25,
        100 + 50 + 20 + 7 + 0,
        3,
        157,
        305,
        300,
    ]
    assert scenario == MIXED


@pytest.mark.parametrize(
    ("chunks", "scenario"),
    [([1, 1], DECODE), ([2, 9], PREFILL), ([1, 2], MIXED), ([1], DECODE)],
)
def test_scenario_follows_eq_5(chunks: list[int], scenario: int) -> None:
    assert batch_features(*arrays(chunks, [0] * len(chunks)))[1] == scenario


@given(predictors(), st.lists(st.tuples(st.integers(1, 4000), st.integers(0, 8000)), max_size=40))
@settings(max_examples=100)
def test_predict_is_eq_6_of_the_scenario_model(
    predictor: LatencyPredictor, batch: list[tuple[int, int]]
) -> None:
    chunks, contexts = arrays([c for c, _ in batch], [u for _, u in batch])
    if not batch:
        assert predictor.predict(chunks, contexts) == 0.0
        return
    x, scenario = batch_features(chunks, contexts)
    model = predictor.models[scenario]
    expected = model.intercept + sum(w * v for w, v in zip(model.weights, x, strict=True))
    assert predictor.predict(chunks, contexts) == pytest.approx(expected, rel=1e-12)


def truth() -> LatencyPredictor:
    """A known non-negative model per scenario, with a zero weight in each, monotone across
    scenarios (decode ≤ mixed ≥ prefill elementwise, no x3 in decode) as the fit makes it."""
    return LatencyPredictor(
        LinearModel(0.007, (0, 0, 0, 1.4e-4, 4e-8, 0, 0)),
        LinearModel(0.005, (4e-9, 0, 6e-8, 0, 0, 1.5e-4, 2e-6)),
        LinearModel(0.007, (4e-9, 0, 6e-8, 1.4e-4, 4e-8, 1.5e-4, 2e-6)),
        fallback=LinearModel(0.007, (4e-9, 1e-9, 6e-8, 1e-4, 0, 1.5e-4, 0)),
    )


def not_monotone() -> LatencyPredictor:
    """The shape the old per-scenario fit gave on the default hardware: decode intercept
    9.95 ms above mixed's 7.70 ms, prefill's x3 weight 17× mixed's."""
    return LatencyPredictor(
        LinearModel(0.00995, (0, 0, 2.1e-8, 1.43e-4, 2.1e-8, 0, 0)),
        LinearModel(0.0054, (4.2e-9, 0, 9.1e-7, 0, 0, 1.53e-4, 0)),
        LinearModel(0.0077, (4.4e-9, 0, 5.4e-8, 1.16e-4, 0, 1.53e-4, 0)),
        fallback=LinearModel(0.008, (4.4e-9, 0, 5.4e-8, 1.1e-4, 0, 1.53e-4, 0)),
    )


def noiseless_samples(model: LatencyPredictor, n: int, seed: int) -> list[Sample]:
    rng = np.random.default_rng(seed)
    samples = []
    for _ in range(n):
        chunks, contexts = random_batch(rng)
        latency = model.predict(*arrays(chunks, contexts))
        samples.append(Sample(chunks, contexts, latency))
    return samples


def test_fit_recovers_a_non_negative_model_from_noiseless_samples() -> None:
    samples = noiseless_samples(truth(), 600, seed=1)
    fitted = fit_predictor(samples)
    for report in evaluate(fitted, noiseless_samples(truth(), 200, seed=2)):
        assert report.mae < 1e-7, report
    assert (fitted.coefficients >= 0).all()


def test_fit_never_returns_a_negative_weight_even_when_least_squares_wants_one() -> None:
    rng = np.random.default_rng(3)
    samples = [
        Sample([2 + i], [0], 0.05 - 1e-5 * (2 + i) + rng.normal(0, 1e-4)) for i in range(200)
    ]
    fitted = fit_predictor(samples, min_samples=10)
    assert fitted.prefill.weights[5] == 0.0
    assert (fitted.coefficients >= 0).all()


def test_scenario_with_few_samples_falls_back_to_the_global_model() -> None:
    samples = noiseless_samples(truth(), 300, seed=4)
    decodes_only = [s for s in samples if max(s.chunks) == 1][:5]
    others = [s for s in samples if max(s.chunks) > 1]
    fitted = fit_predictor(decodes_only + others, min_samples=30)
    assert fitted.decode.weights == fitted.fallback.weights
    assert fitted.decode.samples == 5


def test_online_statistics_equal_batch_statistics() -> None:
    samples = noiseless_samples(truth(), 80, seed=5)
    stats = PredictorStats.empty()
    for sample in samples:
        x, scenario = sample.features()
        stats = stats.add(x, scenario, sample.latency)
    batch = accumulate(samples)
    assert np.allclose(stats.gram, batch.gram)
    assert np.allclose(stats.moment, batch.moment)
    assert stats.count.tolist() == batch.count.tolist()


@given(
    predictors(),
    st.floats(0.1, 10.0),
    st.lists(st.tuples(st.integers(1, 2048), st.integers(0, 8000)), min_size=1, max_size=8),
)
def test_a_scaled_predictor_predicts_that_many_times_as_long(
    predictor: LatencyPredictor, factor: float, batch: list[tuple[int, int]]
) -> None:
    scaled = predictor.scaled(factor)
    chunks, contexts = arrays([c for c, _ in batch], [u for _, u in batch])
    assert scaled.predict(chunks, contexts) == pytest.approx(
        factor * predictor.predict(chunks, contexts), rel=1e-12, abs=1e-15
    )
    assert scaled.margin == predictor.margin
    assert predictor.scaled(1.0) is predictor
    with pytest.raises(InvalidRecordError, match=r"latency predictor: factor=0\.0 must be > 0"):
        predictor.scaled(0.0)


def test_forgetting_discounts_old_observations() -> None:
    x, scenario = batch_features(*arrays([1, 1], [10, 20]))
    stats = PredictorStats.empty().add(x, scenario, 0.01, 0.5).add(x, scenario, 0.02, 0.5)
    assert stats.count[DECODE] == pytest.approx(1.5)
    assert stats.moment[DECODE][0] == pytest.approx(0.01 * 0.5 + 0.02)


def test_solve_keeps_the_prior_where_data_are_scarce() -> None:
    prior = truth()
    stats = accumulate(noiseless_samples(truth(), 3, seed=6))
    refit = solve(stats, min_samples=30, prior=prior)
    assert refit.models == prior.models


def test_statistics_records_are_read_only() -> None:
    stats = PredictorStats.empty()
    with pytest.raises(ValueError, match="read-only"):
        stats.gram[0, 0, 0] = 1.0


def test_save_and_load_round_trip(tmp_path: Path) -> None:
    path = tmp_path / "p.json"
    truth().save(path)
    assert LatencyPredictor.load(path) == truth()


@pytest.mark.parametrize(
    ("content", "message"),
    [
        ('{"format": "slidingpolicy.predictor", "version": 99}', "format version 99"),
        ('{"format": "other"}', "not a slidingpolicy.predictor file"),
        ("not json", "not JSON: Expecting value at line 1 column 1"),
        ('{"format": "slidingpolicy.predictor", "version": 1, "models": {}}', "malformed"),
    ],
)
def test_load_rejects_bad_files(tmp_path: Path, content: str, message: str) -> None:
    path = tmp_path / "p.json"
    path.write_text(content)
    with pytest.raises(PredictorFormatError, match=message):
        LatencyPredictor.load(path)


def test_load_rejects_negative_weights(tmp_path: Path) -> None:
    data = truth().to_dict()
    data["models"]["mixed"]["weights"][0] = -1.0
    path = tmp_path / "p.json"
    path.write_text(json.dumps(data))
    with pytest.raises(PredictorFormatError, match=r"weights\[0\]=-1.0 must be >= 0"):
        LatencyPredictor.load(path)


def test_default_predictor_is_packaged_and_accurate_on_its_hardware() -> None:
    from slidingpolicy.hardware import default_hardware

    predictor = default_predictor()
    held_out = profile(default_hardware(), 600, seed=99)
    reports = {r.scenario: r for r in evaluate(predictor, held_out)}
    assert reports["all"].r2 >= 0.99
    assert predictor.source == default_hardware().name


@pytest.mark.slow
def test_packaged_defaults_are_what_make_default_generates() -> None:
    """Every packaged default predictor is reproducible from its generator (never hand-edited),
    and exactly the listed profiles ship."""
    from importlib import resources
    from pathlib import Path

    from slidingpolicy.predictors.locations import profile_key
    from slidingpolicy.predictors.profiling import DEFAULT_PROFILES, make_default

    folder = Path(str(resources.files("slidingpolicy.predictors") / "packaged"))
    shipped = {path.stem for path in folder.glob("*.json")}
    assert shipped == {profile_key(*p) for p in DEFAULT_PROFILES}
    probes = profile_batches(300)
    for gpu, model, tp in DEFAULT_PROFILES:
        path = folder / f"{profile_key(gpu, model, tp)}.json"
        packaged, generated = LatencyPredictor.load(path), make_default(gpu, model, tp)
        assert packaged.source == generated.source, path.name
        for chunks, contexts in probes:
            assert packaged.predict(chunks, contexts) == pytest.approx(
                generated.predict(chunks, contexts), rel=1e-9
            ), path.name


def profile_batches(count: int) -> list[tuple[np.ndarray, np.ndarray]]:
    """Batches of every scenario, as the calibration draws them.

    On a decode-only batch x3 = x5 (eq. 4), so the NNLS split between their weights is not
    identified and differs in its last digits between BLAS builds; the predictions, which
    are what the packaged file must reproduce, do not.
    """
    rng = np.random.default_rng(7)
    return [arrays(*random_batch(rng)) for _ in range(count)]


def _is_monotone_order(predictor: LatencyPredictor) -> bool:
    """w_DECODE ≤ w_MIXED ≥ w_PREFILL elementwise, intercepts included."""
    decode, prefill, mixed = predictor.coefficients
    return bool((decode <= mixed).all() and (prefill <= mixed).all())


@pytest.mark.parametrize(("gpu", "model", "tp"), DEFAULT_PROFILES)
def test_packaged_default_never_gets_faster_when_a_prefill_joins_the_decodes(
    gpu: str, model: str, tp: int
) -> None:
    """Defect 4 of issue 14: the old default predicted one decode plus a 2-token chunk
    (MIXED, 7.7 ms) faster than the decode alone (DECODE, 9.95 ms)."""
    predictor = default_predictor(gpu, model, tp)
    for decodes in (1, 8, 64):
        for context in (16, 2000):
            alone = predictor.predict(*arrays([1] * decodes, [context] * decodes))
            joined = predictor.predict(*arrays([1] * decodes + [2], [context] * decodes + [0]))
            assert joined >= alone, (decodes, context, alone, joined)
    assert _is_monotone_order(predictor)


def test_the_old_per_scenario_shape_is_what_the_order_rules_out() -> None:
    """The non-monotone shape is caught by the order check, and refitting noiseless samples
    of it gives a predictor in order."""
    assert not _is_monotone_order(not_monotone())
    assert _is_monotone_order(fit_predictor(noiseless_samples(not_monotone(), 600, seed=8)))


@st.composite
def fitted_predictors(draw: st.DrawFn) -> LatencyPredictor:
    """A fit of 0–300 samples of any non-negative truth (even one out of order), with or
    without a prior, and a sample threshold that may leave scenarios to the fallback."""
    truth_model = draw(predictors())
    samples = noiseless_samples(truth_model, draw(st.integers(0, 300)), draw(st.integers(0, 99)))
    prior = draw(st.none() | predictors())
    return solve(accumulate(samples), min_samples=draw(st.integers(1, 80)), prior=prior)


@pytest.mark.slow
@given(fitted_predictors())
@settings(max_examples=60, deadline=None)
def test_every_fit_is_in_monotone_order(predictor: LatencyPredictor) -> None:
    assert _is_monotone_order(predictor)


@pytest.mark.slow
@given(
    fitted_predictors(),
    st.lists(st.tuples(st.integers(1, 2048), st.integers(0, 8000)), min_size=1, max_size=12),
    st.integers(0, 11),
    st.integers(0, 8000),
)
@settings(max_examples=200, deadline=None)
def test_more_work_never_predicts_faster(
    predictor: LatencyPredictor, batch: list[tuple[int, int]], which: int, context: int
) -> None:
    """Adding a decode, adding a prefill chunk ≥ 2, or growing a chunk that is already ≥ 2
    never lowers T̂, across scenario boundaries too (proofs/monotonicity.md §5). Growing a
    1-token chunk to 2 is eq. 4's exception and is not claimed."""
    chunks, contexts = [c for c, _ in batch], [u for _, u in batch]
    base = predictor.predict(*arrays(chunks, contexts))
    tolerance = 1e-12
    assert predictor.predict(*arrays([*chunks, 1], [*contexts, context])) >= base - tolerance
    assert predictor.predict(*arrays([*chunks, 2], [*contexts, context])) >= base - tolerance
    k = which % len(chunks)
    if chunks[k] >= 2:
        grown = [c + 1 if i == k else c for i, c in enumerate(chunks)]
        assert predictor.predict(*arrays(grown, contexts)) >= base - tolerance


def test_the_tile_count_is_the_tiles_the_batch_tokens_fill() -> None:
    x, _ = batch_features(*arrays([1, 1, 300, 5], [100, 50, 20, 0]), tile=128)
    assert x.size == 8
    assert x[7] == 3  # 2 decodes + 305 prefill tokens = 307 rows: ⌈307 / 128⌉


@given(predictors(tiles=True), st.lists(st.integers(1, 700), min_size=1, max_size=6))
def test_a_tile_aware_prediction_adds_w8_per_tile(
    predictor: LatencyPredictor, chunks: list[int]
) -> None:
    contexts = [0] * len(chunks)
    x, scenario = batch_features(*arrays(chunks, contexts), tile=predictor.tile)
    row = predictor.coefficients[scenario]
    assert predictor.predict(*arrays(chunks, contexts)) == pytest.approx(
        float(row[0] + row[1:] @ x), rel=1e-12, abs=1e-15
    )


def test_a_tile_aware_predictor_round_trips_as_version_3(tmp_path: Path) -> None:
    model = LinearModel(0.01, (0.0,) * 7 + (2e-3,))
    predictor = LatencyPredictor(model, model, model, fallback=model, tile=128)
    path = tmp_path / "tiled.json"
    predictor.save(path)
    assert json.loads(path.read_text())["version"] == 3
    assert LatencyPredictor.load(path) == predictor
    seven = LinearModel(0.01, (0.0,) * 7)
    plain = LatencyPredictor(seven, seven, seven, fallback=seven)
    assert plain.to_dict()["version"] == 2
    assert "tile" not in plain.to_dict()


@pytest.mark.parametrize(
    ("weights", "tile", "message"),
    [
        (8, None, "decode has 8 weights, needs 7"),
        (7, 128, r"decode has 7 weights, needs 8 \(tile=128\)"),
        (7, 0, "tile=0 must be >= 1"),
    ],
)
def test_a_predictor_needs_one_weight_per_feature(
    weights: int, tile: int | None, message: str
) -> None:
    model = LinearModel(0.01, (0.0,) * weights)
    with pytest.raises(InvalidRecordError, match=message):
        LatencyPredictor(model, model, model, fallback=model, tile=tile)


def test_fit_with_a_tile_sees_the_steps_a_seven_feature_fit_cannot() -> None:
    """On latencies that jump by 2 ms every 128 tokens, the tile-aware fit recovers the
    step (w8) and predicts both sides of an edge; the seven-feature fit cannot."""
    samples = []
    for tokens in range(20, 1100, 7):
        latency = 0.01 + 1e-5 * tokens + 2e-3 * -(-tokens // 128)
        samples.append(Sample([tokens], [0], latency))
    tiled = fit_predictor(samples, min_samples=1, tile=128)
    plain = fit_predictor(samples, min_samples=1)
    assert tiled.prefill.weights[7] == pytest.approx(2e-3, rel=1e-3)
    edge = [tiled.predict(*arrays([n], [0])) for n in (256, 257)]
    assert edge[1] - edge[0] == pytest.approx(2e-3 + 1e-5, rel=1e-3)
    smooth = [plain.predict(*arrays([n], [0])) for n in (256, 257)]
    assert smooth[1] - smooth[0] < 1e-4


@given(
    st.lists(
        st.tuples(
            st.lists(st.tuples(st.integers(1, 2048), st.integers(0, 8000)), min_size=1, max_size=6),
            st.floats(0.0, 2.0),
            st.floats(0.01, 1.0),
        ),
        min_size=1,
        max_size=20,
    ),
    st.sampled_from([1.0, 0.99, 0.5]),
)
def test_a_fold_weighs_each_row_as_written(
    rows: list[tuple[list[tuple[int, int]], float, float]], forgetting: float
) -> None:
    """Folding k rows at once: row i's z zᵀ, y z and y² weigh forgetting^(k−1−i) times its
    weight, its count forgetting^(k−1−i) alone (the count counts observations), and folding
    them one at a time gives the same; a single unweighted row gives `add`'s very bits."""
    k = len(rows)
    features = []
    expected = PredictorStats.empty()
    gram, moment = expected.gram.copy(), expected.moment.copy()
    yy, count = expected.yy.copy(), expected.count.copy()
    for i, (batch, latency, weight) in enumerate(rows):
        x, scenario = batch_features(*arrays([c for c, _ in batch], [u for _, u in batch]))
        features.append((x, scenario, latency, weight))
        z, kept = np.concatenate(([1.0], x)), forgetting ** (k - 1 - i)
        gram[scenario] += kept * weight * np.outer(z, z)
        moment[scenario] += kept * weight * latency * z
        yy[scenario] += kept * weight * latency**2
        count[scenario] += kept
    folded = PredictorStats.empty().fold(
        np.array([f[0] for f in features]),
        np.array([f[1] for f in features]),
        np.array([f[2] for f in features]),
        forgetting,
        np.array([f[3] for f in features]),
    )
    stepped = PredictorStats.empty()
    for x, scenario, latency, weight in features:
        one = (np.array([scenario]), np.array([latency]), forgetting, np.array([weight]))
        stepped = stepped.fold(x.reshape(1, -1), *one)
    for got in (folded, stepped):
        for field, want in (("gram", gram), ("moment", moment), ("yy", yy), ("count", count)):
            assert np.allclose(getattr(got, field), want, rtol=1e-9, atol=1e-12)
    x, scenario, _, _ = features[0]
    single = PredictorStats.empty().fold(x.reshape(1, -1), np.array([scenario]), np.array([1.5]))
    added = PredictorStats.empty().add(x, scenario, 1.5)
    for field in ("gram", "moment", "yy", "count"):
        assert np.array_equal(getattr(single, field), getattr(added, field))
