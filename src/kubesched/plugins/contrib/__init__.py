"""Contributed plugins: not part of kube-scheduler, kept apart from the in-tree ones beside them.

NodeFilterLabel is the plugin-writing example; GPUScheduler, SpotScheduler and AZScheduler pack GPUs,
cap replicas on spot nodes and spread them over zones; Coscheduling is scheduler-plugins' gang
scheduling. Each is registered by name in `kubesched.plugins.CONTRIB_PLUGINS`, and imported only when
a profile names it.
"""
