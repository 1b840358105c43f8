package main

// The API server's audit log, read for the writes each manager replica sent.

import (
	"bufio"
	"encoding/json"
	"fmt"
	"os"
	"strconv"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// auditEvent is the part of an audit.k8s.io/v1 Event the benchmark reads.
type auditEvent struct {
	Stage string `json:"stage"`
	Verb  string `json:"verb"`
	User  struct {
		Username string `json:"username"`
	} `json:"user"`
	ObjectRef *struct {
		Resource    string `json:"resource"`
		Subresource string `json:"subresource"`
		Namespace   string `json:"namespace"`
		Name        string `json:"name"`
	} `json:"objectRef"`
	ResponseStatus *struct {
		Code int `json:"code"`
	} `json:"responseStatus"`
	RequestReceivedTimestamp metav1.MicroTime `json:"requestReceivedTimestamp"`
}

// write says whether the event is a write to resource itself (not a subresource such as status).
func (e *auditEvent) write(resource string) bool {
	switch e.Verb {
	case "create", "update", "patch", "delete":
	default:
		return false
	}
	return e.Stage == "ResponseComplete" && e.ObjectRef != nil && e.ObjectRef.Resource == resource && e.ObjectRef.Subresource == ""
}

func (e *auditEvent) succeeded() bool {
	return e.ResponseStatus != nil && e.ResponseStatus.Code >= 200 && e.ResponseStatus.Code < 300
}

// auditOffset is the size of the audit log now: where the events of what starts next begin.
func auditOffset(path string) (int64, error) {
	st, err := os.Stat(path)
	if os.IsNotExist(err) {
		return 0, nil
	}
	if err != nil {
		return 0, err
	}
	return st.Size(), nil
}

// readAudit reads the audit log's events from offset on.
func readAudit(path string, offset int64) ([]auditEvent, error) {
	f, err := os.Open(path)
	if err != nil {
		return nil, fmt.Errorf("failed to read the audit log: %w", err)
	}
	defer func() { _ = f.Close() }()
	if _, err := f.Seek(offset, 0); err != nil {
		return nil, err
	}
	var out []auditEvent
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var e auditEvent
		if err := json.Unmarshal(sc.Bytes(), &e); err != nil {
			return nil, fmt.Errorf("audit log %s: %w", path, err)
		}
		out = append(out, e)
	}
	return out, sc.Err()
}

// countFailoverWrites counts the StatefulSet and ConfigMap writes in events by the replicas: those
// of users in killed, of survivor, and of any other user. n is the fleet's size, for the
// StatefulSets never written. It also returns how long after killedAt the survivor's first
// StatefulSet write was received, and whether there was one.
func countFailoverWrites(events []auditEvent, n int, killed map[string]bool, survivor string, killedAt time.Time) (w failoverWrites, first float64, wrote bool) {
	perObject := map[string]int{}
	for i := range events {
		e := &events[i]
		if !failoverUser(e.User.Username) {
			continue
		}
		if e.write("configmaps") && e.succeeded() {
			w.ConfigMapWrites++
		}
		if !e.write("statefulsets") {
			continue
		}
		if !e.succeeded() {
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
