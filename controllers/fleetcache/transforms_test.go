package fleetcache

import (
	"encoding/json"
	"fmt"
	"reflect"
	"runtime"
	"slices"
	"strings"
	"testing"
	"unsafe"

	"github.com/google/go-cmp/cmp"
	"github.com/google/go-cmp/cmp/cmpopts"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/api/resource"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	toolscache "k8s.io/client-go/tools/cache"
	"k8s.io/utils/ptr"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/decide"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/test/testenv"
)

func TestTrimStatefulSet(t *testing.T) {
	sts := testenv.FullStatefulSet("mariadb:11.4", nil, nil, "2Gi")
	sts.Spec.Template.Annotations = map[string]string{"scratch.dbtune.io/tmp": "abc", "kubectl.kubernetes.io/restartedAt": "now"}
	sts.Annotations = map[string]string{lastAppliedAnnotation: `{"kind":"StatefulSet"}`, "team": "db"}
	sts.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	sts.Spec.Selector = &metav1.LabelSelector{MatchLabels: map[string]string{"app": "db"}}
	sts.Status.Conditions = []appsv1.StatefulSetCondition{{Type: "Unrelated", Status: corev1.ConditionTrue}}
	want := sts.DeepCopy()

	got := mustTrim(t, sts).(*appsv1.StatefulSet)
	if got.Spec.Template.Spec.Containers != nil || got.Spec.Template.Spec.Volumes != nil || got.Spec.Template.Labels != nil {
		t.Errorf("the pod template's spec or labels kept: %+v", got.Spec.Template)
	}
	if got.Spec.VolumeClaimTemplates != nil || got.Spec.Selector != nil || got.ManagedFields != nil || got.Status.Conditions != nil {
		t.Errorf("claims, selector, managedFields or conditions kept: %+v", got)
	}
	// What every reconcile reads stays as it was.
	want.Annotations = nil
	want.ManagedFields, want.Status.Conditions = nil, nil
	if diff := cmp.Diff(want.ObjectMeta, got.ObjectMeta); diff != "" {
		t.Errorf("metadata (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Spec.Template.Annotations, got.Spec.Template.Annotations); diff != "" {
		t.Errorf("pod template annotations (-want +got):\n%s", diff)
	}
	if diff := cmp.Diff(want.Status, got.Status); diff != "" {
		t.Errorf("status (-want +got):\n%s", diff)
	}
	if *got.Spec.Replicas != 3 || *got.Spec.UpdateStrategy.RollingUpdate.Partition != 1 {
		t.Errorf("replicas or update strategy dropped: %+v", got.Spec)
	}
	if cm := (&corev1.ConfigMap{Data: map[string]string{"k": "v"}}); mustTrim(t, cm) != cm {
		t.Error("another kind was not passed through")
	}
}

// lastAppliedAnnotation is where kubectl's client-side apply keeps a second copy of the whole
// manifest.
const lastAppliedAnnotation = "kubectl.kubernetes.io/last-applied-configuration"

func mustTrim(t *testing.T, obj any) any {
	t.Helper()
	out, err := TrimStatefulSet(obj)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// scratchVolumes is svs as a sync reads them, through pointers.
func scratchVolumes(svs ...v1alpha1.ScratchVolume) []*v1alpha1.ScratchVolume {
	out := make([]*v1alpha1.ScratchVolume, len(svs))
	for i := range svs {
		out[i] = &svs[i]
	}
	return out
}

// TestTrimmedStatefulSetsReportTheSame plans each case on the whole StatefulSet, before and after
// the injection, and checks that the cache's trimmed copy gives what a reconcile reads of it
// without planning the same as the whole one: the inputs that key the remembered decision, the
// ScratchVolumes whose entries it carries, and the status reported from each outcome.
func TestTrimmedStatefulSetsReportTheSame(t *testing.T) {
	mariadbFlags := []corev1.EnvVar{{Name: "MARIADB_EXTRA_FLAGS", Value: "--max-connections=500"}}
	cases := []struct {
		name string
		sts  *appsv1.StatefulSet
		svs  []*v1alpha1.ScratchVolume
	}{
		{"MariaDB, defaults", testenv.FullStatefulSet("mariadb:11.4", []string{"--innodb-buffer-pool-size=512M"}, nil, "2Gi"), scratchVolumes(testenv.SelectorScratchVolume("a", nil))},
		{"MySQL 8.4, Args", testenv.FullStatefulSet("mysql:8.4", nil, nil, "2048Mi"), scratchVolumes(testenv.SelectorScratchVolume("a", func(s *v1alpha1.ScratchVolumeSpec) {
			s.MySQL = &v1alpha1.MySQLSpec{Injection: v1alpha1.InjectionArgs}
		}))},
		{"Bitnami, ExtraFlags, Reserve", testenv.FullStatefulSet("bitnami/mariadb:11.4", nil, mariadbFlags, "2Gi"), scratchVolumes(testenv.SelectorScratchVolume("a", func(s *v1alpha1.ScratchVolumeSpec) {
			s.MySQL = &v1alpha1.MySQLSpec{Injection: v1alpha1.InjectionExtraFlags}
			s.Memory = v1alpha1.MemorySpec{Accounting: v1alpha1.MemoryReserve}
		}))},
		{"limit too small", testenv.FullStatefulSet("mariadb:11.4", nil, nil, "200Mi"), scratchVolumes(testenv.SelectorScratchVolume("a", nil))},
		{"two ScratchVolumes", testenv.FullStatefulSet("mysql:8.0.39", nil, nil, "4Gi"), scratchVolumes(testenv.SelectorScratchVolume("a", nil), testenv.SelectorScratchVolume("b", nil))},
	}
	opts := []cmp.Option{cmp.Exporter(func(reflect.Type) bool { return true }), cmpopts.EquateEmpty()}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			full := c.sts
			for round := range 2 {
				trimmed := mustTrim(t, full.DeepCopy()).(*appsv1.StatefulSet)
				if !InputsOf(full, c.svs, "").equal(InputsOf(trimmed, c.svs, "")) {
					t.Errorf("round %d: the decision inputs differ: whole %+v, trimmed %+v", round, InputsOf(full, c.svs, ""), InputsOf(trimmed, c.svs, ""))
				}
				if diff := cmp.Diff(inject.ScratchVolumes(&full.Spec.Template), inject.ScratchVolumes(&trimmed.Spec.Template)); diff != "" {
					t.Errorf("round %d: the injected-by index differs (-whole +trimmed):\n%s", round, diff)
				}
				tp := decide.PlanTarget(c.svs, full, inject.Namespace{}, decide.Gate{})
				for i := range c.svs {
					o := tp.Outcomes[c.svs[i].Name]
					whole := decide.NewReport(c.svs[i], decide.ReportSettings{}, decide.Synced{Found: 1, Targets: []decide.Target{{StatefulSet: full, Outcome: o}}})
					cached := decide.NewReport(c.svs[i], decide.ReportSettings{}, decide.Synced{Found: 1, Targets: []decide.Target{{StatefulSet: trimmed, Outcome: o}}})
					if diff := cmp.Diff(whole, cached, opts...); diff != "" {
						t.Errorf("round %d, %s: the status from the trimmed StatefulSet differs (-whole +trimmed):\n%s", round, c.svs[i].Name, diff)
					}
					st := whole.Verdict(decide.Ending{}).Status
					if round == 1 && len(st.Targets) == 1 && st.Targets[0].Injected && meta.IsStatusConditionTrue(st.Conditions, v1alpha1.ConditionRolledOut) {
						t.Errorf("round %d, %s: a partitioned rollout half-way was reported done", round, c.svs[i].Name)
					}
				}
				if round == 1 && !tp.Settled() {
					t.Errorf("the injected StatefulSet is not settled: desired %+v, observed %+v, pending %v", tp.Desired, tp.Observed, tp.Pending)
				}
				// The next round reports the StatefulSet as the injection leaves it.
				full = full.DeepCopy()
				full.Spec.Template = inject.Inject(full.Spec.Template, decide.WinningPlans(tp.Outcomes))
			}
		})
	}
}

