{{/* Object names: the scheduler's are the release's name, the extender's <release>-extender. */}}
{{- define "kubesched.name" -}}{{ .Release.Name }}{{- end }}
{{- define "kubesched.extenderName" -}}{{ .Release.Name }}-extender{{- end }}

{{/* The image tag: the chart's appVersion unless image.tag says otherwise. */}}
{{- define "kubesched.tag" -}}{{ .Values.image.tag | default .Chart.AppVersion }}{{- end }}
{{- define "kubesched.image" -}}{{ .Values.image.repository }}:{{ include "kubesched.tag" . }}{{- end }}

{{/*
The labels that pick a component's pods (Deployment, Service, PDB, anti-affinity): fixed for the
release's life, because a Deployment's selector cannot change. Argument: (dict "root" $ "component" C).
*/}}
{{- define "kubesched.selectorLabels" -}}
app.kubernetes.io/name: {{ .root.Chart.Name }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
app.kubernetes.io/component: {{ .component }}
{{- end }}

{{/* Kubernetes' recommended labels and Helm's chart label, on every object and pod. Argument: as above. */}}
{{- define "kubesched.labels" -}}
{{ include "kubesched.selectorLabels" . }}
app.kubernetes.io/version: {{ include "kubesched.tag" .root | trunc 63 | trimSuffix "-" | quote }}
app.kubernetes.io/part-of: kubesched
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .root.Chart.Name .root.Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- define "kubesched.schedulerLabels" -}}{{ include "kubesched.labels" (dict "root" . "component" "scheduler") }}{{- end }}
{{- define "kubesched.schedulerSelector" -}}{{ include "kubesched.selectorLabels" (dict "root" . "component" "scheduler") }}{{- end }}
{{- define "kubesched.extenderLabels" -}}{{ include "kubesched.labels" (dict "root" . "component" "extender") }}{{- end }}
{{- define "kubesched.extenderSelector" -}}{{ include "kubesched.selectorLabels" (dict "root" . "component" "extender") }}{{- end }}

{{/*
The selector a Deployment is given, checked against the one it has in the cluster (lookup; nothing
to check under `helm template`). A selector cannot change in place, and chart 0.1.0 selected on
`app.kubernetes.io/name: <name>` alone: say the way out, rather than leave the API server's "field is
immutable". Argument: (dict "root" $ "name" NAME "selector" (include "kubesched.*Selector" $)).
*/}}
{{- define "kubesched.selector" -}}
{{- $existing := lookup "apps/v1" "Deployment" .root.Release.Namespace .name }}
{{- $wanted := fromYaml .selector }}
{{- if $existing }}
{{- $had := $existing.spec.selector.matchLabels | default dict }}
{{- if ne (toJson $had) (toJson $wanted) }}
{{- fail (printf "Deployment %s/%s selects its pods by %s, and this chart version by %s; a selector cannot change in place. Delete the Deployment (kubectl delete deployment -n %s %s: its pods stop until the upgrade starts new ones; ConfigMaps, Secrets and the Lease stay), then upgrade again" .root.Release.Namespace .name (toJson $had) (toJson $wanted) .root.Release.Namespace .name) }}
{{- end }}
{{- end }}
{{- .selector }}
{{- end }}

{{/* The Lease kubesched run holds: named after the release unless set, so two releases never share one. */}}
{{- define "kubesched.leaseName" -}}{{ .Values.leaderElection.resourceName | default .Release.Name }}{{- end }}

{{/* The profiles: the values', else one profile with the default plugins named after the release. */}}
{{- define "kubesched.profiles" -}}
{{- .Values.profiles | default (list (dict "schedulerName" .Release.Name)) | toYaml }}
{{- end }}

{{/*
The extender's TLS material when the chart makes it (no existingSecret, no cert-manager), as JSON of
base64 strings {caCrt, tlsCrt, tlsKey, clientCrt, clientKey}. Made once per install: the Secrets of an
earlier release are read back (lookup) and kept, so upgrades never change the CA kube-scheduler's
client certificate chains to. Without a cluster to read (`helm template`, `--dry-run=client`) lookup
finds nothing and new ones are generated. Computed once per render and kept on the root context,
since the Secrets and the Deployment's checksum annotation must see the same keys.
*/}}
{{- define "kubesched.extenderCerts" -}}
{{- if not (hasKey . "kubeschedExtenderCerts") }}
{{- $name := include "kubesched.extenderName" . }}
{{- $ns := .Release.Namespace }}
{{- $server := get (lookup "v1" "Secret" $ns (printf "%s-tls" $name)) "data" | default dict }}
{{- $client := get (lookup "v1" "Secret" $ns (printf "%s-client" $name)) "data" | default dict }}
{{- $certs := dict }}
{{- if and (get $server "tls.crt") (get $server "tls.key") (get $server "ca.crt") (get $client "tls.crt") (get $client "tls.key") }}
{{- $certs = dict "caCrt" (get $server "ca.crt") "tlsCrt" (get $server "tls.crt") "tlsKey" (get $server "tls.key") "clientCrt" (get $client "tls.crt") "clientKey" (get $client "tls.key") }}
{{- else }}
{{- $host := printf "%s.%s.svc" $name $ns }}
{{- $ca := genCA (printf "%s-ca" $name) 3650 }}
{{- $serving := genSignedCert $host nil (list $host (printf "%s.cluster.local" $host)) 3650 $ca }}
{{- $kubeScheduler := genSignedCert "kube-scheduler" nil nil 3650 $ca }}
{{- $certs = dict "caCrt" ($ca.Cert | b64enc) "tlsCrt" ($serving.Cert | b64enc) "tlsKey" ($serving.Key | b64enc) "clientCrt" ($kubeScheduler.Cert | b64enc) "clientKey" ($kubeScheduler.Key | b64enc) }}
{{- end }}
{{- $_ := set . "kubeschedExtenderCerts" $certs }}
{{- end }}
{{- get . "kubeschedExtenderCerts" | toJson }}
{{- end }}

{{- define "kubesched.podSecurity" -}}
securityContext:
  runAsNonRoot: true
  runAsUser: 65532
  runAsGroup: 65532
  seccompProfile: {type: RuntimeDefault}
{{- end }}
{{- define "kubesched.containerSecurity" -}}
securityContext:
  allowPrivilegeEscalation: false
  readOnlyRootFilesystem: true
  capabilities: {drop: [ALL]}
{{- end }}
