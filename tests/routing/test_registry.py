"""The router registry, as the policies' is: every router by name with typed, documented
options; an unknown name lists the known ones; a bad option is refused naming it; and a router
of your own joins by `register`."""

from __future__ import annotations

from collections.abc import Mapping

import attrs
import pytest

from slidingpolicy.errors import InvalidRecordError, PolicyLabelError, UnknownNameError
from slidingpolicy.records.request import Request
from slidingpolicy.routing import (
    Ledger,
    ReplicaReport,
    Route,
    by_name,
    from_label,
    names,
    options_of,
    register,
    router_registry,
    summary,
)


def test_every_router_is_named_summed_up_and_its_options_documented() -> None:
    assert names() == ("round-robin", "power-of-two", "least-tokens", "slo-aware")
    for name in names():
        assert by_name(name).name == name
        assert summary(name)
        assert all(o.meaning for o in options_of(name))
    assert [(o.name, o.default) for o in options_of("slo-aware")] == [
        ("notice", False),
        ("pick", "earliest"),
    ]


def test_bad_names_and_options_are_refused_naming_them() -> None:
    with pytest.raises(UnknownNameError, match="unknown router 'fastest'; known: least-tokens"):
        by_name("fastest")
    with pytest.raises(InvalidRecordError, match=r"router 'round-robin': notice is not one"):
        by_name("round-robin", notice=True)
    with pytest.raises(InvalidRecordError, match="router 'slo-aware': notice must be a bool"):
        by_name("slo-aware", notice="yes")
    with pytest.raises(PolicyLabelError, match="router 'slo-aware\\[notice\\]': option"):
        from_label("slo-aware[notice]")
    router, options = from_label("slo-aware[notice=true]")
    assert router == by_name("slo-aware", notice=True)
    assert options == (("notice", True),)


@attrs.frozen
class Busiest:
    """Sends every request to the replica with the most queued tokens (a test's router).

    - `ties`: which of equally busy replicas: "first" or "last" by id.
    """

    ties: str = "first"
    name = "busiest"

    def route(
        self, request: Request, reports: Mapping[str, ReplicaReport], ledger: Ledger, now: float
    ) -> Route:
        ordered = sorted(reports) if self.ties == "first" else sorted(reports, reverse=True)
        return Route(max(ordered, key=lambda r: reports[r].queued_tokens))


def test_a_router_of_your_own_joins_the_registry(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(router_registry, "_REGISTRY", dict(router_registry._REGISTRY))
    register("busiest", Busiest, ("ties",), "the busiest replica")
    assert "busiest" in names()
    assert summary("busiest") == "the busiest replica"
    assert by_name("busiest", ties="last") == Busiest("last")
    assert options_of("busiest")[0].meaning.startswith("which of equally busy")
    with pytest.raises(InvalidRecordError, match="router 'busiest': ties must be a str"):
        by_name("busiest", ties=1)
    with pytest.raises(InvalidRecordError, match="router 'busiest': name is taken"):
        register("busiest", Busiest)
    with pytest.raises(InvalidRecordError, match="router 'x': speed is not a parameter"):
        register("x", Busiest, ("speed",))
    with pytest.raises(InvalidRecordError, match="router 'a b': name must be a plain name"):
        register("a b", Busiest)
