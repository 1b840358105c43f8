package v1alpha1_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	dbtunev1alpha1 "github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func TestScratchVolumeDefaults(t *testing.T) {
	e := testenv.Require(t, env)
	ns := e.Namespace(t)
	cases := []struct {
		name string
		spec dbtunev1alpha1.ScratchVolumeSpec
		want dbtunev1alpha1.ScratchVolumeSpec
	}{{
		name: "minimal",
		spec: dbtunev1alpha1.ScratchVolumeSpec{
			Target: dbtunev1alpha1.ScratchTarget{Name: "db"},
			Size:   resource.MustParse("512Mi"),
		},
		want: dbtunev1alpha1.ScratchVolumeSpec{
			Target:     dbtunev1alpha1.ScratchTarget{Name: "db"},
			Size:       resource.MustParse("512Mi"),
			Purpose:    dbtunev1alpha1.PurposeMySQLTmpdir,
			Memory:     dbtunev1alpha1.MemorySpec{Accounting: dbtunev1alpha1.MemoryValidate},
			LargePages: dbtunev1alpha1.LargePagesWithinSize,
		},
	}, {
		name: "mysql section with a configDir under /etc",
		spec: dbtunev1alpha1.ScratchVolumeSpec{
			Target: dbtunev1alpha1.ScratchTarget{Name: "db"},
			Size:   resource.MustParse("1Gi"),
			MySQL:  &dbtunev1alpha1.MySQLSpec{ConfigDir: "/etc/mysql/conf.d"},
		},
		want: dbtunev1alpha1.ScratchVolumeSpec{
			Target:  dbtunev1alpha1.ScratchTarget{Name: "db"},
			Size:    resource.MustParse("1Gi"),
			Purpose: dbtunev1alpha1.PurposeMySQLTmpdir,
			// Injection and SessionTempTablespaces stay empty: their defaults depend on the image,
			// which only the controller sees (status.targets[].injection and tempLocations).
			MySQL: &dbtunev1alpha1.MySQLSpec{
				ConfigDir:    "/etc/mysql/conf.d",
				InnoDBTmpdir: dbtunev1alpha1.InnoDBTmpdirDisk,
			},
			Memory:     dbtunev1alpha1.MemorySpec{Accounting: dbtunev1alpha1.MemoryValidate},
			LargePages: dbtunev1alpha1.LargePagesWithinSize,
		},
	}, {
		name: "explicit values are kept",
		spec: dbtunev1alpha1.ScratchVolumeSpec{
			Target:     dbtunev1alpha1.ScratchTarget{Selector: &dbtunev1alpha1.LabelSelector{MatchLabels: map[string]dbtunev1alpha1.LabelValue{"app": "db"}}},
			Size:       resource.MustParse("2Gi"),
			Purpose:    dbtunev1alpha1.PurposeGeneric,
			Memory:     dbtunev1alpha1.MemorySpec{Accounting: dbtunev1alpha1.MemoryReserve},
			LargePages: dbtunev1alpha1.LargePagesNever,
		},
		want: dbtunev1alpha1.ScratchVolumeSpec{
			Target:     dbtunev1alpha1.ScratchTarget{Selector: &dbtunev1alpha1.LabelSelector{MatchLabels: map[string]dbtunev1alpha1.LabelValue{"app": "db"}}},
			Size:       resource.MustParse("2Gi"),
			Purpose:    dbtunev1alpha1.PurposeGeneric,
			Memory:     dbtunev1alpha1.MemorySpec{Accounting: dbtunev1alpha1.MemoryReserve},
			LargePages: dbtunev1alpha1.LargePagesNever,
		},
	}}
	for i, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			sv := &dbtunev1alpha1.ScratchVolume{
				ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "defaults-" + string(rune('a'+i))},
				Spec:       tc.spec,
			}
			if err := e.Client.Create(ctx(t), sv); err != nil {
				t.Fatalf("create: %v", err)
			}
			got := &dbtunev1alpha1.ScratchVolume{}
			if err := e.Client.Get(ctx(t), client.ObjectKeyFromObject(sv), got); err != nil {
				t.Fatalf("get: %v", err)
			}
			if diff := cmp.Diff(tc.want, got.Spec, quantityEqual); diff != "" {
				t.Errorf("stored spec differs from the documented defaults (-want +got):\n%s", diff)
			}
		})
	}
}

func TestReadAheadPolicyDefaults(t *testing.T) {
	e := testenv.Require(t, env)
	p := &dbtunev1alpha1.ReadAheadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: "defaults"},
		Spec: dbtunev1alpha1.ReadAheadPolicySpec{
			Devices:      dbtunev1alpha1.DeviceSelector{Names: []dbtunev1alpha1.DeviceGlob{"nvme*n1"}},
			ReadAheadKiB: 4096,
		},
	}
	if err := e.Client.Create(ctx(t), p); err != nil {
		t.Fatalf("create: %v", err)
	}
	t.Cleanup(func() { _ = e.Client.Delete(ctx(t), p) })
	got := &dbtunev1alpha1.ReadAheadPolicy{}
	if err := e.Client.Get(ctx(t), client.ObjectKeyFromObject(p), got); err != nil {
		t.Fatalf("get: %v", err)
	}
	want := dbtunev1alpha1.ReadAheadPolicySpec{
		Devices: dbtunev1alpha1.DeviceSelector{
			Names:        []dbtunev1alpha1.DeviceGlob{"nvme*n1"},
			DeviceMapper: dbtunev1alpha1.DeviceMapperDevice,
		},
		ReadAheadKiB: 4096,
		Mode:         dbtunev1alpha1.ReadAheadSet,
		Priority:     0,
	}
	if diff := cmp.Diff(want, got.Spec); diff != "" {
		t.Errorf("stored spec differs from the documented defaults (-want +got):\n%s", diff)
	}
}

var quantityEqual = cmp.Comparer(func(a, b resource.Quantity) bool { return a.Cmp(b) == 0 })
