package probectl

import (
	"context"
	"errors"
	"fmt"
	"reflect"
	"strings"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/dbtune/scratch-operator/api/conditions"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/node-agent/probe"
)

// maxMessageLength keeps a condition readable in `kubectl describe` however many targets failed.
const maxMessageLength = 2048

// runOutcome is what one run produced: a result (complete, partial or nil) and the run's error.
type runOutcome struct {
	Result *probe.Result
	Err    error
}

// problem is one thing that went wrong, in the words of the probe, with what to do about it.
type problem struct {
	reason, text, advice string
}

// kind is a kind of failure: the sentinel error its errors match with errors.Is, the condition
// reason it gets and what to do about it.
type kind struct {
	sentinel error
	reason   string
	advice   string
}

// kinds are tried in order, since one error may match several: a run stopped by a lost slot is
// also canceled, a workload that a stop interrupted may also have failed on the device, a device
// that may not be opened fails with the EACCES that makes a target not writable, and a target that
// filled up may also refuse the removal of the probe's files. The probe wraps each error where it
// arises with its sentinel (see node-agent/probe/errors.go); the slot pool gives errSlotLost as
// the cause of the probe's context, which the probe wraps in turn.
var kinds = []kind{
	{errSlotLost, v1alpha1.ReasonSlotLost,
		"Another node may have taken the slot; the next run measures again."},
	{context.Canceled, v1alpha1.ReasonCanceled,
		"The agent was stopping; its files were removed and the next run measures again."},
	{probe.ErrTimeLimit, v1alpha1.ReasonTimeLimit,
		"The figures measured before the limit stand; a slow or busy disk needs a longer --probe-timeout or smaller probe sizes."},
	{probe.ErrInvalidOptions, v1alpha1.ReasonInvalidOptions,
		"Fix the agent's probe options."},
	{probe.ErrDeviceUnreadable, v1alpha1.ReasonDeviceUnreadable,
		"Check that the device node exists in the agent's pod and that the agent may open it for reading (it must run privileged)."},
	{probe.ErrTargetNotFound, v1alpha1.ReasonProbeTargetNotFound,
		"Create the directory or fix the --target path; for a hostPath volume, check the path on the node."},
	{probe.ErrNotDirectory, v1alpha1.ReasonTargetNotDirectory,
		"Point --target at a directory."},
	{probe.ErrReadOnly, v1alpha1.ReasonTargetReadOnly,
		"Mount the target read-write into the agent's pod."},
	{probe.ErrNotEnoughSpace, v1alpha1.ReasonNotEnoughSpace,
		"Free space on the target or lower the probe sizes."},
	{probe.ErrTargetFull, v1alpha1.ReasonTargetFull,
		"The filesystem filled up during the run and the probe removed its files; free space, enlarge the tmpfs or lower the probe sizes."},
	{probe.ErrNotWritable, v1alpha1.ReasonTargetNotWritable,
		"Give the agent write access to the directory."},
}

// classify names the kind of err, a failure described by text.
func classify(text string, err error) problem {
	for _, k := range kinds {
		if errors.Is(err, k.sentinel) {
			return problem{reason: k.reason, text: text, advice: k.advice}
		}
	}
	return problem{reason: v1alpha1.ReasonProbeFailed, text: text}
}

// joinType is the type of errors.Join's errors.
var joinType = reflect.TypeOf(errors.Join(errors.New("")))

// runProblems classifies a run's error: one problem per error it joins (errors.Join, also under
// wrappers such as "refusing to start the probe run: " and nested), each classified on its own.
func runProblems(err error) []problem {
	var ps []problem
	for _, p := range splitJoined(err) {
		if text := strings.TrimSpace(p.text); text != "" {
			ps = append(ps, classify(text, p.err))
		}
	}
	return ps
}

// part is one error of a join, with the text it has in the joined message.
type part struct {
	text string
	err  error
}

