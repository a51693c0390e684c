"""Shared by the plugin tests that run `kubesched simulate --explain` on a one-plugin profile."""

from __future__ import annotations

import json
from collections.abc import Mapping
from pathlib import Path
from typing import Any

import pytest
import yaml

from kubesched.cli import main

_CONFIG = """\
apiVersion: kubescheduler.config.k8s.io/v1
kind: KubeSchedulerConfiguration
profiles:
- schedulerName: default-scheduler
  plugins:
    queueSort:
      enabled: [{name: PrioritySort}]
    bind:
      enabled: [{name: DefaultBinder}]
    multiPoint:
      enabled: [{name: %s}]
      disabled: [{name: "*"}]
"""

_PLUGIN_CONFIG = """\
  pluginConfig:
  - name: %s
    args: %s
"""


def single_plugin_config(plugin: str, args: Mapping[str, Any] | None = None) -> str:
    """A KubeSchedulerConfiguration whose one profile runs only `plugin` (multiPoint, every other
    default disabled), plus the mandatory PrioritySort queue sort and DefaultBinder; `args`, when
    given, become the plugin's pluginConfig args."""
    config = _CONFIG % plugin
    if args is not None:
        config += _PLUGIN_CONFIG % (plugin, json.dumps(dict(args)))
    return config


def simulate_explain(
    tmp_path: Path,
    capsys: pytest.CaptureFixture[str],
    cluster_yaml: str,
    config_yaml: str,
    *,
    expected_args: Mapping[str, Mapping[str, Any]] | None = None,
) -> dict[str, Any]:
    """Run `kubesched simulate DIR --config CFG --explain --output json` and return the parsed report.

    Before that, `kubesched config defaults CFG` must keep exactly the queueSort, bind and multiPoint
    plugins that `config_yaml` enables; `expected_args` maps a plugin name to fields its single
    defaulted pluginConfig entry must hold (e.g. the args `kind` and the defaults filled in).
    """
    cluster_dir = tmp_path / "cluster"
    cluster_dir.mkdir()
    (cluster_dir / "objects.yaml").write_text(cluster_yaml)
    cfg = tmp_path / "sched.yaml"
    cfg.write_text(config_yaml)

    wanted = yaml.safe_load(config_yaml)["profiles"][0]["plugins"]
    assert main(["config", "defaults", str(cfg)]) == 0
    profile = yaml.safe_load(capsys.readouterr().out)["profiles"][0]
    for point in ("multiPoint", "queueSort", "bind"):
        assert profile["plugins"][point]["enabled"] == wanted[point]["enabled"], point
    for plugin, fields in (expected_args or {}).items():
        (args,) = [pc["args"] for pc in profile["pluginConfig"] if pc["name"] == plugin]
        assert {key: args.get(key) for key in fields} == dict(fields), plugin

    assert main(["simulate", str(cluster_dir), "--config", str(cfg), "--explain", "--output", "json"]) == 0
    report: dict[str, Any] = json.loads(capsys.readouterr().out)
    return report
