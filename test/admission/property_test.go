package admission_test

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"runtime/debug"
	"slices"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/resource"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/controllers/inject"
	"github.com/dbtune/scratch-operator/controllers/mysql"
	"github.com/dbtune/scratch-operator/test/testenv"
)

// randomSpecs is how many generated specs TestRandomSpecs sends; randomSeed makes them the same
// on every run.
const (
	randomSpecs = 400
	randomSeed  = 20240611
)

// FuzzAdmittedSpecsArePlannedFaithfully sends every generated ScratchVolume to the real API server
// (dry run). A rejection must be an Invalid error. An admitted spec, as the server returns it with
// its defaults, is planned against every fixture StatefulSet: the plan must inject exactly what
// the spec says — as the API server stores the injected StatefulSet and as my_print_defaults,
// the database's own option-file parser, reads the drop-in — or be a Problem with a named reason.
//
// Plain `go test` runs the seeds (the samples, the API tests' values and tricky ones) and
// testdata/fuzz; `make fuzz` explores from there.
func FuzzAdmittedSpecsArePlannedFaithfully(f *testing.F) {
	c := newChecker(f)
	for _, in := range seeds(f) {
		f.Add(in.Name, in.Size, in.Purpose, in.Container, in.MountPath,
			in.TargetName, in.SelectorKey, in.SelectorOp, in.SelectorValue,
			in.MySQL, in.Flavor, in.Version, in.Injection, in.DataDir, in.ConfigDir, in.ReplicaLoadDir, in.InnoDBTmpdir,
			in.SessionTempTablespaces, in.Accounting, in.Headroom, in.ControllerGroup, in.ControllerKind)
	}
	f.Cleanup(func() { c.stats.log(f) })
	f.Fuzz(func(t *testing.T, name, size, purpose, container, mountPath,
		targetName, selectorKey, selectorOp, selectorValue string,
		withMySQL bool, flavor, version, injection, dataDir, configDir, replicaLoadDir, innodbTmpdir,
		sessionTempTablespaces, accounting, headroom, controllerGroup, controllerKind string,
	) {
		in := specInput{Name: name, Size: size, Purpose: purpose, Container: container, MountPath: mountPath,
			TargetName: targetName, SelectorKey: selectorKey, SelectorOp: selectorOp, SelectorValue: selectorValue,
			MySQL: withMySQL, Flavor: flavor, Version: version, Injection: injection, DataDir: dataDir,
			ConfigDir: configDir, ReplicaLoadDir: replicaLoadDir, InnoDBTmpdir: innodbTmpdir,
			SessionTempTablespaces: sessionTempTablespaces, Accounting: accounting, Headroom: headroom,
			ControllerGroup: controllerGroup, ControllerKind: controllerKind}
		if failures := c.check(t, in.object(c.ns)); len(failures) > 0 {
			t.Errorf("input %s:\n%s", in, strings.Join(failures, "\n"))
		}
	})
}

// TestRandomSpecs is the bounded exploration of `make test`: the samples verbatim, then
// randomSpecs specs drawn from the seeds with one or two fields mutated, the same on every run.
func TestRandomSpecs(t *testing.T) {
	c := newChecker(t)
	failed := 0
	report := func(what string, failures []string) {
		if len(failures) == 0 {
			return
		}
		if failed++; failed <= 10 {
			t.Errorf("%s:\n%s", what, strings.Join(failures, "\n"))
		}
	}
	for _, obj := range sampleObjects(t) {
		obj = obj.DeepCopy()
		obj.SetNamespace(c.ns)
		report("sample "+obj.GetName(), c.check(t, obj))
	}
	pool := seeds(t)
	var admitted []specInput
	for _, in := range pool {
		if create(c.e.Client, in.object(c.ns)) == nil {
			admitted = append(admitted, in)
		}
	}
	g := newGenerator(randomSeed, pool, admitted)
	start := time.Now()
	for i := range randomSpecs {
		in := g.next()
		report(fmt.Sprintf("random spec %d, input %s", i, in), c.check(t, in.object(c.ns)))
	}
	if failed > 10 {
		t.Errorf("… and %d more failing specs", failed-10)
	}
	t.Logf("%d random specs in %s", randomSpecs, time.Since(start).Round(time.Millisecond))
	c.stats.log(t)
	if c.stats.admitted == 0 || c.stats.rejected == 0 || c.stats.plans == 0 || c.stats.configFiles == 0 || c.stats.argPlans == 0 ||
		c.stats.envPlans == 0 || c.stats.podsAdmitted == 0 {
		t.Errorf("the generator lost its coverage: %+v", c.stats)
	}
}

// checker holds what every check shares: the API server, a namespace, the fixtures and the
// option-file parser. Checks run one at a time (subtests and fuzz inputs are not parallel).
type checker struct {
	e        *testenv.Env
	ns       string
	fixtures []fixture
	printers []printer

	read map[string]readBack // my_print_defaults output by drop-in content
	// stored caches checkStored by fixture, plan hash and spec (without its target, which planning
	// does not read): the API server's dry run is the slow part, and the same plan recurs.
	stored map[string][]string
	stats  stats
	// policed is the namespace whose rules the injected pods must pass (checkPodsAdmitted).
	policed *policed
}

// readBack is what each server's my_print_defaults prints for each group of one drop-in file.
type readBack struct {
	groups map[string]map[string][]option // by printer, then group
	err    error
}

// printer is one server's option-file parser: MariaDB's my_print_defaults from this machine's
// packages, and MySQL's from the MySQL test image, which parses option files with its own code.
type printer struct {
	name string
	argv []string
}

// mysqlPrinter runs the MySQL image's my_print_defaults with the image's own loader and libraries
// (they are newer than this machine's), reading files of this machine.
func mysqlPrinter(root string) (printer, error) {
	triplet, loader := "x86_64-linux-gnu", "ld-linux-x86-64.so.2"
	if runtime.GOARCH == "arm64" {
		triplet, loader = "aarch64-linux-gnu", "ld-linux-aarch64.so.1"
	}
	p := printer{name: "MySQL", argv: []string{
		filepath.Join(root, "usr", "lib", triplet, loader),
		"--library-path", filepath.Join(root, "usr", "lib", triplet),
		filepath.Join(root, "usr", "bin", "my_print_defaults"),
	}}
	out, err := exec.Command(p.argv[0], append(p.argv[1:], "--version")...).CombinedOutput()
	if err != nil {
		return printer{}, fmt.Errorf("MySQL's my_print_defaults in %s does not run: %w: %s", root, err, out)
	}
	// "…/my_print_defaults  Ver 9.7.4-2 for Linux on x86_64 ((Debian))"
	if _, after, ok := strings.Cut(string(out), " Ver "); ok {
		p.name = "MySQL " + strings.Fields(after)[0]
	}
	return p, nil
}

