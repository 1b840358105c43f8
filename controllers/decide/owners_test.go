package decide

import (
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// TestControlledElsewhere covers the classes of owner a StatefulSet can have: none (a person,
// Helm, Argo CD, Flux), owner references that are not the controller, a controller of a foreign
// kind (old and new mariadb-operator groups), a built-in controller, and the opt-in.
func TestControlledElsewhere(t *testing.T) {
	ref := func(apiVersion, kind, name string, controller *bool) metav1.OwnerReference {
		return metav1.OwnerReference{APIVersion: apiVersion, Kind: kind, Name: name, UID: "u", Controller: controller}
	}
	mariadb := ref("k8s.mariadb.com/v1alpha1", "MariaDB", "main", ptr.To(true))
	oldMariadb := ref("mariadb.mmontes.io/v1alpha1", "MariaDB", "legacy", ptr.To(true))
	allowMariaDB := []v1alpha1.ControllerKind{{APIGroup: "k8s.mariadb.com", Kind: "MariaDB"}}
	tests := []struct {
		name    string
		labels  map[string]string
		owners  []metav1.OwnerReference
		allowed []v1alpha1.ControllerKind
		// want is "" when injected, else words the message must hold.
		want []string
	}{
		{name: "no owner"},
		{name: "Argo CD and Flux labels, no owner", labels: map[string]string{
			"app.kubernetes.io/instance": "db", "argocd.argoproj.io/instance": "db",
			"kustomize.toolkit.fluxcd.io/name": "apps", "kustomize.toolkit.fluxcd.io/namespace": "flux-system"}},
		{name: "owner reference that is not the controller", owners: []metav1.OwnerReference{ref("k8s.mariadb.com/v1alpha1", "MariaDB", "main", ptr.To(false))}},
		{name: "owner reference without controller", owners: []metav1.OwnerReference{ref("example.com/v1", "Backup", "b", nil)}},
		{name: "foreign operator", owners: []metav1.OwnerReference{mariadb},
			want: []string{"MariaDB main", "API group k8s.mariadb.com", "{apiGroup: k8s.mariadb.com, kind: MariaDB}"}},
		{name: "old API group of the same operator", owners: []metav1.OwnerReference{oldMariadb}, allowed: allowMariaDB,
			want: []string{"MariaDB legacy", "API group mariadb.mmontes.io"}},
		{name: "built-in controller", owners: []metav1.OwnerReference{ref("apps/v1", "Deployment", "d", ptr.To(true))},
			want: []string{"Deployment d", "API group apps"}},
		{name: "core controller", owners: []metav1.OwnerReference{ref("v1", "ReplicationController", "rc", ptr.To(true))},
			want: []string{"ReplicationController rc", "API group core"}},
		{name: "opted in", owners: []metav1.OwnerReference{mariadb}, allowed: allowMariaDB},
		{name: "opted in for another kind", owners: []metav1.OwnerReference{mariadb},
			allowed: []v1alpha1.ControllerKind{{APIGroup: "k8s.mariadb.com", Kind: "MaxScale"}}, want: []string{"MariaDB main"}},
		{name: "garbage-collection owner beside an allowed controller", allowed: allowMariaDB,
			owners: []metav1.OwnerReference{ref("example.com/v1", "Backup", "b", ptr.To(false)), mariadb}},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			sts := &appsv1.StatefulSet{ObjectMeta: metav1.ObjectMeta{Name: "db", Labels: tt.labels, OwnerReferences: tt.owners}}
			sv := &v1alpha1.ScratchVolume{Spec: v1alpha1.ScratchVolumeSpec{Target: v1alpha1.ScratchTarget{Name: "db", AllowedControllers: tt.allowed}}}
			p := controlledElsewhere(sv, sts)
			switch {
			case tt.want == nil && p != nil:
				t.Fatalf("blocked: %v", p)
			case tt.want != nil && p == nil:
				t.Fatal("injected, want blocked")
			case p != nil:
				if p.Reason != v1alpha1.ReasonControlledByOperator {
					t.Errorf("reason %s", p.Reason)
				}
				for _, w := range tt.want {
					if !strings.Contains(p.Message, w) {
						t.Errorf("message %q does not hold %q", p.Message, w)
					}
				}
			}
		})
	}
}
