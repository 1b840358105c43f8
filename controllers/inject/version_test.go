package inject_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// A spec.mysql.version stored before admission bounded its numbers is refused as InvalidSpec,
// with admission's own message, not as a layout problem.
func TestStoredVersionAboveTheBound(t *testing.T) {
	sv := scratchVolume(mysqlSpec(func(m *v1alpha1.MySQLSpec) { m.Flavor, m.Version = v1alpha1.FlavorMySQL, "12345.1" }))
	_, err := inject.NewPlan(sv, mysqlSTS())
	var p *inject.Problem
	if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonInvalidSpec || !strings.HasPrefix(p.Message, v1alpha1.VersionBoundsMessage) {
		t.Fatalf("NewPlan = %v, want an %s problem saying %q", err, v1alpha1.ReasonInvalidSpec, v1alpha1.VersionBoundsMessage)
	}
}
