{{/* The chart's name (nameOverride wins), at most 63 characters. */}}
{{- define "xreg-gateway.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Resource names: fullnameOverride, else the release name, with the chart name added unless
the release name already contains it; at most 63 characters (DNS labels). */}}
{{- define "xreg-gateway.fullname" -}}
{{- if .Values.fullnameOverride }}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- $name := default .Chart.Name .Values.nameOverride }}
{{- if contains $name .Release.Name }}
{{- .Release.Name | trunc 63 | trimSuffix "-" }}
{{- else }}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" }}
{{- end }}
{{- end }}
{{- end }}

{{/* chart-version, for the helm.sh/chart label. */}}
{{- define "xreg-gateway.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* Labels of every resource. */}}
{{- define "xreg-gateway.labels" -}}
helm.sh/chart: {{ include "xreg-gateway.chart" . }}
{{ include "xreg-gateway.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}

{{/* The labels that select the gateway's pods (never change them on upgrades: selectors are
immutable). */}}
{{- define "xreg-gateway.selectorLabels" -}}
app.kubernetes.io/name: {{ include "xreg-gateway.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end }}

{{/* A registry id as it appears in XREG_REGISTRIES__<ID>__… variable names (gateway/config.py
_env_key: upper case, every other character "_"). */}}
{{- define "xreg-gateway.registryEnvKey" -}}
{{- regexReplaceAll "[^A-Z0-9]" (upper .) "_" }}
{{- end }}

{{/* A registry id as a volume name (a DNS label). */}}
{{- define "xreg-gateway.registryVolume" -}}
{{- printf "remote-%s" (regexReplaceAll "[^a-z0-9-]" (lower .) "-") | trunc 63 | trimSuffix "-" }}
{{- end }}
