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
