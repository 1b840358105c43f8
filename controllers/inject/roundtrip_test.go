package inject_test

import (
	"testing"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/resource"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
)

// equateEntries compares Entries the way Entries.Equal does (quantities by value, nil and empty
// alike) while cmp.Diff explains a difference.
var equateEntries = cmp.Options{quantityEqual, cmpopts.EquateEmpty()}

// plannedCases are the cases of the golden matrix that inject, with their plan.
func plannedCases(t *testing.T) []plannedCase {
	t.Helper()
	var out []plannedCase
	for _, c := range injectionCases() {
		if p, prob := problemOf(t, c.sv, c.sts); prob == nil {
			out = append(out, plannedCase{c, p})
		}
	}
	if len(out) < 40 {
		t.Fatalf("only %d cases of the matrix inject: the matrix lost its coverage", len(out))
	}
	return out
}

type plannedCase struct {
	injectionCase
	plan *inject.Plan
}

// TestStripRestoresUserTemplate: reverting (stripping everything of ours) gives back the template
// exactly as the user wrote it, args and memory included.
func TestStripRestoresUserTemplate(t *testing.T) {
	for _, c := range plannedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			user := c.sts.Spec.Template
			got := inject.Strip(inject.Inject(user, []*inject.Plan{c.plan}))
			if !equality.Semantic.DeepEqual(got, inject.Strip(user)) || !equality.Semantic.DeepEqual(got, user) {
				t.Errorf("Strip(Inject(t)) differs from the user's template (-user +stripped):\n%s",
					cmp.Diff(user, got, quantityEqual))
			}
		})
	}
}

// TestObservedAfterInjectIsDesired: right after an injection the no-op check sees nothing to do —
// the entries read back are the desired ones plus the state annotations, and no container change is
// pending.
func TestObservedAfterInjectIsDesired(t *testing.T) {
	for _, c := range plannedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			plans := []*inject.Plan{c.plan}
			live := inject.Inject(c.sts.Spec.Template, plans)
			user := inject.Strip(live)
			changes, states := inject.Overrides(&user, &live, plans, nil)
			desired := inject.Desired(plans).WithAnnotations(states)
			observed := inject.Observed(&live)
			if !desired.Equal(observed) {
				t.Errorf("Observed(Inject(t)) differs from Desired(plans) (-desired +observed):\n%s",
					cmp.Diff(desired, observed, equateEntries))
			}
			if pending := inject.Pending(&live, changes, &user); len(pending) != 0 {
				t.Errorf("Pending after Inject = %+v, want none", pending)
			}
			if desired.Empty() {
				t.Error("Desired(plans) is empty")
			}
		})
	}
}

// TestReplanInjectedIsStable: planning a StatefulSet that already carries the injection gives the
// same plan, so our own volume, mounts, flags and reserved memory are never taken for the user's.
func TestReplanInjectedIsStable(t *testing.T) {
	for _, c := range plannedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			again, prob := problemOf(t, c.sv, injected(c.sts, c.plan))
			if prob != nil {
				t.Fatalf("NewPlan on the injected StatefulSet: %v", prob)
			}
			if again.Hash != c.plan.Hash {
				t.Errorf("hash on the injected StatefulSet = %s, want %s", again.Hash, c.plan.Hash)
			}
			if diff := cmp.Diff(c.plan, again, quantityEqual); diff != "" {
				t.Errorf("plan on the injected StatefulSet differs (-original +injected):\n%s", diff)
			}
		})
	}
}

// TestInjectIsIdempotent: injecting an injected template changes nothing.
func TestInjectIsIdempotent(t *testing.T) {
	for _, c := range plannedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			plans := []*inject.Plan{c.plan}
			once := inject.Inject(c.sts.Spec.Template, plans)
			twice := inject.Inject(once, plans)
			if !equality.Semantic.DeepEqual(once, twice) {
				t.Errorf("Inject twice differs from once (-once +twice):\n%s", cmp.Diff(once, twice, quantityEqual))
			}
		})
	}
}

