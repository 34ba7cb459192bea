"""The batch latency predictor: one non-negative linear model per scenario (eq. 6)."""

from __future__ import annotations

import json
import os
from collections.abc import Sequence
from pathlib import Path
from typing import Any

import attrs
import numpy as np

from slidingpolicy import _validate
from slidingpolicy._arrays import read_only
from slidingpolicy._io import write_text
from slidingpolicy._parse import read_json
from slidingpolicy._paths import StrPath
from slidingpolicy.errors import InvalidRecordError, PredictorFormatError
from slidingpolicy.pricing.features import (
    NUM_FEATURES,
    SCENARIOS,
    FloatArray,
    IntArray,
    Terms,
    batch_features,
    dot_rows,
    linear,
    scenario,
    tile_count,
)

FORMAT = "slidingpolicy.predictor"
VERSION = 2
TILED_VERSION = 3
READABLE = (1, 2, 3)
"""Versions `from_dict` reads: version 1 has no margin (read as 1.0); version 3 adds the tile
of a tile-aware predictor (written only for one)."""


def _weights(value: object) -> tuple[float, ...]:
    """The weights as floats: a sequence of numbers (a string of digits is not one), each
    seconds per unit of its feature, from 0 to `MAX_SECONDS`."""
    if not isinstance(value, Sequence | np.ndarray) or isinstance(value, str | bytes):
        raise InvalidRecordError(
            "linear model", "weights", f"must be a list of numbers, got {type(value).__name__}"
        )
    return tuple(_validate.seconds("linear model", f"weights[{j}]", w) for j, w in enumerate(value))


@attrs.frozen(slots=True)
class LinearModel:
    """T̂ = b + Σ_j w_j x_j with b ≥ 0 and w ≥ 0, fitted on `samples` observations: seven
    weights (eq. 6), or eight with the tile count x8 of a tile-aware predictor."""

    intercept: float
    weights: tuple[float, ...] = attrs.field(converter=_weights)
    samples: float = 0.0

    def __attrs_post_init__(self) -> None:
        record = "linear model"
        _validate.seconds(record, "intercept", self.intercept)
        _validate.non_negative(record, "samples", self.samples)
        if len(self.weights) not in (NUM_FEATURES, NUM_FEATURES + 1):
            raise InvalidRecordError(
                record,
                "weights",
                f"has {len(self.weights)} entries, needs {NUM_FEATURES} (or "
                f"{NUM_FEATURES + 1} with a tile count)",
            )

    def to_dict(self) -> dict[str, Any]:
        """The JSON form."""
        return {"intercept": self.intercept, "weights": list(self.weights), "samples": self.samples}


def _coefficients(models: tuple[LinearModel, ...]) -> FloatArray:
    return read_only(np.array([[m.intercept, *m.weights] for m in models], dtype=np.float64))