// splitJoined lists the errors joined in err. A joined message has one line per error, and the
// wrappers around the join prefix the first line: that line keeps their prefix, so that the parts
// read as the message does. An error that joins nothing is one part. Text serves only the
// message here; each part is classified by its error.
func splitJoined(err error) []part {
	prefix := ""
	for e := err; e != nil; {
		if reflect.TypeOf(e) == joinType {
			var parts []part
			for _, inner := range e.(interface{ Unwrap() []error }).Unwrap() {
				parts = append(parts, splitJoined(inner)...)
			}
			if len(parts) > 0 {
				parts[0].text = prefix + parts[0].text
			}
			return parts
		}
		w, ok := e.(interface{ Unwrap() error })
		if !ok {
			break
		}
		inner := w.Unwrap()
		if inner == nil || !strings.HasSuffix(e.Error(), inner.Error()) {
			break // a wrapper that rewords its error: its text is not the join's
		}
		prefix += strings.TrimSuffix(e.Error(), inner.Error())
		e = inner
	}
	return []part{{text: err.Error(), err: err}}
}

// verdict sums up a run for the conditions.
type verdict struct {
	problems []problem
	// complete and partial name the targets measured completely and in part.
	complete, partial []string
	total             int
	duration          time.Duration
}

func judge(o runOutcome) verdict {
	var v verdict
	if o.Err != nil {
		v.problems = runProblems(o.Err)
	}
	if o.Result == nil {
		return v
	}
	v.total = len(o.Result.Targets)
	v.duration = time.Duration(o.Result.DurationMilliseconds) * time.Millisecond
	for i := range o.Result.Targets {
		t := &o.Result.Targets[i]
		switch {
		case t.Error == "":
			v.complete = append(v.complete, t.Name)
		case measured(t):
			v.partial = append(v.partial, t.Name)
		}
		// A target the run did not reach only repeats the run's own error, already listed.
		if err := targetErr(t); err != nil && (o.Err == nil || !errors.Is(err, probe.ErrNotProbed)) {
			v.problems = append(v.problems, classify(fmt.Sprintf("target %s (%s): %s", t.Name, t.Path, t.Error), err))
		}
	}
	return v
}

// targetErr is why a target was not probed completely, or nil. A result without the typed error
// (read back from JSON) has only the text, which is of no known kind.
func targetErr(t *probe.TargetResult) error {
	switch {
	case t.Error == "":
		return nil
	case t.Err != nil:
		return t.Err
	}
	return errors.New(t.Error)
}

// measured reports whether a target has at least one figure.
func measured(t *probe.TargetResult) bool {
	return t.SequentialWrite != nil || t.ColdRead != nil || t.DirectWrite != nil || len(t.FileChurn) > 0 ||
		len(t.TempFiles) > 0 || len(t.LargePageTempFiles) > 0 || t.Fdatasync != nil || t.DeviceRead != nil
}

func (v *verdict) measuredAny() bool { return len(v.complete)+len(v.partial) > 0 }

func (v *verdict) probed(prev *v1alpha1.NodeIOProfileStatus) metav1.Condition {
	c := metav1.Condition{Type: v1alpha1.ConditionProbed, Status: metav1.ConditionTrue}
	switch {
	case len(v.problems) == 0 && len(v.complete) == v.total:
		c.Reason = v1alpha1.ReasonProbed
		c.Message = fmt.Sprintf("Measured %s in %s.", joinNames(v.complete), v.duration)
	case v.measuredAny():
		c.Reason = v1alpha1.ReasonPartiallyProbed
		c.Message = fmt.Sprintf("Measured %s in %s; the Degraded condition says what is missing.", v.coverage(), v.duration)
	default:
		c.Status, c.Reason = metav1.ConditionFalse, v.firstReason()
		c.Message = "Nothing was measured: " + summarize(v.problems)
		if prev.LastRunTime != nil {
			c.Message += fmt.Sprintf(" The figures of the run that finished at %s are kept.", prev.LastRunTime.UTC().Format(time.RFC3339))
		}
	}
	c.Message = conditions.Cut(c.Message, maxMessageLength)
	return c
}

func (v *verdict) degraded() metav1.Condition {
	if len(v.problems) == 0 {
		return metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionFalse,
			Reason: v1alpha1.ReasonAllTargetsMeasured, Message: "Every target was measured completely."}
	}
	return metav1.Condition{Type: v1alpha1.ConditionDegraded, Status: metav1.ConditionTrue,
		Reason: v.firstReason(), Message: conditions.Cut(summarize(v.problems), maxMessageLength)}
}

func (v *verdict) firstReason() string {
	if len(v.problems) == 0 {
		return v1alpha1.ReasonProbeFailed
	}
	return v.problems[0].reason
}