// TestInjectLeavesOtherFieldsAlone: an injection only appends keyed entries and, for Args and
// Reserve, changes the target container's args and memory; everything else is the user's.
func TestInjectLeavesOtherFieldsAlone(t *testing.T) {
	for _, c := range plannedCases(t) {
		t.Run(c.name, func(t *testing.T) {
			user := c.sts.Spec.Template
			got := inject.Inject(user, []*inject.Plan{c.plan})
			for i, uc := range user.Spec.Containers {
				gc := got.Spec.Containers[i]
				if uc.Name != c.plan.Container {
					if !equality.Semantic.DeepEqual(uc, gc) {
						t.Errorf("container %s is not the target but changed (-user +injected):\n%s", uc.Name, cmp.Diff(uc, gc, quantityEqual))
					}
					continue
				}
				if len(c.plan.Args) == 0 && !equality.Semantic.DeepEqual(uc.Args, gc.Args) {
					t.Errorf("container %s: args changed without Args injection: %q", gc.Name, gc.Args)
				}
				if c.plan.Reserve == nil && !equality.Semantic.DeepEqual(uc.Resources, gc.Resources) {
					t.Errorf("container %s: resources changed without Reserve: %v", gc.Name, gc.Resources)
				}
				if diff := cmp.Diff(uc.VolumeMounts, gc.VolumeMounts[:len(uc.VolumeMounts)], cmpopts.EquateEmpty()); diff != "" {
					t.Errorf("container %s: the user's mounts moved (-user +injected):\n%s", gc.Name, diff)
				}
			}
			if diff := cmp.Diff(user.Spec.Volumes, got.Spec.Volumes[:len(user.Spec.Volumes)], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("the user's volumes moved (-user +injected):\n%s", diff)
			}
			if diff := cmp.Diff(user.Spec.InitContainers, got.Spec.InitContainers[:len(user.Spec.InitContainers)], cmpopts.EquateEmpty()); diff != "" {
				t.Errorf("the user's init containers moved or changed (-user +injected):\n%s", diff)
			}
		})
	}
}

// TestReserveAddsExactlySize: Reserve raises the container's memory request and limit by exactly
// spec.size, and revert takes exactly that back.
func TestReserveAddsExactlySize(t *testing.T) {
	var n int
	for _, c := range plannedCases(t) {
		if c.sv.Spec.Memory.Accounting != v1alpha1.MemoryReserve {
			continue
		}
		n++
		t.Run(c.name, func(t *testing.T) {
			user := c.sts.Spec.Template
			inj := inject.Inject(user, []*inject.Plan{c.plan})
			before := containerIn(&user, c.plan.Container).Resources
			after := containerIn(&inj, c.plan.Container).Resources
			back := containerIn(ptrTo(inject.Strip(inj)), c.plan.Container).Resources
			for _, kind := range []struct {
				name            string
				was, now, after corev1.ResourceList
			}{{"request", before.Requests, after.Requests, back.Requests}, {"limit", before.Limits, after.Limits, back.Limits}} {
				want := kind.was.Memory().DeepCopy()
				want.Add(c.sv.Spec.Size)
				if got := kind.now[corev1.ResourceMemory]; got.Cmp(want) != 0 {
					t.Errorf("memory %s after Inject = %s, want %s + %s = %s", kind.name, got.String(),
						kind.was.Memory().String(), c.sv.Spec.Size.String(), want.String())
				}
				if got, was := kind.after[corev1.ResourceMemory], kind.was[corev1.ResourceMemory]; got.Cmp(was) != 0 {
					t.Errorf("memory %s after Strip = %s, want %s", kind.name, got.String(), was.String())
				}
			}
			if cpu, was := after.Requests[corev1.ResourceCPU], before.Requests[corev1.ResourceCPU]; cpu.Cmp(was) != 0 {
				t.Errorf("cpu request changed from %s to %s", was.String(), cpu.String())
			}
		})
	}
	if n < 3 {
		t.Fatalf("only %d Reserve cases in the matrix", n)
	}
}

