package inject

import (
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/quantity"
	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/mysql"
)

// memoryBudget decides the memory side of an injection. tmpfs pages are charged to the memory cgroup
// of the container that writes them and stay charged across container restarts, so the scratch
// volume competes with the database for the container's limit.
//
// Validate requires limit >= size + innodb_buffer_pool_size (when set in args) + temptable_max_ram
// (as the args set it, or the server's default on MySQL and Percona 8.0 and later: a GROUP BY held
// in TempTable memory is charged to the container as surely as the volume is) + headroom, of the
// container's limit and of what the pod-level limit (KEP-2837) leaves beside the other running
// containers, whichever binds first: the container's cgroup sits inside the pod's, and both
// charge the same pages. Reserve returns the size to add to the memory request and limit of the
// container and of the pod, where each sets them; Ignore only says what it skipped, and when the
// kubelet makes the volume smaller than spec.size.
//
// What can land on the volume is counted in full, as spec.size: the kubelet caps the tmpfs at its
// sizeLimit, and everything the server writes there — sort files, Aria/MyISAM temporary tables,
// the session temporary tablespaces (MySQL 8.0.13+, unless kept on disk), the TempTable engine's
// memory-mapped overflow files (up to temptable_max_mmap: 1GiB by default from 8.0.23, 0 = none
// by default on 8.4) — shares that one cap, whatever tmp_table_size, temptable_max_ram or
// temptable_max_mmap say. The server's own memory beside it is the buffer pool, the in-memory
// internal temporary tables (each up to tmp_table_size; all TempTable ones together up to
// temptable_max_ram, 1GiB by default, on 8.4 3% of the machine's memory within 1GiB to 4GiB) and
// per-connection buffers: the two large ones are counted when the args set them, the rest is the
// headroom's to cover.
func memoryBudget(sv *v1alpha1.ScratchVolume, pod *corev1.PodSpec, c *corev1.Container) (reserve *resource.Quantity, notes []Note, err error) {
	size := sv.Spec.Size.DeepCopy()
	podLimit, podHasLimit := podLevel(pod, true)
	switch sv.Spec.Memory.Accounting {
	case v1alpha1.MemoryReserve:
		_, hasReq := c.Resources.Requests[corev1.ResourceMemory]
		_, hasLim := c.Resources.Limits[corev1.ResourceMemory]
		_, podHasReq := podLevel(pod, false)
		if !hasReq && !hasLim && !podHasReq && !podHasLimit {
			return nil, []Note{{Reason: v1alpha1.ReasonNoMemoryLimit, Message: fmt.Sprintf(
				"neither container %s nor the pod sets a memory request or limit, so there is nothing to reserve the %s in; set them, and the volume is added to both",
				c.Name, quantity.Exact(size))}}, nil
		}
		return &size, []Note{{Reason: v1alpha1.ReasonMemoryReserved, Message: fmt.Sprintf(
			"%s added to the memory request and limit of %s", quantity.Exact(size), reservedIn(c, hasReq || hasLim, podHasReq || podHasLimit))}}, nil
	case v1alpha1.MemoryIgnore:
		notes = []Note{{Reason: v1alpha1.ReasonMemoryNotAccounted, Message: fmt.Sprintf(
			"memory accounting is off: up to %s of tmpfs pages count against container %s's memory limit", quantity.Exact(size), c.Name)}}
		if n := smallerVolume(sv, pod); n != nil {
			notes = append(notes, *n)
		}
		return nil, notes, nil
	}
	limit, hasLimit := c.Resources.Limits[corev1.ResourceMemory]
	if !hasLimit && !podHasLimit {
		return nil, []Note{{Reason: v1alpha1.ReasonNoMemoryLimit, Message: fmt.Sprintf(
			"neither container %s nor the pod has a memory limit, so nothing bounds tmpfs plus the database; set a limit, or spec.memory.accounting: Reserve",
			c.Name)}}, nil
	}
	need, breakdown, err := memoryNeed(sv, c)
	if err != nil {
		return nil, nil, err
	}
	if hasLimit && limit.Cmp(need) < 0 {
		short := need.DeepCopy()
		short.Sub(limit)
		return nil, nil, problemf(v1alpha1.ReasonMemoryBudget,
			"container %s has a %s memory limit but needs at least %s (%s): raise the limit by %s, lower spec.size, or set spec.memory.accounting: Reserve",
			c.Name, quantity.Exact(limit), quantity.Exact(need), breakdown, quantity.Exact(short))
	}
	covered := fmt.Sprintf("container %s's %s memory limit covers %s (%s)", c.Name, quantity.Exact(limit), quantity.Exact(need), breakdown)
	if podHasLimit {
		beside, others := besideIn(pod, c.Name)
		room := podLimit.DeepCopy()
		room.Sub(beside)
		if room.Cmp(need) < 0 {
			short := need.DeepCopy()
			short.Sub(room)
			return nil, nil, problemf(v1alpha1.ReasonMemoryBudget,
				"the pod's %s memory limit leaves container %s %s%s, but it needs at least %s (%s): raise the pod's limit by %s, lower spec.size, or set spec.memory.accounting: Reserve",
				quantity.Exact(podLimit), c.Name, quantity.Exact(room), others, quantity.Exact(need), breakdown, quantity.Exact(short))
		}
		if !hasLimit {
			covered = fmt.Sprintf("the pod's %s memory limit leaves container %s %s%s, which covers %s (%s)",
				quantity.Exact(podLimit), c.Name, quantity.Exact(room), others, quantity.Exact(need), breakdown)
		}
	}
	return nil, []Note{{Reason: v1alpha1.ReasonMemoryBudgetCovered, Message: covered}}, nil
}