// coverage lists which targets are complete and which are not ("tmpfs completely, disk in part").
func (v *verdict) coverage() string {
	var parts []string
	if len(v.complete) > 0 {
		parts = append(parts, joinNames(v.complete)+" completely")
	}
	if len(v.partial) > 0 {
		parts = append(parts, joinNames(v.partial)+" in part")
	}
	return strings.Join(parts, " and ")
}

func joinNames(names []string) string {
	switch len(names) {
	case 0:
		return "no target"
	case 1:
		return names[0]
	}
	return strings.Join(names[:len(names)-1], ", ") + " and " + names[len(names)-1]
}

// summarize turns problems into sentences, each followed once by what to do about its kind.
func summarize(ps []problem) string {
	advised := map[string]bool{}
	sentences := make([]string, 0, 2*len(ps))
	for _, p := range ps {
		sentences = append(sentences, sentence(p.text))
		if p.advice != "" && !advised[p.reason] {
			advised[p.reason] = true
			sentences = append(sentences, p.advice)
		}
	}
	return strings.Join(sentences, " ")
}

func sentence(s string) string {
	if s == "" {
		return s
	}
	s = strings.ToUpper(s[:1]) + s[1:]
	if !strings.HasSuffix(s, ".") {
		s += "."
	}
	return s
}

// statusAfterRun is the agent's part of the status once a run is over. A run that measured
// something replaces every figure (a target that failed keeps its partial figures and its error);
// a run that measured nothing leaves the previous run's figures and lastRunTime in place, and only
// the conditions tell what happened.
func statusAfterRun(prev v1alpha1.NodeIOProfileStatus, o runOutcome, now time.Time) v1alpha1.NodeIOProfileStatus {
	st := withoutRetiredFigures(ownedStatus(prev))
	v := judge(o)
	if v.measuredAny() {
		res := o.Result
		st.Kernel = res.Kernel
		st.FreePageReporting = res.FreePageReporting
		st.TransparentHugePages = convertPtr(res.TransparentHugePages, transparentHugePages)
		finish := metav1.NewTime(res.FinishTime).Rfc3339Copy()
		st.LastRunTime = &finish
		st.LastRunDurationMilliseconds = res.DurationMilliseconds
		st.Targets = convertTargets(res.Targets)
		st.Comparison = convertPtr(res.Comparison, comparison)
		setDeprecatedSpeedup(&st, res.Comparison)
	}
	setCondition(&st.Conditions, v.probed(&prev), now)
	setCondition(&st.Conditions, v.degraded(), now)
	return st
}

// statusWhileWaiting says that the node waits for a probe slot. Probed stays True when the figures
// of an earlier run are there: they are still the node's latest measurement.
func statusWhileWaiting(prev v1alpha1.NodeIOProfileStatus, message string, now time.Time) v1alpha1.NodeIOProfileStatus {
	st := withoutRetiredFigures(ownedStatus(prev))
	status := metav1.ConditionUnknown
	if meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionProbed) {
		status = metav1.ConditionTrue
	}
	setCondition(&st.Conditions, metav1.Condition{Type: v1alpha1.ConditionProbed, Status: status,
		Reason: v1alpha1.ReasonWaitingForSlot, Message: conditions.Cut(message, maxMessageLength)}, now)
	return st
}

// ownedStatus is the part of a status the probe side of the agent writes: everything but the
// read-ahead list and the ReadAheadApplied condition, which belong to the read-ahead side.
func ownedStatus(s v1alpha1.NodeIOProfileStatus) v1alpha1.NodeIOProfileStatus {
	out := *s.DeepCopy()
	out.ReadAhead = nil
	out.Conditions = nil
	for _, c := range s.Conditions {
		if c.Type == v1alpha1.ConditionProbed || c.Type == v1alpha1.ConditionDegraded {
			out.Conditions = append(out.Conditions, *c.DeepCopy())
		}
	}
	return out
}

// withoutRetiredFigures drops what an older agent wrote and this one no longer publishes: the
// deprecated speedup's sequentialWrite and fdatasync, which compared with tmpfs's no-op fdatasync.
// Applying the status without them removes them from the object, so they do not outlive the
// upgrade until the next run that measures something.
//
//nolint:staticcheck // cleans up the deprecated field
func withoutRetiredFigures(s v1alpha1.NodeIOProfileStatus) v1alpha1.NodeIOProfileStatus {
	if s.Speedup != nil {
		kept := *s.Speedup
		kept.SequentialWrite, kept.Fdatasync = "", ""
		s.Speedup = &kept
	}
	return s
}

