{{/* The image of the scheduler and the agent. */}}
{{- define "topogang.image" -}}
{{ .Values.image.repository }}:{{ .Values.image.tag | default .Chart.AppVersion }}
{{- end -}}

{{/* Labels of every object: manifests/' labels, and Helm's. */}}
{{- define "topogang.helmLabels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service | quote }}
app.kubernetes.io/instance: {{ .Release.Name | quote }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
{{- end -}}

{{/* The --gang-sources flag names of the sources set in .Values.gangSources. */}}
{{- define "topogang.gangSources" -}}
{{- $s := .Values.gangSources -}}
{{- $names := list -}}
{{- if $s.upstream }}{{ $names = append $names "upstream" }}{{ end -}}
{{- if $s.schedulerPlugins }}{{ $names = append $names "scheduler-plugins" }}{{ end -}}
{{- if $s.volcano }}{{ $names = append $names "volcano" }}{{ end -}}
{{- if $s.kai }}{{ $names = append $names "kai" }}{{ end -}}
{{- if $s.job }}{{ $names = append $names "job" }}{{ end -}}
{{- if $s.jobset }}{{ $names = append $names "jobset" }}{{ end -}}
{{- if $s.lws }}{{ $names = append $names "lws" }}{{ end -}}
{{- if $s.pytorchjob }}{{ $names = append $names "pytorchjob" }}{{ end -}}
{{- if $s.mpijob }}{{ $names = append $names "mpijob" }}{{ end -}}
{{- if $s.trainjob }}{{ $names = append $names "trainjob" }}{{ end -}}
{{- if eq (len $names) 10 }}all{{ else if eq (len $names) 0 }}none{{ else }}{{ join "," $names }}{{ end -}}
{{- end -}}
