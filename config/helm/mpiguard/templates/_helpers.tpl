{{/* The prefix of every object's name: config/default's namePrefix "mpiguard". */}}
{{- define "mpiguard.fullname" -}}
{{- if .Values.fullnameOverride -}}
{{- .Values.fullnameOverride | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- $name := default .Chart.Name .Values.nameOverride -}}
{{- if contains $name .Release.Name -}}
{{- .Release.Name | trunc 40 | trimSuffix "-" -}}
{{- else -}}
{{- printf "%s-%s" .Release.Name $name | trunc 40 | trimSuffix "-" -}}
{{- end -}}
{{- end -}}
{{- end -}}

{{/* Labels of every object: config/default's, and Helm's own. */}}
{{- define "mpiguard.labels" -}}
app.kubernetes.io/name: {{ default .Chart.Name .Values.nameOverride | trunc 63 | trimSuffix "-" }}
app.kubernetes.io/part-of: mpiguard
app.kubernetes.io/instance: {{ .Release.Name }}
app.kubernetes.io/version: {{ .Chart.AppVersion | quote }}
app.kubernetes.io/managed-by: {{ .Release.Service }}
helm.sh/chart: {{ printf "%s-%s" .Chart.Name .Chart.Version | replace "+" "_" }}
{{- end -}}

{{/* The pods' labels, which the Services, the PodDisruptionBudget, the
NetworkPolicy and the topology spread select. */}}
{{- define "mpiguard.selectorLabels" -}}
app.kubernetes.io/component: mpiguard
{{- end -}}

{{- define "mpiguard.webhookService" -}}{{ include "mpiguard.fullname" . }}-webhook-service{{- end -}}
{{- define "mpiguard.serviceAccount" -}}{{ include "mpiguard.fullname" . }}-controller{{- end -}}

{{/* The webhook configurations' CA: an annotation (certManager, openshift)
or a caBundle (selfSigned, existingSecret). */}}
{{- define "mpiguard.webhookAnnotations" -}}
{{- if eq .Values.certificates.mode "certManager" }}
annotations:
  cert-manager.io/inject-ca-from: {{ .Release.Namespace }}/{{ include "mpiguard.fullname" . }}-serving-cert
{{- else if eq .Values.certificates.mode "openshift" }}
annotations:
  service.beta.openshift.io/inject-cabundle: "true"
{{- end }}
{{- end -}}

{{- define "mpiguard.caBundle" -}}
{{- if eq .Values.certificates.mode "selfSigned" }}
caBundle: {{ (include "mpiguard.selfSignedCert" . | fromYaml).ca }}
{{- else if eq .Values.certificates.mode "existingSecret" }}
caBundle: {{ required "certificates.existingSecret.caBundle (base64 PEM of the CA) is required with certificates.mode=existingSecret" .Values.certificates.existingSecret.caBundle }}
{{- end }}
{{- end -}}

{{/* selfSigned: the CA and serving certificate, base64, made once per render
(memoised in .Values, so the Secret and the webhook configurations agree) and
reused from the Secret already in the cluster on upgrades. */}}
{{- define "mpiguard.selfSignedCert" -}}
{{- if not (hasKey .Values.certificates.selfSigned "_generated") -}}
{{- $secret := lookup "v1" "Secret" .Release.Namespace .Values.certificates.secretName -}}
{{- if and $secret (index $secret "data") (index $secret.data "ca.crt") -}}
{{- $_ := set .Values.certificates.selfSigned "_generated" (dict "ca" (index $secret.data "ca.crt") "crt" (index $secret.data "tls.crt") "key" (index $secret.data "tls.key")) -}}
{{- else -}}
{{- $svc := include "mpiguard.webhookService" . -}}
{{- $days := int .Values.certificates.selfSigned.validityDays -}}
{{- $ca := genCA (printf "%s-webhook-ca" (include "mpiguard.fullname" .)) $days -}}
{{- $dns := list (printf "%s.%s.svc" $svc .Release.Namespace) (printf "%s.%s.svc.cluster.local" $svc .Release.Namespace) -}}
{{- $cert := genSignedCert (printf "%s.%s.svc" $svc .Release.Namespace) nil $dns $days $ca -}}
{{- $_ := set .Values.certificates.selfSigned "_generated" (dict "ca" ($ca.Cert | b64enc) "crt" ($cert.Cert | b64enc) "key" ($cert.Key | b64enc)) -}}
{{- end -}}
{{- end -}}
{{- toYaml .Values.certificates.selfSigned._generated -}}
{{- end -}}

{{- define "mpiguard.validateValues" -}}
{{- $modes := list "certManager" "selfSigned" "openshift" "existingSecret" -}}
{{- if not (has .Values.certificates.mode $modes) -}}
{{- fail (printf "certificates.mode is %q; want one of %s" .Values.certificates.mode (join ", " $modes)) -}}
{{- end -}}
{{- if and (eq .Values.certificates.mode "existingSecret") (not .Values.certificates.existingSecret.name) -}}
{{- fail "certificates.existingSecret.name (a kubernetes.io/tls Secret in the release namespace) is required with certificates.mode=existingSecret" -}}
{{- end -}}
{{- if and .Values.clientAuth.enabled (not (or .Values.clientAuth.caSecret .Values.clientAuth.caConfigMap)) -}}
{{- fail "clientAuth.enabled needs clientAuth.caSecret or clientAuth.caConfigMap: the Secret or ConfigMap holding the CA that signs the apiserver's client certificate" -}}
{{- end -}}
{{- if and .Values.clientAuth.caSecret .Values.clientAuth.caConfigMap -}}
{{- fail "clientAuth: set caSecret or caConfigMap, not both" -}}
{{- end -}}
{{- end -}}

{{/* The name of the Secret the webhook server reads. */}}
{{- define "mpiguard.servingSecret" -}}
{{- if eq .Values.certificates.mode "existingSecret" -}}
{{- .Values.certificates.existingSecret.name -}}
{{- else -}}
{{- .Values.certificates.secretName -}}
{{- end -}}
{{- end -}}