// setCondition keeps lastTransitionTime when the status does not change, and otherwise sets it to
// now at the second, the precision the API server stores.
func setCondition(conds *[]metav1.Condition, c metav1.Condition, now time.Time) {
	c.LastTransitionTime = metav1.NewTime(now).Rfc3339Copy()
	meta.SetStatusCondition(conds, c)
}

func convertTargets(in []probe.TargetResult) []v1alpha1.ProbeTargetResult {
	out := make([]v1alpha1.ProbeTargetResult, 0, len(in))
	for i := range in {
		out = append(out, convertTarget(&in[i]))
	}
	return out
}

// convertTarget copies one result into the API type. The probe's types have the API's fields, so
// most of them convert directly: a field added on one side and not the other stops compilation
// here rather than being dropped silently.
func convertTarget(t *probe.TargetResult) v1alpha1.ProbeTargetResult {
	prov := v1alpha1.StorageProvenance(t.Provenance)
	out := v1alpha1.ProbeTargetResult{
		Name: t.Name, Path: t.Path, Kind: v1alpha1.TargetKind(t.Kind), Error: t.Error,
		Provenance:      *prov.DeepCopy(),
		SequentialWrite: convertPtr(t.SequentialWrite, sequentialWrite),
		DirectWrite:     convertPtr(t.DirectWrite, throughput),
		ColdRead:        convertPtr(t.ColdRead, throughput),
		DeviceRead:      convertPtr(t.DeviceRead, throughput),
		Fdatasync:       convertPtr(t.Fdatasync, fdatasync),
	}
	for _, c := range t.FileChurn {
		out.FileChurn = append(out.FileChurn, v1alpha1.FileChurnResult(c))
	}
	out.TempFiles = tempFiles(t.TempFiles)
	out.LargePageTempFiles = tempFiles(t.LargePageTempFiles)
	return out
}

func tempFiles(in []probe.TempFileResult) []v1alpha1.TempFileResult {
	if len(in) == 0 {
		return nil
	}
	out := make([]v1alpha1.TempFileResult, 0, len(in))
	for _, r := range in {
		out = append(out, v1alpha1.TempFileResult(r))
	}
	return out
}

func transparentHugePages(p probe.TransparentHugePages) v1alpha1.TransparentHugePages {
	return v1alpha1.TransparentHugePages(p)
}

func sequentialWrite(w probe.SequentialWriteResult) v1alpha1.SequentialWriteResult {
	return v1alpha1.SequentialWriteResult(w)
}

func throughput(r probe.ThroughputResult) v1alpha1.ThroughputResult {
	return v1alpha1.ThroughputResult(r)
}

func fdatasync(f probe.FdatasyncResult) v1alpha1.FdatasyncResult {
	out := v1alpha1.FdatasyncResult{WriteSizeBytes: f.WriteSizeBytes, Samples: f.Samples,
		P50Microseconds: f.P50Microseconds, P99Microseconds: f.P99Microseconds}
	for _, b := range f.Buckets {
		out.Buckets = append(out.Buckets, v1alpha1.HistogramBucket(b))
	}
	return out
}

func comparison(c probe.Comparison) v1alpha1.TmpfsDiskComparison {
	return v1alpha1.TmpfsDiskComparison(c)
}

// setDeprecatedSpeedup fills the former comparison with the figures it still carries for one
// release: those of c that compare no fdatasync.
//
//nolint:staticcheck // the deprecated field is published for one more release
func setDeprecatedSpeedup(st *v1alpha1.NodeIOProfileStatus, c *probe.Comparison) {
	st.Speedup = nil
	if c != nil {
		st.Speedup = &v1alpha1.Speedup{TmpfsTarget: c.TmpfsTarget, DiskTarget: c.DiskTarget,
			ColdRead: c.ColdReadRatio, SmallFiles: c.SmallFileCreateRatio}
	}
}

func convertPtr[T, U any](p *T, f func(T) U) *U {
	if p == nil {
		return nil
	}
	u := f(*p)
	return &u
}
