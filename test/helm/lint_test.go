package helm_test

import (
	"testing"

	"helm.sh/helm/v4/pkg/action"
	"helm.sh/helm/v4/pkg/chart/v2/lint/support"

	"github.com/dbtune/scratch-operator/test/helm"
)

// `helm lint --strict` finds nothing, not even a warning, with the default values and with those
// that stand for each overlay; without --strict it reports nothing above info either.
func TestLintIsClean(t *testing.T) {
	for _, vals := range []string{
		``,
		`namespace: {create: true}`,
		`nodeAgent: {readAhead: false}`,
		`rbac: {userRoles: {aggregate: false}}`,
		`metrics: {serviceMonitor: {enabled: true}, prometheusRule: {enabled: true}}`,
		`{crds: {install: false}, manager: {replicas: 1}, nodeAgent: {priorityClass: {create: false, name: ""}}}`,
	} {
		for _, strict := range []bool{false, true} {
			lint := action.NewLint()
			lint.Strict = strict
			lint.Namespace = helm.ReleaseNamespace
			result := lint.Run([]string{chartDir(t)}, values(t, vals))
			if result.TotalChartsLinted != 1 {
				t.Errorf("values %q, strict %t: linted %d charts, want 1", vals, strict, result.TotalChartsLinted)
			}
			for _, err := range result.Errors {
				t.Errorf("values %q, strict %t: %v", vals, strict, err)
			}
			for _, m := range result.Messages {
				if m.Severity > support.InfoSev {
					t.Errorf("values %q, strict %t: %s", vals, strict, m)
				}
			}
		}
	}
}