// MemoryRoom is the memory the volume and the database in container c of pod share under the
// limits, the container's and what the pod-level limit leaves beside the other running
// containers, whichever is smaller; false when neither is set.
func MemoryRoom(pod *corev1.PodSpec, c *corev1.Container) (resource.Quantity, bool) {
	room, ok := c.Resources.Limits[corev1.ResourceMemory]
	if podLimit, podOK := podLevel(pod, true); podOK {
		beside, _ := besideIn(pod, c.Name)
		podLimit.Sub(beside)
		if !ok || podLimit.Cmp(room) < 0 {
			room, ok = podLimit, true
		}
	}
	return room, ok
}

// podLevel is the pod-level memory limit (or request) of pod, when it sets one.
func podLevel(pod *corev1.PodSpec, limit bool) (resource.Quantity, bool) {
	if pod.Resources == nil {
		return resource.Quantity{}, false
	}
	list := pod.Resources.Requests
	if limit {
		list = pod.Resources.Limits
	}
	q, ok := list[corev1.ResourceMemory]
	return q, ok
}

// reservedIn names where a reserve goes: the container's request and limit where it sets them,
// and the pod's, which must hold the containers' (the API server refuses a container limit above
// the pod's).
func reservedIn(c *corev1.Container, container, pod bool) string {
	switch {
	case container && pod:
		return "container " + c.Name + " and of the pod"
	case pod:
		return "the pod (container " + c.Name + " sets none of its own)"
	}
	return "container " + c.Name
}

// besideIn is the memory the other containers that run beside the database container in pod may
// take from the pod's limit: the other containers' and the native sidecars' (init containers that
// keep running) limits, or requests where they set no limit, with a readable account. Init
// containers that finish before the database starts take nothing from it.
func besideIn(pod *corev1.PodSpec, name string) (resource.Quantity, string) {
	total := resource.Quantity{}
	var parts []string
	add := func(c corev1.Container) {
		q, ok := c.Resources.Limits[corev1.ResourceMemory]
		kind := "limit"
		if !ok {
			q, ok = c.Resources.Requests[corev1.ResourceMemory]
			kind = "request"
		}
		if !ok {
			parts = append(parts, c.Name+" (no memory set: counted as nothing)")
			return
		}
		total.Add(q)
		parts = append(parts, fmt.Sprintf("%s (%s %s)", c.Name, kind, quantity.Exact(q)))
	}
	for _, c := range pod.InitContainers {
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			add(c)
		}
	}
	for _, c := range pod.Containers {
		if c.Name != name {
			add(c)
		}
	}
	if len(parts) == 0 {
		return total, ""
	}
	return total, " beside " + strings.Join(parts, ", ")
}

