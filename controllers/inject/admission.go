package inject

// This file holds what the controller adds to a pod to the namespace's admission rules it can
// read: the LimitRanges, which the API server applies to every container of a new pod (defaults
// first, then minimum, maximum and limit-to-request ratio), and the ResourceQuotas, which require
// explicit CPU and memory requests and limits of every container when they track them and refuse
// a pod whose resources the namespace has not got left. A pod the StatefulSet controller cannot
// create is a database without its pod, so what the controller adds is derived to pass these
// rules wherever the database container does, and a change that cannot pass is refused before it
// is written.

import (
	"crypto/sha256"
	"encoding/hex"
	"encoding/json"
	"fmt"
	"sort"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/quantity"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// Namespace is the admission rules of a StatefulSet's namespace that the controller reads.
type Namespace struct {
	LimitRanges []corev1.LimitRange
	Quotas      []corev1.ResourceQuota
}

// The init container's own needs: a shell that creates a few directories. Its request and limit
// are equal, so that any limit-to-request ratio admits them, and never above the database
// container's request, so that the pod's effective request (the larger of its init containers' and
// the sum of the others') never grows.
var (
	initCPU    = resource.MustParse("50m")
	initMemory = resource.MustParse("32Mi")
)

// initResources are the init container's resources in pod, beside the database container db.
// current is the init container the template carries, when it does: it stays as it is while the
// namespace admits it, so that neither an upgrade of the operator nor a policy change that leaves
// it admissible rolls the database.
func (ns Namespace) initResources(pod *corev1.PodSpec, db, current *corev1.Container) corev1.ResourceRequirements {
	if current != nil && ns.admitsContainer(pod, current.Resources) == "" {
		return *current.Resources.DeepCopy()
	}
	want := map[corev1.ResourceName]resource.Quantity{corev1.ResourceCPU: initCPU, corev1.ResourceMemory: initMemory}
	for _, lr := range ns.LimitRanges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			// A resource the rules bound must be set explicitly, as the database container does.
			for _, list := range []corev1.ResourceList{item.Min, item.Max, item.MaxLimitRequestRatio} {
				for name := range list {
					if _, ok := want[name]; !ok {
						want[name] = startingValue(name, db, item)
					}
				}
			}
		}
	}
	res := corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
	for name, q := range want {
		q = capAt(q, db.Resources.Requests, name)
		if pod.Resources != nil {
			q = capAt(q, pod.Resources.Requests, name)
		}
		q = ns.clamp(name, q)
		res.Requests[name], res.Limits[name] = q, q
	}
	return res
}

// startingValue is where the init container's value of a resource the rules bound starts, for a
// resource it has no need of its own for: what the database container asks, else the rule's
// default request, minimum or maximum.
func startingValue(name corev1.ResourceName, db *corev1.Container, item corev1.LimitRangeItem) resource.Quantity {
	for _, list := range []corev1.ResourceList{db.Resources.Requests, item.DefaultRequest, item.Min, item.Max} {
		if q, ok := list[name]; ok {
			return q.DeepCopy()
		}
	}
	return resource.Quantity{}
}

func capAt(q resource.Quantity, list corev1.ResourceList, name corev1.ResourceName) resource.Quantity {
	if bound, ok := list[name]; ok && bound.Cmp(q) < 0 {
		return bound.DeepCopy()
	}
	return q
}

// clamp brings q within every Container rule's minimum and maximum of the resource.
func (ns Namespace) clamp(name corev1.ResourceName, q resource.Quantity) resource.Quantity {
	for _, lr := range ns.LimitRanges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			if lo, ok := item.Min[name]; ok && q.Cmp(lo) < 0 {
				q = lo.DeepCopy()
			}
			if hi, ok := item.Max[name]; ok && q.Cmp(hi) > 0 {
				q = hi.DeepCopy()
			}
		}
	}
	return q
}