type option struct{ name, value string }

func (o option) String() string { return fmt.Sprintf("%s=%q", o.name, o.value) }

// Groups the drop-in may write: the server's, and the two a Galera state transfer reads.
var groups = []string{"mysqld", "sst", "xtrabackup"}

func newChecker(t testing.TB) *checker {
	t.Helper()
	e := requireEnv(t)
	mariadbPrinter, err := exec.LookPath("my_print_defaults")
	if err != nil {
		testenv.SkipOrFail(t, "my_print_defaults not found (%v): install mariadb-client, whose option-file parser checks the drop-ins", err)
	}
	printers := []printer{{name: "MariaDB", argv: []string{mariadbPrinter}}}
	root, err := testenv.DatabaseImageRoot("mysql-sid")
	if err == nil {
		var p printer
		if p, err = mysqlPrinter(root); err == nil {
			printers = append(printers, p)
		}
	}
	if err != nil {
		testenv.SkipOrFail(t, "MySQL's option-file parser is missing, so the drop-ins are read by MariaDB's alone: %v", err)
	}
	for _, p := range printers {
		t.Logf("drop-ins are read back by %s's option-file parser (%s)", p.name, p.argv[len(p.argv)-1])
	}
	c := &checker{e: e, ns: e.Namespace(t), printers: printers, read: map[string]readBack{}, stored: map[string][]string{}}
	c.policed = newPoliced(t, e.Client, e.Namespace(t))
	c.fixtures = fixtures(c.ns)
	// Each fixture must itself be valid, or every injection into it would fail for the wrong reason.
	for _, fx := range c.fixtures {
		if err := create(e.Client, fx.sts.DeepCopy()); err != nil {
			t.Fatalf("fixture %s is not a valid StatefulSet: %v", fx.name, err)
		}
	}
	return c
}

// stats counts what the checks exercised.
type stats struct {
	specs, admitted, rejected              int
	plans, problems, configFiles, argPlans int
	envPlans                               int
	// podsAdmitted, podsPolicyRefusals, podsOtherRefusals and podsOriginalRefused count the pods of
	// the policed namespace: injected pods admitted, plans refused for its rules (and rightly so),
	// plans refused otherwise, and fixtures whose own pods it refuses.
	podsAdmitted, podsPolicyRefusals, podsOtherRefusals, podsOriginalRefused int
	perFixture                                                               map[string]*fixtureStats
	rejectedFields, problemReasons, plainErrs                                map[string]int
}

type fixtureStats struct{ planned, problem int }

func (s *stats) count(m *map[string]int, key string) {
	if *m == nil {
		*m = map[string]int{}
	}
	(*m)[key]++
}

func (s *stats) fixture(name string) *fixtureStats {
	if s.perFixture == nil {
		s.perFixture = map[string]*fixtureStats{}
	}
	if s.perFixture[name] == nil {
		s.perFixture[name] = &fixtureStats{}
	}
	return s.perFixture[name]
}

func (s *stats) log(t testing.TB) {
	t.Logf("specs: %d sent, %d admitted, %d rejected; plans: %d (%d drop-ins read back, %d with flags, %d with extra-flags variables), problems: %d",
		s.specs, s.admitted, s.rejected, s.plans, s.configFiles, s.argPlans, s.envPlans, s.problems)
	for _, name := range sortedKeys(s.perFixture) {
		f := s.perFixture[name]
		t.Logf("  %-24s planned %4d, problem %4d", name, f.planned, f.problem)
	}
	t.Logf("policed pods: %d injected admitted, %d plans refused for its rules, %d otherwise, %d fixtures' own pods refused",
		s.podsAdmitted, s.podsPolicyRefusals, s.podsOtherRefusals, s.podsOriginalRefused)
	t.Logf("problem reasons: %v", s.problemReasons)
	t.Logf("rejected fields: %v", s.rejectedFields)
	if len(s.plainErrs) > 0 {
		t.Logf("errors that are no *inject.Problem (the controller reports them as %s): %v", v1alpha1.ReasonInvalidLayout, s.plainErrs)
	}
}

func sortedKeys[V any](m map[string]V) []string {
	keys := make([]string, 0, len(m))
	for k := range m {
		keys = append(keys, k)
	}
	sort.Strings(keys)
	return keys
}

// check sends obj to the API server and, when it is admitted, plans it against every fixture. It
// returns what went wrong, each with enough context to reproduce it, and ends with the spec as
// the server admitted it.
func (c *checker) check(t testing.TB, obj *unstructured.Unstructured) []string {
	t.Helper()
	c.stats.specs++
	sent := obj.DeepCopy()
	err := create(c.e.Client, obj)
	if err != nil {
		c.stats.rejected++
		if !apierrors.IsInvalid(err) {
			return []string{fmt.Sprintf("the API server failed with %v instead of refusing the spec as Invalid:\n%s", err, manifest(sent))}
		}
		for _, cause := range causes(err) {
			c.stats.count(&c.stats.rejectedFields, cause)
		}
		if failures := checkQuantities(sent, err); len(failures) > 0 {
			return append(failures, "the spec as sent:\n"+manifest(sent))
		}
		return nil
	}
	c.stats.admitted++
	failures := checkQuantities(sent, nil)
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	if diff := lostFields(sent.Object["spec"], obj.Object["spec"], "spec"); len(diff) > 0 {
		fail("the API server returned other values than it was sent: %s", strings.Join(diff, "; "))
	}
	if sv, err := typed(obj); err != nil {
		fail("the controller cannot read the admitted ScratchVolume: %v", err)
	} else {
		if sel := sv.Spec.Target.Selector; sel != nil {
			s, err := sel.AsSelector()
			switch {
			case err != nil:
				fail("the admitted selector cannot be parsed (the controller would report %s): %v", v1alpha1.ReasonInvalidSelector, err)
			case len(sel.MatchExpressions) == 0 && !s.Matches(labelsOf(sel.MatchLabels)):
				fail("the admitted selector %v does not match the labels %v it names", s, sel.MatchLabels)
			}
		}
		for _, fx := range c.fixtures {
			for _, f := range c.planOne(t, sv, fx) {
				fail("StatefulSet %s: %s", fx.name, f)
			}
		}
	}
	if len(failures) > 0 {
		failures = append(failures, "the spec as admitted (defaults applied):\n"+manifest(obj))
	}
	return failures
}

