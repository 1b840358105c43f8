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
// in TempTable memory is charged to the container as surely as the volume is) + headroom; Reserve
// returns the size to add to the container's request and limit; Ignore only says what it skipped.
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
func memoryBudget(sv *v1alpha1.ScratchVolume, c *corev1.Container) (reserve *resource.Quantity, note Note, err error) {
	size := sv.Spec.Size.DeepCopy()
	switch sv.Spec.Memory.Accounting {
	case v1alpha1.MemoryReserve:
		_, hasReq := c.Resources.Requests[corev1.ResourceMemory]
		_, hasLim := c.Resources.Limits[corev1.ResourceMemory]
		if !hasReq && !hasLim {
			return nil, Note{Reason: v1alpha1.ReasonNoMemoryLimit, Message: fmt.Sprintf(
				"container %s sets no memory request or limit, so there is nothing to reserve the %s in; set them, and the volume is added to both",
				c.Name, quantity.Exact(size))}, nil
		}
		return &size, Note{Reason: v1alpha1.ReasonMemoryReserved, Message: fmt.Sprintf(
			"%s added to the memory request and limit of container %s", quantity.Exact(size), c.Name)}, nil
	case v1alpha1.MemoryIgnore:
		return nil, Note{Reason: v1alpha1.ReasonMemoryNotAccounted, Message: fmt.Sprintf(
			"memory accounting is off: up to %s of tmpfs pages count against container %s's memory limit", quantity.Exact(size), c.Name)}, nil
	}
	limit, hasLimit := c.Resources.Limits[corev1.ResourceMemory]
	if !hasLimit {
		return nil, Note{Reason: v1alpha1.ReasonNoMemoryLimit, Message: fmt.Sprintf(
			"container %s has no memory limit, so nothing bounds tmpfs plus the database; set a limit, or spec.memory.accounting: Reserve",
			c.Name)}, nil
	}
	need, breakdown, err := memoryNeed(sv, c)
	if err != nil {
		return nil, Note{}, err
	}
	if limit.Cmp(need) < 0 {
		short := need.DeepCopy()
		short.Sub(limit)
		return nil, Note{}, problemf(v1alpha1.ReasonMemoryBudget,
			"container %s has a %s memory limit but needs at least %s (%s): raise the limit by %s, lower spec.size, or set spec.memory.accounting: Reserve",
			c.Name, quantity.Exact(limit), quantity.Exact(need), breakdown, quantity.Exact(short))
	}
	return nil, Note{Reason: v1alpha1.ReasonMemoryBudgetCovered, Message: fmt.Sprintf(
		"container %s's %s memory limit covers %s (%s)", c.Name, quantity.Exact(limit), quantity.Exact(need), breakdown)}, nil
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
