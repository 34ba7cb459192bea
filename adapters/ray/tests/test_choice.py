"""The router's part that needs no Ray: requests from bodies, reports on the wall clock and
in routing stats, and the choice."""

from __future__ import annotations

import pytest
from slidingpolicy import Slo
from slidingpolicy.routing import Ledger, ReplicaReport, by_name

from slidingpolicy_ray.choice import REPORT, choose, on_wall_clock, report_in, request_of, stats_of

DEFAULT = Slo(3.0, 0.1)


def _report(made_at: float, tokens: int, rate: float, due: float) -> ReplicaReport:
    ahead = ((due, tokens),) if tokens else ()
    return ReplicaReport(made_at, made_at, 1 if tokens else 0, tokens, 0, float("inf"), rate,
                         ahead)  # fmt: skip


def test_a_report_moved_onto_the_wall_clock_moves_every_time_it_holds() -> None:
    report = _report(2.0, 4000, 4000.0, 5.0)
    moved = on_wall_clock(report, 1.7e9)
    assert (moved.made_at, moved.free_at, moved.ahead) == (1.7e9 + 2.0, 1.7e9 + 2.0,
                                                           ((1.7e9 + 5.0, 4000),))  # fmt: skip
    assert (moved.queued_tokens, moved.prefill_rate) == (4000, 4000.0)


def test_routing_stats_carry_the_report_and_a_malformed_one_reads_as_none() -> None:
    report = _report(1.0, 100, 1000.0, 3.0)
    assert report_in(stats_of(report)) == report
    assert stats_of(None) == {}
    assert report_in({}) is None
    assert report_in({REPORT: {"made_at": 1.0}}) is None
    assert report_in({REPORT: "nonsense"}) is None


def test_a_body_is_read_as_a_request_with_its_slos_or_the_defaults() -> None:
    body = {"prompt": [1, 2, 3], "max_tokens": 4, "vllm_xargs": {"ttft_slo": 0.5}}
    request = request_of(body, "r", 10.0, DEFAULT)
    assert request is not None
    assert (request.prompt_tokens, request.ttft_slo, request.tbt_slo) == (3, 0.5, 0.1)
    assert request.deadline == pytest.approx(10.5)
    nested = request_of({"prompt": [[1, 2]]}, "n", 0.0, DEFAULT)
    assert nested is not None
    assert (nested.prompt_tokens, nested.ttft_slo) == (2, 3.0)


@pytest.mark.parametrize(
    "body",
    [
        None,
        [1, 2],
        {"prompt": []},
        {"prompt": "text"},
        {"prompt": [1], "vllm_xargs": {"ttft_slo": -1}},
    ],
)
def test_what_is_not_a_completion_body_is_no_request(body: object) -> None:
    assert request_of(body, "r", 0.0, DEFAULT) is None


def test_a_tight_request_goes_where_its_first_token_comes_first_the_others_after() -> None:
    # r0: 12,000 tokens queued, all due at 40 s, fast; r1: 4,000 due at 11 s, half as fast
    reports = {"r0": _report(10.0, 12000, 8000.0, 40.0), "r1": _report(10.0, 4000, 4000.0, 11.0)}
    chat = request_of({"prompt": list(range(2000)), "vllm_xargs": {"ttft_slo": 3.0}}, "c", 10.0,
                      DEFAULT)  # fmt: skip
    assert chat is not None
    choice = choose(by_name("slo-aware"), chat, reports, Ledger(), 10.0)
    assert choice.ranked == ("r0", "r1")
    assert choose(by_name("power-of-two"), chat, reports, Ledger(), 10.0).ranked[0] == "r1"


def test_what_was_sent_since_a_report_counts_and_older_sends_are_dropped() -> None:
    reports = {"r0": _report(10.0, 0, 1000.0, 0.0), "r1": _report(10.0, 0, 1000.0, 0.0)}
    one = request_of({"prompt": list(range(900))}, "a", 10.0, DEFAULT)
    assert one is not None
    ledger = Ledger().sent_to("r0", one, 10.1).sent_to("r1", one, 9.0)
    choice = choose(by_name("slo-aware"), one, reports, ledger, 10.2)
    assert choice.ranked == ("r1", "r0")
    assert [s.replica for s in choice.ledger.sent] == ["r0"]


def test_an_early_notice_goes_to_the_replica_of_the_fewest_tokens_queued() -> None:
    reports = {"r0": _report(10.0, 9000, 1000.0, 10.5), "r1": _report(10.0, 3000, 1000.0, 10.5)}
    tight = request_of({"prompt": list(range(500)), "vllm_xargs": {"ttft_slo": 0.01}}, "t", 10.0,
                       DEFAULT)  # fmt: skip
    assert tight is not None
    choice = choose(by_name("slo-aware", notice=True), tight, reports, Ledger(), 10.0)
    assert choice.ranked == ("r1", "r0")
