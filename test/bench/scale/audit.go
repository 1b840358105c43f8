package main

// The API server's audit log, read for the writes each manager replica sent.

import (
	"strconv"
	"time"

	"github.com/dbtune/scratch-operator/test/localcluster"
)

// isWrite says whether the event is a completed write to resource itself (not a subresource such
// as status).
func isWrite(e *localcluster.AuditEvent, resource string) bool {
	switch e.Verb {
	case "create", "update", "patch", "delete":
	default:
		return false
	}
	return e.Stage == "ResponseComplete" && e.ObjectRef != nil && e.ObjectRef.Resource == resource && e.ObjectRef.Subresource == ""
}

func succeeded(e *localcluster.AuditEvent) bool {
	return e.ResponseStatus != nil && e.ResponseStatus.Code >= 200 && e.ResponseStatus.Code < 300
}

// countFailoverWrites counts the StatefulSet and ConfigMap writes in events by the replicas: those
// of users in killed, of survivor, and of any other user. n is the fleet's size, for the
// StatefulSets never written. It also returns how long after killedAt the survivor's first
// StatefulSet write was received, and whether there was one.
func countFailoverWrites(events []localcluster.AuditEvent, n int, killed map[string]bool, survivor string, killedAt time.Time) (w failoverWrites, first float64, wrote bool) {
	perObject := map[string]int{}
	for i := range events {
		e := &events[i]
		if !failoverUser(e.User.Username) {
			continue
		}
		if isWrite(e, "configmaps") && succeeded(e) {
			w.ConfigMapWrites++
		}
		if !isWrite(e, "statefulsets") {
			continue
		}
		if !succeeded(e) {
			if w.Failed == nil {
				w.Failed = map[string]int{}
			}
			code := "no response"
			if e.ResponseStatus != nil {
				code = strconv.Itoa(e.ResponseStatus.Code)
			}
			w.Failed[code]++
			continue
		}
		perObject[e.ObjectRef.Namespace+"/"+e.ObjectRef.Name]++
		switch user := e.User.Username; {
		case killed[user]:
			w.ByKilled++
		case user == survivor:
			w.BySurvivor++
			if at := e.RequestReceivedTimestamp.Sub(killedAt).Seconds(); !wrote || at < first {
				first, wrote = at, true
			}
		default:
			w.ByOthers++
		}
	}
	hist := []int{max(0, n-len(perObject))}
	for _, k := range perObject {
		for len(hist) <= k {
			hist = append(hist, 0)
		}
		hist[k]++
	}
	w.StatefulSetsByWrites = hist
	return w, first, wrote
}

func failoverUser(name string) bool {
	for _, u := range failoverUsers {
		if u == name {
			return true
		}
	}
	return false
}
