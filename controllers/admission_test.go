package controllers

import (
	"errors"
	"fmt"
	"net/http"
	"strings"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// TestAdmissionDenial feeds admissionDenial the errors the API server returns, built the way it
// builds them: a refusal by a ValidatingAdmissionPolicy (whatever reason the policy picks) or a
// webhook is a denial to report; RBAC's Forbidden, a failed JSON-patch test and the rest are not.
func TestAdmissionDenial(t *testing.T) {
	sts := schema.GroupResource{Group: "apps", Resource: "statefulsets"}
	policyMsg := "ValidatingAdmissionPolicy 'dbtune-scratch-opt-in' with binding 'dbtune-scratch-opt-in' denied request: StatefulSet db has not opted in"
	// The policy dispatcher wraps its message in admission.NewForbidden, then sets the policy's reason and code.
	byPolicy := func(reason metav1.StatusReason, code int32) error {
		err := apierrors.NewForbidden(sts, "db", errors.New(policyMsg))
		err.ErrStatus.Reason, err.ErrStatus.Code = reason, code
		return err
	}
	webhook := &apierrors.StatusError{ErrStatus: metav1.Status{
		Status: metav1.StatusFailure, Code: http.StatusBadRequest,
		Message: `admission webhook "validate.kyverno.svc" denied the request: resource StatefulSet/ns/db was blocked`,
	}}
	// A server-side apply that another manager's field refuses: the API server's own constructor,
	// as its field manager calls it.
	fieldManagerConflict := fmt.Errorf("failed to apply to StatefulSet ns/db: %w", apierrors.NewApplyConflict([]metav1.StatusCause{{
		Type:    metav1.CauseTypeFieldManagerConflict,
		Message: `conflict with "kubectl-edit" using apps/v1`,
		Field:   `.spec.template.spec.volumes[name="dbtune-scratch-tmp"].emptyDir.sizeLimit`,
	}}, `Apply failed with 1 conflict: conflict with "kubectl-edit" using apps/v1: .spec.template.spec.volumes[name="dbtune-scratch-tmp"].emptyDir.sizeLimit`))
	tests := []struct {
		name   string
		err    error
		denied bool
	}{
		{"nil", nil, false},
		{"policy, reason Forbidden", byPolicy(metav1.StatusReasonForbidden, http.StatusForbidden), true},
		{"policy, default reason Invalid", byPolicy(metav1.StatusReasonInvalid, http.StatusUnprocessableEntity), true},
		{"policy, wrapped by the controller", fmt.Errorf("failed to apply to StatefulSet ns/db: %w", byPolicy(metav1.StatusReasonForbidden, http.StatusForbidden)), true},
		{"webhook", webhook, true},
		{"RBAC", apierrors.NewForbidden(sts, "db", errors.New(`User "system:serviceaccount:dbtune-system:dbtune-scratch-operator" cannot patch resource "statefulsets"`)), false},
		{"JSON patch test failed", apierrors.NewGenericServerResponse(http.StatusUnprocessableEntity, "", schema.GroupResource{}, "", "testing value /metadata/resourceVersion failed", 0, false), false},
		{"conflict", apierrors.NewConflict(sts, "db", errors.New("the object has been modified")), false},
		{"field manager conflict", fieldManagerConflict, false},
		{"deleted meanwhile", fmt.Errorf("failed to patch the containers of StatefulSet ns/db: %w", apierrors.NewNotFound(sts, "db")), false},
		{"not an API error", errors.New("connection refused"), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := admissionDenial(tt.err)
			switch {
			case tt.denied && got == "":
				t.Errorf("admissionDenial(%v) = \"\", want the server's message", tt.err)
			case !tt.denied && got != "":
				t.Errorf("admissionDenial(%v) = %q, want \"\"", tt.err, got)
			}
		})
	}
	for _, tt := range tests {
		want := tt.name == "JSON patch test failed" || tt.name == "conflict" || tt.name == "deleted meanwhile"
		if got := staleWrite(tt.err); got != want {
			t.Errorf("staleWrite(%v) = %v, want %v", tt.err, got, want)
		}
	}
	// Only the field manager conflict is one: it is reported, naming the manager and the field.
	for _, tt := range tests {
		got := fieldConflict(tt.err)
		if want := tt.name == "field manager conflict"; want != (got != "") {
			t.Errorf("fieldConflict(%v) = %q", tt.err, got)
		}
	}
	if got := fieldConflict(fieldManagerConflict); !strings.Contains(got, `"kubectl-edit"`) || !strings.Contains(got, "emptyDir.sizeLimit") {
		t.Errorf("fieldConflict = %q, want the server's message naming the manager and the field", got)
	}
	if got := admissionDenial(byPolicy(metav1.StatusReasonForbidden, http.StatusForbidden)); got != `statefulsets.apps "db" is forbidden: `+policyMsg {
		t.Errorf("the message is %q, want the server's whole message, which names the policy", got)
	}
}