// TestPlannedContainer checks what a remembered decision keeps of the container that gets the
// volume: a copy of what limitsFor reads, held once for the decisions that keep an equal one.
func TestPlannedContainer(t *testing.T) {
	a := testenv.FullStatefulSet("mariadb:11.4", []string{"--innodb-buffer-pool-size=1G"}, nil, "2Gi")
	b := testenv.FullStatefulSet("mysql:8.4", []string{"--innodb-buffer-pool-size=1G"}, nil, "2Gi")
	c := testenv.FullStatefulSet("mysql:8.4", []string{"--innodb-buffer-pool-size=1G"}, nil, "3Gi")
	ca := decide.PlannedContainer(a, "db")
	want := corev1.Container{Name: "db", Args: []string{"--innodb-buffer-pool-size=1G"}, Resources: *a.Spec.Template.Spec.Containers[0].Resources.DeepCopy()}
	if diff := cmp.Diff(want, *ca); diff != "" {
		t.Errorf("planned container (-want +got):\n%s", diff)
	}
	if decide.PlannedContainer(a, "nope") != nil {
		t.Error("a container that is not there was found")
	}
	a.Spec.Template.Spec.Containers[0].Args[0] = "changed"
	a.Spec.Template.Spec.Containers[0].Resources.Limits[corev1.ResourceMemory] = resource.MustParse("1Gi")
	if diff := cmp.Diff(want, *ca); diff != "" {
		t.Errorf("the planned container changed with its StatefulSet (-want +got):\n%s", diff)
	}
	var shared sharedValues[corev1.Container]
	sb, sb2, sc := shared.intern(decide.PlannedContainer(b, "db")), shared.intern(decide.PlannedContainer(b.DeepCopy(), "db")), shared.intern(decide.PlannedContainer(c, "db"))
	if sb != sb2 {
		t.Error("two equal containers are held twice")
	}
	if sb == sc {
		t.Error("a container with a 2Gi and one with a 3Gi limit are held as one")
	}
	if got := sc.Resources.Limits[corev1.ResourceMemory]; got.String() != "3Gi" {
		t.Errorf("memory limit %s after sharing, want 3Gi", got.String())
	}
	for i := range maxSharedValues + 1 {
		shared.intern(&corev1.Container{Name: fmt.Sprint("c", i)})
	}
	if n := len(shared.values.values); n > maxSharedValues || n == 0 {
		t.Errorf("%d shared values kept, want at most the bound %d", n, maxSharedValues)
	}
}

