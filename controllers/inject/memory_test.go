package inject_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// memoryResult is the memory side of a plan: what it reserves and says, or why it is blocked.
type memoryResult struct {
	Reserve string
	Note    *inject.Note
	Problem *inject.Problem
}

// memoryNotes are the note reasons memoryBudget produces; every plan carries exactly one.
var memoryNotes = map[string]bool{
	v1alpha1.ReasonNoMemoryLimit: true, v1alpha1.ReasonMemoryReserved: true,
	v1alpha1.ReasonMemoryNotAccounted: true, v1alpha1.ReasonMemoryBudgetCovered: true,
}

func memoryOf(t *testing.T, sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) memoryResult {
	t.Helper()
	p, prob := problemOf(t, sv, sts)
	if prob != nil {
		return memoryResult{Problem: prob}
	}
	var r memoryResult
	if p.Reserve != nil {
		r.Reserve = p.Reserve.String()
	}
	for i := range p.Notes {
		if memoryNotes[p.Notes[i].Reason] {
			if r.Note != nil {
				t.Errorf("two memory notes: %+v and %+v", *r.Note, p.Notes[i])
			}
			r.Note = &p.Notes[i]
		}
	}
	return r
}

func TestMemoryBudget(t *testing.T) {
	covered := func(msg string) memoryResult {
		return memoryResult{Note: &inject.Note{Reason: v1alpha1.ReasonMemoryBudgetCovered, Message: msg}}
	}
	short := func(msg string) memoryResult {
		return memoryResult{Problem: &inject.Problem{Reason: v1alpha1.ReasonMemoryBudget, Message: msg}}
	}
	tests := []struct {
		name string
		sv   *v1alpha1.ScratchVolume
		sts  *appsv1.StatefulSet
		want memoryResult
	}{{
		name: "limit covers size + buffer pool + TempTable's default + headroom",
		sv:   scratchVolume(),
		sts:  mysqlSTS(), // 4Gi limit, 1G buffer pool, MySQL 8.0
		want: covered("container db's 4Gi memory limit covers 2816Mi (512Mi scratch volume + 1Gi innodb_buffer_pool_size + 1Gi temptable_max_ram (the server's default) + 256Mi headroom)"),
	}, {
		name: "temptable_max_ram in the args replaces the default",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), dbArgs("--innodb-buffer-pool-size=1G", "--temptable_max_ram=64M"), dbMemory("", "2Gi")),
		want: covered("container db's 2Gi memory limit covers 1856Mi (512Mi scratch volume + 1Gi innodb_buffer_pool_size + 64Mi temptable_max_ram + 256Mi headroom)"),
	}, {
		name: "MySQL 5.7 has no TempTable engine",
		sv:   scratchVolume(),
		sts: withSTS(mysqlSTS(), dbMemory("", "1792Mi"), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Image = "mysql:5.7"
		}),
		want: covered("container db's 1792Mi memory limit covers 1792Mi (512Mi scratch volume + 1Gi innodb_buffer_pool_size + 256Mi headroom)"),
	}, {
		name: "MariaDB has no TempTable engine",
		sv:   scratchVolume(),
		sts: withSTS(mysqlSTS(), dbMemory("", "1792Mi"), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Image = "mariadb:11.8"
		}),
		want: covered("container db's 1792Mi memory limit covers 1792Mi (512Mi scratch volume + 1Gi innodb_buffer_pool_size + 256Mi headroom)"),
	}, {
		name: "limit exactly equal to the need",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), dbMemory("1Gi", "2816Mi")),
		want: covered("container db's 2816Mi memory limit covers 2816Mi (512Mi scratch volume + 1Gi innodb_buffer_pool_size + 1Gi temptable_max_ram (the server's default) + 256Mi headroom)"),
	}, {
		name: "one byte short",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), dbMemory("1Gi", "2952790015")),
		want: short("container db has a 2952790015 memory limit but needs at least 2816Mi (512Mi scratch volume + 1Gi innodb_buffer_pool_size + 1Gi temptable_max_ram (the server's default) + 256Mi headroom): raise the limit by 1, lower spec.size, or set spec.memory.accounting: Reserve"),
	}, {
		name: "short by 1792Mi",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), dbMemory("1Gi", "1Gi")),
		want: short("container db has a 1Gi memory limit but needs at least 2816Mi (512Mi scratch volume + 1Gi innodb_buffer_pool_size + 1Gi temptable_max_ram (the server's default) + 256Mi headroom): raise the limit by 1792Mi, lower spec.size, or set spec.memory.accounting: Reserve"),
	}, {
		name: "no buffer pool in the args: size + TempTable's default + headroom",
		sv:   scratchVolume(size("1Gi")),
		sts:  withSTS(mysqlSTS(), dbArgs(), dbMemory("", "1Gi")),
		want: short("container db has a 1Gi memory limit but needs at least 2304Mi (1Gi scratch volume + 1Gi temptable_max_ram (the server's default) + 256Mi headroom): raise the limit by 1280Mi, lower spec.size, or set spec.memory.accounting: Reserve"),
	}, {
		name: "buffer pool in the command, as two words, last one wins",
		sv:   scratchVolume(),
		sts: withSTS(mysqlSTS(), dbArgs("--innodb_buffer_pool_size", "3G"), dbMemory("", "5Gi"), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Command = []string{"mysqld", "--innodb-buffer-pool-size=128M"}
		}),
		want: covered("container db's 5Gi memory limit covers 4864Mi (512Mi scratch volume + 3Gi innodb_buffer_pool_size + 1Gi temptable_max_ram (the server's default) + 256Mi headroom)"),
	}, {
		name: "custom headroom",
		sv:   scratchVolume(headroom("1Gi")),
		sts:  withSTS(mysqlSTS(), dbMemory("", "2Gi")),
		want: short("container db has a 2Gi memory limit but needs at least 3584Mi (512Mi scratch volume + 1Gi innodb_buffer_pool_size + 1Gi temptable_max_ram (the server's default) + 1Gi headroom): raise the limit by 1536Mi, lower spec.size, or set spec.memory.accounting: Reserve"),
	}, {
		name: "zero headroom",
		sv:   scratchVolume(headroom("0")),
		sts:  withSTS(mysqlSTS(), dbMemory("", "2560Mi")),
		want: covered("container db's 2560Mi memory limit covers 2560Mi (512Mi scratch volume + 1Gi innodb_buffer_pool_size + 1Gi temptable_max_ram (the server's default) + 0 headroom)"),
	}, {
		name: "decimal limit",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), dbMemory("", "3G")),
		want: covered("container db's 3G memory limit covers 2816Mi (512Mi scratch volume + 1Gi innodb_buffer_pool_size + 1Gi temptable_max_ram (the server's default) + 256Mi headroom)"),
	}, {
		name: "no limit: injected, with a note",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), dbMemory("2Gi", "")),
		want: memoryResult{Note: &inject.Note{Reason: v1alpha1.ReasonNoMemoryLimit,
			Message: "neither container db nor the pod has a memory limit, so nothing bounds tmpfs plus the database; set a limit, or spec.memory.accounting: Reserve"}},
	}, {
		name: "bad buffer pool suffix",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), dbArgs("--innodb-buffer-pool-size=1GB")),
		want: memoryResult{Problem: &inject.Problem{Reason: v1alpha1.ReasonInvalidArgs,
			Message: `container db: invalid innodb_buffer_pool_size "1GB": unknown suffix "GB" (use K, M, G, T, P or E)`}},
	}, {
		name: "buffer pool without a number",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), dbArgs("--innodb-buffer-pool-size=")),
		want: memoryResult{Problem: &inject.Problem{Reason: v1alpha1.ReasonInvalidArgs,
			Message: `container db: invalid innodb_buffer_pool_size "": it must start with a non-negative whole number`}},
	}, {
		name: "Reserve adds the size",
		sv:   scratchVolume(accounting(v1alpha1.MemoryReserve), size("1Gi")),
		sts:  withSTS(mysqlSTS(), dbMemory("1Gi", "1Gi")),
		want: memoryResult{Reserve: "1Gi", Note: &inject.Note{Reason: v1alpha1.ReasonMemoryReserved,
			Message: "1Gi added to the memory request and limit of container db"}},
	}, {
		name: "Ignore says what it skipped",
		sv:   scratchVolume(accounting(v1alpha1.MemoryIgnore)),
		sts:  withSTS(mysqlSTS(), dbMemory("256Mi", "256Mi")),
		want: memoryResult{Note: &inject.Note{Reason: v1alpha1.ReasonMemoryNotAccounted,
			Message: "memory accounting is off: up to 512Mi of tmpfs pages count against container db's memory limit"}},
	}, {
		name: "Generic on a plain container: size + headroom",
		sv:   scratchVolume(generic(), container("metrics")),
		sts: withSTS(mysqlSTS(), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[1].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
		}),
		want: short("container metrics has a 512Mi memory limit but needs at least 768Mi (512Mi scratch volume + 256Mi headroom): raise the limit by 256Mi, lower spec.size, or set spec.memory.accounting: Reserve"),
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, memoryOf(t, tt.sv, tt.sts)); diff != "" {
				t.Errorf("memory (-want +got):\n%s", diff)
			}
		})
	}
}

