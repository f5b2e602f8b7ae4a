"""`simulate --policy`: the grammar of policies with knobs, and hostile input refused in one
line."""

from __future__ import annotations

import numpy as np
import pytest
from typer.testing import CliRunner

from queue_autoscale.cli import app
from queue_autoscale.core import DEFAULT_POLICY
from queue_autoscale.sim.arrivals import ArrivalError
from queue_autoscale.sim.peers import KedaPolicy, StaticPolicy, TargetTrackingPolicy
from queue_autoscale.sim.policies import (
    ABLATIONS,
    DIAGNOSTICS,
    POLICY_HELP,
    POLICY_NAMES,
    CorePolicy,
    make_policy,
    parse_policies,
    parse_policy,
    sim_settings,
)

runner = CliRunner()


@pytest.mark.parametrize(
    ("text", "labels"),
    [
        pytest.param(DEFAULT_POLICY, [DEFAULT_POLICY], id="one-name"),
        pytest.param("all", list(POLICY_NAMES), id="all"),
        pytest.param(
            f"{DEFAULT_POLICY},keda,keda(queue_length=120,scale_down_stabilization=60)",
            [DEFAULT_POLICY, "keda", "keda(queue_length=120,scale_down_stabilization=60)"],
            id="issue-example",
        ),
        pytest.param(
            " keda ( min_replicas = 2 , queue_length=12 ) , static(size=0)",
            ["keda(queue_length=12,min_replicas=2)", "static(size=0)"],
            id="spaces-and-order-canonical",
        ),
        pytest.param(
            "target-tracking(target_value=2.5,scale_in_cooldown=60,min_capacity=0)",
            ["target-tracking(target_value=2.5,scale_in_cooldown=60,min_capacity=0)"],
            id="target-tracking-knobs",
        ),
        pytest.param(
            "keda-no-drain(queue_length=4)",
            ["keda-no-drain(queue_length=4)"],
            id="diagnostic-with-knobs",
        ),
        pytest.param("keda(queue_length=1e2)", ["keda(queue_length=100)"], id="exponent"),
    ],
)
def test_grammar_accepts(text: str, labels: list[str]) -> None:
    assert parse_policies(text) == labels


@pytest.mark.parametrize(
    ("text", "words"),
    [
        pytest.param("", "name at least one", id="empty"),
        pytest.param(" , ", "name at least one", id="only-commas"),
        pytest.param(f"{DEFAULT_POLICY},,keda", "empty name between commas", id="empty-between"),
        pytest.param("kedda", "unknown policy 'kedda'", id="unknown-policy"),
        pytest.param("keda(queue_lenght=3)", "unknown knob 'queue_lenght'", id="unknown-knob"),
        pytest.param(
            f"{DEFAULT_POLICY}(percentile=0.9)", "its knobs: interval", id="knob-on-a-core-policy"
        ),
        pytest.param(f"{DEFAULT_POLICY}(interval=61)", "out of range", id="interval-past-a-minute"),
        pytest.param("hybrid", "unknown policy 'hybrid'", id="deleted-policy"),
        pytest.param("seed-hybrid(interval=4.5)", "not a whole number", id="fractional-interval"),
        pytest.param("static(interval=30)", "unknown knob 'interval'", id="interval-on-a-peer"),
        pytest.param("keda(queue_length=0)", "out of range", id="zero-queue-length"),
        pytest.param("keda(queue_length=2.5)", "not a whole number", id="fraction"),
        pytest.param("keda(queue_length=nan)", "not a whole number", id="nan"),
        pytest.param("keda(queue_length=inf)", "not a whole number", id="inf"),
        pytest.param("keda(queue_length=ten)", "not a number", id="word"),
        pytest.param("keda(min_replicas=-1)", "out of range", id="negative"),
        pytest.param("keda(min_replicas=1e9)", "out of range", id="huge"),
        pytest.param("keda(scale_down_stabilization=90000)", "out of range", id="long-window"),
        pytest.param("target-tracking(target_value=0)", "out of range", id="zero-target"),
        pytest.param("keda(queue_length=3,queue_length=4)", "given twice", id="knob-twice"),
        pytest.param("keda,keda", "given twice", id="policy-twice"),
        pytest.param("keda(queue_length)", "KNOB=VALUE", id="no-value"),
        pytest.param("keda(=3)", "KNOB=VALUE", id="no-knob"),
        pytest.param("keda()", "KNOB=VALUE", id="empty-parens"),
        pytest.param("keda(queue_length=3", "'(' without ')'", id="unclosed"),
        pytest.param("keda)queue_length=3(", "')' without '('", id="backwards"),
        pytest.param("keda((queue_length=3))", "nested", id="nested"),
        pytest.param("keda(queue_length=3)x", "text after ')'", id="trailing"),
        pytest.param("keda(" + "a" * 3000 + ")", "more than 2,000", id="long-text"),
        pytest.param(
            ",".join(f"static(size={n})" for n in range(40)), "more than 32", id="too-many"
        ),
    ],
)
def test_grammar_refuses_in_one_line(text: str, words: str) -> None:
    with pytest.raises(ArrivalError) as raised:
        parse_policies(text)
    message = str(raised.value)
    assert words in message
    assert "\n" not in message


