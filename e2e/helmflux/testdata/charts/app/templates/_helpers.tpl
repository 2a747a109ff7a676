{{/*
app.logLevel passes one value through unchanged, as charts pass a
value through a named template: a field it renders traces to logLevel.
*/}}
{{- define "app.logLevel" -}}
{{ .Values.logLevel }}
{{- end }}

{{/*
app.backendURL builds one string from two keys: a field it renders is
computed, and no single values line sets it.
*/}}
{{- define "app.backendURL" -}}
http://{{ .Values.backend.host }}:{{ .Values.backend.port }}
{{- end }}