// podResources gives the pod pod-level memory (KEP-2837) and takes the database container's away.
func podResources(request, limit string) stsOption {
	return func(sts *appsv1.StatefulSet) {
		sts.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{}
		r := &corev1.ResourceRequirements{Requests: corev1.ResourceList{}, Limits: corev1.ResourceList{}}
		if request != "" {
			r.Requests[corev1.ResourceMemory] = resource.MustParse(request)
		}
		if limit != "" {
			r.Limits[corev1.ResourceMemory] = resource.MustParse(limit)
		}
		sts.Spec.Template.Spec.Resources = r
	}
}

// TestMemoryBudgetPodLevel checks the memory rules on pods with pod-level resources: the pod's
// limit bounds the volume and the database together, less what the other running containers may
// take, whichever of it and the container's own limit binds first.
func TestMemoryBudgetPodLevel(t *testing.T) {
	need := "2816Mi (512Mi scratch volume + 1Gi innodb_buffer_pool_size + 1Gi temptable_max_ram (the server's default) + 256Mi headroom)"
	sidecarLimit := func(s *appsv1.StatefulSet) {
		s.Spec.Template.Spec.Containers[1].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")}
	}
	nativeSidecar := func(s *appsv1.StatefulSet) {
		always := corev1.ContainerRestartPolicyAlways
		s.Spec.Template.Spec.InitContainers = append(s.Spec.Template.Spec.InitContainers, corev1.Container{
			Name: "proxy", Image: "proxy:1", RestartPolicy: &always,
			Resources: corev1.ResourceRequirements{Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("300Mi")}}})
	}
	tests := []struct {
		name string
		sv   *v1alpha1.ScratchVolume
		sts  *appsv1.StatefulSet
		want memoryResult
	}{{
		name: "the pod's limit covers it",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), podResources("3Gi", "3Gi")),
		want: memoryResult{Note: &inject.Note{Reason: v1alpha1.ReasonMemoryBudgetCovered,
			Message: "the pod's 3Gi memory limit leaves container db 3Gi beside metrics (no memory set: counted as nothing), which covers " + need}},
	}, {
		name: "the pod's limit is short",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), podResources("1Gi", "1Gi")),
		want: memoryResult{Problem: &inject.Problem{Reason: v1alpha1.ReasonMemoryBudget,
			Message: "the pod's 1Gi memory limit leaves container db 1Gi beside metrics (no memory set: counted as nothing), but it needs at least " + need + ": raise the pod's limit by 1792Mi, lower spec.size, or set spec.memory.accounting: Reserve"}},
	}, {
		name: "a sidecar's limit comes off the pod's",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), podResources("3Gi", "3Gi"), sidecarLimit),
		want: memoryResult{Problem: &inject.Problem{Reason: v1alpha1.ReasonMemoryBudget,
			Message: "the pod's 3Gi memory limit leaves container db 2560Mi beside metrics (limit 512Mi), but it needs at least " + need + ": raise the pod's limit by 256Mi, lower spec.size, or set spec.memory.accounting: Reserve"}},
	}, {
		name: "a native sidecar's request comes off the pod's",
		sv:   scratchVolume(),
		sts:  withSTS(mysqlSTS(), podResources("3Gi", "3Gi"), nativeSidecar),
		want: memoryResult{Problem: &inject.Problem{Reason: v1alpha1.ReasonMemoryBudget,
			Message: "the pod's 3Gi memory limit leaves container db 2772Mi beside proxy (request 300Mi), metrics (no memory set: counted as nothing), but it needs at least " + need + ": raise the pod's limit by 44Mi, lower spec.size, or set spec.memory.accounting: Reserve"}},
	}, {
		name: "the container's limit binds first",
		sv:   scratchVolume(),
		sts: withSTS(mysqlSTS(), podResources("8Gi", "8Gi"), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("2Gi")}
		}),
		want: memoryResult{Problem: &inject.Problem{Reason: v1alpha1.ReasonMemoryBudget,
			Message: "container db has a 2Gi memory limit but needs at least " + need + ": raise the limit by 768Mi, lower spec.size, or set spec.memory.accounting: Reserve"}},
	}, {
		name: "Reserve in the pod's resources",
		sv:   scratchVolume(accounting(v1alpha1.MemoryReserve)),
		sts:  withSTS(mysqlSTS(), podResources("1Gi", "1Gi")),
		want: memoryResult{Reserve: "512Mi", Note: &inject.Note{Reason: v1alpha1.ReasonMemoryReserved,
			Message: "512Mi added to the memory request and limit of the pod (container db sets none of its own)"}},
	}, {
		name: "Reserve in both",
		sv:   scratchVolume(accounting(v1alpha1.MemoryReserve)),
		sts: withSTS(mysqlSTS(), podResources("4Gi", "4Gi"), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")}
		}),
		want: memoryResult{Reserve: "512Mi", Note: &inject.Note{Reason: v1alpha1.ReasonMemoryReserved,
			Message: "512Mi added to the memory request and limit of container db and of the pod"}},
	}}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			if diff := cmp.Diff(tt.want, memoryOf(t, tt.sv, tt.sts)); diff != "" {
				t.Errorf("memory (-want +got):\n%s", diff)
			}
		})
	}
}