// TestReserveWithoutMemoryValues: a container with no memory request or limit has nothing to raise.
// Inject must then leave its resources alone, and revert must not invent values.
func TestReserveWithoutMemoryValues(t *testing.T) {
	sts := withSTS(mysqlSTS(), dbMemory("", ""))
	p := plan(t, scratchVolume(accounting(v1alpha1.MemoryReserve)), sts)
	inj := inject.Inject(sts.Spec.Template, []*inject.Plan{p})
	got := containerIn(&inj, dbContainer).Resources
	if _, ok := got.Requests[corev1.ResourceMemory]; ok {
		t.Errorf("memory request appeared: %v", got.Requests)
	}
	if _, ok := got.Limits[corev1.ResourceMemory]; ok {
		t.Errorf("memory limit appeared: %v", got.Limits)
	}
	if back := inject.Strip(inj); !equality.Semantic.DeepEqual(back, sts.Spec.Template) {
		t.Errorf("Strip differs (-user +stripped):\n%s", cmp.Diff(sts.Spec.Template, back, quantityEqual))
	}
}

// TestReserveInPodResources: on a pod with pod-level resources, Reserve raises the pod's memory
// request and limit by exactly spec.size, with the container's where it sets them (the API server
// refuses a container limit above the pod's); revert takes exactly that back, and a replan of
// the injected template asks for nothing more.
func TestReserveInPodResources(t *testing.T) {
	for _, tc := range []struct {
		name      string
		sts       *appsv1.StatefulSet
		container bool
	}{
		{"pod only", withSTS(mysqlSTS(), podResources("1Gi", "2Gi")), false},
		{"pod and container", withSTS(mysqlSTS(), podResources("3Gi", "4Gi"), func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.Containers[0].Resources = corev1.ResourceRequirements{
				Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("1Gi")},
				Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("3Gi")},
			}
		}), true},
	} {
		t.Run(tc.name, func(t *testing.T) {
			sv := scratchVolume(accounting(v1alpha1.MemoryReserve))
			p := plan(t, sv, tc.sts)
			user := tc.sts.Spec.Template
			inj := inject.Inject(user, []*inject.Plan{p})
			for _, m := range []struct {
				name       string
				was, now   corev1.ResourceList
				wantRaised bool
			}{
				{"pod request", user.Spec.Resources.Requests, inj.Spec.Resources.Requests, true},
				{"pod limit", user.Spec.Resources.Limits, inj.Spec.Resources.Limits, true},
				{"container request", containerIn(&user, dbContainer).Resources.Requests, containerIn(&inj, dbContainer).Resources.Requests, tc.container},
				{"container limit", containerIn(&user, dbContainer).Resources.Limits, containerIn(&inj, dbContainer).Resources.Limits, tc.container},
			} {
				was, had := m.was[corev1.ResourceMemory]
				now, has := m.now[corev1.ResourceMemory]
				if had != has {
					t.Errorf("%s: set %v before, %v after", m.name, had, has)
					continue
				}
				want := was.DeepCopy()
				if m.wantRaised {
					want.Add(sv.Spec.Size)
				}
				if has && now.Cmp(want) != 0 {
					t.Errorf("%s = %s, want %s", m.name, now.String(), want.String())
				}
			}
			if back := inject.Strip(inj); !equality.Semantic.DeepEqual(back, user) {
				t.Errorf("Strip differs (-user +stripped):\n%s", cmp.Diff(user, back, quantityEqual))
			}
			injSTS := tc.sts.DeepCopy()
			injSTS.Spec.Template = inj
			again := plan(t, sv, injSTS)
			stripped := inject.Strip(inj)
			changes, _ := inject.Overrides(&stripped, &inj, []*inject.Plan{again}, nil)
			if pending := inject.Pending(&inj, changes, &stripped); len(pending) != 0 {
				t.Errorf("a replan of the injected template still has changes pending: %+v", pending)
			}
		})
	}
}

// TestReserveLaterEditIsKept: a memory limit someone changed after the injection is theirs; revert
// leaves it as it is rather than subtracting our share from their value.
func TestReserveLaterEditIsKept(t *testing.T) {
	sts := mysqlSTS()
	p := plan(t, scratchVolume(accounting(v1alpha1.MemoryReserve)), sts)
	inj := inject.Inject(sts.Spec.Template, []*inject.Plan{p})
	containerIn(&inj, dbContainer).Resources.Limits[corev1.ResourceMemory] = resource.MustParse("8Gi")
	back := containerIn(ptrTo(inject.Strip(inj)), dbContainer).Resources
	if got := back.Limits[corev1.ResourceMemory]; got.Cmp(resource.MustParse("8Gi")) != 0 {
		t.Errorf("limit after Strip = %s, want the user's 8Gi", got.String())
	}
	if got := back.Requests[corev1.ResourceMemory]; got.Cmp(resource.MustParse("2Gi")) != 0 {
		t.Errorf("request after Strip = %s, want 2Gi", got.String())
	}
}

