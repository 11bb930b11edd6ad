{{/* The chart's name, and the name of its objects: <release>-choria-provisioner, or the release
name when it already holds the chart's name. */}}
{{- define "choria-provisioner.name" -}}
{{- .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "choria-provisioner.fullname" -}}
{{- if contains .Chart.Name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name .Chart.Name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}

{{- define "choria-provisioner.selectorLabels" -}}
app.kubernetes.io/name: {{ include "choria-provisioner.name" . }}
app.kubernetes.io/instance: {{ .Release.Name }}
{{- end -}}

{{- define "choria-provisioner.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
{{ include "choria-provisioner.selectorLabels" . }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
{{- end -}}

{{- define "choria-provisioner.image" -}}
{{- printf "%s:%s" .Values.image.repository (.Values.image.tag | default .Chart.AppVersion) -}}
{{- end -}}

{{/* Where the pod's files are: the paths of Choria's chart (config/, ssl/, signer/, /helper). */}}
{{- define "choria-provisioner.configDir" -}}/etc/choria-provisioner/config{{- end -}}
{{- define "choria-provisioner.chartDir" -}}/etc/choria-provisioner/chart{{- end -}}

{{/* The names the chart's Service is reached by, for monitor_allowed_hosts. */}}
{{- define "choria-provisioner.serviceHosts" -}}
{{- $svc := include "choria-provisioner.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- $full := printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain -}}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) $full | toJson -}}
{{- end -}}

{{/* The checks a template cannot leave to the provisioner: they would fail every pod. */}}
{{- define "choria-provisioner.validate" -}}
{{- if and (gt (int .Values.replicas) 1) (eq .Values.coordination "none") -}}
{{- fail (print "replicas above 1 need coordination active_active or leader_election: "
  "uncoordinated instances meet only at the node lock") -}}
{{- end -}}
{{- if not .Values.choria.brokers -}}
{{- fail "choria.brokers is required: the provisioning broker(s), plugin.choria.middleware_hosts" -}}
{{- end -}}
{{- if not .Values.helper.configMap -}}
{{- fail "helper.configMap is required: the ConfigMap holding the helper" -}}
{{- end -}}
{{- if and .Values.renewal.enabled (not .Values.renewal.tlsSecret) (not .Values.renewal.extraConfig) -}}
{{- fail "renewal.enabled needs renewal.tlsSecret (or the security settings in renewal.extraConfig)" -}}
{{- end -}}
{{- $owned := list "helper" "choria_config" "monitor_port" "logfile" "coordination" "leader_election" -}}
{{- if .Values.jwt.signerSecret }}{{ $owned = append $owned "jwt_verify_cert" }}{{ end -}}
{{- if .Values.renewal.enabled }}{{ $owned = append $owned "renewal_choria_config" }}{{ end -}}
{{- range $key, $_ := .Values.config -}}
{{- if has (lower $key) $owned -}}
{{- fail (printf "config.%s is set by the chart; see values.yaml for the value that sets it" $key) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* choria-provisioner.yaml: the chart's keys over config. */}}
{{- define "choria-provisioner.provisionerYaml" -}}
{{- $cfg := deepCopy .Values.config -}}
{{- $hosts := include "choria-provisioner.serviceHosts" . | fromJsonArray -}}
{{- $given := "" -}}
{{- $site := .Release.Name -}}
{{- range $key, $value := .Values.config -}}
{{- if eq (lower $key) "monitor_allowed_hosts" }}{{ $given = $key }}{{ $hosts = concat $value $hosts }}{{ end -}}
{{- if eq (lower $key) "site" }}{{ $site = "" }}{{ end -}}
{{- end -}}
{{- if $given }}{{ $_ := unset $cfg $given }}{{ end -}}
{{- $_ := set $cfg "monitor_allowed_hosts" (uniq $hosts) -}}
{{- if $site }}{{ $_ := set $cfg "site" $site }}{{ end -}}
{{- $_ := set $cfg "helper" .Values.helper.command -}}
{{- $_ := set $cfg "monitor_port" (int .Values.monitor.port) -}}
{{- $_ := set $cfg "logfile" "stdout" -}}
{{- $_ := set $cfg "coordination" .Values.coordination -}}
{{- if .Values.jwt.signerSecret -}}
{{- $_ := set $cfg "jwt_verify_cert" "/etc/choria-provisioner/signer/signer.pem" -}}
{{- end -}}
{{- if .Values.renewal.enabled -}}
{{- $_ := set $cfg "renewal_choria_config" (printf "%s/renewal.cfg" (include "choria-provisioner.configDir" .)) -}}
{{- end -}}
{{- toYaml $cfg -}}
{{- end -}}

{{/* key = value lines of a Choria client configuration. */}}
{{- define "choria-provisioner.clientCfg" -}}
plugin.choria.middleware_hosts = {{ .brokers }}
{{- if .identity }}
identity = {{ .identity }}
{{- end }}
{{- if .certname }}
plugin.security.certname_override = {{ .certname }}
{{- end }}
{{- if .tlsDir }}
plugin.security.provider = file
plugin.security.file.certificate = {{ .tlsDir }}/cert.pem
plugin.security.file.key = {{ .tlsDir }}/key.pem
plugin.security.file.ca = {{ .tlsDir }}/ca.pem
{{- end }}
{{- range $key, $value := .extra }}
{{ $key }} = {{ $value }}
{{- end }}
{{- end -}}
