{{/* Test fixture for tests/upstream, not an upstream chart. */}}
{{- define "widget.image" -}}
{{ .repository }}:{{ .tag }}
{{- end }}

{{- define "widget.labels" -}}
app.kubernetes.io/name: widget
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* Defined but never called: the keys it reads are not read. */}}
{{- define "widget.unused" -}}
{{ .Values.legacy.oldKey }}
{{- end }}