def test_a_bad_knob_is_exit_2_in_one_line() -> None:
    result = runner.invoke(
        app, ["simulate", "--scenario", "steady", "--policy", "keda(queue_lenght=3)"]
    )
    assert result.exit_code == 2
    lines = [line for line in result.output.splitlines() if line.strip()]
    assert lines == [
        "error: policy keda: unknown knob 'queue_lenght' (its knobs: queue_length, "
        "scale_down_stabilization, min_replicas)"
    ]


def test_help_states_the_grammar() -> None:
    result = runner.invoke(app, ["simulate", "--help"], terminal_width=400)
    assert "NAME(KNOB=VALUE,...)" in result.output
    assert "scale_down_stabilization" in result.output


def test_the_knobs_reach_the_peers() -> None:
    settings = sim_settings(sla_seconds=30.0)
    assert parse_policy("static").label == "static"
    flat = np.full(600, 5, dtype=np.int64)
    k = make_policy("keda(queue_length=7,scale_down_stabilization=60,min_replicas=0)",
                    settings, flat)  # fmt: skip
    assert isinstance(k, KedaPolicy)
    assert (k.target_per_pod, k.window_seconds, k.min_replicas) == (7, 60, 0)
    assert k.name == "keda(queue_length=7,scale_down_stabilization=60,min_replicas=0)"
    t = make_policy("target-tracking(target_value=2.5,scale_in_cooldown=60,min_capacity=0)",
                    settings, flat)  # fmt: skip
    assert isinstance(t, TargetTrackingPolicy)
    assert (t.target, t.cooldown_seconds, t.settings.min_workers) == (2.5, 60, 0)
    s = make_policy("static(size=0)", settings, flat)
    assert isinstance(s, StaticPolicy) and s.size == 0
    default = make_policy("keda", settings, flat)
    assert isinstance(default, KedaPolicy)
    assert (default.target_per_pod, default.window_seconds, default.min_replicas) == (30, 300, 1)


def test_a_core_policy_ticks_at_its_interval_knob() -> None:
    """`predictive(interval=60)` ticks every 60 s and sizes with that interval in its settings;
    the run's own interval (15 s here) stays every other policy's."""
    settings = sim_settings(sla_seconds=300.0, interval_seconds=15)
    flat = np.full(600, 5, dtype=np.int64)
    slow = make_policy(f"{DEFAULT_POLICY}(interval=60)", settings, flat)
    assert isinstance(slow, CorePolicy)
    assert (slow.name, slow.interval_seconds) == (f"{DEFAULT_POLICY}(interval=60)", 60)
    assert slow.settings.evaluation_interval_seconds == 60
    plain = make_policy(DEFAULT_POLICY, settings, flat)
    assert isinstance(plain, CorePolicy)
    assert (plain.name, plain.interval_seconds) == (DEFAULT_POLICY, 15)


def test_each_predictive_mechanism_has_an_ablation_that_runs_with_it_off() -> None:
    """`predictive-no-<mechanism>` for each of `MECHANISMS`: a core policy over
    `predictive.ablated(mechanism)`, runnable by name, not in `all`."""
    from queue_autoscale.core.predictive_knobs import MECHANISMS
    from queue_autoscale.sim.policies import ABLATIONS, CorePolicy, make_policy, parse_policies
    from queue_autoscale.sim.policies import sim_settings as settings_for

    assert {f"predictive-no-{m}": m for m in MECHANISMS} == ABLATIONS
    assert not set(ABLATIONS) & set(parse_policies("all"))
    for name, mechanism in ABLATIONS.items():
        policy = make_policy(name, settings_for(), np.zeros(10, dtype=np.int64))
        assert isinstance(policy, CorePolicy) and policy.name == name
        assert policy.function.keywords == {"off": frozenset({mechanism})}  # type: ignore[attr-defined]


def test_the_help_names_every_policy_the_parser_accepts() -> None:
    """`simulate --policy` runs the candidate, its ablations and the diagnostics by name: the
    help says so, from the same names (it once listed only `all`'s)."""
    names = (*POLICY_NAMES, *ABLATIONS, *DIAGNOSTICS)
    assert [name for name in names if name not in POLICY_HELP] == []
    assert [label for name in names for label in parse_policies(name)] == list(names)
