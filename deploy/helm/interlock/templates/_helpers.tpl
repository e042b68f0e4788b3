{{/*
Names.
*/}}
{{- define "interlock.name" -}}
{{- default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "interlock.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 63 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 63 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* A name with a suffix, kept within 63 characters. */}}
{{- define "interlock.suffixed" -}}
{{- $base := include "interlock.fullname" .root | trunc (int (sub 62 (len .suffix))) | trimSuffix "-" -}}
{{- printf "%s-%s" $base .suffix -}}
{{- end -}}

{{- define "interlock.chart" -}}
{{- printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" -}}
{{- end -}}

{{- define "interlock.serviceAccountName" -}}
{{- if .Values.serviceAccount.create -}}
{{- default (include "interlock.fullname" .) .Values.serviceAccount.name -}}
{{- else -}}
{{- required "serviceAccount.name must name an existing ServiceAccount when serviceAccount.create is false" .Values.serviceAccount.name -}}
{{- end -}}
{{- end -}}

{{/*
Labels. "interlock.labels" takes (dict "root" $ "component" "gateway").
*/}}
{{- define "interlock.selectorLabels" -}}
app.kubernetes.io/name: {{ include "interlock.name" .root }}
app.kubernetes.io/instance: {{ .root.Release.Name }}
{{- with .component }}
app.kubernetes.io/component: {{ . }}
{{- end }}
{{- end -}}

{{- define "interlock.labels" -}}
helm.sh/chart: {{ include "interlock.chart" .root }}
{{ include "interlock.selectorLabels" . }}
app.kubernetes.io/version: {{ .root.Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .root.Release.Service }}
app.kubernetes.io/part-of: interlock
{{- with .root.Values.commonLabels }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{- define "interlock.image" -}}
{{- $img := .Values.image -}}
{{- if $img.digest -}}
{{- printf "%s@%s" $img.repository $img.digest -}}
{{- else -}}
{{- printf "%s:%s" $img.repository (default .Chart.AppVersion $img.tag) -}}
{{- end -}}
{{- end -}}

{{/* Where the chart mounts things. */}}
{{- define "interlock.configPath" -}}/etc/interlock/interlock.toml{{- end -}}
{{- define "interlock.secretsDir" -}}/var/run/secrets/interlock{{- end -}}
{{- define "interlock.controlPasswordFile" -}}{{ include "interlock.secretsDir" . }}/control/password{{- end -}}
{{- define "interlock.controlCaFile" -}}{{ include "interlock.secretsDir" . }}/control-ca/ca.crt{{- end -}}

{{/* The Service's DNS names, for server.allowed_hosts. */}}
{{- define "interlock.serviceHosts" -}}
{{- $svc := include "interlock.fullname" . -}}
{{- $ns := .Release.Namespace -}}
{{- list $svc (printf "%s.%s" $svc $ns) (printf "%s.%s.svc" $svc $ns) (printf "%s.%s.svc.%s" $svc $ns .Values.clusterDomain) | toJson -}}
{{- end -}}

{{/*
The gateway's settings as a dict (returned as JSON): config.* merged over nothing (the binary
has every default compiled in), then the keys the chart manages.
*/}}
{{- define "interlock.settings" -}}
{{- $cfg := deepCopy (default dict .Values.config) -}}
{{- range $section := list "server" "control" "metrics" "rate_limit" "log" -}}
{{- if not (hasKey $cfg $section) -}}{{- $_ := set $cfg $section dict -}}{{- end -}}
{{- end -}}
{{- $_ := set $cfg.server "listen" (printf "%s:%d" .Values.listenAddress (int .Values.containerPort)) -}}
{{- $hosts := concat (include "interlock.serviceHosts" . | fromJsonArray) (default list $cfg.server.allowed_hosts) | uniq -}}
{{- $_ := set $cfg.server "allowed_hosts" $hosts -}}
{{- $db := .Values.controlDatabase -}}
{{- $_ := set $cfg.control "host" $db.host -}}
{{- $_ := set $cfg.control "port" (int $db.port) -}}
{{- $_ := set $cfg.control "dbname" $db.dbname -}}
{{- $_ := set $cfg.control "user" $db.user -}}
{{- $_ := set $cfg.control "password_env" "" -}}
{{- $_ := set $cfg.control "password_file" (include "interlock.controlPasswordFile" .) -}}
{{- /* The binary's default is "disable": written only when it is something else. */ -}}
{{- if ne $db.tls.mode "disable" -}}
{{- $_ := set $cfg.control "tls_mode" $db.tls.mode -}}
{{- end -}}
{{- if $db.tls.caSecret.name -}}
{{- $_ := set $cfg.control "tls_ca_file" (include "interlock.controlCaFile" .) -}}
{{- end -}}
{{- if or .Values.migration.enabled (not (hasKey $cfg.control "migrate_on_start")) -}}
{{- $_ := set $cfg.control "migrate_on_start" false -}}
{{- end -}}
{{- if .Values.metrics.listener.enabled -}}
{{- $_ := set $cfg.metrics "listen" (printf "%s:%d" .Values.listenAddress (int .Values.metrics.listener.port)) -}}
{{- $_ := set $cfg.metrics "allow_non_loopback" true -}}
{{- else -}}
{{- $_ := set $cfg.metrics "listen" "" -}}
{{- $_ := set $cfg.metrics "allow_non_loopback" false -}}
{{- end -}}
{{- if .Values.redis.enabled -}}
{{- $_ := set $cfg.rate_limit "backend" "redis" -}}
{{- else -}}
{{- $_ := set $cfg.rate_limit "backend" "local" -}}
{{- end -}}
{{- /* rate_limit.redis_url comes from the environment (a Secret), never from the file. */ -}}
{{- toJson $cfg -}}
{{- end -}}

{{/*
TOML. Sections are tables; nested maps are inline tables; lists are arrays. Strings are
written as JSON strings, which are valid TOML basic strings. Whole numbers are written as
integers (YAML values reach templates as float64), others as floats.
*/}}
{{- define "interlock.toml" -}}
# Rendered by the InterLock Helm chart from its values (`config` and the values the chart
# manages). Every key not written here keeps the default compiled into the binary
# (config/default.toml). Environment variables INTERLOCK__SECTION__KEY win over this file.
{{- $root := . }}
{{- range $section := keys $root | sortAlpha }}
{{- $table := index $root $section }}
{{- if not (kindIs "map" $table) }}
{{- fail (printf "config.%s must be a table (section) of keys" $section) }}
{{- end }}

[{{ include "interlock.tomlKey" $section }}]
{{- range $key := keys $table | sortAlpha }}
{{ include "interlock.tomlKey" $key }} = {{ include "interlock.tomlValue" (index $table $key) }}
{{- end }}
{{- end }}
{{ end -}}

{{- define "interlock.tomlKey" -}}
{{- if regexMatch "^[A-Za-z0-9_-]+$" . -}}{{ . }}{{- else -}}{{ toJson . }}{{- end -}}
{{- end -}}

{{- define "interlock.tomlValue" -}}
{{- $v := . -}}
{{- if kindIs "string" $v -}}
{{- toJson $v -}}
{{- else if kindIs "bool" $v -}}
{{- ternary "true" "false" $v -}}
{{- else if or (kindIs "float64" $v) (kindIs "float32" $v) -}}
{{- if eq (floor $v) (float64 $v) -}}{{- int64 $v -}}{{- else -}}{{- toJson $v -}}{{- end -}}
{{- else if or (kindIs "int" $v) (kindIs "int64" $v) (kindIs "int32" $v) (kindIs "uint64" $v) -}}
{{- $v -}}
{{- else if kindIs "slice" $v -}}
[{{- range $i, $e := $v -}}{{- if $i -}}, {{ end -}}{{- include "interlock.tomlValue" $e -}}{{- end -}}]
{{- else if kindIs "map" $v -}}
{{- if eq (len $v) 0 -}}
{}
{{- else -}}
{ {{- range $i, $k := keys $v | sortAlpha -}}{{- if $i -}}, {{ end -}}{{- include "interlock.tomlKey" $k }} = {{ include "interlock.tomlValue" (index $v $k) -}}{{- end -}} }
{{- end -}}
{{- else -}}
{{- fail (printf "a config value cannot be written as TOML (null or unsupported type %s); leave the key out to keep its default" (kindOf $v)) -}}
{{- end -}}
{{- end -}}

{{/* The rendered config file. */}}
{{- define "interlock.configToml" -}}
{{- include "interlock.toml" (include "interlock.settings" . | fromJson) -}}
{{- end -}}

{{/*
Refusals of value combinations the schema cannot express. Rendered (as nothing) by the
Deployment and the Job.
*/}}
{{- define "interlock.validate" -}}
{{- $v := .Values -}}
{{- $_ := required "controlDatabase.host is required: the control database's read-write host, e.g. interlock-db-rw.interlock.svc" $v.controlDatabase.host -}}
{{- $_ := required "controlDatabase.passwordSecret.name is required: an existing Secret holding the control database's password (kubectl create secret generic ...)" $v.controlDatabase.passwordSecret.name -}}
{{- if and (eq $v.controlDatabase.tls.mode "verify-full") (not $v.controlDatabase.tls.caSecret.name) -}}
{{- fail "controlDatabase.tls.mode verify-full needs controlDatabase.tls.caSecret.name: an existing Secret with the CA certificate that signs the server's (CloudNativePG: CLUSTER-ca, key ca.crt)" -}}
{{- end -}}
{{- $cfg := default dict $v.config -}}
{{- $server := default dict $cfg.server -}}
{{- $shutdown := 10 -}}
{{- if hasKey $server "shutdown_timeout_secs" -}}{{- $shutdown = int $server.shutdown_timeout_secs -}}{{- end -}}
{{- $stop := add (int $v.preStopSleepSeconds) $shutdown -}}
{{- if le (int $v.terminationGracePeriodSeconds) $stop -}}
{{- fail (printf "terminationGracePeriodSeconds (%d) must exceed preStopSleepSeconds (%d) + config.server.shutdown_timeout_secs (%d): otherwise in-flight calls are killed before the gateway has drained them" (int $v.terminationGracePeriodSeconds) (int $v.preStopSleepSeconds) $shutdown) -}}
{{- end -}}
{{- $control := default dict $cfg.control -}}
{{- if and $v.migration.enabled (hasKey $control "migrate_on_start") $control.migrate_on_start -}}
{{- fail "config.control.migrate_on_start = true conflicts with migration.enabled: the migration Job migrates before the replicas start; disable one of the two" -}}
{{- end -}}
{{- if $v.redis.enabled -}}
{{- if and (not $v.redis.urlSecret.name) (not $v.redis.host) -}}
{{- fail "redis.enabled needs redis.urlSecret.name (a Secret holding the redis:// URL) or redis.host" -}}
{{- end -}}
{{- end -}}
{{- $pdb := $v.podDisruptionBudget -}}
{{- if $pdb.enabled -}}
{{- if and (not (kindIs "invalid" $pdb.minAvailable)) (not (kindIs "invalid" $pdb.maxUnavailable)) -}}
{{- fail "podDisruptionBudget: set minAvailable or maxUnavailable, not both (set the other to null)" -}}
{{- end -}}
{{- if and (kindIs "invalid" $pdb.minAvailable) (kindIs "invalid" $pdb.maxUnavailable) -}}
{{- fail "podDisruptionBudget: set minAvailable or maxUnavailable" -}}
{{- end -}}
{{- $replicas := int $v.replicaCount -}}
{{- if $v.autoscaling.enabled -}}{{- $replicas = int $v.autoscaling.minReplicas -}}{{- end -}}
{{- if and (not (kindIs "invalid" $pdb.minAvailable)) (not (kindIs "string" $pdb.minAvailable)) -}}
{{- if ge (int $pdb.minAvailable) $replicas -}}
{{- fail (printf "podDisruptionBudget.minAvailable (%d) must be below the replica count (%d), or no node could ever be drained; with one replica set podDisruptionBudget.enabled = false" (int $pdb.minAvailable) $replicas) -}}
{{- end -}}
{{- end -}}
{{- if and (not (kindIs "invalid" $pdb.maxUnavailable)) (not (kindIs "string" $pdb.maxUnavailable)) -}}
{{- if lt (int $pdb.maxUnavailable) 1 -}}
{{- fail "podDisruptionBudget.maxUnavailable must be at least 1, or no node could ever be drained" -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- if $v.autoscaling.enabled -}}
{{- if gt (int $v.autoscaling.minReplicas) (int $v.autoscaling.maxReplicas) -}}
{{- fail "autoscaling.minReplicas must not exceed autoscaling.maxReplicas" -}}
{{- end -}}
{{- end -}}
{{- if $v.metrics.serviceMonitor.enabled -}}
{{- if and (not $v.metrics.listener.enabled) (or (not $v.metrics.serviceMonitor.operatorKeySecret.name) (not $v.metrics.serviceMonitor.operatorKeySecret.key)) -}}
{{- fail "metrics.serviceMonitor without metrics.listener scrapes the main port, where /metrics needs an operator key: set metrics.serviceMonitor.operatorKeySecret (name and key), or enable metrics.listener" -}}
{{- end -}}
{{- end -}}
{{- if and $v.metrics.listener.enabled (eq (int $v.metrics.listener.port) (int $v.containerPort)) -}}
{{- fail "metrics.listener.port must differ from containerPort" -}}
{{- end -}}
{{- $mounted := dict -}}
{{- range $v.secretFiles -}}
{{- if has .name (list "control" "control-ca" "tmp" "config") -}}
{{- fail (printf "secretFiles: the name %q is the chart's own; choose another" .name) -}}
{{- end -}}
{{- if hasKey $mounted .name -}}
{{- fail (printf "secretFiles: the name %q is used twice" .name) -}}
{{- end -}}
{{- $_ := set $mounted .name true -}}
{{- end -}}
{{- $dir := include "interlock.secretsDir" . -}}
{{- range $path := list (list "audit" "checkpoint_key_file") (list "oauth" "introspection_secret_file") (list "oauth" "jwks_file") -}}
{{- $section := default dict (index $cfg (index $path 0)) -}}
{{- $file := default "" (index $section (index $path 1)) -}}
{{- if hasPrefix (printf "%s/" $dir) $file -}}
{{- $name := index (splitList "/" (trimPrefix (printf "%s/" $dir) $file)) 0 -}}
{{- if not (hasKey $mounted $name) -}}
{{- fail (printf "config.%s.%s names %s, but no secretFiles entry is mounted at %s/%s" (index $path 0) (index $path 1) $file $dir $name) -}}
{{- end -}}
{{- end -}}
{{- end -}}
{{- $reserved := list "INTERLOCK_CONFIG" "INTERLOCK__SERVER__LISTEN" "INTERLOCK__SERVER__ALLOWED_HOSTS" "INTERLOCK__LOG__FORMAT" "INTERLOCK__LOG__STREAM" "INTERLOCK__METRICS__LISTEN" "INTERLOCK__METRICS__ALLOW_NON_LOOPBACK" "INTERLOCK__RATE_LIMIT__BACKEND" "INTERLOCK__RATE_LIMIT__REDIS_URL" "INTERLOCK_REDIS_PASSWORD" -}}
{{- range $v.extraEnv -}}
{{- if or (has .name $reserved) (hasPrefix "INTERLOCK__CONTROL__" .name) -}}
{{- fail (printf "extraEnv: %s is set by the chart from its values (config, controlDatabase, metrics, redis); set it there" .name) -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/*
Environment shared by the gateway and the migration Job. The image's own ENV sets listen,
log format and log stream, and the environment wins over the file: set them to what the
file says so the two agree.
*/}}
{{- define "interlock.env" -}}
{{- $s := include "interlock.settings" . | fromJson -}}
- name: INTERLOCK_CONFIG
  value: {{ include "interlock.configPath" . | quote }}
- name: INTERLOCK__SERVER__LISTEN
  value: {{ $s.server.listen | quote }}
{{- if hasKey $s.log "format" }}
- name: INTERLOCK__LOG__FORMAT
  value: {{ $s.log.format | quote }}
{{- end }}
{{- if hasKey $s.log "stream" }}
- name: INTERLOCK__LOG__STREAM
  value: {{ $s.log.stream | quote }}
{{- end }}
{{- if .Values.redis.enabled }}
{{- $r := .Values.redis }}
{{- if $r.urlSecret.name }}
- name: INTERLOCK__RATE_LIMIT__REDIS_URL
  valueFrom:
    secretKeyRef:
      name: {{ $r.urlSecret.name | quote }}
      key: {{ $r.urlSecret.key | quote }}
{{- else }}
{{- $auth := "" }}
{{- if $r.passwordSecret.name }}
- name: INTERLOCK_REDIS_PASSWORD
  valueFrom:
    secretKeyRef:
      name: {{ $r.passwordSecret.name | quote }}
      key: {{ $r.passwordSecret.key | quote }}
{{- $auth = printf "%s:$(INTERLOCK_REDIS_PASSWORD)@" $r.username }}
{{- end }}
- name: INTERLOCK__RATE_LIMIT__REDIS_URL
  value: {{ printf "redis://%s%s:%d/%d" $auth $r.host (int $r.port) (int $r.db) | quote }}
{{- end }}
{{- end }}
{{- with .Values.extraEnv }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volume mounts shared by the gateway and the migration Job. */}}
{{- define "interlock.volumeMounts" -}}
- name: config
  mountPath: /etc/interlock
  readOnly: true
- name: control-password
  mountPath: {{ include "interlock.secretsDir" . }}/control
  readOnly: true
{{- if .Values.controlDatabase.tls.caSecret.name }}
- name: control-ca
  mountPath: {{ include "interlock.secretsDir" . }}/control-ca
  readOnly: true
{{- end }}
{{- range .Values.secretFiles }}
- name: {{ printf "secret-%s" .name | trunc 63 | trimSuffix "-" }}
  mountPath: {{ include "interlock.secretsDir" $ }}/{{ .name }}
  readOnly: true
{{- end }}
- name: tmp
  mountPath: /tmp
{{- with .Values.extraVolumeMounts }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/* Volumes shared by the gateway and the migration Job; takes (dict "root" $ "configMap" NAME). */}}
{{- define "interlock.volumes" -}}
{{- $root := .root -}}
- name: config
  configMap:
    name: {{ .configMap }}
    items:
      - key: interlock.toml
        path: interlock.toml
- name: control-password
  secret:
    secretName: {{ $root.Values.controlDatabase.passwordSecret.name | quote }}
    defaultMode: 0440
    items:
      - key: {{ $root.Values.controlDatabase.passwordSecret.key | quote }}
        path: password
{{- with $root.Values.controlDatabase.tls.caSecret }}
{{- if .name }}
- name: control-ca
  secret:
    secretName: {{ .name | quote }}
    defaultMode: 0440
    items:
      - key: {{ .key | quote }}
        path: ca.crt
{{- end }}
{{- end }}
{{- range $root.Values.secretFiles }}
- name: {{ printf "secret-%s" .name | trunc 63 | trimSuffix "-" }}
  secret:
    secretName: {{ .secretName | quote }}
    defaultMode: 0440
    {{- with .items }}
    items:
      {{- toYaml . | nindent 6 }}
    {{- end }}
{{- end }}
- name: tmp
  emptyDir:
    sizeLimit: {{ $root.Values.tmpSizeLimit }}
{{- with $root.Values.extraVolumes }}
{{ toYaml . }}
{{- end }}
{{- end -}}

{{/*
checkov skip annotations, present only where the configuration they explain is in force
(checkov reads `checkov.io/skipN: CHECK=reason`; a reason may not contain "="). Takes
(dict "root" $ "resources" RESOURCES). scripts/check-chart lists every skip it meets.
*/}}
{{- define "interlock.checkovSkips" -}}
{{- $v := .root.Values -}}
{{- $skips := list -}}
{{- if not (and .resources.limits .resources.limits.cpu) -}}
{{- $skips = append $skips "CKV_K8S_11=No CPU limit by design: a CFS quota throttles a latency-bound gateway in 100 ms periods (values.yaml, resources)" -}}
{{- end -}}
{{- if not $v.image.digest -}}
{{- $skips = append $skips "CKV_K8S_43=image.digest is empty so the versioned tag (appVersion) is used; set image.digest to pin the image in production" -}}
{{- $skips = append $skips "CKV_K8S_15=image.digest is empty; with a digest set the pull policy does not matter (IfNotPresent spares a registry round trip per pod start)" -}}
{{- end -}}
{{- if $v.redis.enabled -}}
{{- $skips = append $skips "CKV_K8S_35=The gateway takes Redis only as one URL value (rate_limit.redis_url has no file reference) so it comes from a Secret through the environment" -}}
{{- end -}}
{{- if not $v.networkPolicy.enabled -}}
{{- $skips = append $skips "CKV2_K8S_6=networkPolicy.enabled is false: egress to sources is site-specific so the policy is opt-in (ci/everything-enabled.yaml renders one)" -}}
{{- end -}}
{{- range $i, $s := $skips }}
checkov.io/skip{{ add1 $i }}: {{ $s | quote }}
{{- end -}}
{{- end -}}