// TestVolumeSmallerThanSize checks the note on a volume the kubelet sizes to the pod's memory
// limit, below spec.size, with the limit read as the kubelet reads it.
func TestVolumeSmallerThanSize(t *testing.T) {
	allLimits := func(s *appsv1.StatefulSet) {
		pod := &s.Spec.Template.Spec
		pod.Containers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("256Mi")}
		pod.Containers[1].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("64Mi")}
		pod.InitContainers[0].Resources.Limits = corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("16Mi")}
	}
	tests := []struct {
		name string
		sts  *appsv1.StatefulSet
		want string // "" for no note
	}{
		{"pod-level limit", withSTS(mysqlSTS(), podResources("256Mi", "256Mi")), "the kubelet sizes the RAM volume to the pod's 256Mi memory limit, smaller than spec.size 512Mi: the database can write at most 256Mi there"},
		{"every container's limit", withSTS(mysqlSTS(), allLimits), "the kubelet sizes the RAM volume to the pod's 320Mi memory limit, smaller than spec.size 512Mi: the database can write at most 320Mi there"},
		{"a container without a limit", mysqlSTS(), ""},
		{"a pod-level limit above the size", withSTS(mysqlSTS(), podResources("1Gi", "1Gi")), ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			p := plan(t, scratchVolume(accounting(v1alpha1.MemoryIgnore)), tt.sts)
			got := ""
			for _, n := range p.Notes {
				if n.Reason == v1alpha1.ReasonVolumeSmallerThanSize {
					got = n.Message
				}
			}
			if got != tt.want {
				t.Errorf("note = %q, want %q", got, tt.want)
			}
		})
	}
}