// TestArgsLaterEditIsKept: flags a user adds after ours survive the revert; only ours go.
func TestArgsLaterEditIsKept(t *testing.T) {
	sts := mysqlSTS()
	p := plan(t, scratchVolume(injection(v1alpha1.InjectionArgs)), sts)
	inj := inject.Inject(sts.Spec.Template, []*inject.Plan{p})
	db := containerIn(&inj, dbContainer)
	db.Args = append(db.Args, "--max-connections=500")
	want := []string{"--innodb-buffer-pool-size=1G", "--binlog-format=ROW", "--max-connections=500"}
	if diff := cmp.Diff(want, containerIn(ptrTo(inject.Strip(inj)), dbContainer).Args); diff != "" {
		t.Errorf("args after Strip (-want +got):\n%s", diff)
	}
}

// twoVolumes is a database with a backup sidecar: a MySQLTmpdir ScratchVolume on the database (Args,
// so it has a state annotation) and a Generic one on the sidecar (Reserve, so it has one too).
func twoVolumes(t *testing.T) (sts *appsv1.StatefulSet, db, side *inject.Plan) {
	t.Helper()
	sts = withSTS(mysqlSTS(), sidecars(corev1.Container{
		Name: "backup", Image: "busybox:1.36",
		Resources: corev1.ResourceRequirements{
			Requests: corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("128Mi")},
			Limits:   corev1.ResourceList{corev1.ResourceMemory: resource.MustParse("512Mi")},
		},
	}))
	return sts, plan(t, dbScratchVolume(), sts), plan(t, sideScratchVolume(), sts)
}

func dbScratchVolume() *v1alpha1.ScratchVolume {
	return scratchVolume(injection(v1alpha1.InjectionArgs))
}

func sideScratchVolume() *v1alpha1.ScratchVolume {
	return scratchVolume(named("backup-scratch"), generic(), container("backup"), size("1Gi"), accounting(v1alpha1.MemoryReserve))
}

// TestObservedForSeparatesScratchVolumes: with two ScratchVolumes on different containers, each one's
// entries are exactly its own, and together they are everything observed.
func TestObservedForSeparatesScratchVolumes(t *testing.T) {
	sts, db, side := twoVolumes(t)
	plans := []*inject.Plan{db, side}
	live := inject.Inject(sts.Spec.Template, plans)
	user := inject.Strip(live)
	_, states := inject.Overrides(&user, &live, plans, nil)
	for _, p := range plans {
		sv := scratchVolume(named(p.ScratchVolume))
		want := inject.Desired([]*inject.Plan{p}).WithAnnotations(map[string]string{sv.StateAnnotation(): states[sv.StateAnnotation()]})
		got := inject.ObservedFor(&live, p.ScratchVolume)
		if diff := cmp.Diff(want, got, equateEntries); diff != "" {
			t.Errorf("ObservedFor(%s) (-want +got):\n%s", p.ScratchVolume, diff)
		}
	}
	if len(states) != 2 {
		t.Errorf("state annotations = %v, want one per ScratchVolume", states)
	}
	merged := inject.ObservedFor(&live, db.ScratchVolume).Merge(inject.ObservedFor(&live, side.ScratchVolume))
	if all := inject.Observed(&live); !merged.Equal(all) {
		t.Errorf("the two ObservedFor together differ from Observed (-all +merged):\n%s", cmp.Diff(all, merged, equateEntries))
	}
	if got := inject.ObservedFor(&live, "absent"); !got.Empty() {
		t.Errorf("ObservedFor(absent) = %+v, want nothing", got)
	}
	if got := inject.ScratchVolumes(&live); !cmp.Equal(got, []string{side.ScratchVolume, db.ScratchVolume}) {
		t.Errorf("ScratchVolumes = %v", got)
	}
}

