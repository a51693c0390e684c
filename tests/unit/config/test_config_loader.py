"""Loading files: syntax and decoding errors located, defaults applied, dump/decode round trips."""

from __future__ import annotations

import json
import textwrap
from pathlib import Path

import msgspec
import pytest
import yaml
from config_fakes import registry

from kubesched.config import (
    KubeSchedulerConfiguration,
    decode_config,
    default_config,
    dump_config,
    load_config,
)
from kubesched.errors import FieldErrors, InputError

REGISTRY = registry()
HEADER = "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"


def decode(text: str) -> KubeSchedulerConfiguration:
    return decode_config(text, "sched.yaml", REGISTRY)


def test_load_config_reads_validates_and_defaults(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(
        HEADER + "profiles:\n- schedulerName: mine\n  plugins: {filter: {enabled: [{name: CustomFilter}]}}\n"
    )
    cfg = load_config(path, REGISTRY)
    assert cfg.parallelism == 16
    assert [p.scheduler_name for p in cfg.profiles] == ["mine"]
    assert cfg.profiles[0].plugins is not None and cfg.profiles[0].plugins.multi_point is not None


def test_load_config_names_the_file_in_validation_errors(tmp_path: Path) -> None:
    path = tmp_path / "bad.yaml"
    path.write_text(HEADER + "parallelism: 0\n")
    with pytest.raises(FieldErrors) as info:
        load_config(path, REGISTRY)
    assert str(info.value) == f"{path}: parallelism: must be greater than 0"


def test_missing_file(tmp_path: Path) -> None:
    path = tmp_path / "nope.yaml"
    with pytest.raises(InputError) as info:
        load_config(path, REGISTRY)
    assert str(info.value) == f"{path}: cannot read file: No such file or directory"


def test_binary_file(tmp_path: Path) -> None:
    path = tmp_path / "bin.yaml"
    path.write_bytes(b"\xff\xfe\x00")
    with pytest.raises(InputError, match="not a UTF-8 text file"):
        load_config(path, REGISTRY)


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        pytest.param(
            HEADER + "parallelizm: 3\n",
            'sched.yaml: parallelizm: unknown field (did you mean "parallelism"?)',
            id="unknown top field",
        ),
        pytest.param(
            HEADER + "profiles:\n- plugins:\n    filter:\n      enabeld: []\n",
            'sched.yaml: profiles[0].plugins.filter.enabeld: unknown field (did you mean "enabled"?)',
            id="unknown nested field",
        ),
        pytest.param(
            HEADER + "parallelism: lots\n", "sched.yaml: parallelism: Expected int, got str", id="wrong type"
        ),
        pytest.param(
            HEADER + "clientConnection: {qps: fast}\n",
            "sched.yaml: clientConnection.qps: Expected float, got str",
            id="wrong float",
        ),
        pytest.param(
            HEADER + "profiles: [{plugins: {filter: {enabled: [{weight: 1}]}}}]\n",
            "sched.yaml: profiles[0].plugins.filter.enabled[0].name: required field is missing",
            id="missing plugin name",
        ),
        pytest.param(
            HEADER + "profiles: {a: 1}\n", "sched.yaml: profiles: Expected array, got object", id="not a list"
        ),
        pytest.param("- a\n- b\n", "sched.yaml: Expected object, got array", id="top level list"),
        pytest.param("", "sched.yaml: the file is empty; expected a KubeSchedulerConfiguration", id="empty"),
        pytest.param(
            "# only a comment\n",
            "sched.yaml: the file is empty; expected a KubeSchedulerConfiguration",
            id="comment only",
        ),
        pytest.param(
            HEADER + "profiles:\n  - schedulerName: a\n   plugins: {}\n",
            "sched.yaml: line 5, column 4: invalid YAML: while parsing a block collection, "
            "did not find expected '-' indicator",
            id="bad indentation",
        ),
        pytest.param(
            HEADER + "parallelism: [1\n",
            "sched.yaml: line 4, column 1: invalid YAML: while parsing a flow sequence, "
            "did not find expected ',' or ']'",
            id="unclosed flow list",
        ),
        pytest.param(
            HEADER + "parallelism: 1\nparallelism: 2\n",
            'sched.yaml: line 4, column 1: invalid YAML: duplicate key "parallelism"',
            id="duplicate key",
        ),
        pytest.param(
            HEADER + "---\nparallelism: 2\n",
            "sched.yaml: line 3, column 1: invalid YAML: expected a single document in the stream, "
            "but found another document",
            id="two documents",
        ),
        pytest.param(
            '{\n  "apiVersion": "kubescheduler.config.k8s.io/v1",\n  "profiles": [{"schedulerName": "a"}\n}',
            "sched.yaml: line 4, column 1: invalid JSON: expected ',' or ']'",
            id="malformed JSON",
        ),
    ],
)
def test_decoding_errors_are_located(text: str, expected: str) -> None:
    with pytest.raises(InputError) as info:
        decode(text)
    assert str(info.value) == expected


def test_yaml_merge_keys_are_not_duplicates() -> None:
    cfg = decode(
        HEADER + "leaderElection: &le {leaderElect: false}\nclientConnection:\n  <<: {burst: 5}\n  burst: 7\n"
    )
    assert cfg.client_connection is not None and cfg.client_connection.burst == 7


