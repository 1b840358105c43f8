package inject

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

func TestCheckSpecRefusesWhatTheAPIRefuses(t *testing.T) {
	q := func(s string) *resource.Quantity { v := resource.MustParse(s); return &v }
	tests := []struct {
		name, size string
		headroom   *resource.Quantity
		mount      string
		mysql      *v1alpha1.MySQLSpec
		wantIn     string // empty: accepted
	}{
		{name: "a whole size", size: "512Mi"},
		{name: "the same size spelled in Gi", size: "0.5Gi"},
		{name: "the bounds", size: "16Mi", headroom: q("1Ti")},
		{name: "milli-bytes", size: "512m", wantIn: "spec.size 512m is not a whole number of bytes from 16Mi to 64Gi"},
		{name: "below a byte", size: "5e-1", wantIn: "spec.size"},
		{name: "too small", size: "1Ki", wantIn: "spec.size 1Ki"},
		{name: "too large", size: "65Gi", wantIn: "spec.size 65Gi"},
		{name: "headroom in exabytes", size: "512Mi", headroom: q("8E"), wantIn: "spec.memory.headroom 8E is not a whole number of bytes from 0 to 1Ti"},
		{name: "headroom in milli-bytes", size: "512Mi", headroom: q("256m"), wantIn: "spec.memory.headroom 256m"},
		{name: "negative headroom", size: "512Mi", headroom: q("-1"), wantIn: "spec.memory.headroom -1"},
		{name: "data dir is the default mount path", size: "512Mi", mysql: &v1alpha1.MySQLSpec{DataDir: "/var/lib/mysql-tmp"},
			wantIn: "mount path /var/lib/mysql-tmp overlaps spec.mysql.dataDir /var/lib/mysql-tmp"},
		{name: "data dir below the mount path", size: "512Mi", mount: "/data", mysql: &v1alpha1.MySQLSpec{DataDir: "/data/db"},
			wantIn: "overlaps spec.mysql.dataDir /data/db"},
		{name: "mount path in the config dir", size: "512Mi", mount: "/srv/conf/zz-dbtune-scratch.cnf", mysql: &v1alpha1.MySQLSpec{ConfigDir: "/srv/conf"},
			wantIn: "overlaps spec.mysql.configDir /srv/conf"},
		{name: "a data dir beside the mount path", size: "512Mi", mount: "/data-tmp", mysql: &v1alpha1.MySQLSpec{DataDir: "/data"}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sv := &v1alpha1.ScratchVolume{Spec: v1alpha1.ScratchVolumeSpec{Size: resource.MustParse(tt.size)}}
			sv.Spec.Memory.Headroom = tt.headroom
			sv.Spec.MountPath = v1alpha1.AbsolutePath(tt.mount)
			sv.Spec.MySQL = tt.mysql
			err := checkSpec(sv)
			if tt.wantIn == "" {
				if err != nil {
					t.Fatalf("checkSpec = %v, want nil", err)
				}
				return
			}
			var p *Problem
			if !errors.As(err, &p) || p.Reason != v1alpha1.ReasonInvalidSpec || !strings.Contains(p.Message, tt.wantIn) {
				t.Fatalf("checkSpec = %v, want an %s problem containing %q", err, v1alpha1.ReasonInvalidSpec, tt.wantIn)
			}
		})
	}
}
