"""From a defaulted, validated KubeSchedulerConfiguration to what the Scheduler runs."""

from __future__ import annotations

from typing import Any

import msgspec

from kubesched.config.args import plugin_args
from kubesched.config.merge import resolve_profile_plugins
from kubesched.config.types import KubeSchedulerConfiguration, Plugins
from kubesched.framework.registry import Registry
from kubesched.scheduler.scheduler import ProfileSpec, SchedulerOptions


def profiles_from_config(cfg: KubeSchedulerConfiguration, registry: Registry) -> list[ProfileSpec]:
    specs: list[ProfileSpec] = []
    for profile in cfg.profiles:
        resolved = resolve_profile_plugins(profile.plugins or Plugins(), registry)
        specs.append(
            ProfileSpec(
                scheduler_name=profile.scheduler_name or "default-scheduler",
                points={
                    point: [(ref.name, ref.weight) for ref in refs] for point, refs in resolved.points.items()
                },
                plugin_args=_with_extender_ignored_resources(cfg, plugin_args(profile, registry), registry),
                percentage_of_nodes_to_score=profile.percentage_of_nodes_to_score,
            )
        )
    return specs


def options_from_config(
    cfg: KubeSchedulerConfiguration, *, seed: int = 0, explain: bool = False
) -> SchedulerOptions:
    return SchedulerOptions(
        percentage_of_nodes_to_score=cfg.percentage_of_nodes_to_score or 0,
        pod_initial_backoff_seconds=float(cfg.pod_initial_backoff_seconds or 1),
        pod_max_backoff_seconds=float(cfg.pod_max_backoff_seconds or 10),
        seed=seed,
        explain=explain,
    )


FIT = "NodeResourcesFit"


def _with_extender_ignored_resources(
    cfg: KubeSchedulerConfiguration, args: dict[str, Any], registry: Registry
) -> dict[str, Any]:
    """Extenders' `managedResources` with `ignoredByScheduler: true` join NodeResourcesFit's ignored set.

    The extender owns the accounting of such a resource, so the scheduler's own fit check skips it.
    """
    ignored = [
        r.name for ext in cfg.extenders for r in ext.managed_resources if r.ignored_by_scheduler and r.name
    ]
    if not ignored or registry.resolve(FIT) is None:
        return args
    fit = args.get(FIT)
    if fit is None:
        fit = registry.decode_args(FIT, {}, "args")
    known = set(fit.ignored_resources)
    extra = [name for name in dict.fromkeys(ignored) if name not in known]
    return {**args, FIT: msgspec.structs.replace(fit, ignored_resources=[*fit.ignored_resources, *extra])}
