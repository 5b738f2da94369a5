"""The concurrency controller in a discrete-event simulation (tests/limiter_sim.py): a virtual
clock, no sleeps, no threads, the real AdaptiveLimit, Balancer and LatencyController. Each
scenario has the figure it must reach; the figures do not depend on the machine."""

from __future__ import annotations

import pytest

from tests import limiter_sim as sim


@pytest.mark.parametrize("slots", [4, 8, 16])
def test_a_queueing_server_keeps_its_slots_busy_and_wastes_nothing(slots: int) -> None:
    # a server that queues silently (no /props: the client starts at 16), 1 s a call, --timeout 10
    result = sim.queueing(slots)
    assert result.answered == 60 * slots
    assert result.slots_used() >= 0.9, result.slots_used()
    assert result.wasted_share() <= 0.1, result.wasted_share()
    assert result.report["cuts"]["queue"] >= 1 or slots == 16  # 16 slots: the first burst fits


def test_a_uniformly_slowing_server_keeps_most_calls_in_flight() -> None:
    # 0.2 s -> 0.5 s over 4 s whatever is in flight: no queue, so no lasting cut (main held a median of 3)
    result = sim.slowing()
    assert result.in_flight_quantile(0.5, result.finished_s / 2) >= 64
    assert result.in_flight_quantile(0.1, result.finished_s / 2) >= 64


@pytest.mark.parametrize("every_other_second", [False, True])
def test_a_busy_client_does_not_cut_the_server(every_other_second: bool) -> None:
    # answers read 0.2-0.4 s late by the client itself: as many in flight were fast a moment before
    result = sim.busy_client(every_other_second=every_other_second)
    assert result.in_flight_quantile(0.5) >= 64
    assert result.finished_s <= 1.5 * 3000 / 128 * 0.6  # within 1.5x of 128 at once at the slowest answers


@pytest.mark.parametrize("services", [[1.0, 3.0], [1.0, 1.5, 2.0, 3.0]])
def test_replicas_with_a_slow_one_finish_no_later_than_the_fastest_alone(services: list[float]) -> None:
    alone = sim.replicas([services[0]])
    together = sim.replicas(services)
    assert together.answered == alone.answered
    assert together.finished_s <= alone.finished_s + 1e-9, (together.finished_s, alone.finished_s)


@pytest.mark.parametrize("services", [[0.2, 0.6], [0.2, 0.3, 0.4, 0.6]])
def test_replicas_that_do_not_queue_are_not_cut_by_the_slow_one(services: list[float]) -> None:
    alone = sim.open_replicas([services[0]])
    together = sim.open_replicas(services)
    assert together.finished_s <= alone.finished_s + 1e-9, (together.finished_s, alone.finished_s)
    # a fixed --concurrency 128 shared by all: the first burst goes half to the slow one (nothing is
    # known yet), then the fast one takes what it answers at once; main took 3.5x as long
    quota_alone, quota_together = sim.open_replicas([services[0]], quota=128), sim.open_replicas(services, quota=128)
    assert quota_together.finished_s <= 1.1 * quota_alone.finished_s


def test_a_replica_that_dies_and_returns_is_used_again_within_10_s() -> None:
    result = sim.returning()  # down from 20 s to 40 s
    assert result.answered == 480
    assert 1 in result.first_after and result.first_after[1] - 40.0 <= 10.0, result.first_after


def test_429s_above_a_limit_hold_the_calls_near_it() -> None:
    result = sim.rate_limited()  # 429 past 32 at once; hosted: starts at 128
    assert result.answered == 3000
    assert result.mean_in_flight(0.0, 0.9 * result.finished_s) >= 0.6 * 32
    assert result.refused <= 0.1 * result.answered
    assert result.report["cuts"]["rate_limited"] >= 1


def test_every_decision_is_in_the_report() -> None:
    result = sim.queueing(4)
    report = result.report
    assert set(report) >= {"limit", "lowest", "cuts", "undone", "not_ours", "probes", "time_at_limit_s", "events"}
    assert abs(sum(report["time_at_limit_s"].values()) - result.finished_s) < 0.01
    assert report["events"] and report["events"][0]["what"] in ("queue", "deadline")