func labelsOf(m map[string]v1alpha1.LabelValue) labels.Set {
	out := labels.Set{}
	for k, v := range m {
		out[k] = string(v)
	}
	return out
}

// causes names the fields of an Invalid error, for the statistics.
func causes(err error) []string {
	var status apierrors.APIStatus
	if !errors.As(err, &status) || status.Status().Details == nil {
		return []string{"?"}
	}
	var out []string
	for _, c := range status.Status().Details.Causes {
		field := c.Field
		if field == "<nil>" || field == "" {
			continue // "some validation rules were not checked because the object was invalid"
		}
		if i := strings.IndexAny(field, "[("); i >= 0 {
			field = field[:i]
		}
		out = append(out, field)
	}
	return out
}

// lostFields lists every leaf of sent that the server returned with another value.
func lostFields(sent, got any, at string) []string {
	switch s := sent.(type) {
	case map[string]any:
		g, ok := got.(map[string]any)
		if !ok {
			return []string{fmt.Sprintf("%s: sent an object, got %v", at, got)}
		}
		var out []string
		for _, k := range sortedKeys(s) {
			out = append(out, lostFields(s[k], g[k], at+"."+k)...)
		}
		return out
	case []any:
		g, ok := got.([]any)
		if !ok || len(g) != len(s) {
			return []string{fmt.Sprintf("%s: sent %v, got %v", at, sent, got)}
		}
		var out []string
		for i := range s {
			out = append(out, lostFields(s[i], g[i], fmt.Sprintf("%s[%d]", at, i))...)
		}
		return out
	default:
		if fmt.Sprint(sent) != fmt.Sprint(got) {
			return []string{fmt.Sprintf("%s: sent %q, got %q", at, fmt.Sprint(sent), fmt.Sprint(got))}
		}
		return nil
	}
}

// typed decodes the server's object as the controller does, refusing fields the Go type lacks.
func typed(obj *unstructured.Unstructured) (*v1alpha1.ScratchVolume, error) {
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return nil, err
	}
	dec := json.NewDecoder(bytes.NewReader(raw))
	dec.DisallowUnknownFields()
	sv := &v1alpha1.ScratchVolume{}
	if err := dec.Decode(sv); err != nil {
		return nil, err
	}
	return sv, nil
}

// planOne plans sv for one fixture and checks the outcome.
func (c *checker) planOne(t testing.TB, sv *v1alpha1.ScratchVolume, fx fixture) (failures []string) {
	t.Helper()
	st := c.stats.fixture(fx.name)
	plan, panicked, err := safePlan(sv, fx.sts.DeepCopy())
	if panicked != "" {
		return []string{panicked}
	}
	var problem *inject.Problem
	switch {
	case err != nil && errors.As(err, &problem) && plan != nil:
		return []string{fmt.Sprintf("NewPlan returned both a plan and the problem %v", problem)}
	case err != nil && errors.As(err, &problem):
		st.problem++
		c.stats.problems++
		c.stats.count(&c.stats.problemReasons, problem.Reason)
		return checkProblem(problem)
	case err != nil:
		// The controller would report it under a reason that names no cause (controllers/decide
		// calls any plain error InvalidLayout): a spec the API admits must be planned or refused
		// for a reason of its own, or the bound that refuses it belongs in admission.
		c.stats.count(&c.stats.plainErrs, err.Error())
		return []string{fmt.Sprintf("an admitted spec ends in a plain error, reported under a reason that names no cause: %v", err)}
	case plan == nil:
		return []string{"NewPlan returned neither a plan nor a problem"}
	}
	st.planned++
	c.stats.plans++
	return c.checkPlan(t, sv, fx, plan)
}

// safePlan is NewPlan with a panic recovered and described.
func safePlan(sv *v1alpha1.ScratchVolume, sts *appsv1.StatefulSet) (p *inject.Plan, panicked string, err error) {
	defer func() {
		if r := recover(); r != nil {
			p, panicked, err = nil, fmt.Sprintf("NewPlan panicked: %v\n%s", r, debug.Stack()), nil
		}
	}()
	p, err = inject.NewPlan(sv, sts, inject.Namespace{})
	return p, "", err
}

// problemReasons are the reasons NewPlan may give: those of the conditions under which a
// ScratchVolume is not injected into a StatefulSet (api/v1alpha1/reasons.go).
var problemReasons = []string{
	v1alpha1.ReasonContainerNotFound, v1alpha1.ReasonContainerAmbiguous, v1alpha1.ReasonMountPathInUse,
	v1alpha1.ReasonVolumeNameInUse, v1alpha1.ReasonOverriddenByArgs, v1alpha1.ReasonConfigDirUnusable,
	v1alpha1.ReasonArgsIgnored, v1alpha1.ReasonUnknownImage, v1alpha1.ReasonInvalidLayout,
	v1alpha1.ReasonMemoryBudget, v1alpha1.ReasonInvalidArgs, v1alpha1.ReasonInvalidSpec,
	v1alpha1.ReasonExtraFlagsNotMergeable, v1alpha1.ReasonEntrypointRemovesTmpdir,
}

func checkProblem(p *inject.Problem) []string {
	switch {
	case p.Reason == "" || !slices.Contains(problemReasons, p.Reason):
		return []string{fmt.Sprintf("problem with reason %q, which is none of the named reasons %v: %s", p.Reason, problemReasons, p.Message)}
	case p.Reason == v1alpha1.ReasonInvalidSpec:
		// checkSpec repeats the API's rules for objects stored before them: an object the API
		// admits today must pass it.
		return []string{fmt.Sprintf("an admitted spec is refused as %s, so admission and the controller disagree: %s", p.Reason, p.Message)}
	case strings.TrimSpace(p.Message) == "":
		return []string{fmt.Sprintf("problem %s without a message", p.Reason)}
	}
	return nil
}

// intent is what a spec asks of one fixture, derived from the spec and the documented layout, not
// from the controller's rendering.
type intent struct {
	mount string
	size  resource.Quantity
	// options are the [mysqld] settings in the order the drop-in writes them; sst the tmpdir of
	// the [sst] and [xtrabackup] groups ("" when the server has no Galera).
	options []option
	sst     string
	// persistent are the directories that must be on a persistent (or the disk fallback) volume.
	persistent []string
	// dataDir is the server's data directory, which must stay off the scratch volume.
	dataDir   string
	configDir string
	// mode is the injection the spec asks for, or the one the image calls for; env the variable
	// that carries the flags for ExtraFlags.
	mode v1alpha1.InjectionMode
	env  string
}

