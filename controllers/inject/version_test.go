package inject_test

import (
	appsv1 "k8s.io/api/apps/v1"

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
	_, err := inject.NewPlan(sv, mysqlSTS(), inject.Namespace{})
	var p *inject.Problem
	if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonInvalidSpec || !strings.HasPrefix(p.Message, v1alpha1.VersionBoundsMessage) {
		t.Fatalf("NewPlan = %v, want an %s problem saying %q", err, v1alpha1.ReasonInvalidSpec, v1alpha1.VersionBoundsMessage)
	}
}

// The Percona Operator for MySQL runs mysqld through its ps-entrypoint.sh, which at every start
// removes the directory the option files name as tmpdir (rm -rfv under set -e). A drop-in that
// puts tmpdir at the RAM volume's mount point would make that removal fail on the busy mount point
// and the container would stop: ConfigFile is refused; Args, which the script does not read, is not.
func TestEntrypointThatRemovesTmpdir(t *testing.T) {
	percona := func() *appsv1.StatefulSet {
		sts := statefulSet("percona/percona-server:8.0.36-28", dataClaim, "/var/lib/mysql")
		sts.Spec.Template.Spec.Containers[0].Command = []string{"/var/lib/mysql/ps-entrypoint.sh"}
		sts.Spec.Template.Spec.Containers[0].Args = []string{"mysqld"}
		return sts
	}
	_, err := inject.NewPlan(scratchVolume(), percona(), inject.Namespace{})
	var p *inject.Problem
	if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonEntrypointRemovesTmpdir ||
		!strings.Contains(p.Message, "ps-entrypoint.sh") || !strings.Contains(p.Message, "spec.mysql.injection: Args") {
		t.Errorf("NewPlan with ConfigFile = %v, want an %s problem naming the script and Args", err, v1alpha1.ReasonEntrypointRemovesTmpdir)
	}
	if _, err := inject.NewPlan(scratchVolume(injection(v1alpha1.InjectionArgs)), percona(), inject.Namespace{}); err != nil {
		t.Errorf("NewPlan with Args = %v, want a plan", err)
	}
	if _, err := inject.NewPlan(scratchVolume(), statefulSet("percona/percona-server:8.0.36-28", dataClaim, "/var/lib/mysql"), inject.Namespace{}); err != nil {
		t.Errorf("NewPlan for the image's own entrypoint = %v, want a plan", err)
	}
}
