package readaheadstatus

import (
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

var t0 = time.Date(2026, 3, 1, 12, 0, 0, 0, time.UTC)

type policyOpt func(*v1alpha1.ReadAheadPolicy)

func newPolicy(name string, kib int64, names []string, opts ...policyOpt) *v1alpha1.ReadAheadPolicy {
	p := &v1alpha1.ReadAheadPolicy{
		ObjectMeta: metav1.ObjectMeta{Name: name, CreationTimestamp: metav1.NewTime(t0)},
		Spec:       v1alpha1.ReadAheadPolicySpec{ReadAheadKiB: kib, Mode: v1alpha1.ReadAheadSet},
	}
	for _, n := range names {
		p.Spec.Devices.Names = append(p.Spec.Devices.Names, v1alpha1.DeviceGlob(n))
	}
	for _, o := range opts {
		o(p)
	}
	return p
}

func nodeSelector(sel *metav1.LabelSelector) policyOpt {
	return func(p *v1alpha1.ReadAheadPolicy) { p.Spec.NodeSelector = sel }
}