// admitsContainer says why the namespace would refuse a container of pod with resources res, as
// the API server does: the LimitRanges' defaults are applied, then their bounds checked, then the
// ResourceQuotas' demand for explicit values. Empty when it admits it.
func (ns Namespace) admitsContainer(pod *corev1.PodSpec, res corev1.ResourceRequirements) string {
	res = ns.defaulted(res)
	for _, lr := range ns.LimitRanges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			if why := checkItem(item, res); why != "" {
				return fmt.Sprintf("LimitRange %s: %s", lr.Name, why)
			}
		}
	}
	for _, q := range ns.Quotas {
		if !quotaCovers(q, pod) {
			continue
		}
		for _, name := range sortedResourceNames(q.Spec.Hard) {
			list, resName, kind := quotaDemand(name, res)
			if resName == "" {
				continue
			}
			if _, ok := list[resName]; !ok {
				return fmt.Sprintf("ResourceQuota %s tracks %s, so every container must set a %s %s", q.Name, name, resName, kind)
			}
		}
	}
	return ""
}

// asAdmitted is container c as the namespace admits it into a pod, for the memory rules of
// accounting: under Validate, with the LimitRanges' defaults filled in, since a container that
// sets no memory limit gets the default one and the volume must fit in that; under Reserve and
// Ignore, as written (Reserve raises only what the container sets).
func (ns Namespace) asAdmitted(c *corev1.Container, accounting v1alpha1.MemoryAccounting) *corev1.Container {
	if accounting == v1alpha1.MemoryReserve || accounting == v1alpha1.MemoryIgnore || len(ns.LimitRanges) == 0 {
		return c
	}
	out := *c
	out.Resources = ns.defaulted(c.Resources)
	return &out
}

// defaulted is res as the LimitRanger admission plugin leaves it: a missing limit takes the rule's
// default, a missing request its default request (the API server has already made a missing
// request equal to a set limit).
func (ns Namespace) defaulted(res corev1.ResourceRequirements) corev1.ResourceRequirements {
	out := *res.DeepCopy()
	for name, q := range out.Limits {
		if _, ok := out.Requests[name]; !ok {
			if out.Requests == nil {
				out.Requests = corev1.ResourceList{}
			}
			out.Requests[name] = q.DeepCopy()
		}
	}
	for _, lr := range ns.LimitRanges {
		for _, item := range lr.Spec.Limits {
			if item.Type != corev1.LimitTypeContainer {
				continue
			}
			fill(&out.Limits, item.Default)
			fill(&out.Requests, item.DefaultRequest)
		}
	}
	return out
}

func fill(list *corev1.ResourceList, defaults corev1.ResourceList) {
	for name, q := range defaults {
		if _, ok := (*list)[name]; ok {
			continue
		}
		if *list == nil {
			*list = corev1.ResourceList{}
		}
		(*list)[name] = q.DeepCopy()
	}
}

// checkItem says how res breaks a Container rule, in the API server's terms; empty when it keeps
// it.
func checkItem(item corev1.LimitRangeItem, res corev1.ResourceRequirements) string {
	for _, name := range sortedResourceNames(item.Min) {
		lo := item.Min[name]
		req, hasReq := res.Requests[name]
		switch {
		case !hasReq:
			return fmt.Sprintf("the minimum %s per container is %s, and no request is set", name, quantity.Exact(lo))
		case req.Cmp(lo) < 0:
			return fmt.Sprintf("the minimum %s per container is %s, and the request is %s", name, quantity.Exact(lo), quantity.Exact(req))
		}
	}
	for _, name := range sortedResourceNames(item.Max) {
		hi := item.Max[name]
		lim, hasLim := res.Limits[name]
		switch {
		case !hasLim:
			return fmt.Sprintf("the maximum %s per container is %s, and no limit is set", name, quantity.Exact(hi))
		case lim.Cmp(hi) > 0:
			return fmt.Sprintf("the maximum %s per container is %s, and the limit is %s", name, quantity.Exact(hi), quantity.Exact(lim))
		}
	}
	for _, name := range sortedResourceNames(item.MaxLimitRequestRatio) {
		ratio := item.MaxLimitRequestRatio[name]
		req, hasReq := res.Requests[name]
		lim, hasLim := res.Limits[name]
		if !hasReq || !hasLim || req.IsZero() {
			return fmt.Sprintf("the %s limit may be at most %s times the request, and the container does not set both", name, ratio.String())
		}
		if float64(lim.MilliValue())/float64(req.MilliValue()) > ratio.AsApproximateFloat64() {
			return fmt.Sprintf("the %s limit may be at most %s times the request, and %s is %.2f times %s",
				name, ratio.String(), quantity.Exact(lim), float64(lim.MilliValue())/float64(req.MilliValue()), quantity.Exact(req))
		}
	}
	return ""
}

