{{- define "kubesched.name" -}}{{ .Release.Name }}{{- end }}
{{- define "kubesched.extenderName" -}}{{ .Release.Name }}-extender{{- end }}
{{- define "kubesched.labels" -}}
app.kubernetes.io/name: {{ .name }}
app.kubernetes.io/part-of: kubesched
{{- end }}
{{- define "kubesched.image" -}}{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}{{- end }}
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
