"""`slidingpolicy profile` and `fit`: sample a hardware model, calibrate the latency predictor."""

from __future__ import annotations

import math
from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from slidingpolicy._io import replace_atomically
from slidingpolicy._parse import MAX_JSON_LINE, MAX_TOKENS, lines, parse_json
from slidingpolicy.cli.checked_run import HardwareChoice
from slidingpolicy.cli.option_sets import HARDWARE, NAMED_HARDWARE, takes
from slidingpolicy.cli.options import CliError, SeedOpt, writable_file
from slidingpolicy.cli.output import console, err_console, fmt, progress

FEW_SAMPLES = 100
"""Below this many training samples, `fit` warns that its predictor will be poor."""
MAX_SAMPLES = 100_000
"""The most batches `profile` times: 25 times the 4,000 a default predictor is fitted on;
about 17 s, a 93 MB file, and what `fit` reads in well under 1 GB."""


@takes(HARDWARE.only("gpu", "model", "tp", "profile"))
def profile(
    out: Annotated[Path, typer.Option("--out", "-o", help="Samples file to write (JSONL).")] = Path(
        "samples.jsonl"
    ),
    samples: Annotated[
        int, typer.Option("--samples", min=1, help=f"Batches to time (at most {MAX_SAMPLES:,}).")
    ] = 4000,
    *,
    hardware: HardwareChoice,
    seed: SeedOpt = 0,
) -> None:
    """Time random batches on a hardware model; write (chunks, contexts, latency) samples."""
    import itertools
    import json

    from slidingpolicy.predictors.profiling import timed_batches

    if samples > MAX_SAMPLES:
        raise CliError(
            f"--samples={samples:,} is above the limit of {MAX_SAMPLES:,} (the default "
            "predictors are fitted on 4,000)"
        )
    writable_file(out, "--out")
    timed = hardware.spec().build()
    batches = itertools.islice(timed_batches(timed, seed), samples)
    with (
        replace_atomically(out) as temporary,
        temporary.open("w") as handle,
        progress("timing batches", samples) as ticker,
    ):
        for s in batches:
            line = {"chunks": list(s.chunks), "contexts": list(s.contexts), "latency": s.latency}
            handle.write(json.dumps(line) + "\n")
            ticker(1)
    console.print(f"{samples} samples of {timed.name} in {out}")


SAMPLE_FORMAT = (
    'expected JSONL, one {"chunks": [tokens, ...], "contexts": [cached tokens, ...], '
    '"latency": seconds} per line (as `slidingpolicy profile` writes)'
)


def read_samples(path: Path) -> list[Any]:
    """A samples file (JSONL of chunks, contexts, latency); malformed lines name file:line."""
    from slidingpolicy.pricing import Sample

    found = []
    for number, line in lines(path, CliError, SAMPLE_FORMAT, MAX_JSON_LINE):
        if not line.strip():
            continue
        try:
            data = parse_json(line)
            counts = [*data["chunks"], *data["contexts"]]
            if any(isinstance(c, int) and c > MAX_TOKENS for c in counts):
                raise CliError(f"a token count is above {MAX_TOKENS:.0e}")
            found.append(Sample(data["chunks"], data["contexts"], data["latency"]))
        except (ValueError, KeyError, TypeError) as error:
            raise CliError(f"{path}:{number}: not a sample ({error}); {SAMPLE_FORMAT}") from None
    if not found:
        raise CliError(f"{path}: no samples; {SAMPLE_FORMAT}")
    return found


