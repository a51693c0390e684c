"""Serving HTTP endpoints the way Kubernetes components do: HTTPS, then who is asking, then may they.

kube-scheduler serves `/metrics` and its health endpoints on port 10259 over HTTPS with delegated
authentication (a TokenReview, or a client certificate signed by the client CA) and delegated
authorization (a SubjectAccessReview), letting the health paths through unauthorised. `kubesched run`
and `kubesched extender` serve the same way, so a cluster's Prometheus, probes and RBAC treat them as
they treat kube-scheduler.

* `certs` - the serving certificate: from files, or self-signed in memory (nothing written to disk).
* `tls` - the server's SSL context (minimum version, cipher suites, client CA) from upstream's flags.
* `authn` / `authz` - authenticators and authorizers, each one small and testable on its own.
* `asgi` - the ASGI middleware that runs them before an app, and the TLS details it needs.
* `server` - uvicorn on a thread, plain or TLS, returning once it listens.
* `options` - upstream's flag names (`--secure-port`, `--authentication-kubeconfig`, ...): what
  they ask for, without importing the server.
* `secure` - the HTTPS server they build: certificate, TLS, authn/authz, uvicorn.
* `sockets` - a listening socket taken before its server starts (a busy port fails at once).
* `health` - `/healthz`, `/livez`, `/readyz` and `/metrics` of `kubesched run`.

This layer sits between the extender and the cluster adapters: it talks to the API server through
`cluster.kube.client` and knows nothing about scheduling.
"""
