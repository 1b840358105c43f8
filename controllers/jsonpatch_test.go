package controllers

import (
	"bytes"
	"encoding/json"
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
)

// BenchmarkStatusChange compares, for a selector's status of 500 targets, the status write's work
// as it is (the two statuses compared a part at a time, the new one encoded whole to be sent)
// with both statuses encoded whole and compared, and with a deep comparison and a merge patch made from the
// last status. "unchanged" is a reconcile that writes nothing, the most common one.
func BenchmarkStatusChange(b *testing.B) {
	status := func(replicas int32) v1alpha1.ScratchVolumeStatus {
		s := v1alpha1.ScratchVolumeStatus{ObservedGeneration: 1, Conditions: []metav1.Condition{{Type: v1alpha1.ConditionReady, Status: metav1.ConditionTrue, Reason: "Ready"}}}
		for i := range 500 {
			s.Targets = append(s.Targets, v1alpha1.ScratchTargetStatus{Name: fmt.Sprintf("db-%04d", i), Container: "mysql", Flavor: v1alpha1.FlavorMySQL,
				Version: "8.4.2", Injected: true, ConfigHash: "5d41402abc4b2a76", Injection: v1alpha1.InjectionArgs, Replicas: replicas,
				TempLocations: []v1alpha1.TempLocation{
					{Data: v1alpha1.TempDataTmpdir, Medium: v1alpha1.TempMediumMemory, Option: "tmpdir", Path: "/var/lib/mysql-tmp"},
					{Data: v1alpha1.TempDataSessionTempTablespaces, Medium: v1alpha1.TempMediumMemory, Option: "innodb_temp_tablespaces_dir", Path: "/var/lib/mysql-tmp/innodb_temp"},
				}})
		}
		return s
	}
	last, next, same := &v1alpha1.ScratchVolume{Status: status(2)}, &v1alpha1.ScratchVolume{Status: status(3)}, &v1alpha1.ScratchVolume{Status: status(2)}
	for _, tc := range []struct {
		name  string
		next  *v1alpha1.ScratchVolume
		write bool
	}{{"changed", next, true}, {"unchanged", same, false}} {
		b.Run("parts/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				changed, err := decide.StatusChanged(&last.Status, &tc.next.Status)
				if err != nil || changed != tc.write {
					b.Fatal(changed, err)
				}
				if changed {
					n, _ := json.Marshal(&tc.next.Status)
					if _, err := replaceStatus(n).Data(tc.next); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("json/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				l, _ := json.Marshal(&last.Status)
				n, _ := json.Marshal(&tc.next.Status)
				if bytes.Equal(l, n) == tc.write {
					b.Fatal("wrong comparison")
				}
				if tc.write {
					if _, err := replaceStatus(n).Data(tc.next); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
		b.Run("deep-equal+merge-patch/"+tc.name, func(b *testing.B) {
			b.ReportAllocs()
			for b.Loop() {
				if equality.Semantic.DeepEqual(last.Status, tc.next.Status) == tc.write {
					b.Fatal("wrong comparison")
				}
				if tc.write {
					if _, err := client.MergeFrom(last).Data(tc.next); err != nil {
						b.Fatal(err)
					}
				}
			}
		})
	}
}
