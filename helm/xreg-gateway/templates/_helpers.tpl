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

{{/* A registry id as it appears in XREG_REGISTRIES__<ID>__… variable names (xreg/config.py
_env_key: upper case, every other character "_"). */}}
{{- define "xreg-gateway.registryEnvKey" -}}
{{- regexReplaceAll "[^A-Z0-9]" (upper .) "_" }}
{{- end }}

{{/* A registry id as a volume name (a DNS label). */}}
{{- define "xreg-gateway.registryVolume" -}}
{{- printf "remote-%s" (regexReplaceAll "[^a-z0-9-]" (lower .) "-") | trunc 63 | trimSuffix "-" }}
{{- end }}

{{/* The ServiceAccount the pods run as. */}}
{{- define "xreg-gateway.serviceAccountName" -}}
{{- if .Values.serviceAccount.create }}
{{- default (include "xreg-gateway.fullname" .) .Values.serviceAccount.name }}
{{- else }}
{{- default "default" .Values.serviceAccount.name }}
{{- end }}
{{- end }}

{{/* "true" when the store is the embedded SQLite one (no MongoDB Secret), else empty. */}}
{{- define "xreg-gateway.embeddedStore" -}}
{{- if not .Values.store.existingSecret }}true{{ end }}
{{- end }}

{{/* "true" when the data directory is a PersistentVolumeClaim, else empty. */}}
{{- define "xreg-gateway.persistent" -}}
{{- if and (include "xreg-gateway.embeddedStore" .) .Values.persistence.enabled }}true{{ end }}
{{- end }}

{{/* The gateway's environment: the same in the seed initContainer and the gateway container, so
the import and the server open the same store with the same settings. */}}
{{- define "xreg-gateway.env" -}}
- name: XREG_CONFIG
  value: /etc/xreg-gateway/gateway.yaml
- name: XREG_DATA_DIR
  value: /var/lib/xreg-gateway
- name: XREG_ANONYMOUS_READ
  value: {{ .Values.auth.anonymousRead | quote }}
- name: XREG_LOG_LEVEL
  value: {{ .Values.logLevel | quote }}
- name: XREG_LOG_FORMAT
  value: {{ .Values.logFormat | quote }}
- name: XREG_SHUTDOWN_GRACE_SECONDS
  value: {{ .Values.shutdownGraceSeconds | quote }}
- name: XREG_EVENTS_POLL_SECONDS
  value: {{ .Values.eventsPollSeconds | quote }}
{{- with .Values.config.baseUrl }}
- name: XREG_BASE_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.store.existingSecret }}
- name: XREG_STORE_URL
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.store.key }}
{{- end }}
{{- with .Values.cache.existingSecret }}
- name: XREG_CACHE_URL
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.cache.key }}
{{- end }}
{{- with .Values.auth.apiKeys.existingSecret }}
- name: XREG_API_KEYS
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.auth.apiKeys.key }}
{{- end }}
{{- with .Values.auth.jwt.existingSecret }}
- name: XREG_JWT_SECRET
  valueFrom:
    secretKeyRef:
      name: {{ . }}
      key: {{ $.Values.auth.jwt.key }}
{{- end }}
{{- with .Values.auth.jwt.jwksUrl }}
- name: XREG_JWT_JWKS_URL
  value: {{ . | quote }}
{{- end }}
{{- with .Values.auth.jwt.issuer }}
- name: XREG_JWT_ISSUER
  value: {{ . | quote }}
{{- end }}
{{- with .Values.auth.jwt.audience }}
- name: XREG_JWT_AUDIENCE
  value: {{ . | quote }}
{{- end }}
- name: XREG_JWT_SCOPE_CLAIM
  value: {{ .Values.auth.jwt.scopeClaim | quote }}
{{- range .Values.remoteCredentials }}
{{- if eq .mountAs "env" }}
- name: XREG_REGISTRIES__{{ include "xreg-gateway.registryEnvKey" .registry }}__AUTH__BEARER
  valueFrom:
    secretKeyRef:
      name: {{ .existingSecret }}
      key: {{ .key }}
{{- else }}
- name: XREG_REGISTRIES__{{ include "xreg-gateway.registryEnvKey" .registry }}__AUTH__BEARER_FILE
  value: /run/secrets/{{ .registry }}/{{ .key }}
{{- end }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end }}

{{/* The gateway's mounts (both containers): settings, data directory, /tmp, remote credentials. */}}
{{- define "xreg-gateway.volumeMounts" -}}
- name: config
  mountPath: /etc/xreg-gateway
  readOnly: true
- name: data
  mountPath: /var/lib/xreg-gateway
- name: tmp
  mountPath: /tmp
{{- range .Values.remoteCredentials }}
{{- if eq .mountAs "file" }}
- name: {{ include "xreg-gateway.registryVolume" .registry }}
  mountPath: /run/secrets/{{ .registry }}
  readOnly: true
{{- end }}
{{- end }}
{{- end }}

{{/* Labels of the `helm test` pod: the release's, but never the gateway's selector (the
Service must not route to it). */}}
{{- define "xreg-gateway.testLabels" -}}
helm.sh/chart: {{ include "xreg-gateway.chart" . }}
app.kubernetes.io/name: {{ include "xreg-gateway.name" . }}-test
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/component: test
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end }}