// checkPlan checks one plan against the spec, then injects it, has the API server store the
// StatefulSet (dry run) and checks what the server returns and what my_print_defaults reads.
func (c *checker) checkPlan(t testing.TB, sv *v1alpha1.ScratchVolume, fx fixture, p *inject.Plan) []string {
	t.Helper()
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }

	want := intent{mount: sv.EffectiveMountPath(), size: sv.Spec.Size}
	if p.Volume.EmptyDir == nil || p.Volume.EmptyDir.Medium != corev1.StorageMediumMemory || p.Volume.EmptyDir.SizeLimit == nil {
		fail("the scratch volume is not a memory-backed emptyDir with a size limit: %+v", p.Volume.VolumeSource)
		return failures
	}
	if got := p.Volume.EmptyDir.SizeLimit; got.Cmp(want.size) != 0 {
		fail("the scratch volume's sizeLimit is %s, the spec says %s", got, want.size.String())
	}
	if p.Mount.MountPath != want.mount || p.Mount.Name != p.Volume.Name {
		fail("the scratch volume is mounted as %q at %q, the spec says %q at %q", p.Mount.Name, p.Mount.MountPath, p.Volume.Name, want.mount)
	}
	if sv.Spec.Container != "" && p.Container != sv.Spec.Container {
		fail("the volume goes to container %q, spec.container says %q", p.Container, sv.Spec.Container)
	}
	db := containerOf(&fx.sts.Spec.Template.Spec, p.Container)
	if db == nil {
		fail("the plan names container %q, which the StatefulSet does not have", p.Container)
		return failures
	}
	failures = append(failures, checkMemory(sv, fx, db, p)...)

	if sv.Spec.Purpose == v1alpha1.PurposeGeneric {
		if p.Profile != nil || p.ConfigData != "" || p.ConfigVolume != nil || len(p.Args) > 0 || p.Init != nil || p.DiskVolume != nil {
			fail("a Generic volume configures the database: profile %v, drop-in %q, args %q, init %v, disk volume %v",
				p.Profile, p.ConfigData, p.Args, p.Init != nil, p.DiskVolume != nil)
		}
	} else {
		var wf []string
		want, wf = mysqlIntent(sv, fx, p, want)
		failures = append(failures, wf...)
		failures = append(failures, c.checkDelivery(p, want)...)
	}
	if len(failures) > 0 {
		return failures
	}
	spec := sv.Spec.DeepCopy()
	spec.Target = v1alpha1.ScratchTarget{}
	raw, err := json.Marshal(spec)
	if err != nil {
		return []string{err.Error()}
	}
	key := fx.name + "\x00" + p.Hash + "\x00" + string(raw)
	stored, ok := c.stored[key]
	if !ok {
		stored = c.checkStored(t, sv, fx, p, want)
		c.stored[key] = stored
	}
	return append(failures, stored...)
}

// checkMemory checks the accounting: Validate injects only within the limits, the container's and
// what the pod-level limit leaves beside the other containers that run with it (native sidecars
// included), Reserve adds exactly the size where the container or the pod sets memory, Ignore
// nothing.
func checkMemory(sv *v1alpha1.ScratchVolume, fx fixture, db *corev1.Container, p *inject.Plan) []string {
	pod := &fx.sts.Spec.Template.Spec
	_, hasReq := db.Resources.Requests[corev1.ResourceMemory]
	limit, hasLim := db.Resources.Limits[corev1.ResourceMemory]
	var podLimit resource.Quantity
	podHasMemory, podHasLim := false, false
	if pod.Resources != nil {
		_, podReq := pod.Resources.Requests[corev1.ResourceMemory]
		podLimit, podHasLim = pod.Resources.Limits[corev1.ResourceMemory]
		podHasMemory = podReq || podHasLim
	}
	switch sv.Spec.Memory.Accounting {
	case v1alpha1.MemoryReserve:
		if (hasReq || hasLim || podHasMemory) && (p.Reserve == nil || p.Reserve.Cmp(sv.Spec.Size) != 0) {
			return []string{fmt.Sprintf("Reserve accounting reserves %v, the spec's size is %s", p.Reserve, sv.Spec.Size.String())}
		}
	case v1alpha1.MemoryValidate, "":
		if p.Reserve != nil {
			return []string{fmt.Sprintf("Validate accounting reserves %s", p.Reserve)}
		}
		need := sv.Spec.Size.DeepCopy()
		headroom := resource.MustParse(v1alpha1.DefaultMemoryHeadroom)
		if sv.Spec.Memory.Headroom != nil {
			headroom = *sv.Spec.Memory.Headroom
		}
		need.Add(headroom)
		if sv.Spec.Purpose == v1alpha1.PurposeMySQLTmpdir && db.Name == fx.db {
			need.Add(*resource.NewQuantity(fx.bufferPool, resource.BinarySI))
		}
		if hasLim && limit.Cmp(need) < 0 {
			return []string{fmt.Sprintf("Validate accounting injects %s into a %s limit that needs %s", sv.Spec.Size.String(), limit.String(), need.String())}
		}
		if podHasLim {
			room := podLimit.DeepCopy()
			room.Sub(besideDatabase(pod, db.Name))
			if room.Cmp(need) < 0 {
				return []string{fmt.Sprintf("Validate accounting injects %s into a pod whose %s limit leaves the container %s, which needs %s",
					sv.Spec.Size.String(), podLimit.String(), room.String(), need.String())}
			}
		}
	default:
		if p.Reserve != nil {
			return []string{fmt.Sprintf("%s accounting reserves %s", sv.Spec.Memory.Accounting, p.Reserve)}
		}
	}
	return nil
}

