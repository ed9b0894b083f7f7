{{/*
The chart's name, in object names and in the label app.kubernetes.io/name that
the operator's Pods are selected by: "raftsman", or nameOverride.
*/}}
{{- define "raftsman.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{/*
The prefix of every object's name: the release name, followed by "-<name>"
unless it already holds the name, or fullnameOverride. Release "raftsman"
gives the names of dist/install.yaml.
*/}}
{{- define "raftsman.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := include "raftsman.name" . -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
The labels of every object of the release, as `helm create` sets them; the
templates put an object's own labels after them. Selectors use
app.kubernetes.io/name only, as dist/install.yaml's do.
*/}}
{{- define "raftsman.labels" -}}
app.kubernetes.io/name: {{ include "raftsman.name" . }}
{{ include "raftsman.releaseLabels" . }}
{{- end -}}

{{/* The labels of raftsman.labels but app.kubernetes.io/name. */}}
{{- define "raftsman.releaseLabels" -}}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- with .Chart.AppVersion }}
app.kubernetes.io/version: {{ . | trunc 63 | trimSuffix "-" | quote }}
{{- end }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end -}}

{{/* The operator's service account: serviceAccount.name, or the fullname. */}}
{{- define "raftsman.serviceAccountName" -}}
{{- .Values.serviceAccount.name | default (include "raftsman.fullname" .) -}}
{{- end -}}

{{/* The operator's image: repository[:tag][@digest]. */}}
{{- define "raftsman.image" -}}
{{- .Values.image.repository -}}
{{- with .Values.image.tag }}:{{ . }}{{ end -}}
{{- with .Values.image.digest }}@{{ . }}{{ end -}}
{{- end -}}
