package helm_test

import (
	"strings"
	"testing"

	"github.com/dbtune/scratch-operator/test/helm"
)

// values.schema.json refuses what `helm install -f` or --set would otherwise ignore or render
// into a broken object, and its message names the value and says what is wrong with it.
func TestSchemaRefusesMistypedValues(t *testing.T) {
	tests := []struct {
		name, values string
		want         []string // in the error message
	}{
		{"misspelled top-level key", `replicaCount: 3`,
			[]string{"additional properties 'replicaCount' not allowed"}},
		{"misspelled nested key", `manager: {replica: 3}`,
			[]string{"/manager", "additional properties 'replica' not allowed"}},
		{"string for a number", `manager: {replicas: "two"}`,
			[]string{"/manager/replicas", "got string, want integer"}},
		{"string for a boolean", `nodeAgent: {readAhead: "no"}`,
			[]string{"/nodeAgent/readAhead", "got string, want boolean"}},
		{"unknown pull policy", `manager: {image: {pullPolicy: Sometimes}}`,
			[]string{"/manager/image/pullPolicy", "Always", "IfNotPresent", "Never"}},
		{"relative host path", `nodeAgent: {probeHostPath: var/lib/probe}`,
			[]string{"/nodeAgent/probeHostPath", "does not match pattern"}},
		{"negative replicas", `manager: {replicas: -1}`,
			[]string{"/manager/replicas", "minimum"}},
		{"toleration with a typo", `nodeAgent: {tolerations: [{operater: Exists}]}`,
			[]string{"/nodeAgent/tolerations/0", "additional properties 'operater' not allowed"}},
		{"map for a list", `imagePullSecrets: {name: regcred}`,
			[]string{"/imagePullSecrets", "got object, want array"}},
		{"priority class created without a name", `nodeAgent: {priorityClass: {name: ""}}`,
			[]string{"/nodeAgent/priorityClass/name", "minLength"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := helm.Render(loadChart(t), values(t, tt.values))
			if err == nil {
				t.Fatalf("values %s rendered; want them refused", tt.values)
			}
			for _, w := range tt.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("values %s: error %q does not say %q", tt.values, err, w)
				}
			}
		})
	}
}