// besideDatabase is the memory the containers running beside container name may take: the others'
// and the native sidecars' limits, or requests where they set no limit.
func besideDatabase(pod *corev1.PodSpec, name string) resource.Quantity {
	total := resource.Quantity{}
	add := func(c corev1.Container) {
		if q, ok := c.Resources.Limits[corev1.ResourceMemory]; ok {
			total.Add(q)
		} else if q, ok := c.Resources.Requests[corev1.ResourceMemory]; ok {
			total.Add(q)
		}
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
	return total
}

// The directories a MySQLTmpdir volume keeps on the persistent volume, inside the data directory
// (docs and controllers/mysql/layout.go).
const (
	replicaLoadSubdir = "replica-load"
	innoDBTmpSubdir   = "innodb-tmp"
	sstTmpSubdir      = "sst-tmp"
)

// mysqlIntent derives the options a MySQLTmpdir spec asks for: tmpdir on the mount path; the
// replica load directory at spec.mysql.replicaLoadDir or, by default, under the data directory
// (on the disk fallback when the data directory is on no disk volume); innodb_tmpdir on the RAM
// volume only for Memory; the ignore option naming what the persistent directories add to the data
// directory. Option names come from the detected profile, which the spec's flavor and version
// must have decided.
func mysqlIntent(sv *v1alpha1.ScratchVolume, fx fixture, p *inject.Plan, want intent) (intent, []string) {
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	spec := sv.Spec.MySQL
	if spec == nil {
		spec = &v1alpha1.MySQLSpec{}
	}
	prof := p.Profile
	if prof == nil {
		fail("a MySQLTmpdir plan without a profile")
		return want, failures
	}
	if spec.Flavor != "" && prof.Flavor != spec.Flavor {
		fail("planned for flavor %s, spec.mysql.flavor says %s", prof.Flavor, spec.Flavor)
	}
	if spec.Version != "" {
		if v, err := mysql.ParseVersion(spec.Version); err != nil || v != prof.Version {
			fail("planned for version %s, spec.mysql.version says %s", prof.Version, spec.Version)
		}
	}
	dataDir := string(spec.DataDir)
	switch {
	case dataDir != "" && prof.DataDir != dataDir:
		fail("planned for data directory %s, spec.mysql.dataDir says %s", prof.DataDir, dataDir)
	case dataDir == "" && p.Container == fx.db && (spec.Flavor == "" || (spec.Flavor == prof.Flavor && prof.Packaging != mysql.PackagingCustom)) &&
		prof.DataDir != fx.dataDir:
		fail("planned for data directory %s, the image keeps its data in %s", prof.DataDir, fx.dataDir)
	}
	dataDir = prof.DataDir
	want.dataDir = dataDir
	switch prof.ReplicaLoadOption {
	case "replica_load_tmpdir", "slave_load_tmpdir":
	default:
		fail("unknown replica load option %q", prof.ReplicaLoadOption)
	}

	disk := p.DiskVolume != nil
	if disk && (p.DiskMount == nil || p.DiskMount.MountPath != v1alpha1.DiskFallbackMountPath) {
		fail("the disk fallback is not mounted at %s: %+v", v1alpha1.DiskFallbackMountPath, p.DiskMount)
	}
	// Bitnami's claim holds the data directory one level down: the directories go beside it.
	root := dataDir
	if prof.Packaging == mysql.PackagingBitnami && spec.DataDir == "" && fx.claimMount != "" && fx.claimMount == path.Dir(dataDir) {
		root = fx.claimMount
	}
	base := path.Join(root, mysql.PersistentDirName)
	persistent := func(sub string) string {
		if disk {
			return v1alpha1.DiskFallbackMountPath
		}
		return path.Join(base, sub)
	}
	replica := persistent(replicaLoadSubdir)
	if spec.ReplicaLoadDir != "" {
		replica = string(spec.ReplicaLoadDir)
	}
	want.options = []option{{"tmpdir", want.mount}, {prof.ReplicaLoadOption, replica}}
	want.persistent = []string{replica}
	if prof.InnoDBTmpdir {
		innodb := persistent(innoDBTmpSubdir)
		if spec.InnoDBTmpdir == v1alpha1.InnoDBTmpdirMemory {
			innodb = want.mount
		} else {
			want.persistent = append(want.persistent, innodb)
		}
		want.options = append(want.options, option{"innodb_tmpdir", innodb})
	}
	// MySQL and Percona have session temporary tablespaces from 8.0.13 ("Temporary Tablespaces");
	// they go to the scratch volume unless spec.mysql.sessionTempTablespaces says Disk.
	if prof.Flavor != v1alpha1.FlavorMariaDB && prof.Version.AtLeast(8, 0, 13) &&
		spec.SessionTempTablespaces != v1alpha1.TempTablespacesDisk {
		want.options = append(want.options, option{"innodb_temp_tablespaces_dir", want.mount})
	}
	// MariaDB has its own limits on temporary space from 11.5.1 ("Limiting Size of Created Disk
	// Temporary Files and Tables"): the volume less a sixteenth, at least 2 MiB, in whole blocks
	// of 64 KiB, unless spec.mysql.tempSpaceLimit says None; a session's share of it on request.
	if prof.Flavor == v1alpha1.FlavorMariaDB && prof.Version.AtLeast(11, 5, 1) && spec.TempSpaceLimit != v1alpha1.TempSpaceLimitNone {
		const block, floor = 64 << 10, 2 << 20
		size := sv.Spec.Size.Value()
		total := (size - max(size/16, floor)) / block * block
		want.options = append(want.options, option{"max_tmp_total_space_usage", strconv.FormatInt(total, 10)})
		if pct := spec.SessionTempSpacePercent; pct != nil {
			want.options = append(want.options, option{"max_tmp_session_space_usage", strconv.FormatInt(max(block, total*int64(*pct)/100/block*block), 10)})
		}
	}
	if prof.GaleraSST {
		want.sst = persistent(sstTmpSubdir)
		want.persistent = append(want.persistent, want.sst)
	}
	if prof.IgnoreDBDirOption != "" && !disk {
		var hidden []string
		for _, d := range want.persistent {
			if rest, ok := strings.CutPrefix(d, dataDir+"/"); ok {
				name, _, _ := strings.Cut(rest, "/")
				if !slices.Contains(hidden, name) {
					hidden = append(hidden, name)
				}
			}
		}
		sort.Strings(hidden)
		for _, h := range hidden {
			want.options = append(want.options, option{prof.IgnoreDBDirOption, h})
		}
	}
	want.mode = spec.Injection
	if want.mode == "" {
		want.mode = v1alpha1.InjectionConfigFile
		if prof.Packaging == mysql.PackagingBitnami {
			want.mode = v1alpha1.InjectionExtraFlags
		}
	}
	if p.Injection != want.mode {
		fail("planned %s injection, want %s", p.Injection, want.mode)
	}
	if prof.Packaging == mysql.PackagingBitnami {
		want.env = strings.ToUpper(string(prof.Flavor)) + "_EXTRA_FLAGS"
	}
	want.configDir = prof.ConfigDir
	if spec.ConfigDir != "" {
		want.configDir = string(spec.ConfigDir)
		if prof.ConfigDir != want.configDir {
			fail("planned for include directory %s, spec.mysql.configDir says %s", prof.ConfigDir, want.configDir)
		}
	}
	return want, failures
}

// checkDelivery checks the drop-in (as my_print_defaults reads it) or the flags against the intent.
func (c *checker) checkDelivery(p *inject.Plan, want intent) []string {
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	var flags []string
	for _, o := range want.options {
		flags = append(flags, "--"+strings.ReplaceAll(o.name, "_", "-")+"="+o.value)
	}
	switch want.mode {
	case v1alpha1.InjectionArgs:
		c.stats.argPlans++
		if p.ConfigData != "" || p.ConfigVolume != nil || p.ExtraFlags != nil {
			fail("Args injection also mounts a drop-in or sets an environment variable")
		}
		if !slices.Equal(p.Args, flags) {
			fail("the planned flags are\n  %q\nthe spec asks for\n  %q", p.Args, flags)
		}
		return failures
	case v1alpha1.InjectionExtraFlags:
		c.stats.envPlans++
		switch {
		case p.ConfigData != "" || p.ConfigVolume != nil || len(p.Args) > 0:
			fail("ExtraFlags injection also mounts a drop-in or adds args")
		case p.ExtraFlags == nil || p.ExtraFlags.Env != want.env:
			fail("ExtraFlags injection sets %+v, want %s", p.ExtraFlags, want.env)
		case !slices.Equal(p.ExtraFlags.Flags, flags):
			fail("the planned extra flags are\n  %q\nthe spec asks for\n  %q", p.ExtraFlags.Flags, flags)
		}
		return failures
	}
	c.stats.configFiles++
	if len(p.Args) > 0 {
		fail("ConfigFile injection also adds flags %q", p.Args)
	}
	if p.ConfigVolume == nil || p.ConfigMount == nil || p.ConfigVolume.ConfigMap == nil {
		fail("ConfigFile injection without a ConfigMap volume")
		return failures
	}
	if wantPath := path.Join(want.configDir, mysql.DropInFileName); p.ConfigMount.MountPath != wantPath {
		fail("the drop-in is mounted at %q, want %q", p.ConfigMount.MountPath, wantPath)
	}
	items := p.ConfigVolume.ConfigMap.Items
	if len(items) != 1 || items[0].Key != p.ConfigKey || items[0].Path != p.ConfigMount.SubPath {
		fail("the drop-in volume does not project key %q at subPath %q: %+v", p.ConfigKey, p.ConfigMount.SubPath, items)
	}
	rb := c.readBack(p.ConfigData)
	if rb.err != nil {
		fail("my_print_defaults cannot read the drop-in: %v\n%s", rb.err, p.ConfigData)
		return failures
	}
	for _, pr := range c.printers {
		read := rb.groups[pr.name]
		if got := normalized(read["mysqld"]); !slices.Equal(got, normalized(want.options)) {
			fail("%s's my_print_defaults reads the [mysqld] group of the drop-in as\n  %v\nthe spec asks for\n  %v\ndrop-in:\n%s",
				pr.name, read["mysqld"], want.options, p.ConfigData)
		}
		for _, g := range []string{"sst", "xtrabackup"} {
			var wantSST []option
			if want.sst != "" {
				wantSST = []option{{"tmpdir", want.sst}}
			}
			if got := read[g]; !slices.Equal(normalized(got), normalized(wantSST)) {
				fail("%s's my_print_defaults reads the [%s] group of the drop-in as %v, want %v\ndrop-in:\n%s", pr.name, g, got, wantSST, p.ConfigData)
			}
		}
	}
	return failures
}

// normalized spells option names as mysqld compares them ('-' and '_' alike).
func normalized(opts []option) []option {
	out := make([]option, 0, len(opts))
	for _, o := range opts {
		out = append(out, option{strings.ReplaceAll(o.name, "-", "_"), o.value})
	}
	return out
}

// readBack runs my_print_defaults on a drop-in once per content.
func (c *checker) readBack(data string) readBack {
	if rb, ok := c.read[data]; ok {
		return rb
	}
	rb := c.printDefaults(data)
	c.read[data] = rb
	return rb
}

func (c *checker) printDefaults(data string) readBack {
	f, err := os.CreateTemp("", "dbtune-dropin-*.cnf")
	if err != nil {
		return readBack{err: err}
	}
	defer func() { _ = os.Remove(f.Name()) }()
	if _, err := f.WriteString(data); err != nil {
		_ = f.Close()
		return readBack{err: err}
	}
	if err := f.Close(); err != nil {
		return readBack{err: err}
	}
	rb := readBack{groups: map[string]map[string][]option{}}
	for _, pr := range c.printers {
		read := map[string][]option{}
		for _, g := range groups {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			cmd := exec.CommandContext(ctx, pr.argv[0], append(pr.argv[1:], "--defaults-file="+f.Name(), g)...)
			var stdout, stderr bytes.Buffer
			cmd.Stdout, cmd.Stderr = &stdout, &stderr
			err := cmd.Run()
			cancel()
			if err == nil && stderr.Len() > 0 {
				err = errors.New("it wrote to stderr")
			}
			if err != nil {
				return readBack{err: fmt.Errorf("%s's my_print_defaults --defaults-file=%s %s: %w: %s", pr.name, f.Name(), g, err, stderr.String())}
			}
			for line := range strings.Lines(stdout.String()) {
				line = strings.TrimSuffix(line, "\n")
				rest, ok := strings.CutPrefix(line, "--")
				if !ok {
					return readBack{err: fmt.Errorf("%s's my_print_defaults %s printed %q, not --name=value", pr.name, g, line)}
				}
				name, value, _ := strings.Cut(rest, "=")
				read[g] = append(read[g], option{name, value})
			}
		}
		rb.groups[pr.name] = read
	}
	return rb
}

// checkStored injects the plan, has the API server store the StatefulSet (dry run), and checks the
// returned pod template: the volume, its size and mount path byte for byte, the drop-in mount or
// the flags as mysqld reads them, the memory, and that every persistent directory is on the volume
// the init container creates it on.
func (c *checker) checkStored(t testing.TB, sv *v1alpha1.ScratchVolume, fx fixture, p *inject.Plan, want intent) []string {
	t.Helper()
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	sts := fx.sts.DeepCopy()
	tmpl, err := safeInject(sts.Spec.Template, p)
	if err != nil {
		return []string{err.Error()}
	}
	sts.Spec.Template = tmpl
	if err := create(c.e.Client, sts); err != nil {
		return []string{fmt.Sprintf("the API server refuses the injected StatefulSet: %v\nplan: %s", err, planSummary(p))}
	}
	pod := &sts.Spec.Template.Spec
	vol := volumeOf(pod, p.Volume.Name)
	switch {
	case vol == nil:
		fail("the stored pod template has no volume %q", p.Volume.Name)
	case vol.EmptyDir == nil || vol.EmptyDir.Medium != corev1.StorageMediumMemory || vol.EmptyDir.SizeLimit == nil:
		fail("the stored volume %q is not a memory emptyDir with a size limit: %+v", vol.Name, vol.VolumeSource)
	case vol.EmptyDir.SizeLimit.Cmp(want.size) != 0:
		fail("the stored sizeLimit is %s, the spec says %s", vol.EmptyDir.SizeLimit, want.size.String())
	}
	db := containerOf(pod, p.Container)
	var mounts []string
	for _, m := range db.VolumeMounts {
		if m.Name == p.Volume.Name {
			mounts = append(mounts, m.MountPath)
		}
	}
	if len(mounts) != 1 || mounts[0] != want.mount {
		fail("the stored container %s mounts the scratch volume at %q, the spec says %q", db.Name, mounts, want.mount)
	}
	if holder := deepestMount(db.VolumeMounts, want.mount); holder == nil || holder.Name != p.Volume.Name {
		fail("%s is on %v, not on the scratch volume", want.mount, holder)
	}
	orig := containerOf(&fx.sts.Spec.Template.Spec, p.Container)
	failures = append(failures, checkStoredMemory(sv, orig, db, p)...)
	failures = append(failures, checkStoredPodMemory(sv, fx.sts.Spec.Template.Spec.Resources, pod.Resources, p)...)
	failures = append(failures, c.checkPodsAdmitted(t, sv, fx)...)
	if sv.Spec.Purpose == v1alpha1.PurposeGeneric {
		if !slices.Equal(db.Args, orig.Args) {
			fail("a Generic volume changed the args to %q", db.Args)
		}
		return failures
	}
	failures = append(failures, checkStoredArgs(p, orig, db, want)...)
	failures = append(failures, checkPersistentDirs(sts, pod, p, db, want)...)
	if p.ConfigMount != nil {
		var found bool
		for _, m := range db.VolumeMounts {
			if m.Name == p.ConfigMount.Name {
				found = m.MountPath == p.ConfigMount.MountPath && m.SubPath == p.ConfigMount.SubPath && m.ReadOnly
			}
		}
		if !found {
			fail("the stored container does not mount the drop-in read-only at %s", p.ConfigMount.MountPath)
		}
	}
	return failures
}

// checkStoredArgs: with Args, each planned flag is in the stored command line exactly once and is
// the value mysqld reads; with ConfigFile the args are the user's.
func checkStoredArgs(p *inject.Plan, orig, db *corev1.Container, want intent) []string {
	if p.ExtraFlags != nil {
		return checkStoredEnv(orig, db, want)
	}
	if len(p.Args) == 0 {
		if !slices.Equal(db.Args, orig.Args) {
			return []string{fmt.Sprintf("ConfigFile injection changed the args from %q to %q", orig.Args, db.Args)}
		}
		return nil
	}
	var failures []string
	line := append(append([]string{}, db.Command...), db.Args...)
	counts := map[string]int{}
	for _, o := range want.options {
		counts[o.name]++
	}
	for _, o := range want.options {
		flag := "--" + strings.ReplaceAll(o.name, "_", "-") + "=" + o.value
		if n := countOf(line, flag); n != 1 {
			failures = append(failures, fmt.Sprintf("the stored command line has %q %d times, want once: %q", flag, n, line))
		}
		if counts[o.name] > 1 {
			continue // a repeated option (ignore-db-dirs) accumulates; the last one is not all of it
		}
		if got, found := mysql.FindOption(line, o.name); !found || got != o.value {
			failures = append(failures, fmt.Sprintf("mysqld reads --%s as %q from the stored command line, the spec asks for %q: %q", o.name, got, o.value, line))
		}
	}
	return failures
}

// checkStoredEnv: with ExtraFlags the args are the user's and the variable holds the user's words,
// then each planned flag once, as the start script splits them.
func checkStoredEnv(orig, db *corev1.Container, want intent) []string {
	var failures []string
	if !slices.Equal(db.Args, orig.Args) {
		failures = append(failures, fmt.Sprintf("ExtraFlags injection changed the args from %q to %q", orig.Args, db.Args))
	}
	var words, before []string
	for _, e := range db.Env {
		if e.Name == want.env {
			words = strings.Fields(e.Value)
		}
	}
	for _, e := range orig.Env {
		if e.Name == want.env {
			before = strings.Fields(e.Value)
		}
	}
	if len(words) < len(before) || !slices.Equal(words[:len(before)], before) {
		return append(failures, fmt.Sprintf("%s = %q does not start with the user's %q", want.env, words, before))
	}
	for _, o := range want.options {
		flag := "--" + strings.ReplaceAll(o.name, "_", "-") + "=" + o.value
		if n := countOf(words[len(before):], flag); n != 1 {
			failures = append(failures, fmt.Sprintf("%s has %q %d times after the user's words, want once: %q", want.env, flag, n, words))
		}
	}
	return failures
}

// checkPersistentDirs: every directory that must survive a restart is on a persistent volume (or
// the disk fallback), never the scratch volume, and the init container creates it on that same
// volume; innodb_tmpdir on Memory is on the scratch volume.
func checkPersistentDirs(sts *appsv1.StatefulSet, pod *corev1.PodSpec, p *inject.Plan, db *corev1.Container, want intent) []string {
	var failures []string
	fail := func(format string, args ...any) { failures = append(failures, fmt.Sprintf(format, args...)) }
	for _, o := range want.options {
		if o.name == "innodb_tmpdir" && o.value == want.mount {
			if h := deepestMount(db.VolumeMounts, o.value); h == nil || h.Name != p.Volume.Name {
				fail("innodb_tmpdir %s is on %v, not on the scratch volume spec.mysql.innodbTmpdir: Memory asks for", o.value, h)
			}
		}
	}
	// The data directory itself must not be on the RAM volume: the API refuses a mount path that
	// is the data directory or inside it, and the purpose keeps all data on disk.
	if h := deepestMount(db.VolumeMounts, want.dataDir); h != nil && h.Name == p.Volume.Name {
		fail("the data directory %s is on the scratch volume mounted at %s: the data would live in RAM", want.dataDir, h.MountPath)
	}
	var init *corev1.Container
	if p.Init != nil {
		for i := range pod.InitContainers {
			if pod.InitContainers[i].Name == p.Init.Name {
				init = &pod.InitContainers[i]
			}
		}
		if init == nil {
			fail("the stored pod template has no init container %s", p.Init.Name)
			return failures
		}
	}
	for _, d := range want.persistent {
		h := deepestMount(db.VolumeMounts, d)
		switch {
		case h == nil:
			fail("%s, which must survive a restart, is on the container's own filesystem", d)
			continue
		case h.Name == p.Volume.Name:
			fail("%s, which must survive a restart, is on the scratch volume (RAM)", d)
			continue
		case !persistentVolume(sts, pod, h.Name):
			fail("%s, which must survive a restart, is on volume %s, which is neither a claim nor the disk fallback", d, h.Name)
			continue
		}
		if p.DiskVolume != nil && h.Name == p.DiskVolume.Name {
			continue // an emptyDir's directories exist before the container starts
		}
		if init == nil {
			fail("no init container creates %s on volume %s", d, h.Name)
			continue
		}
		if !slices.Contains(init.Args, d) {
			fail("the init container creates %q, not %s", init.Args, d)
		}
		ih := deepestMount(init.VolumeMounts, d)
		if ih == nil || ih.Name != h.Name || ih.MountPath != h.MountPath || ih.SubPath != h.SubPath || ih.SubPathExpr != h.SubPathExpr {
			fail("the init container creates %s on %v, the server finds it on %v", d, ih, h)
		}
	}
	if init != nil {
		for _, d := range init.Args {
			if !slices.Contains(want.persistent, d) {
				fail("the init container creates %s, which the spec does not ask for (want %q)", d, want.persistent)
			}
		}
	}
	return failures
}

// persistentVolume reports whether the named volume outlives a container restart on disk: a
// claim, a hostPath, or a disk-backed emptyDir.
func persistentVolume(sts *appsv1.StatefulSet, pod *corev1.PodSpec, name string) bool {
	for _, t := range sts.Spec.VolumeClaimTemplates {
		if t.Name == name {
			return true
		}
	}
	v := volumeOf(pod, name)
	return v != nil && (v.PersistentVolumeClaim != nil || v.HostPath != nil || (v.EmptyDir != nil && v.EmptyDir.Medium == ""))
}

// checkStoredMemory: the stored request and limit grew by exactly the size with Reserve, and not
// at all otherwise.
func checkStoredMemory(sv *v1alpha1.ScratchVolume, orig, db *corev1.Container, p *inject.Plan) []string {
	var failures []string
	for _, side := range []struct {
		name    string
		was, is corev1.ResourceList
	}{{"request", orig.Resources.Requests, db.Resources.Requests}, {"limit", orig.Resources.Limits, db.Resources.Limits}} {
		was, had := side.was[corev1.ResourceMemory]
		is, has := side.is[corev1.ResourceMemory]
		if had != has {
			failures = append(failures, fmt.Sprintf("the memory %s was %v and is %v", side.name, side.was, side.is))
			continue
		}
		want := was.DeepCopy()
		if p.Reserve != nil && had {
			want.Add(sv.Spec.Size)
		}
		if has && is.Cmp(want) != 0 {
			failures = append(failures, fmt.Sprintf("the stored memory %s is %s, want %s (%s accounting, size %s)",
				side.name, is.String(), want.String(), sv.Spec.Memory.Accounting, sv.Spec.Size.String()))
		}
	}
	return failures
}

// checkStoredPodMemory checks the pod-level memory: Reserve raises the request and limit the pod
// sets by exactly the size, which the API server requires to hold the container's raised limit;
// nothing else changes them.
func checkStoredPodMemory(sv *v1alpha1.ScratchVolume, was, is *corev1.ResourceRequirements, p *inject.Plan) []string {
	if was == nil {
		if is != nil {
			return []string{fmt.Sprintf("the pod had no pod-level resources and has %+v", *is)}
		}
		return nil
	}
	if is == nil {
		return []string{"the pod-level resources are gone"}
	}
	var failures []string
	for _, side := range []struct {
		name    string
		was, is corev1.ResourceList
	}{{"request", was.Requests, is.Requests}, {"limit", was.Limits, is.Limits}} {
		w, had := side.was[corev1.ResourceMemory]
		got, has := side.is[corev1.ResourceMemory]
		if had != has {
			failures = append(failures, fmt.Sprintf("the pod's memory %s was %v and is %v", side.name, side.was, side.is))
			continue
		}
		want := w.DeepCopy()
		if p.Reserve != nil {
			want.Add(sv.Spec.Size)
		}
		if has && got.Cmp(want) != 0 {
			failures = append(failures, fmt.Sprintf("the pod's stored memory %s is %s, want %s (%s accounting)", side.name, got.String(), want.String(), sv.Spec.Memory.Accounting))
		}
	}
	return failures
}

// safeInject is inject.Inject with a panic turned into an error.
func safeInject(tmpl corev1.PodTemplateSpec, p *inject.Plan) (out corev1.PodTemplateSpec, err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("panic in Inject: %v", r)
		}
	}()
	return inject.Inject(tmpl, []*inject.Plan{p}), nil
}