def test_yaml_flow_mapping_is_not_mistaken_for_json() -> None:
    cfg = decode(
        "{apiVersion: kubescheduler.config.k8s.io/v1, kind: KubeSchedulerConfiguration, parallelism: 3}"
    )
    assert cfg.parallelism == 3


def test_json_config_is_accepted() -> None:
    text = json.dumps(
        {
            "apiVersion": "kubescheduler.config.k8s.io/v1",
            "kind": "KubeSchedulerConfiguration",
            "profiles": [{"schedulerName": "j", "plugins": {"score": {"disabled": [{"name": "*"}]}}}],
        },
        indent="\t",
    )
    cfg = decode(text)
    assert cfg.profiles[0].scheduler_name == "j"


ROUND_TRIP = [
    pytest.param("", id="defaults"),
    pytest.param(
        """
        parallelism: 8
        leaderElection: {leaderElect: false, resourceName: other}
        clientConnection: {qps: 12.5, burst: 30, kubeconfig: /etc/kube.conf}
        percentageOfNodesToScore: 40
        profiles:
        - schedulerName: a
          percentageOfNodesToScore: 20
          plugins:
            multiPoint:
              enabled: [{name: CustomMulti, weight: 3}, {name: NodeAffinity, weight: 9}]
              disabled: [{name: ImageLocality}, {name: VolumeBinding}]
            score:
              enabled: [{name: CustomScore, weight: 2}, {name: TaintToleration}]
              disabled: [{name: NodeResourcesBalancedAllocation}]
            filter:
              enabled: [{name: CustomFilter}]
          pluginConfig:
          - name: NodeResourcesFit
            args: {scoringStrategy: {type: MostAllocated}}
          - name: RawArgs
            args: {free: [form, 1]}
        - schedulerName: b
          plugins:
            score: {disabled: [{name: "*"}]}
        extenders:
        - urlPrefix: http://ext/
          filterVerb: filter
          prioritizeVerb: prioritize
          bindVerb: bind
          httpTimeout: 1m30s
          enableHTTPS: true
          tlsConfig: {insecure: true}
          managedResources: [{name: example.com/gpu, ignoredByScheduler: true}]
        """,
        id="everything",
    ),
]


@pytest.mark.parametrize("body", ROUND_TRIP)
def test_dump_decode_dump_is_stable(body: str) -> None:
    cfg = decode(HEADER + textwrap.dedent(body))
    text = dump_config(cfg)
    again = decode(text)
    assert again == cfg
    assert dump_config(again) == text


def test_dump_starts_with_type_meta_and_uses_camel_case() -> None:
    text = dump_config(default_config(REGISTRY))
    assert text.startswith("apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n")
    doc = yaml.safe_load(text)
    assert list(doc)[:4] == ["apiVersion", "kind", "parallelism", "leaderElection"]
    assert doc["profiles"][0]["pluginConfig"][0]["name"] == "NodeResourcesFit"
    assert "leader_election" not in text and "null" not in text


def test_dump_shows_only_written_or_defaulted_fields() -> None:
    doc = yaml.safe_load(dump_config(decode(HEADER)))
    assert "healthzBindAddress" not in doc
    assert "extenders" not in doc
    assert doc["leaderElection"]["resourceName"] == "kubesched"


def test_default_config_decodes_like_an_empty_file() -> None:
    assert decode(dump_config(default_config(REGISTRY))) == default_config(REGISTRY)
    assert decode(HEADER) == default_config(REGISTRY)


def test_decoded_config_is_a_struct_round_trip() -> None:
    cfg = decode(HEADER + "profiles: [{schedulerName: x}]\n")
    assert msgspec.convert(msgspec.to_builtins(cfg), KubeSchedulerConfiguration) == cfg


def test_every_unknown_field_and_invalid_value_is_reported_in_one_run(tmp_path: Path) -> None:
    path = tmp_path / "sched.yaml"
    path.write_text(
        "apiVersion: kubescheduler.config.k8s.io/v1\nkind: KubeSchedulerConfiguration\n"
        "parallelizm: 4\npercentageOfNodesToScore: 300\nprofiles:\n"
        "- schedulerName: a\n  plugin: {}\n- schedulerName: b\n  pluginConfg: []\n"
    )
    with pytest.raises(FieldErrors) as err:
        load_config(path, REGISTRY)
    assert [str(e) for e in err.value.errors] == [
        'parallelizm: unknown field (did you mean "parallelism"?)',
        'profiles[0].plugin: unknown field (did you mean "plugins"?)',
        'profiles[1].pluginConfg: unknown field (did you mean "pluginConfig"?)',
        "percentageOfNodesToScore: must be in the range [0, 100], got 300",
    ]


def test_a_document_of_another_kind_is_named_as_such(tmp_path: Path) -> None:
    path = tmp_path / "deploy.yaml"
    path.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\nspec: {replicas: 1}\n")
    with pytest.raises(InputError) as err:
        load_config(path, REGISTRY)
    assert str(err.value) == f'{path}: kind: must be "KubeSchedulerConfiguration", got "Deployment"'