// quotaDemand is, for a resource a quota tracks, the list and resource every container must set
// explicitly (requests or limits of CPU or memory), or "" for one that demands nothing.
func quotaDemand(tracked corev1.ResourceName, res corev1.ResourceRequirements) (corev1.ResourceList, corev1.ResourceName, string) {
	switch tracked {
	case corev1.ResourceCPU, corev1.ResourceRequestsCPU:
		return res.Requests, corev1.ResourceCPU, "request"
	case corev1.ResourceMemory, corev1.ResourceRequestsMemory:
		return res.Requests, corev1.ResourceMemory, "request"
	case corev1.ResourceLimitsCPU:
		return res.Limits, corev1.ResourceCPU, "limit"
	case corev1.ResourceLimitsMemory:
		return res.Limits, corev1.ResourceMemory, "limit"
	}
	return nil, "", ""
}

// quotaCovers reports whether quota q counts pods like pod: its scopes are those a database pod
// can be told apart by (Terminating, BestEffort, PriorityClass); a quota with a scope it cannot
// judge is taken not to cover the pod, and the rollout's own check catches what it refuses.
func quotaCovers(q corev1.ResourceQuota, pod *corev1.PodSpec) bool {
	for _, scope := range q.Spec.Scopes {
		if !scopeCovers(corev1.ScopedResourceSelectorRequirement{ScopeName: scope, Operator: corev1.ScopeSelectorOpExists}, pod) {
			return false
		}
	}
	if q.Spec.ScopeSelector != nil {
		for _, req := range q.Spec.ScopeSelector.MatchExpressions {
			if !scopeCovers(req, pod) {
				return false
			}
		}
	}
	return true
}

func scopeCovers(req corev1.ScopedResourceSelectorRequirement, pod *corev1.PodSpec) bool {
	terminating := pod.ActiveDeadlineSeconds != nil && *pod.ActiveDeadlineSeconds >= 0
	switch req.ScopeName {
	case corev1.ResourceQuotaScopeTerminating:
		return terminating
	case corev1.ResourceQuotaScopeNotTerminating:
		return !terminating
	case corev1.ResourceQuotaScopeBestEffort:
		return bestEffort(pod)
	case corev1.ResourceQuotaScopeNotBestEffort:
		return !bestEffort(pod)
	case corev1.ResourceQuotaScopePriorityClass:
		has := pod.PriorityClassName != ""
		switch req.Operator {
		case corev1.ScopeSelectorOpExists:
			return has
		case corev1.ScopeSelectorOpDoesNotExist:
			return !has
		case corev1.ScopeSelectorOpIn:
			return has && contains(req.Values, pod.PriorityClassName)
		case corev1.ScopeSelectorOpNotIn:
			return !has || !contains(req.Values, pod.PriorityClassName)
		}
	}
	return false
}

