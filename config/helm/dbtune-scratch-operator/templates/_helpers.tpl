{{/*
The objects keep config/'s fixed names (dbtune-scratch-operator, dbtune-node-agent, ...), not names
derived from the release: the CRDs, ClusterRoles and PriorityClass are cluster-wide, so one release
per cluster is all there can be, and the docs' kubectl commands stay true for both installs.
*/}}

{{/* Labels on every object's metadata; never in a selector, which cannot change on upgrade. */}}
{{- define "dbtune.labels" -}}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/part-of: dbtune-scratch-operator
{{- end }}

{{- define "dbtune.manager.selectorLabels" -}}
app.kubernetes.io/name: scratch-operator
app.kubernetes.io/component: manager
{{- end }}

{{- define "dbtune.nodeAgent.selectorLabels" -}}
app.kubernetes.io/name: node-agent
app.kubernetes.io/component: node-agent
{{- end }}

{{/* An image reference from {repository, tag} and the chart, whose appVersion is the default tag. */}}
{{- define "dbtune.image" -}}
{{- printf "%s:%s" .image.repository (.image.tag | default .chart.AppVersion) }}
{{- end }}

{{/*
The rules of the document of one kind (ClusterRole or Role) in a file that `make manifests` copies
from config/rbac: the roles are generated from the code's markers, never written here.
*/}}
{{- define "dbtune.generatedRules" -}}
{{- $kind := .kind }}
{{- $found := false }}
{{- range $doc := regexSplit "(?m)^---[ \t]*$" (.root.Files.Get .file) -1 }}
{{- $obj := fromYaml $doc }}
{{- if eq (get $obj "kind") $kind }}
{{- $found = true }}
{{- toYaml $obj.rules }}
{{- end }}
{{- end }}
{{- if not $found }}
{{- fail (printf "%s holds no %s: run make manifests" .file $kind) }}
{{- end }}
{{- end }}
