package upgrade_test

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
	"github.com/dbtune/scratch-operator/test/testenv"
	"github.com/dbtune/scratch-operator/test/testmanager"
)

var (
	record        = flag.String("record", "", "record the fleet as this build leaves it under testdata/<name>, for the upgrade tests of later builds; name it so that releases sort oldest first")
	recordVersion = flag.String("record-version", "dev", "the version of the release recorded")
)

// TestRecordRelease records a release: run on the release's commit,
//
//	go test ./test/upgrade -run TestRecordRelease -args -record <date>-<version> -record-version <version>
//
// it lets this build's controller tune the fleet on a fresh API server, plays the StatefulSet
// controller until every ScratchVolume is Ready, and saves what the API server then stores.
func TestRecordRelease(t *testing.T) {
	if *record == "" {
		t.Skip("records a release only when asked: -record <name>")
	}
	e := testenv.Require(t, env)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	testmanager.Run(t, e.Config, e.Scheme, nil)

	stss, svs := fleet()
	if err := e.Client.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}}); err != nil {
		t.Fatal(err)
	}
	for _, o := range append(objects(stss), objects(svs)...) {
		if err := e.Client.Create(ctx, o); err != nil {
			t.Fatalf("create %s: %v", o.GetName(), err)
		}
	}
	testenv.Eventually(t, time.Minute, func() string {
		rolledOut(ctx, t, e.Client)
		return notReady(ctx, t, e.Client)
	})
	// Let the controller write the status that follows the last rollout.
	time.Sleep(2 * time.Second)
	if why := notReady(ctx, t, e.Client); why != "" {
		t.Fatal(why)
	}

	rel := &release{}
	rel.About.Version = *recordVersion
	rel.About.Revision = revision(t)
	rel.About.Recorded = time.Now().UTC().Format(time.DateOnly)
	var stsList appsv1.StatefulSetList
	var cmList corev1.ConfigMapList
	var svList v1alpha1.ScratchVolumeList
	for _, l := range []client.ObjectList{&stsList, &cmList, &svList} {
		if err := e.Client.List(ctx, l, client.InNamespace(fleetNamespace)); err != nil {
			t.Fatal(err)
		}
	}
	for _, s := range stsList.Items {
		stored(&s.ObjectMeta)
		s.TypeMeta = metav1.TypeMeta{APIVersion: "apps/v1", Kind: "StatefulSet"}
		rel.StatefulSets = append(rel.StatefulSets, s)
	}
	for _, cm := range cmList.Items {
		if cm.Labels[v1alpha1.ManagedByLabel] != v1alpha1.ManagedByValue {
			continue // the API server's own, kube-root-ca.crt
		}
		stored(&cm.ObjectMeta)
		cm.TypeMeta = metav1.TypeMeta{APIVersion: "v1", Kind: "ConfigMap"}
		rel.ConfigMaps = append(rel.ConfigMaps, cm)
	}
	for _, sv := range svList.Items {
		gen := sv.Generation
		stored(&sv.ObjectMeta)
		sv.Generation = gen // the status's observed generations are relative to it
		sv.TypeMeta = metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ScratchVolume"}
		rel.ScratchVolumes = append(rel.ScratchVolumes, sv)
	}
	root, err := testenv.RepoRoot()
	if err != nil {
		t.Fatal(err)
	}
	dir := filepath.Join("testdata", *record)
	if err := rel.write(dir, filepath.Join(root, "config", "crd", "bases")); err != nil {
		t.Fatal(err)
	}
	t.Logf("recorded %d StatefulSets, %d ConfigMaps and %d ScratchVolumes of revision %s in %s",
		len(rel.StatefulSets), len(rel.ConfigMaps), len(rel.ScratchVolumes), rel.About.Revision, dir)
}

func objects[T client.Object](in []T) []client.Object {
	out := make([]client.Object, len(in))
	for i, o := range in {
		out[i] = o
	}
	return out
}

// rolledOut plays the StatefulSet controller, which envtest does not run: every StatefulSet's
// pods are at its latest template and ready.
func rolledOut(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	var list appsv1.StatefulSetList
	if err := c.List(ctx, &list, client.InNamespace(fleetNamespace)); err != nil {
		t.Fatal(err)
	}
	for i := range list.Items {
		s := &list.Items[i]
		if s.Status.ObservedGeneration == s.Generation {
			continue
		}
		n := *s.Spec.Replicas
		rev := fmt.Sprintf("%s-%d", s.Name, s.Generation)
		s.Status = appsv1.StatefulSetStatus{ObservedGeneration: s.Generation, Replicas: n, ReadyReplicas: n,
			CurrentReplicas: n, UpdatedReplicas: n, AvailableReplicas: n, CurrentRevision: rev, UpdateRevision: rev}
		if err := c.Status().Update(ctx, s); err != nil && !strings.Contains(err.Error(), "modified") {
			t.Fatal(err)
		}
	}
}

// notReady says which ScratchVolume of the fleet is not Ready, "" when all are.
func notReady(ctx context.Context, t *testing.T, c client.Client) string {
	t.Helper()
	var list v1alpha1.ScratchVolumeList
	if err := c.List(ctx, &list, client.InNamespace(fleetNamespace)); err != nil {
		t.Fatal(err)
	}
	for _, sv := range list.Items {
		r := meta.FindStatusCondition(sv.Status.Conditions, v1alpha1.ConditionReady)
		if r == nil || r.Status != metav1.ConditionTrue || r.ObservedGeneration != sv.Generation {
			return fmt.Sprintf("ScratchVolume %s is not Ready: %+v", sv.Name, r)
		}
	}
	return ""
}

// revision is the commit the release is recorded from, marked when the worktree has changes.
func revision(t *testing.T) string {
	t.Helper()
	out, err := exec.Command("git", "describe", "--always", "--dirty", "--abbrev=12").Output()
	if err != nil {
		t.Fatalf("git describe: %v", err)
	}
	return strings.TrimSpace(string(out))
}

var env *testenv.Env

func TestMain(m *testing.M) { os.Exit(testenv.Main(m, &env)) }
