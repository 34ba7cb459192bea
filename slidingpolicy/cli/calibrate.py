"""`slidingpolicy profile` and `fit`: sample a hardware model, calibrate the latency predictor."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated, Any

import typer
from rich.table import Table

from slidingpolicy.cli.options import CliError, GpuOpt, ModelOpt, ProfileOpt, SeedOpt, TpOpt
from slidingpolicy.cli.output import console
from slidingpolicy.errors import SlidingPolicyError


def profile(
    out: Annotated[Path, typer.Option("--out", "-o", help="Samples file to write (JSONL).")] = Path(
        "samples.jsonl"
    ),
    samples: Annotated[int, typer.Option("--samples", help="Batches to time.")] = 4000,
    gpu: GpuOpt = "rtx3090",
    model: ModelOpt = "qwen2.5-7b",
    tp: TpOpt = 2,
    profile_csv: ProfileOpt = None,
    seed: SeedOpt = 0,
) -> None:
    """Time random batches on a hardware model; write (chunks, contexts, latency) samples."""
    import json

    from slidingpolicy.engine.sweep import HardwareSpec
    from slidingpolicy.predictor.profiling import profile as sample_hardware

    if samples < 1:
        raise CliError(f"--samples={samples} must be >= 1")
    hardware = HardwareSpec(
        gpu, model, tp, None if profile_csv is None else str(profile_csv)
    ).build()
    measured = sample_hardware(hardware, samples, seed)
    out.parent.mkdir(parents=True, exist_ok=True)
    with out.open("w") as handle:
        for s in measured:
            handle.write(
                json.dumps(
                    {"chunks": list(s.chunks), "contexts": list(s.contexts), "latency": s.latency}
                )
                + "\n"
            )
    console.print(f"{samples} samples of {hardware.name} in {out}")


def read_samples(path: Path) -> list[Any]:
    """A samples file (JSONL of chunks, contexts, latency); malformed lines name file:line."""
    import json

    from slidingpolicy.predictor import Sample

    if not path.is_file():
        raise CliError(f"{path}: no such samples file")
    found = []
    for number, line in enumerate(path.read_text().splitlines(), start=1):
        if not line.strip():
            continue
        try:
            data = json.loads(line)
            found.append(Sample(data["chunks"], data["contexts"], data["latency"]))
        except (json.JSONDecodeError, KeyError, TypeError, SlidingPolicyError) as error:
            raise CliError(
                f"{path}:{number}: not a sample ({error}); expected "
                '{"chunks": [...], "contexts": [...], "latency": seconds}'
            ) from None
    if not found:
        raise CliError(f"{path}: no samples")
    return found


def fit(
    samples: Annotated[
        Path | None, typer.Option("--samples", help="Samples file from `profile` (JSONL).")
    ] = None,
    out: Annotated[
        Path | None, typer.Option("--out", "-o", help="Write the fitted predictor here (JSON).")
    ] = None,
    holdout: Annotated[
        float, typer.Option("--holdout", help="Fraction of samples held out to measure the error.")
    ] = 0.25,
    gpu: GpuOpt = "rtx3090",
    model: ModelOpt = "qwen2.5-7b",
    tp: TpOpt = 2,
    write_default: Annotated[
        bool,
        typer.Option(
            "--write-default",
            help="Regenerate the packaged default predictor of --hardware/--model/--tp.",
        ),
    ] = False,
    seed: SeedOpt = 0,
) -> None:
    """Calibrate the latency predictor; print MAE, RMSE and R² per scenario on held-out samples."""
    from slidingpolicy.engine.sweep import HardwareSpec
    from slidingpolicy.predictor import evaluate, fit_predictor
    from slidingpolicy.predictor.profiling import DEFAULT_SAMPLES
    from slidingpolicy.predictor.profiling import profile as sample_hardware
    from slidingpolicy.predictor.profiling import write_default as write_packaged

    if not 0.0 < holdout < 1.0:
        raise CliError(f"--holdout={holdout} must be between 0 and 1")
    if write_default:
        path = write_packaged(gpu, model, tp)
        console.print(f"wrote the default predictor {path}")
    hardware = HardwareSpec(gpu, model, tp).build()
    data = (
        read_samples(samples)
        if samples is not None
        else sample_hardware(hardware, DEFAULT_SAMPLES, seed + 1)
    )
    cut = max(1, int(len(data) * (1.0 - holdout)))
    if cut >= len(data):
        raise CliError(f"{len(data)} samples leave none held out")
    predictor = fit_predictor(data[:cut], source=str(samples) if samples else hardware.name)
    if out is not None:
        predictor.save(out)
        console.print(f"wrote {out}")
    table = Table(title=f"held-out error, {len(data) - cut} of {len(data)} samples")
    for column in ("scenario", "samples", "MAE (ms)", "RMSE (ms)", "R²"):
        table.add_column(column, justify="right")
    for report in evaluate(predictor, data[cut:]):
        table.add_row(
            report.scenario,
            str(report.samples),
            f"{1000 * report.mae:.3f}",
            f"{1000 * report.rmse:.3f}",
            f"{report.r2:.4f}",
        )
    console.print(table)