// deepestMount is the mount that holds dir: the one with the longest mount path at or above it.
func deepestMount(mounts []corev1.VolumeMount, dir string) *corev1.VolumeMount {
	var best *corev1.VolumeMount
	for i := range mounts {
		m := &mounts[i]
		mp := path.Clean(m.MountPath)
		if dir != mp && !strings.HasPrefix(dir, strings.TrimSuffix(mp, "/")+"/") {
			continue
		}
		if best == nil || len(mp) > len(path.Clean(best.MountPath)) {
			best = m
		}
	}
	return best
}

func containerOf(pod *corev1.PodSpec, name string) *corev1.Container {
	for i := range pod.Containers {
		if pod.Containers[i].Name == name {
			return &pod.Containers[i]
		}
	}
	return nil
}

func volumeOf(pod *corev1.PodSpec, name string) *corev1.Volume {
	for i := range pod.Volumes {
		if pod.Volumes[i].Name == name {
			return &pod.Volumes[i]
		}
	}
	return nil
}

func countOf(list []string, s string) int {
	n := 0
	for _, x := range list {
		if x == s {
			n++
		}
	}
	return n
}

func planSummary(p *inject.Plan) string {
	raw, err := yaml.Marshal(struct {
		Volume      corev1.Volume
		Mount       corev1.VolumeMount
		ConfigMount *corev1.VolumeMount
		DiskMount   *corev1.VolumeMount
		Args        []string
		Init        *corev1.Container
	}{p.Volume, p.Mount, p.ConfigMount, p.DiskMount, p.Args, p.Init})
	if err != nil {
		return err.Error()
	}
	return string(raw)
}

func manifest(obj *unstructured.Unstructured) string {
	spec := obj.Object["spec"]
	raw, err := yaml.Marshal(map[string]any{"name": obj.GetName(), "spec": spec})
	if err != nil {
		return err.Error()
	}
	return string(raw)
}

// create creates obj on the API server as a dry run: validated, defaulted, returned, never stored.
func create(c client.Client, obj client.Object) error {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	return c.Create(ctx, obj, client.DryRunAll)
}