@attrs.frozen(slots=True)
class LatencyPredictor:
    """Per-scenario models (decode, prefill, mixed) and the global model they fall back to.

    A scenario with too few samples at fit time carries the global model's coefficients, so
    prediction never branches on sample counts.
    """

    decode: LinearModel
    prefill: LinearModel
    mixed: LinearModel
    fallback: LinearModel
    source: str = ""
    margin: float = 1.0
    """m ≥ 1: a policy plans T̂·m against a deadline (`fit.calibrate_margin`)."""
    tile: int | None = None
    """T: with a tile, an eighth feature x8 = ⌈(x4 + x6)/T⌉ (`features.tile_count`), the
    GEMM tiles the batch's tokens fill, lets the models see the steps of a quantized GPU."""
    coefficients: FloatArray = attrs.field(init=False, repr=False, eq=False)
    """Rows DECODE, PREFILL, MIXED of (intercept, w1..w7), read-only."""
    rows: tuple[tuple[float, ...], ...] = attrs.field(init=False, repr=False, eq=False)
    """`coefficients` as Python floats (what scalar pricing reads)."""
    by_presence: tuple[tuple[tuple[float, ...] | None, ...], ...] = attrs.field(
        init=False, repr=False, eq=False
    )
    """The row of a batch's scenario (eq. 5, `features.scenario`) by [prefill present][decodes
    present]; None for an empty batch: what scalar pricing looks up instead of branching."""

    def __attrs_post_init__(self) -> None:
        if _validate.finite("latency predictor", "margin", self.margin) < 1.0:
            raise InvalidRecordError("latency predictor", "margin", f"={self.margin} must be >= 1")
        width = NUM_FEATURES
        if self.tile is not None:
            _validate.integer("latency predictor", "tile", self.tile, 1)
            width += 1
        for name in ("decode", "prefill", "mixed", "fallback"):
            model = getattr(self, name)
            _validate.instance("latency predictor", name, model, LinearModel)
            if len(model.weights) != width:
                raise InvalidRecordError(
                    "latency predictor",
                    name,
                    f"has {len(model.weights)} weights, needs {width}"
                    + (f" (tile={self.tile})" if self.tile is not None else ""),
                )
        table = _coefficients((self.decode, self.prefill, self.mixed))
        object.__setattr__(self, "coefficients", table)
        rows = tuple(tuple(row) for row in table.tolist())
        object.__setattr__(self, "rows", rows)
        presence = tuple(
            tuple(rows[scenario(d, p)] if d or p else None for d in (False, True))
            for p in (False, True)
        )
        object.__setattr__(self, "by_presence", presence)

    @property
    def models(self) -> tuple[LinearModel, LinearModel, LinearModel]:
        """The scenario models, indexed by DECODE, PREFILL, MIXED."""
        return (self.decode, self.prefill, self.mixed)

    def predict(self, chunks: IntArray, contexts: IntArray) -> float:
        """T̂ of a batch of (c_i, u_i) (eq. 4–6), in seconds; 0 for an empty batch.

        `chunks[i]` is c_i, the tokens request i runs in the batch (1 for a decode),
        `contexts[i]` its u_i, the tokens already in its KV cache (`Request.context_tokens`),
        both int64 arrays in the same order.
        """
        if len(chunks) == 0:
            return 0.0
        x, scenario = batch_features(chunks, contexts, self.tile)
        return self.predict_features(x, scenario)

    def price(self, terms: Terms) -> float:
        """T̂ of a batch with features `terms` (eq. 6, its scenario by eq. 5); 0 when empty.

        Scalar arithmetic in a fixed order (`features.linear`, then the peak term): what every
        search of a plan compares.
        """
        x1, x2, x3, x4, x5, x6, x7 = terms
        w = self.by_presence[x6 > 0][x4 > 0]
        if w is None:
            return 0.0
        price: float = linear(w, x1, x2, x3, x4, x5, x6) + w[7] * x7
        if self.tile is None:
            return price
        tiles: int = tile_count(x4 + x6, self.tile)
        return price + w[8] * tiles

    def price_arrays(self, terms: tuple[IntArray, ...]) -> FloatArray:
        """`price` of many batches at once, x1..x7 (x8 from a tile) as arrays: the same float
        operations in the same order, elementwise."""
        x1, x2, x3, x4, x5, x6, x7 = terms
        w = self.coefficients[scenario(x4, x6)].T
        price = linear(w, x1, x2, x3, x4, x5, x6) + w[7] * x7
        if self.tile is not None:
            price = price + w[8] * tile_count(x4 + x6, self.tile)
        priced: FloatArray = np.where((x4 > 0) | (x6 > 0), price, 0.0)
        return priced

    def predict_features(self, x: FloatArray, scenario: int) -> float:
        """T̂ from a feature vector and its scenario (eq. 6)."""
        row = self.coefficients[scenario]
        return float(row[0] + row[1:] @ x)

    def predict_rows(self, features: FloatArray, scenarios: IntArray) -> FloatArray:
        """T̂ of many batches at once: row i of `features` is batch i's x (eq. 4), of
        scenario scenarios[i] (eq. 6)."""
        return dot_rows(self.coefficients[scenarios], features)

    def scaled(self, factor: float) -> LatencyPredictor:
        """This predictor for a machine `factor` times as slow: every coefficient times
        `factor`, the margin kept."""
        if _validate.positive("latency predictor", "factor", factor) == 1.0:
            return self

        def times(model: LinearModel) -> LinearModel:
            weights = tuple(factor * w for w in model.weights)
            return LinearModel(factor * model.intercept, weights, model.samples)

        return attrs.evolve(
            self,
            decode=times(self.decode),
            prefill=times(self.prefill),
            mixed=times(self.mixed),
            fallback=times(self.fallback),
            source=f"{self.source} ×{factor:g}" if self.source else f"×{factor:g}",
        )

    def to_dict(self) -> dict[str, Any]:
        """The versioned JSON form."""
        return {
            "format": FORMAT,
            "version": VERSION if self.tile is None else TILED_VERSION,
            "source": self.source,
            "margin": self.margin,
            "models": {name: m.to_dict() for name, m in zip(SCENARIOS, self.models, strict=True)},
            "fallback": self.fallback.to_dict(),
            **({} if self.tile is None else {"tile": self.tile}),
        }

    @classmethod
    def from_dict(cls, data: object, origin: str = "predictor") -> LatencyPredictor:
        """Read the JSON form; a wrong format or version raises PredictorFormatError."""
        if not isinstance(data, dict) or data.get("format") != FORMAT:
            raise PredictorFormatError(f"{origin}: not a {FORMAT} file")
        version = data.get("version")
        if version not in READABLE:
            raise PredictorFormatError(
                f"{origin}: format version {version!r}, this package reads "
                f"{' and '.join(map(str, READABLE))}"
            )
        if (version == TILED_VERSION) != ("tile" in data):
            raise PredictorFormatError(
                f"{origin}: version {version} "
                + (
                    "(tile-aware) needs its 'tile', the tokens of a GEMM tile"
                    if version == TILED_VERSION
                    else f"has no 'tile' (a tile-aware predictor is version {TILED_VERSION})"
                )
            )
        try:
            models = data["models"]
            decode, prefill, mixed = (LinearModel(**models[name]) for name in SCENARIOS)
            return cls(
                decode=decode,
                prefill=prefill,
                mixed=mixed,
                fallback=LinearModel(**data["fallback"]),
                source=str(data.get("source", "")),
                margin=data.get("margin", 1.0),
                tile=data.get("tile"),
            )
        except (KeyError, TypeError) as error:
            raise PredictorFormatError(f"{origin}: malformed predictor ({error})") from error
        except InvalidRecordError as error:
            raise PredictorFormatError(f"{origin}: {error}") from error
        except ValueError as error:
            raise PredictorFormatError(f"{origin}: malformed predictor ({error})") from error

    def save(self, path: StrPath) -> None:
        """Write the versioned JSON form (atomically: a temporary file, then a rename)."""
        write_text(Path(path), json.dumps(self.to_dict(), indent=2) + "\n")

    @classmethod
    def load(cls, path: StrPath) -> LatencyPredictor:
        """Read a predictor written by `save`."""
        if not isinstance(path, str | os.PathLike):
            raise PredictorFormatError(
                f"path: must be a str or os.PathLike, got {type(path).__name__}"
            )
        formats = f"expected a {FORMAT} JSON file (written by `slidingpolicy fit --out`)"
        data = read_json(path, PredictorFormatError, formats)
        return cls.from_dict(data, origin=str(path))
