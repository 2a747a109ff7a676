{{- define "web.fullname" -}}
{{ .Release.Name }}
{{- end -}}

{{- define "web.logLevel" -}}
{{ .Values.config.logLevel | quote }}
{{- end -}}