// TestTwoVolumesRoundTrip: the round-trip properties hold with two ScratchVolumes at once, and
// removing one (injecting only the other) takes back exactly its entries, flags and memory.
func TestTwoVolumesRoundTrip(t *testing.T) {
	sts, db, side := twoVolumes(t)
	both := inject.Inject(sts.Spec.Template, []*inject.Plan{db, side})
	if got := inject.Strip(both); !equality.Semantic.DeepEqual(got, sts.Spec.Template) {
		t.Errorf("Strip differs (-user +stripped):\n%s", cmp.Diff(sts.Spec.Template, got, quantityEqual))
	}
	for _, c := range []struct {
		sv   *v1alpha1.ScratchVolume
		want *inject.Plan
	}{{dbScratchVolume(), db}, {sideScratchVolume(), side}} {
		again := plan(t, c.sv, &appsv1.StatefulSet{ObjectMeta: sts.ObjectMeta, Spec: withTemplate(sts.Spec, both)})
		if diff := cmp.Diff(c.want, again, quantityEqual); diff != "" {
			t.Errorf("%s: plan on the injected StatefulSet differs (-original +injected):\n%s", c.sv.Name, diff)
		}
	}
	onlySide := inject.Inject(both, []*inject.Plan{side})
	if want := inject.Inject(sts.Spec.Template, []*inject.Plan{side}); !equality.Semantic.DeepEqual(onlySide, want) {
		t.Errorf("dropping the database volume (-want +got):\n%s", cmp.Diff(want, onlySide, quantityEqual))
	}
	if got := containerIn(&onlySide, dbContainer).Args; !cmp.Equal(got, []string{"--innodb-buffer-pool-size=1G", "--binlog-format=ROW"}) {
		t.Errorf("database args after dropping its volume = %q", got)
	}
}

// TestUserEntriesNamedLikeOurs: a volume, mount or init container that follows our naming scheme
// but has no injection annotation of ours belongs to the user: never observed, never stripped, even
// next to a real injection.
func TestUserEntriesNamedLikeOurs(t *testing.T) {
	userVolume := corev1.Volume{Name: "dbtune-scratch-x", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	userConfig := corev1.Volume{Name: "dbtune-mycnf-x", VolumeSource: corev1.VolumeSource{EmptyDir: &corev1.EmptyDirVolumeSource{}}}
	sts := withSTS(mysqlSTS(),
		dbMount(corev1.VolumeMount{Name: userVolume.Name, MountPath: "/work"}, &userVolume),
		dbMount(corev1.VolumeMount{Name: userConfig.Name, MountPath: "/extra"}, &userConfig),
		func(s *appsv1.StatefulSet) {
			s.Spec.Template.Spec.InitContainers = append(s.Spec.Template.Spec.InitContainers,
				corev1.Container{Name: "dbtune-init-x", Image: "busybox:1.36"})
		})
	user := sts.Spec.Template
	if got := inject.Observed(&user); !got.Empty() {
		t.Errorf("Observed on a template with no injection = %+v, want nothing", got)
	}
	if got := inject.ObservedFor(&user, "x"); !got.Empty() {
		t.Errorf("ObservedFor(x) without its annotation = %+v, want nothing", got)
	}
	if got := inject.Strip(user); !equality.Semantic.DeepEqual(got, user) {
		t.Errorf("Strip removed user entries (-user +stripped):\n%s", cmp.Diff(user, got))
	}
	p := plan(t, scratchVolume(), sts)
	live := inject.Inject(user, []*inject.Plan{p})
	if got, want := inject.Observed(&live), inject.Desired([]*inject.Plan{p}); !got.Equal(want) {
		t.Errorf("Observed took user entries as ours (-ours +observed):\n%s", cmp.Diff(want, got, equateEntries))
	}
	if got := inject.Strip(live); !equality.Semantic.DeepEqual(got, user) {
		t.Errorf("Strip next to an injection removed user entries (-user +stripped):\n%s", cmp.Diff(user, got))
	}
	if got := inject.ObservedFor(&live, "x"); !got.Empty() {
		t.Errorf("ObservedFor(x) next to an injection = %+v, want nothing", got)
	}
}

func withTemplate(spec appsv1.StatefulSetSpec, tmpl corev1.PodTemplateSpec) appsv1.StatefulSetSpec {
	out := *spec.DeepCopy()
	out.Template = tmpl
	return out
}

func ptrTo[T any](v T) *T { return &v }
