package controllers

// This file classifies the errors the API server answers a write with: a stale write retried at
// once; admission control's refusal, and another field manager's ownership of a field, reported;
// anything else retried with backoff.

import (
	"errors"
	"net/http"
	"strings"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// errCacheBehind says that the cache has not yet seen the controller's own last write to a
// StatefulSet (fleetcache.Written) or to a ScratchVolume's status (fleetcache.Statuses). The
// reconcile is retried instead, like a write that lost a race (staleWrite), and the watch event
// that brings the write into the cache, or cacheBehindRetry, brings the retry.
var errCacheBehind = errors.New("the cache has not yet seen the controller's last write to it")

// cacheBehindRetry is when a reconcile that found the cache behind is retried, should the watch
// event of the write not bring it first.
const cacheBehindRetry = 250 * time.Millisecond

// admissionDenial returns the API server's message when err is admission control refusing a
// write, and "" for any other error. The status code does not tell: a ValidatingAdmissionPolicy
// picks its own (Invalid unless it says otherwise), a webhook too, and Forbidden also comes from
// RBAC, a fault of the installation that stays an error. What does tell are the messages the API
// server composes for the two: "ValidatingAdmissionPolicy 'p' [with binding 'b'] denied request:
// …" and "admission webhook \"w\" denied the request: …".
func admissionDenial(err error) string {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return ""
	}
	msg := status.Status().Message
	byPolicy := strings.Contains(msg, "ValidatingAdmissionPolicy '") && strings.Contains(msg, "' denied request: ")
	byWebhook := strings.Contains(msg, "admission webhook \"") && strings.Contains(msg, "\" denied the request")
	if byPolicy || byWebhook {
		return msg
	}
	return ""
}

// errDeletedMeanwhile says that a write failed because the StatefulSet was deleted (or deleted and
// created again) after the read the decision was made on: a server-side apply to an object that is
// gone tries to create it from our few fields, which the API server refuses as invalid.
var errDeletedMeanwhile = errors.New("the StatefulSet was deleted during the write")

// staleWriteRetry is when a reconcile whose write found the StatefulSet changed or gone is retried.
const staleWriteRetry = 100 * time.Millisecond

// staleWrite reports whether err says the StatefulSet changed between the read the decision was
// made on and the write: a conflict, a JSON patch whose tests (resourceVersion, container names)
// failed, or the object gone (deleted meanwhile). Such a write is retried soon, not reported as a
// failure.
func staleWrite(err error) bool {
	if errors.Is(err, errCacheBehind) || errors.Is(err, errDeletedMeanwhile) || apierrors.IsNotFound(err) {
		return true
	}
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return false
	}
	s := status.Status()
	if s.Reason == metav1.StatusReasonConflict {
		// Unless the conflict is another field manager's ownership: reading again changes nothing.
		return fieldConflict(err) == ""
	}
	if s.Code != http.StatusUnprocessableEntity {
		return false
	}
	// A JSON patch that does not apply (our only ones that can fail are the tests) comes back with
	// the generic text of a 422, the patch library's "testing value … failed" dropped.
	return strings.Contains(s.Message, "testing value") ||
		strings.HasPrefix(s.Message, "the server rejected our request due to an error in our request")
}

// fieldConflict returns the API server's message when err is a server-side apply refused because
// another field manager owns a field of the apply with another value, and "" for any other error.
// The controller never forces such a field (see apply), so the conflict lasts until that manager's
// value goes: it is reported, not retried at once as a stale write is.
func fieldConflict(err error) string {
	var status apierrors.APIStatus
	if err == nil || !errors.As(err, &status) {
		return ""
	}
	s := status.Status()
	if s.Reason != metav1.StatusReasonConflict || s.Details == nil {
		return ""
	}
	for _, c := range s.Details.Causes {
		if c.Type == metav1.CauseTypeFieldManagerConflict {
			return s.Message
		}
	}
	return ""
}

// errOwnedByAnother explains a field conflict to the user: what holds the controller back and
// what ends it.
var errOwnedByAnother = errors.New("another field manager set that field to another value, and the controller never takes a field from another manager: " +
	"set it back to the ScratchVolume's value or remove it, and the next retry writes the ScratchVolume's")

// errRevertsWaiting says a reconcile left reverts for later: they wait for the targets in flight.
var errRevertsWaiting = errors.New("reverts wait for the StatefulSets in flight")

// errMaxInFlight is the manager's refusal of a --max-in-flight it cannot read.
var errMaxInFlight = errors.New("--max-in-flight must be a count of at least 1 or a share from 1% to 100%, such as 25%")