// TestShareConfigMapData checks that equal drop-in files of two cached ConfigMaps are held once,
// as they came.
func TestShareConfigMapData(t *testing.T) {
	file := func(s string) *corev1.ConfigMap {
		// Built at run time, as a decoded object's are: two equal files start as two strings.
		return &corev1.ConfigMap{Data: map[string]string{"dbtune.cnf": strings.Clone(s)}}
	}
	cached := func(cm *corev1.ConfigMap) string {
		out, err := ShareConfigMapData(cm)
		if err != nil {
			t.Fatal(err)
		}
		return out.(*corev1.ConfigMap).Data["dbtune.cnf"]
	}
	a, b := cached(file("[mysqld]\ntmpdir=/var/lib/mysql-tmp\n")), cached(file("[mysqld]\ntmpdir=/var/lib/mysql-tmp\n"))
	c := cached(file("[mysqld]\ntmpdir=/tmp/ram\n"))
	if a != "[mysqld]\ntmpdir=/var/lib/mysql-tmp\n" || c != "[mysqld]\ntmpdir=/tmp/ram\n" {
		t.Errorf("the files changed: %q, %q", a, c)
	}
	if unsafe.StringData(a) != unsafe.StringData(b) {
		t.Error("two ConfigMaps with the same file hold two copies of it")
	}
	if sts := (&appsv1.StatefulSet{}); func() any { o, _ := ShareConfigMapData(sts); return o }() != sts {
		t.Error("another kind was not passed through")
	}
}