func bestEffort(pod *corev1.PodSpec) bool {
	if pod.Resources != nil && (len(pod.Resources.Requests) > 0 || len(pod.Resources.Limits) > 0) {
		return false
	}
	for _, list := range [][]corev1.Container{pod.InitContainers, pod.Containers} {
		for _, c := range list {
			if len(c.Resources.Requests) > 0 || len(c.Resources.Limits) > 0 {
				return false
			}
		}
	}
	return true
}

func contains(list []string, s string) bool {
	for _, v := range list {
		if v == s {
			return true
		}
	}
	return false
}

func sortedResourceNames(list corev1.ResourceList) []corev1.ResourceName {
	names := make([]corev1.ResourceName, 0, len(list))
	for name := range list {
		names = append(names, name)
	}
	sort.Slice(names, func(i, j int) bool { return names[i] < names[j] })
	return names
}

// checkReserve refuses a Reserve that the namespace cannot admit: a memory limit above a
// LimitRange's maximum for a container or a pod, or more memory than a ResourceQuota has left for
// the pods the rollout replaces. added is what the write adds per pod to what the template
// carries (zero when it carries the reserve already), to the container's request and limit as it
// sets them (after: its memory request and limit with the reserve, nil where it sets none), and
// to the pod's.
func (ns Namespace) checkReserve(pod *corev1.PodSpec, c *corev1.Container, after ContainerChange, added resource.Quantity, replicas int32) error {
	if added.Sign() <= 0 {
		return nil
	}
	for _, lr := range ns.LimitRanges {
		for _, item := range lr.Spec.Limits {
			hi, ok := item.Max[corev1.ResourceMemory]
			if !ok {
				continue
			}
			switch item.Type {
			case corev1.LimitTypeContainer:
				if after.Limit != nil && after.Limit.Cmp(hi) > 0 {
					return problemf(v1alpha1.ReasonLimitRange,
						"LimitRange %s caps a container's memory limit at %s, and reserving the volume would raise container %s's to %s: raise the LimitRange's maximum, lower spec.size, or set spec.memory.accounting: Validate",
						lr.Name, quantity.Exact(hi), c.Name, quantity.Exact(*after.Limit))
				}
			case corev1.LimitTypePod:
				if total, ok := podMemoryLimit(pod, c.Name, after); ok && total.Cmp(hi) > 0 {
					return problemf(v1alpha1.ReasonLimitRange,
						"LimitRange %s caps a pod's memory limit at %s, and reserving the volume would raise the pod's to %s: raise the LimitRange's maximum, lower spec.size, or set spec.memory.accounting: Validate",
						lr.Name, quantity.Exact(hi), quantity.Exact(total))
				}
			}
		}
	}
	for _, q := range ns.Quotas {
		if !quotaCovers(q, pod) {
			continue
		}
		if err := checkQuota(q, after, added, replicas); err != nil {
			return err
		}
	}
	return nil
}

// checkQuota refuses a reserve of added per pod over replicas pods that quota q has not got left.
func checkQuota(q corev1.ResourceQuota, after ContainerChange, added resource.Quantity, replicas int32) error {
	for _, name := range []corev1.ResourceName{corev1.ResourceRequestsMemory, corev1.ResourceMemory, corev1.ResourceLimitsMemory} {
		hard, ok := q.Status.Hard[name]
		if !ok {
			hard, ok = q.Spec.Hard[name]
		}
		raisesLimit, raisesRequest := after.Limit != nil || after.PodLimit != nil, after.Request != nil || after.PodRequest != nil
		if !ok || (name == corev1.ResourceLimitsMemory && !raisesLimit) || (name != corev1.ResourceLimitsMemory && !raisesRequest) {
			continue
		}
		used := q.Status.Used[name]
		need := added.DeepCopy()
		need.Mul(int64(replicas))
		left := hard.DeepCopy()
		left.Sub(used)
		if left.Cmp(need) < 0 {
			short := need.DeepCopy()
			short.Sub(left)
			return problemf(v1alpha1.ReasonResourceQuota,
				"ResourceQuota %s allows %s of %s and %s are in use: reserving the volume adds %s to each of %d pods (%s), %s more than is left; raise the quota, lower spec.size, or set spec.memory.accounting: Validate",
				q.Name, quantity.Exact(hard), name, quantity.Exact(used), quantity.Exact(added), replicas, quantity.Exact(need), quantity.Exact(short))
		}
	}
	return nil
}

