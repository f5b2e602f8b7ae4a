"""Per-queue config: profiles, overrides, errors that name queue, field and value."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from hypothesis import given
from hypothesis import strategies as st

from queue_autoscale.config import ConfigError, Profile, load_config, parse_config, parse_json


@pytest.mark.parametrize(
    ("profile", "sla", "percentile", "low", "high"),
    [
        (Profile.CRITICAL, 10.0, 0.99, 5, 50),
        (Profile.BALANCED, 30.0, 0.95, 1, 10),
        (Profile.BURSTY, 60.0, 0.90, 0, 100),
        (Profile.BACKGROUND, 300.0, 0.95, 0, 5),
    ],
)
def test_profiles_give_their_defaults(
    profile: Profile, sla: float, percentile: float, low: int, high: int
) -> None:
    (config,) = parse_config({"queue": "q", "profile": profile.value})
    assert (config.sla_seconds, config.percentile) == (sla, percentile)
    assert (config.min_workers, config.max_workers) == (low, high)


def test_fields_override_the_profile_and_balanced_is_default() -> None:
    (config,) = parse_config({"queue": "q", "sla_seconds": 12, "max_workers": 3})
    assert config.profile is Profile.BALANCED
    assert (config.sla_seconds, config.max_workers, config.min_workers) == (12, 3, 1)
    assert config.service == "q"  # the service defaults to the queue's name
    settings = config.settings(evaluation_interval_seconds=10)
    assert settings.sla_seconds == 12 and settings.evaluation_interval_seconds == 10


@pytest.mark.parametrize(
    ("data", "message"),
    [
        pytest.param(
            {"queue": "q", "sla_seconds": 0}, "queue 'q': field 'sla_seconds' = 0", id="sla"
        ),
        pytest.param({"queue": "q", "percentile": 1.5}, "field 'percentile' = 1.5", id="pct"),
        pytest.param(
            {"queue": "q", "profile": "turbo"}, "field 'profile' = \"turbo\"", id="profile"
        ),
        pytest.param(
            {"queue": "q", "capacity_cap": 0, "min_workers": 1},
            "capacity_cap = 0 is below min_workers = 1",
            id="cap",
        ),
        pytest.param({"queue": "q", "colour": "red"}, "field 'colour'", id="unknown field"),
        pytest.param({"queue": "bad name!"}, "queue 'bad name!': field 'queue'", id="queue name"),
        pytest.param({"sla_seconds": 5}, "queue '#0': field 'queue'", id="no queue"),
        # one formatter with the events and the worker (validation.error_parts): a missing
        # field said "= {the whole source object}: Field required", a rule over the whole
        # queue "Value error, ...", and a long value was printed whole
        pytest.param(
            {"queue": "q", "source": {"type": "kafka", "topic": "t", "consumer_group": "g"}},
            "queue 'q': field 'source.kafka.cluster_name' is missing",
            id="missing-field",
        ),
        pytest.param(
            {"queue": "q", "min_workers": 9, "max_workers": 2},
            "queue 'q': min_workers = 9 is above max_workers = 2",
            id="whole-object-rule",
        ),
        pytest.param(
            {"queue": "q", "note": "x" * 500},
            "queue 'q': field 'note' = \"" + "x" * 116 + "...: Extra inputs are not permitted",
            id="long-value-cut",
        ),
    ],
)
def test_errors_name_queue_field_and_value(data: dict[str, object], message: str) -> None:
    with pytest.raises(ConfigError, match=None) as caught:
        parse_config(data)
    assert message in str(caught.value)


def test_duplicate_queue_and_shapes() -> None:
    with pytest.raises(ConfigError, match="'a': configured twice"):
        parse_config([{"queue": "a"}, {"queue": "a"}])
    assert [c.queue for c in parse_config({"queues": [{"queue": "a"}, {"queue": "b"}]})] == [
        "a",
        "b",
    ]
    with pytest.raises(ConfigError, match="no queues"):
        parse_config([])


@pytest.mark.parametrize(
    ("first", "second"),
    [
        pytest.param({"service": "svc"}, {"service": "svc"}, id="same-names"),
        pytest.param({}, {"service": "a"}, id="default-service-is-the-queue-name"),
        pytest.param(
            {"cluster": "arn:aws:ecs:us-east-1:123456789012:cluster/default", "service": "svc"},
            {"service": "arn:aws:ecs:us-east-1:123456789012:service/default/svc"},
            id="names-and-arns",
        ),
    ],
)
def test_two_queues_naming_one_ecs_service_are_refused_naming_both(
    first: dict[str, str], second: dict[str, str]
) -> None:
    # GIVEN two queues that would scale the same (cluster, service)
    queues = [{"queue": "a", **first}, {"queue": "b", **second}]
    # THEN validation refuses them, naming both queues and the service
    with pytest.raises(ConfigError) as caught:
        parse_config(queues)
    message = str(caught.value)
    assert message.startswith("queues 'a' and 'b' both scale ECS service ")
    assert "in cluster 'default': one service takes one controller" in message


def test_queues_with_their_own_services_or_clusters_pass() -> None:
    queues = [
        {"queue": "a", "service": "svc"},
        {"queue": "b", "service": "svc", "cluster": "other"},
        {"queue": "c"},
    ]
    assert [q.queue for q in parse_config(queues)] == ["a", "b", "c"]


def test_load_from_file_and_environment(tmp_path: Path) -> None:
    path = tmp_path / "c.json"
    path.write_text(json.dumps({"queue": "files"}))
    assert load_config(path)[0].queue == "files"
    assert load_config(None, {"QUEUES_CONFIG": '[{"queue": "env"}]'})[0].queue == "env"
    with pytest.raises(ConfigError, match="set \\$QUEUES_CONFIG"):
        load_config(None, {})
    with pytest.raises(ConfigError, match=r"config .*: cannot read"):
        load_config(tmp_path / "missing.json")


def test_bad_json_names_line_and_column() -> None:
    with pytest.raises(ConfigError, match="invalid JSON at line 2 column"):
        parse_json('{"queue": "a",\n oops}')


@given(
    st.dictionaries(
        st.sampled_from(
            [
                "queue",
                "sla_seconds",
                "percentile",
                "min_workers",
                "max_workers",
                "profile",
                "dry_run",
                "x",
            ]
        ),
        st.one_of(
            st.integers(-5, 500),
            st.floats(allow_nan=True),
            st.text(max_size=8),
            st.none(),
            st.booleans(),
        ),
    )
)
def test_any_config_parses_or_names_a_field(data: dict[str, object]) -> None:
    try:
        parse_config(data)
    except ConfigError as error:
        assert str(error).startswith("queue ")  # names the queue (and the field, when one)


def test_an_unknown_profile_is_the_one_error() -> None:
    # GIVEN a queue whose profile is misspelt (its four fields then read as missing too, and
    # validate-config printed five errors, four of them about fields the user never set)
    with pytest.raises(ConfigError) as caught:
        parse_config({"queue": "q", "profile": "turbo"})

    # THEN the message is the profile's alone
    assert str(caught.value) == (
        "queue 'q': field 'profile' = \"turbo\": "
        "Input should be 'critical', 'balanced', 'bursty' or 'background'"
    )
