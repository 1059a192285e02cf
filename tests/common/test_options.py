"""Word options: one list of allowed words each, checked with one message everywhere."""

import json
from importlib import resources

import pandas as pd
import pytest

from relanon.common.errors import ParameterError
from relanon.common.options import Direction, LinkMethod, Method, check_option, option_message
from relanon.metrics.attacks import singling_out
from relanon.metrics.base import REFERENTIAL_INTEGRITY_TARGET, Metric
from relanon.metrics.scenarios import TARGETS
from relanon.schema import vocabulary


def json_schema_enum(*path):
    node = json.loads(resources.files("relanon.schemas").joinpath("relanon.schema.json").read_text())
    for key in path:
        node = node[key]
    return node["enum"]


def test_the_enumerations_are_the_words_the_schema_file_accepts():
    # the loader and the JSON Schema keep lists of their own: they must not drift from the enumerations
    assert vocabulary.METHODS == tuple(Method)
    assert vocabulary.LINK_METHODS == tuple(LinkMethod)
    assert json_schema_enum("$defs", "anonymize", "properties", "method") == list(Method)
    assert json_schema_enum("$defs", "foreignKey", "properties", "link") == list(LinkMethod)


def test_a_bad_word_gets_the_same_message_wherever_it_is_given():
    with pytest.raises(ParameterError) as metric_error:
        Metric("m", 0.5, 0.4, "hihger", "d")
    assert str(metric_error.value) == option_message("direction", "hihger", Direction)
    assert "did you mean 'higher'?" in str(metric_error.value)
    frame = pd.DataFrame({"a": [1, 2, 3]})
    with pytest.raises(ParameterError) as mode_error:
        singling_out(frame, frame, frame, {"a": "integer"}, mode="univarite")
    assert str(mode_error.value) == "mode must be one of 'univariate', 'multivariate' (did you mean 'univariate'?), got 'univarite'"


def test_check_option_returns_a_plain_string_and_refuses_non_words():
    value = check_option(Method.AVATAR, Method, "method")
    assert value == "avatar" and type(value) is str
    with pytest.raises(ParameterError, match=r"method must be one of 'avatar', 'keep', 'anatomize', 'bucketize', got 3"):
        check_option(3, Method, "method")


def test_metrics_keep_plain_string_directions():
    metric = Metric("m", 0.5, 0.4, Direction.LOWER, "d")
    assert type(metric.direction) is str and metric.to_dict()["direction"] == "lower" and not metric.passed


def test_referential_integrity_has_one_target_and_it_is_every_key():
    assert TARGETS["referential_integrity"] == REFERENTIAL_INTEGRITY_TARGET == 100.0