@takes(NAMED_HARDWARE)
def fit(
    samples: Annotated[
        Path | None, typer.Option("--samples", help="Samples file from `profile` (JSONL).")
    ] = None,
    trace: Annotated[
        list[Path] | None,
        typer.Option(
            "--trace",
            help="A step trace (JSONL: each step's batch and measured latency, as the vLLM "
            "adapter's trace or `simulate --log` writes it): fit that engine's predictor. "
            "Repeat for several traces.",
        ),
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the fitted predictor here (JSON).")
    ] = None,
    holdout: Annotated[
        float, typer.Option("--holdout", help="Fraction of samples held out to measure the error.")
    ] = 0.25,
    *,
    hardware: HardwareChoice,
    write_default: Annotated[
        bool,
        typer.Option(
            "--write-default/--no-write-default",
            metavar=" ",
            help="Regenerate the packaged default predictor of --hardware/--model/--tp.",
        ),
    ] = False,
    seed: SeedOpt = 0,
    tile: Annotated[
        int | None,
        typer.Option(
            "--tile",
            min=1,
            help="Fit the tile-aware predictor (ours, not the paper's): an eighth feature, "
            "the GEMM tiles of TILE tokens the batch fills.",
        ),
    ] = None,
) -> None:
    """Calibrate the latency predictor; print MAE, RMSE and R² per scenario on held-out samples.

    From --samples (a `profile` file), from --trace (a real engine's steps; the last
    --holdout of them held out), or else from samples of --hardware/--model/--tp.
    """
    from slidingpolicy.predictors.profiling import DEFAULT_SAMPLES
    from slidingpolicy.predictors.profiling import profile as sample_hardware
    from slidingpolicy.predictors.profiling import write_default as write_packaged
    from slidingpolicy.pricing import fit_predictor

    if not 0.0 < holdout < 1.0:
        raise CliError(f"--holdout={holdout} must be between 0 and 1")
    if samples is not None and trace:
        raise CliError("give --samples or --trace, not both")
    if out is not None:
        writable_file(out, "--out")
    if write_default:
        path = write_packaged(hardware.gpu, hardware.model, hardware.tp)
        console.print(f"wrote the default predictor {path}")
    model = hardware.spec().build()
    if trace:
        data = _trace_samples(trace)
    elif samples is not None:
        data = read_samples(samples)
    else:
        data = sample_hardware(model, DEFAULT_SAMPLES, seed + 1)
    cut = max(1, int(len(data) * (1.0 - holdout)))
    if cut >= len(data):
        raise CliError(f"{len(data)} samples leave none held out")
    if cut < FEW_SAMPLES:
        err_console.print(
            f"[yellow]warning: fitted on {cut} samples; a scenario with fewer than "
            f"{FEW_SAMPLES} falls back to the global model, and the held-out error means little "
            f"(`profile` times {DEFAULT_SAMPLES} by default)[/yellow]"
        )
    source = ",".join(map(str, trace)) if trace else str(samples) if samples else model.name
    predictor = fit_predictor(data[:cut], source=source, tile=tile)
    if out is not None:
        predictor.save(out)
        console.print(f"wrote {out}")
    _print_errors(predictor, data[cut:], len(data))


def _trace_samples(paths: list[Path]) -> list[Any]:
    """The (batch, latency) samples of step traces, saying which steps gave none."""
    from slidingpolicy.step_trace import read_samples as read_trace

    found = read_trace(paths)
    skipped = found.describe_skipped()
    if skipped:
        console.print(f"{skipped}: not fitted")
    return list(found.samples)


def _print_errors(predictor: Any, held: list[Any], total: int) -> None:
    """The held-out error table, the margin, and a warning where R² is undefined."""
    from slidingpolicy.pricing import evaluate
    from slidingpolicy.pricing.margin import MARGIN_FLOOR, MARGIN_QUANTILE

    table = Table(title=f"held-out error, {len(held)} of {total} samples")
    for column in ("batches", "samples", "MAE (ms)", "RMSE (ms)", "bias (ms)", "R²"):
        table.add_column(column, justify="right")
    undefined = []
    for report in evaluate(predictor, held):
        if math.isnan(report.r2):
            undefined.append(report.scenario)
        table.add_row(
            report.scenario,
            str(report.samples),
            f"{1000 * report.mae:.3f}",
            f"{1000 * report.rmse:.3f}",
            f"{1000 * report.bias:+.3f}",
            fmt(report.r2, 4),
        )
    console.print(table)
    console.print(
        f"latency margin {predictor.margin:.4f}: T̂·margin covers {MARGIN_QUANTILE:.1%} of the "
        f"cross-validated batches with prefill work predicted at ≥ {1000 * MARGIN_FLOOR:.0f} ms "
        "(<64, 64–511, ≥512: batches by prefill tokens; bias = T̂ − measured)"
    )
    if undefined:
        err_console.print(
            f"[yellow]warning: R² is undefined for {', '.join(undefined)}: fewer than two "
            "held-out samples, or all with the same latency; give more samples[/yellow]"
        )