// podMemoryLimit is the pod's memory limit as a LimitRange of type Pod reads it, with the reserve
// after adds: the pod-level limit, or the containers' added up, container name's as after has it; false when some container sets none (the sum is then unbounded,
// and the API server's own check refuses it for the original pod too).
func podMemoryLimit(pod *corev1.PodSpec, name string, after ContainerChange) (resource.Quantity, bool) {
	if after.PodLimit != nil {
		return *after.PodLimit, true
	}
	total := resource.Quantity{}
	for _, c := range pod.Containers {
		lim, ok := c.Resources.Limits[corev1.ResourceMemory]
		if c.Name == name {
			if after.Limit == nil {
				return total, false
			}
			lim, ok = *after.Limit, true
		}
		if !ok {
			return total, false
		}
		total.Add(lim)
	}
	return total, true
}

// reserved is container c's memory request and limit, and pod's, with reserve added to those
// they set.
func reserved(pod *corev1.PodSpec, c *corev1.Container, reserve *resource.Quantity) ContainerChange {
	ch := ContainerChange{Container: c.Name}
	if reserve == nil {
		return ch
	}
	ch.Request, ch.Limit = plus(c.Resources.Requests, *reserve), plus(c.Resources.Limits, *reserve)
	if pod.Resources != nil {
		ch.PodRequest, ch.PodLimit = plus(pod.Resources.Requests, *reserve), plus(pod.Resources.Limits, *reserve)
	}
	return ch
}

// newlyReserved is what a write of reserve adds per pod to what sts's template already reserves
// for sv: the namespace has already admitted the rest.
func newlyReserved(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet, reserve *resource.Quantity) resource.Quantity {
	if reserve == nil {
		return resource.Quantity{}
	}
	added := reserve.DeepCopy()
	if o, ok := readOverrides(&sts.Spec.Template)[sv.Name]; ok {
		if carried, err := resource.ParseQuantity(o.Memory); err == nil {
			added.Sub(carried)
		}
	}
	return added
}

// replicas is the number of pods sts asks for.
func replicas(sts *appsv1.StatefulSet) int32 {
	if sts.Spec.Replicas == nil {
		return 1
	}
	return *sts.Spec.Replicas
}

// Stamp is a short hash of the parts of the rules that planning reads but the quotas' use, which
// moves with every pod of the namespace: equal stamps plan alike, but for a Reserve a quota refused
// (Problem.Rechecked).
func (ns Namespace) Stamp() string {
	if len(ns.LimitRanges) == 0 && len(ns.Quotas) == 0 {
		return ""
	}
	type quota struct {
		Name string
		Spec corev1.ResourceQuotaSpec
		Hard corev1.ResourceList
	}
	content := struct {
		LimitRanges map[string]corev1.LimitRangeSpec
		Quotas      []quota
	}{LimitRanges: map[string]corev1.LimitRangeSpec{}}
	for _, lr := range ns.LimitRanges {
		content.LimitRanges[lr.Name] = lr.Spec
	}
	for _, q := range ns.Quotas {
		content.Quotas = append(content.Quotas, quota{Name: q.Name, Spec: q.Spec, Hard: q.Status.Hard})
	}
	sort.Slice(content.Quotas, func(i, j int) bool { return content.Quotas[i].Name < content.Quotas[j].Name })
	raw, err := json.Marshal(content)
	if err != nil {
		panic(err) // only plain data: cannot fail
	}
	sum := sha256.Sum256(raw)
	return hex.EncodeToString(sum[:])[:16]
}