// TestShareMetadata checks that cached objects with equal labels, annotations, data or owners
// hold one map or list between them, equal to what each came with, and that objects that differ
// in any of them, if only in an owner's flag, do not.
func TestShareMetadata(t *testing.T) {
	owner := func(name string, controller *bool) []metav1.OwnerReference {
		return []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ScratchVolume", Name: name, UID: types.UID(name + "-uid"), Controller: controller}}
	}
	cm := func(sv, file string, controller *bool) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "fleet", Name: "cm-" + sv,
				Labels: map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ScratchVolumeLabel: sv}, OwnerReferences: owner(sv, controller)},
			Data: map[string]string{"dbtune.cnf": file},
		}
	}
	cached := func(c *corev1.ConfigMap) *corev1.ConfigMap {
		want := c.DeepCopy()
		want.Annotations = nil
		out, err := ShareConfigMapData(c)
		if err != nil {
			t.Fatal(err)
		}
		got := out.(*corev1.ConfigMap)
		if !equality.Semantic.DeepEqual(want, got) {
			t.Fatalf("sharing changed the ConfigMap: %s", cmp.Diff(want, got))
		}
		return got
	}
	same := func(a, b map[string]string) bool {
		return reflect.ValueOf(a).UnsafePointer() == reflect.ValueOf(b).UnsafePointer()
	}
	a, b := cached(cm("tmp", "[mysqld]\n", ptr.To(true))), cached(cm("tmp", "[mysqld]\n", ptr.To(true)))
	if !same(a.Labels, b.Labels) || !same(a.Data, b.Data) || &a.OwnerReferences[0] != &b.OwnerReferences[0] {
		t.Error("two ConfigMaps of one ScratchVolume hold their equal labels, data or owners twice")
	}
	other, otherFile, otherFlag := cached(cm("tmp2", "[mysqld]\n", ptr.To(true))), cached(cm("tmp", "[mariadb]\n", ptr.To(true))), cached(cm("tmp", "[mysqld]\n", ptr.To(false)))
	if same(a.Labels, other.Labels) || &a.OwnerReferences[0] == &other.OwnerReferences[0] || !same(a.Data, other.Data) {
		t.Error("the ConfigMaps of two ScratchVolumes with the same file share labels or owners, or not the file")
	}
	if same(a.Data, otherFile.Data) || !same(a.Labels, otherFile.Labels) {
		t.Error("ConfigMaps with two files share them, or not their equal labels")
	}
	if &a.OwnerReferences[0] == &otherFlag.OwnerReferences[0] || *otherFlag.OwnerReferences[0].Controller {
		t.Error("owners that differ in their controller flag are held as one")
	}
	// Equal maps made in another order are one; a map with a key more is another.
	m1, m2 := shareMap(map[string]string{"a": "1", "b": "2"}), shareMap(map[string]string{"b": "2", "a": "1"})
	m3 := shareMap(map[string]string{"a": "1", "b": "2", "c": ""})
	if !same(m1, m2) || same(m1, m3) || len(m3) != 3 {
		t.Errorf("maps shared wrongly: %v %v %v", m1, m2, m3)
	}
	// Keys and values that run into each other make another key: {"a1": "2"} is not {"a": "12"}.
	if same(shareMap(map[string]string{"a1": "2"}), shareMap(map[string]string{"a": "12"})) {
		t.Error("two maps whose keys and values run into each other alike are held as one")
	}
	if shareMap(nil) != nil || shareOwners(nil) != nil {
		t.Error("nothing became something")
	}
}

