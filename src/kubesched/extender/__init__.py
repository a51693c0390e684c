"""The scheduler extender: kubesched's plugins served to a stock kube-scheduler over HTTP.

* `wire`    - the `k8s.io/kube-scheduler/extender/v1` JSON types (Go field names, nil as null,
              case-insensitive decoding); also used by kubesched's own extender client
              (`kubesched.scheduler.extenders`), which is why it depends on nothing but `api`;
* `state`   - the node cache: none, a fixed snapshot, or live informers;
* `engine`  - filter / prioritize / preempt / bind over one profile's Framework, without HTTP;
* `server`  - the Starlette app (verbs, health, metrics, OpenAPI) and its uvicorn settings;
* `openapi` - the OpenAPI document (kept in docs/extender-openapi.json).

`kubesched extender` (`kubesched.cli.extender`) puts them together. See docs/extender.md.
"""
