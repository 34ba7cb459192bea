"""--replicas, --router, --report-period and --reroute: a cluster of replicas behind a router
(`slidingpolicy.cluster`), which `simulate`, `sweep` and `capacity` take alike."""

from __future__ import annotations

from collections.abc import Sequence
from typing import TYPE_CHECKING, Annotated

import attrs
import typer

from slidingpolicy.cli.options import CliError, check_known

if TYPE_CHECKING:
    from slidingpolicy.cluster import ClusterSpec

PANEL = "Cluster"

ReplicasOpt = Annotated[
    int,
    typer.Option(
        "--replicas",
        min=1,
        help="Replicas of the policy, each on its own hardware, behind --router (1: one "
        "engine, unless --router is given). --rate is then the whole cluster's.",
        rich_help_panel=PANEL,
    ),
]
RouterOpt = Annotated[
    str | None,
    typer.Option(
        "--router",
        help="Router of the replicas (see `routers`), options as name[key=value,...], e.g. "
        "slo-aware[notice=true]; comma-separated or 'all' where the command compares several "
        "[default: round-robin].",
        rich_help_panel=PANEL,
    ),
]
ReportPeriodOpt = Annotated[
    float,
    typer.Option(
        "--report-period",
        min=0.0,
        help="Seconds between the replicas' reports to the router (0: it reads each replica's "
        "state at every request; Ray Serve polls every 10 s by default).",
        rich_help_panel=PANEL,
    ),
]
GIVE_UP = "give_up_after"
"""The policy option without which a replica gives no request up to route again."""

RerouteOpt = Annotated[
    bool,
    typer.Option(
        "--reroute/--no-reroute",
        metavar=" ",
        help="Route a request a replica gives up (give_up_after) once more, to another replica, "
        "unless the router predicts it late everywhere.",
        rich_help_panel=PANEL,
    ),
]


@attrs.frozen(slots=True)
class ClusterChoice:
    """--replicas, --router, --report-period and --reroute, as given."""

    replicas: int = 1
    router: str | None = None
    report_period: float = 0.0
    reroute: bool = False

    def clusters(self, policies: Sequence[str], several: bool = True) -> list[ClusterSpec | None]:
        """The clusters these name for `policies` (labels), one per router (None: one engine,
        no cluster option given); `several` False refuses more than one router, --reroute a
        policy that gives no request up (it would change nothing)."""
        from slidingpolicy.cluster import ClusterSpec
        from slidingpolicy.policies.labels import parse_label, split_labels
        from slidingpolicy.routing import names

        given = (self.replicas, self.router, self.report_period, self.reroute)
        if given == (1, None, 0.0, False):
            return [None]
        if self.reroute:
            for policy in policies:
                _check_gives_up(policy)
        text = self.router or "round-robin"
        labels = list(names()) if text == "all" else split_labels(text)
        if not labels or (len(labels) > 1 and not several):
            raise CliError(f"--router {text!r}: name {'one router' if not several else 'a router'}")
        clusters: list[ClusterSpec | None] = []
        for label in labels:
            name, options = parse_label(label, "router")
            check_known("router", name, names())
            clusters.append(
                ClusterSpec(self.replicas, name, options, self.report_period, self.reroute)
            )
        if len({c.label for c in clusters if c is not None}) < len(clusters):
            raise CliError(f"--router {text!r}: a router is named twice")
        return clusters


def _check_gives_up(policy: str) -> None:
    """CliError when the policy labelled `policy` has no `give_up_after` set."""
    from slidingpolicy.policies.labels import parse_label
    from slidingpolicy.policies.option_docs import policy_options

    name, options = parse_label(policy)
    defaults = {o.name: o.default for o in policy_options(name)}
    if dict(options).get(GIVE_UP, defaults.get(GIVE_UP)) is None:
        raise CliError(
            f"--reroute: policy {policy!r} gives no request up, so none is routed again; set "
            f"its {GIVE_UP} (e.g. 'slidingserve+[{GIVE_UP}=0]')"
        )