// smallerVolume notes a volume the kubelet makes smaller than spec.size: it sizes a memory
// emptyDir to the smaller of its sizeLimit and the pod's memory limit (the pod-level limit, or
// the containers' when every one sets one), so a pod whose limit is below spec.size gets a tmpfs
// of its limit. Under Validate and Reserve the limit always holds the volume.
func smallerVolume(sv *v1alpha1.ScratchVolume, pod *corev1.PodSpec) *Note {
	limit, ok := podMemoryLimitForTmpfs(pod)
	if !ok || limit.Cmp(sv.Spec.Size) >= 0 {
		return nil
	}
	return &Note{Reason: v1alpha1.ReasonVolumeSmallerThanSize, Message: fmt.Sprintf(
		"the kubelet sizes the RAM volume to the pod's %s memory limit, smaller than spec.size %s: the database can write at most %s there",
		quantity.Exact(limit), quantity.Exact(sv.Spec.Size), quantity.Exact(limit))}
}

// podMemoryLimitForTmpfs is the pod's memory limit as the kubelet reads it for a memory emptyDir
// and the pod's cgroup: the pod-level limit, else — when every container sets one — the larger of
// the running containers' sum (native sidecars included) and the largest init container's limit
// with the sidecars started before it.
func podMemoryLimitForTmpfs(pod *corev1.PodSpec) (resource.Quantity, bool) {
	if q, ok := podLevel(pod, true); ok {
		return q, true
	}
	running, sidecars, initMax := resource.Quantity{}, resource.Quantity{}, resource.Quantity{}
	for _, c := range pod.InitContainers {
		q, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			return resource.Quantity{}, false
		}
		if c.RestartPolicy != nil && *c.RestartPolicy == corev1.ContainerRestartPolicyAlways {
			sidecars.Add(q)
			continue
		}
		q.Add(sidecars)
		if q.Cmp(initMax) > 0 {
			initMax = q
		}
	}
	for _, c := range pod.Containers {
		q, ok := c.Resources.Limits[corev1.ResourceMemory]
		if !ok {
			return resource.Quantity{}, false
		}
		running.Add(q)
	}
	running.Add(sidecars)
	if initMax.Cmp(running) > 0 {
		return initMax, true
	}
	return running, true
}

// MemoryNeed is the memory limit container c needs under accounting Validate for a volume of
// sv's size: the figure memoryBudget checks the limit against.
func MemoryNeed(sv *v1alpha1.ScratchVolume, c *corev1.Container) (resource.Quantity, error) {
	need, _, err := memoryNeed(sv, c)
	return need, err
}

// memoryNeed is size + buffer pool + TempTable memory (when the args set them) + headroom, with a
// readable breakdown.
func memoryNeed(sv *v1alpha1.ScratchVolume, c *corev1.Container) (resource.Quantity, string, error) {
	headroom := resource.MustParse(v1alpha1.DefaultMemoryHeadroom)
	if sv.Spec.Memory.Headroom != nil {
		headroom = sv.Spec.Memory.Headroom.DeepCopy()
	}
	need := sv.Spec.Size.DeepCopy()
	parts := []string{quantity.Exact(need) + " scratch volume"}
	if sv.Spec.Purpose == v1alpha1.PurposeMySQLTmpdir {
		args := append(append([]string{}, c.Command...), c.Args...)
		for _, opt := range []struct {
			name string
			read func([]string) (int64, bool, error)
		}{{"innodb_buffer_pool_size", mysql.BufferPoolSize}, {"temptable_max_ram", mysql.TempTableMaxRAM}} {
			n, found, err := opt.read(args)
			if err != nil {
				return need, "", problemf(v1alpha1.ReasonInvalidArgs, "container %s: %v", c.Name, err)
			}
			if found {
				q := *resource.NewQuantity(n, resource.BinarySI)
				need.Add(q)
				parts = append(parts, quantity.Exact(q)+" "+opt.name)
			} else if opt.name == "temptable_max_ram" {
				if def := defaultTempTableMaxRAM(sv, c); def > 0 {
					q := *resource.NewQuantity(def, resource.BinarySI)
					need.Add(q)
					parts = append(parts, quantity.Exact(q)+" temptable_max_ram (the server's default)")
				}
			}
		}
	}
	need.Add(headroom)
	parts = append(parts, quantity.Exact(headroom)+" headroom")
	return need, strings.Join(parts, " + "), nil
}

// defaultTempTableMaxRAM is the TempTable engine's default memory bound for the container's server,
// or 0 when it has no such engine or its flavor and version cannot be told (planning refuses
// those with a reason of their own).
func defaultTempTableMaxRAM(sv *v1alpha1.ScratchVolume, c *corev1.Container) int64 {
	p, err := mysql.Detect(c.Image, sv.Spec.MySQL)
	if err != nil {
		return 0
	}
	return p.DefaultTempTableMaxRAM
}
