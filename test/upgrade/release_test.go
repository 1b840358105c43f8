package upgrade_test

// A recorded release: the objects a fleet is made of once a release of the manager has tuned it,
// as the API server stores them, and the CRDs that release installed.

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/yaml"

	"github.com/dbtune/scratch-operator/api/v1alpha1"
)

// release is one recorded set, testdata/<dir>.
type release struct {
	dir string
	// About says which build recorded it.
	About struct {
		Version  string `json:"version"`
		Revision string `json:"revision"`
		Recorded string `json:"recorded"`
	} `json:"about"`
	StatefulSets   []appsv1.StatefulSet     `json:"statefulSets"`
	ConfigMaps     []corev1.ConfigMap       `json:"configMaps"`
	ScratchVolumes []v1alpha1.ScratchVolume `json:"scratchVolumes"`
}

const releaseFile = "fleet.yaml"

// releases are the recorded sets under testdata, oldest first by directory name.
func releases(t *testing.T) []*release {
	t.Helper()
	dirs, err := filepath.Glob(filepath.Join("testdata", "*", releaseFile))
	if err != nil {
		t.Fatal(err)
	}
	if len(dirs) == 0 {
		t.Fatal("no recorded release under testdata: record one with go test ./test/upgrade -run TestRecordRelease -record <name>")
	}
	slices.Sort(dirs)
	var out []*release
	for _, f := range dirs {
		raw, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		rel := &release{dir: filepath.Dir(f)}
		if err := yaml.UnmarshalStrict(raw, rel); err != nil {
			t.Fatalf("%s: %v", f, err)
		}
		out = append(out, rel)
	}
	return out
}

// crdDir is where the release's CRDs are.
func (rel *release) crdDir() string { return filepath.Join(rel.dir, "crds") }

// write saves the release under dir, with the CRDs of crds.
func (rel *release) write(dir, crds string) error {
	if err := os.MkdirAll(filepath.Join(dir, "crds"), 0o755); err != nil {
		return err
	}
	files, err := filepath.Glob(filepath.Join(crds, "*.yaml"))
	if err != nil {
		return err
	}
	for _, f := range files {
		raw, err := os.ReadFile(f)
		if err != nil {
			return err
		}
		if err := os.WriteFile(filepath.Join(dir, "crds", filepath.Base(f)), raw, 0o644); err != nil {
			return err
		}
	}
	raw, err := yaml.Marshal(rel)
	if err != nil {
		return err
	}
	return os.WriteFile(filepath.Join(dir, releaseFile), raw, 0o644)
}

// stored trims what the API server assigns to one object (identity, versions, times) and keeps
// what a release wrote: the spec, the status, labels, annotations, finalizers, owners and who
// manages which field.
func stored(m *metav1.ObjectMeta) {
	m.UID, m.ResourceVersion, m.Generation, m.CreationTimestamp = "", "", 0, metav1.Time{}
	for i := range m.OwnerReferences {
		m.OwnerReferences[i].UID = ""
	}
}

// restore creates rel's objects in the API server as the release left them: the ScratchVolumes
// with their status, the ConfigMaps owned by them, the StatefulSets with their status, and every
// object with the managed fields the release's writes gave it.
func (rel *release) restore(ctx context.Context, t *testing.T, c client.Client) {
	t.Helper()
	if err := c.Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: fleetNamespace}}); err != nil {
		t.Fatal(err)
	}
	uids := map[string]types.UID{}
	for i := range rel.ScratchVolumes {
		sv := rel.ScratchVolumes[i].DeepCopy()
		status := sv.Status
		if err := c.Create(ctx, sv); err != nil {
			t.Fatalf("create ScratchVolume %s: %v", sv.Name, err)
		}
		// Generations start at 1 again: keep the status's distance to it.
		shift := sv.Generation - rel.ScratchVolumes[i].Generation
		status.ObservedGeneration += shift
		for j := range status.Conditions {
			status.Conditions[j].ObservedGeneration += shift
		}
		sv.Status = status
		if err := c.Status().Update(ctx, sv); err != nil {
			t.Fatalf("restore the status of ScratchVolume %s: %v", sv.Name, err)
		}
		uids[sv.Name] = sv.UID
		setManagedFields(ctx, t, c, sv, rel.ScratchVolumes[i].ManagedFields)
	}
	for i := range rel.ConfigMaps {
		cm := rel.ConfigMaps[i].DeepCopy()
		for j := range cm.OwnerReferences {
			cm.OwnerReferences[j].UID = uids[cm.OwnerReferences[j].Name]
		}
		if err := c.Create(ctx, cm); err != nil {
			t.Fatalf("create ConfigMap %s: %v", cm.Name, err)
		}
		setManagedFields(ctx, t, c, cm, rel.ConfigMaps[i].ManagedFields)
	}
	for i := range rel.StatefulSets {
		sts := rel.StatefulSets[i].DeepCopy()
		status := sts.Status
		if err := c.Create(ctx, sts); err != nil {
			t.Fatalf("create StatefulSet %s: %v", sts.Name, err)
		}
		status.ObservedGeneration = sts.Generation
		sts.Status = status
		if err := c.Status().Update(ctx, sts); err != nil {
			t.Fatalf("restore the status of StatefulSet %s: %v", sts.Name, err)
		}
		setManagedFields(ctx, t, c, sts, rel.StatefulSets[i].ManagedFields)
	}
}

// setManagedFields gives obj the recorded managed fields, which a create replaces by the
// creator's, and checks the API server kept them.
func setManagedFields(ctx context.Context, t *testing.T, c client.Client, obj client.Object, fields []metav1.ManagedFieldsEntry) {
	t.Helper()
	patch := map[string]any{"metadata": map[string]any{"managedFields": fields}}
	raw, err := yaml.Marshal(patch)
	if err != nil {
		t.Fatal(err)
	}
	js, err := yaml.YAMLToJSON(raw)
	if err != nil {
		t.Fatal(err)
	}
	if err := c.Patch(ctx, obj, client.RawPatch(types.MergePatchType, js)); err != nil {
		t.Fatalf("restore the managed fields of %s: %v", obj.GetName(), err)
	}
	if got, want := managers(obj.GetManagedFields()), managers(fields); got != want {
		t.Fatalf("%s: the API server keeps managed fields %s, not the recorded %s", obj.GetName(), got, want)
	}
}

// managers names who manages which part of an object: manager, operation and subresource, in order.
func managers(fields []metav1.ManagedFieldsEntry) string {
	var b bytes.Buffer
	for _, f := range fields {
		fmt.Fprintf(&b, "%s/%s/%s ", f.Manager, f.Operation, f.Subresource)
	}
	return strings.TrimSpace(b.String())
}
