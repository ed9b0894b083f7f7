{{/*
The prefix of every object's name: the release name, followed by "-raftsman"
unless it already holds "raftsman", or fullnameOverride. Release "raftsman"
gives the names of dist/install.yaml.
*/}}
{{- define "raftsman.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else if contains "raftsman" .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-raftsman" .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{/* The operator's image: repository[:tag][@digest]. */}}
{{- define "raftsman.image" -}}
{{- .Values.image.repository -}}
{{- with .Values.image.tag }}:{{ . }}{{ end -}}
{{- with .Values.image.digest }}@{{ . }}{{ end -}}
{{- end -}}