func TestShareTargetStatuses(t *testing.T) {
	mysql := []v1alpha1.TempLocation{
		{Data: v1alpha1.TempDataTmpdir, Medium: v1alpha1.TempMediumMemory, Option: "tmpdir", Path: "/var/lib/mysql-tmp"},
		{Data: v1alpha1.TempDataSessionTempTablespaces, Medium: v1alpha1.TempMediumMemory, Option: "innodb_temp_tablespaces_dir", Path: "/var/lib/mysql-tmp/innodb_temp"},
	}
	// The same two lists but the path of the second, which must not be taken for the first.
	moved := slices.Clone(mysql)
	moved[1].Path = "/var/lib/mysql-tmp/other"
	var sv v1alpha1.ScratchVolume
	for i, l := range [][]v1alpha1.TempLocation{mysql, mysql, moved, nil, mysql} {
		sv.Status.Targets = append(sv.Status.Targets, v1alpha1.ScratchTargetStatus{
			Name: fmt.Sprintf("db-%d", i), Container: "mysql", Flavor: v1alpha1.FlavorMySQL, Version: "8.4.2",
			Injected: true, ConfigHash: "5d41402abc4b2a76", Injection: v1alpha1.InjectionArgs, TempLocations: l, Replicas: int32(i),
		})
	}
	sv.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl"}}
	// Decoded, as the cache's objects are: every string and list its own copy.
	raw, err := json.Marshal(&sv)
	if err != nil {
		t.Fatal(err)
	}
	decoded := &v1alpha1.ScratchVolume{}
	if err := json.Unmarshal(raw, decoded); err != nil {
		t.Fatal(err)
	}
	want := decoded.DeepCopy()
	want.ManagedFields = nil

	out, err := ShareTargetStatuses(decoded)
	if err != nil {
		t.Fatal(err)
	}
	got := out.(*v1alpha1.ScratchVolume)
	if diff := cmp.Diff(want, got); diff != "" {
		t.Fatalf("the status changed (-want +got):\n%s", diff)
	}
	ts := got.Status.Targets
	if &ts[0].TempLocations[0] != &ts[1].TempLocations[0] || &ts[0].TempLocations[0] != &ts[4].TempLocations[0] {
		t.Error("equal location lists are held more than once")
	}
	if &ts[0].TempLocations[0] == &ts[2].TempLocations[0] {
		t.Error("two different location lists were taken for one")
	}
	if unsafe.StringData(ts[0].ConfigHash) != unsafe.StringData(ts[3].ConfigHash) ||
		unsafe.StringData(ts[0].TempLocations[0].Path) != unsafe.StringData(ts[2].TempLocations[0].Path) {
		t.Error("equal strings are held more than once")
	}
	if cap(ts) != len(ts) || cap(ts[0].TempLocations) != len(ts[0].TempLocations) {
		t.Errorf("lists keep room the decoder left: %d of %d targets, %d of %d locations", len(ts), cap(ts), len(ts[0].TempLocations), cap(ts[0].TempLocations))
	}
	// A list the cache shares must not be the one a change to another target's copy would reach.
	ts[0].TempLocations = append(ts[0].TempLocations, v1alpha1.TempLocation{Data: v1alpha1.TempDataTmpdir})
	if len(ts[1].TempLocations) != 2 || len(ts[4].TempLocations) != 2 {
		t.Error("appending to one target's locations changed another's")
	}
	if sts := (&appsv1.StatefulSet{}); func() any { o, _ := ShareTargetStatuses(sts); return o }() != sts {
		t.Error("another kind was not passed through")
	}
}

// BenchmarkCachedObjects reports what the cache keeps per object of each kind the manager caches
// in number, as decoded from the API server's answer and after the cache's transform: a fleet's
// StatefulSet (injected), its drop-in ConfigMap, and one target in a selector's status.
func BenchmarkCachedObjects(b *testing.B) {
	const n = 2000
	sts := func(i int) *appsv1.StatefulSet {
		s := testenv.FullStatefulSet("mysql:8.4", nil, nil, "2Gi")
		s.Name, s.UID = fmt.Sprintf("db-%04d", i), types.UID(fmt.Sprintf("6f1e3c52-4b7a-4e8e-9a1c-%012d", i))
		s.Labels = map[string]string{"app.kubernetes.io/name": "mysql", "app.kubernetes.io/part-of": "fleet", "tier": "db"}
		s.Annotations = map[string]string{lastAppliedAnnotation: strings.Repeat("x", 3000)}
		s.ManagedFields = []metav1.ManagedFieldsEntry{{Manager: "kubectl", Operation: metav1.ManagedFieldsOperationApply,
			FieldsV1: metav1.NewFieldsV1(strings.Repeat("f", 2000))}}
		s.Spec.Template.Annotations = map[string]string{"scratch.dbtune.io/tmp": "5d41402abc4b2a76"}
		return s
	}
	cm := func(i int) *corev1.ConfigMap {
		return &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{Namespace: "fleet-3", Name: fmt.Sprintf("tmp-db-%04d-scratch", i), UID: types.UID(fmt.Sprintf("0b6b8c1e-2f52-4d1a-8f0e-%012d", i)),
				ResourceVersion: "123456", Labels: map[string]string{v1alpha1.ManagedByLabel: v1alpha1.ManagedByValue, v1alpha1.ScratchVolumeLabel: "tmp"},
				Annotations: map[string]string{v1alpha1.TargetAnnotation: fmt.Sprintf("db-%04d", i)},
				OwnerReferences: []metav1.OwnerReference{{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ScratchVolume", Name: "tmp",
					UID: "3f2a9d7e-1c4b-4f6a-9e8d-7b5c3a1f0e2d", Controller: ptr.To(true), BlockOwnerDeletion: ptr.To(true)}}},
			Data: map[string]string{"dbtune.cnf": "[mysqld]\ntmpdir = /var/lib/mysql-tmp\ninnodb_temp_tablespaces_dir = /var/lib/mysql-tmp/innodb_temp\n"},
		}
	}
	sv := func(i int) *v1alpha1.ScratchVolume {
		s := testenv.SelectorScratchVolume(fmt.Sprintf("tmp-%d", i), nil)
		for t := range 100 {
			s.Status.Targets = append(s.Status.Targets, v1alpha1.ScratchTargetStatus{Name: fmt.Sprintf("db-%04d", t), Container: "mysql",
				Flavor: v1alpha1.FlavorMySQL, Version: "8.4.2", Injected: true, ConfigHash: "5d41402abc4b2a76", Injection: v1alpha1.InjectionArgs,
				Replicas: 3, UpdatedReplicas: 3, ReadyReplicas: 3, TempLocations: []v1alpha1.TempLocation{
					{Data: v1alpha1.TempDataTmpdir, Medium: v1alpha1.TempMediumMemory, Option: "tmpdir", Path: "/var/lib/mysql-tmp"},
					{Data: v1alpha1.TempDataSessionTempTablespaces, Medium: v1alpha1.TempMediumMemory, Option: "innodb_temp_tablespaces_dir", Path: "/var/lib/mysql-tmp/innodb_temp"},
					{Data: v1alpha1.TempDataGlobalTempTablespace, Medium: v1alpha1.TempMediumDisk, Option: "innodb_temp_data_file_path"},
					{Data: v1alpha1.TempDataReplicaLoad, Medium: v1alpha1.TempMediumDisk, Option: "replica_load_tmpdir", Path: "/var/lib/mysql"},
				}})
		}
		return &s
	}
	for _, c := range []struct {
		name      string
		count     int // objects, or targets in each status
		build     func(int) any
		decode    func(any) any
		transform toolscache.TransformFunc
	}{
		{"StatefulSet", n, func(i int) any { return sts(i) }, decodeProto[appsv1.StatefulSet], TrimStatefulSet},
		{"ConfigMap", n, func(i int) any { return cm(i) }, decodeProto[corev1.ConfigMap], ShareConfigMapData},
		{"ScratchVolumeTarget", 100, func(i int) any { return sv(i) }, decodeJSON[v1alpha1.ScratchVolume], ShareTargetStatuses},
	} {
		objects := n
		if c.count != n {
			objects = n / c.count
		}
		wire := make([]any, objects)
		for i := range wire {
			wire[i] = c.build(i)
		}
		for _, transformed := range []bool{false, true} {
			name := c.name + "/decoded"
			if transformed {
				name = c.name + "/cached"
			}
			b.Run(name, func(b *testing.B) {
				var perObject float64
				for b.Loop() {
					perObject = retained(func() any {
						kept := make([]any, len(wire))
						for i, w := range wire {
							kept[i] = c.decode(w)
							if transformed {
								kept[i], _ = c.transform(kept[i])
							}
						}
						return kept
					}) / float64(n)
				}
				b.ReportMetric(perObject, "B/"+c.name)
			})
		}
	}
}

// retained is the heap what make returns holds on to.
func retained(make func() any) float64 {
	var before, after runtime.MemStats
	runtime.GC()
	runtime.ReadMemStats(&before)
	kept := make()
	runtime.GC()
	runtime.ReadMemStats(&after)
	runtime.KeepAlive(kept)
	return float64(after.HeapAlloc) - float64(before.HeapAlloc)
}

// decodeProto decodes a copy of obj from its protobuf form, as a watch of a built-in kind does.
func decodeProto[T any, P interface {
	*T
	Marshal() ([]byte, error)
	Unmarshal([]byte) error
}](obj any) any {
	raw, err := obj.(P).Marshal()
	if err != nil {
		panic(err)
	}
	out := P(new(T))
	if err := out.Unmarshal(raw); err != nil {
		panic(err)
	}
	return out
}

// decodeJSON decodes a copy of obj from its JSON form, as a watch of a custom resource does.
func decodeJSON[T any](obj any) any {
	raw, err := json.Marshal(obj)
	if err != nil {
		panic(err)
	}
	out := new(T)
	if err := json.Unmarshal(raw, out); err != nil {
		panic(err)
	}
	return out
}
